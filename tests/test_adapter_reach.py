"""The driver on pages no one here wrote: controls low inside scrolling boxes and frames, inputs whose type
constrains their value, and panels that animate into place.

The pages are the `fidelity-*.html` fixtures (tests/test_adapter_fidelity.py audits each of them against the
accessibility tree; `computerops bench` measures them too). These tests act on them.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from playwright.async_api import Browser
from tiers import examples

from adapter.acting import ActionOutcome
from adapter.actions import Action, Check, Click, Fill
from adapter.driver import PageDriver
from adapter.fidelity import audit_page
from adapter.inputs import CONSTRAINED_TYPES
from adapter.stability import wait_for_visual_stability

browser_test = pytest.mark.browser
VALUE = "e => e.value"


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=100_000) as page_driver:
        yield page_driver


async def assert_ok(driver: PageDriver, action: Action) -> ActionOutcome:
    outcome = await driver.act(action, 1)
    assert outcome.ok, outcome.rejection
    return outcome


async def refusal(driver: PageDriver, action: Action) -> str:
    outcome = await driver.act(action, 1)
    assert outcome.rejection is not None, outcome
    return outcome.rejection.reason


# --- Scrolling boxes ----------------------------------------------------------------------------


@browser_test
async def test_controls_low_inside_scrolling_boxes_are_scrolled_to_and_used(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-scroll-box.html")
    await assert_ok(driver, Click(id=named(observation, "Approve order 40").id))
    await assert_ok(driver, Check(id=named(observation, "Flag order 40").id))
    await assert_ok(driver, Fill(id=named(observation, "Order note").id, text="call first"))
    for name in ("Nested button", "Far right button", "Ticker button"):  # nested, sideways, overflow:hidden
        await assert_ok(driver, Click(id=named(observation, name).id))
    after = await driver.observe()
    assert named(after, "Approved").id == named(observation, "Approve order 40").id
    assert named(after, "Flag order 40").checked is True
    assert named(after, "Order note").value == "call first"


@browser_test
async def test_a_control_in_a_scrolling_box_of_a_frame_low_in_a_scrolling_box_is_clicked(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-scroll-frame.html")
    await assert_ok(driver, Click(id=named(observation, "Framed approve").id))
    await assert_ok(driver, Check(id=named(observation, "Framed flag").id))
    after = await driver.observe()
    assert named(after, "Framed approved").id == named(observation, "Framed approve").id
    assert named(after, "Framed flag").checked is True


@browser_test
async def test_a_click_that_cannot_land_is_refused_with_the_true_reason(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-scroll-box.html")
    await driver.page.evaluate("""() => {
      document.getElementById("ticker").style.overflow = "clip";  // a box that cannot be scrolled
      const below = [...document.querySelectorAll("button")].find((b) => b.textContent === "Below the boxes");
      below.style.cssText = "width: 0; height: 0; padding: 0; border: 0; overflow: hidden";
      const far = [...document.querySelectorAll("button")].find((b) => b.textContent === "Far right button");
      far.style.cssText = "position: fixed; left: -400px; top: 10px";
      const link = document.querySelector("#orders a");
      link.style.cssText = "position: absolute; clip: rect(0 0 0 0); width: 1px; height: 1px; overflow: hidden";
    }""")
    reasons = {name: await refusal(driver, Click(id=named(observation, name).id))
               for name in ("Ticker button", "Below the boxes", "Far right button", "All orders")}
    prefix = {name: f"Control [{named(observation, name).id}] cannot be clicked now: " for name in reasons}
    assert reasons == {
        "Ticker button": prefix["Ticker button"] + "it lies outside the visible part of <div#ticker.hidden-scroll>, "
                                                   "and scrolling does not bring it into view.",
        "Below the boxes": prefix["Below the boxes"] + "it has no size on the page (0 x 0 px).",
        "Far right button": prefix["Far right button"] + "it lies outside the window, and scrolling does not bring "
                                                         "it into view.",
        "All orders": prefix["All orders"] + "it is clipped out of sight by its CSS clip; a click there lands on "
                                             "<html>.",  # absolute, it escapes the box: the page is behind it
    }


@browser_test
async def test_a_control_in_a_frame_the_parent_page_covers_is_refused_naming_the_cover(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-scroll-frame.html")
    framed = named(observation, "Framed approve")
    await driver.page.evaluate("""() => {
      const veil = document.createElement("div");
      veil.id = "veil";
      veil.style.cssText = "position: fixed; inset: 0; z-index: 5";
      document.body.append(veil);
    }""")
    assert await refusal(driver, Click(id=framed.id)) == (
        f"Control [{framed.id}] cannot be clicked now: it is covered by <div#veil>.")


# --- Typed inputs -------------------------------------------------------------------------------


@browser_test
async def test_typed_inputs_show_their_type_and_format_in_the_control_line(driver: PageDriver) -> None:
    lines = (await open_page(driver, "fidelity-dates.html")).text.splitlines()
    for line in ('[1] textbox "Delivery date" value="2024-06-01" type=date format="YYYY-MM-DD"',
                 '[3] textbox "Call back at" value="" type=datetime-local format="YYYY-MM-DDTHH:MM"',
                 '[5] textbox "Release week" value="" type=week format="YYYY-Www"',
                 '[6] spinbutton "Units" value=""',  # the role says it holds a number
                 '[8] textbox "Label colour" value="#336699" type=color format="#rrggbb"',
                 '[10] textbox "Voucher code" value=""'):
        assert line in lines


@browser_test
async def test_a_value_the_browser_would_throw_away_is_refused_and_nothing_changes(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-dates.html")
    date = named(observation, "Delivery date")
    reason = await refusal(driver, Fill(id=date.id, text="06/01/2024"))
    assert reason == (f'Cannot fill [{date.id}] with "06/01/2024": it is a date field, which keeps only a date '
                      "written YYYY-MM-DD (e.g. 2024-06-01); the browser would make it empty. Nothing was changed.")
    assert await driver.evaluate_on(date.id, VALUE) == "2024-06-01"
    discount = named(observation, "Discount (%)")
    assert "from 0 to 50 in steps of 5; the browser would make it \"10\"" in await refusal(
        driver, Fill(id=discount.id, text="12"))
    assert await driver.evaluate_on(discount.id, VALUE) == "10"
    units = named(observation, "Units")
    assert "no spaces, '+' or separators" in await refusal(driver, Fill(id=units.id, text="1,000"))


@browser_test
async def test_a_fill_that_the_field_keeps_in_another_form_says_what_it_holds(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-dates.html")
    callback = named(observation, "Call back at")
    normalised = await assert_ok(driver, Fill(id=callback.id, text="2024-06-01 10:30"))
    assert normalised.note == (f'filled [{callback.id}] textbox "Call back at" with "2024-06-01T10:30", the field\'s '
                               'form of "2024-06-01 10:30"')
    code = named(observation, "Voucher code")
    cut = await assert_ok(driver, Fill(id=code.id, text="SPRING2024"))
    assert cut.note.endswith('; it keeps at most 6 characters and holds "SPRING"')
    phone = named(observation, "Phone")
    formatted = await assert_ok(driver, Fill(id=phone.id, text="+33 1 23"))
    assert formatted.note.endswith('; it holds "33123"')  # the page's own input handler
    memo = named(observation, "Memo")
    lines = await assert_ok(driver, Fill(id=memo.id, text="line 1\r\nline 2"))
    assert lines.note == f'filled [{memo.id}] textbox "Memo"'  # a text area's \r\n is its \n: the same text
    after = await driver.observe()
    assert [named(after, n).value for n in ("Call back at", "Voucher code", "Phone", "Memo")] == [
        "2024-06-01T10:30", "SPRING", "33123", "line 1\nline 2"]


TYPED_FIELDS = {"Delivery date": "date", "Delivery time": "time", "Call back at": "datetime-local",
                "Statement month": "month", "Release week": "week", "Units": "number", "Label colour": "color",
                "Discount (%)": "range"}
VALUE_LIKE = st.one_of(
    st.dates().map(lambda d: d.isoformat()), st.dates().map(lambda d: d.strftime("%d/%m/%Y")),
    st.times().map(lambda t: t.strftime("%H:%M")), st.times().map(lambda t: t.strftime("%I:%M %p")),
    st.times().map(lambda t: t.isoformat()),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M")), st.datetimes().map(lambda d: d.isoformat()),
    st.from_regex(r"\A\d{4}-W?\d{1,2}\Z"), st.from_regex(r"\A\d{4}-[wW]\d{2}\Z"),
    st.integers(-100, 100).map(str), st.floats(allow_nan=False, width=32).map(str),
    st.sampled_from(["red", "#ABCDEF", "#abc", "rgb(1, 2, 3)", "1,000", "+5", " 12 ", "1e3", ".5", "5.", "-0"]),
    st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=12),
)


@browser_test
@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(TYPED_FIELDS)), text=VALUE_LIKE)
@example(name="Discount (%)", text="").via("found in CI: a slider cannot be emptied")
@example(name="Label colour", text=" ")
@example(name="Units", text="")
async def test_fill_never_reports_success_for_a_value_the_browser_threw_away(
    driver: PageDriver, name: str, text: str,
) -> None:
    if driver.latest is None or driver.latest.url != "/site/fidelity-dates.html":
        await open_page(driver, "fidelity-dates.html")
    assert driver.latest is not None
    control, input_type = named(driver.latest, name), TYPED_FIELDS[name]
    before = await driver.evaluate_on(control.id, VALUE)
    outcome = await driver.act(Fill(id=control.id, text=text), 1)
    after = await driver.evaluate_on(control.id, VALUE)
    asked = text.strip()
    if outcome.rejection is not None:  # refused before anything was typed, with the format the field takes
        assert outcome.rejection.cause == "not_applicable" and after == before, (text, outcome, after)
        assert outcome.rejection.reason.endswith("Nothing was changed.")
        syntax = CONSTRAINED_TYPES[input_type].syntax
        assert (syntax or "keeps only a number") in outcome.rejection.reason
        return
    if asked == "":
        assert after == ""
        return
    assert after != "", (text, outcome.note)  # the defect this guards against: success, and nothing kept
    if input_type in ("date", "time", "month", "week", "number"):
        assert after == asked
    elif input_type == "range":
        assert float(str(after)) == float(asked)
    elif input_type == "color":
        assert re.fullmatch("#[0-9a-f]{6}", str(after))
    else:  # datetime-local, in the browser's normal form: the same day
        assert str(after)[:10] == asked[:10]
    if after != text:
        assert f"with {json.dumps(after)}" in outcome.note, (text, outcome.note)


# --- Animations -------------------------------------------------------------------------------------


_STILL = """() => {
  const drawer = document.getElementById("drawer");
  const running = document.getAnimations().filter((a) => a.playState === "running");
  return [getComputedStyle(drawer).transform, running.map((a) => a.animationName || a.transitionProperty)];
}"""


@browser_test
async def test_the_observation_after_an_action_shows_its_transition_finished(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-animation.html")
    assert "Dismiss banner" in {c.name for c in observation.controls}  # slid in on load, before the first look
    await assert_ok(driver, Click(id=named(observation, "Open filters").id))
    assert await driver.page.evaluate(_STILL) == ["none", ["spin"]]  # only the endless spinner still runs
    opened = await driver.observe()
    assert {"Search tickets", "Close filters"} <= {c.name for c in opened.controls}
    audit = await audit_page(driver, opened)
    assert audit.ok, (audit.report.summary(), audit.problems)
    await assert_ok(driver, Click(id=named(opened, "Close filters").id))
    await assert_ok(driver, Click(id=named(opened, "Archive ticket 1").id))
    closed = await driver.observe()
    names = {c.name for c in closed.controls}
    assert not names & {"Search tickets", "Close filters", "Archive ticket 1"}, names
    assert "Ticket 1" not in closed.text and "Archive ticket 2" in names


@browser_test
async def test_endless_and_colour_only_animations_do_not_hold_an_action_up(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-animation.html")
    save = await driver.click_point(named(observation, "Save view").id)
    assert save is not None and not isinstance(save, str)
    await driver.page.mouse.move(save.x, save.y)  # starts the 3 s colour fade of its hover style
    running = await driver.page.evaluate("() => document.getAnimations().map((a) => a.playState).length")
    assert running >= 3  # the spinner, the background fade and the colour fade
    still = await wait_for_visual_stability(driver.page)
    assert (still.waited_ms, still.unfinished) == (0.0, 0)


@browser_test
async def test_a_long_animation_is_waited_for_only_up_to_the_bound(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-animation.html")
    await driver.page.evaluate("""() => document.querySelector("h1").animate(
      [{ transform: "translateX(-50px)" }, { transform: "none" }], { duration: 10000 })""")
    still = await wait_for_visual_stability(driver.page, bound_s=0.3)
    assert still.unfinished == 1 and 250 <= still.waited_ms < 2000, still
