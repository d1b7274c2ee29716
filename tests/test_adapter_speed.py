"""What made steps cheaper stays sound: the listener read kept per document (adapter/world.py), fill and select
without a Playwright handle (adapter/driver.py), and the settle that waits for script-driven fades as well as CSS
animations without slowing a still page (adapter/stability.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser, Request

from adapter.actions import Click, Fill, Select
from adapter.driver import PageDriver
from adapter.stability import SCRIPT_QUIET_MS, Stillness, wait_for_visual_stability
from adapter.world import IsolatedWorld

pytestmark = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=1_000_000) as page_driver:
        yield page_driver


@pytest.fixture
def listener_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts Chromium listener-table reads."""
    reads: list[int] = []
    original = IsolatedWorld._listening

    async def counted(self: IsolatedWorld) -> tuple[list[tuple[int, str]], bool, bool]:
        reads.append(1)
        return await original(self)

    monkeypatch.setattr(IsolatedWorld, "_listening", counted)
    return reads


async def test_the_listener_read_is_kept_while_the_document_does_not_change(
    driver: PageDriver, listener_reads: list[int],
) -> None:
    await open_page(driver, "fidelity-clickables.html")
    listener_reads.clear()
    for _ in range(3):
        await driver.observe()
    assert len(listener_reads) == 0  # read once for the document (at open_page's observation), then kept


async def test_a_row_added_with_a_listener_after_the_first_observation_is_offered(
    driver: PageDriver, listener_reads: list[int],
) -> None:
    observation = await open_page(driver, "fidelity-clickables.html")
    assert not any(c.name == "Row added later" for c in observation.controls)
    listener_reads.clear()
    await driver.page.evaluate("""() => {
      const row = document.createElement("div");
      row.textContent = "Row added later";
      row.addEventListener("click", () => { row.textContent = "Row added later (opened)"; });
      document.body.append(row);
    }""")
    observation = await driver.observe()
    assert listener_reads == [1]  # the DOM changed: Chromium is asked again
    row = named(observation, "Row added later")
    assert (await driver.act(Click(id=row.id), 1)).ok
    assert "Row added later (opened)" in (await driver.observe()).text


async def test_a_listener_added_to_a_node_that_was_already_there_shows_after_the_next_dom_change(
    driver: PageDriver,
) -> None:
    """The documented limit of the kept read: a listener added with no DOM change is seen at the next change."""
    await open_page(driver, "fidelity-clickables.html")
    await driver.page.evaluate("""() => {
      const note = document.createElement("div");
      note.id = "late"; note.textContent = "Late listener";
      document.body.append(note);
    }""")
    assert not any(c.name == "Late listener" for c in (await driver.observe()).controls)
    await driver.page.evaluate("() => document.getElementById('late').addEventListener('click', () => {})")
    assert not any(c.name == "Late listener" for c in (await driver.observe()).controls)  # kept: not seen yet
    await driver.page.evaluate("() => document.body.append(document.createElement('span'))")
    named(await driver.observe(), "Late listener")


async def test_fill_and_select_find_no_playwright_handle(driver: PageDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    async def refused(self: IsolatedWorld, *_: object) -> None:
        raise AssertionError("fill and select must not look up a Playwright handle")

    monkeypatch.setattr(IsolatedWorld, "element", refused)
    observation = await open_page(driver, "forms.html")
    assert (await driver.act(Fill(id=named(observation, "Subject *").id, text="Jammed"), 1)).ok
    assert (await driver.act(Select(id=named(observation, "Priority").id, option="High"), 2)).ok
    assert (await driver.act(Fill(id=named(observation, "Due date").id, text="2024-06-01"), 3)).ok
    observation = await driver.observe()
    assert named(observation, "Subject *").value == "Jammed"
    assert named(observation, "Priority").value == "High"
    assert named(observation, "Due date").value == "2024-06-01"
    held = await driver.page.evaluate("() => [document.activeElement.id, document.getElementById('priority').value]")
    assert held == ["due", "high"]


async def test_a_menu_that_fades_out_by_animation_frames_is_gone_from_the_next_observation(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "fidelity-script-fade.html")
    assert (await driver.act(Click(id=named(observation, "Actions").id), 1)).ok
    observation = await driver.observe()
    assert (await driver.act(Click(id=named(observation, "Rename report").id), 2)).ok
    observation = await driver.observe()
    assert not any(c.name in ("Rename report", "Archive report") for c in observation.controls), observation.text
    assert "Done" in observation.text


async def test_a_dialog_that_fades_in_by_interval_is_in_the_next_observation(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-script-fade.html")
    assert (await driver.act(Click(id=named(observation, "Share report").id), 1)).ok
    observation = await driver.observe()
    named(observation, "Email")
    named(observation, "Close share")
    opacity = await driver.page.evaluate("() => getComputedStyle(document.getElementById('dialog')).opacity")
    assert opacity == "1"


async def test_a_still_page_pays_no_wait_for_script_motion(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-script-fade.html")  # the observation arms the watch
    still = await wait_for_visual_stability(driver.page, after_a_task=True)
    assert still == Stillness(waited_ms=0.0, unfinished=0)  # nothing changed: not even a frame is waited for
    await driver.page.evaluate("() => { document.getElementById('status').textContent = 'Saved'; }")
    once = await wait_for_visual_stability(driver.page, after_a_task=True)
    assert once.unfinished == 0 and 0 < once.waited_ms < SCRIPT_QUIET_MS  # a change, no motion: one frame looked at


async def test_a_navigation_whose_request_the_browser_makes_late_is_still_waited_for(
    browser: Browser, site: FixtureSite, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The settle's round trips are all through the renderer; a navigation's request is made by the browser
    process, on its own time. Here the click's handler submits a form from a zero-delay timer and the request event
    reaches the driver 0.25 s late (the POST itself takes 0.7 s): the top frame's loading, which the renderer
    announces, keeps the settle waiting until the new page is in. Without that wait the step reports no navigation."""
    original = PageDriver._request_started

    def late(self: PageDriver, request: Request) -> None:
        if request.is_navigation_request() and request.method == "POST":
            asyncio.get_running_loop().call_later(0.25, original, self, request)
        else:
            original(self, request)

    monkeypatch.setattr(PageDriver, "_request_started", late)
    async with fixture_driver(browser, site) as late_driver:
        observation = await open_page(late_driver, "dialogs.html")
        outcome = await late_driver.act(Click(id=named(observation, "Send in a moment").id), 1)
        assert outcome.ok and outcome.navigated
        after = await late_driver.observe()
        assert after.url == "/site/submit?note=slow" and "note: slow" in after.text
