"""The floor of `computerops bench`: each kind of step the adapter takes, against bare Playwright doing the same
action on the same element and reading the page, measured in the same run, interleaved.

For each step kind a fixture page and one of its controls are chosen; each repetition opens the page fresh in the
adapter's page (a contained context, as an episode's) and in a bare Playwright page (a plain context), untimed,
then times, one right after the other:

* the adapter: `act` + `observe` (its check, the action, its settle and the next observation);
* the floor: the same action through a Playwright locator on the same element (a CSS selector computed from the
  control's element before timing) + `page.content()`.

The figure is the median of the paired ratios (adapter / floor of the same repetition), so machine load shared by
the two halves of a pair cancels. Observation is measured the same way on every fidelity fixture page: the
adapter's `observe` against `page.content()` and against Playwright's ai snapshot (`page.aria_snapshot(mode="ai")`,
what `observe --compare` shows), each pair on the same page.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from playwright.async_api import Browser, Page
from pydantic import BaseModel, ConfigDict
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from adapter.actions import Action, Check, Click, Fill, Navigate, Press, Select
from adapter.containment import contain
from adapter.driver import PageDriver
from adapter.observation import Observation, format_control
from adapter.scope import SiteScope
from computerops.runs.serving import serve_app

StepKind = Literal["click", "fill", "select", "check", "press", "page-loading click", "navigate", "observation"]
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
    """Median of the paired ratios adapter / floor."""
    ai_snapshot_ms: float | None = None
    """Observation only: median time of Playwright's ai snapshot of the same pages."""
    ai_snapshot_ratio: float | None = None
    """Observation only: median of the paired ratios observe / ai snapshot."""


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
             snapshot: Sequence[float] = ()) -> FloorFigures:
    return FloorFigures(
        kind=kind, page=page, control=control, n=len(adapter), adapter_ms=round(statistics.median(adapter), 2),
        floor_ms=round(statistics.median(floor), 2),
        ratio=round(statistics.median(a / max(f, 1e-3) for a, f in zip(adapter, floor, strict=True)), 3),
        ai_snapshot_ms=round(statistics.median(snapshot), 2) if snapshot else None,
        ai_snapshot_ratio=round(statistics.median(a / max(s, 1e-3) for a, s in zip(adapter, snapshot, strict=True)),
                                3) if snapshot else None,
    )


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


async def _step_case(case: _Case, driver: PageDriver, bare: Page, origin: str, repeats: int) -> FloorFigures:
    url = origin + PREFIX + case.page
    adapter_times: list[float] = []
    floor_times: list[float] = []
    control = ""
    number = 0
    for _ in range(repeats + 1):  # the first pair warms both pages up and is not counted
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
        began = time.perf_counter()
        outcome = await driver.act(case.action(control_id), number)
        await driver.observe()
        adapter_ms = _ms(began)
        if not outcome.ok:
            raise RuntimeError(f"floor: {case.kind} on {case.page} was refused: {outcome.rejection}")
        began = time.perf_counter()
        await case.floor(bare, target)
        await bare.content()
        floor_ms = _ms(began)
        adapter_times.append(adapter_ms)
        floor_times.append(floor_ms)
    return paired_figures(case.kind, case.page, control, adapter_times[1:], floor_times[1:])


async def _observation_case(driver: PageDriver, pages: Sequence[str], repeats: int) -> FloorFigures:
    observe, content, snapshot = [], [], []
    number = 10_000
    for name in pages:
        number += 1
        opened = await driver.act(Navigate(url=PREFIX + name), number)
        if not opened.ok:
            raise RuntimeError(f"floor: {name} did not open: {opened.rejection}")
        await driver.observe()  # the first observation of a document reads its listeners: timed in the steps
        for _ in range(repeats):
            began = time.perf_counter()
            await driver.observe()
            observe.append(_ms(began))
            began = time.perf_counter()
            await driver.page.content()
            content.append(_ms(began))
            began = time.perf_counter()
            await driver.page.aria_snapshot(mode="ai")
            snapshot.append(_ms(began))
    return paired_figures("observation", f"{len(pages)} fidelity fixture pages", "", observe, content, snapshot)


async def bench_floor(browser: Browser, directory: Path, repeats: int, progress: Callable[[str], None],
                      *, kinds: Sequence[StepKind] | None = None) -> list[FloorFigures]:
    """Every step kind (or those named) against its floor, `repeats` paired repetitions each; [] without the
    fixture pages (an installed package has none)."""
    fidelity = sorted(path.name for path in directory.glob("fidelity-*.html")) if directory.is_dir() else []
    if not fidelity:
        progress(f"floor: no fixture pages at {directory}")
        return []
    app = Starlette(routes=[Mount(PREFIX.rstrip("/"), app=StaticFiles(directory=directory))])
    figures: list[FloorFigures] = []
    async with serve_app(app) as origin:
        contained = await contain(browser, SiteScope(origin, PREFIX), base_url=origin)
        plain = await browser.new_context()
        try:
            driver = PageDriver(await contained.new_page(), origin=origin, site_prefix=PREFIX, max_chars=1_000_000)
            bare = await plain.new_page()
            for case in CASES:
                if kinds is not None and case.kind not in kinds:
                    continue
                figure = await _step_case(case, driver, bare, origin, repeats)
                figures.append(figure)
                progress(f"  floor {figure.kind}: {figure.ratio:.2f} x bare Playwright (adapter "
                         f"{figure.adapter_ms:.1f} ms, floor {figure.floor_ms:.1f} ms, n={figure.n})")
            if kinds is None or "observation" in kinds:
                figure = await _observation_case(driver, fidelity, repeats)
                figures.append(figure)
                progress(f"  floor observation: {figure.ratio:.2f} x page.content(), {figure.ai_snapshot_ratio:.2f} x "
                         f"the ai snapshot (n={figure.n})")
        finally:
            await plain.close()
            await contained.close()
    return figures
