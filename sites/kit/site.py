"""What a synthetic site declares so that the kit can mount, seed and snapshot it."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import APIRouter
from sqlalchemy import MetaData, Table
from sqlmodel import Session

SeedFunction = Callable[[Session, random.Random], None]
"""Fills a fresh database deterministically from the given seeded generator."""


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
    """Where `/_enter/{token}` sends the browser, e.g. `/helpdesk/`."""
    fault_support: frozenset[str] = frozenset()
    """Fault classes that need the site's handlers to act (partial success, duplicate delivery, out-of-order
    events) and that this site implements; elsewhere such a fault is never applied, so never logged as fired."""
    generated_columns: frozenset[tuple[str, str]] = frozenset()
    """(table, column) pairs whose values the site draws from the operation's random generator (message ids): the
    same row written by a later operation gets another value, as its clock times do."""

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
