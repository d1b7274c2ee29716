"""Concurrent runs: several episodes at once over one browser give exactly the evidence of a serial run."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import PlannedEpisode, RunConfig, parse_endpoint, plan_episodes
from computerops.runs.episode import EpisodeContext, run_episode
from computerops.runs.records import EpisodeRecord
from computerops.runs.replaying import replay_run
from computerops.runs.runner import RunAborted, execute_run
from replays import Receipt
from tasks import LoadedTask, load_catalog

TASK_IDS = ("helpdesk.answer-latest-order@1", "helpdesk.refund-with-approval@1", "helpdesk.solve-ticket@1")
TASKS = [load_catalog()[task_id] for task_id in TASK_IDS]
COMPARED = TASKS[:2]
"""A read and a write: enough to compare serial and concurrent runs (8 episodes at concurrency 4); the whole catalog
is proven by tests/test_catalog_check.py."""
POLICIES = "oracle,false-finish,give-up,loop"
CONCURRENCY = 4
# Evidence that must be byte-identical whatever the concurrency. The transcript also holds measured
# durations (each model call's latency, each step's timings), so it is compared with those taken out.
IDENTICAL = ("operations.json", "journal.json", "final_state.json", "verdict.json", "receipt.json")


def config_for(policies: str, run_id: str = "same-plan", tasks: list[LoadedTask] = TASKS) -> RunConfig:
    endpoint = parse_endpoint(f"scripted:{policies}", base_url=None, model=None, api_key_env=None)
    ids = [t.id for t in tasks]
    return RunConfig(run_id=run_id, tasks=ids, endpoint=endpoint, episodes=plan_episodes(ids, endpoint))


@dataclass(frozen=True)
class Runs:
    config: RunConfig
    serial: RunDirectory
    concurrent: RunDirectory
    returned: list[EpisodeRecord]
    """What execute_run returned for the concurrent run."""


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("concurrency")
    config = config_for(POLICIES, tasks=COMPARED)
    await execute_run(config, COMPARED, root / "serial")
    returned = await execute_run(config, COMPARED, root / "concurrent", concurrency=CONCURRENCY)
    return Runs(config, RunDirectory.open(root / "serial"), RunDirectory.open(root / "concurrent"), returned)


def by_id(bundle: RunDirectory) -> dict[str, EpisodeRecord]:
    return {r.episode_id: r for r in bundle.records()}


def without_timings(value: Any) -> Any:
    """The transcript without its measured durations (keys ending in `_s`: seconds of wall time)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def most_in_flight(records: list[EpisodeRecord]) -> int:
    """The largest number of episodes whose browser sessions were open at the same moment."""
    events: list[tuple[float, int]] = []
    for record in records:
        assert record.started_s is not None
        events += [(record.started_s, 1), (record.started_s + record.wall_s, -1)]
    in_flight = peak = 0
    for _, change in sorted(events):  # at a tie an end (-1) sorts before a start (+1)
        in_flight += change
        peak = max(peak, in_flight)
    return peak


@pytest.mark.browser
def test_the_manifest_records_how_each_run_was_executed_under_the_same_config(runs: Runs) -> None:
    serial, concurrent = runs.serial.manifest(), runs.concurrent.manifest()
    assert serial.config == concurrent.config == runs.config
    assert (serial.execution.concurrency, serial.execution.trace) == (1, False)
    assert (concurrent.execution.concurrency, concurrent.execution.trace) == (CONCURRENCY, False)


@pytest.mark.browser
def test_every_episode_has_the_same_outcome_and_byte_identical_evidence(runs: Runs) -> None:
    serial, concurrent = by_id(runs.serial), by_id(runs.concurrent)
    planned = [p.episode_id for p in runs.config.episodes]
    assert len(planned) == len(COMPARED) * len(POLICIES.split(","))
    assert list(serial) == list(concurrent) == planned  # records() reads back in plan order
    assert [r.episode_id for r in runs.returned] == planned
    outcomes = set()
    for episode_id in planned:
        a, b = serial[episode_id], concurrent[episode_id]
        same = ("outcome", "false_completion_kind", "claim", "stop_reason", "steps", "rejected_actions",
                "rejections_by_cause", "prompt_tokens", "completion_tokens", "operations", "journal_entries",
                "replay", "models_seen")
        assert {f: getattr(a, f) for f in same} == {f: getattr(b, f) for f in same}, episode_id
        assert a.replay == b.replay == "PASS"
        for name in IDENTICAL:
            left = (runs.serial.episode_dir(episode_id) / name).read_bytes()
            right = (runs.concurrent.episode_dir(episode_id) / name).read_bytes()
            assert left == right, f"{episode_id}/{name} differs between the serial and the concurrent run"
            if name != "receipt.json":
                assert a.evidence_sha256[name] == b.evidence_sha256[name]
        transcripts = [json.loads((bundle.episode_dir(episode_id) / "transcript.json").read_text())
                       for bundle in (runs.serial, runs.concurrent)]
        assert "latency_s" in transcripts[0]["steps"][0]["call"]  # what is left out is really there
        assert without_timings(transcripts[0]) == without_timings(transcripts[1]), episode_id
        assert runs.concurrent.integrity_problems(b) == []
        outcomes.add(b.outcome)
    assert outcomes == {"verified_success", "false_completion", "honest_failure"}  # the plan is not trivial


@pytest.mark.browser
def test_the_episodes_really_ran_at_once_and_never_more_than_asked(runs: Runs) -> None:
    # Workers start their first episodes before any browser session can end (each awaits the
    # browser first), so the peak is exact, not a matter of timing.
    assert most_in_flight(runs.serial.records()) == 1
    assert most_in_flight(runs.concurrent.records()) == CONCURRENCY


@pytest.mark.browser
async def test_the_concurrent_run_reports_and_replays_like_the_serial_one(runs: Runs) -> None:
    reports = [CliRunner().invoke(app, ["report", str(bundle.root), "--json"])
               for bundle in (runs.serial, runs.concurrent)]
    assert all(r.exit_code == 0 for r in reports), [r.output for r in reports]
    # The same report but for the measured latency (`mean_s`, `median_s`, `max_s` of wall_s).
    assert without_timings(json.loads(reports[0].stdout)) == without_timings(json.loads(reports[1].stdout))
    receipts = await replay_run(runs.concurrent)
    assert [r.episode_id for r in receipts] == [p.episode_id for p in runs.config.episodes]
    assert {r.result for r in receipts} == {"PASS"}
    assert receipts == await replay_run(runs.serial)


@pytest.mark.browser
async def test_an_episode_that_raises_stops_the_run_without_losing_the_admitted_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = config_for("give-up", run_id="aborted")
    doomed = config.episodes[1].episode_id
    real = run_episode

    async def faulty(ctx: EpisodeContext, task: LoadedTask, planned: PlannedEpisode) -> tuple[EpisodeRecord, Receipt]:
        if planned.episode_id == doomed:
            await asyncio.sleep(0)  # the first episode is in flight by now
            raise RuntimeError("simulated harness fault")
        return await real(ctx, task, planned)

    monkeypatch.setattr("computerops.runs.runner.run_episode", faulty)
    lines: list[str] = []
    with pytest.raises(RunAborted) as caught:
        await execute_run(config, TASKS, tmp_path / "run", lines.append, concurrency=2)
    first, _, third = (p.episode_id for p in config.episodes)
    message = str(caught.value)
    assert f"episode {doomed} failed: RuntimeError: simulated harness fault" in message
    assert "1 of 3 episodes admitted" in message and "1 not started" in message
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert [r.episode_id for r in caught.value.admitted] == [first]
    bundle = RunDirectory.open(tmp_path / "run")
    [record] = bundle.records()
    assert record.episode_id == first and record.replay == "PASS" and bundle.integrity_problems(record) == []
    assert not bundle.episode_dir(third).exists()
    assert any(line.startswith(f"[error] {doomed}: RuntimeError") for line in lines)
    assert any(line.startswith(f"[1/3] {first} ") for line in lines)


async def test_execute_run_refuses_a_concurrency_below_one_before_writing_anything(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1, got 0"):
        await execute_run(config_for("oracle"), TASKS, tmp_path / "run", concurrency=0)
    assert not (tmp_path / "run").exists()


def test_the_cli_refuses_a_concurrency_below_one_with_a_clear_message(tmp_path: Path) -> None:
    out = tmp_path / "run"
    for value in ("0", "-3"):
        result = CliRunner().invoke(app, ["run", "--endpoint", "scripted:oracle", "--concurrency", value,
                                          "--out", str(out)])
        assert result.exit_code == 2
        said = " ".join(result.output.replace("│", " ").split())  # typer boxes its error message
        assert "Invalid value for '--concurrency'" in said and "greater than or equal to 1" in said
        assert not out.exists()


def test_a_plan_with_a_repeated_episode_id_is_refused() -> None:
    config = config_for("oracle")
    with pytest.raises(ValueError, match="episode ids must be distinct; repeated: 001-"):
        RunConfig(run_id="x", tasks=config.tasks, endpoint=config.endpoint,
                  episodes=[*config.episodes, config.episodes[0]])
