"""Pages as third parties write them (issue 25, "Fidelity"): what annotate.js offers and how it names it.

Each class has a fixture page (tests/fixtures/pages/fidelity-*.html, judged whole by tests/test_adapter_fidelity.py
and measured by `computerops bench`); these tests pin what the class is about, and each fails without its rule:
rows below the fold of a scrolling box, targets that hold other targets, a slider's focusable handle, text nobody
sees, icon-only targets, control characters in names, canvas and a terminal's hidden input.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from playwright.async_api import Browser
from tiers import examples

from adapter.actions import Click, Fill, Press, Select
from adapter.driver import PageDriver
from adapter.observation import Control, Observation, control_fields, format_control, parse_control_line
from adapter.world import world_of

browser_test = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=1_000_000) as page_driver:
        yield page_driver


async def page_text(driver: PageDriver, element_id: str) -> str:
    found = await world_of(driver.page).evaluate("(id) => document.getElementById(id).textContent", element_id)
    return str(found)


def clickable_names(observation: Observation) -> list[str]:
    return [c.name for c in observation.controls if c.role == "clickable"]


# --- 1. Clickables below the fold of a scrolling box --------------------------------------------------------------


@browser_test
async def test_rows_out_of_a_scrolling_box_s_view_are_offered_and_clicked(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-scroll-rows.html")
    names = clickable_names(observation)
    expected = ([f"Pinned {i}" for i in range(1, 9)] + [f"Message {i}" for i in range(1, 13)]
                + ["Outer row 1", "Outer row 2"] + [f"Inner row {i}" for i in range(1, 6)] + ["Outer row 3"]
                + [f"Chip {i}" for i in range(1, 7)] + [f"Menu item {i}" for i in range(1, 7)]
                + [f"Shadow row {i}" for i in range(1, 6)])
    assert names == expected
    # Below the fold of a list, of a box nested in one, sideways, low in a menu, in a shadow root, and scrolled up
    # above the page's origin: each click reaches its row.
    clicks = [("Message 12", "mail-12"), ("Inner row 5", "inner-5"), ("Chip 6", "chip-6"), ("Menu item 6", "menu-6"),
              ("Pinned 1", "top-1")]
    for step, (name, element) in enumerate(clicks, start=1):
        outcome = await driver.act(Click(id=named(observation, name).id), step)
        assert outcome.ok, (name, outcome.rejection)
        assert await page_text(driver, "log") == f"Clicked: {element}"


@browser_test
@pytest.mark.parametrize(("rows", "sideways"), [(1, False), (7, False), (40, False), (9, True)])
async def test_every_row_of_a_generated_scrolling_list_is_offered(
    driver: PageDriver, rows: int, sideways: bool
) -> None:
    box = ("width: 200px; overflow-x: auto; white-space: nowrap" if sideways else "height: 50px; overflow-y: auto")
    row = "display: inline-block; width: 90px" if sideways else "height: 24px"
    await driver.page.set_content(
        f"<p>Before</p><div style='{box}'>"
        + "".join(f"<div style='{row}' onclick='void 0'>Row {i}</div>" for i in range(1, rows + 1))
        + "</div><p>After the list, inside the window</p>")
    observation = await driver.observe()
    assert clickable_names(observation) == [f"Row {i}" for i in range(1, rows + 1)]


@browser_test
async def test_a_row_covered_where_it_shows_is_still_not_offered(driver: PageDriver) -> None:
    await driver.page.set_content("""
      <div style="position: relative; height: 60px; overflow-y: auto; width: 200px">
        <div style="height: 30px" onclick="void 0">Covered row</div>
        <div style="height: 90px" onclick="void 0">Tall row</div>
        <div style="position: absolute; top: 0; left: 0; width: 200px; height: 30px; background: #fff">Cover</div>
      </div>
      <div style="height: 40px; overflow: clip; width: 200px"><div style="height: 60px"></div>
        <div onclick="void 0">Clipped for good</div></div>""")
    assert clickable_names(await driver.observe()) == ["Tall row"]


# --- 2. An element with its own listener that holds other targets -------------------------------------------------


@browser_test
async def test_a_row_holding_icons_is_offered_without_their_names_and_opens(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-own-targets.html")
    names = clickable_names(observation)
    # icons titled "Star" and "Delete" are named by their titles, not their glyphs (issue 50)
    assert names[:6] == ["Quarterly report", "Star", "Delete", "Team lunch on Friday", "Star", "Delete"]
    assert "Invoice 4471 is overdue" in names and named(observation, "Archive").role == "button"
    assert any(n.startswith("Ada posted a photo") for n in names)  # a post in a feed, beside its buttons
    # Delegation stays delegation: the list's items, not the list; neither the app's root nor a dialog's backdrop.
    assert {"Item A", "Item B", "Item C"} <= set(names)
    assert not [n for n in names if "Item A Item B" in n or "application" in n or "backdrop" in n]
    for step, (name, element) in enumerate([("Team lunch on Friday", "row-2"), ("Invoice 4471 is overdue", "row-3")],
                                           start=1):
        assert (await driver.act(Click(id=named(observation, name).id), step)).ok
        assert await page_text(driver, "log") == f"Clicked: {element}"
    star = next(c for c in observation.controls if c.name == "Star")
    assert (await driver.act(Click(id=star.id), 3)).ok and await page_text(driver, "log") == "Clicked: star-1"
    # A row whose pin icon sits at its centre is still a target: clicked at a point of its own, not on the pin.
    assert (await driver.act(Click(id=named(observation, "Flight to Lisbon").id), 4)).ok
    assert await page_text(driver, "log") == "Clicked: row-4"
    assert (await driver.act(Click(id=named(observation, "Pin").id), 5)).ok
    assert await page_text(driver, "log") == "Clicked: pin-4"


OWN_XS = (0.5, 0.25, 0.75, 0.1, 0.9)
"""annotate.js's OWN_POINTS across a row's middle line (its points above and below the middle meet the same icons here,
which take the row's whole height)."""
ROW_WIDTH = 400


@st.composite
def icon_rows(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Icons across a 400 px row as (left, width) in px, in 20 px cells, not overlapping."""
    icons, cell = [], 0
    for _ in range(draw(st.integers(0, 4))):
        cell += draw(st.integers(0, 8))
        width = draw(st.integers(1, 6))
        if cell + width > ROW_WIDTH // 20:
            break
        icons.append((cell * 20, width * 20))
        cell += width
    return icons


@browser_test
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(icons=icon_rows())
@example(icons=[(180, 40)]).via("an icon at the centre")
@example(icons=[(0, 400)]).via("an icon over the whole row")
@example(icons=[(20, 20), (80, 60), (180, 40), (280, 60), (340, 60)]).via("icons on every own point but one")
async def test_a_row_holding_icons_is_a_target_where_a_point_of_its_own_is_and_is_clicked_there(
    driver: PageDriver, icons: list[tuple[int, int]],
) -> None:
    """The row is offered exactly when one of its own points (annotate.js OWN_POINTS) lies on no icon, and a click on
    it reaches the row, never an icon; each icon is still offered and clicked."""
    if driver.latest is None or driver.latest.url != "/site/fidelity-own-targets.html":
        await open_page(driver, "fidelity-own-targets.html")  # a page of the site, whose content is then replaced
    spans = "".join(f"<span id='icon-{i}' aria-label='Icon {i}' style='position: absolute; top: 0; height: 30px; "
                    f"left: {left}px; width: {width}px; cursor: pointer; background: #ddd'></span>"
                    for i, (left, width) in enumerate(icons))
    await driver.page.set_content(
        f"<p id='log'>none</p><div id='row' style='position: relative; width: {ROW_WIDTH}px; height: 30px'>"
        f"Row{spans}</div><script>{{ const log = document.getElementById('log');"  # a block: the page's globals stay
        "document.getElementById('row').addEventListener('click', () => { log.textContent = 'row'; });"
        "for (const icon of document.querySelectorAll('span')) icon.addEventListener('click', (e) => "
        "{ e.stopPropagation(); log.textContent = icon.id; }); }</script>")
    observation = await driver.observe()
    free = any(not any(left <= ROW_WIDTH * x < left + width for left, width in icons) for x in OWN_XS)
    names = clickable_names(observation)
    assert ("Row" in names) == free, (icons, names)
    assert sorted(n for n in names if n != "Row") == sorted(f"Icon {i}" for i in range(len(icons)))
    targets = [("Row", "row")] * free + [(f"Icon {i}", f"icon-{i}") for i in range(len(icons))]
    for step, (name, element) in enumerate(targets, start=1):
        outcome = await driver.act(Click(id=named(observation, name).id), step)
        assert outcome.ok, (name, outcome.rejection)
        assert await page_text(driver, "log") == element


# --- 3. A slider's focusable handle -------------------------------------------------------------------------------


@browser_test
async def test_a_slider_s_focusable_handle_is_offered_and_takes_the_keys(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-slider-handle.html")
    zoom = named(observation, "ui-slider-handle")
    assert (zoom.role, zoom.name_from) == ("clickable", "class")
    balance = named(observation, "Balance")
    assert named(observation, "Volume", role="slider")
    for step, (control, out, value) in enumerate([(zoom, "zoom-out", "11"), (balance, "balance-out", "51")], start=1):
        assert (await driver.act(Press(id=control.id, key="ArrowRight"), step)).ok
        assert await page_text(driver, out) == value


# --- 5. Text nobody sees ------------------------------------------------------------------------------------------


@browser_test
async def test_text_nobody_sees_is_neither_page_text_nor_a_name(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-hidden-text.html")
    assert "SPAM" not in observation.text
    for line in ("Price: 12 EUR", "Shown again at its own size", "Stock: 4 left", "Colour: blue", "Gradient headline"):
        assert line in observation.text.splitlines()
    assert [c.name for c in observation.controls] == ["Buy now", "Read more", "Open card", "Size", "Plan"]
    assert (await driver.act(Click(id=named(observation, "Open card").id), 1)).ok  # the act-time name agrees
    assert (await driver.act(Fill(id=named(observation, "Size").id, text="L"), 2)).ok


# --- 6. Icon-only targets -----------------------------------------------------------------------------------------


ICON_NAMES = [("reply-all", "file"), ("archive", "file"), ("print", "file"), ("trash-can", "class"),
              ("snooze-button", "class"), ("Forward", None), ("⇨", None), ("Mark as spam", None), ("Close", None),
              ("Pin", None), ("tool", "class"), ("settings", "class")]


@browser_test
async def test_icon_only_targets_are_named_by_file_or_class_marked_as_guesses(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-icon-names.html")
    assert [(c.name, c.name_from) for c in observation.controls] == ICON_NAMES
    assert '[1] clickable "reply-all" name-from=file' in observation.text.splitlines()
    assert (await driver.observe()).controls == observation.controls  # ids and names stay put
    trash = named(observation, "trash-can")
    assert (await driver.act(Click(id=trash.id), 1)).ok and await page_text(driver, "log") == "Clicked: t-fa"
    # A page that changes the icon changes the guess: the click is refused as a changed control.
    await driver.page.evaluate("() => document.querySelector('#t-fa i').className = 'fa fa-box-archive'")
    refused = await driver.act(Click(id=trash.id), 2)
    assert refused.rejection and '"box-archive"' in refused.rejection.reason


def test_a_guessed_name_is_marked_on_its_line_and_read_back() -> None:
    line = format_control(Control(id="4", role="clickable", name="star", name_from="class"))
    assert line == '[4] clickable "star" name-from=class'
    assert parse_control_line(line) == ("4", "clickable", "star")
    assert control_fields(line) == {"name-from": "class"}
    checked = format_control(Control(id="5", role="checkbox", name="x" * 300, name_from="file", checked=True))
    assert control_fields(checked) == {"name-from": "file", "checked": True}
    assert format_control(Control(id="6", role="button", name="OK", name_from="anything")) == '[6] button "OK"'


# --- 7. Control characters ----------------------------------------------------------------------------------------


@browser_test
async def test_control_characters_read_as_spaces_in_names_as_in_text_and_the_act_time_check_agrees(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "fidelity-control-chars.html")
    assert "Order 1001 is ready." in observation.text.splitlines()
    assert [c.name for c in observation.controls] == [
        "Pay now", "Terms and conditions", "Open ticket", "Send reply", "Assignee name", "Queue", "Close window now"]
    assert named(observation, "Queue").options == ["First line", "Billing and refunds"]  # options follow the rule
    assert "\\u00" not in observation.text
    clicks = [("Pay now", "pay"), ("Open ticket", "open"), ("Send reply", "labelled"), ("Close window now", "scripted")]
    for step, (name, element) in enumerate(clicks, start=1):
        outcome = await driver.act(Click(id=named(observation, name).id), step)
        assert outcome.ok, outcome.rejection
        assert await page_text(driver, "log") == f"Clicked: {element}"
    assert (await driver.act(Fill(id=named(observation, "Assignee name").id, text="Ada"), 5)).ok
    assert (await driver.act(Select(id=named(observation, "Queue").id, option="Billing and refunds"), 6)).ok
    assert await page_text(driver, "log") == "Selected: billing"


# --- 8. Canvas, and a terminal's hidden input ---------------------------------------------------------------------


@browser_test
async def test_a_canvas_with_listeners_is_offered_and_a_terminal_types_through_its_screen(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-canvas.html")
    assert clickable_names(observation) == ["Sales chart", "Colour strip", "pad", "$"]  # "pad": its id (issue 50)
    assert "A drawing nobody can click" not in observation.text and "Terminal input" not in observation.text
    assert (await driver.act(Click(id=named(observation, "Sales chart").id), 1)).ok
    assert (await page_text(driver, "log")).startswith("Clicked: chart at ")
    assert (await driver.act(Click(id=named(observation, "Colour strip").id), 2)).ok
    assert await page_text(driver, "log") == "Clicked: palette"
    # The hidden text area is not offered; a click on the screen focuses it, and keys pressed on the screen reach it
    # (the screen is named by its text, so each key is pressed on the screen as the latest observation names it).
    terminal = named(observation, "$")
    assert (await driver.act(Click(id=terminal.id), 3)).ok
    for step, (key, shown) in enumerate([("l", "$"), ("s", "$ l")], start=4):
        screen = named(await driver.observe(), shown)
        assert screen.id == terminal.id
        assert (await driver.act(Press(id=screen.id, key=key), step)).ok
    assert await page_text(driver, "screen") == "$ ls"
