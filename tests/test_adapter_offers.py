"""What annotate.js offers beyond native controls, and that the offered controls work with the model's actions.

Role-less click targets (`clickable`), anchors without href, images and SVG as controls, and native controls
styled away behind custom widgets (fixtures tests/fixtures/pages/fidelity-*.html; their agreement with
Chromium's accessibility tree is checked in tests/test_adapter_fidelity.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser

from adapter.actions import Check, Click, Fill, Select
from adapter.driver import PageDriver
from adapter.world import world_of

browser_test = pytest.mark.browser

CLICKABLES = {
    "Listener div": "listener-div", "Onclick attribute span": "onclick-attribute",
    "Onclick property div": "onclick-property", "Mousedown div": "mousedown-div", "Mouseup div": "mouseup-div",
    "Pointerdown div": "pointerdown-div", "List item one": "item-one", "List item two": "item-two",
    "Circle shape": "circle-shape", "Square shape": "square-shape", "Order 1001 Shipped": "order-row",
    "Shadow div": "shadow-div", "Pointer span with bold inside": "pointer-span", "✎ Edit note": "icon-holder",
    "Delegated one": "delegated-one", "Delegated two": "delegated-two",
    "inner pointer": "outer-pointer",  # a pointer run inside a [data-hit] paragraph: the body's delegation hears it
    "Container with a": "with-button",  # its own listener, its own text at its centre: a target beside its button
}
"""Every clickable of fidelity-clickables.html by name, and the element its click reaches (by the page's log)."""
NOT_OFFERED = ("Plain paragraph", "Covered span", "Pointer events none", "Display none div",
               "Visibility hidden div", "Aria hidden div", "Inert div", "Zero size span", "Outer pointer")


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=1_000_000) as page_driver:
        yield page_driver


async def log_text(driver: PageDriver) -> str:
    return str(await world_of(driver.page).evaluate("() => document.getElementById('log').textContent"))


@browser_test
async def test_every_clickable_is_offered_once_and_its_click_reaches_its_handler(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-clickables.html")
    clickables = [c for c in observation.controls if c.role == "clickable"]
    assert {c.name for c in clickables} == set(CLICKABLES) | {
        "A long card that a page makes clickable as a whole: its text says what it is ab…"}
    for number, control in enumerate(clickables, start=1):
        outcome = await driver.act(Click(id=control.id), number)
        assert outcome.ok, (control, outcome.rejection)
        assert await log_text(driver) == f"Clicked: {CLICKABLES.get(control.name, 'long-card')}", control
    assert [c.id for c in (await driver.observe()).controls] == [c.id for c in observation.controls]


@browser_test
async def test_hidden_covered_and_delegated_elements_are_not_clickables(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-clickables.html")
    names = [c.name for c in observation.controls]
    for absent in NOT_OFFERED:
        assert not [n for n in names if n.startswith(absent)], absent
    assert "Plain paragraph: only the body listens for clicks." in observation.text  # still page text
    # Inside a button or a label, the control is offered, not its parts.
    assert named(observation, "Inside a button").role == "button"
    assert named(observation, "Pointer label").role == "checkbox"
    assert named(observation, "Real button").role == "button"


@browser_test
async def test_long_clickables_and_rows_keep_their_text_as_page_text(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-clickables.html")
    card = next(c for c in observation.controls if c.name.startswith("A long card"))
    assert len(card.name) == 80 and card.name.endswith("…")
    assert "and it goes on for more than eighty characters." in observation.text
    row = named(observation, "Order 1001 Shipped", "clickable")
    assert f"|[{row.id}] Order 1001|Shipped|" in observation.text.splitlines()


@browser_test
async def test_anchors_with_handlers_are_links_and_plain_ones_are_text(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-anchors.html")
    roles = {c.name: c.role for c in observation.controls}
    assert roles == {
        "Anchor with a click listener": "link", "Anchor with a mousedown listener": "link",
        "Anchor with an onmouseup attribute": "link", "Anchor with an onclick attribute": "link",
        "Anchor with only a pointerdown listener": "clickable", "Anchor with href": "link",
    }
    assert "Anchor without href or listener Pointer anchor that nothing hears" in observation.text
    for number, name in enumerate(("Anchor with a click listener", "Anchor with a mousedown listener",
                                   "Anchor with an onmouseup attribute", "Anchor with only a pointerdown listener"),
                                  start=1):
        assert (await driver.act(Click(id=named(observation, name).id), number)).ok
        assert (await log_text(driver)).startswith("Clicked: ")
    assert named(observation, "Anchor with a click listener").href is None


@browser_test
async def test_images_and_svg_keep_their_roles_names_and_targets(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-graphics.html")
    offered = {c.name: (c.role, c.href) for c in observation.controls}
    assert offered == {
        "Zoom in": ("button", None), "Home": ("link", None), "Print the page": ("button", None),
        "Photo of the team": ("clickable", None), "Close panel": ("button", None), "Refresh": ("button", None),
        "Help centre": ("button", None), "Links page": ("link", "/site/links.html"),
        "Ticket table": ("link", "/site/table.html"), "Forms page": ("link", "/site/forms.html"),
        "Bar for March": ("clickable", None),
    }
    assert "Decorative" not in observation.text  # an image or drawing without a control role stays out
    for number, (name, element_id) in enumerate((("Zoom in", "zoom"), ("Refresh", "refresh"),
                                                 ("Bar for March", "march"), ("Photo of the team", "team-photo")),
                                                start=1):
        assert (await driver.act(Click(id=named(observation, name).id), number)).ok
        assert await log_text(driver) == f"Clicked: {element_id}"
    outcome = await driver.act(Click(id=named(observation, "Ticket table").id), 9)
    assert outcome.ok and outcome.navigated and driver.page.url.endswith("/site/table.html")


@browser_test
async def test_controls_styled_away_are_reached_through_what_shows(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-styled-away.html")
    roles = [(c.role, c.name) for c in observation.controls]
    assert roles == [
        ("checkbox", "Subscribe to the newsletter"), ("radio", "Monthly plan"), ("radio", "Yearly plan"),
        ("checkbox", "Dark mode"), ("combobox", "Shirt size"), ("textbox", "Coupon code"),
        ("clickable", "Pick a colour"),
    ]
    assert (await driver.act(Check(id=named(observation, "Dark mode").id), 1)).ok  # through its label
    assert (await driver.act(Check(id=named(observation, "Subscribe to the newsletter").id), 2)).ok
    assert (await driver.act(Check(id=named(observation, "Yearly plan").id), 3)).ok
    assert (await driver.act(Select(id=named(observation, "Shirt size").id, option="Large"), 4)).ok
    assert (await driver.act(Fill(id=named(observation, "Coupon code").id, text="SPRING"), 5)).ok
    assert (await driver.act(Click(id=named(observation, "Pick a colour").id), 6)).ok
    after = await driver.observe()
    assert "Newsletter: yes; dark mode: yes" in after.text
    assert named(after, "Yearly plan").checked and not named(after, "Monthly plan").checked
    assert named(after, "Shirt size").value == "Large" and named(after, "Coupon code").value == "SPRING"
    assert named(after, "Blue", "clickable")  # the widget shows the hidden select's new value


@browser_test
async def test_a_script_free_page_that_gains_a_script_offers_what_it_listens_on(driver: PageDriver) -> None:
    first = await open_page(driver, "table.html")  # no script, no listener: the next observation skips asking
    assert await driver.observe() == first
    await driver.page.evaluate("""() => {
      const card = document.createElement("div");
      card.id = "late";
      card.textContent = "Late card";
      document.body.append(card);
      const script = document.createElement("script");
      script.textContent = "document.getElementById('late').addEventListener('click', () => { card_clicked = 1; })";
      document.body.append(script);
    }""")
    late = named(await driver.observe(), "Late card")
    assert late.role == "clickable"
    assert (await driver.act(Click(id=late.id), 1)).ok
    assert await driver.page.evaluate("() => window.card_clicked") == 1
