"""A site's seeded data for one seed, written once: the tenant template's database and the rows a task template
draws its parameters from are the same seeding, so an instance's deciding record is the tenant's record."""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, select

from computerops.core.hashing import canonical_json
from sites.kit import seeded_cache
from sites.kit.bookkeeping import BOOKKEEPING, normal_row
from sites.kit.journal import seeding_session
from sites.kit.operation import template_rng
from sites.kit.records import Row, StateSnapshot
from sites.kit.scratch import ScratchDirectory

if TYPE_CHECKING:
    from sites.kit.site import SiteDefinition

SeededRows = Mapping[str, tuple[Row, ...]]
"""Table name -> its seeded rows (JSON-normal values keyed by column), in primary-key order."""


def seed_database(engine: Engine, site: SiteDefinition, seed: int) -> None:
    """Creates the site's tables (and the bookkeeping tables) on `engine` and fills them with the site's seeding for
    `seed`, unjournaled (seeded data is base data, not anything an agent did)."""
    site.metadata.create_all(engine)
    BOOKKEEPING.create_all(engine)
    with seeding_session(engine) as session:
        site.seed(session, template_rng(site.name, seed))
        session.commit()


@functools.lru_cache(maxsize=32)
def seeded_rows(site: SiteDefinition, seed: int) -> SeededRows:
    """Every row the site's seeding for `seed` writes, by table in primary-key order (read-only; the few most recent
    kept): the tenant template's rows, from the process's one seeding of (site, seed), which another process may have
    kept on disk (`SEEDED`)."""
    state = SEEDED.state(site, seed)
    return MappingProxyType({table.name: tuple(state[table.name]) for table in site.metadata.sorted_tables})


def _file_engine(path: Path) -> Engine:
    """An engine on a seeding's database file, configured as a tenant's (sites/kit/tenancy.py): foreign keys on, no
    fsync (a scratch file; the cache keeps a copy only once it is written whole)."""
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA foreign_keys=ON")
        dbapi_connection.execute("PRAGMA synchronous=OFF")
        dbapi_connection.execute("PRAGMA journal_mode=MEMORY")

    return engine


@dataclass(frozen=True)
class _Seeded:
    """One seeding of a site: its database file, its state and that state's tables as canonical JSON."""

    definition: SiteDefinition
    path: Path
    state: StateSnapshot
    state_json: Mapping[str, str]


class SeededTemplates:
    """Every (site definition, seed) seeded once per process, not once per registry: a run makes a registry for its
    episodes and another for their replays, `verify` and `replay` one each, and seeding a site takes a few hundred
    milliseconds (measured: 0.4 s a helpdesk seed, about a fifth of a scripted episode's CPU in the process), its
    state's reading and encoding tens more. The database files live in a scratch directory of the process (removed
    at exit, or by the next one made when the process was killed); a registry copies the file into its own root, so
    nothing outside the process's own seeding is ever shared. Keyed by the definition object itself (a test's own
    definition of a site is another key than the shipped one of the same name) and the seed. A forked child starts
    a store of its own (the parent's directory may go with the parent)."""

    KEEP = 64
    """The most recent seedings kept (a long-lived process, the operator server's, meets many seeds; each kept
    seeding holds its rows in memory: 0.9 to 1.6 MB a (site, seed), measured with tracemalloc, so at most about
    100 MB). Every tenant's creation and snapshot reads its template's rows here, and a run or a replay batch walks
    its instances in the same order again (episodes, then their replays): with fewer kept than the (site, seed) pairs
    it walks, every one of them was evicted before its turn came round and was read again from disk (the bench's 24
    replays over 24 pairs: about a third of a warm replay's CPU with 16 kept). The published catalog has 144 pairs."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._seeded: OrderedDict[tuple[int, int], _Seeded] = OrderedDict()
        self._made = itertools.count()
        self._scratch: ScratchDirectory | None = None
        self._pid = os.getpid()

    def _entry(self, definition: SiteDefinition, seed: int) -> _Seeded:
        key = (id(definition), seed)
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's files are the parent's
                self._seeded, self._scratch, self._pid = OrderedDict(), None, os.getpid()
            found = self._seeded.get(key)
            if found is not None and found.definition is definition:
                self._seeded.move_to_end(key)
                return found
            if self._scratch is None:
                self._scratch = ScratchDirectory("seeded")
                atexit.register(self._scratch.close)
            path = self._scratch.path / f"{definition.name}-{seed}-{next(self._made)}.sqlite"
            kept = seeded_cache.shipped(definition)  # only the product's own sites are kept on disk
            if not (kept and seeded_cache.read_into(definition.name, seed, path)):
                engine = _file_engine(path)
                try:
                    seed_database(engine, definition, seed)
                finally:
                    engine.dispose()
                if kept:
                    seeded_cache.keep(definition.name, seed, path)
            engine = _file_engine(path)
            try:
                with engine.connect() as connection:  # every site table, rows in primary-key order (a snapshot's form)
                    state: StateSnapshot = {
                        table.name: [normal_row(row) for row in connection.execute(
                            select(table).order_by(*table.primary_key.columns)).mappings()]
                        for table in definition.tables()}
            finally:
                engine.dispose()
            encoded = MappingProxyType({table: canonical_json(rows) for table, rows in state.items()})
            entry = self._seeded[key] = _Seeded(definition, path, state, encoded)
            while len(self._seeded) > self.KEEP:  # registries hold copies of the file, never the file itself
                _, evicted = self._seeded.popitem(last=False)
                evicted.path.unlink(missing_ok=True)
            return entry

    def copy_to(self, definition: SiteDefinition, seed: int, target: Path) -> None:
        """Copy the seeded database of (definition, seed) to `target`, under the store's lock (another thread's
        seeding may evict and remove the file as soon as the lock is let go)."""
        with self._lock:  # reentrant: _entry takes it too
            shutil.copyfile(self._entry(definition, seed).path, target)

    def database(self, definition: SiteDefinition, seed: int) -> Path:
        """The seeded database of (definition, seed): copy it, never open it for writing."""
        return self._entry(definition, seed).path

    def state(self, definition: SiteDefinition, seed: int) -> StateSnapshot:
        """Its rows by table (shared: read, never change them)."""
        return self._entry(definition, seed).state

    def state_json(self, definition: SiteDefinition, seed: int) -> Mapping[str, str]:
        """Its tables as canonical JSON."""
        return self._entry(definition, seed).state_json


SEEDED = SeededTemplates()
"""The process's seedings (`SeededTemplates`)."""
