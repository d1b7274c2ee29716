"""Page script cannot rewrite what the model is told, nor where its actions land.

The annotation and every id lookup run in an isolated JavaScript world (adapter/world.py). Hostile pages
(tests/fixtures/pages/forge-*.html, and the forgeries of forge-overrides.js applied to ordinary fixture pages)
rewrite prototypes, globals and the adapter's old state object in the page's own world: the observation must be
exactly the one of the same page without the hostile script, and clicks, fills, selects and checks must reach the
element the model chose.
"""

from __future__ import annotations

import random
import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import PAGES, FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser, Route

from adapter.actions import Check, Click, Fill, Press, Select
from adapter.driver import PageDriver
from adapter.observation import Observation
from adapter.world import world_of

browser_test = pytest.mark.browser
FORGERY_SOURCE = (PAGES / "forge-overrides.js").read_text(encoding="utf-8")
FORGERIES = re.findall(r"^    (\w+): \(w\) =>", FORGERY_SOURCE, flags=re.MULTILINE)
HOSTILE_SCRIPTS = re.compile(r'<script id="hostile[^"]*"[^>]*>.*?</script>', flags=re.DOTALL)
FORGE_PAGES = sorted(p.name for p in PAGES.glob("forge-*.html") if p.name != "forge-marker.html")
BASE_PAGES = ("components.html", "fidelity-clickables.html", "forms.html", "fidelity-graphics.html",
              "fidelity-styled-away.html", "widgets.html", "inputs.html", "frames.html")
"""Ordinary fixture pages the forgeries are applied to: frames, shadow roots, clickables, every input type."""


def test_the_forgery_catalogue_is_read_whole() -> None:
    assert len(FORGERIES) >= 20 and len(set(FORGERIES)) == len(FORGERIES)
    assert {"getAttribute", "computedStyle", "arrays", "json", "maps", "fakeState", "remapIds"} <= set(FORGERIES)


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=1_000_000) as page_driver:
        yield page_driver


async def open_variant(driver: PageDriver, name: str, *, forgeries: list[str] | None = None,
                       clean: bool = False) -> Observation:
    """Load a fixture page as it is, without its hostile scripts (`clean`), or with `forgeries` applied at the end
    of its body; then observe it."""
    source = (PAGES / name).read_text(encoding="utf-8")
    if clean:
        source = HOSTILE_SCRIPTS.sub("", source)
    if forgeries is not None:
        injected = f'<script src="/site/forge-overrides.js"></script><script>forgeEverywhere({forgeries!r});</script>'
        source = source.replace("</body>", injected + "</body>") if "</body>" in source else source + injected
    url = f"{driver.origin}/site/{name}"

    async def serve(route: Route) -> None:
        await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=source)

    await driver.page.route(url, serve)
    try:
        await driver.page.goto(url, wait_until="load")
    finally:
        await driver.page.unroute(url, serve)
    return await driver.observe()


async def log_text(driver: PageDriver) -> str:
    """The page's #log, read where page script cannot forge it."""
    return str(await world_of(driver.page).evaluate("() => document.getElementById('log').textContent"))


# --- The observation ---------------------------------------------------------------------------


@browser_test
@pytest.mark.parametrize("name", FORGE_PAGES)
async def test_a_hostile_page_is_observed_as_it_is_without_its_script(driver: PageDriver, name: str) -> None:
    clean = await open_variant(driver, name, clean=True)
    hostile = await open_variant(driver, name)
    assert hostile == clean
    assert "Forged" not in hostile.text and "forged" not in hostile.text
    assert await driver.observe() == clean  # and again, after the page's timers had their go


@browser_test
@pytest.mark.parametrize("forgery", FORGERIES)
@pytest.mark.parametrize("base", ("components.html", "fidelity-clickables.html", "forms.html"))
async def test_no_single_forgery_changes_the_observation(driver: PageDriver, base: str, forgery: str) -> None:
    clean = await open_variant(driver, base)
    assert await open_variant(driver, base, forgeries=[forgery]) == clean


def _forgery_sets(count: int, seed: int) -> list[tuple[str, list[str]]]:
    """Every base page with every forgery at once, then random subsets on random pages (seeded)."""
    chooser = random.Random(seed)
    cases = [(base, list(FORGERIES)) for base in BASE_PAGES]
    for _ in range(count):
        cases.append((chooser.choice(BASE_PAGES), chooser.sample(FORGERIES, chooser.randint(2, len(FORGERIES) - 1))))
    return cases


@browser_test
@pytest.mark.parametrize(("base", "forgeries"), _forgery_sets(12, seed=13))
async def test_no_combination_of_forgeries_changes_the_observation(
    driver: PageDriver, base: str, forgeries: list[str]
) -> None:
    clean = await open_variant(driver, base)
    assert await open_variant(driver, base, forgeries=forgeries) == clean, forgeries


@browser_test
async def test_the_page_cannot_see_the_adapters_state(driver: PageDriver) -> None:
    observation = await open_page(driver, "forms.html")
    assert observation.controls
    leaked = await driver.page.evaluate(
        "() => [typeof window.__computerops, Object.keys(window).filter((k) => k.includes('computerops'))]")
    assert leaked == ["undefined", []]


# --- Actions land on the element the model chose ---------------------------------------------------


@browser_test
async def test_clicks_reach_the_chosen_button_while_the_page_remaps_ids(driver: PageDriver) -> None:
    observation = await open_variant(driver, "forge-ids.html")
    for number, (name, element_id) in enumerate((("Delete draft", "first"), ("Send draft", "third"),
                                                 ("Keep draft", "second")), start=1):
        outcome = await driver.act(Click(id=named(observation, name).id), number)
        assert outcome.ok, outcome.rejection
        assert await log_text(driver) == f"Clicked: {element_id}"


@browser_test
async def test_fills_reach_the_chosen_field_while_the_page_remaps_ids(driver: PageDriver) -> None:
    observation = await open_variant(driver, "forge-ids.html")
    assert (await driver.act(Fill(id=named(observation, "Copy to").id, text="ada@example.test"), 1)).ok
    after = await driver.observe()
    assert named(after, "Copy to").value == "ada@example.test" and named(after, "Recipient").value == ""


@browser_test
async def test_every_action_works_on_a_page_that_rewrites_everything(driver: PageDriver) -> None:
    observation = await open_variant(driver, "forge-prototypes.html")
    assert (await driver.act(Fill(id=named(observation, "Order number").id, text="B-200"), 1)).ok
    assert (await driver.act(Select(id=named(observation, "Reason").id, option="Wrong size"), 2)).ok
    assert (await driver.act(Check(id=named(observation, "Urgent").id), 3)).ok
    assert (await driver.act(Press(id=named(observation, "Note").id, key="End"), 4)).ok
    assert (await driver.act(Click(id=named(observation, "Reject").id), 5)).ok
    assert await log_text(driver) == "Clicked: reject"
    assert (await driver.act(Click(id=named(observation, "Clickable card").id), 6)).ok
    assert await log_text(driver) == "Clicked: card"
    assert (await driver.act(Click(id=named(observation, "Shadow button").id), 7)).ok
    assert await log_text(driver) == "Clicked: shadow"
    assert (await driver.act(Click(id=named(observation, "Framed button").id), 8)).ok
    after = await driver.observe()
    assert named(after, "Order number").value == "B-200"
    assert named(after, "Reason").value == "Wrong size"
    assert named(after, "Urgent").checked is True
    assert named(after, "Framed clicked").role == "button"
    assert [c.id for c in after.controls] == [c.id for c in observation.controls]  # ids held through it all


@browser_test
@pytest.mark.parametrize("forgeries", [["formState"], ["formState", "evaluation", "maps", "arrays", "json"]])
async def test_what_a_fill_reports_is_read_where_the_page_cannot_forge_it(
    driver: PageDriver, forgeries: list[str]
) -> None:
    observation = await open_variant(driver, "forms.html", forgeries=forgeries)
    subject = named(observation, "Subject *")
    outcome = await driver.act(Fill(id=subject.id, text="Printer on fire"), 1)
    assert outcome.ok and "holds" not in outcome.note and "forged" not in outcome.note, outcome  # it holds the text
    amount = named(observation, "Amount (EUR)")
    refused = await driver.act(Fill(id=amount.id, text="twelve"), 2)
    assert refused.rejection is not None and "number" in refused.rejection.reason
    assert named(await driver.observe(), "Subject *").value == "Printer on fire"


@browser_test
@pytest.mark.parametrize("mode", ["move", "copy"])
async def test_a_page_that_steals_the_marker_gets_no_action_at_all(driver: PageDriver, mode: str) -> None:
    observation = await open_page(driver, "forge-marker.html")
    await world_of(driver.page).evaluate("(mode) => { document.getElementById('mode').value = mode; }", mode)
    # A Playwright handle is found by a one-time marker (adapter/world.py `element`, used by the fidelity audit): a
    # stolen marker gives no handle at all, never the decoy's.
    amount = named(observation, "Amount")
    assert await driver.element(amount.id) is None
    # press sets no marker (it focuses the field in the isolated world and presses): there is nothing to steal
    assert (await driver.act(Press(id=amount.id, key="End"), 1)).ok
    values = await world_of(driver.page).evaluate(
        "() => [document.getElementById('amount').value, document.getElementById('decoy').value]")
    assert values == ["10", ""]  # the decoy was neither focused nor typed into
    # fill sets no marker (it selects the field in the isolated world and types): there is nothing to steal
    assert (await driver.act(Fill(id=named(observation, "Amount").id, text="99"), 2)).ok
    values = await world_of(driver.page).evaluate(
        "() => [document.getElementById('amount').value, document.getElementById('decoy').value]")
    assert values == ["99", ""]


# --- The world's lifetime -------------------------------------------------------------------------


@browser_test
async def test_ids_hold_within_a_document_and_start_afresh_with_a_new_one(driver: PageDriver) -> None:
    first = await open_page(driver, "forms.html")
    await driver.page.evaluate("() => history.pushState({}, '', '#moved')")  # the same document
    assert (await driver.observe()).controls == first.controls
    await driver.page.reload(wait_until="load")  # a new document, and so a new world
    assert await driver.element(first.controls[0].id) is None  # an id of the old document names nothing
    assert await driver.click_point(first.controls[0].id) is None
    again = await driver.observe()
    assert [c.id for c in again.controls] == [c.id for c in first.controls]
    assert (await driver.act(Fill(id=named(again, "Requester email").id, text="grace@example.test"), 1)).ok


@browser_test
async def test_a_world_lost_with_its_document_is_made_again(driver: PageDriver) -> None:
    world = world_of(driver.page)
    await open_page(driver, "forms.html")
    before = await world.evaluate("() => window.__computerops.token")
    await driver.page.goto(f"{driver.origin}/site/table.html", wait_until="load")
    assert await world.evaluate("() => typeof window.__computerops") == "undefined"  # a fresh world
    assert (await driver.observe()).controls
    assert await world.evaluate("() => window.__computerops.token") != before
