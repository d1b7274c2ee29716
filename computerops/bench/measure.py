"""`computerops bench`: the adapter and harness measured, in one run, on catalog pages, the fidelity fixture
pages and scripted episodes.

Everything is measured here, on this machine, in this process (the Ray part also in Ray's worker processes); nothing
is assumed but the scaling model, which says it is one. Timings are
medians and 95th percentiles of repeated samples; sizes are exact. Episodes use the SCRIPTED
endpoint, so model time is near zero and what is timed is the benchmark's own overhead.

One module (over 400 lines): the figures model, the measurements and the README table are one format
(`computerops.bench/4`), changed together; the floor measurement (each step kind against bare Playwright doing the
same) is in computerops/bench/floor.py, the local executor against Ray and the N-node scaling model in
computerops/bench/scaling.py.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil
from playwright.async_api import Browser, async_playwright
from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from adapter.actions import Navigate, Rejection, parse_action
from adapter.browser import describe_chromium, launch_browser
from adapter.context import text_tokens
from adapter.driver import PageDriver
from adapter.fidelity import check_offered_controls_work
from adapter.stability import wait_for_visual_stability
from adapter.transcript import AgentTranscript
from computerops.bench.floor import (
    AI_SNAPSHOT_TARGET,
    FLOOR_TARGET,
    FloorFigures,
    bench_floor,
    observation_triple,
    paired_figures,
)
from computerops.bench.memory import peak_memory
from computerops.bench.peer_tokens import TOKENIZER, token_counter
from computerops.bench.roundtrips import RoundTripFigures, bench_round_trips
from computerops.bench.scaling import RAY_TARGET_RATIO, ExecutorFigures, bench_executors
from computerops.catalog.crawl import crawl_site_pages, crawl_targets
from computerops.catalog.observing import accessibility_of, ai_snapshot
from computerops.core import defaults
from computerops.core.clock import utc_stamp
from computerops.core.formats import Versioned
from computerops.core.stats import ratio_of_medians
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.runs.provenance import versions
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from computerops.runs.serving import serve_app, tenant_context
from replays import prepare_replay, replay_episode
from sites.kit.app import create_app
from sites.registry import tenant_registry
from tasks import LoadedTask

BENCH_FORMAT: Literal["computerops.bench/5"] = "computerops.bench/5"
"""2: fidelity fixture pages (`fixture_pages`) and the visual-settle wait (`visual_settle_ms`) added.
3: the floor (`floor`: each step kind against bare Playwright doing the same, computerops/bench/floor.py) and its
targets; a version-2 file is read with no floor.
4: the local executor against the Ray executor and the N-node scaling model (`executors`,
computerops/bench/scaling.py) and its target; a version-3 (or 2) file is read with none.
5: the floor's pairs taken in turns and its ratios the ratios of the medians with bootstrap intervals, observation
also on the catalog pages (`catalog observation`); tokens of every view with one tokenizer (`tokenizer`, per page
`tokens`, `observation_tokens_ratio`); the episodes spread over every site the tasks cover; replay timed after the
templates and the app are ready (`replay_setup_s`), its figure the ratio of the medians with an interval
(`replay_ratio`). A version-4 (or older) file is read with none of these."""
EXECUTORS_FORMAT: Literal["computerops.bench_executors/1"] = "computerops.bench_executors/1"
"""`computerops bench --only executors`: that part alone (`ExecutorsReport`)."""
FIXTURE_PAGES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "pages"
"""The fidelity fixture pages (`fidelity-*.html`) of this checkout: one page per class of page no one here wrote
(controls low in scrolling boxes, typed inputs, animated panels, ...); an installed package has none."""
FIXTURE_PREFIX = "/site/"
FIXTURE_ACTIONS: dict[str, list[tuple[str, str, dict[str, object]]]] = {
    "fidelity-hover.html": [("hover", "Products", {})],
    "fidelity-drag.html": [("drag", "Move Alpha", {"to_id": "Move Gamma"}), ("drag", "Volume", {"dx": 120}),
                           ("drag", "Fix login", {"to_id": "Add a card to Done"})],
    "fidelity-point.html": [("click", "Seat map", {"x": 0.25, "y": 0.75})],
    "fidelity-wrapped-link.html": [("click", "terms of service", {})],
    "fidelity-press.html": [("press", "Contrast", {"key": "ArrowRight"})],
    "fidelity-focus-cover.html": [("click", "Focus me", {})],
    "fidelity-hover-swap.html": [("click", "star-o", {})],
    "fidelity-hover-listeners.html": [("hover", "Account", {})],
    "fidelity-sortable.html": [("drag", "One", {"to_id": "Four"}), ("drag", "Blue", {"to_id": "Red"})],
}
"""Actions timed on a fixture page after its audit, each (action, control name, arguments; a `to_id` given as the
name of the control to drag to): the pointer actions third-party pages need (hover, drag, click at a point), a
click on a wrapped link and a key on a slider, each on the page of its class; since issue 50 a click on a field that
covers itself as it takes the focus, on an icon whose image swaps under the pointer, a hover on a target with only a
pointer-over listener, and drags of a sortable list's items."""
Progress = Callable[[str], None]
_HAS_TOKENIZER = importlib.util.find_spec("bpe_openai") is not None
"""Whether the bench's extra is installed: then every view's tokens are counted with one tokenizer
(computerops/bench/peer_tokens.py's), else sizes are compared in characters only."""


class Distribution(BaseModel):
    """Repeated samples of one figure."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    median: float
    p95: float
    unit: str


def distribution(values: Sequence[float], unit: str, digits: int = 2) -> Distribution:
    """Median and nearest-rank 95th percentile; an empty sample is an error, not a zero."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    rank = max(0, -(-95 * len(ordered) // 100) - 1)  # nearest rank: ceil(0.95 n), 1-based
    return Distribution(n=len(ordered), median=round(statistics.median(ordered), digits),
                        p95=round(ordered[rank], digits), unit=unit)


class BenchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reset_samples: int = Field(default=50, ge=1)
    page_repeats: int = Field(default=5, ge=1)
    """Observations (and ai snapshots) timed per page."""
    page_limit: int = Field(default=40, ge=1)
    """Most pages crawled per site."""
    episodes: int = Field(default=16, ge=1)
    """Scripted episodes per concurrency level."""
    levels: list[int] = Field(default_factory=lambda: [1, 2, 4, 8], min_length=1)
    policy: str = "oracle"
    max_chars: int = Field(default=defaults.OBSERVATION_CHARS, ge=500)
    seed: int = 1
    floor_repeats: int = Field(default=10, ge=1)
    """Paired repetitions per step kind against bare Playwright (computerops/bench/floor.py)."""
    ray_workers: int | None = Field(default=None, ge=1)
    """W of the local executor at concurrency W against the Ray executor at W workers (computerops/bench/scaling.py);
    None: not measured (`--no-ray`, Ray not installed, or a file written before version 4)."""
    ray_address: str | None = None
    """The Ray cluster to join; None starts a local Ray in-process."""


class PageFigures(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    site: str
    path: str
    observe_ms: Distribution
    chars: int
    estimated_tokens: int
    truncated: bool
    ai_snapshot_ms: Distribution
    ai_snapshot_chars: int
    ai_snapshot_estimated_tokens: int
    chars_ratio: float
    """Observation characters / ai snapshot characters."""
    tokens: int | None = None
    ai_snapshot_tokens: int | None = None
    tokens_ratio: float | None = None
    """The observation's and the ai snapshot's tokens by the report's `tokenizer`, and their ratio (None without one,
    and before bench/5)."""
    accessibility_expected: int
    offered: int
    matched: int
    recall: float
    offered_not_in_tree: int
    control_problems: list[str]
    """Offered controls that did not resolve or could not be acted on (should be empty)."""
    visual_settle_ms: Distribution
    """The wait for visual stability after every action (adapter/stability.py), on this page as it stands: its
    cost on a page without animations, one round trip."""


class FixtureFigures(BaseModel):
    """One fidelity fixture page, opened as the model opens a page (`navigate`, which settles) and audited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    page: str
    """The fixture file, e.g. `fidelity-scroll-box.html`; its name after `fidelity-` is the class it tests."""
    open_ms: float
    """The navigate action, its settling (network, then animations) included."""
    accessibility_expected: int
    offered: int
    matched: int
    recall: float
    offered_not_in_tree: int
    clickables: int
    """Offered `clickable` controls with a click listener (adapter/fidelity.py); not counted as extra."""
    unoffered_listeners: int
    """Elements with a click listener of their own that are not offered (information)."""
    control_problems: list[str]
    action_ms: dict[str, float] = Field(default_factory=dict)
    """Each of the page's `FIXTURE_ACTIONS` (its arguments as the model sends them, by control name): the action,
    its settling included; one refused is a control problem."""

    @property
    def ok(self) -> bool:
        return self.recall == 1.0 and self.offered_not_in_tree == 0 and not self.control_problems


class ReplayFigures(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    episode_id: str
    task_id: str
    operations: int
    episode_wall_s: float
    replay_s: float
    speedup: float
    """Episode wall time / replay time."""
    result: Literal["PASS", "FAIL"]
    site: str | None = None
    """The task's site (None before bench/5)."""


class LevelFigures(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int
    episodes: int
    wall_s: float
    episodes_per_minute: float
    peak_rss_mib: float
    """Peak resident memory of this process and all its children (browser, driver), sampled every 50 ms."""
    verified_success: int
    identical_to_first_level: bool
    """Every episode's operations, journal, final state and verdict have the same bytes as at the first level."""


class RatioFigure(BaseModel):
    """A ratio of medians and its 95% bootstrap interval (`computerops.core.stats.ratio_of_medians`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    ratio: float
    low: float
    high: float

    @classmethod
    def of(cls, a: Sequence[float], b: Sequence[float]) -> RatioFigure:
        found = ratio_of_medians(a, b)
        return cls(n=len(a), ratio=round(found.ratio, 2), low=round(found.low, 2), high=round(found.high, 2))


class TargetCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    figure: str
    target: str
    measured: str
    met: bool


class BenchReport(Versioned):
    """What `computerops bench` measured; written as JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.bench/5", "computerops.bench/4", "computerops.bench/3",
                    "computerops.bench/2"] = BENCH_FORMAT
    created_at: str
    scripted: bool = True
    """Episodes ran against the SCRIPTED endpoint (model time is not what is measured)."""
    options: BenchOptions
    tasks: list[str]
    machine: dict[str, str | int | None]
    reset_ms: Distribution
    pages: list[PageFigures]
    observation_chars_ratio: Distribution
    """Per page: observation characters / ai snapshot characters."""
    recall: float
    """Matched / expected controls over every page."""
    offered_not_in_tree: int
    visual_settle_ms: Distribution
    """The visual-stability wait on every catalog page (every sample of every page)."""
    fixture_pages: list[FixtureFigures]
    """Every fidelity fixture page of the checkout (none for an installed package)."""
    step_overhead_ms: Distribution
    """Per carried-out action: act + observe, model time excluded (first concurrency level)."""
    act_ms: Distribution
    observe_ms: Distribution
    page_load_step_ms: Distribution | None
    """Step overhead of actions that loaded a new document (None when the run had none)."""
    in_page_step_ms: Distribution | None
    """Step overhead of actions that stayed on the document (None when the run had none)."""
    replays: list[ReplayFigures]
    replay_speedup: Distribution
    replay_ratio: RatioFigure | None = None
    """Median episode wall time / median replay time over the run's episodes, with its bootstrap interval (None
    before bench/5)."""
    replay_setup_s: float | None = None
    """What replay does once per process before its first episode, not timed in any episode: the app built and
    each (site, seed) template seeded and read (None before bench/5)."""
    levels: list[LevelFigures]
    tokenizer: str | None = None
    """The encoding every view's tokens were counted with (`computerops.bench.peer_tokens`); None: `bpe-openai`, the
    bench's extra, is not installed."""
    observation_tokens_ratio: Distribution | None = None
    """Per page: observation tokens / ai snapshot tokens (None without a tokenizer)."""
    targets: list[TargetCheck]
    floor: list[FloorFigures] = Field(default_factory=list)
    """Each step kind against bare Playwright doing the same action on the same element and reading the page, and
    observation against page.content() and the ai snapshot (computerops/bench/floor.py); empty in a version-2 file and
    without the fixture pages."""
    executors: ExecutorFigures | None = None
    """The local executor at concurrency W against the Ray executor at W workers, and the N-node scaling model
    (computerops/bench/scaling.py); None when not measured and in files before version 4."""
    round_trips: list[RoundTripFigures] = Field(default_factory=list)
    """Each floor step kind's protocol round trips, the adapter's against bare Playwright's
    (computerops/bench/roundtrips.py); empty without the fixture pages and in files written before it was counted."""


class ExecutorsReport(Versioned):
    """What `computerops bench --only executors` measured: the executor part alone; written as JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.bench_executors/1"] = EXECUTORS_FORMAT
    created_at: str
    scripted: bool = True
    options: BenchOptions
    tasks: list[str]
    machine: dict[str, str | int | None]
    executors: ExecutorFigures
    targets: list[TargetCheck]


def _ms(seconds: float) -> float:
    return seconds * 1000


def bench_reset(sites: Sequence[tuple[str, int]], samples: int, root: Path) -> Distribution:
    """Creating a fresh tenant of each (site, seed), after its template exists."""
    registry = tenant_registry(root)
    try:
        times: list[float] = []
        for site, seed in sites:
            registry.drop(registry.create(site, seed))  # builds the template once; not what is measured
            for _ in range(samples):
                began = time.perf_counter()
                tenant = registry.create(site, seed)
                times.append(_ms(time.perf_counter() - began))
                registry.drop(tenant)
        return distribution(times, "ms")
    finally:
        registry.close()


def lowest_seed_per_template(tasks: Sequence[LoadedTask]) -> list[LoadedTask]:
    """One task per template (a fixed task is its own): the one of the lowest seed, in the tasks' order."""
    chosen: dict[str, LoadedTask] = {}
    for task in tasks:
        template = task.instance.template if task.instance is not None else task.id
        kept = chosen.get(template)
        if kept is None or task.spec.seed < kept.spec.seed:
            chosen[template] = task
    kept_ids = {t.id for t in chosen.values()}
    return [t for t in tasks if t.id in kept_ids]


async def bench_pages(browser: Browser, tasks: Sequence[LoadedTask], options: BenchOptions, root: Path,
                      progress: Progress, samples: ObservationSamples | None = None) -> list[PageFigures]:
    """Every catalog page reachable by links from each site's root and the tasks' start pages, observed,
    snapshotted and checked against the accessibility tree: for each template among the tasks, its instance of the
    lowest seed (a template's instances show the same pages over other records; crawling every published seed of
    the catalog's 2,274 instances was 144 (site, seed) crawls of up to `page_limit` pages, hours here)."""
    figures: list[PageFigures] = []
    tasks = lowest_seed_per_template(tasks)
    registry = tenant_registry(root)
    async with AsyncExitStack() as stack:
        stack.callback(registry.close)
        origin = await stack.enter_async_context(serve_app(create_app(registry)))
        sites = {t.spec.site: registry.site(t.spec.site) for t in tasks}
        for target in crawl_targets(tasks, sites):
            prefix = f"/{target.site}/"
            context = await tenant_context(browser, origin, registry.create(target.site, target.seed).token,
                                           site_prefix=prefix)
            try:
                found = await crawl_site_pages(context, origin, target.start_paths, site_prefix=prefix,
                                               limit=options.page_limit)
                progress(f"pages: {target.site} (seed {target.seed}): {len(found)} pages reached by links")
                page = await context.new_page()
                driver = PageDriver(page, origin=origin, site_prefix=prefix, max_chars=options.max_chars)
                for number, path in enumerate(found, start=1):
                    began = time.perf_counter()
                    await page.goto(origin + path, wait_until="domcontentloaded")
                    figure = await _page_figures(driver, target.site, path, options.page_repeats,
                                                 samples if samples is not None else ObservationSamples(),
                                                 opened_ms=_ms(time.perf_counter() - began))
                    figures.append(figure)
                    progress(f"  page {number}/{len(found)} {path}: {figure.chars} chars "
                             f"({figure.chars_ratio:.2f} x the ai snapshot), recall {figure.recall:.0%}")
            finally:
                await context.close()
    return figures


@dataclass
class ObservationSamples:
    """Every timed observation of the catalog pages with page.content() and the ai snapshot of the same page as it
    stood, in ms, taken in turns (computerops/bench/floor.py's `observation_triple`): the catalog's observation
    floor."""

    observe: list[float] = field(default_factory=list)
    content: list[float] = field(default_factory=list)
    snapshot: list[float] = field(default_factory=list)

    def floor(self, pages: int) -> FloorFigures | None:
        if len(self.observe) < 2:
            return None
        return paired_figures("catalog observation", f"{pages} catalog pages", "", self.observe, self.content,
                              self.snapshot, adapter_first=len(range(0, len(self.observe), 3)))


async def _page_figures(driver: PageDriver, site: str, path: str, repeats: int,
                        samples: ObservationSamples, *, opened_ms: float) -> PageFigures:
    observe_times, snapshot_times = [], []
    await driver.observe()  # the first observation of a document reads its listeners: timed in the steps
    for _ in range(repeats):
        observed, content, snapshotted = await observation_triple(driver, len(samples.observe))
        for sink, value in ((samples.observe, observed), (samples.content, content),
                            (samples.snapshot, snapshotted)):
            sink.append(value)
        observe_times.append(observed)
        snapshot_times.append(snapshotted)
    observation = await driver.observe()
    snapshot = await ai_snapshot(driver.page)
    fidelity = await accessibility_of(driver, observation)
    problems = await check_offered_controls_work(driver, observation, step_ms=opened_ms)
    count = token_counter() if _HAS_TOKENIZER else None
    tokens = count(observation.text) if count else None
    snapshot_tokens = count(snapshot.text) if count else None
    settle_times = []
    for _ in range(repeats):
        began = time.perf_counter()
        await wait_for_visual_stability(driver.page)
        settle_times.append(_ms(time.perf_counter() - began))
    return PageFigures(
        site=site, path=path, observe_ms=distribution(observe_times, "ms"),
        chars=observation.chars, estimated_tokens=text_tokens(observation.text),
        truncated=observation.truncated, ai_snapshot_ms=distribution(snapshot_times, "ms"),
        ai_snapshot_chars=snapshot.chars, ai_snapshot_estimated_tokens=snapshot.estimated_tokens,
        chars_ratio=round(observation.chars / max(snapshot.chars, 1), 3),
        tokens=tokens, ai_snapshot_tokens=snapshot_tokens,
        tokens_ratio=round(tokens / max(snapshot_tokens, 1), 3) if tokens is not None and snapshot_tokens else None,
        accessibility_expected=fidelity.expected, offered=fidelity.offered,
        matched=fidelity.matched, recall=fidelity.recall,
        offered_not_in_tree=len(fidelity.extra), control_problems=problems,
        visual_settle_ms=distribution(settle_times, "ms"),
    )


async def bench_fixture_pages(browser: Browser, options: BenchOptions, progress: Progress,
                              directory: Path = FIXTURE_PAGES) -> list[FixtureFigures]:
    """Every `fidelity-*.html` page of `directory`, served on a loopback origin under /site/, opened with the
    model's navigate action and audited like a catalog page (whole page, every control checked to work)."""
    names = sorted(path.name for path in directory.glob("fidelity-*.html")) if directory.is_dir() else []
    if not names:
        progress(f"fixture pages: none at {directory}")
        return []
    app = Starlette(routes=[Mount(FIXTURE_PREFIX.rstrip("/"), app=StaticFiles(directory=directory))])
    figures: list[FixtureFigures] = []
    async with serve_app(app) as origin:
        context = await browser.new_context()
        try:
            driver = PageDriver(await context.new_page(), origin=origin, site_prefix=FIXTURE_PREFIX,
                                max_chars=options.max_chars)
            for number, name in enumerate(names, start=1):
                began = time.perf_counter()
                opened = await driver.act(Navigate(url=FIXTURE_PREFIX + name), number)
                open_ms = _ms(time.perf_counter() - began)
                if not opened.ok:
                    raise RuntimeError(f"fixture page {name} did not open: {opened.rejection}")
                observation = await driver.observe()
                fidelity = await accessibility_of(driver, observation)
                problems = await check_offered_controls_work(driver, observation, step_ms=open_ms)
                action_ms = await _time_fixture_actions(driver, FIXTURE_ACTIONS.get(name, []), number, problems)
                figure = FixtureFigures(
                    page=name, open_ms=round(open_ms, 2), accessibility_expected=fidelity.expected,
                    offered=fidelity.offered, matched=fidelity.matched, recall=fidelity.recall,
                    offered_not_in_tree=len(fidelity.extra), clickables=len(fidelity.clickables),
                    unoffered_listeners=len(fidelity.unoffered_listeners), control_problems=problems,
                    action_ms=action_ms,
                )
                figures.append(figure)
                progress(f"  fixture {name}: recall {figure.recall:.0%}, extra {figure.offered_not_in_tree}, "
                         f"problems {len(problems)}, opened in {figure.open_ms:.0f} ms")
        finally:
            await context.close()
    return figures


async def _time_fixture_actions(driver: PageDriver, steps: list[tuple[str, str, dict[str, object]]], number: int,
                                problems: list[str]) -> dict[str, float]:
    """Carry out a fixture page's actions on its latest observation, each timed; what fails is added to `problems`."""
    timed: dict[str, float] = {}
    for action_name, control, arguments in steps:
        assert driver.latest is not None
        by_name = {c.name: c.id for c in reversed(driver.latest.controls)}  # the first control of a name
        given = {"id": by_name.get(control, ""), **arguments}
        if isinstance(given.get("to_id"), str):
            given["to_id"] = by_name.get(str(given["to_id"]), "")
        label = f"{action_name} {control!r} " + " ".join(f"{k}={v}" for k, v in arguments.items())
        action = parse_action(action_name, given)
        if isinstance(action, Rejection):
            raise RuntimeError(f"bench action {label}: {action.reason}")
        began = time.perf_counter()
        outcome = await driver.act(action, number)
        timed[label.strip()] = round(_ms(time.perf_counter() - began), 2)
        if outcome.rejection is not None:
            problems.append(f"{label.strip()}: {outcome.rejection.reason}")
        await driver.observe()
    return timed


def bench_plan(tasks: Sequence[LoadedTask], episodes: int, policy: str) -> list[PlannedEpisode]:
    """`episodes` episodes, all with one scripted policy, over the tasks in turn site by site: each site's first
    task, then each site's second, and so on (sites by name, tasks in the order given), so that as many episodes as
    there are sites cover every site."""
    by_site: dict[str, list[LoadedTask]] = {}
    for task in tasks:
        by_site.setdefault(task.spec.site, []).append(task)
    deepest = max(len(group) for group in by_site.values())
    order = [group[depth] for depth in range(deepest) for _, group in sorted(by_site.items()) if depth < len(group)]
    return [
        PlannedEpisode(episode_id=f"{n + 1:03d}-{order[n % len(order)].id}", task_id=order[n % len(order)].id,
                       policy=policy)
        for n in range(episodes)
    ]


def _evidence_bytes(bundle: RunDirectory, record: EpisodeRecord) -> tuple[bytes, ...]:
    directory = bundle.episode_dir(record.episode_id)
    return tuple((directory / name).read_bytes()
                 for name in ("operations.json", "journal.json", "final_state.json", "verdict.json"))


async def bench_levels(tasks: Sequence[LoadedTask], options: BenchOptions, root: Path,
                       progress: Progress) -> tuple[list[LevelFigures], Path]:
    """The same scripted plan at each concurrency level; returns the figures and the first level's run."""
    endpoint = EndpointConfig(kind="scripted", policies=[options.policy])
    plan = bench_plan(tasks, options.episodes, options.policy)
    levels: list[LevelFigures] = []
    first: dict[str, tuple[bytes, ...]] = {}
    first_run = root / f"level-{options.levels[0]}"
    for concurrency in options.levels:
        out = root / f"level-{concurrency}"
        config = RunConfig(run_id=out.name, tasks=sorted({t.id for t in tasks}), endpoint=endpoint, episodes=plan)
        with peak_memory() as peak:
            began = time.perf_counter()
            records = await execute_run(config, list(tasks), out, lambda line: progress(f"  {line}"),
                                        concurrency=concurrency)
            wall = time.perf_counter() - began
        bundle = RunDirectory(out)
        evidence = {r.episode_id: _evidence_bytes(bundle, r) for r in records}
        if not first:
            first = evidence
        level = LevelFigures(
            concurrency=concurrency, episodes=len(records), wall_s=round(wall, 2),
            episodes_per_minute=round(len(records) / wall * 60, 1), peak_rss_mib=peak(),
            verified_success=sum(r.outcome == "verified_success" for r in records),
            identical_to_first_level=evidence == first,
        )
        progress(f"concurrency {concurrency}: {level.episodes} episodes in {level.wall_s} s "
                 f"({level.episodes_per_minute}/min), peak memory {level.peak_rss_mib} MiB, "
                 f"identical to the first level: {level.identical_to_first_level}")
        levels.append(level)
    return levels, first_run


class StepSamples(BaseModel):
    """Adapter time per carried-out action of a run, in ms (model time excluded)."""

    model_config = ConfigDict(extra="forbid")

    steps: list[float] = Field(default_factory=list)
    """act + observe."""
    acts: list[float] = Field(default_factory=list)
    observes: list[float] = Field(default_factory=list)
    page_loads: list[float] = Field(default_factory=list)
    """act + observe of actions that loaded a new document (links, form submissions, navigate, back)."""
    in_page: list[float] = Field(default_factory=list)
    """act + observe of actions that stayed on the document (fill, select, check, most checkbox clicks)."""


def step_times(bundle: RunDirectory) -> StepSamples:
    """Every action the adapter carried out in a run, from the transcripts."""
    samples = StepSamples()
    for record in bundle.records():
        path = bundle.episode_dir(record.episode_id) / "transcript.json"
        transcript = AgentTranscript.model_validate_json(path.read_text(encoding="utf-8"))
        for step in transcript.steps:
            if step.act_s is not None and step.observe_s is not None:
                total = _ms(step.act_s + step.observe_s)
                samples.acts.append(_ms(step.act_s))
                samples.observes.append(_ms(step.observe_s))
                samples.steps.append(total)
                (samples.page_loads if step.navigated else samples.in_page).append(total)
    return samples


async def bench_replays(bundle: RunDirectory, tasks: Sequence[LoadedTask],
                        root: Path) -> tuple[list[ReplayFigures], float]:
    """Each episode's saved operations replayed on a fresh tenant, timed against the episode's wall time; and what
    replay did once before the first (`prepare_replay`: the app, each (site, seed) template seeded and read),
    timed apart, as `computerops replay` does it once per run."""
    by_id = {t.id: t for t in tasks}
    registry = tenant_registry(root)
    figures = []
    try:
        records = bundle.records()
        began = time.perf_counter()
        prepare_replay(registry, [by_id[record.task_id] for record in records])
        setup_s = time.perf_counter() - began
        for record in records:
            episode = bundle.load_episode(record)
            task = by_id[record.task_id]
            began = time.perf_counter()
            receipt = await replay_episode(task, episode, registry)
            replay_s = time.perf_counter() - began
            figures.append(ReplayFigures(
                episode_id=record.episode_id, task_id=record.task_id, operations=record.operations,
                episode_wall_s=record.wall_s, replay_s=round(replay_s, 4),
                speedup=round(record.wall_s / replay_s, 1), result=receipt.result, site=task.spec.site,
            ))
    finally:
        registry.close()
    return figures, setup_s


def _pooled(per_page: Sequence[Distribution]) -> Distribution:
    """One distribution over pages, each page's median weighted by its sample count (the samples themselves are
    not kept per page)."""
    return distribution([d.median for d in per_page for _ in range(d.n)], "ms")


def target_checks(report: BenchReport) -> list[TargetCheck]:
    """The issue's targets, against what was measured."""
    size = report.observation_tokens_ratio or report.observation_chars_ratio
    unit = f"{report.tokenizer} tokens" if report.observation_tokens_ratio is not None else "characters"
    faithful = sum(f.ok for f in report.fixture_pages)
    return [
        TargetCheck(figure="observation size", target=f"at most 0.5 x ai snapshot {unit}, full recall",
                    measured=f"median {size.median:.2f} x, recall {report.recall:.0%}",
                    met=size.median <= 0.5 and report.recall == 1.0 and report.offered_not_in_tree == 0),
        TargetCheck(figure="step overhead", target="median under 50 ms",
                    measured=f"median {report.step_overhead_ms.median:.1f} ms",
                    met=report.step_overhead_ms.median < 50),
        TargetCheck(figure="reset", target="under 10 ms", measured=f"median {report.reset_ms.median:.2f} ms, "
                    f"p95 {report.reset_ms.p95:.2f} ms", met=report.reset_ms.p95 < 10),
        _replay_check(report),
        *_floor_checks(report),
        TargetCheck(figure="fidelity fixture pages", target="every page: full recall, nothing extra, every "
                    "control works", measured=f"{faithful} of {len(report.fixture_pages)} pages",
                    met=bool(report.fixture_pages) and faithful == len(report.fixture_pages)),
        *([executor_check(report.executors)] if report.executors is not None else []),
    ]


def _replay_check(report: BenchReport) -> TargetCheck:
    """Replay against the live episode: the ratio of the medians with its interval where measured (bench/5), else
    the median of the per-episode ratios."""
    target = "at least 20 x faster than the episode"
    figure = report.replay_ratio
    if figure is None:
        return TargetCheck(figure="replay", target=target, measured=f"median {report.replay_speedup.median:.0f} x",
                           met=report.replay_speedup.median >= 20)
    sites = len({r.site for r in report.replays})
    replay_ms = statistics.median(r.replay_s for r in report.replays) * 1000
    return TargetCheck(figure="replay", target=target,
                       measured=f"{figure.ratio:.1f} x [{figure.low:.1f}, {figure.high:.1f}] (median replay "
                                f"{replay_ms:.0f} ms, {figure.n} episodes over {sites} sites)",
                       met=figure.ratio >= 20)


def executor_check(figures: ExecutorFigures) -> TargetCheck:
    """Ray against local at W workers, steady state (start-up is paid once per run; its ratio is shown beside)."""
    return TargetCheck(
        figure=f"Ray against local at {figures.workers} workers",
        target=f"Ray's steady-state episodes/min no more than {1 - RAY_TARGET_RATIO:.0%} below local's (faster "
               "passes), evidence identical",
        measured=f"{figures.ratio:.2f} x ({figures.ray.steady_episodes_per_minute:.1f} against "
                 f"{figures.local.steady_episodes_per_minute:.1f}/min; {figures.ratio_including_startup:.2f} x with "
                 f"Ray's {figures.ray.startup_s:.1f} s start-up), evidence "
                 + ("identical" if figures.identical_evidence else f"DIFFERS in {len(figures.differing)} files"),
        met=figures.target_met and figures.identical_evidence)


_OBSERVATIONS = ("observation", "catalog observation")


def _floor_checks(report: BenchReport) -> list[TargetCheck]:
    steps = [f for f in report.floor if f.kind not in _OBSERVATIONS]
    observations = [f for f in report.floor if f.kind in _OBSERVATIONS and f.ai_snapshot_ratio is not None]
    worst = max(steps, key=lambda f: f.ratio, default=None)
    slowest = max(observations, key=lambda f: f.ai_snapshot_ratio or 0.0, default=None)
    snapshot = slowest.ai_snapshot_ratio if slowest is not None else None
    where = f" ({slowest.page})" if slowest is not None and len(observations) > 1 else ""
    return [
        TargetCheck(figure="steps against the floor", target=f"every step kind at most {FLOOR_TARGET} x bare "
                    "Playwright doing the same and reading the page",
                    measured=f"worst {worst.kind} {worst.ratio:.2f}{worst.interval} x" if worst else "not measured",
                    met=bool(steps) and all(f.ratio <= FLOOR_TARGET for f in steps)),
        TargetCheck(figure="observation against the ai snapshot",
                    target=f"at most {AI_SNAPSHOT_TARGET} x the ai snapshot's time",
                    measured=f"{'median' if report.format != BENCH_FORMAT else 'worst'} {snapshot:.2f}"
                             f"{_snapshot_interval(slowest)} x{where}" if snapshot is not None else "not measured",
                    met=bool(observations) and all((f.ai_snapshot_ratio or 0.0) <= AI_SNAPSHOT_TARGET
                                                   for f in observations)),
    ]


def _snapshot_interval(figure: FloorFigures | None) -> str:
    if figure is None or figure.ai_snapshot_low is None or figure.ai_snapshot_high is None:
        return ""
    return f" [{figure.ai_snapshot_low:.2f}, {figure.ai_snapshot_high:.2f}]"


def _machine(browser_version: str | None) -> dict[str, str | int | None]:
    known = versions(browser_version)
    return {"platform": platform.platform(), "cpus": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30), **known}


async def run_bench(tasks: Sequence[LoadedTask], options: BenchOptions,
                    progress: Progress = lambda _: None) -> BenchReport:
    """Measure everything in one run, in the order: reset, pages, concurrency levels, steps, replays."""
    if not tasks:
        raise ValueError("no tasks to bench")
    with tempfile.TemporaryDirectory(prefix="computerops-bench-") as tmp:
        root = Path(tmp)
        sites = sorted({(t.spec.site, t.spec.seed) for t in tasks})
        reset = bench_reset(sites, options.reset_samples, root / "reset")
        progress(f"reset: fresh tenant median {reset.median} ms, p95 {reset.p95} ms ({reset.n} samples)")
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright)
            try:
                browser_version = describe_chromium(playwright, browser)
                catalog_observations = ObservationSamples()
                pages = await bench_pages(browser, tasks, options, root / "pages", progress, catalog_observations)
                fixtures = await bench_fixture_pages(browser, options, progress)
                floor = await bench_floor(browser, FIXTURE_PAGES, options.floor_repeats, progress)
                round_trips = await bench_round_trips(browser, FIXTURE_PAGES, progress)
                catalog_floor = catalog_observations.floor(len(pages))
                floor += [catalog_floor] if catalog_floor is not None else []
            finally:
                await browser.close()
        progress(f"pages: {len(pages)} observed, median chars ratio to the ai snapshot "
                 f"{statistics.median(p.chars_ratio for p in pages):.2f}")
        levels, first_run = await bench_levels(tasks, options, root / "runs", progress)
        executors = await _executors(tasks, options, root / "executors", progress)
        bundle = RunDirectory(first_run)
        samples = step_times(bundle)
        replays, replay_setup_s = await bench_replays(bundle, tasks, root / "replay")
    expected = sum(p.accessibility_expected for p in pages)
    report = BenchReport(
        created_at=utc_stamp(), options=options,
        tasks=sorted({t.id for t in tasks}), machine=_machine(browser_version), reset_ms=reset, pages=pages,
        observation_chars_ratio=distribution([p.chars_ratio for p in pages], "x", digits=3),
        recall=round(sum(p.matched for p in pages) / expected, 4) if expected else 1.0,
        offered_not_in_tree=sum(p.offered_not_in_tree for p in pages),
        visual_settle_ms=_pooled([p.visual_settle_ms for p in pages]), fixture_pages=fixtures,
        step_overhead_ms=distribution(samples.steps, "ms"), act_ms=distribution(samples.acts, "ms"),
        observe_ms=distribution(samples.observes, "ms"),
        page_load_step_ms=distribution(samples.page_loads, "ms") if samples.page_loads else None,
        in_page_step_ms=distribution(samples.in_page, "ms") if samples.in_page else None, replays=replays,
        replay_speedup=distribution([r.speedup for r in replays], "x", digits=1),
        replay_ratio=RatioFigure.of([r.episode_wall_s for r in replays], [r.replay_s for r in replays])
        if len(replays) > 1 else None, replay_setup_s=round(replay_setup_s, 3), levels=levels, targets=[],
        floor=floor, round_trips=round_trips, executors=executors, tokenizer=TOKENIZER if _HAS_TOKENIZER else None,
        observation_tokens_ratio=distribution([p.tokens_ratio for p in pages if p.tokens_ratio is not None], "x",
                                              digits=3) if any(p.tokens_ratio is not None for p in pages) else None,
    )
    return report.model_copy(update={"targets": target_checks(report)})


async def _executors(tasks: Sequence[LoadedTask], options: BenchOptions, root: Path,
                     progress: Progress) -> ExecutorFigures | None:
    if options.ray_workers is None:
        return None
    return await bench_executors(tasks, bench_plan(tasks, options.episodes, options.policy), options.policy,
                                 options.ray_workers, root, progress, ray_address=options.ray_address)


async def run_executors_bench(tasks: Sequence[LoadedTask], options: BenchOptions,
                              progress: Progress = lambda _: None) -> ExecutorsReport:
    """Only the executor part of the bench (`bench --only executors`): local against Ray and the scaling model."""
    if not tasks:
        raise ValueError("no tasks to bench")
    if options.ray_workers is None:
        raise ValueError("the executor part needs Ray workers (Ray is not installed, or --no-ray was given)")
    with tempfile.TemporaryDirectory(prefix="computerops-bench-") as tmp:
        figures = await _executors(tasks, options, Path(tmp), progress)
        assert figures is not None
        chromium = RunDirectory(Path(tmp) / "ray" / "executors").manifest().versions.get("chromium")
    return ExecutorsReport(created_at=utc_stamp(), options=options,
                           tasks=sorted({t.id for t in tasks}), machine=_machine(chromium), executors=figures,
                           targets=[executor_check(figures)])


def bench_markdown(report: BenchReport) -> str:
    """The README's figures table, rendered from a bench JSON file (so the README cannot drift from it)."""
    machine = report.machine
    lines = [
        f"Measured {report.created_at} on {machine.get('cpus')} CPUs / {machine.get('memory_gib')} GiB, "
        f"Chromium {machine.get('chromium')}, {len(report.pages)} catalog pages, "
        f"{report.levels[0].episodes} SCRIPTED episodes per concurrency level.",
        "",
        "| figure | measured | target | met |",
        "|---|---|---|---|",
    ]
    lines += [f"| {t.figure} | {t.measured} | {t.target} | {'yes' if t.met else 'no'} |" for t in report.targets]
    lines += [
        f"| observation time | median {report.observe_ms.median:.1f} ms, p95 {report.observe_ms.p95:.1f} ms "
        "| | |",
        f"| act time | median {report.act_ms.median:.1f} ms, p95 {report.act_ms.p95:.1f} ms | | |",
        f"| step overhead p95 | {report.step_overhead_ms.p95:.1f} ms | | |",
        f"| visual-settle wait on catalog pages | median {report.visual_settle_ms.median:.2f} ms, "
        f"p95 {report.visual_settle_ms.p95:.2f} ms | | |",
    ]
    if report.observation_tokens_ratio is not None:
        lines.append(f"| observation size in {report.tokenizer} tokens (n={report.observation_tokens_ratio.n} pages) | "
                     f"median {report.observation_tokens_ratio.median:.2f} x the ai snapshot's, p95 "
                     f"{report.observation_tokens_ratio.p95:.2f} x (characters: median "
                     f"{report.observation_chars_ratio.median:.2f} x) | | |")
    if report.replay_setup_s is not None:
        lines.append(f"| replay, once per process before its first episode (app, templates) | "
                     f"{report.replay_setup_s:.2f} s | | |")
    for name, split in (("steps that load a page", report.page_load_step_ms),
                        ("steps within a page", report.in_page_step_ms)):
        if split is not None:
            lines.append(f"| {name} (n={split.n}) | median {split.median:.1f} ms, p95 {split.p95:.1f} ms | | |")
    lines += [
        f"| floor: {f.kind} (n={f.n}) | {f.ratio:.2f}{f.interval} x bare Playwright ({f.adapter_ms:.1f} ms against "
        f"{f.floor_ms:.1f} ms){_snapshot(f)} | {_target(f)} | "
        f"{_met(f)} |"
        for f in report.floor
    ]
    lines += [
        f"| concurrency {level.concurrency} | {level.episodes_per_minute:.1f} episodes/min, "
        f"peak {level.peak_rss_mib:.0f} MiB, identical results: {'yes' if level.identical_to_first_level else 'NO'}"
        " | | |"
        for level in report.levels
    ]
    if report.executors is not None:
        lines += executor_markdown(report.executors)
    return "\n".join(lines)


def executors_markdown(report: ExecutorsReport) -> str:
    """`bench --only executors --markdown`: its target and figures as a table (docs/scale.md's, rendered from the
    committed docs/bench/executors.json)."""
    machine = report.machine
    lines = [
        f"Measured {report.created_at} on {machine.get('cpus')} CPUs / {machine.get('memory_gib')} GiB, "
        f"Chromium {machine.get('chromium')}, {report.executors.local.episodes} SCRIPTED episodes per executor.",
        "",
        "| figure | measured | target | met |",
        "|---|---|---|---|",
        *[f"| {t.figure} | {t.measured} | {t.target} | {'yes' if t.met else 'no'} |" for t in report.targets],
        *executor_markdown(report.executors),
    ]
    return "\n".join(lines)


def executor_markdown(figures: ExecutorFigures) -> list[str]:
    """Table rows of the executor part (the target row is among the targets)."""
    model = figures.scaling
    runs = [
        f"| {run.executor} executor, {run.workers} {'workers' if run.executor == 'ray' else 'at once'} | "
        f"{run.steady_episodes_per_minute:.1f} episodes/min steady, {run.episodes_per_minute:.1f} with its "
        f"{run.startup_s:.1f} s start-up ({run.episodes} episodes) | | |"
        for run in (figures.local, figures.ray)
    ]
    predicted = ", ".join(f"{p.nodes}: {p.episodes_per_minute:.0f}" for p in model.points)
    return [
        *runs,
        f"| driver admission per episode | mean {model.admit_s * 1000:.2f} ms, p95 {model.admit_p95_ms:.2f} ms "
        f"(at most {model.driver_cap_per_minute:.0f} episodes/min) | | |",
        f"| MODEL, not measured: episodes/min by nodes of {model.workers_per_node} workers | {predicted}; the driver "
        f"bounds it from {model.driver_bound_from} nodes | | |",
    ]


def _snapshot(figure: FloorFigures) -> str:
    if figure.ai_snapshot_ratio is None:
        return ""
    return (f"; {figure.ai_snapshot_ratio:.2f}{_snapshot_interval(figure)} x the ai snapshot "
            f"({figure.ai_snapshot_ms:.1f} ms)")


def _target(figure: FloorFigures) -> str:
    return f"at most {AI_SNAPSHOT_TARGET} x the ai snapshot" if figure.kind in _OBSERVATIONS else \
        f"at most {FLOOR_TARGET} x"


def _met(figure: FloorFigures) -> str:
    if figure.kind in _OBSERVATIONS:
        met = figure.ai_snapshot_ratio is not None and figure.ai_snapshot_ratio <= AI_SNAPSHOT_TARGET
        return "yes" if met else "no"
    return "yes" if figure.ratio <= FLOOR_TARGET else "no"


def write_bench(path: Path, report: BenchReport | ExecutorsReport) -> None:
    """Write the figures atomically: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
