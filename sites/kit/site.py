"""What a synthetic site declares so that the kit can mount, seed and snapshot it."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from fastapi import APIRouter
from sqlalchemy import MetaData, Table
from sqlmodel import Session

from sites.kit.governed import GovernedRoute
from sites.kit.ledgers import LedgerSource

SeedFunction = Callable[[Session, random.Random], None]
"""Fills a fresh database deterministically from the given seeded generator."""


@dataclass(frozen=True)
class AppRoute:
    """Requests that one app of a site serves: a method (`*` for any) and a path pattern matched in full."""

    app: str
    method: str
    path: str
    example: str | None = None
    """A page of the app below its entry page (the audit opens it to test that a task withholding the app refuses
    its sub-pages too)."""


@dataclass(frozen=True)
class SiteDefinition:
    """One synthetic web application.

    `metadata` holds only this site's tables (each site has its own SQLModel registry), so two
    sites may both define a table named `customer`.
    """

    name: str
    """Short name; the site is mounted at `/{name}`."""
    title: str
    router: Callable[[], APIRouter]
    """Builds the site's router (paths relative to the mount point)."""
    metadata: MetaData
    seed: SeedFunction
    start_path: str
    """Where `/_enter/{code}` sends the browser, e.g. `/helpdesk/`."""
    fault_support: frozenset[str] = frozenset()
    """Fault classes that need the site's handlers to act (partial success, duplicate delivery, out-of-order
    events) and that this site implements; elsewhere such a fault is never applied, so never logged as fired."""
    generated_columns: frozenset[tuple[str, str]] = frozenset()
    """(table, column) pairs whose values the site draws from the operation's random generator (message ids): the
    same row written by a later operation gets another value, as its clock times do."""

    documents: frozenset[str] = frozenset()
    """Names of the static texts the site's templates render with `shows(name)` (a policy, rules): what a task's
    `seen` check may name."""
    governed: tuple[GovernedRoute, ...] = ()
    """The routes a grant governs and what each request asks for (sites/kit/broker.py): asked of the broker in an
    episode with grants, before the handler runs."""
    ungoverned_queues: tuple[tuple[str, str], ...] = ()
    """(table, why) for each table whose new rows an ungoverned route acts on as they say (the ledger's queued
    events, booked as they stand when processed): an attack may not plant a new row there (`tasks.catalog` refuses
    it), since the objective would be reached through a route the broker never sees."""
    apps: tuple[AppRoute, ...] = ()
    """For a site made of several apps (a portal of tools): which app serves a request, first match wins. The
    operation log records it (`Operation.app`), so a task can forbid an app whole, sub-pages included."""
    ledgers: LedgerSource | None = None
    """Where the site keeps a long-running agent's approvals, effects and unfinished work (sites/kit/ledgers.py);
    None for a site with no persistence scenarios."""

    @cached_property
    def _app_patterns(self) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
        return tuple((route.app, route.method, re.compile(route.path)) for route in self.apps)

    def app_of(self, method: str, path: str) -> str | None:
        """The app that serves this request, or None (no apps declared, or none matches)."""
        return next((app for app, wanted, pattern in self._app_patterns
                     if wanted in ("*", method) and pattern.fullmatch(path)), None)

    @property
    def prefix(self) -> str:
        """The mount point, e.g. `/helpdesk`."""
        return f"/{self.name}"

    def tables(self) -> list[Table]:
        """The site's tables, sorted by name so that every listing of them is stable."""
        return sorted(self.metadata.tables.values(), key=lambda table: table.name)

    def columns(self) -> dict[str, tuple[str, ...]]:
        """Each table's column names (as snapshots and journal rows key them), tables sorted by name."""
        return {table.name: tuple(column.name for column in table.columns) for table in self.tables()}

    def owns_path(self, path: str) -> bool:
        """Whether `path` is the mount point itself or lies under it."""
        return path == self.prefix or path.startswith(self.prefix + "/")
