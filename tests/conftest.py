"""Shared fixtures: one headless Chromium for the whole test session, and the fixture-page server; the tiers of
tests/tiers.py applied."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, serve_fixture_site
from hypothesis import HealthCheck, settings
from playwright.async_api import Browser, BrowserType, async_playwright
from tiers import cpu_figure, examples, session_figure

from adapter.browser import launch_browser

# Property tests run on a shared 2-core machine: wall-clock limits per example would fail by chance, not by
# defect. The examples themselves are the same with any timing.
# Examples per property test: tests/tiers.py (the whole count in CI, a fraction in the inner loop).
settings.register_profile("computerops", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          max_examples=examples(100))
settings.load_profile("computerops")

BROWSER_FIXTURE = "browser"
REAL_MODEL_FIXTURE = "real_model"
MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")
"""Seconds per module measured in a CI run, for the order in which test runners are handed modules (below)."""
MODULE_SECONDS_OUT = "COMPUTEROPS_MODULE_SECONDS_OUT"
"""Where a run writes its own seconds per module in that file's format (refresh the file with it)."""
MODULE_SECONDS_FORMAT = 1


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _measured_seconds() -> dict[str, float]:
    data = json.loads(MODULE_SECONDS.read_text(encoding="utf-8"))
    if data.get("format_version") != MODULE_SECONDS_FORMAT:
        raise pytest.UsageError(f"{MODULE_SECONDS}: format_version {data.get('format_version')!r}, "
                                f"expected {MODULE_SECONDS_FORMAT}")
    return {str(module): float(seconds) for module, seconds in data["seconds"].items()}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the browser fixture, directly or through another fixture, and every slow test is a browser
    test, and every
    test that uses the real_model fixture (tests/test_real_model.py) a real_model test. Under
    pytest-xdist (`--dist loadgroup`) a module's tests stay on one worker, so its module fixtures are built once,
    unless a test is marked `spread`: its cases go to whichever worker is free.

    Modules are then ordered slowest first by tests/module_seconds.json (a module it does not list counts as quick;
    order within a module and among quick modules is kept): pytest-xdist hands each worker the next module in this
    order (`--no-loadscope-reorder`, scripts/test.sh), so the slow modules start early and the quick ones even out
    the end, instead of a 5-minute module starting last on one worker while the other idles (longest first).
    Only the order changes, never which tests run."""
    for item in items:
        uses_browser = BROWSER_FIXTURE in getattr(item, "fixturenames", ())
        # The slow tier is whole-catalog work in Chromium: a slow test is a browser test too, so the inner loop
        # `-m "not browser ..."` (which replaces addopts' `-m 'not slow'`) leaves it out as well.
        if (uses_browser or item.get_closest_marker("slow") is not None) and item.get_closest_marker("browser") is None:
            item.add_marker(pytest.mark.browser)
        if REAL_MODEL_FIXTURE in getattr(item, "fixturenames", ()) and item.get_closest_marker("real_model") is None:
            item.add_marker(pytest.mark.real_model)
        if item.get_closest_marker("spread") is None:
            item.add_marker(pytest.mark.xdist_group(_module(item.nodeid)))
    seconds = _measured_seconds()
    items.sort(key=lambda item: -seconds.get(_module(item.nodeid), 0.0))  # stable: modules stay whole


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist, the controller generates the catalog's published instances once, on as many processes as
    there are workers, before the workers start (computerops/catalog/warming.py): each worker's collection then reads
    them (tasks/instance_cache.py) instead of every worker generating all of them at once."""
    _SESSION.update(began=_now(), load=_load())
    _CPU.update(began=_cpu())
    config = session.config
    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not isinstance(workers, int) or workers < 1:
        return
    from computerops.catalog.warming import warm_published

    warmed = warm_published(workers)
    config.get_terminal_writer().line(f"published instances kept for the workers: {warmed.instances} "
                                      f"({warmed.failed} failed) in {warmed.seconds:.1f}s on {workers} processes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test outside the browser tier whose setup, call or teardown launches Chromium in this process fails, naming
    the marker it lacks, so `pytest -m "not browser"` stays the quick tier. (A test that runs the CLI in a
    subprocess is marked by hand: tests/tiers.py.)"""
    if item.get_closest_marker("browser") is not None:
        yield
        return
    launch, persistent = BrowserType.launch, BrowserType.launch_persistent_context

    async def refused(*_: Any, **__: Any) -> Any:
        pytest.fail(f"{item.nodeid} launches Chromium: mark it @pytest.mark.browser (tests/tiers.py)")

    BrowserType.launch = refused  # type: ignore[method-assign]
    BrowserType.launch_persistent_context = refused  # type: ignore[method-assign]
    try:
        yield
    finally:
        BrowserType.launch, BrowserType.launch_persistent_context = launch, persistent  # type: ignore[method-assign]


_MODULE_SECONDS: dict[str, float] = {}
"""Seconds per test module (setup, call and teardown of its tests), for the CI budget's summary below."""
_RUN: set[str] = set()
"""The tests whose body ran (a call phase reported), for the session's figure."""
_SESSION: dict[str, float] = {}
"""When the session began (monotonic) and the machine's 1-minute load average then."""


def _now() -> float:
    return time.monotonic()


def _load() -> float:
    """The machine's 1-minute load average."""
    return os.getloadavg()[0]


_CPU: dict[str, tuple[float, float]] = {}
"""The machine's CPU seconds (busy, all) when the session began."""


def _cpu() -> tuple[float, float]:
    """The machine's CPU seconds since boot, busy and in all (idle and waiting on I/O are not busy): how much of the
    machine a session kept busy says whether more test workers would use it (scripts/test.sh)."""
    import psutil

    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    total = sum(times)
    return total - idle, total


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = _module(report.nodeid)
    _MODULE_SECONDS[module] = _MODULE_SECONDS.get(module, 0.0) + report.duration
    if report.when == "call":
        _RUN.add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The slowest modules: CI has a 30-minute budget on a 2-core machine, and a module's tests share its runs, so
    its total (not one test's) is what a change to the budget moves."""
    if not _MODULE_SECONDS:
        return
    terminalreporter.section("slowest modules")
    for module, seconds in sorted(_MODULE_SECONDS.items(), key=lambda item: -item[1])[:25]:
        terminalreporter.write_line(f"{seconds:8.1f}s {module}")
    terminalreporter.write_line(f"{sum(_MODULE_SECONDS.values()):8.1f}s in all ({len(_MODULE_SECONDS)} modules)")
    if _CPU:
        (busy_then, all_then), (busy_now, all_now) = _CPU["began"], _cpu()
        terminalreporter.write_line(cpu_figure(busy_now - busy_then, all_now - all_then, os.cpu_count() or 0))
    if _SESSION:  # the session's figure, collection included: README.md's inner-loop time is read from it
        terminalreporter.write_line(session_figure(
            len(_RUN), _now() - _SESSION["began"], os.cpu_count() or 0, (_SESSION["load"], _load()),
            time.strftime("%Y-%m-%d", time.gmtime())))
    out = os.environ.get(MODULE_SECONDS_OUT)
    if out and not hasattr(terminalreporter.config, "workerinput"):  # the controller's totals, not a worker's share
        measured = dict(sorted(((m, round(s, 1)) for m, s in _MODULE_SECONDS.items()), key=lambda item: -item[1]))
        Path(out).write_text(json.dumps({"format_version": MODULE_SECONDS_FORMAT, "seconds": measured}, indent=1)
                             + "\n", encoding="utf-8")
        terminalreporter.write_line(f"seconds per module written to {out}")


@pytest_asyncio.fixture(loop_scope="session", scope="session")
async def browser() -> AsyncIterator[Browser]:
    """A real Chromium. A missing Chromium is an error, not a skip: `scripts/setup.sh` installs one."""
    async with async_playwright() as playwright:
        chromium = await launch_browser(playwright)
        yield chromium
        await chromium.close()


@pytest.fixture(scope="module")
def site() -> Iterator[FixtureSite]:
    """The fixture pages on a loopback port, recording every request (tests/fixture_site.py)."""
    with serve_fixture_site() as fixture_site:
        yield fixture_site
