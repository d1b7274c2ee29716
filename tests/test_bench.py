"""`computerops bench`: every figure is measured in the run, consistent with the evidence it came from.

Timings are never asserted against limits here (the machine is shared and noisy); what is checked
is that each figure exists, is computed from its samples, and agrees with the run it measured.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from playwright.async_api import Browser
from typer.testing import CliRunner

from computerops.bench.floor import AI_SNAPSHOT_TARGET, CASES, FLOOR_TARGET, paired_figures, timed_in_turn
from computerops.bench.measure import (
    FIXTURE_ACTIONS,
    FIXTURE_PAGES,
    BenchOptions,
    BenchReport,
    Distribution,
    bench_fixture_pages,
    bench_markdown,
    bench_plan,
    distribution,
    target_checks,
)
from computerops.cli.main import app
from tasks import LoadedTask, load_catalog

ROOT = Path(__file__).parent.parent
LATEST = ROOT / "docs" / "bench" / "latest.json"
runner = CliRunner()
STEP_KINDS = [case.kind for case in CASES]
BENCH_TASKS = ("helpdesk.answer-latest-order@1", "helpdesk.refund-with-approval@1", "helpdesk.solve-ticket@1")


def test_distribution_is_the_median_and_nearest_rank_p95() -> None:
    values = [float(n) for n in range(1, 101)]
    assert distribution(values, "ms") == Distribution(n=100, median=50.5, p95=95.0, unit="ms")
    assert distribution([3.0], "ms") == Distribution(n=1, median=3.0, p95=3.0, unit="ms")
    assert distribution([1.0, 2.0, 3.0, 100.0], "ms").p95 == 100.0
    with pytest.raises(ValueError, match="no samples"):
        distribution([], "ms")


def test_the_page_crawl_takes_each_templates_lowest_seed_in_the_tasks_order() -> None:
    from computerops.bench.measure import lowest_seed_per_template

    catalog = load_catalog()
    template = next(t for t in catalog.templates.values() if len(t.seeds) >= 3)
    tasks = [catalog[f"{template.id}@{seed}"] for seed in (3, 1, 2)] + [catalog["helpdesk.solve-ticket@1"]]
    assert [t.id for t in lowest_seed_per_template(tasks)] == [f"{template.id}@1", "helpdesk.solve-ticket@1"]
    fresh = template.instance(10**9 + 7)
    assert lowest_seed_per_template([fresh, tasks[0]]) == [tasks[0]]


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchReport, str]:
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    result = runner.invoke(app, ["bench", "--out", str(out), "--tasks", ",".join(BENCH_TASKS), "--episodes", "3",
                                 "--levels", "1,2",
                                 "--reset-samples", "5", "--page-repeats", "1", "--page-limit", "6",
                                 "--floor-repeats", "2", "--markdown", "--no-ray"])  # Ray: test_bench_scaling.py
    assert result.exit_code == 0, result.output
    return BenchReport.model_validate_json(out.read_text(encoding="utf-8")), result.output


@pytest.mark.browser
def test_bench_measures_pages_against_the_ai_snapshot_and_the_accessibility_tree(
    bench_run: tuple[BenchReport, str],
) -> None:
    report, _ = bench_run
    assert report.scripted and report.tasks == sorted(BENCH_TASKS)
    assert 1 <= len(report.pages) <= 6  # one site (helpdesk), at most --page-limit pages
    for page in report.pages:
        assert page.chars > 0 and page.ai_snapshot_chars > 0
        assert page.chars_ratio == round(page.chars / page.ai_snapshot_chars, 3)
        assert page.estimated_tokens == (page.chars + 3) // 4
        assert page.recall == 1.0 and page.offered_not_in_tree == 0 and page.control_problems == []
        assert page.observe_ms.n == 1
    assert report.recall == 1.0
    assert report.observation_chars_ratio.n == len(report.pages)
    catalog = load_catalog()
    assert report.reset_ms.n == 5 * len({(catalog[t].spec.site, catalog[t].spec.seed) for t in BENCH_TASKS})


@pytest.mark.browser
def test_bench_runs_the_same_episodes_at_each_level_with_identical_results(bench_run: tuple[BenchReport, str]) -> None:
    report, _ = bench_run
    assert [level.concurrency for level in report.levels] == [1, 2]
    for level in report.levels:
        assert level.episodes == 3 and level.identical_to_first_level
        assert level.verified_success == 3  # the oracle policy solves every task
        assert level.peak_rss_mib > 0
        assert level.episodes_per_minute == pytest.approx(level.episodes / level.wall_s * 60, abs=0.2)
    assert len(report.replays) == 3 and all(r.result == "PASS" for r in report.replays)
    for replay in report.replays:
        assert replay.speedup == pytest.approx(replay.episode_wall_s / replay.replay_s, rel=0.01, abs=0.1)
    # One site here, to keep the crawl cheap (test_the_episodes_go_over_every_site_in_turn: every site's turn).
    assert [r.site for r in report.replays] == ["helpdesk"] * 3
    assert report.replay_ratio is not None and report.replay_setup_s is not None and report.replay_setup_s > 0
    walls, replays = sorted(r.episode_wall_s for r in report.replays), sorted(r.replay_s for r in report.replays)
    assert report.replay_ratio.ratio == pytest.approx(walls[1] / replays[1], abs=0.01)  # the medians' ratio
    assert report.replay_ratio.low <= report.replay_ratio.ratio <= report.replay_ratio.high
    assert report.step_overhead_ms.n == report.act_ms.n == report.observe_ms.n > 0
    # The oracle loads pages (links, form submissions) and fills fields: both kinds of step are measured.
    assert report.page_load_step_ms is not None and report.in_page_step_ms is not None
    assert report.page_load_step_ms.n + report.in_page_step_ms.n == report.step_overhead_ms.n


@pytest.mark.browser
def test_targets_are_judged_from_the_figures_and_printed(bench_run: tuple[BenchReport, str]) -> None:
    report, output = bench_run
    assert report.targets == target_checks(report)
    assert [t.figure for t in report.targets] == ["observation size", "step overhead", "reset", "replay",
                                                  "steps against the floor", "observation against the ai snapshot",
                                                  "fidelity fixture pages"]
    assert report.targets[1].met == (report.step_overhead_ms.median < 50)
    assert "Figures against targets" in output and "SCRIPTED episodes by concurrency" in output
    assert bench_markdown(report) in output


@pytest.mark.browser
def test_bench_measures_every_fidelity_fixture_page_and_the_visual_settle_wait(
    bench_run: tuple[BenchReport, str],
) -> None:
    report, output = bench_run
    assert report.format == "computerops.bench/5" and report.executors is None  # --no-ray
    assert [f.page for f in report.fixture_pages] == sorted(p.name for p in FIXTURE_PAGES.glob("fidelity-*.html"))
    assert {"fidelity-scroll-box.html", "fidelity-dates.html", "fidelity-animation.html"} <= {
        f.page for f in report.fixture_pages}
    for fixture in report.fixture_pages:
        assert fixture.ok, fixture  # every class of page at full recall, nothing extra, every control working
        assert fixture.accessibility_expected > 0 and fixture.open_ms > 0
        # hover, drag, click at a point, a wrapped link and a key on a slider: each timed on its page, carried out
        assert len(fixture.action_ms) == len(FIXTURE_ACTIONS.get(fixture.page, [])), fixture
        assert all(ms > 0 for ms in fixture.action_ms.values())
    fidelity = report.targets[-1]
    assert fidelity.met and fidelity.measured == f"{len(report.fixture_pages)} of {len(report.fixture_pages)} pages"
    # The wait for animations is measured on every catalog page, each page as often as it is observed.
    assert report.visual_settle_ms.n == sum(p.visual_settle_ms.n for p in report.pages) == len(report.pages)
    assert "Fidelity fixture pages" in output


@pytest.mark.browser
async def test_bench_without_fixture_pages_says_so_and_misses_the_fidelity_target(
    browser: Browser, tmp_path: Path,
) -> None:
    said: list[str] = []
    assert await bench_fixture_pages(browser, BenchOptions(), said.append, directory=tmp_path) == []
    assert said == [f"fixture pages: none at {tmp_path}"]
    committed = BenchReport.model_validate_json(LATEST.read_text(encoding="utf-8"))
    fidelity = next(t for t in target_checks(committed.model_copy(update={"fixture_pages": []}))
                    if t.figure == "fidelity fixture pages")
    assert not fidelity.met


@pytest.mark.browser
def test_every_step_kind_is_measured_against_bare_playwright_in_pairs(bench_run: tuple[BenchReport, str]) -> None:
    report, output = bench_run
    assert [f.kind for f in report.floor] == [*STEP_KINDS, "observation", "first observation", "catalog observation"]
    fixtures = len(list(FIXTURE_PAGES.glob("fidelity-*.html")))
    observations = ("observation", "catalog observation")
    for figure in report.floor:
        assert figure.n == {"observation": 2 * fixtures, "first observation": fixtures,
                            "catalog observation": len(report.pages)}.get(figure.kind, 2)
        assert figure.adapter_ms > 0 and figure.floor_ms > 0 and figure.ratio > 0
        # the ratio of the two medians the table prints, inside its bootstrap interval
        assert figure.ratio == pytest.approx(figure.adapter_ms / figure.floor_ms, abs=0.01)
        assert figure.ratio_low is not None and figure.ratio_high is not None
        assert figure.ratio_low <= figure.ratio <= figure.ratio_high
        # observations against the ai snapshot; a page's first observation against Playwright's first look at a new
        # page, a warm ai snapshot beside it
        assert (figure.ai_snapshot_ratio is not None) == (figure.kind in (*observations, "first observation"))
        row = f"| floor: {figure.kind} (n={figure.n}) | {figure.ratio:.2f}{figure.interval} x bare Playwright"
        assert row in output
    first = next(f for f in report.floor if f.kind == "first observation")
    assert first.adapter_first == (fixtures + 1) // 2  # in turn, from the adapter's
    steps_floor = [f for f in report.floor if f.kind not in (*observations, "first observation")]
    assert all(f.adapter_first == 1 for f in steps_floor)  # of two counted pairs, the second has the adapter first
    for figure in steps_floor:  # each acted on a real control of its page, shown as the model sees it
        assert figure.control.startswith("[") or figure.kind == "navigate"
    steps, observation = [*steps_floor, first], report.floor[-3]
    floor_target, snapshot_target = report.targets[4], report.targets[5]
    assert floor_target.met == all(f.ratio <= FLOOR_TARGET for f in steps)
    assert max(steps, key=lambda f: f.ratio).kind in floor_target.measured
    assert snapshot_target.met == all(f.ai_snapshot_ratio is not None and f.ai_snapshot_ratio <= AI_SNAPSHOT_TARGET
                                      for f in (observation, report.floor[-1]))


def test_every_step_kind_s_round_trips_are_counted_against_bare_playwright_s(
        bench_run: tuple[BenchReport, str]) -> None:
    report, _ = bench_run
    assert [f.kind for f in report.round_trips] == [*STEP_KINDS, "observation"]
    for figure in report.round_trips:  # each a count of calls, the adapter making at least bare Playwright's
        assert figure.adapter == sum(figure.calls.values()) >= figure.floor >= 1


def test_a_paired_figure_is_the_ratio_of_the_medians_it_prints_with_an_interval() -> None:
    figure = paired_figures("fill", "forms.html", "[1] textbox", [10.0, 30.0, 100.0], [10.0, 10.0, 200.0])
    # the median of the pairs' ratios would be 1.0 (pairs: 1, 3, 0.5): the table's 30 ms against 10 ms is 3.0
    assert (figure.adapter_ms, figure.floor_ms, figure.ratio) == (30.0, 10.0, 3.0)
    assert figure.ratio_low is not None and figure.ratio_high is not None
    assert figure.ratio_low <= 3.0 <= figure.ratio_high and figure.ratio_low < figure.ratio_high
    assert figure.interval == f" [{figure.ratio_low:.2f}, {figure.ratio_high:.2f}]"


async def test_the_halves_of_a_pair_take_turns_going_first() -> None:
    ran: list[str] = []

    def half(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            ran.append(name)
        return run

    for turn in range(4):
        times = await timed_in_turn((half("adapter"), half("floor")), turn)
        assert len(times) == 2 and all(t >= 0 for t in times)
    assert ran == ["adapter", "floor", "floor", "adapter", "adapter", "floor", "floor", "adapter"]
    ran.clear()
    for turn in range(3):
        await timed_in_turn((half("observe"), half("content"), half("snapshot")), turn)
    assert [ran[i] for i in (0, 3, 6)] == ["observe", "content", "snapshot"]  # each goes first once in three


def test_the_episodes_go_over_every_site_in_turn() -> None:
    # The catalog's order: a site's tasks together (stand-ins with what the plan reads, the whole catalog takes long).
    named = [("helpdesk", "a"), ("helpdesk", "b"), ("helpdesk", "c"), ("invoices", "a"), ("webmail", "a"),
             ("webmail", "b")]
    tasks = [cast(LoadedTask, SimpleNamespace(id=f"{site}.{name}@1", spec=SimpleNamespace(site=site)))
             for site, name in named]
    plan = [p.task_id for p in bench_plan(tasks, 8, "oracle")]
    assert plan == ["helpdesk.a@1", "invoices.a@1", "webmail.a@1", "helpdesk.b@1", "webmail.b@1", "helpdesk.c@1",
                    "helpdesk.a@1", "invoices.a@1"]


def test_a_version_2_report_is_still_read_and_has_no_floor() -> None:
    committed = json.loads(LATEST.read_text(encoding="utf-8"))
    committed["format"] = "computerops.bench/2"
    committed.pop("floor", None)
    report = BenchReport.model_validate(committed)
    assert report.floor == []
    assert "floor:" not in bench_markdown(report.model_copy(update={"floor": []}))
    checks = {t.figure: t for t in target_checks(report)}
    assert not checks["steps against the floor"].met and checks["steps against the floor"].measured == "not measured"


@pytest.mark.parametrize("levels", ["1,0", "a", ",", "2,-1"])
def test_bad_levels_are_refused(levels: str) -> None:
    result = runner.invoke(app, ["bench", "--levels", levels])
    assert result.exit_code == 2
    # typer's error box may wrap the message: read it without the box.
    assert "--levels must be comma-separated positive integers" in " ".join(result.output.replace("│", " ").split())


def test_the_readme_figures_are_the_committed_bench_output() -> None:
    report = BenchReport.model_validate_json(LATEST.read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert bench_markdown(report) in readme, "regenerate: computerops bench --out docs/bench/latest.json --markdown"
    assert report.recall == 1.0
    json.loads(LATEST.read_text(encoding="utf-8"))
