"""`python -m computerops.server.screenshots OUT_DIR`: a PNG of each page of the operator server (docs/server/*.png).

Two small scripted runs are made through the service layer in a temp runs folder (the same calls as
`computerops run`), the server is started over it on a loopback port, and Chromium saves each page, full page at a
fixed viewport: the runs list with the launch form, a run, an episode (its first MAX_HEIGHT_PX), the two runs
compared, and the login page of a server with a token. `capture` also takes an existing runs folder (the tests')."""

from __future__ import annotations

import asyncio
import queue
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from playwright.async_api import Browser, Page, async_playwright

from computerops.server.settings import ServerSettings

VIEWPORT = {"width": 1280, "height": 900}
MAX_HEIGHT_PX = 3200
"""A page taller than this (an episode's steps) is saved down to here only."""
TASKS = "helpdesk.solve-ticket@1,helpdesk.answer-escalation-queue@1"
RUN_A = "oracle"
RUN_B = "false-finish"
"""The two runs `main` makes, named by their scripted policy: every episode of A passes, every one of B claims a
success its verdict refutes."""
LOGIN_TOKEN = "screenshot-token"
PAGES = ("runs.png", "run.png", "episode.png", "compare.png", "login.png")


def make_runs(runs: Path) -> None:
    """Run RUN_A and RUN_B into `runs` through the service layer (nothing printed)."""
    from computerops.service.launch import RunRequest, launch, plan_run
    for run_id in (RUN_A, RUN_B):
        request = RunRequest(tasks=TASKS, endpoint=f"scripted:{run_id}")
        launch(plan_run(request, runs / run_id), lambda _: None)


@contextmanager
def serving(settings: ServerSettings) -> Iterator[str]:
    """The operator server over `settings` on a free loopback port, in a thread with its own event loop (so a
    caller's loop, or blocking code, never stalls it); yields its origin. On exit its live jobs are interrupted."""
    from computerops.runs.serving import serve_app
    from computerops.server.app import create_server_app
    from computerops.server.state import ServerState
    state = ServerState.start(settings)
    app = create_server_app(settings, state)
    started: queue.Queue[str | BaseException] = queue.Queue()
    stop = threading.Event()

    async def serve() -> None:
        try:
            async with serve_app(app) as origin:
                started.put(origin)
                while not stop.is_set():
                    await asyncio.sleep(0.05)
        except BaseException as exc:
            started.put(exc)
            raise

    thread = threading.Thread(target=lambda: asyncio.run(serve()), name="operator-server", daemon=True)
    thread.start()
    try:
        first = started.get(timeout=30)
        if isinstance(first, BaseException):
            raise RuntimeError(f"the operator server did not start: {first!r}") from first
        yield first
    finally:
        stop.set()
        thread.join(timeout=30)
        state.close()


async def _save(page: Page, path: Path) -> Path:
    height = await page.evaluate("document.documentElement.scrollHeight")
    await page.screenshot(path=str(path), full_page=True, animations="disabled",
                          clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": min(int(height), MAX_HEIGHT_PX)})
    return path


async def capture(browser: Browser, runs: Path, out: Path, run_a: str = RUN_A, run_b: str = RUN_B) -> list[Path]:
    """Save PAGES of a server over `runs` (runs `run_a` and `run_b` complete, in it) into `out`; each server started
    here keeps its index in a temp folder, so a server already serving `runs` is left alone."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="computerops-screenshots-") as scratch:
        open_settings = ServerSettings(runs=runs, database=f"sqlite:///{Path(scratch) / 'open.sqlite'}")
        token_settings = ServerSettings(runs=runs, token=LOGIN_TOKEN,
                                        database=f"sqlite:///{Path(scratch) / 'token.sqlite'}")
        with serving(open_settings) as origin:
            context = await browser.new_context(viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]})
            try:
                page = await context.new_page()
                await page.goto(f"{origin}/")
                written.append(await _save(page, out / "runs.png"))
                await page.goto(f"{origin}/runs/{quote(run_a)}")
                written.append(await _save(page, out / "run.png"))
                await page.locator("table#episodes tbody a").first.click()
                await page.wait_for_selector("table#checks")
                written.append(await _save(page, out / "episode.png"))
                await page.goto(f"{origin}/compare?a={quote(run_a)}&b={quote(run_b)}")
                written.append(await _save(page, out / "compare.png"))
            finally:
                await context.close()
        with serving(token_settings) as origin:
            context = await browser.new_context(viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]})
            try:
                page = await context.new_page()
                await page.goto(f"{origin}/")  # redirected to the login page
                await page.wait_for_selector("#token")
                written.append(await _save(page, out / "login.png"))
            finally:
                await context.close()
    return written


async def _capture_with_chromium(runs: Path, out: Path) -> list[Path]:
    from adapter.browser import launch_browser
    async with async_playwright() as playwright:
        browser = await launch_browser(playwright)
        try:
            return await capture(browser, runs, out)
        finally:
            await browser.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m computerops.server.screenshots OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[1])
    with tempfile.TemporaryDirectory(prefix="computerops-screenshot-runs-") as folder:
        runs = Path(folder)
        make_runs(runs)
        written = asyncio.run(_capture_with_chromium(runs, out))
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
