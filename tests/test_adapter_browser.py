"""The adapter against a real Chromium: observation of live pages and checked actions.

The pages in tests/fixtures/pages/ are served by a small local HTTP server that records the
`X-ComputerOps-Action` header of every request. The saved annotated fixtures used by the pure
render tests are checked here against the live annotation; regenerate them after changing
annotate.js with:

    COMPUTEROPS_REGENERATE_FIXTURES=1 .venv/bin/pytest tests/test_adapter_browser.py -k saved_annotated
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser

from adapter.acting import ActionOutcome
from adapter.actions import Action, AnswerDialog, Back, Check, Click, Done, Fill, Navigate, Press, Select
from adapter.browser import ChromiumNotFound, find_chromium
from adapter.driver import PageDriver, annotate_script
from adapter.observation import Control, Observation, controls_in_text, format_control

FIXTURES = Path(__file__).parent / "fixtures"
ANNOTATED = FIXTURES / "annotated"
SAVED_PAGES = ("forms.html", "hidden.html", "table.html", "frames.html", "long.html")
browser_test = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site) as page_driver:
        yield page_driver


def lines(observation: Observation) -> list[str]:
    return observation.text.splitlines()


async def assert_ok(driver: PageDriver, action: Action, number: int = 1) -> ActionOutcome:
    outcome = await driver.act(action, number)
    assert outcome.ok, outcome.rejection
    return outcome


# --- Which Chromium (no browser needed) -------------------------------------------------------


def test_playwrights_own_chromium_is_preferred_when_installed(tmp_path: Path) -> None:
    bundled = tmp_path / "chrome"
    bundled.write_text("")
    system = tmp_path / "chromium"
    system.write_text("")
    assert find_chromium(str(bundled), env={}, candidates=[str(system)]) is None


def test_system_chromium_is_used_when_playwrights_is_missing(tmp_path: Path) -> None:
    system = tmp_path / "chromium"
    system.write_text("")
    found = find_chromium(str(tmp_path / "absent"), env={}, candidates=[str(tmp_path / "no"), str(system)])
    assert found == str(system)


def test_explicit_chromium_setting_wins_and_must_exist(tmp_path: Path) -> None:
    mine = tmp_path / "my-chrome"
    mine.write_text("")
    bundled = tmp_path / "chrome"
    bundled.write_text("")
    assert find_chromium(str(bundled), env={"COMPUTEROPS_CHROMIUM": str(mine)}) == str(mine)
    with pytest.raises(ChromiumNotFound, match="does not name an existing file"):
        find_chromium(str(bundled), env={"COMPUTEROPS_CHROMIUM": str(tmp_path / "gone")})


def test_missing_chromium_error_names_what_was_tried_and_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ChromiumNotFound) as error:
        find_chromium(str(tmp_path / "absent"), env={}, candidates=["/nowhere/chromium"])
    message = str(error.value)
    assert "/nowhere/chromium" in message
    assert "apt-get install chromium" in message
    assert "playwright install chromium" in message


# --- Observation ------------------------------------------------------------------------------


@browser_test
@pytest.mark.parametrize("name", SAVED_PAGES)
async def test_saved_annotated_fixtures_match_the_browser(driver: PageDriver, name: str) -> None:
    await driver.page.goto(f"{driver.origin}/site/{name}", wait_until="load")
    html = await driver.page.evaluate(annotate_script())
    saved = ANNOTATED / name
    if os.environ.get("COMPUTEROPS_REGENERATE_FIXTURES") == "1":
        saved.write_text(html + "\n", encoding="utf-8")
    assert saved.read_text(encoding="utf-8") == html + "\n"


@browser_test
async def test_hidden_controls_are_never_offered(driver: PageDriver) -> None:
    observation = await open_page(driver, "hidden.html")
    assert [c.name for c in observation.controls] == ["Shown button", "More details", "Open dialog button"]
    for hidden in ("Display none", "Visibility hidden", "Aria hidden", "Inert", "Zero height", "Template",
                   "Noscript", "Collapsed", "Closed dialog", "script text", "t0k3n", "color: red"):
        assert hidden not in observation.text


@browser_test
async def test_form_controls_carry_labels_names_values_and_states(driver: PageDriver) -> None:
    observation = await open_page(driver, "forms.html")
    text = lines(observation)
    for expected in (
        '[1] textbox "Subject *" value="" required',
        '[2] textbox "Requester email" value="ada@example.test"',
        '[6] searchbox "Search tickets" value=""',
        '[7] spinbutton "Amount (EUR)" value="49.90"',
        '[8] slider "Urgency" value="3"',
        '[13] combobox "Priority" value="Normal" options=["Choose…", "Low", "Normal", "High"]',
        '[14] combobox "Team" value="First line" options=["First line", "Second line", "Platform"]',
        '[15] listbox "Tags" value="billing, urgent" options=["billing", "login", "urgent"]',
        '[16] radio "Email" checked',
        '[17] radio "Phone call" unchecked',
        '[19] checkbox "VIP customer" unchecked',
        '[21] textbox "Reference" value="T-1001" readonly',
        '[22] textbox "Legacy code" value="X9" disabled',
        '[23] textbox "Internal note" value="Call back after 3 pm"',
        '[24] checkbox "Escalate" unchecked',
        '[26] button "Reset"',
        '[28] link "All tickets"',
    ):
        assert expected in text
    assert named(observation, "All tickets").href == "/site/table.html"
    assert "Subject *" not in [line for line in text if not line.startswith("[")]  # label text not repeated
    assert "csrf" not in observation.text
    assert [(c.id, c.role, c.name) for c in observation.controls] == controls_in_text(observation.text)


@browser_test
async def test_controls_in_frames_and_shadow_roots_are_offered_and_usable(driver: PageDriver) -> None:
    await driver.page.goto(f"{driver.origin}/site/frames.html", wait_until="load")
    observation = await driver.observe()
    framed = named(observation, "Framed button")
    shadowed = named(observation, "Find")
    assert shadowed.value == "printer"
    await assert_ok(driver, Click(id=framed.id))
    await assert_ok(driver, Fill(id=shadowed.id, text="toner"))
    after = await driver.observe()
    assert named(after, "Framed clicked").id == framed.id
    assert named(after, "Find").value == "toner"


def _fitting_action(control: Control) -> Action:
    values = {"Due date": "2024-06-01", "Time": "10:30", "Colour": "#ff0000", "Urgency": "7",
              "Amount (EUR)": "12.5"}
    if control.options:
        return Select(id=control.id, option=control.options[-1])
    if control.role in ("checkbox", "radio"):
        return Check(id=control.id, checked=True)
    if control.role in ("textbox", "searchbox", "spinbutton", "slider"):
        return Fill(id=control.id, text=values.get(control.name, "x@example.test"))
    return Click(id=control.id)


@browser_test
async def test_every_offered_control_can_be_acted_on(driver: PageDriver) -> None:
    for name in ("forms.html", "table.html", "dialogs.html"):
        clicked = True
        for control in (await open_page(driver, name)).controls:
            if clicked:
                await open_page(driver, name)  # a fresh page: a click may have navigated away
            action = _fitting_action(control)
            clicked = isinstance(action, Click)
            outcome = await driver.act(action, 1)
            if control.disabled or control.readonly:
                assert outcome.rejection and outcome.rejection.cause == "not_applicable", control
            else:
                assert outcome.ok, (name, format_control(control), outcome.rejection)
            if driver.dialogs.open is not None:  # a confirm it raised waits for an answer (the page is stopped)
                await assert_ok(driver, AnswerDialog(accept=False))


@browser_test
async def test_fill_select_and_check_show_in_the_next_observation(driver: PageDriver) -> None:
    before = await open_page(driver, "forms.html")
    await assert_ok(driver, Fill(id=named(before, "Subject *").id, text="Printer jammed"))
    await assert_ok(driver, Select(id=named(before, "Priority").id, option="High"))
    await assert_ok(driver, Select(id=named(before, "Team").id, option="Platform"))
    await assert_ok(driver, Check(id=named(before, "VIP customer").id))
    await assert_ok(driver, Check(id=named(before, "Notify requester").id, checked=False))
    await assert_ok(driver, Check(id=named(before, "Phone call").id))
    await assert_ok(driver, Check(id=named(before, "Escalate").id))
    await assert_ok(driver, Fill(id=named(before, "Internal note").id, text="No callback"))
    after = await driver.observe()
    assert named(after, "Subject *").value == "Printer jammed"
    assert named(after, "Priority").value == "High"
    assert named(after, "Team").value == "Platform"
    assert named(after, "VIP customer").checked is True
    assert named(after, "Notify requester").checked is False
    assert named(after, "Phone call").checked is True
    assert named(after, "Email").checked is False
    assert named(after, "Escalate").checked is True
    assert named(after, "Internal note").value == "No callback"


@browser_test
async def test_actions_that_do_not_fit_their_control_are_rejected_with_a_reason(driver: PageDriver) -> None:
    observation = await open_page(driver, "forms.html")
    priority = named(observation, "Priority")
    wrong_option = await driver.act(Select(id=priority.id, option="Critical"), 1)
    assert wrong_option.rejection and wrong_option.rejection.cause == "not_applicable"
    assert '"Low", "Normal", "High"' in wrong_option.rejection.reason
    fill_checkbox = await driver.act(Fill(id=named(observation, "VIP customer").id, text="yes"), 2)
    assert fill_checkbox.rejection and fill_checkbox.rejection.cause == "not_applicable"
    uncheck_radio = await driver.act(Check(id=named(observation, "Email").id, checked=False), 3)
    assert uncheck_radio.rejection and uncheck_radio.rejection.cause == "not_applicable"
    done = await driver.act(Done(success=True), 4)
    assert done.rejection and done.rejection.cause == "not_applicable"


@browser_test
async def test_validation_message_shows_after_a_submit_attempt(driver: PageDriver) -> None:
    observation = await open_page(driver, "forms.html")
    assert named(observation, "Subject *").validation is None  # untouched fields are not flagged
    await assert_ok(driver, Click(id=named(observation, "Create ticket").id))
    after = await driver.observe()
    assert after.url == "/site/forms.html"
    assert named(after, "Subject *").validation


@browser_test
async def test_ids_are_stable_across_observations_of_the_same_page(driver: PageDriver) -> None:
    first = await open_page(driver, "dialogs.html")
    second = await driver.observe()
    assert first.controls == second.controls
    await assert_ok(driver, Click(id=named(first, "Remove me").id))
    third = await driver.observe()
    assert [c for c in first.controls if c.name != "Remove me"] == third.controls


@browser_test
async def test_unknown_and_stale_control_ids_are_rejected_with_a_reason(driver: PageDriver) -> None:
    observation = await open_page(driver, "dialogs.html")
    unknown = await driver.act(Click(id="99"), 1)
    assert unknown.rejection and unknown.rejection.cause == "unknown_control"
    assert "[99]" in unknown.rejection.reason and "latest observation" in unknown.rejection.reason
    remove = named(observation, "Remove me")
    await assert_ok(driver, Click(id=remove.id), 2)
    stale = await driver.act(Click(id=remove.id), 3)  # the latest observation still lists it
    assert stale.rejection and stale.rejection.cause == "stale_control"
    await driver.page.reload()
    after_reload = await driver.act(Click(id=named(observation, "Save").id), 4)
    assert after_reload.rejection and after_reload.rejection.cause == "stale_control"


@browser_test
async def test_navigation_is_limited_to_the_site(driver: PageDriver) -> None:
    await open_page(driver, "forms.html")
    for target in ("https://elsewhere.test/site/forms.html", "/elsewhere/page.html", "../elsewhere/page.html",
                   "//127.0.0.2/site/forms.html", "javascript:alert(1)"):
        outcome = await driver.act(Navigate(url=target), 1)
        assert outcome.rejection and outcome.rejection.cause == "off_site", target
    assert (await driver.observe()).url == "/site/forms.html"
    await assert_ok(driver, Navigate(url="table.html?page=2"))
    assert (await driver.observe()).url == "/site/table.html?page=2"


@browser_test
async def test_back_returns_to_the_previous_page_and_needs_history(driver: PageDriver) -> None:
    await driver.observe()  # about:blank
    nothing = await driver.act(Back(), 1)
    assert nothing.rejection and nothing.rejection.cause == "not_applicable"
    await open_page(driver, "forms.html")
    first = await driver.act(Back(), 2)
    assert first.rejection and first.rejection.cause == "not_applicable"
    observation = await driver.observe()
    await assert_ok(driver, Click(id=named(observation, "All tickets").id), 3)
    assert (await driver.observe()).url == "/site/table.html"
    await assert_ok(driver, Back(), 4)
    assert (await driver.observe()).url == "/site/forms.html"


@browser_test
async def test_an_alert_appears_in_the_next_observation_and_a_confirm_waits_for_the_answer(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "dialogs.html")
    await assert_ok(driver, Click(id=named(observation, "Save").id))
    await assert_ok(driver, Click(id=named(observation, "Delete").id))
    waiting = await driver.observe()
    assert waiting.dialogs == ["Ticket saved"]
    assert 'Dialog: "Ticket saved"' in lines(waiting)
    assert "Delete ticket T-1?" in lines(waiting)  # the confirm's question, open (tests/test_adapter_acting.py)
    await assert_ok(driver, AnswerDialog(accept=True))
    after = await driver.observe()
    assert "Deleted" in lines(after)  # the model's answer
    assert [event.kind for event in driver.dialog_log] == ["alert", "confirm"]
    assert (await driver.observe()).dialogs == []


@browser_test
async def test_a_modal_dialog_offers_only_its_own_controls(driver: PageDriver) -> None:
    observation = await open_page(driver, "dialogs.html")
    await assert_ok(driver, Click(id=named(observation, "Open settings").id))
    modal = await driver.observe()
    assert [c.name for c in modal.controls] == ["Name", "Close settings"]
    await assert_ok(driver, Click(id=named(modal, "Close settings").id))
    assert len((await driver.observe()).controls) == len(observation.controls)


@browser_test
async def test_requests_caused_by_an_action_carry_its_number(driver: PageDriver, site: FixtureSite) -> None:
    observation = await open_page(driver, "dialogs.html")
    await assert_ok(driver, Click(id=named(observation, "Ping").id), 41)
    assert site.tagged("/site/api/ping")[-1] == "41"
    assert "pong" in lines(await driver.observe())
    await assert_ok(driver, Click(id=named(observation, "Send slowly").id), 42)
    assert site.tagged("/site/slow")[-1] == "42"
    assert site.tagged("/site/submit?note=slow")[-1] == "42"
    assert site.keyed("/site/slow")[-1] == site.keyed("/site/submit?note=slow")[-1] == "action-42", "and its key"
    await assert_ok(driver, Navigate(url="/site/table.html"), 43)
    assert site.tagged("/site/table.html")[-1] == "43"
    assert site.keyed("/site/api/ping")[-1] == "action-41" and site.keyed("/site/table.html")[-1] == "action-43"


@browser_test
async def test_a_slow_form_submission_is_finished_before_act_returns(driver: PageDriver) -> None:
    observation = await open_page(driver, "dialogs.html")
    await assert_ok(driver, Click(id=named(observation, "Send slowly").id))
    after = await driver.observe()
    assert after.url == "/site/submit?note=slow"
    assert "- note: slow" in lines(after)


@browser_test
async def test_a_long_page_is_truncated_but_keeps_every_control(driver: PageDriver) -> None:
    observation = await open_page(driver, "long.html")
    assert observation.truncated
    assert observation.chars <= 6000
    assert [c.name for c in observation.controls] == ["New ticket", "Filter", "Load more"]
    assert lines(observation)[-1].startswith("Output truncated: ")
    filter_box = named(observation, "Filter")
    await assert_ok(driver, Fill(id=filter_box.id, text="toner"))
    assert named(await driver.observe(), "Filter").value == "toner"


@browser_test
async def test_a_checkbox_hidden_under_its_label_is_checked_through_the_label(driver: PageDriver) -> None:
    observation = await open_page(driver, "visibility.html")
    box = named(observation, "Visually hidden checkbox", "checkbox")
    assert box.checked is False
    await assert_ok(driver, Check(id=box.id))
    assert named(await driver.observe(), "Visually hidden checkbox").checked is True
    await assert_ok(driver, Check(id=box.id, checked=False), 2)
    assert named(await driver.observe(), "Visually hidden checkbox").checked is False


@browser_test
async def test_a_control_covered_by_another_element_is_refused_with_what_covers_it(driver: PageDriver) -> None:
    observation = await open_page(driver, "forms.html")
    button = next(c for c in observation.controls if c.role == "button" and not c.disabled)
    await driver.page.evaluate("""() => {
      const cover = document.createElement("div");
      cover.id = "cover";
      cover.className = "sheet dim";
      cover.style.cssText = "position: fixed; inset: 0; background: rgba(0, 0, 0, 0.01); z-index: 10";
      document.body.append(cover);
    }""")
    outcome = await driver.act(Click(id=button.id), 1)
    assert not outcome.ok and outcome.rejection is not None
    assert outcome.rejection.cause == "not_applicable"
    assert outcome.rejection.reason == (
        f"Control [{button.id}] cannot be clicked now: it is covered by <div#cover.sheet.dim>."
    )
    await driver.page.evaluate("() => document.getElementById('cover').remove()")


@browser_test
async def test_an_action_that_loads_a_page_says_so(driver: PageDriver) -> None:
    observation = await open_page(driver, "forms.html")
    link = next(c for c in observation.controls if c.role == "link")
    textbox = next(c for c in observation.controls if c.role == "textbox" and not c.disabled and not c.readonly)
    filled = await assert_ok(driver, Fill(id=textbox.id, text="abc"))
    assert not filled.navigated
    clicked = await assert_ok(driver, Click(id=link.id), 2)
    assert clicked.navigated
    assert (await assert_ok(driver, Back(), 3)).navigated
    assert (await assert_ok(driver, Navigate(url="/site/table.html"), 4)).navigated


@browser_test
async def test_a_widget_that_is_not_a_text_field_is_refused_fill_and_takes_keys(driver: PageDriver) -> None:
    observation = await open_page(driver, "widgets.html")
    slider = named(observation, "Brightness", "slider")
    assert slider.value == "40"
    refused = await driver.act(Fill(id=slider.id, text="70"), 1)
    assert refused.rejection is not None and refused.rejection.cause == "not_applicable"
    assert refused.rejection.reason.startswith(f"Cannot fill [{slider.id}]: it is a <div>, not a text field. Use press")
    await assert_ok(driver, Press(id=slider.id, key="ArrowRight"), 2)
    await assert_ok(driver, Press(id=slider.id, key="ArrowRight"), 3)
    assert named(await driver.observe(), "Brightness").value == "60"
    unknown = await driver.act(Press(id=slider.id, key="NoSuchKey"), 4)
    assert unknown.rejection is not None and unknown.rejection.cause == "execution_error"
    assert "NoSuchKey" in unknown.rejection.reason


@browser_test
async def test_a_control_cut_by_the_bottom_of_the_window_is_scrolled_to_and_clicked(driver: PageDriver) -> None:
    await driver.page.set_viewport_size({"width": 800, "height": 400})
    try:
        observation = await open_page(driver, "forms.html")
        button = next(c for c in observation.controls if c.role == "button" and not c.disabled)
        await driver.world.evaluate(  # the ids live in the driver's isolated world
            """([id, token]) => {
              const e = window.__computerops.byId.get(id);
              const box = e.getBoundingClientRect();
              window.scrollBy(0, box.top + box.height * 0.8 - window.innerHeight);  // only its top fifth shows
            }""",
            [button.id, driver._token],
        )
        point = await driver.click_point(button.id)
        assert point is not None and not isinstance(point, str), point
        assert 0 <= point.y < 400
    finally:
        await driver.page.set_viewport_size({"width": 1280, "height": 720})
