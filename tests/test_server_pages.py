"""The operator server's pages in Chromium (computerops/server/pages.py): a run launched from the form on / followed to
its end on its page, a bad form refused inline with nothing started, an episode opened from the run's table with its
verdict's checks and receipt, two runs compared, and the token login; and the screenshots command's PNGs.

One server over one runs folder serves the module: two runs of two scripted episodes each (one launched from the
form, one through the API) are shared by every test."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, BrowserContext, Page, expect

from computerops.server.screenshots import MAX_HEIGHT_PX, PAGES, capture, serving
from computerops.server.settings import STATE, ServerSettings

TASKS = "helpdesk.solve-ticket@1,helpdesk.answer-escalation-queue@1"
FORM_RUN = "from-the-form"
API_RUN = "from-the-api"
WAIT_MS = 120_000
"""The bound on a run reaching its end (two scripted episodes take a few seconds; CI's 2 cores are slow)."""
PNG = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Server:
    origin: str
    runs: Path


@dataclass(frozen=True)
class Launched:
    """What the form's launch showed: the run page's status and count at the end, and every count it showed."""

    server: Server
    status: str
    count: str
    counts_seen: list[str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    runs = tmp_path_factory.mktemp("server-pages")
    with serving(ServerSettings(runs=runs)) as origin:
        yield Server(origin, runs)


async def new_page(browser: Browser) -> tuple[BrowserContext, Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    return context, await context.new_page()


def wait_for_end(origin: str, run_id: str, timeout_s: float = WAIT_MS / 1000) -> dict[str, object]:
    """Poll the API until no job writes `run_id`; the run's detail."""
    deadline = time.monotonic() + timeout_s
    while True:
        detail: dict[str, object] = httpx.get(f"{origin}/api/runs/{run_id}", timeout=10).json()
        job = detail.get("job")
        if isinstance(job, dict) and job["state"] != "running":
            return detail
        assert time.monotonic() < deadline, f"run {run_id} did not end within {timeout_s} s: {detail}"
        time.sleep(0.2)


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def launched(browser: Browser, server: Server) -> AsyncIterator[Launched]:
    """FORM_RUN launched from the form on / (oracle, concurrency 2) and followed on its page to the end; API_RUN
    (false-finish) launched through the API alongside it."""
    response = httpx.post(f"{server.origin}/api/runs", timeout=30,
                          json={"run_id": API_RUN, "tasks": TASKS, "endpoint": "scripted:false-finish"})
    assert response.status_code == 202, response.text
    context, page = await new_page(browser)
    try:
        counts: list[str] = []  # every count the run page's bar shows, as it shows it
        await page.expose_function("seen", lambda count: counts.append(count))
        await page.add_init_script("""new MutationObserver(function () {
            var count = document.querySelector('#progress .count'); if (count) { window.seen(count.textContent); }
        }).observe(document, {subtree: true, childList: true, characterData: true});""")
        await page.goto(f"{server.origin}/")
        await page.fill("#run_id", FORM_RUN)
        await page.fill("#tasks", TASKS)
        await page.fill("#endpoint", "scripted:oracle")
        await page.fill("#concurrency", "2")
        async with page.expect_navigation(url=f"**/runs/{FORM_RUN}"):
            await page.click("#launch-button")
        await expect(page.locator("#status")).to_have_text("complete", timeout=WAIT_MS)
        status = await page.locator("#status").inner_text()
        count = await page.locator("#progress .count").inner_text()
    finally:
        await context.close()
    wait_for_end(server.origin, API_RUN)
    yield Launched(server, status, count, counts)


def test_a_run_launched_from_the_form_is_followed_to_its_end_on_its_page(launched: Launched) -> None:
    assert launched.status == "complete"
    assert launched.count == "2/2"  # planned/planned
    assert launched.counts_seen[-1] == "2/2"
    admitted = [int(count.split("/")[0]) for count in launched.counts_seen]
    assert admitted == sorted(admitted)  # never backwards, across the live updates and the reload
    assert {count.split("/")[1] for count in launched.counts_seen} == {"2"}
    manifest = json.loads((launched.server.runs / FORM_RUN / "manifest.json").read_text())
    assert manifest["config"]["tasks"] == TASKS.split(",")
    assert manifest["config"]["endpoint"]["kind"] == "scripted"
    assert manifest["execution"]["concurrency"] == 2
    detail = httpx.get(f"{launched.server.origin}/api/runs/{FORM_RUN}", timeout=10).json()
    assert detail["job"]["exit_code"] == 0
    assert (detail["run"]["admitted"], detail["run"]["verified"]) == (2, 2)


BAD_FORMS = [
    pytest.param({"run_id": "bad-endpoint", "endpoint": "scripted:no-such-policy"}, 422, "no-such-policy",
                 id="unknown-policy"),
    pytest.param({"run_id": "bad-task", "tasks": "helpdesk.no-such-task"}, 422, "helpdesk.no-such-task",
                 id="unknown-task"),
    pytest.param({"run_id": FORM_RUN}, 409, FORM_RUN, id="existing-run"),
]


@pytest.mark.parametrize(("fields", "status", "named"), BAD_FORMS)
async def test_a_bad_form_is_refused_inline_and_starts_nothing(browser: Browser, launched: Launched,
                                                               fields: dict[str, str], status: int,
                                                               named: str) -> None:
    server = launched.server
    before = sorted(p.name for p in server.runs.iterdir())
    jobs_before = sorted(p.name for p in (server.runs / STATE / "jobs").iterdir())
    form = {"tasks": TASKS, "endpoint": "scripted:oracle", **fields}
    context, page = await new_page(browser)
    try:
        await page.goto(f"{server.origin}/")
        for name, value in form.items():
            await page.fill(f"#{name}", value)
        async with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/runs")) as info:
            await page.click("#launch-button")
        response = await info.value
        assert response.status == status
        errors = page.locator("#launch-errors")
        await expect(errors).to_contain_text(named)
        assert await page.input_value("#run_id") == form["run_id"]  # the form comes back as filled
    finally:
        await context.close()
    assert sorted(p.name for p in server.runs.iterdir()) == before  # no run folder
    assert sorted(p.name for p in (server.runs / STATE / "jobs").iterdir()) == jobs_before  # no job
    detail = httpx.get(f"{server.origin}/api/runs/{FORM_RUN}", timeout=10).json()
    assert detail["job"]["state"] == "exited"


async def test_an_episode_opened_from_the_run_page_shows_its_verdicts_checks_and_receipt(
        browser: Browser, launched: Launched) -> None:
    server = launched.server
    context, page = await new_page(browser)
    try:
        await page.goto(f"{server.origin}/runs/{FORM_RUN}")
        link = page.locator("table#episodes tbody a").first
        episode_id = await link.inner_text()
        await link.click()
        # The link quotes the episode id (an instance id's `@` is %40 in it): the page is the one it names.
        await page.wait_for_url(lambda url: unquote(urlsplit(url).path) == f"/runs/{FORM_RUN}/episodes/{episode_id}")
        verdict = json.loads((server.runs / FORM_RUN / "episodes" / episode_id / "verdict.json").read_text())
        names = [check["name"] for check in verdict["checks"]]
        assert names
        checks = page.locator("table#checks tbody tr")
        await expect(checks).to_have_count(len(names))
        shown = await page.locator("table#checks tbody tr td:first-child").all_inner_texts()
        assert shown == names
        await expect(page.locator("p#receipt strong")).to_have_text("PASS")
        await expect(page.locator("#outcome")).to_contain_text("verified_success")
        assert await page.locator("section.step").count() >= 1
        downloads = await page.locator("#downloads a").all_inner_texts()
        assert "verdict.json" in downloads
    finally:
        await context.close()


async def test_the_compare_page_names_the_changed_tasks_and_why(browser: Browser, launched: Launched) -> None:
    server = launched.server
    context, page = await new_page(browser)
    try:
        await page.goto(f"{server.origin}/compare")
        await page.select_option("#a", FORM_RUN)
        await page.select_option("#b", API_RUN)
        await page.click("#compare button")
        await expect(page.locator("#summary")).to_contain_text("2 changed outcome")
        rows = await page.locator("section#comparison table tbody tr").all()
        assert len(rows) == 2
        checks = {task: [c["name"] for c in json.loads((server.runs / API_RUN / "episodes" / episode /
                                                         "verdict.json").read_text())["checks"] if not c["passed"]]
                  for task, episode in _episodes(server.runs / API_RUN).items()}
        for row in rows:
            task, _, outcome_a, outcome_b, change, why = await row.locator("td").all_inner_texts()
            assert (outcome_a, outcome_b, change) == ("verified_success", "false_completion", "changed")
            assert any(why.startswith(f"{name}:") for name in checks[task]), (task, why)
        assert sorted(checks) == sorted(TASKS.split(","))
    finally:
        await context.close()


def _episodes(run: Path) -> dict[str, str]:
    """Task id -> episode id of a run with one episode per task."""
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]
    return {r["task_id"]: r["episode_id"] for r in records}


async def test_a_token_server_asks_for_its_token_on_a_login_page(browser: Browser, launched: Launched,
                                                                 tmp_path: Path) -> None:
    token = "right-token-for-the-pages"
    settings = ServerSettings(runs=launched.server.runs, token=token, database=f"sqlite:///{tmp_path / 'i.sqlite'}")
    with serving(settings) as origin:
        context, page = await new_page(browser)
        try:
            await page.goto(f"{origin}/runs/{FORM_RUN}")
            assert page.url.startswith(f"{origin}/login")
            await page.fill("#token", "wrong-token")
            async with page.expect_response(lambda r: r.request.method == "POST") as info:
                await page.click("button[type=submit]")
            assert (await info.value).status == 401
            await expect(page.locator("p.errors")).to_contain_text("not this server's token")
            assert await page.locator("table#episodes").count() == 0
            await page.fill("#token", token)
            await page.click("button[type=submit]")
            await page.wait_for_url(f"{origin}/runs/{FORM_RUN}")  # back where it was asked for
            await page.goto(f"{origin}/")
            await expect(page.locator("table#runs")).to_contain_text(FORM_RUN)
            assert httpx.get(f"{origin}/api/runs", timeout=10).status_code == 401  # the API wants the bearer
        finally:
            await context.close()


async def test_the_screenshot_command_saves_a_png_of_each_page(browser: Browser, launched: Launched,
                                                               tmp_path: Path) -> None:
    written = await capture(browser, launched.server.runs, tmp_path, FORM_RUN, API_RUN)
    assert [p.name for p in written] == list(PAGES)
    for name in PAGES:
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG), name
        width = int.from_bytes(data[16:20], "big")
        height = int.from_bytes(data[20:24], "big")
        assert width == 1280 and 0 < height <= MAX_HEIGHT_PX, (name, width, height)


LIVE_RUN = "watched-live"


async def test_a_live_run_updates_the_pages_in_place_and_keeps_what_the_operator_is_typing(
        browser: Browser, launched: Launched) -> None:
    """A run launched through the API is a run at once (its placeholder, never a 404 before its manifest), and the
    runs page follows it to its end without reloading: the table says complete, and what was typed into the launch
    form is still there. The run's own page, opened while it runs, fills its episodes table in place."""
    server = launched.server
    response = httpx.post(f"{server.origin}/api/runs", timeout=30,
                          json={"run_id": LIVE_RUN, "tasks": TASKS, "endpoint": "scripted:oracle"})
    assert response.status_code == 202, response.text
    at_once = httpx.get(f"{server.origin}/api/runs/{LIVE_RUN}", timeout=10)
    assert at_once.status_code == 200, at_once.text  # before its worker wrote anything
    assert at_once.json()["run"]["status"] in ("starting", "running", "complete")
    context, page = await new_page(browser)
    run_context, run_page = await new_page(browser)
    try:
        await page.goto(f"{server.origin}/")
        await run_page.goto(f"{server.origin}/runs/{LIVE_RUN}")
        await page.evaluate("window.notReloaded = true")
        await run_page.evaluate("window.notReloaded = true")
        await page.fill("#tasks", "typed while the run goes on")
        await page.fill("#model", "a-model-name")
        await page.focus("#model")
        row = page.locator(f'#runs tr[data-run="{LIVE_RUN}"]')
        await expect(row.locator("td").nth(1)).to_have_text("complete", timeout=WAIT_MS)
        await expect(run_page.locator("#status")).to_have_text("complete", timeout=WAIT_MS)
        await expect(run_page.locator("#episodes tbody tr")).to_have_count(2)
        assert await page.evaluate("window.notReloaded") is True
        assert await run_page.evaluate("window.notReloaded") is True
        assert await page.input_value("#tasks") == "typed while the run goes on"
        assert await page.input_value("#model") == "a-model-name"
        assert await row.locator(".count").inner_text() == "2/2"
    finally:
        await context.close()
        await run_context.close()
    wait_for_end(server.origin, LIVE_RUN)


FOCUSED_RUN = "watched-focused"


async def test_a_region_holding_the_focus_when_the_run_ends_is_refreshed_once_the_focus_leaves(
        browser: Browser, launched: Launched) -> None:
    """The operator tabbed to a link in the runs table while a run went on: the table is not replaced under the focus,
    and when the focus leaves it the table is refreshed (the run's end, not the table as the focus found it)."""
    from tasks import load_catalog
    seeds = load_catalog().templates["helpdesk.solve-ticket"].seeds[:6]  # long enough to focus the row while it runs
    tasks = ",".join(f"helpdesk.solve-ticket@{seed}" for seed in seeds)
    server = launched.server
    response = httpx.post(f"{server.origin}/api/runs", timeout=30,
                          json={"run_id": FOCUSED_RUN, "tasks": tasks, "endpoint": "scripted:oracle"})
    assert response.status_code == 202, response.text
    context, page = await new_page(browser)
    try:
        await page.goto(f"{server.origin}/")
        row = page.locator(f'#runs tr[data-run="{FOCUSED_RUN}"]')
        await row.locator("a").first.focus()
        assert await row.locator("td").nth(1).inner_text() != "complete", "the run ended before the test focused it"
        wait_for_end(server.origin, FOCUSED_RUN)
        await page.wait_for_timeout(3000)  # the end's refresh came (at most one copy every 2 s) and left the table
        assert await row.locator("td").nth(1).inner_text() != "complete"
        await page.focus("#model")  # the focus leaves the table
        await expect(row.locator("td").nth(1)).to_have_text("complete", timeout=WAIT_MS)
        assert await row.locator(".count").inner_text() == f"{len(seeds)}/{len(seeds)}"
    finally:
        await context.close()
