"""The Ray executor (computerops/runs/ray_executor.py): the same plan run by `run --executor ray --workers 2` on a local
Ray instance started in-process and by the local executor leaves the same evidence, byte for byte, and the same
records but for what is measured; a worker whose code differs from the driver's is refused by name."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory
from computerops.runs.provenance import code_hashes
from computerops.runs.ray_executor import RayExecutor, WorkerHello, WorkerRefused, WorkerSetup, worker_refusal
from computerops.runs.records import EpisodeRecord
from computerops.service.launch import RunRequest, launch, plan_run

RUN = "same-plan"
"""Both runs have this name (in two folders): the run's name is part of its config."""
TASKS = "helpdesk.solve-ticket,helpdesk.answer-escalation-queue"
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


def test_a_worker_whose_code_differs_is_refused_by_name() -> None:
    driver = code_hashes()
    same = WorkerHello(index=0, host="node-a", node="f" * 40, pid=4242, code_sha256=dict(driver))
    assert worker_refusal(same, driver) is None
    changed = WorkerHello(index=1, host="node-b", node="e" * 40, pid=4343,
                          code_sha256={**driver, "verifier": "0" * 64})
    refusal = worker_refusal(changed, driver)
    assert refusal is not None
    assert "worker 1 (node-b" in refusal and "pid 4343" in refusal and "verifier" in refusal
    assert "adapter" not in refusal  # only what differs is named
    missing = WorkerHello(index=2, host="node-c", node="d" * 40, pid=1, code_sha256={})
    assert all(package in (worker_refusal(missing, driver) or "") for package in driver)


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
