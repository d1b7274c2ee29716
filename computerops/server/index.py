"""The run index: a database table of what the run directories under a runs folder hold, for listing and filtering.

The run directories stay the source of truth. The index is rebuilt from them at server start (`RunIndex.rebuild`)
and refreshed one run at a time when a run changes (`RunIndex.refresh`); it only reads them, through `RunDirectory`,
and never writes into one nor touches a run's lock (`being_written` reads the kernel's list of locks). One schema,
written with SQLAlchemy's typed ORM and created by the alembic migrations beside this module, serves SQLite (the
default) and PostgreSQL alike."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.config import Config
from pydantic import BaseModel, ConfigDict
from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, String, Text, create_engine, delete, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from computerops.report.outcomes import counted_as
from computerops.runs.bundle import (
    EPISODES,
    MANIFEST,
    RESUMES,
    SUMMARY,
    VERIFICATION,
    BundleError,
    RunDirectory,
    being_written,
)
from computerops.runs.config import EndpointConfig
from computerops.runs.records import EpisodeRecord

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
"""The alembic script folder (env.py, script.py.mako, versions/), shipped as package data."""

RunStatus = Literal["starting", "running", "complete", "incomplete", "unreadable"]
_WATCHED = (MANIFEST, EPISODES, SUMMARY)
"""The files whose newest mtime is a run's `updated`."""
_FINGERPRINTED = (*_WATCHED, VERIFICATION, RESUMES)
"""The files whose mtimes and sizes decide whether a refresh has anything new to read."""
_UPSERT_TRIES = 3


class IndexedRun(BaseModel):
    """One run directory as the index holds it: its state and its headline counts."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    """The run directory's name."""
    path: str
    """The run directory relative to the runs root (posix)."""
    status: RunStatus
    """`starting` from a launch's 202 until its worker writes the run's manifest (the server's placeholder, never in
    the index); `unreadable` when it cannot be read (`problem` says why); else `running` while another process holds
    the run's writer lock; `complete` once it is sealed (summary.json) with every planned episode's agent outcome;
    `incomplete` otherwise."""
    problem: str | None
    """Why an unreadable run cannot be read; None for the others."""
    planned: int
    admitted: int
    verified: int
    """Episodes whose outcome is verified_success."""
    self_reported: int
    """Episodes whose final claim says success, whatever the verifier found."""
    false_completions: int
    """Episodes with a false-completion kind: claimed done, not done."""
    infrastructure_failures: int
    scripted: bool
    endpoint: str
    """The manifest's label of the endpoint: the model name, or the `scripted:<policy>` labels, comma-separated."""
    subset_lock: str | None
    """sha256 of the reserved subset's lock when the run's tasks came from one."""
    verified_by_verify: bool
    """verification.json is present: a `computerops verify` passed on the run."""
    updated: float
    """The newest mtime among manifest.json, episodes.jsonl and summary.json (seconds since the epoch)."""


class IndexedEpisode(BaseModel):
    """One admitted episode of an indexed run (its latest record), as the run's pages filter them."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    episode_id: str
    task_id: str
    site: str
    """The task id's prefix before the first '.'."""
    outcome: str
    """What the report counts it as (`computerops.report.outcomes.counted_as`): its outcome, or
    never_reached_the_model."""
    claimed_success: bool
    false_completion_kind: str | None
    faults_fired: list[str]
    """Fault classes that fired, in operation order (repeats kept)."""
    steps: int
    wall_s: float


class Base(DeclarativeBase):
    """The index's tables; migrations/versions/ creates them (alembic `check` keeps the two the same)."""


class RunRow(Base):
    """A row of `runs`: `IndexedRun` plus the fingerprint that tells a refresh whether anything changed."""

    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    problem: Mapped[str | None] = mapped_column(Text)
    planned: Mapped[int] = mapped_column(Integer)
    admitted: Mapped[int] = mapped_column(Integer)
    verified: Mapped[int] = mapped_column(Integer)
    self_reported: Mapped[int] = mapped_column(Integer)
    false_completions: Mapped[int] = mapped_column(Integer)
    infrastructure_failures: Mapped[int] = mapped_column(Integer)
    scripted: Mapped[bool] = mapped_column(Boolean)
    endpoint: Mapped[str] = mapped_column(Text)
    subset_lock: Mapped[str | None] = mapped_column(String(64))
    verified_by_verify: Mapped[bool] = mapped_column(Boolean)
    updated: Mapped[float] = mapped_column(Float, index=True)
    fingerprint: Mapped[str] = mapped_column(Text)
    """mtime (ns) and size of each file the run's figures come from: unchanged means nothing new to read."""


class EpisodeRow(Base):
    """A row of `episodes`: one `IndexedEpisode`, `position` its place in the run's plan order."""

    __tablename__ = "episodes"

    run_id: Mapped[str] = mapped_column(String(255), ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    episode_id: Mapped[str] = mapped_column(Text)
    task_id: Mapped[str] = mapped_column(Text)
    site: Mapped[str] = mapped_column(String(255))
    outcome: Mapped[str] = mapped_column(String(32))
    claimed_success: Mapped[bool] = mapped_column(Boolean)
    false_completion_kind: Mapped[str | None] = mapped_column(String(32))
    faults_fired: Mapped[list[str]] = mapped_column(JSON)
    steps: Mapped[int] = mapped_column(Integer)
    wall_s: Mapped[float] = mapped_column(Float)


def migrate(engine: Engine) -> None:
    """Bring the database's schema to the newest migration (a no-op when it is there already)."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def alembic_config() -> Config:
    """alembic's configuration, made here rather than read from an alembic.ini: the script folder is the package's.
    Pass the connection to migrate through `attributes["connection"]` (migrations/env.py reads it there)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def endpoint_label(endpoint: EndpointConfig) -> str:
    """The label results carry for the run's endpoint: the model, or each scripted policy's `scripted:<policy>`."""
    if endpoint.scripted:
        return ", ".join(endpoint.model_for(policy) for policy in endpoint.policies)
    return endpoint.model_for(None)


def site_of(task_id: str) -> str:
    """A task's site: its id's prefix before the first '.'."""
    return task_id.split(".", 1)[0]


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _updated(run_dir: Path) -> float:
    times = [s.st_mtime for name in _WATCHED if (s := _stat(run_dir / name)) is not None]
    return max(times, default=0.0)


def _fingerprint(run_dir: Path) -> str:
    parts = []
    for name in _FINGERPRINTED:
        found = _stat(run_dir / name)
        parts.append(f"{name}:{found.st_mtime_ns}:{found.st_size}" if found is not None else f"{name}:-")
    return " ".join(parts)


def is_run_dir(path: Path) -> bool:
    """A directory the index lists: it holds manifest.json, its name is not hidden (a staging directory of a run
    being created, the server's own folder) and it is no link (a run linked from elsewhere is not in the folder:
    no route would open it)."""
    return not path.name.startswith(".") and not path.is_symlink() and path.is_dir() and (path / MANIFEST).is_file()


def read_run(runs_root: Path, run_dir: Path) -> tuple[IndexedRun, list[IndexedEpisode]]:
    """What the index holds of one run directory, read through `RunDirectory` without its lock: a run being written
    is read as far as its complete lines go. A directory that cannot be read is `unreadable` with the reason."""
    updated = _updated(run_dir)
    path = run_dir.relative_to(runs_root).as_posix()
    try:
        bundle = RunDirectory.open(run_dir)
        manifest = bundle.manifest()
        records = bundle.records()
        completeness = bundle.completeness()
        forged = bundle.lost_admissions() or bundle.sealed_record_problems()
        if forged:
            raise BundleError(f"{len(forged)} problem(s) with its evidence, first: {forged[0]} (run `computerops "
                              "verify` on it)")
    except (BundleError, ValueError, OSError) as exc:
        problem = str(exc) if not isinstance(exc, OSError) else f"{run_dir} cannot be read: {exc.strerror or exc}"
        return IndexedRun(
            run_id=run_dir.name, path=path, status="unreadable", problem=problem,
            planned=0, admitted=0, verified=0, self_reported=0, false_completions=0, infrastructure_failures=0,
            scripted=False, endpoint="", subset_lock=None, verified_by_verify=False, updated=updated,
        ), []
    status: RunStatus
    if being_written(run_dir):
        status = "running"
    elif (run_dir / SUMMARY).is_file() and completeness.complete:
        status = "complete"
    else:
        status = "incomplete"
    config = manifest.config
    run = IndexedRun(
        run_id=run_dir.name, path=path, status=status, problem=None,
        planned=completeness.planned, admitted=completeness.admitted,
        verified=sum(r.outcome == "verified_success" for r in records),
        self_reported=sum(r.claim.success is True for r in records),
        false_completions=sum(r.false_completion_kind is not None for r in records),
        infrastructure_failures=len(completeness.infrastructure_failures),
        scripted=manifest.scripted, endpoint=endpoint_label(config.endpoint),
        subset_lock=config.subset.lock_sha256 if config.subset is not None else None,
        verified_by_verify=(run_dir / VERIFICATION).is_file(), updated=updated,
    )
    return run, [_episode(run_dir.name, r) for r in records]


def _episode(run_id: str, record: EpisodeRecord) -> IndexedEpisode:
    return IndexedEpisode(
        run_id=run_id, episode_id=record.episode_id, task_id=record.task_id, site=site_of(record.task_id),
        outcome=counted_as(record.outcome, record.stop_reason, record.steps),
        claimed_success=record.claim.success is True,
        false_completion_kind=record.false_completion_kind, faults_fired=list(record.faults_fired),
        steps=record.steps, wall_s=record.wall_s,
    )


def _run_of(row: RunRow) -> IndexedRun:
    return IndexedRun.model_validate({name: getattr(row, name) for name in IndexedRun.model_fields})


def _episode_of(row: EpisodeRow) -> IndexedEpisode:
    return IndexedEpisode.model_validate({name: getattr(row, name) for name in IndexedEpisode.model_fields})


class RunIndex:
    """The run index in one database (`sqlite:///path`, `postgresql+psycopg://...`), migrated to the newest schema
    when opened. Safe to call from several threads: each call has its own session, and a run's rows are replaced in
    one transaction."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        sqlite = parsed.get_backend_name() == "sqlite"
        if sqlite and parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(url, connect_args={"check_same_thread": False} if sqlite else {})
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._writing = threading.Lock()
        """SQLite lets one connection write at a time: this index's threads take turns rather than meet its busy
        timeout. PostgreSQL needs no such turn (rows are locked per run)."""
        self._sqlite = sqlite

    def rebuild(self, runs_root: Path) -> int:
        """Index every run directory directly under `runs_root` (hidden folders and plain files skipped) and drop the
        rows of runs no longer there; returns how many runs the index now holds."""
        present = sorted(p for p in runs_root.iterdir() if is_run_dir(p)) if runs_root.is_dir() else []
        indexed = [run for run_dir in present if (run := self.refresh(runs_root, run_dir)) is not None]
        names = {run.run_id for run in indexed}
        with self._write() as session, session.begin():
            gone = [r for r in session.scalars(select(RunRow.run_id)) if r not in names]
            if gone:
                session.execute(delete(EpisodeRow).where(EpisodeRow.run_id.in_(gone)))
                session.execute(delete(RunRow).where(RunRow.run_id.in_(gone)))
        return len(indexed)

    def refresh(self, runs_root: Path, run_dir: Path) -> IndexedRun | None:
        """Read one run directory (a direct child of `runs_root`) again, unless neither its files nor whether a
        writer holds it changed since it was last read; None, and its rows dropped, when it is not (or no longer)
        a run directory."""
        if run_dir.absolute().parent.resolve() != runs_root.resolve():
            return None
        run_dir = runs_root / run_dir.name
        if not is_run_dir(run_dir):
            self._drop(run_dir.name)
            return None
        fingerprint = _fingerprint(run_dir)
        with self._sessions() as session:
            known = session.get(RunRow, run_dir.name)
            if known is not None and known.fingerprint == fingerprint \
                    and (known.status == "running") == being_written(run_dir):
                return _run_of(known)
        run, episodes = read_run(runs_root, run_dir)
        self._store(run, episodes, fingerprint)
        return run

    def _store(self, run: IndexedRun, episodes: Sequence[IndexedEpisode], fingerprint: str) -> None:
        """Replace a run's rows in one transaction. Its row is locked first (FOR UPDATE, where the database has it),
        so writers of one run take turns; two that both find no row both insert, and the loser tries again, finding
        the winner's row to lock."""
        values = {**run.model_dump(), "fingerprint": fingerprint}
        for attempt in range(_UPSERT_TRIES):
            try:
                with self._write() as session, session.begin():
                    row = session.get(RunRow, run.run_id, with_for_update=True)
                    if row is None:
                        session.add(RunRow(**values))
                    else:
                        for name, value in values.items():
                            setattr(row, name, value)
                    session.execute(delete(EpisodeRow).where(EpisodeRow.run_id == run.run_id))
                    session.flush()
                    session.add_all(EpisodeRow(position=n, **e.model_dump()) for n, e in enumerate(episodes))
                return
            except IntegrityError:
                if attempt == _UPSERT_TRIES - 1:
                    raise

    def _drop(self, run_id: str) -> None:
        with self._write() as session, session.begin():
            session.execute(delete(EpisodeRow).where(EpisodeRow.run_id == run_id))
            session.execute(delete(RunRow).where(RunRow.run_id == run_id))

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """A session for one write; on SQLite, holding the process's write lock while it is open."""
        with self._writing if self._sqlite else nullcontext(), self._sessions() as session:
            yield session

    def runs(self) -> list[IndexedRun]:
        """Every indexed run, the most recently updated first."""
        with self._sessions() as session:
            rows = session.scalars(select(RunRow).order_by(RunRow.updated.desc(), RunRow.run_id))
            return [_run_of(row) for row in rows]

    def run(self, run_id: str) -> IndexedRun | None:
        """One indexed run by its directory's name; None when the index holds no such run."""
        with self._sessions() as session:
            row = session.get(RunRow, run_id)
            return _run_of(row) if row is not None else None

    def episodes(self, run_id: str, *, outcome: str | None = None, site: str | None = None,
                 false_completion_kind: str | None = None, fault_fired: str | None = None) -> list[IndexedEpisode]:
        """A run's episodes in plan order, only those matching every filter given (`fault_fired`: the class fired
        at least once)."""
        query = select(EpisodeRow).where(EpisodeRow.run_id == run_id).order_by(EpisodeRow.position)
        if outcome is not None:
            query = query.where(EpisodeRow.outcome == outcome)
        if site is not None:
            query = query.where(EpisodeRow.site == site)
        if false_completion_kind is not None:
            query = query.where(EpisodeRow.false_completion_kind == false_completion_kind)
        with self._sessions() as session:
            found = [_episode_of(row) for row in session.scalars(query)]
        # The fired classes are a JSON list: matched here, the same on every backend.
        return [e for e in found if fault_fired is None or fault_fired in e.faults_fired]

    def close(self) -> None:
        """Close the database connections (the index's data stays in the database)."""
        self.engine.dispose()
