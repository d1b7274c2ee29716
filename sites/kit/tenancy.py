"""Tenants: one SQLite database per episode, copied from a per-(site, seed) template.

A tenant is reached only through its unguessable token. The registry builds each template once
per process (under a lock), then every new tenant is a file copy of it, which takes milliseconds.
The template's state is read once too: a tenant's snapshot reads only the tables a statement of its own could
have written (SQLite's authorizer names every table a statement writes, as it is compiled), and takes the rest from
the template's, which a table no statement wrote still equals.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import secrets
import shutil
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table, create_engine, event, func, select
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.util import LRUCache

from computerops.core.hashing import canonical_mapping_sha256
from sites.kit import seeding
from sites.kit.bookkeeping import journal_table, normal_row, operation_table
from sites.kit.broker import BrokerSession
from sites.kit.idempotency import StoredResponse, remember
from sites.kit.injection import FaultSession
from sites.kit.noise_log import NoiseSession
from sites.kit.plant import Plant, apply_plant
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from sites.kit.scratch import ScratchDirectory
from sites.kit.site import SiteDefinition

# Every tenant is a new engine, and an engine compiles each statement anew unless it shares a cache: all
# tenants speak the same SQLite dialect, so they share one compiled-statement cache. SQLAlchemy keys that
# cache by the dialect instance, and every engine makes its own; tenant engines therefore use a dialect whose
# instances are equal to each other (same class, same settings), or the shared cache would never hit across
# tenants (tests/test_sites_tenancy.py counts its entries).
_COMPILED: LRUCache[Any, Any] = LRUCache(2000)


class TenantSQLiteDialect(SQLiteDialect_pysqlite):
    """pysqlite, with instances equal when their class and settings are (for the shared compiled cache)."""

    supports_statement_cache = True

    def _settings(self) -> tuple[Any, ...]:
        return (type(self), self.paramstyle, self.positional, self.native_datetime, self.server_version_info)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TenantSQLiteDialect) and self._settings() == other._settings()

    def __hash__(self) -> int:
        return hash(self._settings())


registry.register("sqlite.computerops_tenant", __name__, "TenantSQLiteDialect")


_WRITING_ACTIONS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE,
                              sqlite3.SQLITE_DROP_TABLE, sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_CREATE_TABLE})
"""Authorizer actions that change a table's rows or the table itself."""


def _note_writes(written: set[str]) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """An SQLite authorizer that adds to `written` every table a statement may write, and allows everything.

    SQLite asks it while compiling each statement, triggers' and foreign keys' actions included; both names are taken
    (for ALTER TABLE the table is the second), which at worst names a table that was not written: it is then read."""
    def authorize(action: int, first: str | None, second: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in _WRITING_ACTIONS:
            written.update(name for name in (first, second) if name)
        return sqlite3.SQLITE_OK

    return authorize


def _sqlite_engine(path: Path, written: set[str] | None = None) -> Engine:
    engine = create_engine(f"sqlite+computerops_tenant:///{path}", connect_args={"check_same_thread": False})
    engine = engine.execution_options(compiled_cache=_COMPILED)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # SQLite ignores foreign keys unless asked, per connection.
        dbapi_connection.execute("PRAGMA foreign_keys=ON")
        # A tenant is a scratch copy that lives for one episode: no fsync, rollback journal in memory.
        # Transactions still roll back; only durability across a crash is given up, and a crash loses
        # the episode either way. The evidence that matters is written and fsync'd to the run directory.
        dbapi_connection.execute("PRAGMA synchronous=OFF")
        dbapi_connection.execute("PRAGMA journal_mode=MEMORY")
        if written is not None:
            dbapi_connection.set_authorizer(_note_writes(written))

    return engine


@dataclass(eq=False)
class Tenant:
    """One episode's database and the token that binds a browser context to it."""

    id: str
    token: str = field(repr=False)
    site: str
    seed: int
    db_path: Path
    engine: Engine = field(repr=False)
    definition: SiteDefinition = field(repr=False)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    """Held by the operation middleware for a whole request: one request of a tenant at a time."""
    faults: FaultSession | None = field(default=None, repr=False)
    """The fault decisions of this tenant's episode; None injects nothing."""
    broker: BrokerSession | None = field(default=None, repr=False)
    """The grants of this tenant's episode and the broker's mode; None: no route is governed."""
    noise: NoiseSession | None = field(default=None, repr=False)
    """The page noise of this tenant's episode (sites/kit/noise_layer.py); None serves the site's own pages."""
    on_commit: Callable[[Operation], None] | None = field(default=None, repr=False)
    """Called by the operation log with each operation that committed journal rows, once it is logged and before
    its response is sent (a long-running episode's `interrupted` arm kills its harness there)."""
    template_state: StateSnapshot = field(default_factory=dict, repr=False)
    """The snapshot of the template this tenant was copied from (shared: never changed)."""
    template_json: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Each table of `template_state` as its canonical JSON (`computerops.core.hashing`), encoded once per template."""
    written: set[str] = field(default_factory=set, repr=False)
    """Every table a statement on this tenant's database may have written (the engine's authorizer adds them)."""

    def last_operation_seq(self) -> int:
        """The sequence number of the latest logged operation (0 before the first)."""
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.coalesce(func.max(operation_table.c.seq), 0))).scalar_one())

    def record_operation(self, operation: Operation, committed: StoredResponse | None = None) -> None:
        """Appends one operation to the log, in its own transaction; with `committed`, the response a repeat of it
        under its idempotency key gets (sites/kit/idempotency.py), in the same transaction."""
        with self.engine.begin() as connection:
            if committed is not None:
                remember(connection, operation.seq, committed)
            values = operation.model_dump()
            values["fault"] = None if operation.fault is None else operation.fault.model_dump_json()
            values["shown"] = None if operation.shown is None else operation.shown.model_dump_json()
            values["broker"] = None if operation.broker is None else operation.broker.model_dump_json()
            connection.execute(operation_table.insert().values(**values))

    def operations(self) -> list[Operation]:
        """The operation log, in sequence order."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(operation_table).order_by(operation_table.c.seq)).mappings()
            return [
                Operation.model_validate({**row, **{column: None if row[column] is None else json.loads(row[column])
                                                    for column in ("fault", "shown", "broker")}})
                for row in rows
            ]

    def journal(self) -> list[JournalEntry]:
        """Every committed row change, in journal order."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(journal_table).order_by(journal_table.c.seq)).mappings().all()
        return [
            JournalEntry(
                seq=row["seq"],
                operation=row["operation"],
                logical_time=row["logical_time"],
                table=row["table"],
                key=json.loads(row["key"]),
                change=row["change"],
                before=None if row["before"] is None else json.loads(row["before"]),
                after=None if row["after"] is None else json.loads(row["after"]),
            )
            for row in rows
        ]

    def snapshot(self) -> StateSnapshot:
        """Every site table (bookkeeping excluded), rows sorted by primary key: read from the database where a
        statement may have written the table, else the template's rows (copies)."""
        return self._read_state()[0]

    def hashed_snapshot(self) -> tuple[StateSnapshot, str]:
        """The snapshot and its `canonical_sha256`: the tables it took from the template hashed from their JSON as
        the template's, encoded once (most of a whole state's encoding), the tables it read encoded now."""
        snapshot, unread = self._read_state()
        return snapshot, canonical_mapping_sha256(
            snapshot, {name: text for name, text in self.template_json.items() if name in unread})

    def _read_state(self) -> tuple[StateSnapshot, set[str]]:
        """The snapshot, and the tables in it that are the template's rows."""
        unread = _unwritten(self.definition.tables(), self.written, self.template_state)
        snapshot: StateSnapshot = {}
        with self.engine.connect() as connection:
            for table in self.definition.tables():
                if table.name in unread:
                    snapshot[table.name] = [dict(row) for row in self.template_state[table.name]]
                    continue
                ordered = select(table).order_by(*table.primary_key.columns)
                snapshot[table.name] = [normal_row(row) for row in connection.execute(ordered).mappings()]
        return snapshot, unread


def _unwritten(tables: Sequence[Table], written: set[str], template: StateSnapshot) -> set[str]:
    """The tables that hold the template's rows still: none written, none that a foreign key makes follow a written
    one (a cascade), and in the template's snapshot."""
    changed = set(written)
    grew = True
    while grew:
        followers = {t.name for t in tables if any(key.column.table.name in changed for key in t.foreign_keys)}
        grew = not followers <= changed
        changed |= followers
    return {t.name for t in tables if t.name not in changed and t.name in template}




class TenantRegistry:
    """Creates, resolves and drops the tenants of one server process."""

    def __init__(self, root: Path | None = None, *, sites: Mapping[str, SiteDefinition]) -> None:
        """Tenants of `sites` (every registered site: `sites.registry.tenant_registry`) under `root`."""
        # Without a root, its own scratch directory: removed by close(), or by the next one made if killed.
        self._scratch: ScratchDirectory | None = None
        if root is None:
            self._scratch = ScratchDirectory("tenants")
            root = self._scratch.path
        self.root = Path(root)
        self.sites: dict[str, SiteDefinition] = dict(sites)
        self._lock = threading.Lock()
        self._templates: dict[tuple[str, int], Path] = {}
        self._tenants: dict[str, Tenant] = {}
        self._numbers = itertools.count(1)
        self._entries: dict[str, str] = {}
        """One-time entry codes, each to the token of the tenant it enters."""

    def site(self, name: str) -> SiteDefinition:
        """The definition of a known site; ValueError naming the known sites otherwise."""
        try:
            return self.sites[name]
        except KeyError:
            known = ", ".join(sorted(self.sites)) or "(none)"
            raise ValueError(f"unknown site {name!r}; known sites: {known}") from None

    def template(self, site: str, seed: int) -> Path:
        """The template database of (site, seed) in this registry's root: a copy of the process's seeding of it
        (`SEEDED`), made on first use."""
        definition = self.site(site)
        with self._lock:
            path = self._templates.get((site, seed))
            if path is None:
                directory = self.root / "templates"
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / f"{site}-{seed}.sqlite"
                partial = directory / f".{site}-{seed}.{os.getpid()}.partial"
                seeding.SEEDED.copy_to(definition, seed, partial)
                os.replace(partial, path)
                self._templates[(site, seed)] = path
            return path

    def template_state(self, site: str, seed: int) -> StateSnapshot:
        """The snapshot of the template of (site, seed), read once per process (`SEEDED`)."""
        return seeding.SEEDED.state(self.site(site), seed)

    def template_json(self, site: str, seed: int) -> Mapping[str, str]:
        """Each table of the template state of (site, seed) as its canonical JSON, encoded once per process."""
        return seeding.SEEDED.state_json(self.site(site), seed)

    def create(self, site: str, seed: int, plant: Plant | None = None) -> Tenant:
        """A fresh tenant of (site, seed): a copy of the template with a new unguessable token, with an attack's
        payload planted when given (`sites.kit.plant`; PlantError, and no tenant, when it does not fit)."""
        template = self.template(site, seed)
        template_state = self.template_state(site, seed)
        with self._lock:  # ids stay unique when tenants are created from several threads
            tenant_id = f"{next(self._numbers):05d}-{site}-{seed}"
        directory = self.root / "tenants"
        directory.mkdir(parents=True, exist_ok=True)
        db_path = directory / f"{tenant_id}.sqlite"
        shutil.copyfile(template, db_path)
        written: set[str] = set()
        tenant = Tenant(
            id=tenant_id,
            token=secrets.token_urlsafe(24),
            site=site,
            seed=seed,
            db_path=db_path,
            engine=_sqlite_engine(db_path, written),
            definition=self.site(site),
            template_state=template_state,
            template_json=self.template_json(site, seed),
            written=written,
        )
        if plant is not None:
            try:
                apply_plant(tenant.engine, tenant.definition, plant)
            except Exception:
                tenant.engine.dispose()
                db_path.unlink(missing_ok=True)
                raise
        with self._lock:
            self._tenants[tenant.token] = tenant
        return tenant

    def resolve(self, token: str | None) -> Tenant | None:
        """The tenant whose token is exactly `token`, or None."""
        if not token:
            return None
        with self._lock:
            return self._tenants.get(token)

    def entry_code(self, tenant: Tenant) -> str:
        """A one-time code that enters `tenant` at `/_enter/<code>`: what `serve` prints for a person, so the tenant
        token itself is never printed nor written to an access log (a used code enters nothing)."""
        code = secrets.token_urlsafe(18)
        with self._lock:
            self._entries[code] = tenant.token
        return code

    def redeem(self, code: str) -> Tenant | None:
        """The tenant a one-time entry code was made for, the first time only; None for an unknown or used code."""
        with self._lock:
            token = self._entries.pop(code, None)
        return self.resolve(token)

    def drop(self, tenant: Tenant) -> None:
        """Forgets the tenant, disposes its engine and deletes its database file."""
        with self._lock:
            self._tenants.pop(tenant.token, None)
        tenant.engine.dispose()
        tenant.db_path.unlink(missing_ok=True)

    def close(self) -> None:
        """Drops every tenant; removes the root too when the registry made it."""
        with self._lock:
            tenants = list(self._tenants.values())
        for tenant in tenants:
            self.drop(tenant)
        if self._scratch is not None:
            self._scratch.close()
