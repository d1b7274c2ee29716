"""`computerops bench`'s executor part (computerops/bench/scaling.py): the local executor against Ray at W workers on
the same plan, and the N-node scaling model computed from the run's own costs.

The model is checked as a formula (monotone in N, capped by the driver, the minimum of its two terms); the figures
of a tiny real run (4 episodes, W = 2) are checked for structure and consistency, never against time limits (the
machine is shared and noisy).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from typer.testing import CliRunner

from computerops.bench.measure import (
    BenchReport,
    ExecutorsReport,
    bench_markdown,
    executor_check,
    executors_markdown,
    target_checks,
)
from computerops.bench.scaling import (
    ADMIT_PASSES,
    FORMULA,
    RAY_TARGET_RATIO,
    SCALING_NODES,
    per_second,
    scaling_model,
)
from computerops.cli.main import app

ROOT = Path(__file__).parent.parent
LATEST = ROOT / "docs" / "bench" / "latest.json"
EXECUTORS = ROOT / "docs" / "bench" / "executors.json"
TASKS = "helpdesk.answer-latest-order@1,helpdesk.solve-ticket@1"
EPISODES = 4
WORKERS = 2
runner = CliRunner()

seconds = st.floats(min_value=1e-4, max_value=100.0, allow_nan=False, allow_infinity=False)
dispatch = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)
admit = st.floats(min_value=1e-5, max_value=1.0, allow_nan=False, allow_infinity=False)
workers = st.integers(min_value=1, max_value=64)


@settings(max_examples=examples(2000), deadline=None)
@given(workers, seconds, dispatch, admit, st.integers(min_value=1, max_value=1000))
def test_the_model_is_monotone_in_nodes_and_capped_by_the_driver(
    w: int, episode_s: float, dispatch_s: float, admit_s: float, nodes: int,
) -> None:
    here, more = per_second(nodes, w, episode_s, dispatch_s, admit_s), per_second(nodes + 1, w, episode_s,
                                                                                   dispatch_s, admit_s)
    assert 0 < here <= more <= 1 / admit_s
    assert here == min(nodes * w / (episode_s + dispatch_s), 1 / admit_s)
    # Below the driver's cap a node more adds exactly W workers' worth; at the cap nothing more is gained.
    if more < 1 / admit_s:
        assert more - here == pytest.approx(w / (episode_s + dispatch_s), rel=1e-9)
    if here == 1 / admit_s:
        assert per_second(nodes * 64, w, episode_s, dispatch_s, admit_s) == here


@settings(max_examples=examples(1000), deadline=None)
@given(workers, seconds, dispatch, st.lists(admit, min_size=1, max_size=30))
def test_the_model_figures_name_their_bound_and_where_the_driver_takes_over(
    w: int, episode_s: float, dispatch_s: float, admits: list[float],
) -> None:
    model = scaling_model(w, episode_s, dispatch_s, admits)
    mean = statistics.fmean(admits)  # as the model takes it
    assert model.formula == FORMULA and [p.nodes for p in model.points] == list(SCALING_NODES)
    assert model.admit_samples == len(admits) and model.admit_s == round(mean, 6)
    crossover = (episode_s + dispatch_s) / (w * mean)
    assert model.driver_bound_from == max(1, math.ceil(crossover))
    for point in model.points:
        assert point.workers == point.nodes * w
        assert point.episodes_per_minute == round(per_second(point.nodes, w, episode_s, dispatch_s, mean) * 60, 1)
        if not math.isclose(point.nodes, crossover, rel_tol=1e-9):  # at the crossover both terms are equal
            assert (point.bound == "driver") == (point.nodes > crossover)
    per_minute = [p.episodes_per_minute for p in model.points]
    assert per_minute == sorted(per_minute) and per_minute[-1] <= round(60 / mean, 1)


def test_the_model_at_one_node_gives_back_the_measured_steady_throughput() -> None:
    # 16 episodes on 2 workers in a 40 s steady state, 60 s of episode wall time between them: t_episode 3.75 s,
    # t_dispatch (2 * 40 - 60) / 16 = 1.25 s; the model at one node is 2 / 5 s = 24 episodes/min = 16 / 40 s.
    model = scaling_model(2, 60 / 16, (2 * 40 - 60) / 16, [0.005] * 10)
    assert model.points[0].episodes_per_minute == 24.0 == round(16 / 40 * 60, 1)
    assert model.driver_cap_per_minute == 12000.0 and model.driver_bound_from == 500  # 5 s / (2 * 5 ms)
    assert [p.bound for p in model.points] == ["workers"] * len(SCALING_NODES)
    capped = scaling_model(4, 0.5, 0.0, [0.01])  # 8 episodes/s per node against 100/s: the driver from 13 nodes
    assert capped.driver_bound_from == 13
    assert [p.bound for p in capped.points] == ["workers"] * 4 + ["driver"] * 3
    assert capped.points[-1].episodes_per_minute == 6000.0


@pytest.mark.parametrize("bad", [(0, 1, 1.0, 0.0, 0.01), (1, 0, 1.0, 0.0, 0.01), (1, 1, 0.0, 0.0, 0.01),
                                 (1, 1, 1.0, 0.0, 0.0)])
def test_the_model_refuses_impossible_costs(bad: tuple[int, int, float, float, float]) -> None:
    with pytest.raises(ValueError):
        per_second(*bad)
    with pytest.raises(ValueError, match="no admission samples"):
        scaling_model(2, 1.0, 0.0, [])


@pytest.mark.parametrize(("arguments", "message"), [
    (["--only", "pages"], "--only takes `executors`"),
    (["--only", "executors", "--no-ray"], "--only executors needs Ray"),
])
def test_bench_refuses_an_unknown_part_and_the_executor_part_without_ray(arguments: list[str], message: str) -> None:
    result = runner.invoke(app, ["bench", *arguments])
    assert result.exit_code == 2
    assert message in " ".join(result.output.replace("│", " ").split())


@pytest.fixture(scope="module")
def executors_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExecutorsReport, str]:
    pytest.importorskip("ray")
    out = tmp_path_factory.mktemp("bench-executors") / "executors.json"
    result = runner.invoke(app, ["bench", "--only", "executors", "--tasks", TASKS, "--episodes", str(EPISODES),
                                 "--ray-workers", str(WORKERS), "--out", str(out), "--markdown"])
    assert result.exit_code == 0, result.output
    return ExecutorsReport.model_validate_json(out.read_text(encoding="utf-8")), result.output


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_local_and_ray_run_the_same_plan_with_identical_evidence(
    executors_run: tuple[ExecutorsReport, str],
) -> None:
    report, output = executors_run
    figures = report.executors
    assert report.format == "computerops.bench_executors/1" and report.options.ray_workers == WORKERS
    assert figures.workers == WORKERS
    assert figures.identical_evidence and figures.differing == []
    for run, executor in ((figures.local, "local"), (figures.ray, "ray")):
        assert run.executor == executor and run.workers == WORKERS
        assert run.episodes == run.verified_success == EPISODES  # the oracle solves every task
        assert run.startup_s > 0 and run.steady_s > 0 and run.episode_busy_s > 0 and run.peak_rss_mib > 0
        # Start-up, then the episodes from the first start to the last admission, all within the call.
        assert run.startup_s + run.steady_s <= run.wall_s + 0.002
        assert run.episodes_per_minute == pytest.approx(run.episodes / run.wall_s * 60, abs=0.1)
        assert run.steady_episodes_per_minute == pytest.approx(run.episodes / run.steady_s * 60, abs=0.1)
        assert run.steady_episodes_per_minute >= run.episodes_per_minute
    assert figures.ratio == round(figures.ray.steady_episodes_per_minute / figures.local.steady_episodes_per_minute, 3)
    assert figures.ratio_including_startup == round(figures.ray.episodes_per_minute
                                                    / figures.local.episodes_per_minute, 3)
    assert report.targets == [executor_check(figures)]
    assert report.targets[0].met == (figures.ratio >= RAY_TARGET_RATIO)
    assert "ray: worker 0" in output and "ray: worker 1" in output  # progress during the Ray part
    assert "executors: Ray / local steady state" in output


@pytest.mark.browser
def test_the_scaling_model_comes_from_the_ray_run_s_own_costs(executors_run: tuple[ExecutorsReport, str]) -> None:
    report, output = executors_run
    ray, model = report.executors.ray, report.executors.scaling
    assert model.workers_per_node == WORKERS
    assert model.episode_s == round(ray.episode_busy_s / ray.episodes, 4)
    assert model.dispatch_s == round(max(0.0, (WORKERS * ray.steady_s - ray.episode_busy_s) / ray.episodes), 4)
    assert model.admit_samples == ADMIT_PASSES * EPISODES and model.admit_s > 0
    assert 0 < model.admit_median_ms <= model.admit_p95_ms
    assert [p.nodes for p in model.points] == list(SCALING_NODES)
    first = model.points[0]
    if first.bound == "workers" and model.dispatch_s > 0:  # the model at one node is the measured steady state
        assert first.episodes_per_minute == pytest.approx(ray.steady_episodes_per_minute, rel=0.01, abs=0.2)
    assert "MODEL, not a measurement" in output
    assert executors_markdown(report) in output


@pytest.mark.browser
def test_a_version_4_report_carries_the_executor_part_and_its_target(
    executors_run: tuple[ExecutorsReport, str],
) -> None:
    figures = executors_run[0].executors
    committed = BenchReport.model_validate_json(LATEST.read_text(encoding="utf-8"))
    committed = committed.model_copy(update={"executors": None})  # the committed run's own Ray part set aside
    report = BenchReport.model_validate_json(committed.model_copy(update={
        "format": "computerops.bench/4", "executors": figures}).model_dump_json())
    assert report.executors == figures
    checks = target_checks(report)
    assert checks[-1] == executor_check(figures) and len(checks) == len(target_checks(committed)) + 1
    table = bench_markdown(report)
    assert bench_markdown(committed) in table and "MODEL, not measured" in table


def test_a_version_3_report_is_still_read_without_the_executor_part() -> None:
    data = json.loads(LATEST.read_text(encoding="utf-8"))
    data["format"] = "computerops.bench/3"
    data.pop("executors", None)
    data["options"].pop("ray_workers", None)  # a version 3 report has neither
    report = BenchReport.model_validate(data)
    assert report.executors is None and report.options.ray_workers is None
    assert not any(t.figure.startswith("Ray against local") for t in target_checks(report))
    assert "MODEL" not in bench_markdown(report)


def test_the_scale_doc_figures_are_the_committed_executor_bench_output() -> None:
    report = ExecutorsReport.model_validate_json(EXECUTORS.read_text(encoding="utf-8"))
    assert executors_markdown(report) in (ROOT / "docs" / "scale.md").read_text(encoding="utf-8"), (
        "regenerate: computerops bench --only executors --out docs/bench/executors.json --markdown")
    figures = report.executors
    assert figures.identical_evidence and report.targets == [executor_check(figures)]
    assert figures.scaling.points[0].episodes_per_minute == pytest.approx(figures.ray.steady_episodes_per_minute,
                                                                          abs=0.2)
