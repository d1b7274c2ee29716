"""Blind cases for the Ray executor's promises (docs/scale.md, docs/server.md "Runs on Ray", the README's
`--executor ray` row), written from the docs and the public signatures only: the worker identity check, the default
worker count, the cluster address check, the executor settings, and their refusals by the server's API and the CLI.
Nothing here starts Ray or a browser."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from computerops.cli.main import app as cli_app
from computerops.core.execution import LOCAL, ExecutorChoice
from computerops.runs import ray_executor
from computerops.runs.ray_executor import (
    CPUS_PER_WORKER,
    MAX_WORKER_LOSSES,
    WorkerHello,
    WorkerIdentity,
    default_workers,
    identity,
    unreachable_cluster,
    worker_refusal,
)
from computerops.server.app import create_server_app
from computerops.server.jobs import JobSpec, JobState
from computerops.server.launching import Execution, LaunchExperiment, LaunchRun
from computerops.server.settings import ServerSettings
from computerops.server.state import ServerState

# ---------------------------------------------------------------------------------------------------------------
# Constants the docs name

def test_documented_constants() -> None:
    # scale.md: "one Ray actor declaring one CPU: CPUS_PER_WORKER"; "at most twice per episode (MAX_WORKER_LOSSES)";
    # "where nothing answers within 5 s"; "REPLACEMENT_START_S (300 s)".
    assert CPUS_PER_WORKER == 1
    assert MAX_WORKER_LOSSES == 2
    assert ray_executor.CONNECT_TIMEOUT_S == 5
    assert ray_executor.REPLACEMENT_START_S == 300


# ---------------------------------------------------------------------------------------------------------------
# worker_refusal

HEX = "0123456789abcdef"
hashes = st.text(alphabet=HEX, min_size=64, max_size=64)
# Key names that cannot be substrings of each other or of the message's own words.
keys = st.sampled_from(["pkgalpha", "pkgbravo", "pkgcharlie", "pkgdelta", "pkgecho", "pkgfoxtrot"])
hash_maps = st.dictionaries(keys, hashes, min_size=1, max_size=5)
version_maps = st.dictionaries(st.sampled_from(["verpython", "verplaywright", "veropenai", "vercomputerops"]),
                               st.from_regex(r"\A[1-9]\.[0-9]{1,2}\.[0-9]\Z"), min_size=1, max_size=4)
identities = st.builds(WorkerIdentity, code_sha256=hash_maps,
                       task_sha256=st.dictionaries(st.sampled_from(["taskone", "tasktwo", "taskthree"]), hashes,
                                                   min_size=1, max_size=3),
                       versions=version_maps)


def hello(ident: WorkerIdentity, index: int = 3, host: str = "node-zeta", node: str = "ab" * 20,
          pid: int = 98765) -> WorkerHello:
    return WorkerHello(index=index, host=host, node=node, pid=pid, identity=ident)


@given(identities, st.integers(0, 500), st.text(alphabet="abcdefgh-", min_size=1, max_size=12),
       st.text(alphabet=HEX, min_size=12, max_size=40), st.integers(1, 4_000_000))
def test_identical_identity_is_accepted_wherever_the_worker_runs(ident: WorkerIdentity, index: int, host: str,
                                                                  node: str, pid: int) -> None:
    # The worker's index, host, node and pid are no part of what is compared; an equal copy (not the same object).
    copy = WorkerIdentity(code_sha256=dict(ident.code_sha256), task_sha256=dict(ident.task_sha256),
                          versions=dict(ident.versions))
    assert worker_refusal(hello(copy, index, host, node, pid), ident) is None


def mutate(data: st.DataObject, mapping: dict[str, Any], values: st.SearchStrategy[Any],
           extra_keys: list[str]) -> tuple[dict[str, Any], str, Any, Any]:
    """A copy of `mapping` with one entry changed, removed or added: (copy, key, driver's value, worker's value)."""
    kind = data.draw(st.sampled_from(["changed", "missing", "extra"]))
    copy = dict(mapping)
    if kind == "extra":
        key = data.draw(st.sampled_from([k for k in extra_keys if k not in mapping]))
        copy[key] = data.draw(values)
        return copy, key, None, copy[key]
    key = data.draw(st.sampled_from(sorted(mapping)))
    if kind == "missing":
        del copy[key]
        return copy, key, mapping[key], None
    copy[key] = data.draw(values.filter(lambda v: str(v)[:12] != str(mapping[key])[:12]))
    return copy, key, mapping[key], copy[key]


def assert_names_worker(message: str, index: int = 3, host: str = "node-zeta", pid: int = 98765) -> None:
    assert f"worker {index}" in message
    assert host in message
    assert str(pid) in message
    assert "refused" in message


@given(identities, st.data())
def test_any_code_difference_refuses_naming_it(ident: WorkerIdentity, data: st.DataObject) -> None:
    code, key, mine, theirs = mutate(data, ident.code_sha256, hashes,
                                     ["pkgalpha", "pkgbravo", "pkgcharlie", "pkgdelta", "pkgecho", "pkgfoxtrot",
                                      "pkggolf"])
    message = worker_refusal(hello(replace(ident, code_sha256=code)), ident)
    assert message is not None
    assert_names_worker(message)
    assert key in message
    # "with every difference and both values" (the docs' example shows 12-character prefixes)
    for value in (mine, theirs):
        if value is not None:
            assert value[:12] in message


@given(identities, st.data())
def test_any_task_file_difference_refuses_naming_it(ident: WorkerIdentity, data: st.DataObject) -> None:
    tasks, key, mine, theirs = mutate(data, ident.task_sha256, hashes, ["taskone", "tasktwo", "taskthree",
                                                                        "taskfour"])
    message = worker_refusal(hello(replace(ident, task_sha256=tasks)), ident)
    assert message is not None
    assert_names_worker(message)
    assert key in message
    for value in (mine, theirs):
        if value is not None:
            assert value[:12] in message


@given(identities, st.data())
def test_any_version_difference_refuses_naming_it(ident: WorkerIdentity, data: st.DataObject) -> None:
    versions, key, mine, theirs = mutate(data, ident.versions, st.from_regex(r"\A[1-9]\.[0-9]{1,2}\.[0-9]\Z"),
                                         ["verpython", "verplaywright", "veropenai", "vercomputerops", "verzed"])
    message = worker_refusal(hello(replace(ident, versions=versions)), ident)
    assert message is not None
    assert_names_worker(message)
    assert key in message
    for value in (mine, theirs):
        if value is not None:
            assert value in message


@given(identities, st.data())
def test_a_version_unknown_on_one_side_refuses(ident: WorkerIdentity, data: st.DataObject) -> None:
    # versions are `str | None`: a version the worker cannot tell is a difference like any other.
    key = data.draw(st.sampled_from(sorted(ident.versions)))
    versions = dict(ident.versions)
    versions[key] = None
    message = worker_refusal(hello(replace(ident, versions=versions)), ident)
    assert message is not None
    assert key in message
    assert str(ident.versions[key]) in message


@given(identities, st.data())
def test_every_difference_is_named_at_once(ident: WorkerIdentity, data: st.DataObject) -> None:
    code, code_key, _, _ = mutate(data, ident.code_sha256, hashes, ["pkggolf"])
    tasks, task_key, _, _ = mutate(data, ident.task_sha256, hashes, ["taskfour"])
    versions, version_key, _, _ = mutate(data, ident.versions, st.from_regex(r"\A[1-9]\.[0-9]{1,2}\.[0-9]\Z"),
                                         ["verzed"])
    message = worker_refusal(hello(WorkerIdentity(code_sha256=code, task_sha256=tasks, versions=versions)), ident)
    assert message is not None
    for key in (code_key, task_key, version_key):
        assert key in message


def test_refusal_reads_as_the_docs_example() -> None:
    driver = WorkerIdentity(code_sha256={"verifier": "83c53dd19cee" + "1" * 52, "sites": "a" * 64},
                            task_sha256={"t1": "b" * 64}, versions={"playwright": "1.56.0", "python": "3.12.3"})
    worker = replace(driver, code_sha256={**driver.code_sha256, "verifier": "0" * 64},
                     versions={**driver.versions, "playwright": "1.55.0"})
    message = worker_refusal(WorkerHello(index=1, host="node-b", node="5f0c3e9a1b2d" + "7" * 44, pid=4343,
                                         identity=worker), driver)
    assert message is not None
    assert message.startswith("worker 1 (node-b, node 5f0c3e9a1b2d, pid 4343) refused")
    assert "verifier (000000000000 there, 83c53dd19cee here)" in message
    assert "playwright (1.55.0 there, 1.56.0 here)" in message
    # what did not differ is not named
    assert "sites" not in message
    assert "python" not in message
    assert "t1" not in message


def test_refusal_with_only_versions_differing_does_not_blame_code() -> None:
    driver = WorkerIdentity(code_sha256={"verifier": "c" * 64}, task_sha256={}, versions={"openai": "1.2.3"})
    worker = replace(driver, versions={"openai": "1.2.4"})
    message = worker_refusal(hello(worker), driver)
    assert message is not None
    assert "verifier" not in message
    assert "openai" in message


# ---------------------------------------------------------------------------------------------------------------
# identity / task_files


def test_identity_covers_the_documented_packages_and_versions() -> None:
    ident = identity({})
    # "the content hash of each of our packages (sites, adapter, verifier, tasks, replays, computerops)"
    assert {"sites", "adapter", "verifier", "tasks", "replays", "computerops"} <= set(ident.code_sha256)
    for value in ident.code_sha256.values():
        assert len(value) >= 12
    # "the versions of Python, Playwright, the OpenAI client and ComputerOps"
    names = " ".join(ident.versions).lower()
    for name in ("python", "playwright", "openai", "computerops"):
        assert name in names
    assert ident.task_sha256 == {}


def test_identity_is_deterministic_and_accepts_itself() -> None:
    one = identity({})
    two = identity({})
    assert one == two
    assert worker_refusal(hello(two), one) is None


def test_a_task_file_the_checkout_lacks_is_missing() -> None:
    ident = identity({"ghost-task": "tasks/no/such/file-ghost.yaml"})
    assert ident.task_sha256 == {"ghost-task": "missing"}


def test_a_task_file_that_exists_is_hashed_and_its_absence_refused(tmp_path: Path) -> None:
    # A real catalog task: read the catalog (CLI/API-agnostic), pick one task's files.
    from computerops.runs.ray_executor import task_files
    from tasks.catalog import load_catalog

    tasks = list(load_catalog().values())[:2]
    files = task_files(tasks)
    assert files
    ident = identity(files)
    assert set(ident.task_sha256) == set(files)
    assert "missing" not in ident.task_sha256.values()
    lacking = replace(ident, task_sha256={k: "missing" for k in ident.task_sha256})
    message = worker_refusal(hello(lacking), ident)
    assert message is not None
    for task_id in files:
        assert task_id in message


# ---------------------------------------------------------------------------------------------------------------
# default_workers


@given(st.floats(min_value=0, max_value=1e12, allow_nan=False), st.integers(0, 10**9))
def test_default_workers_is_one_per_cpu_capped_by_the_plan(cpus: float, planned: int) -> None:
    workers = default_workers(cpus, planned)
    assert isinstance(workers, int)
    assert workers == max(1, min(math.floor(cpus / CPUS_PER_WORKER), planned))


@pytest.mark.parametrize(("cpus", "planned", "expected"), [
    (0.0, 5, 1),          # no CPU: still one
    (2.0, 0, 1),          # nothing planned: still one
    (0.0, 0, 1),
    (2.0, 4, 2),          # the docs' progress example
    (2.5, 10, 2),         # a fraction of a CPU is no worker
    (0.5, 10, 1),
    (3.999, 10, 3),
    (16.0, 3, 3),         # at most one per planned episode
    (1e9, 7, 7),
    (1e9, 10**6, 10**6),
    (64.0, 64, 64),
])
def test_default_workers_edges(cpus: float, planned: int, expected: int) -> None:
    assert default_workers(cpus, planned) == expected


# ---------------------------------------------------------------------------------------------------------------
# unreachable_cluster


def closed_port(family: socket.AddressFamily = socket.AF_INET, host: str = "127.0.0.1") -> int:
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_nothing_listening_is_refused_promptly_with_the_documented_message() -> None:
    address = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    message = unreachable_cluster(address, timeout_s=2.0)
    assert time.monotonic() - started < 3.0
    assert message is not None
    assert "no Ray cluster answers at" in message
    assert address in message


def test_a_silent_host_is_refused_within_the_bound() -> None:
    # 192.0.2.0/24 is TEST-NET-1: nothing there answers (or the route is refused at once); either way within bound.
    started = time.monotonic()
    message = unreachable_cluster("192.0.2.1:6379", timeout_s=0.5)
    assert time.monotonic() - started < 2.5
    assert message is not None
    assert "no Ray cluster answers at" in message


def test_a_listening_socket_is_accepted(listener: int) -> None:
    assert unreachable_cluster(f"127.0.0.1:{listener}", timeout_s=2.0) is None


def test_a_listening_socket_by_name_is_accepted(listener: int) -> None:
    assert unreachable_cluster(f"localhost:{listener}", timeout_s=2.0) is None


@pytest.mark.parametrize("address", ["auto", "ray://127.0.0.1:1", "ray://nowhere.invalid:10001"])
def test_other_forms_are_left_to_ray(address: str) -> None:
    # docstring: "other forms (`auto`, `ray://...`) are left to Ray"
    started = time.monotonic()
    assert unreachable_cluster(address, timeout_s=1.0) is None
    assert time.monotonic() - started < 1.5


def test_ipv6_loopback_listening_is_accepted() -> None:
    # Docs are silent on IPv6; `[::1]:PORT` is the usual HOST:PORT spelling of an IPv6 host, and a cluster listening
    # there is reachable, so it must not be refused.
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as server:
        server.bind(("::1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert unreachable_cluster(f"[::1]:{port}", timeout_s=2.0) is None


def test_ipv6_loopback_closed_is_refused() -> None:
    port = closed_port(socket.AF_INET6, "::1")
    message = unreachable_cluster(f"[::1]:{port}", timeout_s=2.0)
    assert message is not None
    assert "no Ray cluster answers at" in message


@pytest.mark.parametrize("address", ["not an address", "host:notaport", ":", "127.0.0.1:99999", ""])
def test_garbage_does_not_raise(address: str) -> None:
    # Docs are silent: such an address is either refused with a message or left to Ray, never an exception.
    started = time.monotonic()
    result = unreachable_cluster(address, timeout_s=1.0)
    assert result is None or isinstance(result, str)
    assert time.monotonic() - started < 2.0


# ---------------------------------------------------------------------------------------------------------------
# ExecutorChoice


def test_local_is_the_default_choice() -> None:
    assert ExecutorChoice() == LOCAL
    assert LOCAL.executor == "local"
    assert LOCAL.workers is None
    assert LOCAL.ray_address is None
    assert LOCAL.problem(1) is None
    assert LOCAL.problem(8) is None


@pytest.mark.parametrize("workers", [0, -1, -64])
def test_workers_below_one_are_invalid(workers: int) -> None:
    with pytest.raises(ValidationError):
        ExecutorChoice(executor="ray", workers=workers)


def test_unknown_executor_and_extra_fields_are_invalid() -> None:
    with pytest.raises(ValidationError):
        ExecutorChoice(executor="dask")
    with pytest.raises(ValidationError):
        ExecutorChoice(executor="ray", nodes=2)  # type: ignore[call-arg]


def test_choice_is_frozen() -> None:
    choice = ExecutorChoice(executor="ray", workers=2)
    with pytest.raises(ValidationError):
        choice.workers = 3  # type: ignore[misc]
    assert choice.workers == 2


@given(st.sampled_from(["local", "ray"]), st.one_of(st.none(), st.integers(1, 64)),
       st.one_of(st.none(), st.sampled_from(["head:6379", "10.0.0.1:6379"])), st.integers(1, 16))
def test_problem_refuses_exactly_the_settings_that_do_not_go_together(executor: str, workers: int | None,
                                                                       address: str | None,
                                                                       concurrency: int) -> None:
    choice = ExecutorChoice(executor=executor, workers=workers, ray_address=address)
    problem = choice.problem(concurrency)
    # local: --workers and --ray-address are "With --executor ray";
    # ray: "--concurrency is the local executor's; with Ray, --workers sets the episodes in flight"
    fine = workers is None and address is None if executor == "local" else concurrency == 1
    assert (problem is None) == fine, (choice, concurrency, problem)
    if problem is not None:
        assert isinstance(problem, str) and problem


# ---------------------------------------------------------------------------------------------------------------
# The server's Execution / LaunchRun / LaunchExperiment models


@pytest.mark.parametrize("workers", [0, 65, -1])
def test_execution_workers_are_1_to_64(workers: int) -> None:
    with pytest.raises(ValidationError):
        Execution(executor="ray", workers=workers)
    assert Execution(executor="ray", workers=64).workers == 64
    assert Execution(executor="ray", workers=1).workers == 1


@pytest.mark.parametrize("model", [LaunchRun, LaunchExperiment, Execution])
def test_a_request_cannot_name_a_cluster(model: type[Any]) -> None:
    body: dict[str, Any] = {"executor": "ray", "ray_address": "evil:6379"}
    if model is LaunchRun:
        body |= {"run_id": "r1", "endpoint": "scripted:oracle"}
    if model is LaunchExperiment:
        body |= {"run_id": "r1", "lock": "l1"}
    with pytest.raises(ValidationError):
        model.model_validate(body)


def test_execution_choice_carries_the_servers_cluster(tmp_path: Path) -> None:
    settings = ServerSettings(runs=tmp_path, ray_address="head:6379")
    choice = Execution(executor="ray", workers=3).executor_choice(settings)
    assert choice == ExecutorChoice(executor="ray", workers=3, ray_address="head:6379")
    none = Execution(executor="ray").executor_choice(ServerSettings(runs=tmp_path))
    assert none == ExecutorChoice(executor="ray")


def test_execution_choice_local_never_carries_the_cluster(tmp_path: Path) -> None:
    settings = ServerSettings(runs=tmp_path, ray_address="head:6379")
    choice = Execution(concurrency=4).executor_choice(settings)
    assert choice.executor == "local"
    assert choice.ray_address is None
    assert choice.problem(4) is None


@pytest.mark.parametrize("body", [{"executor": "local", "workers": 2},
                                  {"executor": "ray", "concurrency": 2}])
def test_execution_choice_refuses_what_does_not_go_together(tmp_path: Path, body: dict[str, Any]) -> None:
    from computerops.service.errors import ServiceError

    with pytest.raises(ServiceError):
        Execution.model_validate(body).executor_choice(ServerSettings(runs=tmp_path))


# ---------------------------------------------------------------------------------------------------------------
# The server's API


class RecordingJobs:
    """Stands in for `Jobs`: records every spec it is asked to start, starts nothing."""

    def __init__(self) -> None:
        self.started: list[JobSpec] = []

    def start(self, spec: JobSpec) -> JobState:
        self.started.append(spec)
        return JobState(run_id=spec.run_id, kind=spec.kind, state="running", exit_code=None, started=time.time(),
                        log_tail=[])

    def state(self, run_id: str) -> JobState | None:
        return None

    def running(self, run_id: str) -> bool:
        return False

    def cancel(self, run_id: str, grace_s: float = 20.0) -> JobState:
        raise AssertionError("no cancel expected")

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, RecordingJobs, Path]]:
    runs = tmp_path_factory.mktemp("runs")
    settings = ServerSettings(runs=runs, ray_address="head.example:6379")
    state = ServerState.start(settings)
    jobs = RecordingJobs()
    state.jobs = jobs  # type: ignore[assignment]
    with TestClient(create_server_app(settings, state)) as client:
        yield client, jobs, runs
    state.close()


@pytest.fixture(scope="module")
def task_id(server: tuple[TestClient, RecordingJobs, Path]) -> str:
    client, _, _ = server
    response = client.get("/api/catalog")
    assert response.status_code == 200
    body = response.json()
    tasks = body["tasks"] if isinstance(body, dict) else body
    first = tasks[0]
    return str(first["id"] if "id" in first else first["task_id"])


def run_folders(runs: Path) -> set[str]:
    return {p.name for p in runs.iterdir() if not p.name.startswith(".")}


REFUSED_RUN_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("ray_address", {"executor": "ray", "ray_address": "evil.example:6379"}),
    ("ray_address_local", {"ray_address": "evil.example:6379"}),
    ("dask", {"executor": "dask"}),
    ("workers0", {"executor": "ray", "workers": 0}),
    ("workers65", {"executor": "ray", "workers": 65}),
    ("local_workers", {"executor": "local", "workers": 2}),
    ("default_local_workers", {"workers": 2}),
    ("ray_concurrency", {"executor": "ray", "concurrency": 2}),
    ("concurrency9", {"concurrency": 9}),
]


@pytest.mark.parametrize(("name", "extra"), REFUSED_RUN_BODIES, ids=[n for n, _ in REFUSED_RUN_BODIES])
def test_api_refuses_a_run_launch_and_starts_nothing(server: tuple[TestClient, RecordingJobs, Path], task_id: str,
                                                     name: str, extra: dict[str, Any]) -> None:
    client, jobs, runs = server
    before = (len(jobs.started), run_folders(runs))
    run_id = f"refused-{name.replace('_', '-')}"
    response = client.post("/api/runs", json={"run_id": run_id, "tasks": task_id, "endpoint": "scripted:oracle",
                                              **extra})
    assert response.status_code == 422, response.text
    assert "detail" in response.json()
    assert (len(jobs.started), run_folders(runs)) == before
    assert not (runs / run_id).exists()
    assert not (runs / ".server" / "jobs" / f"{run_id}.json").exists()


def test_api_launches_on_ray_with_the_servers_cluster(server: tuple[TestClient, RecordingJobs, Path],
                                                      task_id: str) -> None:
    client, jobs, _ = server
    before = len(jobs.started)
    response = client.post("/api/runs", json={"run_id": "ray-ok", "tasks": task_id, "endpoint": "scripted:oracle",
                                              "executor": "ray", "workers": 2})
    assert response.status_code == 202, response.text
    assert len(jobs.started) == before + 1
    spec = jobs.started[-1]
    assert spec.run_id == "ray-ok"
    assert spec.executor == ExecutorChoice(executor="ray", workers=2, ray_address="head.example:6379")


def test_api_launches_on_ray_with_default_workers(server: tuple[TestClient, RecordingJobs, Path],
                                                  task_id: str) -> None:
    client, jobs, _ = server
    response = client.post("/api/runs", json={"run_id": "ray-default", "tasks": task_id,
                                              "endpoint": "scripted:oracle", "executor": "ray"})
    assert response.status_code == 202, response.text
    spec = jobs.started[-1]
    assert spec.run_id == "ray-default"
    assert spec.executor == ExecutorChoice(executor="ray", ray_address="head.example:6379")


def test_api_local_launch_carries_no_cluster(server: tuple[TestClient, RecordingJobs, Path], task_id: str) -> None:
    client, jobs, _ = server
    response = client.post("/api/runs", json={"run_id": "local-ok", "tasks": task_id, "endpoint": "scripted:oracle",
                                              "concurrency": 3})
    assert response.status_code == 202, response.text
    spec = jobs.started[-1]
    assert spec.run_id == "local-ok"
    assert spec.executor == LOCAL
    assert spec.concurrency == 3


@pytest.mark.parametrize("extra", [{"executor": "ray", "ray_address": "evil.example:6379"},
                                   {"executor": "local", "workers": 2},
                                   {"executor": "ray", "workers": 0},
                                   {"executor": "ray", "concurrency": 2},
                                   {"executor": "spark"}])
def test_api_refuses_an_experiment_launch_and_starts_nothing(server: tuple[TestClient, RecordingJobs, Path],
                                                             extra: dict[str, Any]) -> None:
    client, jobs, runs = server
    before = (len(jobs.started), run_folders(runs))
    response = client.post("/api/experiments/runs", json={"run_id": "exp-refused", "lock": "nolock", **extra})
    assert 400 <= response.status_code < 500, response.text
    assert (len(jobs.started), run_folders(runs)) == before


@pytest.mark.parametrize("extra", [{"executor": "ray", "ray_address": "evil.example:6379"},
                                   {"executor": "ray", "workers": 65},
                                   {"executor": "local", "workers": 2}])
def test_api_refuses_a_resume_and_starts_nothing(server: tuple[TestClient, RecordingJobs, Path],
                                                 extra: dict[str, Any]) -> None:
    client, jobs, runs = server
    before = (len(jobs.started), run_folders(runs))
    response = client.post("/api/runs/local-ok/resume", json=extra)
    assert 400 <= response.status_code < 500, response.text
    assert (len(jobs.started), run_folders(runs)) == before


def test_openapi_names_executor_and_workers_but_no_cluster(server: tuple[TestClient, RecordingJobs, Path]) -> None:
    client, _, _ = server
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    launch = schemas["LaunchRun"]["properties"]
    assert "executor" in launch
    assert "workers" in launch
    assert "ray_address" not in launch
    assert set(launch["executor"].get("enum", [])) == {"local", "ray"} or "local" in str(launch["executor"])


# ---------------------------------------------------------------------------------------------------------------
# The CLI

runner = CliRunner(env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})


def flat(output: str) -> str:
    """The help's text without its box drawing and line wrapping."""
    return " ".join(output.replace("\u2502", " ").split())
RUN = ["run", "--tasks", "all", "--endpoint", "scripted:oracle"]


@pytest.mark.parametrize(("name", "options"), [
    ("workers-without-ray", ["--workers", "2"]),
    ("address-without-ray", ["--ray-address", "127.0.0.1:6379"]),
    ("ray-with-concurrency", ["--executor", "ray", "--concurrency", "2"]),
    ("workers-zero", ["--executor", "ray", "--workers", "0"]),
    ("unknown-executor", ["--executor", "dask"]),
])
def test_cli_run_refuses_before_writing_anything(tmp_path: Path, name: str, options: list[str]) -> None:
    out = tmp_path / name
    result = runner.invoke(cli_app, [*RUN, "--out", str(out), *options])
    assert result.exit_code == 2, result.output
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_cli_run_names_the_option_it_refuses(tmp_path: Path) -> None:
    result = runner.invoke(cli_app, [*RUN, "--out", str(tmp_path / "r"), "--workers", "2"])
    assert result.exit_code == 2
    text = (result.output + (str(result.exception) if result.exception else "")).lower()
    assert "workers" in text
    assert "ray" in text


def test_cli_run_refuses_an_unreachable_cluster_without_starting_ray(tmp_path: Path) -> None:
    # "A --ray-address HOST:PORT where nothing answers within 5 s is refused (no Ray cluster answers at ...)"
    address = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    result = runner.invoke(cli_app, [*RUN, "--out", str(tmp_path / "r"), "--executor", "ray",
                                     "--ray-address", address])
    assert time.monotonic() - started < 20
    assert result.exit_code != 0
    assert "no Ray cluster answers at" in result.output
    assert not (tmp_path / "r" / "episodes.jsonl").exists()


@pytest.mark.parametrize(("name", "options"), [
    ("workers-without-ray", ["--workers", "2"]),
    ("ray-with-concurrency", ["--executor", "ray", "--concurrency", "2"]),
    ("workers-zero", ["--executor", "ray", "--workers", "0"]),
])
def test_cli_experiment_run_refuses(tmp_path: Path, name: str, options: list[str]) -> None:
    lock = tmp_path / "x.lock.json"
    lock.write_text("{}")
    out = tmp_path / name
    result = runner.invoke(cli_app, ["experiment", "run", str(lock), "--out", str(out), *options])
    assert result.exit_code == 2, result.output
    assert not out.exists()
    assert "workers" in result.output.lower() or "concurrency" in result.output.lower()


# A finding of the blind review (Rich markup ate `[ray]`), fixed: computerops/cli/options.py escapes it.
@pytest.mark.parametrize("command", [["run"], ["experiment", "run"]])
def test_cli_help_keeps_the_install_hint(command: list[str]) -> None:
    # The help's `--executor` text gives the install command: docs name it `pip install -e '.[ray]'`.
    result = runner.invoke(cli_app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "pip install -e '.[ray]'" in flat(result.output)


# A finding of the blind review (Rich markup ate the bracketed default), fixed.
def test_cli_help_says_what_workers_default_to() -> None:
    result = runner.invoke(cli_app, ["run", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "one per CPU" in flat(result.output)


@pytest.mark.browser
def test_more_workers_than_cpus_are_refused_before_any_episode(tmp_path: Path) -> None:
    # scale.md: "More workers than the cluster has CPUs are refused before anything runs (`--workers 8 needs 8 CPUs
    # (one per worker); the Ray cluster has 2`)". A local Ray starts (a few seconds); no Chromium should.
    pytest.importorskip("ray")
    out = tmp_path / "r"
    result = runner.invoke(cli_app, [*RUN, "--out", str(out), "--executor", "ray", "--workers", "512"])
    assert result.exit_code != 0, result.output
    text = flat(result.output)
    assert "--workers 512 needs 512 CPUs (one per worker); the Ray cluster has" in text
    episodes = out / "episodes.jsonl"
    assert not episodes.exists() or episodes.read_text() == ""
