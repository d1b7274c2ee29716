"""Protocol round trips per step kind: how many messages the adapter's step sends to Playwright's driver (and through
it to Chromium) against bare Playwright doing the same action on the same element and reading the page.

A round trip is one message of the Python client to Playwright's driver that expects an answer (a Playwright call:
`Frame.evaluateExpression`, `Mouse.click`, `CDPSession.send` of one CDP command, ...); the client waits for each, so
on a loaded machine a step's cost grows with its count. The count is exact and machine-independent, unlike the
floor's times (computerops/bench/floor.py), whose cases, pages and controls it reuses: the step is the same `act` +
`observe` the floor times, and the floor the same Playwright call + `page.content()`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page
from pydantic import BaseModel, ConfigDict

from adapter.actions import Navigate
from adapter.driver import PageDriver
from computerops.bench.floor import _CSS_PATH, CASES, PREFIX, StepKind, _Case, _find, fixture_browser

FORMAT = "computerops.roundtrips/1"
_NO_REPLY = frozenset({"__waitInfo__"})
"""Messages the driver never answers: no round trip."""


class RoundTripFigures(BaseModel):
    """One step kind's round trips: the adapter's and bare Playwright's, and what the adapter's were."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = FORMAT
    kind: StepKind
    page: str
    adapter: int
    """Round trips of the adapter's `act` + `observe`."""
    floor: int
    """Round trips of the Playwright call + `page.content()`."""
    calls: dict[str, int]
    """The adapter's round trips by call (`CDPSession.send Runtime.callFunctionOn`, `Mouse.click`, ...)."""


class RoundTripLog:
    """The round trips sent on one Playwright connection while it counts."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    @property
    def count(self) -> int:
        return sum(self.calls.values())

    def record(self, owner: Any, method: str, params: Any) -> None:
        if method in _NO_REPLY:
            return
        command = params.get("method") if isinstance(params, dict) and method == "send" else None
        self.calls[f"{owner._type}.{method}" + (f" {command}" if command else "")] += 1


@contextmanager
def counting(page: Page) -> Iterator[RoundTripLog]:
    """Count every round trip of the page's Playwright connection (all its pages and sessions) while inside."""
    connection: Any = page._impl_obj._connection  # the one object every Playwright call of this client goes through
    log = RoundTripLog()
    send: Callable[..., Any] = connection.send_message_to_server

    def counted(owner: Any, method: str, params: Any, options: dict[str, Any]) -> Any:
        log.record(owner, method, params)
        return send(owner, method, params, options)

    connection.send_message_to_server = counted
    try:
        yield log
    finally:
        del connection.send_message_to_server  # the class's method again


async def _case_round_trips(case: _Case, driver: PageDriver, bare: Page, origin: str) -> RoundTripFigures:
    """The case's step counted once on a warm page: the page opened, a step taken and opened again first (a first
    step on a new page pays one-time costs, as the floor's uncounted first pair does)."""
    url = origin + PREFIX + case.page
    adapter = floor = 0
    calls: Counter[str] = Counter()
    for number in (1, 3):
        opened = await driver.act(Navigate(url=PREFIX + case.page), number)
        if not opened.ok:
            raise RuntimeError(f"round trips: {case.page} did not open: {opened.rejection}")
        observation = await driver.observe()
        control_id, target = "", url
        if case.role is not None:
            control_id = _find(observation, case.role, case.name)
            selector = await driver.evaluate_on(control_id, _CSS_PATH)
            if not isinstance(selector, str):
                raise RuntimeError(f"round trips: no selector for {case.role} {case.name!r}")
            target = selector
        await bare.goto(url, wait_until="domcontentloaded")
        with counting(driver.page) as log:
            outcome = await driver.act(case.action(control_id), number + 1)
            await driver.observe()
        if not outcome.ok:
            raise RuntimeError(f"round trips: {case.kind} on {case.page} was refused: {outcome.rejection}")
        with counting(bare) as bare_log:
            await case.floor(bare, target)
            await bare.content()
        adapter, floor, calls = log.count, bare_log.count, log.calls
    return RoundTripFigures(kind=case.kind, page=case.page, adapter=adapter, floor=floor, calls=dict(calls))


async def _observation_round_trips(driver: PageDriver, bare: Page, origin: str, page: str) -> RoundTripFigures:
    """An observation of a document already observed once (the first reads its listeners: counted in the steps)."""
    opened = await driver.act(Navigate(url=PREFIX + page), 1)
    if not opened.ok:
        raise RuntimeError(f"round trips: {page} did not open: {opened.rejection}")
    await driver.observe()
    await bare.goto(origin + PREFIX + page, wait_until="domcontentloaded")
    with counting(driver.page) as log:
        await driver.observe()
    with counting(bare) as bare_log:
        await bare.content()
    return RoundTripFigures(kind="observation", page=page, adapter=log.count, floor=bare_log.count,
                            calls=dict(log.calls))


OBSERVATION_PAGE = "forms.html"
"""The page whose repeated observation is counted."""


async def bench_round_trips(browser: Browser, directory: Path, progress: Callable[[str], None],
                            *, kinds: tuple[StepKind, ...] | None = None) -> list[RoundTripFigures]:
    """Every floor step kind (or those named) counted once, adapter and bare Playwright; [] without the fixture pages
    (an installed package has none)."""
    if not (directory / OBSERVATION_PAGE).is_file():
        progress(f"round trips: no fixture pages at {directory}")
        return []
    figures: list[RoundTripFigures] = []
    async with fixture_browser(browser, directory) as pages:
        for case in CASES:
            if kinds is None or case.kind in kinds:
                figures.append(await _case_round_trips(case, pages.driver, pages.bare, pages.origin))
        if kinds is None or "observation" in kinds:
            figures.append(await _observation_round_trips(pages.driver, pages.bare, pages.origin, OBSERVATION_PAGE))
    for figure in figures:
        progress(f"  round trips {figure.kind}: adapter {figure.adapter}, bare Playwright {figure.floor}")
    return figures
