"""FastAPI dependencies that hand a site handler its tenant, operation and journaled session.

The operation middleware puts the tenant and the operation context into the request scope; these
read them back. Sync handlers work too: FastAPI passes them the same request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request

from sites.kit.journal import TenantSession, operation_session
from sites.kit.operation import STATE_OPERATION, STATE_TENANT, OperationContext
from sites.kit.tenancy import Tenant


def get_tenant(request: Request) -> Tenant:
    """The tenant of this request; only requests that passed the operation middleware have one."""
    tenant = request.scope.get("state", {}).get(STATE_TENANT)
    if not isinstance(tenant, Tenant):
        raise RuntimeError("no tenant on this request: is the operation log middleware installed?")
    return tenant


def get_operation(request: Request) -> OperationContext:
    """The operation context (seq, logical time, seeded generator, adapter action) of this request."""
    operation = request.scope.get("state", {}).get(STATE_OPERATION)
    if not isinstance(operation, OperationContext):
        raise RuntimeError("no operation on this request: is the operation log middleware installed?")
    return operation


def get_session(request: Request) -> Iterator[TenantSession]:
    """A journaled session on the tenant's database, committed when the handler returns normally
    (rolled back instead when a false-success fault discards the operation).

    Any exception rolls the whole operation back, journal rows included.
    """
    operation = get_operation(request)
    with operation_session(get_tenant(request).engine, operation) as session:
        try:
            yield session
            if operation.discard:
                session.rollback()
            else:
                session.commit()
        except BaseException:
            session.rollback()
            raise


TenantDep = Annotated[Tenant, Depends(get_tenant)]
OperationDep = Annotated[OperationContext, Depends(get_operation)]
# scope="function": commit before the response is sent, so a 303 never precedes a failed commit.
SessionDep = Annotated[TenantSession, Depends(get_session, scope="function")]
