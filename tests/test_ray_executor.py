"""The Ray executor (computerops/runs/ray_executor.py): the same plan run by `run --executor ray --workers 2` on a local
Ray instance started in-process and by the local executor leaves the same evidence, byte for byte, and the same
records but for what is measured; a worker whose code differs from the driver's is refused by name."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.core.execution import ExecutorChoice
from computerops.runs.bundle import RunDirectory
from computerops.runs.provenance import code_hashes
from computerops.runs.ray_executor import (
    MAX_WORKER_LOSSES,
    TEST_EPISODE_DELAY,
    RayExecutor,
    WorkerHello,
    WorkerIdentity,
    WorkerRefused,
    WorkerSetup,
    default_workers,
    identity,
    task_files,
    unreachable_cluster,
    worker_refusal,
)
from computerops.runs.records import EpisodeRecord, LostWorker, ResumeEntry, WorkerEvent
from computerops.service.launch import RunRequest, launch, plan_resume, plan_run

RUN = "same-plan"
"""Both runs have this name (in two folders): the run's name is part of its config."""
TASKS = "helpdesk.solve-ticket@1,helpdesk.answer-escalation-queue@1"
ENDPOINT = "scripted:oracle,false-finish"
"""Two tasks by two policies: four episodes, two passed and two false completions."""
WORKERS = 2
IDENTICAL = ("operations.json", "journal.json", "final_state.json", "verdict.json", "receipt.json")
"""Evidence byte-identical between two runs of one plan (the transcript holds each reply's measured latency)."""
MEASURED = ("wall_s", "started_s")


@dataclass(frozen=True)
class Runs:
    ray: RunDirectory
    local: RunDirectory
    exit_code: int
    output: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    pytest.importorskip("ray")
    root = tmp_path_factory.mktemp("ray-executor")
    result = CliRunner().invoke(app, ["run", "--out", str(root / "ray" / RUN), "--tasks", TASKS, "--endpoint",
                                      ENDPOINT, "--executor", "ray", "--workers", str(WORKERS)])
    request = RunRequest(tasks=TASKS, endpoint=ENDPOINT)
    launch(plan_run(request, root / "local" / RUN), lambda _: None)
    return Runs(RunDirectory.open(root / "ray" / RUN), RunDirectory.open(root / "local" / RUN), result.exit_code,
                result.output)


def comparable(record: EpisodeRecord) -> dict[str, Any]:
    """An episode record without its measured fields (and the hash of the transcript, which holds latencies)."""
    data: dict[str, Any] = record.model_dump(mode="json", exclude=set(MEASURED))
    data["evidence_sha256"] = {k: v for k, v in data["evidence_sha256"].items() if k != "transcript.json"}
    return data


def without_timings(value: Any) -> Any:
    """A transcript without its measured durations (keys ending in `_s`)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@pytest.mark.browser
def test_a_ray_run_leaves_the_evidence_of_the_local_executor(runs: Runs) -> None:
    assert runs.exit_code == 0, runs.output
    ray, local = runs.ray, runs.local
    assert ray.manifest().config == local.manifest().config
    execution = ray.manifest().execution
    assert (execution.executor, execution.ray_address, len(execution.workers)) == ("ray", None, WORKERS)
    assert local.manifest().execution.executor == "local"
    ray_records = {r.episode_id: r for r in ray.records()}
    local_records = {r.episode_id: r for r in local.records()}
    assert list(ray_records) == list(local_records) == [p.episode_id for p in local.manifest().config.episodes]
    assert len(ray.all_records()) == len(local_records)  # each admitted once
    assert {r.outcome for r in local_records.values()} == {"verified_success", "false_completion"}
    for episode_id, record in local_records.items():
        assert comparable(ray_records[episode_id]) == comparable(record), episode_id
        for name in IDENTICAL:
            left = (ray.episode_dir(episode_id) / name).read_bytes()
            right = (local.episode_dir(episode_id) / name).read_bytes()
            assert left == right, f"{episode_id}/{name} differs between the Ray run and the local one"
        transcripts = [json.loads((bundle.episode_dir(episode_id) / "transcript.json").read_text())
                       for bundle in (ray, local)]
        assert without_timings(transcripts[0]) == without_timings(transcripts[1]), episode_id
        assert sorted(p.name for p in ray.episode_dir(episode_id).iterdir()) == sorted(
            p.name for p in local.episode_dir(episode_id).iterdir())
        assert ray.integrity_problems(ray_records[episode_id]) == []
        assert ray.admission_problems(ray_records[episode_id]) == []
    assert ray.checksum_problems() == []


KILL_AFTER_S = 0.8
"""When the test kills worker 0 after the run's first episode went to it: inside the worker's test-only delay."""


@pytest.mark.browser
def test_a_worker_killed_mid_episode_is_replaced_and_its_episode_runs_again_once(
        runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process with its own workers' environment")
    monkeypatch.setenv(TEST_EPISODE_DELAY, "2")  # the workers (started below, in-process) inherit it
    lines: list[str] = []
    pids: dict[int, int] = {}
    first: list[str] = []  # the episode the driver handed out first: to worker 0, the first free one
    start_episode = RunDirectory.start_episode

    def progress(line: str) -> None:
        lines.append(line)
        if found := re.match(r"ray: worker (\d+) \(.*pid (\d+)\) ready", line):
            pids[int(found[1])] = int(found[2])

    def start_and_kill(bundle: RunDirectory, planned: Any) -> None:
        start_episode(bundle, planned)
        if not first:
            first.append(planned.episode_id)
            threading.Timer(KILL_AFTER_S, os.kill, (pids[0], signal.SIGKILL)).start()

    monkeypatch.setattr(RunDirectory, "start_episode", start_and_kill)
    out = tmp_path / "ray-killed" / RUN  # the fixture's plan, so its local run's evidence is the reference
    began = time.monotonic()
    launch(plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), out), progress,
           executor=ExecutorChoice(executor="ray", workers=WORKERS))
    took = time.monotonic() - began
    killed = RunDirectory.open(out)
    local = runs.local
    plan = [p.episode_id for p in local.manifest().config.episodes]
    assert killed.manifest().config == local.manifest().config
    assert len(first) == 1 and first[0] == plan[0]
    lost = [line for line in lines if " lost (" in line]
    assert len(lost) == 1, lines
    assert lost[0].startswith(f"ray: worker 0 lost (ActorDiedError, pid {pids[0]}): episode {plan[0]} run again on "
                              "worker "), lost
    assert len(killed.manifest().execution.workers) == WORKERS  # the workers it started with
    # The loss and its replacement are in workers.jsonl: Ray's cause, the episode, where its attempt went.
    events = killed.worker_events()
    assert events[0].event == "lost" and events[0].worker == killed.manifest().execution.workers[0], events
    assert events[0].cause is not None and events[0].cause.startswith("ActorDiedError"), events
    assert (events[0].episode_id, events[0].set_apart) == (plan[0], f"interrupted/{plan[0]}/attempt-1")
    # The replacement started in the background: it joined the run, or the run ended first (then it was cancelled).
    assert [(e.event, e.in_place_of) for e in events[1:]] in ([], [("replaced", events[0].worker)]), events
    # Admitted exactly once each: one line per planned episode in episodes.jsonl, none lost, none twice.
    assert sorted(r.episode_id for r in killed.all_records()) == sorted(plan)
    assert [r.episode_id for r in killed.records()] == plan
    assert killed.superseded() == []
    # The killed attempt kept apart: only the driver's start marker, nothing admitted from it.
    attempts = sorted(p.relative_to(killed.root).as_posix() for p in (killed.root / "interrupted").glob("*/*"))
    assert attempts == [f"interrupted/{plan[0]}/attempt-1"]
    assert sorted(p.name for p in (killed.root / attempts[0]).iterdir()) == ["lost_worker.json", "started.json"]
    loss = killed.lost_worker(attempts[0])  # the attempt says why it stopped, as workers.jsonl does
    assert loss is not None and (loss.episode_id, loss.worker, loss.cause, loss.at) == (
        plan[0], events[0].worker, events[0].cause, events[0].at)
    assert killed.completeness().interrupted_attempts == 1 and killed.completeness().missing == []
    # The evidence is the local executor's, the episode run again included (same tenant seed, same everything).
    killed_records = {r.episode_id: r for r in killed.records()}
    for record in local.records():
        assert comparable(killed_records[record.episode_id]) == comparable(record), record.episode_id
        for name in IDENTICAL:
            assert (killed.episode_dir(record.episode_id) / name).read_bytes() == (
                local.episode_dir(record.episode_id) / name).read_bytes(), f"{record.episode_id}/{name} differs"
        assert killed.integrity_problems(killed_records[record.episode_id]) == []
        assert killed.admission_problems(killed_records[record.episode_id]) == []
    assert killed.checksum_problems() == []
    verified = CliRunner().invoke(app, ["verify", str(out)])
    assert verified.exit_code == 0, verified.output
    assert not ray.is_initialized()
    print(f"run with a worker killed: {took:.1f} s")


def _in_group(pgid: int) -> list[str]:
    """The live processes of process group `pgid` (not zombies), as `pid name`."""
    import psutil
    left = []
    for process in psutil.process_iter(["pid", "name", "status"]):
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {process.info['name']}")
    return left


def _descendants(pid: int) -> dict[Any, str]:
    """Every live process under `pid`, whatever its process group or session, with its name (Ray's renamed ones
    `ray::...`, read from the command line)."""
    import psutil
    found = {}
    for process in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            found[process] = (process.cmdline() or [process.name()])[0]
    return found


def _alive(processes: dict[Any, str]) -> list[str]:
    """Those of `processes` still running (not zombies; `is_running` tells a reused pid apart), as `pid name`."""
    import psutil
    left = []
    for process, name in processes.items():
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {name}")
    return left


def admitted_and_in_flight(out: Path) -> tuple[list[str], list[str]]:
    """The episodes a run has admitted (its episodes.jsonl's lines) and those started but not admitted: an episode
    directory, as a resume sets apart (one killed between its directory and its started.json counts too)."""
    lines = (out / "episodes.jsonl").read_text().splitlines() if (out / "episodes.jsonl").is_file() else []
    admitted = [json.loads(line)["episode_id"] for line in lines if line.strip()]
    started = [p.name for p in (out / "episodes").iterdir() if p.is_dir()] if (out / "episodes").is_dir() else []
    return admitted, sorted(set(started) - set(admitted))


@pytest.mark.browser
def test_a_ray_run_whose_driver_is_killed_resumes_on_ray_with_nothing_lost_or_twice(
        runs: Runs, tmp_path: Path) -> None:
    """The driver (`computerops run --executor ray`, its own process) killed by SIGKILL with one episode admitted
    and others in flight on its workers; `run --resume --executor ray` sets the attempts in flight apart and runs
    them again: every planned episode admitted once, the evidence the local executor's, verify PASS."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process with its own workers' environment")
    out = tmp_path / "killed" / RUN
    env = {**os.environ, TEST_EPISODE_DELAY: "1.5"}
    driver = subprocess.Popen(
        [sys.executable, "-c", "from computerops.cli.main import main; main()", "run", "--out", str(out), "--tasks",
         TASKS, "--endpoint", ENDPOINT, "--executor", "ray", "--workers", str(WORKERS)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        admitted: list[str] = []
        in_flight: list[str] = []
        while time.monotonic() < deadline and driver.poll() is None:
            admitted, in_flight = admitted_and_in_flight(out)
            if admitted and in_flight:
                break
            time.sleep(0.05)
        assert driver.poll() is None, "the driver finished before it could be killed mid-run"
        assert admitted and in_flight, "no episode admitted with another in flight within 180 s"
        # Every process under the driver: Ray puts each worker (and its Chromium) in a process group of its own, so
        # the driver's group alone would not show a worker that outlived it.
        under = _descendants(driver.pid)
        assert any(name == "ray::RuntimeEnvAgent" for name in under.values()), under
        driver.kill()  # SIGKILL: no cleanup of its own; its Ray instance's processes end with it
        driver.wait(timeout=30)
        # The raylet's own children (its runtime-env and dashboard agents, the workers, their Chromiums) outlived the
        # driver until its reaper (computerops/runs/ray_reaper.py) ended them on its lifeline's cut.
        deadline = time.monotonic() + 30
        while ((left := _in_group(driver.pid)) or (alive := _alive(under))) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == [], f"processes of the killed driver's Ray instance outlived it: {left}"
        assert alive == [], f"processes started under the killed driver outlived it: {alive}"
    finally:
        with contextlib.suppress(ProcessLookupError):  # what of its Ray instance outlives it (its agents)
            os.killpg(driver.pid, signal.SIGKILL)
        if driver.stdout is not None:
            driver.stdout.close()
    admitted, in_flight = admitted_and_in_flight(out)  # again: an admission may have landed before the kill
    lines: list[str] = []
    launch(plan_resume(out), lines.append, resume=True, executor=ExecutorChoice(executor="ray"))
    resumed = RunDirectory.open(out)
    local = runs.local
    plan = [p.episode_id for p in local.manifest().config.episodes]
    assert sorted(r.episode_id for r in resumed.all_records()) == sorted(plan)  # once each, none lost
    assert [r.episode_id for r in resumed.records()] == plan and resumed.superseded() == []
    (entry,) = resumed.resumes()
    assert entry.admitted_before == len(admitted)
    # The resume names the workers it ran on (the manifest keeps the first run's): a loss of one is traceable.
    assert entry.execution is not None and entry.execution.executor == "ray", entry
    assert [f"ray: {worker} ready" for worker in entry.execution.workers] == [
        line for line in lines if line.startswith("ray: worker ") and line.endswith(" ready")]
    assert sorted(entry.set_apart) == in_flight  # the attempts in flight when the driver died, kept apart
    assert resumed.completeness().missing == [] and resumed.completeness().interrupted_attempts == len(in_flight)
    assert any(line.startswith("ray: ") and " workers (the cluster has " in line for line in lines), lines
    assert resumed.manifest().execution.executor == "ray"
    resumed_records = {r.episode_id: r for r in resumed.records()}
    for record in local.records():
        assert comparable(resumed_records[record.episode_id]) == comparable(record), record.episode_id
        for name in IDENTICAL:
            assert (resumed.episode_dir(record.episode_id) / name).read_bytes() == (
                local.episode_dir(record.episode_id) / name).read_bytes(), f"{record.episode_id}/{name} differs"
    assert resumed.checksum_problems() == []
    verified = CliRunner().invoke(app, ["verify", str(out)])
    assert verified.exit_code == 0, verified.output
    assert not ray.is_initialized()


def test_more_workers_than_the_cluster_can_place_are_refused_before_the_run_starts(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "run"), "--tasks", TASKS, "--endpoint", ENDPOINT,
                                      "--executor", "ray", "--workers", "512"])
    assert result.exit_code == 2, result.output
    assert "--workers 512 needs 512 CPUs" in result.output and "give fewer workers or add nodes" in result.output
    assert not (tmp_path / "run").exists()
    assert not ray.is_initialized()


@pytest.mark.parametrize(("cpus", "planned", "workers"), [
    (2.0, 4, 2), (2.0, 1, 1), (0.0, 4, 1), (0.5, 4, 1), (16.0, 4, 4), (64.0, 100, 64), (3.9, 10, 3)])
def test_default_workers_are_one_per_cpu_of_the_cluster_at_most_one_per_planned_episode(
        cpus: float, planned: int, workers: int) -> None:
    assert default_workers(cpus, planned) == workers


def test_an_address_where_no_cluster_answers_is_refused_within_its_bound() -> None:
    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refusal = unreachable_cluster(f"127.0.0.1:{port}", timeout_s=2.0)
    assert refusal is not None and f"no Ray cluster answers at 127.0.0.1:{port}" in refusal
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert unreachable_cluster(f"127.0.0.1:{listening.getsockname()[1]}") is None
    assert unreachable_cluster("auto") is None and unreachable_cluster("ray://head:10001") is None


class DyingActor:
    """A stand-in for a worker actor whose every episode loses it (its `run.remote` raises as Ray does)."""

    def __init__(self) -> None:
        self.run = self
        self.calls = 0

    async def remote(self, *_: Any) -> None:
        from ray.exceptions import ActorDiedError
        self.calls += 1
        raise ActorDiedError()


class Bundle:
    """What the executor does to the run directory, recorded."""

    root = Path("/run")

    def __init__(self) -> None:
        self.done: list[str] = []

    def start_episode(self, planned: Any) -> None:
        self.done.append(f"start {planned.episode_id}")

    def record_lost_worker(self, loss: LostWorker) -> None:
        self.done.append(f"loss {loss.worker} ({loss.cause.split(':')[0]}) recorded in {loss.episode_id}")

    def set_apart(self, episode_id: str) -> Path:
        self.done.append(f"set apart {episode_id}")
        return self.root / "interrupted" / episode_id

    def log_worker_event(self, event: WorkerEvent) -> None:
        cause = (event.cause or "").split(":")[0]
        self.done.append(f"{event.event} {event.worker}" + (f" ({cause})" if event.event == "lost" else ""))

    def admit(self, record: Any) -> None:
        self.done.append("admit")


async def test_an_episode_that_keeps_losing_its_worker_fails_after_the_bound_and_is_never_admitted(
        tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from computerops.runs.ray_executor import _Worker
    executor, episode, task, lines = _fake_executor(tmp_path)
    actors = [DyingActor()]

    async def replacement() -> _Worker:
        actors.append(DyingActor())
        executor.replaced += 1
        return _Worker(actors[-1], _hello(len(actors) - 1))

    executor._replacement = replacement  # type: ignore[method-assign]
    executor._idle.put_nowait(_Worker(actors[0], _hello(0)))
    bundle = Bundle()
    with pytest.raises(RuntimeError, match=f"lost its worker {MAX_WORKER_LOSSES + 1} times"):
        await executor.run(bundle, task, episode, 0.0)  # type: ignore[arg-type]
    assert [a.calls for a in actors] == [1] * (MAX_WORKER_LOSSES + 1)  # each try on a live (new) worker
    name = "worker {} (h, node nnnnnnnnnnnn, pid {})".format
    # Each attempt records its loss before it is set apart; the last one keeps it for the resume that sets it apart.
    last = name(MAX_WORKER_LOSSES, 100 + MAX_WORKER_LOSSES)
    assert bundle.done == [
        line for n in range(MAX_WORKER_LOSSES) for line in (
            f"start {episode.episode_id}", f"loss {name(n, 100 + n)} (ActorDiedError) recorded in {episode.episode_id}",
            f"set apart {episode.episode_id}", f"lost {name(n, 100 + n)} (ActorDiedError)",
            f"replaced {name(n + 1, 101 + n)}")
    ] + [f"start {episode.episode_id}", f"loss {last} (ActorDiedError) recorded in {episode.episode_id}",
         f"lost {last} (ActorDiedError)"]
    # never admitted; the last attempt stays for a resume to set apart, and no worker replaces the last loss
    assert [line.split(": episode")[0] for line in lines if " lost (" in line] == [
        f"ray: worker {n} lost (ActorDiedError, pid {100 + n})" for n in range(MAX_WORKER_LOSSES)]
    assert [line for line in lines if " ready, in place of " in line] == [
        f"ray: {name(n + 1, 101 + n)} ready, in place of worker {n}" for n in range(MAX_WORKER_LOSSES)]
    assert executor.replaced == MAX_WORKER_LOSSES


@functools.cache
def driver_identity() -> WorkerIdentity:
    tasks = plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), Path("unused")).tasks
    return identity(task_files(tasks))


def test_the_driver_and_a_worker_of_the_same_checkout_have_one_identity() -> None:
    driver = driver_identity()
    assert set(driver.task_sha256) == set(TASKS.split(","))
    assert all(len(value) == 64 for value in driver.task_sha256.values())
    assert set(driver.code_sha256) == set(code_hashes()) and "python" in driver.versions
    assert "chromium" not in driver.versions  # compared after each worker's start
    hello = WorkerHello(index=0, host="node-a", node="f" * 40, pid=4242, identity=identity(task_files(
        plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), Path("unused")).tasks)))
    assert worker_refusal(hello, driver) is None


PARTS = ("code_sha256", "task_sha256", "versions")
WHAT = {"code_sha256": "its code differs", "task_sha256": "its task files differ", "versions": "its versions differ"}


@settings(max_examples=examples(60), deadline=None)
@given(changes=st.lists(st.tuples(st.sampled_from(PARTS), st.integers(0, 20), st.sampled_from(["changed", "missing"])),
                        min_size=1, max_size=4))
def test_a_worker_is_refused_naming_exactly_what_differs(changes: list[tuple[str, int, str]]) -> None:
    """Any change to any entry of a worker's code hashes, task hashes or versions refuses it, naming the worker,
    each entry that differs (and no other) and both values; an identical identity is never refused."""
    driver = driver_identity()
    parts: dict[str, dict[str, str | None]] = {part: dict(getattr(driver, part)) for part in PARTS}
    changed: dict[str, set[str]] = {part: set() for part in PARTS}
    for part, position, how in changes:
        keys = sorted(getattr(driver, part))
        key = keys[position % len(keys)]
        if how == "missing":
            parts[part].pop(key, None)
        else:
            parts[part][key] = "0" * 64
        changed[part].add(key)
    worker = WorkerIdentity(**parts)  # type: ignore[arg-type]
    hello = WorkerHello(index=3, host="node-b", node="e" * 40, pid=4343, identity=worker)
    refusal = worker_refusal(hello, driver)
    differs = {part: {k for k in changed[part] if getattr(driver, part).get(k) != parts[part].get(k)}
               for part in PARTS}
    if not any(differs.values()):
        assert refusal is None
        return
    assert refusal is not None and refusal.startswith("worker 3 (node-b, node eeeeeeeeeeee, pid 4343) refused: ")
    for part in PARTS:
        listed = refusal.split(WHAT[part] + " from the driver's in ")[1].split(";")[0] if differs[part] else ""
        assert (WHAT[part] in refusal) == bool(differs[part]), (part, refusal)
        named = {entry.split(" (")[0] for entry in re.findall(r"(?:^|, )([\w.@-]+ \([^)]*\))", listed)}
        assert named == differs[part], (part, refusal)
    for part in PARTS:
        for key in differs[part]:
            here = getattr(driver, part)[key]
            assert f"{key} (" in refusal and (here or "missing")[:12] in refusal


@pytest.mark.parametrize(("options", "named"), [
    (["--executor", "ray", "--concurrency", "2"], "drop --concurrency"),
    (["--workers", "2"], "go with --executor ray"),
    (["--ray-address", "127.0.0.1:6379"], "go with --executor ray"),
])
def test_executor_options_that_do_not_go_together_are_refused_before_anything_runs(
        tmp_path: Path, options: list[str], named: str) -> None:
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "run"), "--tasks", TASKS, "--endpoint", ENDPOINT,
                                      *options])
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert not (tmp_path / "run").exists()


def code_tree_with_another_verifier(root: Path) -> Path:
    """A copy of the code at `root` whose `verifier` package differs by one comment (`computerops` copied too, so its
    provenance hashes the copy; the other packages linked)."""
    source = Path(__file__).resolve().parents[1]
    for package in ("computerops", "verifier"):
        shutil.copytree(source / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    for package in ("sites", "tasks", "adapter", "replays"):
        (root / package).symlink_to(source / package, target_is_directory=True)
    with (root / "verifier" / "__init__.py").open("a", encoding="utf-8") as handle:
        handle.write("# another verifier\n")
    return root


async def test_a_ray_worker_running_other_code_is_refused_by_name_before_it_runs_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process with its own workers' environment")
    planned = plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), tmp_path / "run")
    other = code_tree_with_another_verifier(tmp_path / "other-code")
    monkeypatch.setenv("PYTHONPATH", str(other))
    monkeypatch.chdir(other)  # a local Ray's workers put the driver's working directory first on their path
    setup = WorkerSetup(config=planned.config, tasks=planned.tasks, extra_steps=None, base_url="", api_key="",
                        bounds=None, token_scale=1.0, trace=False)
    with pytest.raises(WorkerRefused) as refused:
        async with RayExecutor(setup, workers=1):
            pass
    assert "worker 0 (" in str(refused.value) and "verifier" in str(refused.value), refused.value
    assert "sites" not in str(refused.value)
    assert not ray.is_initialized()  # the Ray instance it started is shut down again


class Reached(Exception):
    """What a live fake worker raises: the episode reached it."""


class LiveActor:
    """A fake actor whose `run` says the episode reached it."""

    def __init__(self) -> None:
        self.run = self
        self.calls = 0

    async def remote(self, *_: Any) -> None:
        self.calls += 1
        raise Reached()


def _fake_executor(tmp_path: Path) -> tuple[RayExecutor, Any, Any, list[str]]:
    planned = plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), tmp_path / "run")
    setup = WorkerSetup(config=planned.config, tasks=planned.tasks, extra_steps=None, base_url="", api_key="",
                        bounds=None, token_scale=1.0, trace=False)
    lines: list[str] = []
    episode = planned.config.episodes[0]
    return RayExecutor(setup, workers=2, progress=lines.append), episode, next(
        t for t in planned.tasks if t.id == episode.task_id), lines


def _hello(index: int) -> WorkerHello:
    return WorkerHello(index=index, host="h", node="n" * 40, pid=100 + index, identity=identity({}))


async def test_an_episode_whose_worker_is_lost_runs_again_on_an_idle_worker_without_waiting_for_the_replacement(
        tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from computerops.runs.ray_executor import _Worker
    executor, episode, task, lines = _fake_executor(tmp_path)
    started = asyncio.Event()
    never = asyncio.Event()

    async def slow_replacement() -> _Worker:  # waits for a CPU that never frees
        started.set()
        await never.wait()
        raise AssertionError("unreachable")

    executor._replacement = slow_replacement  # type: ignore[method-assign]
    live = LiveActor()
    executor._idle.put_nowait(_Worker(DyingActor(), _hello(0)))
    executor._idle.put_nowait(_Worker(live, _hello(1)))
    bundle = Bundle()
    with pytest.raises(Reached):
        await asyncio.wait_for(executor.run(bundle, task, episode, 0.0), 10)  # type: ignore[arg-type]
    assert live.calls == 1 and started.is_set() and len(executor._replacing) == 1  # the replacement still starting
    assert any(line.endswith(f"episode {episode.episode_id} run again on worker 1") for line in lines), lines
    await executor.stop_replacing()  # the run's end: cancelled, nothing logged after it
    assert executor._replacing == set()
    assert [line.split(" (")[0] for line in bundle.done] == [f"start {episode.episode_id}", "loss worker 0",
                                                             f"set apart {episode.episode_id}", "lost worker 0",
                                                             f"start {episode.episode_id}"]


async def test_a_replacement_that_cannot_start_stops_the_run_at_the_next_hand_out(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from computerops.runs.ray_executor import _Worker
    executor, episode, task, _ = _fake_executor(tmp_path)

    async def failing_replacement() -> _Worker:
        raise RuntimeError("worker 2, in place of a lost one, did not start within 1 s: no node has a free CPU")

    executor._replacement = failing_replacement  # type: ignore[method-assign]
    executor._idle.put_nowait(_Worker(DyingActor(), _hello(0)))
    bundle = Bundle()
    with pytest.raises(RuntimeError, match=r"worker 0 \(h, node n{12}, pid 100\) lost \(ActorDiedError\) on episode "
                                           r".* and no worker replaced it: worker 2, in place of a lost one, did not"):
        await asyncio.wait_for(executor.run(bundle, task, episode, 0.0), 10)  # type: ignore[arg-type]
    assert bundle.done[-1] == "replacement_failed replacement of worker 0"
    with pytest.raises(RuntimeError, match="no worker replaced it"):  # every later hand-out too
        await asyncio.wait_for(executor.run(bundle, task, episode, 0.0), 10)  # type: ignore[arg-type]


class _Step:
    """One remote method of a starting fake actor: records how many calls of it were in flight at once."""

    def __init__(self, answer: Any, flight: list[int]) -> None:
        self.answer, self.flight = answer, flight

    async def remote(self, *_: Any) -> Any:
        self.flight[0] += 1
        self.flight[1] = max(self.flight[1], self.flight[0])
        await asyncio.sleep(0.05)
        self.flight[0] -= 1
        return self.answer


async def test_the_runs_workers_are_asked_and_started_all_at_once(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    executor, _, _, lines = _fake_executor(tmp_path)
    hellos, starts = [0, 0], [0, 0]  # [in flight, most at once]
    actors = []
    for index in range(3):
        actor = SimpleNamespace(hello=_Step(WorkerHello(index=index, host="h", node="n" * 40, pid=100 + index,
                                                        identity=executor._driver), hellos),
                                start=_Step("chromium 1", starts))
        actors.append(actor)
    await executor._start_workers(actors, 3.0)
    assert (hellos[1], starts[1]) == (3, 3), "one worker's start waited for another's"
    assert executor.chromium == "chromium 1" and len(executor.names) == 3 and executor._idle.qsize() == 3
    assert [line for line in lines if line.endswith(" ready")] == [f"ray: {name} ready" for name in executor.names]


FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
STARTED_WITH = ["worker 0 (h, node a, pid 1)", "worker 1 (h, node a, pid 2)"]
REPLACEMENT = "worker 2 (h, node a, pid 3)"
RESUMED_WITH = "worker 0 (h, node a, pid 9)"


def _lost_run(tmp_path: Path) -> tuple[RunDirectory, Any]:
    """A run whose workers.jsonl and attempts agree: worker 0 lost on e1 (set apart) and replaced by worker 2, worker 1
    lost for good on e2 (its attempt set apart by the resume that ran on worker 0 of its own), that one lost on e3."""
    shutil.copytree(FIXTURE_RUN, tmp_path / "run")
    bundle = RunDirectory.open(tmp_path / "run")
    manifest = bundle.manifest()
    manifest = manifest.model_copy(update={"execution": manifest.execution.model_copy(
        update={"executor": "ray", "workers": STARTED_WITH})})

    def lose(worker: str, episode: str, *, set_apart: bool) -> None:
        bundle.record_lost_worker(loss := LostWorker(episode_id=episode, worker=worker, cause="ActorDiedError: gone"))
        attempt = bundle.set_apart(episode).relative_to(bundle.root).as_posix()
        bundle.log_worker_event(WorkerEvent(at=loss.at, event="lost", worker=worker, cause=loss.cause,
                                            episode_id=episode, set_apart=attempt if set_apart else None))

    lose(STARTED_WITH[0], "e1", set_apart=True)
    bundle.log_worker_event(WorkerEvent(event="replaced", worker=REPLACEMENT, in_place_of=STARTED_WITH[0]))
    lose(STARTED_WITH[1], "e2", set_apart=False)  # the final loss: the resume set its attempt apart
    bundle.log_resume(ResumeEntry.model_validate({
        "resumed_at": "now", "admitted_before": 0, "torn_bytes_removed": 0, "set_apart": {}, "to_run": 1,
        "endpoint_observed": manifest.endpoint_observed.model_dump(mode="json"),
        "execution": manifest.execution.model_copy(update={"workers": [RESUMED_WITH]}).model_dump(mode="json")}))
    lose(RESUMED_WITH, "e3", set_apart=True)
    return bundle, manifest


def _unlogged_loss(bundle: RunDirectory) -> None:
    (bundle.root / "interrupted" / "e4" / "attempt-1").mkdir(parents=True)
    loss = LostWorker(episode_id="e4", worker=REPLACEMENT, cause="ActorDiedError: gone")
    (bundle.root / "interrupted" / "e4" / "attempt-1" / "lost_worker.json").write_text(loss.model_dump_json())


def _rewrite_events(change: Any) -> Any:
    def rewrite(bundle: RunDirectory) -> None:
        events = [change(event) for event in bundle.worker_events()]
        (bundle.root / "workers.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    return rewrite


@pytest.mark.parametrize(("damage", "named"), [
    (lambda b: (b.root / "interrupted/e1/attempt-1/lost_worker.json").unlink(),
     "interrupted/e1/attempt-1 holds no lost_worker.json"),
    (lambda b: (b.root / "interrupted/e3/attempt-1/lost_worker.json").write_text(LostWorker(
        episode_id="e3", worker=RESUMED_WITH, cause="OtherError").model_dump_json()),
     "interrupted/e3/attempt-1/lost_worker.json names worker 0 (h, node a, pid 9) on e3 (OtherError)"),
    (_unlogged_loss, "interrupted/e4/attempt-1/lost_worker.json: worker 2 (h, node a, pid 3)'s loss on e4 is not in"),
    (_rewrite_events(lambda e: e.model_copy(update={"worker": "worker 7 (h, node a, pid 8)"})
                     if e.episode_id == "e3" else e), "worker 7 (h, node a, pid 8) lost, but no start, resume"),
    (_rewrite_events(lambda e: e.model_copy(update={"in_place_of": STARTED_WITH[1]})
                     if e.event == "replaced" else e), f"replaced in place of {STARTED_WITH[1]}, which no earlier"),
    (_rewrite_events(lambda e: e.model_copy(update={"set_apart": "interrupted/e1/../../episodes"})
                     if e.episode_id == "e1" else e), "set apart at interrupted/e1/../../episodes, not"),
    (lambda b: (b.root / "resumes.jsonl").unlink(), f"{RESUMED_WITH} lost, but no start, resume or replacement"),
], ids=["attempt-without-its-loss", "loss-naming-another-cause", "loss-not-logged", "unknown-worker",
        "replacing-a-worker-not-lost", "attempt-outside-interrupted", "resume-not-naming-its-workers"])
def test_verify_holds_a_ray_runs_worker_losses_to_the_attempts_and_the_workers_that_ran(
        tmp_path: Path, damage: Any, named: str) -> None:
    """verify reads workers.jsonl against the manifest's workers, each resume's and each replacement, and against the
    lost_worker.json of each attempt set apart: the agreeing run passes, each damage is named."""
    from computerops.runs.verification import worker_problems
    bundle, manifest = _lost_run(tmp_path)
    assert worker_problems(bundle, manifest) == []
    damage(bundle)
    problems = worker_problems(bundle, manifest)
    assert any(named in problem for problem in problems), problems


async def test_a_worker_writes_its_scratch_episode_unsynced_and_the_driver_admits_it_synced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's episode folder is scratch (the driver writes its files again, fsync'd): inside the worker's run, in
    the episode's own tasks too, no fsync; the driver's writes and admission fsync as before. Before, each file cost
    two fsyncs on Ray (10.5 per episode of the test plan, 61 ms at load 14 here) against one on the local executor."""
    import computerops.runs.episode
    from computerops.runs.episode import EpisodeContext
    from computerops.runs.ray_executor import EpisodeWorker
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    executor, episode, task, _ = _fake_executor(tmp_path)

    async def scripted_episode(ctx: EpisodeContext, _: Any, planned: Any) -> tuple[EpisodeRecord, None]:
        ctx.bundle.start_episode(planned)
        await asyncio.create_task(asyncio.to_thread(ctx.bundle.write_evidence_bytes, planned.episode_id, "a.json",
                                                    b"{}"))  # a task and a thread of the episode's, as a site's
        return EpisodeRecord.model_validate_json(records[0]), None

    local = RunDirectory.open(FIXTURE_RUN)
    records = [local.records()[0].model_copy(update={"episode_id": episode.episode_id}).model_dump_json()]
    monkeypatch.setattr(computerops.runs.episode, "run_episode", scripted_episode)
    worker = EpisodeWorker(0)
    worker._scratch = tmp_path / "scratch"
    worker._scratch.mkdir()
    worker._tasks = {task.id: task}
    worker._ctx = EpisodeContext(config=executor.setup.config, bundle=None, registry=None,  # type: ignore[arg-type]
                                 replay_registry=None, browser=None, origin="", client=None)  # type: ignore[arg-type]
    result = await worker.run(task.id, episode, 0.0)
    assert sorted(result.files) == ["a.json"] and synced == []
    bundle = RunDirectory(tmp_path / "driver")
    (bundle.root / "episodes").mkdir(parents=True)
    bundle.start_episode(episode)
    bundle.write_evidence_bytes(episode.episode_id, "a.json", result.files["a.json"])
    (bundle.root / "episodes.jsonl").touch()
    bundle.admit(EpisodeRecord.model_validate_json(result.record))
    assert len(synced) == 4  # started.json, a.json, the record's line, admitted.json: the driver's, as before
