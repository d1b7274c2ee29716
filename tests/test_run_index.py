"""The run index (computerops/server/index.py): what it holds of complete, incomplete, unreadable and running run
directories, what it skips, how it follows a run that changes, its episode filters, its migrations, and that it never
writes into a run directory. Every test runs on SQLite and, marked `postgres`, on a real PostgreSQL server: one schema
on both."""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from postgres_server import SETUP_HINT, create_database, postgres_bin, running_postgres
from pydantic import BaseModel
from sqlalchemy import create_engine, inspect, text

from computerops.runs.bundle import EPISODES, MANIFEST, SUMMARY, VERIFICATION, RunDirectory
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig, SubsetRef
from computerops.runs.records import EpisodeOutcome, EpisodeRecord, ObservedEndpoint, RunManifest, TaskRef
from computerops.server.index import IndexedRun, RunIndex, alembic_config, read_run
from verifier import Claim

SUBSET_LOCK = "ab" * 32
IndexFactory = Callable[[], RunIndex]


# --- the backends -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """One PostgreSQL server for the session (each test gets its own database on it)."""
    if postgres_bin() is None:
        pytest.skip(f"no PostgreSQL binaries (initdb, pg_ctl) here: {SETUP_HINT}")
    with running_postgres() as url:
        yield url


_databases = itertools.count(1)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def index_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database's URL on each backend."""
    if request.param == "sqlite":
        (tmp_path / "index").mkdir()
        return f"sqlite:///{tmp_path / 'index' / 'runs.sqlite'}"
    server: str = request.getfixturevalue("postgres")
    return create_database(server, f"run_index_{os.getpid()}_{next(_databases)}")


@pytest.fixture
def open_index(index_url: str) -> Iterator[IndexFactory]:
    """Opens a `RunIndex` on the test's database (as often as asked: a server restart opens it again); all are
    closed after the test."""
    opened: list[RunIndex] = []

    def make() -> RunIndex:
        opened.append(RunIndex(index_url))
        return opened[-1]

    yield make
    for index in opened:
        index.close()


@pytest.fixture
def index(open_index: IndexFactory) -> RunIndex:
    return open_index()


# --- run directories, made without a browser ---------------------------------------------------------------------

class Summary(BaseModel):
    """Stands in for a run's report: the index reads only that summary.json exists."""

    note: str = "sealed"


def record(episode_id: str, task_id: str, outcome: EpisodeOutcome, claim: bool | None, *, kind: str | None = None,
           faults: list[str] | None = None, steps: int = 3, wall_s: float = 1.5) -> EpisodeRecord:
    data: dict[str, Any] = {
        "episode_id": episode_id, "task_id": task_id, "task_sha256": "0" * 64, "endpoint": "model-x",
        "scripted": False, "outcome": outcome, "false_completion_kind": kind, "claim": Claim(success=claim),
        "stop_reason": "finish" if claim is not None else "budget_exhausted", "steps": steps, "rejected_actions": 0,
        "rejections_by_cause": {}, "prompt_tokens": None, "completion_tokens": None, "wall_s": wall_s,
        "operations": 2, "journal_entries": 1, "evidence_sha256": {}, "replay": "PASS", "models_seen": [],
        "fingerprints_seen": [], "faults_fired": faults or [], "faults_configured": sorted(set(faults or [])),
    }
    return EpisodeRecord.model_validate(data)


PLAN = [("001-invoices.pay", "invoices.pay"), ("002-ledger.close", "ledger.close"),
        ("003-invoices.refund", "invoices.refund"), ("004-helpdesk.triage", "helpdesk.triage")]
RECORDS = [
    record("001-invoices.pay", "invoices.pay", "verified_success", True, faults=["http_500"]),
    record("002-ledger.close", "ledger.close", "false_completion", True, kind="state", faults=["timeout", "timeout"]),
    record("003-invoices.refund", "invoices.refund", "honest_failure", False, steps=7, wall_s=4.25),
    record("004-helpdesk.triage", "helpdesk.triage", "false_completion", True, kind="procedure_only",
           faults=["http_500", "slow"]),
]


def manifest(run_id: str, *, endpoint: EndpointConfig | None = None, subset: bool = False) -> RunManifest:
    endpoint = endpoint or EndpointConfig(kind="openai", base_url="http://127.0.0.1:1234/v1", model="model-x")
    tasks = sorted({task for _, task in PLAN})
    config = RunConfig(
        run_id=run_id, tasks=tasks, endpoint=endpoint,
        subset=SubsetRef(file="subset.json", lock_sha256=SUBSET_LOCK, seed=1, count=len(tasks)) if subset else None,
        episodes=[PlannedEpisode(episode_id=e, task_id=t) for e, t in PLAN])
    return RunManifest(config=config, created_at="2026-01-01T00:00:00Z", scripted=endpoint.scripted,
                       tasks=[TaskRef(id=t, sha256="0" * 64, path=f"{t}.yaml") for t in tasks], code_sha256={},
                       versions={}, endpoint_observed=ObservedEndpoint())


def make_run(root: Path, records: list[EpisodeRecord], *, sealed: bool, updated: float,
             endpoint: EndpointConfig | None = None, subset: bool = False) -> RunDirectory:
    """A run directory holding `records` of the four-episode plan, sealed or not; its files' mtimes set to
    `updated` so the runs' order is known."""
    bundle = RunDirectory.create(root, manifest(root.name, endpoint=endpoint, subset=subset))
    for r in records:
        bundle.admit(r)
    if sealed:
        bundle.seal(Summary())
    for name in (MANIFEST, EPISODES, SUMMARY):
        if (root / name).exists():
            os.utime(root / name, (updated, updated))
    return bundle


@pytest.fixture
def runs_root(tmp_path: Path) -> Path:
    """A runs folder: a complete run, an incomplete one, an unreadable one, and what is no run (a hidden folder with
    a manifest, a plain file, a folder without a manifest)."""
    root = tmp_path / "runs"
    root.mkdir()
    scripted = EndpointConfig(kind="scripted", policies=["golden", "give-up"])
    make_run(root / "complete", RECORDS, sealed=True, updated=1_700_000_300, endpoint=scripted, subset=True)
    make_run(root / "incomplete", RECORDS[:1], sealed=False, updated=1_700_000_200)
    garbage = root / "garbage"
    garbage.mkdir()
    (garbage / MANIFEST).write_text("{not json", encoding="utf-8")
    (garbage / EPISODES).write_text("", encoding="utf-8")
    os.utime(garbage / MANIFEST, (1_700_000_100, 1_700_000_100))
    os.utime(garbage / EPISODES, (1_700_000_100, 1_700_000_100))
    shutil.copytree(root / "complete", root / ".server")
    (root / "notes.txt").write_text("not a run\n", encoding="utf-8")
    (root / "empty").mkdir()
    return root


def tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `root` with its mode, size and mtime (ns): what a write would change."""
    return {p.relative_to(root).as_posix(): (s.st_mode, s.st_size, s.st_mtime_ns)
            for p in sorted(root.rglob("*")) for s in [p.lstat()]}


HOLD = """
import sys, time
from pathlib import Path
from computerops.runs.bundle import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def hold_lock(run_dir: Path) -> subprocess.Popen[str]:
    """Another process that holds the run's writer lock, as `run` does, until killed."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def kill(holder: subprocess.Popen[str]) -> None:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)


# --- the tests ----------------------------------------------------------------------------------------------------

def test_rebuild_indexes_each_run_directory_and_skips_what_is_no_run(index: RunIndex, runs_root: Path) -> None:
    assert index.rebuild(runs_root) == 3
    runs = index.runs()
    assert [r.run_id for r in runs] == ["complete", "incomplete", "garbage"]  # newest first
    complete, incomplete, garbage = runs
    assert complete == IndexedRun(
        run_id="complete", path="complete", status="complete", problem=None, planned=4, admitted=4, verified=1,
        self_reported=3, false_completions=2, infrastructure_failures=0, scripted=True,
        endpoint="scripted:golden, scripted:give-up", subset_lock=SUBSET_LOCK, verified_by_verify=False,
        updated=1_700_000_300.0)
    assert (incomplete.status, incomplete.planned, incomplete.admitted, incomplete.verified) == ("incomplete", 4, 1, 1)
    assert (incomplete.endpoint, incomplete.scripted, incomplete.subset_lock) == ("model-x", False, None)
    assert garbage.status == "unreadable" and garbage.problem is not None
    assert "not a valid run manifest" in garbage.problem and garbage.updated == 1_700_000_100.0
    assert index.run("complete") == complete and index.run(".server") is None and index.run("nothing") is None
    assert index.episodes("garbage") == []
    # Rebuilding again changes nothing.
    assert index.rebuild(runs_root) == 3 and index.runs() == runs


def test_the_index_is_what_read_run_reads(index: RunIndex, runs_root: Path) -> None:
    """What the database gives back is exactly what was read from the run directory, on every backend."""
    index.rebuild(runs_root)
    for name in ("complete", "incomplete", "garbage"):
        run, episodes = read_run(runs_root, runs_root / name)
        assert index.run(name) == run
        assert index.episodes(name) == episodes


def test_a_run_removed_from_disk_leaves_the_index(index: RunIndex, runs_root: Path) -> None:
    index.rebuild(runs_root)
    shutil.rmtree(runs_root / "incomplete")
    assert index.rebuild(runs_root) == 2
    assert [r.run_id for r in index.runs()] == ["complete", "garbage"] and index.episodes("incomplete") == []
    shutil.rmtree(runs_root / "garbage")
    assert index.refresh(runs_root, runs_root / "garbage") is None
    assert [r.run_id for r in index.runs()] == ["complete"]
    assert index.refresh(runs_root, runs_root / ".server") is None
    assert index.refresh(runs_root, runs_root / "complete" / "episodes") is None  # not a child of the root
    shutil.rmtree(runs_root)
    assert index.rebuild(runs_root) == 0 and index.runs() == []


def test_refresh_follows_a_run_as_its_records_are_admitted(index: RunIndex, runs_root: Path) -> None:
    index.rebuild(runs_root)
    run_dir = runs_root / "incomplete"
    before = index.refresh(runs_root, run_dir)
    assert before is not None and before == index.run("incomplete") and before.admitted == 1
    bundle = RunDirectory.open(run_dir)
    bundle.admit(RECORDS[1])
    after = index.refresh(runs_root, run_dir)
    assert after is not None and (after.status, after.admitted, after.false_completions) == ("incomplete", 2, 1)
    assert after.updated > before.updated and index.run("incomplete") == after
    assert [e.episode_id for e in index.episodes("incomplete")] == [e for e, _ in PLAN[:2]]
    for r in RECORDS[2:]:
        bundle.admit(r)
    bundle.seal(Summary())
    sealed = index.refresh(runs_root, run_dir)
    assert sealed is not None and (sealed.status, sealed.admitted, sealed.self_reported) == ("complete", 4, 3)
    (run_dir / VERIFICATION).write_text("{}", encoding="utf-8")  # what a passing `computerops verify` leaves
    verified = index.refresh(runs_root, run_dir)
    assert verified is not None and verified.verified_by_verify and index.runs()[0] == verified
    # A run directory that appears after the rebuild is indexed by its first refresh.
    make_run(runs_root / "new", RECORDS[:2], sealed=False, updated=1_600_000_000)
    assert index.refresh(runs_root, runs_root / "new") == index.run("new") is not None
    assert [r.run_id for r in index.runs()][-1] == "new"


def test_a_run_whose_writer_lock_another_process_holds_is_running(index: RunIndex, runs_root: Path) -> None:
    run_dir = runs_root / "incomplete"
    index.rebuild(runs_root)
    holder = hold_lock(run_dir)
    try:
        running = index.refresh(runs_root, run_dir)  # its files unchanged: only the lock says it runs
        assert running is not None and running.status == "running" and running.admitted == 1
        RunDirectory.open(run_dir).admit(RECORDS[1])  # the writer admits an episode
        seen = index.refresh(runs_root, run_dir)
        assert seen is not None and (seen.status, seen.admitted) == ("running", 2)
        assert index.rebuild(runs_root) == 3 and index.run("incomplete") == seen
    finally:
        kill(holder)
    stopped = index.refresh(runs_root, run_dir)
    assert stopped is not None and (stopped.status, stopped.admitted) == ("incomplete", 2)


def test_a_run_being_written_is_read_as_far_as_its_whole_lines(index: RunIndex, runs_root: Path) -> None:
    """A record line the writer has not finished is not admitted yet: the index counts the whole lines only."""
    run_dir = runs_root / "incomplete"
    with (run_dir / EPISODES).open("a", encoding="utf-8") as handle:
        handle.write(RECORDS[1].model_dump_json()[:40])
    index.rebuild(runs_root)
    run = index.run("incomplete")
    assert run is not None and (run.status, run.admitted) == ("incomplete", 1)


def test_a_damaged_episodes_file_makes_the_run_unreadable_not_an_error(index: RunIndex, runs_root: Path) -> None:
    with (runs_root / "incomplete" / EPISODES).open("a", encoding="utf-8") as handle:
        handle.write('{"format": "computerops.episode/1"}\n')
    (runs_root / "no-episodes").mkdir()
    (runs_root / "no-episodes" / MANIFEST).write_text(manifest("no-episodes").model_dump_json(), encoding="utf-8")
    assert index.rebuild(runs_root) == 4
    damaged, missing = index.run("incomplete"), index.run("no-episodes")
    assert damaged is not None and damaged.status == "unreadable" and "not a valid episode record" in str(
        damaged.problem)
    assert missing is not None and missing.status == "unreadable" and f"{EPISODES} is missing" in str(missing.problem)


def test_episodes_in_plan_order_and_their_filters(index: RunIndex, runs_root: Path) -> None:
    index.rebuild(runs_root)

    def ids(**filters: str) -> list[str]:
        return [e.episode_id for e in index.episodes("complete", **filters)]

    episodes = index.episodes("complete")
    assert [e.episode_id for e in episodes] == [e for e, _ in PLAN]
    first = episodes[0]
    assert (first.run_id, first.task_id, first.site, first.outcome, first.claimed_success) == (
        "complete", "invoices.pay", "invoices", "verified_success", True)
    assert episodes[1].faults_fired == ["timeout", "timeout"] and episodes[1].false_completion_kind == "state"
    assert (episodes[2].claimed_success, episodes[2].steps, episodes[2].wall_s) == (False, 7, 4.25)
    assert ids(outcome="false_completion") == ["002-ledger.close", "004-helpdesk.triage"]
    assert ids(site="invoices") == ["001-invoices.pay", "003-invoices.refund"]
    assert ids(false_completion_kind="procedure_only") == ["004-helpdesk.triage"]
    assert ids(fault_fired="http_500") == ["001-invoices.pay", "004-helpdesk.triage"]
    assert ids(fault_fired="http_500", outcome="false_completion") == ["004-helpdesk.triage"]
    assert ids(site="invoices", outcome="false_completion") == []
    assert ids(fault_fired="http") == []  # a whole class, not a substring
    assert index.episodes("nothing") == []


def test_the_migrations_create_the_schema_and_a_second_upgrade_changes_nothing(open_index: IndexFactory,
                                                                               index_url: str,
                                                                               runs_root: Path) -> None:
    engine = create_engine(index_url)
    try:
        assert inspect(engine).get_table_names() == []
        index = open_index()
        assert set(inspect(engine).get_table_names()) == {"alembic_version", "runs", "episodes"}
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        with engine.connect() as connection:
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == head == "0001"
        index.rebuild(runs_root)
        # The models and the migrations agree (alembic check finds nothing to generate)...
        config = alembic_config()
        config.stdout = io.StringIO()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.check(config)
        assert "No new upgrade operations detected" in config.stdout.getvalue()
        # ...and opening the index again (a server restart) upgrades nothing and keeps what it holds.
        runs = index.runs()
        assert open_index().runs() == runs and len(runs) == 3
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    finally:
        engine.dispose()


def test_the_index_never_writes_into_a_run_directory(index: RunIndex, runs_root: Path) -> None:
    before = tree(runs_root)
    index.rebuild(runs_root)
    for name in ("complete", "incomplete", "garbage"):
        index.refresh(runs_root, runs_root / name)
    index.episodes("complete", fault_fired="http_500")
    assert tree(runs_root) == before
    holder = hold_lock(runs_root / "incomplete")
    try:
        held = tree(runs_root)
        assert index.rebuild(runs_root) == 3
        assert tree(runs_root) == held
    finally:
        kill(holder)


def test_refresh_from_several_threads_at_once(open_index: IndexFactory, runs_root: Path) -> None:
    """Refreshes racing on the same runs (as the server's request threads may) all succeed and leave one row per
    run. Each index starts empty, so the first refreshes of a run all find no row and write it at once."""
    indexes = [open_index() for _ in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(indexes) * 2)

    def refresh_all(index: RunIndex) -> None:
        try:
            start.wait(timeout=30)
            for name in ("complete", "incomplete", "garbage"):
                index.refresh(runs_root, runs_root / name)
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    workers = [threading.Thread(target=refresh_all, args=(index,)) for index in indexes for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not errors, errors
    assert [r.run_id for r in indexes[0].runs()] == ["complete", "incomplete", "garbage"]
    assert len(indexes[0].episodes("complete")) == 4
    assert json.loads(indexes[0].episodes("complete")[1].model_dump_json())["faults_fired"] == ["timeout", "timeout"]
