"""Shared kit of the synthetic sites: tenancy, mutation journal, operation log, logical clock.

Others call: `TenantRegistry` / `Tenant` (tenancy), `create_app` (the server), `SiteDefinition`
(what a site declares), the cookie/header names, and the records in `records`.
"""

from computerops.core.binding import TENANT_COOKIE, TENANT_HEADER
from sites.kit.app import create_app
from sites.kit.bookkeeping import BOOKKEEPING_TABLES
from sites.kit.clock import EPOCH, LogicalClock, now, now_text
from sites.kit.deps import OperationDep, SessionDep, TenantDep
from sites.kit.journal import OutsideOperationError, TenantSession
from sites.kit.operation import OperationContext, operation_rng, template_rng
from sites.kit.oplog import OperationLogMiddleware
from sites.kit.records import JournalEntry, Operation, Row, StateSnapshot
from sites.kit.site import SiteDefinition
from sites.kit.tenancy import Tenant, TenantRegistry

__all__ = [
    "BOOKKEEPING_TABLES",
    "EPOCH",
    "TENANT_COOKIE",
    "TENANT_HEADER",
    "JournalEntry",
    "LogicalClock",
    "Operation",
    "OperationContext",
    "OperationDep",
    "OperationLogMiddleware",
    "OutsideOperationError",
    "Row",
    "SessionDep",
    "SiteDefinition",
    "StateSnapshot",
    "Tenant",
    "TenantDep",
    "TenantRegistry",
    "TenantSession",
    "create_app",
    "now",
    "now_text",
    "operation_rng",
    "template_rng",
]
