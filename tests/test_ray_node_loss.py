"""A Ray *node* lost mid-episode (computerops/runs/ray_executor.py): on a multi-node Ray cluster on this machine (one
head without CPUs, three one-CPU nodes: two workers and room for one replacement), a run joined by address whose
worker 0's node is removed without grace while it holds the run's first episode still admits every planned episode
exactly once, with the local executor's evidence byte for byte; the lost attempt is kept apart under
interrupted/<id>/attempt-1, the replacement runs on another, live node, the progress names the loss, `verify` passes,
the run ends within a bound (a hang fails), the cluster stays usable after the driver leaves it, and no process of the
cluster (raylets, Ray workers, their Chromiums) outlives the test.

Slow tier (`pytest -m slow`): four raylets and three Chromiums on one machine take about a minute."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from test_ray_executor import ENDPOINT, IDENTICAL, RUN, TASKS, WORKERS, comparable
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.core.execution import ExecutorChoice
from computerops.runs import ray_executor
from computerops.runs.bundle import RunDirectory
from computerops.runs.ray_executor import TEST_EPISODE_DELAY, RayExecutor, _Worker
from computerops.service.launch import PlannedRun, RunRequest, launch, plan_run

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WORKER_NODES = WORKERS + 1
"""One-CPU nodes: one per worker, and one for the replacement of the worker whose node is lost."""
OBJECT_STORE = 80 * 1024 * 1024
"""Each node's object store (Ray's minimum is 75 MiB): four nodes share this machine's memory."""
EPISODE_DELAY_S = "2"
"""The workers' test-only wait before each episode: the node is removed inside it."""
REMOVE_AFTER_S = 0.8
"""When the test removes worker 0's node after the run's first episode went to it."""
RUN_LIMIT_S = 120.0
"""The run must end by then: a replacement that never starts, or an episode never given back, fails the test."""
NODE_DEAD_WITHIN_S = 90.0
"""How long the cluster's health check may take to mark the removed node dead (about ten seconds by default)."""
GONE_WITHIN_S = 20.0
"""How long the test waits for the cluster's processes to exit after it is shut down."""
READY = re.compile(r"ray: worker (\d+) \((.+), node ([0-9a-f]{12}), pid (\d+)\) ready$")


def processes_of(pids: set[int]) -> set[psutil.Process]:
    """The live processes among `pids` and all their descendants (a node's raylet, its Ray workers, their Chromiums).
    """
    found: set[psutil.Process] = set()
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            process = psutil.Process(pid)
            found |= {process, *process.children(recursive=True)}
    return found


def node_pids(node: Any) -> set[int]:
    """The pids of the processes Ray started for a node (raylet, and on the head the GCS and the rest)."""
    return {info.process.pid for infos in node.all_processes.values() for info in infos}


def alive(processes: set[psutil.Process]) -> list[psutil.Process]:
    """Those of `processes` still running (a zombie, reaped by nobody yet, has ended)."""
    left = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process)
    return left


@dataclass
class LocalCluster:
    """A Ray cluster of several raylets on this machine, and every process it started that the test has seen."""

    cluster: Any
    seen: set[psutil.Process] = field(default_factory=set)

    def note_processes(self) -> None:
        """Remember the cluster's processes as they are now (workers and Chromiums come and go with the run)."""
        self.seen |= processes_of({pid for node in self.cluster.list_all_nodes() for pid in node_pids(node)})

    def node(self, node_id_prefix: str) -> Any:
        """The cluster's node whose id starts with `node_id_prefix` (as a worker's progress line names it)."""
        [node] = [n for n in self.cluster.list_all_nodes() if n.node_id.startswith(node_id_prefix)]
        return node


@pytest.fixture
def local_cluster(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    """A head without CPUs (no worker lands there; the driver, on this machine, connects to it) and one-CPU nodes
    (WORKER_NODES, or as parametrized); shut down afterwards, failing if any of its processes outlives it."""
    ray: Any = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    from ray.cluster_utils import Cluster
    monkeypatch.setenv(TEST_EPISODE_DELAY, EPISODE_DELAY_S)  # the raylets started here, so their workers, inherit it
    cluster: Any = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": OBJECT_STORE})
    local = LocalCluster(cluster)
    try:
        for _ in range(getattr(request, "param", WORKER_NODES)):
            cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE)
        cluster.wait_for_nodes()
        local.note_processes()
        yield local
    finally:
        local.note_processes()
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        deadline = time.monotonic() + GONE_WITHIN_S
        while (left := alive(local.seen)) and time.monotonic() < deadline:
            time.sleep(0.2)
        named = []
        for process in left:  # end them (ours, by pid) so one failure does not leave them running
            with contextlib.suppress(psutil.Error):
                named.append(f"{process.pid} {' '.join(process.cmdline()[:2])}")
                process.kill()
        assert not left, "processes of the cluster left running: " + "; ".join(named)


@dataclass
class NodeLoss:
    """A run on `local`, watched from outside the executor, that loses worker 0's node REMOVE_AFTER_S after the run's
    first episode went to worker 0."""

    local: LocalCluster
    lines: list[str] = field(default_factory=list)
    workers: dict[int, tuple[str, int]] = field(default_factory=dict)  # index -> (node id prefix, pid)
    first: list[str] = field(default_factory=list)  # the episode the driver handed out first: to worker 0
    removed: list[str] = field(default_factory=list)  # the node id removed
    removed_at: float = 0.0
    replacements: list[_Worker] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)  # the timer's, then the run's
    replacement_start_s: float | None = None
    """REPLACEMENT_START_S for replacements only (the run's first workers keep the default to start in)."""

    def progress(self, line: str) -> None:
        self.lines.append(line)
        if found := READY.match(line):
            self.workers[int(found[1])] = (found[3], int(found[4]))

    def remove_worker_0_node(self) -> None:
        try:
            node = self.local.node(self.workers[0][0])
            self.local.note_processes()  # its Ray worker and Chromium, to check they do not outlive the test
            self.removed.append(node.node_id)
            self.removed_at = time.monotonic()
            self.local.cluster.remove_node(node, allow_graceful=False)
        except BaseException as exc:  # a Timer thread's error would otherwise be printed and lost
            self.errors.append(exc)

    def watch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Hook the run directory's episode start (to remove the node) and the executor's replacement (to see it)."""
        start_episode = RunDirectory.start_episode
        replacement = RayExecutor._replacement

        def start_and_remove(bundle: RunDirectory, planned: Any) -> None:
            start_episode(bundle, planned)
            if not self.first:
                self.first.append(planned.episode_id)
                threading.Timer(REMOVE_AFTER_S, self.remove_worker_0_node).start()

        async def recorded_replacement(executor: RayExecutor) -> _Worker:
            if self.replacement_start_s is not None:
                monkeypatch.setattr(ray_executor, "REPLACEMENT_START_S", self.replacement_start_s)
            worker = await replacement(executor)
            self.replacements.append(worker)
            return worker

        monkeypatch.setattr(RunDirectory, "start_episode", start_and_remove)
        monkeypatch.setattr(RayExecutor, "_replacement", recorded_replacement)

    def drive(self, planned: PlannedRun, *, workers: int = WORKERS, resume: bool = False) -> float:
        """Launch the run on the cluster in a thread and wait at most RUN_LIMIT_S for it (a hang fails the test);
        its error, if any, goes to `errors`. Returns the seconds it took."""
        def run() -> None:
            try:
                launch(planned, self.progress, resume=resume, executor=ExecutorChoice(
                    executor="ray", workers=workers, ray_address=self.local.cluster.address))
            except BaseException as exc:
                self.errors.append(exc)

        began = time.monotonic()
        driver = threading.Thread(target=run, name="ray-driver", daemon=True)
        driver.start()
        driver.join(RUN_LIMIT_S)
        assert not driver.is_alive(), f"the run did not end within {RUN_LIMIT_S:.0f} s: {self.lines}"
        return time.monotonic() - began


def local_reference(root: Path) -> RunDirectory:
    """The same plan (same run name) run by the local executor, in another folder."""
    launch(plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), root / "local" / RUN), lambda _: None)
    return RunDirectory.open(root / "local" / RUN)


def assert_local_evidence(run: RunDirectory, local: RunDirectory) -> None:
    """Every episode admitted once, with the local executor's evidence byte for byte; `verify` passes."""
    plan = [p.episode_id for p in local.manifest().config.episodes]
    assert run.manifest().config == local.manifest().config
    assert sorted(r.episode_id for r in run.all_records()) == sorted(plan)
    assert [r.episode_id for r in run.records()] == plan
    assert run.superseded() == []
    records = {r.episode_id: r for r in run.records()}
    for record in local.records():
        assert comparable(records[record.episode_id]) == comparable(record), record.episode_id
        for name in IDENTICAL:
            assert (run.episode_dir(record.episode_id) / name).read_bytes() == (
                local.episode_dir(record.episode_id) / name).read_bytes(), f"{record.episode_id}/{name} differs"
        assert run.integrity_problems(records[record.episode_id]) == []
        assert run.admission_problems(records[record.episode_id]) == []
    assert {r.outcome for r in records.values()} == {"verified_success", "false_completion"}
    assert run.checksum_problems() == []
    verified = CliRunner().invoke(app, ["verify", str(run.root)])
    assert verified.exit_code == 0, verified.output


def test_a_node_lost_mid_episode_loses_its_worker_whose_episode_runs_again_on_a_live_node_once(
        local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray: Any = pytest.importorskip("ray")
    cluster = local_cluster.cluster
    seen = NodeLoss(local_cluster)
    seen.watch(monkeypatch)
    out = tmp_path / "ray-node-lost" / RUN
    took = seen.drive(plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), out))
    assert seen.errors == [], seen.lines
    monkeypatch.undo()  # the reference run below starts its episodes unobserved
    local = local_reference(tmp_path)
    lost_run = RunDirectory.open(out)
    plan = [p.episode_id for p in local.manifest().config.episodes]
    # The two workers ran on two distinct worker nodes (not the CPU-less head), and worker 0's node was removed.
    assert sorted(seen.workers) == list(range(WORKERS)), seen.lines
    head = cluster.head_node.node_id if cluster.head_node is not None else ""
    worker_nodes = [node for node, _ in seen.workers.values()]
    assert len(set(worker_nodes)) == WORKERS and not any(head.startswith(n) for n in worker_nodes), seen.workers
    assert seen.first == [plan[0]]
    assert len(seen.removed) == 1 and seen.removed[0].startswith(seen.workers[0][0])
    # The manifest names the cluster and each worker's node (the replacement goes to the progress only).
    execution = lost_run.manifest().execution
    assert (execution.executor, execution.ray_address) == ("ray", cluster.address)
    assert execution.workers == [line.removeprefix("ray: ").removesuffix(" ready") for line in seen.lines
                                 if READY.match(line)]
    assert all(f"node {seen.workers[i][0]}," in execution.workers[i] for i in range(WORKERS)), execution.workers
    # The loss named once; one replacement, on the spare node: neither the removed one nor a busy or CPU-less one.
    lost = [line for line in seen.lines if " lost (" in line]
    assert len(lost) == 1, seen.lines
    named = re.match(rf"ray: worker 0 lost \((\w+), pid {seen.workers[0][1]}\): episode {re.escape(plan[0])} run "
                     r"again on worker \d+$", lost[0])
    assert named, lost
    # The replacement starts in the background (the episode runs again on the first free worker, not waiting for
    # it): it joined the run on the spare node, or the run ended first and it was cancelled.
    assert len(seen.replacements) <= 1, seen.lines
    retried = [line for line in seen.lines if "lost before it started" in line]  # placed on the lost node, at first
    assert len(retried) <= 1, seen.lines
    events = lost_run.worker_events()
    assert (events[0].event, events[0].worker, events[0].episode_id) == ("lost", execution.workers[0], plan[0])
    assert events[0].set_apart == f"interrupted/{plan[0]}/attempt-1" and events[0].cause, events
    assert [(e.event, e.worker, e.in_place_of) for e in events[1:]] == [
        ("replaced", w.hello.name, execution.workers[0]) for w in seen.replacements], events
    for again in (w.hello for w in seen.replacements):
        assert again.index == WORKERS
        assert again.node[:12] not in worker_nodes and not head.startswith(again.node[:12]), (again, seen.workers)
    # Admitted exactly once each, with the local executor's evidence, the episode run again included.
    assert_local_evidence(lost_run, local)
    # The lost attempt kept apart: only the driver's start marker, nothing admitted from it.
    attempts = sorted(p.relative_to(lost_run.root).as_posix() for p in (lost_run.root / "interrupted").glob("*/*"))
    assert attempts == [f"interrupted/{plan[0]}/attempt-1"]
    assert sorted(p.name for p in (lost_run.root / attempts[0]).iterdir()) == ["started.json"]
    assert lost_run.completeness().interrupted_attempts == 1 and lost_run.completeness().missing == []
    # The driver joined by address only disconnected: the cluster lives on, the lost node marked dead by its health
    # check, the two remaining worker nodes free again (every actor of the run killed) and able to run work.
    assert not ray.is_initialized()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        deadline = time.monotonic() + NODE_DEAD_WITHIN_S
        while seen.removed[0] in (live := {n["NodeID"] for n in ray.nodes() if n["Alive"]}):
            assert time.monotonic() < deadline, f"the removed node still counts as alive: {live}"
            time.sleep(0.5)
        marked_dead = time.monotonic() - seen.removed_at
        assert live == {head, *(n.node_id for n in cluster.worker_nodes)} and len(live) == WORKER_NODES, live
        deadline = time.monotonic() + GONE_WITHIN_S
        while ray.available_resources().get("CPU", 0) < WORKER_NODES - 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ray.available_resources().get("CPU", 0) == WORKER_NODES - 1, ray.available_resources()
        node_of = ray.remote(num_cpus=1)(lambda: ray.get_runtime_context().get_node_id())
        assert ray.get(node_of.remote(), timeout=60) in live - {head}
    finally:
        ray.shutdown()
    print(f"\nrun with worker 0's node removed: {took:.1f} s; loss reported as {named[1]}; the node marked dead "
          f"{marked_dead:.1f} s after its removal; replacements lost before they started: {len(retried)}")


NO_CPU_WAIT_S = 1.0
"""The replacement's wait for a CPU in the test where it cannot start (REPLACEMENT_START_S, shortened below the
workers' EPISODE_DELAY_S: it fails while worker 1 still holds its first episode, before any hand-out)."""


@pytest.mark.parametrize("local_cluster", [WORKERS], indirect=True)
def test_a_lost_node_with_no_cpu_for_a_replacement_runs_its_episode_again_on_a_live_worker_without_waiting(
        local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No spare node: the replacement waits (REPLACEMENT_START_S, 300 s) for worker 1's CPU, but the lost episode
    does not wait for it: worker 1 takes it when free, the run admits every episode once with the local executor's
    evidence, and the replacement still waiting at the run's end is cancelled (nothing logged after the seal)."""
    seen = NodeLoss(local_cluster)
    seen.watch(monkeypatch)
    out = tmp_path / "ray-node-lost" / RUN
    seen.drive(plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), out))
    assert seen.errors == [], seen.lines
    monkeypatch.undo()
    run = RunDirectory.open(out)
    assert_local_evidence(run, local_reference(tmp_path))
    assert [e.event for e in run.worker_events()] == ["lost"] and seen.replacements == []
    assert re.search(r"episode .* run again on worker 1$", next(line for line in seen.lines if " lost (" in line))


@pytest.mark.parametrize("local_cluster", [WORKERS], indirect=True)
def test_a_lost_node_whose_replacement_cannot_start_stops_the_run_in_bounded_time_and_a_resume_finishes_it(
        local_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No spare node and a replacement that gives up (REPLACEMENT_START_S shortened): the next hand-out of a worker
    raises, the run stops with what it admitted (nothing twice), the failure in workers.jsonl, and `run --resume` on
    the freed CPU finishes it with the local executor's evidence."""
    from computerops.service.errors import ServiceError
    from computerops.service.launch import plan_resume
    seen = NodeLoss(local_cluster, replacement_start_s=NO_CPU_WAIT_S)
    seen.watch(monkeypatch)
    out = tmp_path / "ray-node-lost" / RUN
    took = seen.drive(plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), out))
    assert len(seen.errors) == 1 and isinstance(seen.errors[0], ServiceError), (seen.errors, seen.lines)
    worker_0 = next(line for line in seen.lines if line.startswith("ray: worker 0 (")).removeprefix("ray: ")
    assert re.search(rf"{re.escape(worker_0.removesuffix(' ready'))} lost \(\w+\) on episode {seen.first[0]}, and no "
                     # worker 2, or a later one where the first was placed on the node not yet marked dead
                     r"worker replaced it: worker \d+, in place of a lost one, did not start within "
                     rf"{NO_CPU_WAIT_S:g} s: no node of the cluster has a free CPU", str(seen.errors[0])), seen.errors
    assert len(seen.removed) == 1 and seen.replacements == []
    stopped = RunDirectory.open(out)
    first = seen.first[0]
    admitted = [r.episode_id for r in stopped.all_records()]
    assert len(admitted) == len(set(admitted)) >= 1, admitted
    assert f"interrupted/{first}/attempt-1" in [
        p.relative_to(stopped.root).as_posix() for p in (stopped.root / "interrupted").glob("*/*")]
    events = stopped.worker_events()
    assert [(e.event, e.in_place_of) for e in events] == [("lost", None), ("replacement_failed", events[0].worker)]
    assert events[1].worker == "replacement of worker 0" and "did not start within" in (events[1].cause or "")
    monkeypatch.undo()
    resumed = seen.drive(plan_resume(out), workers=1, resume=True)
    assert len(seen.errors) == 1, seen.lines  # the resume raised nothing
    assert_local_evidence(RunDirectory.open(out), local_reference(tmp_path))
    print(f"\nrun stopped after {took:.1f} s (replacement waited {NO_CPU_WAIT_S:g} s); resume {resumed:.1f} s")
