"""The actions third-party pages need and the catalog never did (issue 25): `hover`, `drag` and `click` at a point
of a control; a key `press` that must reach a control with the keyboard focus; a click on a link that wraps onto
two lines.

The pages are `fidelity-*.html` fixtures (tests/test_adapter_fidelity.py audits each against the accessibility tree;
`computerops bench` opens them and times each new action on its page). What a page did is read from its own
`window.record`.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from playwright.async_api import Browser
from tiers import examples

from adapter.acting import ActionOutcome
from adapter.actions import (
    Action,
    Click,
    Drag,
    Hover,
    Press,
    Rejection,
    action_to_arguments,
    parse_action,
    parse_text_action,
    text_protocol,
    tool_schemas,
)
from adapter.driver import PageDriver

browser_test = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=100_000) as page_driver:
        yield page_driver


async def record(driver: PageDriver) -> list[Any]:
    found = await driver.page.evaluate("() => window.record")
    assert isinstance(found, list)
    return found


async def assert_ok(driver: PageDriver, action: Action) -> ActionOutcome:
    outcome = await driver.act(action, 1)
    assert outcome.ok, outcome.rejection
    return outcome


async def refusal(driver: PageDriver, action: Action) -> Rejection:
    outcome = await driver.act(action, 1)
    assert outcome.rejection is not None, outcome
    return outcome.rejection


def ids(driver: PageDriver) -> dict[str, str]:
    assert driver.latest is not None
    return {control.name: control.id for control in driver.latest.controls}


# --- hover ---------------------------------------------------------------------------------------------------


@browser_test
async def test_hover_opens_a_menu_whose_items_are_then_offered_and_clicked(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-hover.html")
    assert not {"Laptops", "Phones", "Sign out"} & {c.name for c in observation.controls}
    hovered = await assert_ok(driver, Hover(id=named(observation, "Products").id))  # a menu of CSS :hover
    assert hovered.note == f'the pointer is over [{named(observation, "Products").id}] button "Products"'
    opened = await driver.observe()
    await assert_ok(driver, Click(id=named(opened, "Phones").id))  # the pointer goes on from the menu's button
    await assert_ok(driver, Hover(id=named(opened, "Account").id))  # a menu of script (mouseenter)
    await assert_ok(driver, Click(id=named(await driver.observe(), "Sign out").id))
    assert await record(driver) == ["Phones", "Sign out"]
    assert "Chosen: Sign out" in (await driver.observe()).text


@browser_test
async def test_hover_and_drag_are_refused_when_the_page_covers_the_control_as_the_pointer_comes(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "hostile/acting.html")
    covered = named(observation, "Cancel order D").id  # an overlay put over it on pointerover
    covered_on_over = await refusal(driver, Hover(id=covered))
    assert covered_on_over.cause == "changed_control" and "hover" in covered_on_over.reason, covered_on_over
    await open_page(driver, "hostile/acting.html")
    target = named(observation, "Hover me").id
    covered_at_press = await refusal(driver, Drag(id=covered, to_id=target))
    assert covered_at_press.cause == "changed_control" and "drag" in covered_at_press.reason, covered_at_press
    renamed_at_press = await refusal(driver, Drag(id=named(observation, "Cancel order G").id, to_id=target))
    assert renamed_at_press.cause == "changed_control" and "Pay" in renamed_at_press.reason, renamed_at_press
    assert await record(driver) == []  # nothing was clicked: the press and its release were held back


# --- drag ----------------------------------------------------------------------------------------------------


@browser_test
async def test_drag_reorders_a_list_moves_a_slider_and_drops_a_card_on_a_column(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-drag.html")
    named_ids = ids(driver)
    moved = await assert_ok(driver, Drag(id=named_ids["Move Alpha"], to_id=named_ids["Move Gamma"]))
    assert moved.note.endswith('onto [3] button "Move Gamma"'), moved.note
    await assert_ok(driver, Drag(id=named_ids["Volume"], dx=120))  # from 20 % of a 300 px track: 60 %
    await assert_ok(driver, Drag(id=named_ids["Fix login"], to_id=named_ids["Add a card to Done"]))  # HTML5
    done = await record(driver)
    assert done[0] == "order Beta, Gamma, Alpha" and done[2] == "dropped Fix login on Done", done
    assert done[1].startswith("volume ") and abs(int(done[1].split()[1]) - 60) <= 1, done
    after = await driver.observe()
    assert after.text.index("Fix login") > after.text.index("### Done")
    await assert_ok(driver, Drag(id=named_ids["Volume"], dx=-170))  # back from 180 px to 10 px: 3 %
    assert (await record(driver))[-1] == "volume 3", await record(driver)


@browser_test
async def test_a_drag_that_cannot_happen_is_refused_and_moves_nothing(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-drag.html")
    named_ids = ids(driver)
    nowhere = await refusal(driver, Drag(id=named_ids["Volume"], dx=5000))
    assert nowhere.cause == "not_applicable" and "outside the window" in nowhere.reason, nowhere
    itself = await refusal(driver, Drag(id=named_ids["Move Beta"], to_id=named_ids["Move Beta"]))
    assert itself.cause == "not_applicable" and "where it begins" in itself.reason, itself
    unknown = await refusal(driver, Drag(id=named_ids["Move Beta"], to_id="999"))
    assert unknown.cause == "unknown_control", unknown
    assert await record(driver) == []


# --- click at a point, and a link on two lines ---------------------------------------------------------------


@browser_test
async def test_a_click_at_a_point_lands_there_and_a_covered_point_is_refused(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-point.html")
    named_ids = ids(driver)
    clicked = await assert_ok(driver, Click(id=named_ids["Seat map"], x=0.25, y=0.75))
    assert clicked.note == 'clicked [1] button "Seat map" at x 0.25, y 0.75', clicked.note
    await assert_ok(driver, Click(id=named_ids["Seat map"], x=0, y=1))  # the corner, a pixel inside
    await assert_ok(driver, Click(id=named_ids["Hue"], x=0.5))  # y left out: the middle
    dragged = await assert_ok(driver, Drag(id=named_ids["Hue"], x=0.25))  # to a point of its own box
    assert dragged.note.endswith("to a point of its own box at x 0.25, y 0.5"), dragged.note
    covered = await refusal(driver, Click(id=named_ids["Seat map"], x=0.95, y=0.1))  # under the NEW badge
    assert covered.cause == "not_applicable" and "covered by <span.badge>" in covered.reason, covered
    seat, corner, hue, released = await record(driver)
    assert math.dist(seat, [50, 75]) <= 1 and math.dist(corner, [1, 99]) <= 1, (seat, corner)
    assert hue[0] == "hue" and abs(hue[1] - 180) <= 1, hue
    assert released[0] == "hue" and abs(released[1] - 90) <= 1, released  # pressed in the middle, released there


@browser_test
async def test_a_link_wrapping_onto_two_lines_is_clicked_inside_one_of_its_line_boxes(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-wrapped-link.html")
    link = named(observation, "terms of service")
    point = await driver.click_point(link.id)
    assert not isinstance(point, str) and point is not None, point
    clicked = await assert_ok(driver, Click(id=link.id))
    assert clicked.navigated and driver.page.url.endswith("/site/links.html")


# --- press ---------------------------------------------------------------------------------------------------


@browser_test
async def test_press_on_a_slider_that_cannot_take_the_focus_is_refused_and_on_a_focusable_one_works(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "fidelity-press.html")
    track = await refusal(driver, Press(id=named(observation, "Brightness").id, key="ArrowRight"))
    assert track.cause == "not_applicable" and "cannot take the keyboard focus" in track.reason, track
    assert "<body>" in track.reason
    await assert_ok(driver, Press(id=named(observation, "Contrast").id, key="ArrowRight"))
    assert await record(driver) == ["ArrowRight on div"]  # only the key for the handle, and it reached it
    assert "Brightness 50, contrast 60." in (await driver.observe()).text


# --- The action set: schemas, protocol, parsing --------------------------------------------------------------


def test_the_new_actions_are_in_the_tool_schemas_and_the_text_protocol() -> None:
    names = [tool["function"]["name"] for tool in tool_schemas()]
    assert {"hover", "drag"} <= set(names)
    protocol = text_protocol()
    assert '- {"action": "hover", "id": string}' in protocol
    assert '- {"action": "drag", "id": string, "to_id": string, "x": number, "y": number, "dx": number, ' in protocol
    assert '- {"action": "click", "id": string, "x": number, "y": number}' in protocol


FRACTIONS = st.floats(0, 1)
IDS = st.integers(0, 10_000).map(str)
NEW_ACTIONS = st.one_of(
    st.builds(Hover, id=IDS),
    st.builds(Click, id=IDS, x=st.none() | FRACTIONS, y=st.none() | FRACTIONS),
    st.builds(Drag, id=IDS, to_id=IDS, x=st.none() | FRACTIONS, y=st.none() | FRACTIONS),
    st.builds(Drag, id=IDS, x=FRACTIONS, y=st.none() | FRACTIONS),
    st.builds(Drag, id=IDS, dx=st.floats(-10_000, 10_000), dy=st.none() | st.floats(-10_000, 10_000)),
)


@given(action=NEW_ACTIONS)
def test_the_new_actions_read_back_as_written_as_tool_calls_and_in_the_text_protocol(action: Action) -> None:
    arguments = {key: value for key, value in action_to_arguments(action).items() if value is not None}
    assert parse_action(action.action, arguments) == action
    assert parse_action(action.action, json.dumps(arguments)) == action
    assert parse_text_action("I will do this: " + json.dumps({"action": action.action, **arguments})) == action


ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers()),
)
ARGUMENT_NAMES = st.sampled_from(["id", "to_id", "x", "y", "dx", "dy", "key", "force", "action"])


@given(name=st.sampled_from(["hover", "drag", "click"]),
       arguments=st.dictionaries(ARGUMENT_NAMES, ANY_VALUE, max_size=6))
@example(name="click", arguments={"id": "1", "x": 1.5})
@example(name="drag", arguments={"id": "1"})
@example(name="drag", arguments={"id": "1", "to_id": "2", "dx": 3})
def test_any_arguments_of_the_new_actions_parse_to_an_action_or_a_rejection(
    name: str, arguments: dict[str, Any],
) -> None:
    result = parse_action(name, arguments)
    if isinstance(result, Rejection):
        assert result.cause == "malformed_arguments" and result.reason
        return
    assert result.action == name
    for field in ("x", "y"):
        value = getattr(result, field, None)
        assert value is None or 0 <= value <= 1
    for field in ("dx", "dy"):
        value = getattr(result, field, None)
        assert value is None or (math.isfinite(value) and abs(value) <= 10_000)


# --- No argument makes `act` raise ---------------------------------------------------------------------------

COORDINATES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(
    [0.0, 1.0, 0.5, -0.0, -1.0, 1e308, -1e308, 2.0, 1e-300]))
KNOWN_OR_NOT = st.one_of(st.integers(1, 9).map(str), st.sampled_from(["0", "999", "", " ", "1 ", "[2]", "x", "\u0000"]))


@browser_test
@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["hover", "drag", "click"]), control=KNOWN_OR_NOT, to=st.none() | KNOWN_OR_NOT,
       x=COORDINATES, y=COORDINATES, dx=COORDINATES, dy=COORDINATES, stale=st.booleans())
@example(kind="drag", control="1", to="1", x=None, y=None, dx=None, dy=None, stale=False).via("same source, target")
@example(kind="drag", control="4", to=None, x=None, y=None, dx=math.inf, dy=None, stale=False)
@example(kind="drag", control="4", to=None, x=None, y=None, dx=None, dy=None, stale=False).via("no destination")
@example(kind="click", control="1", to=None, x=math.nan, y=-1.0, dx=None, dy=None, stale=False)
@example(kind="hover", control="5", to=None, x=None, y=None, dx=None, dy=None, stale=True)
@example(kind="drag", control="8", to="5", x=None, y=None, dx=None, dy=None, stale=False).via("the off-site link")
@example(kind="drag", control="8", to=None, x=None, y=None, dx=-50.0, dy=-200.0, stale=False)
async def test_no_argument_makes_act_raise_for_the_new_actions(
    driver: PageDriver, site: FixtureSite, kind: str, control: str, to: str | None, x: float | None, y: float | None,
    dx: float | None, dy: float | None, stale: bool,
) -> None:
    """Every argument, valid or not (the parser would refuse most of these; `model_construct` passes them to the
    driver as they are), is an outcome: carried out or refused with a cause, never an exception; and nothing off
    the site is loaded (the page's link to /elsewhere/ dragged and dropped anywhere included)."""
    if driver.latest is None or driver.latest.url != "/site/fidelity-drag.html" or not driver.latest.controls:
        await open_page(driver, "fidelity-drag.html")
    if stale:  # the ids of the latest observation name elements of a document that is gone
        await driver.page.reload()
    action: Action
    if kind == "hover":
        action = Hover.model_construct(id=control)
    elif kind == "click":
        action = Click.model_construct(id=control, x=x, y=y)
    else:
        action = Drag.model_construct(id=control, to_id=to, x=x, y=y, dx=dx, dy=dy)
    outcome = await driver.act(action, 1)
    assert isinstance(outcome, ActionOutcome)
    assert outcome.ok or (outcome.rejection is not None and outcome.rejection.reason), outcome
    assert not [path for _, path, _ in site.requests if path.startswith("/elsewhere/")]
    assert driver.page.url.endswith("/site/fidelity-drag.html")
    if stale:
        assert not outcome.ok and outcome.rejection is not None
        assert outcome.rejection.cause in ("stale_control", "unknown_control", "malformed_arguments"), outcome
        await open_page(driver, "fidelity-drag.html")
