"""The floor of `computerops bench`: each kind of step the adapter takes, against bare Playwright doing the same
action on the same element and reading the page, measured in the same run, interleaved.

For each step kind a fixture page and one of its controls are chosen; each repetition opens the page fresh in the
adapter's page (a contained context, as an episode's) and in a bare Playwright page (a plain context), untimed,
then times, one right after the other:

* the adapter: `act` + `observe` (its check, the action, its settle and the next observation);
* the floor: the same action through a Playwright locator on the same element (a CSS selector computed from the
  control's element before timing) + `page.content()`.

The two halves of a pair run one right after the other, in turn: the adapter first in even repetitions, the floor
first in odd ones, so neither always gets the warmer caches or the quieter moment. The figure is the ratio of the
medians (median adapter time / median floor time, the two medians the table prints), with a 95% percentile
bootstrap interval over the pairs (`computerops.core.stats.ratio_of_medians`). Observation is measured the same
way on every fidelity fixture page and on the catalog pages the bench crawls (computerops/bench/measure.py): the
adapter's `observe` against `page.content()` and against Playwright's ai snapshot (`page.aria_snapshot(mode="ai")`,
what `observe --compare` shows), each triple on the same page, in a rotating order. A page's first observation after
it starts (a new page, a new renderer: the annotation's first run) is measured apart, against Playwright's first ai
snapshot of a new page and, beside it, a warm ai snapshot of the same page.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from playwright.async_api import Browser, Page
from pydantic import BaseModel, ConfigDict
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from adapter.acting import ActionOutcome
from adapter.actions import Action, Check, Click, Fill, Navigate, Press, Select
from adapter.containment import contain
from adapter.driver import PageDriver
from adapter.observation import Observation, format_control
from adapter.scope import SiteScope
from computerops.core.stats import ratio_of_medians
from computerops.runs.serving import serve_app

StepKind = Literal["click", "fill", "select", "check", "press", "page-loading click", "navigate", "observation",
                   "first observation", "catalog observation"]
FLOOR_TARGET = 1.2
"""Every step kind at most this many times bare Playwright doing the same (the issue's target)."""
AI_SNAPSHOT_TARGET = 1.0
"""Observation at most as long as Playwright's ai snapshot of the same page."""
PREFIX = "/site/"

# A CSS selector naming an element by its place in its document (ids where unique): computed in the isolated
# world from a control's element, used on the bare page opened at the same URL.
_CSS_PATH = """(e) => {
  if (!e || e.ownerDocument !== document) return null;
  const parts = [];
  for (let n = e; n && n !== document.documentElement; n = n.parentElement) {
    if (n.id && document.querySelectorAll("#" + CSS.escape(n.id)).length === 1) {
      parts.unshift("#" + CSS.escape(n.id));
      return parts.join(" > ");
    }
    let k = 1;
    for (let s = n.previousElementSibling; s; s = s.previousElementSibling) if (s.localName === n.localName) k++;
    parts.unshift(`${n.localName}:nth-of-type(${k})`);
  }
  return ["html", ...parts].join(" > ");
}"""


class FloorFigures(BaseModel):
    """One step kind against its floor, paired repetition by repetition."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: StepKind
    page: str
    """The fixture page (or pages, for observation) it was measured on."""
    control: str
    """The control acted on, as the observation shows it (empty for observation and navigate)."""
    n: int
    adapter_ms: float
    """Median adapter time: act + observe (observe alone for observation)."""
    floor_ms: float
    """Median floor time: the Playwright action + page.content() (page.content() alone for observation)."""
    ratio: float
    """adapter_ms / floor_ms: the ratio of the medians (before bench/5: the median of the paired ratios)."""
    ratio_low: float | None = None
    ratio_high: float | None = None
    """The ratio's 95% percentile bootstrap interval, pairs resampled (None before bench/5)."""
    ai_snapshot_ms: float | None = None
    """Observation only: median time of Playwright's ai snapshot of the same pages."""
    ai_snapshot_ratio: float | None = None
    """Observation only: observe_ms / ai_snapshot_ms, the ratio of the medians."""
    ai_snapshot_low: float | None = None
    ai_snapshot_high: float | None = None
    """Observation only: that ratio's 95% bootstrap interval (None before bench/5)."""
    adapter_first: int | None = None
    """Pairs in which the adapter's half ran first (about half of n; None before bench/5, when it always did)."""

    @property
    def interval(self) -> str:
        """The ratio's interval as the table prints it, or nothing where none was measured."""
        return "" if self.ratio_low is None or self.ratio_high is None else \
            f" [{self.ratio_low:.2f}, {self.ratio_high:.2f}]"


@dataclass(frozen=True)
class _Case:
    kind: StepKind
    page: str
    role: str | None
    """The control acted on: its role and name in the observation (None: no control)."""
    name: str
    action: Callable[[str], Action]
    """The adapter's action on that control id."""
    floor: Callable[[Page, str], Awaitable[object]]
    """Bare Playwright doing the same, given the element's selector (or the page's URL for navigate)."""


async def _page_load_click(page: Page, selector: str) -> None:
    await page.locator(selector).click()
    await page.wait_for_load_state("domcontentloaded")


async def _goto(page: Page, url: str) -> None:
    await page.goto(url, wait_until="domcontentloaded")


CASES: tuple[_Case, ...] = (
    _Case("click", "forms.html", "button", "Preview", lambda i: Click(id=i),
          lambda p, s: p.locator(s).click()),
    _Case("fill", "forms.html", "textbox", "Subject *", lambda i: Fill(id=i, text="Printer jammed again"),
          lambda p, s: p.locator(s).fill("Printer jammed again")),
    _Case("select", "forms.html", "combobox", "Priority", lambda i: Select(id=i, option="High"),
          lambda p, s: p.locator(s).select_option(label="High")),
    _Case("check", "forms.html", "checkbox", "VIP customer", lambda i: Check(id=i, checked=True),
          lambda p, s: p.locator(s).check()),
    _Case("press", "forms.html", "textbox", "Subject *", lambda i: Press(id=i, key="End"),
          lambda p, s: p.locator(s).press("End")),
    _Case("page-loading click", "links.html", "link", "Plain text link", lambda i: Click(id=i), _page_load_click),
    _Case("navigate", "links.html", None, "", lambda _: Navigate(url=PREFIX + "table.html"), _goto),
)


def _find(observation: Observation, role: str, name: str) -> str:
    for control in observation.controls:
        if control.role == role and control.name == name:
            return control.id
    raise RuntimeError(f"floor: no {role} {name!r} on {observation.url}")


def paired_figures(kind: StepKind, page: str, control: str, adapter: Sequence[float], floor: Sequence[float],
                   snapshot: Sequence[float] = (), *, adapter_first: int | None = None) -> FloorFigures:
    """The ratios of the medians of paired samples, each with its bootstrap interval."""
    step = ratio_of_medians(adapter, floor)
    seen = ratio_of_medians(adapter, snapshot) if snapshot else None
    return FloorFigures(
        kind=kind, page=page, control=control, n=len(adapter), adapter_ms=round(statistics.median(adapter), 2),
        floor_ms=round(statistics.median(floor), 2), ratio=round(step.ratio, 3), ratio_low=round(step.low, 3),
        ratio_high=round(step.high, 3),
        ai_snapshot_ms=round(statistics.median(snapshot), 2) if snapshot else None,
        ai_snapshot_ratio=round(seen.ratio, 3) if seen else None, ai_snapshot_low=round(seen.low, 3) if seen else None,
        ai_snapshot_high=round(seen.high, 3) if seen else None, adapter_first=adapter_first,
    )


async def timed_in_turn(halves: Sequence[Callable[[], Awaitable[object]]], turn: int) -> list[float]:
    """Each half timed in ms, one right after the other, starting from half `turn % len(halves)` and going round;
    the times come back in the order the halves were given."""
    times = [0.0] * len(halves)
    for offset in range(len(halves)):
        index = (turn + offset) % len(halves)
        began = time.perf_counter()
        await halves[index]()
        times[index] = _ms(began)
    return times


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


def _step_halves(case: _Case, driver: PageDriver, bare: Page, action: Action, number: int, target: str,
                 outcomes: list[ActionOutcome]) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
    """The adapter's half of a pair (act + observe, its outcome added to `outcomes`) and the floor's (the same action
    through Playwright + page.content())."""
    async def adapter_half() -> None:
        outcomes.append(await driver.act(action, number))
        await driver.observe()

    async def floor_half() -> None:
        await case.floor(bare, target)
        await bare.content()

    return adapter_half, floor_half


async def _step_case(case: _Case, driver: PageDriver, bare: Page, origin: str, repeats: int) -> FloorFigures:
    url = origin + PREFIX + case.page
    adapter_times: list[float] = []
    floor_times: list[float] = []
    control = ""
    number = 0
    for turn in range(repeats + 1):  # the first pair warms both pages up and is not counted
        number += 1
        opened = await driver.act(Navigate(url=PREFIX + case.page), number)
        if not opened.ok:
            raise RuntimeError(f"floor: {case.page} did not open: {opened.rejection}")
        observation = await driver.observe()
        target = url
        control_id = ""
        if case.role is not None:
            control_id = _find(observation, case.role, case.name)
            found = observation.control(control_id)
            control = format_control(found) if found is not None else ""
            selector = await driver.evaluate_on(control_id, _CSS_PATH)
            if not isinstance(selector, str):
                raise RuntimeError(f"floor: no selector for {case.role} {case.name!r}")
            target = selector
        await bare.goto(url, wait_until="domcontentloaded")
        number += 1
        outcomes: list[ActionOutcome] = []
        halves = _step_halves(case, driver, bare, case.action(control_id), number, target, outcomes)
        adapter_ms, floor_ms = await timed_in_turn(halves, turn)
        if not outcomes[0].ok:
            raise RuntimeError(f"floor: {case.kind} on {case.page} was refused: {outcomes[0].rejection}")
        adapter_times.append(adapter_ms)
        floor_times.append(floor_ms)
    return paired_figures(case.kind, case.page, control, adapter_times[1:], floor_times[1:],
                          adapter_first=len(range(2, repeats + 1, 2)))


async def _observation_case(driver: PageDriver, pages: Sequence[str], repeats: int) -> FloorFigures:
    observe: list[float] = []
    content: list[float] = []
    snapshot: list[float] = []
    number = 10_000
    for name in pages:
        number += 1
        opened = await driver.act(Navigate(url=PREFIX + name), number)
        if not opened.ok:
            raise RuntimeError(f"floor: {name} did not open: {opened.rejection}")
        await driver.observe()  # the first observation of a document reads its listeners: timed in the steps
        for _ in range(repeats):
            times = await observation_triple(driver, len(observe))
            for samples, value in zip((observe, content, snapshot), times, strict=True):
                samples.append(value)
    return paired_figures("observation", f"{len(pages)} fidelity fixture pages", "", observe, content, snapshot,
                          adapter_first=len(range(0, len(observe), 3)))


async def _first_observation_case(browser_pages: Callable[[], Awaitable[tuple[PageDriver, Page]]], origin: str,
                                  pages: Sequence[str], repeats: int) -> FloorFigures:
    """A page's first observation after it starts: each repetition opens a new adapter page (`PageDriver.start`) and
    a new bare page on the same fixture page, untimed, then times the adapter's first `observe` against the bare
    page's first ai snapshot (Playwright's own first look at a new document), in turn; the ai snapshot of the
    adapter's page right after, warm, is the `ai_snapshot` beside them (what "first observation = N x the ai
    snapshot" compares)."""
    first: list[float] = []
    bare_first: list[float] = []
    warm: list[float] = []
    for name in pages:
        for _ in range(repeats):
            driver, bare = await browser_pages()
            try:
                await driver.start(PREFIX + name)
                await bare.goto(origin + PREFIX + name, wait_until="domcontentloaded")

                async def observe(driver: PageDriver = driver) -> None:
                    await driver.observe()

                async def snapshot(bare: Page = bare) -> None:
                    await bare.aria_snapshot(mode="ai")

                adapter_ms, floor_ms = await timed_in_turn((observe, snapshot), len(first))
                began = time.perf_counter()
                await driver.page.aria_snapshot(mode="ai")
                warm.append(_ms(began))
                first.append(adapter_ms)
                bare_first.append(floor_ms)
            finally:
                await driver.page.close()
                await bare.close()
    return paired_figures("first observation", f"{len(pages)} fidelity fixture pages", "", first, bare_first, warm,
                          adapter_first=len(range(0, len(first), 2)))


async def observation_triple(driver: PageDriver, turn: int) -> list[float]:
    """The adapter's observation, page.content() and the ai snapshot of the page as it stands, timed in ms in a
    rotating order (`timed_in_turn`)."""
    async def observe() -> None:
        await driver.observe()

    async def content() -> None:
        await driver.page.content()

    async def snapshot() -> None:
        await driver.page.aria_snapshot(mode="ai")

    return await timed_in_turn((observe, content, snapshot), turn)


@dataclass(frozen=True)
class FixtureBrowser:
    """The fixture pages served on loopback under PREFIX, an adapter page in a contained context (as an episode's)
    and a bare Playwright page in a plain one; `new_pages` opens another pair."""

    origin: str
    driver: PageDriver
    bare: Page
    new_pages: Callable[[], Awaitable[tuple[PageDriver, Page]]]


@asynccontextmanager
async def fixture_browser(browser: Browser, directory: Path) -> AsyncIterator[FixtureBrowser]:
    """The fixture pages of `directory` served, and the two browser contexts on them (closed after)."""
    app = Starlette(routes=[Mount(PREFIX.rstrip("/"), app=StaticFiles(directory=directory))])
    async with serve_app(app) as origin:
        contained = await contain(browser, SiteScope(origin, PREFIX), base_url=origin)
        plain = await browser.new_context()
        try:
            async def new_pages() -> tuple[PageDriver, Page]:
                return (PageDriver(await contained.new_page(), origin=origin, site_prefix=PREFIX,
                                   max_chars=1_000_000), await plain.new_page())

            driver, bare = await new_pages()
            yield FixtureBrowser(origin, driver, bare, new_pages)
        finally:
            await plain.close()
            await contained.close()


async def bench_floor(browser: Browser, directory: Path, repeats: int, progress: Callable[[str], None],
                      *, kinds: Sequence[StepKind] | None = None) -> list[FloorFigures]:
    """Every step kind (or those named) against its floor, `repeats` paired repetitions each; [] without the
    fixture pages (an installed package has none)."""
    fidelity = sorted(path.name for path in directory.glob("fidelity-*.html")) if directory.is_dir() else []
    if not fidelity:
        progress(f"floor: no fixture pages at {directory}")
        return []
    figures: list[FloorFigures] = []
    async with fixture_browser(browser, directory) as pages:
        driver, bare, origin = pages.driver, pages.bare, pages.origin
        for case in CASES:
            if kinds is not None and case.kind not in kinds:
                continue
            figure = await _step_case(case, driver, bare, origin, repeats)
            figures.append(figure)
            progress(f"  floor {figure.kind}: {figure.ratio:.2f}{figure.interval} x bare Playwright (adapter "
                     f"{figure.adapter_ms:.1f} ms, floor {figure.floor_ms:.1f} ms, n={figure.n})")
        if kinds is None or "observation" in kinds:
            figure = await _observation_case(driver, fidelity, repeats)
            figures.append(figure)
            progress(f"  floor observation: {figure.ratio:.2f} x page.content(), {figure.ai_snapshot_ratio:.2f} x "
                     f"the ai snapshot (n={figure.n})")
        if kinds is None or "first observation" in kinds:
            figure = await _first_observation_case(pages.new_pages, origin, fidelity, 1)
            figures.append(figure)
            progress(f"  floor first observation: {figure.ratio:.2f}{figure.interval} x Playwright's first ai "
                     f"snapshot of a new page, {figure.ai_snapshot_ratio:.2f} x a warm one (n={figure.n})")
    return figures
