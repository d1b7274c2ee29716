"""Acting safely on hostile pages (issue 24 §1): the control acted on is the one the model chose, as it was offered,
and the page's dialogs are shown to the model and answered by it.

Two fixture pages of hostile tricks (tests/fixtures/pages/hostile/: acting.html, dialogs.html; kept out of the fidelity
audit of every fixture page, since they change under the pointer), each loaded
once per case set; what the page did is read from its own `window.record`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser

from adapter.acting import ActionOutcome
from adapter.actions import Action, AnswerDialog, Check, Click, Fill, Navigate, parse_action, text_protocol
from adapter.driver import PageDriver
from adapter.observation import Observation
from adapter.scripted.conversation import resolve_step
from tasks.spec import ScriptedStep

browser_test = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site) as page_driver:
        yield page_driver


async def record(driver: PageDriver) -> list[str]:
    found = await driver.page.evaluate("() => window.record")
    return [str(entry) for entry in found]


async def act(driver: PageDriver, action: Action) -> ActionOutcome:
    return await driver.act(action, 1)


# --- Time of check to time of use ------------------------------------------------------------------------------

# (control's offered name, what the page does between the observation and the action, if anything)
CHANGED_SINCE_THE_OBSERVATION = {
    "Cancel order A": "document.getElementById('text').textContent = 'Pay 500 EUR A'",
    "Cancel order B": "document.getElementById('aria').setAttribute('aria-label', 'Pay 500 EUR B')",
    "Cancel order C": "document.getElementById('role').setAttribute('role', 'link')",
}
CHANGED_AS_THE_POINTER_COMES = ("Cancel order D", "Cancel order F", "Cancel order G", "Cancel order H",
                                "I agree to the terms", "Cancel order I")
"""Overlay on pointerover, renamed on pointerover (text), renamed on pointerdown (aria-label), replaced on
pointerover by another element with the same DOM id, a checkbox's label renamed on pointerover, the frame of a
control covered (in the parent document) on pointerover."""
COVERED_AFTER_THE_PRESS = "Cancel order E"
"""An overlay put over it by its mousedown listener: the press reached it and the page answered, so it was acted on
(issue 50); the release and click, which would land on the overlay, are held back, so the overlay gets nothing."""


@browser_test
async def test_a_control_changed_since_the_observation_or_as_the_click_comes_is_refused_and_not_clicked(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "hostile/acting.html")
    ids = {control.name: control.id for control in observation.controls}
    for name, change in CHANGED_SINCE_THE_OBSERVATION.items():
        await driver.page.evaluate(change)
        outcome = await act(driver, Click(id=ids[name]))
        assert outcome.rejection is not None and outcome.rejection.cause == "changed_control", (name, outcome)
        assert f'"{name}"' in outcome.rejection.reason, outcome.rejection.reason
    for name in CHANGED_AS_THE_POINTER_COMES:
        action = Check(id=ids[name]) if name.startswith("I agree") else Click(id=ids[name])
        outcome = await act(driver, action)
        assert outcome.rejection is not None and outcome.rejection.cause == "changed_control", (name, outcome)
        assert "stopped" in outcome.rejection.reason, outcome.rejection.reason
    pressed = await act(driver, Click(id=ids[COVERED_AFTER_THE_PRESS]))
    assert pressed.ok and "the press reached it and the page" in pressed.note and " changed," in pressed.note, pressed
    assert "Pay 500 EUR" not in pressed.note and "held back" in pressed.note, pressed.note
    await driver.page.evaluate("document.getElementById('note').setAttribute('aria-label', 'Card number')")
    filled = await act(driver, Fill(id=ids["Order note"], text="leave at the door"))
    assert filled.rejection is not None and filled.rejection.cause == "changed_control", filled
    assert await record(driver) == []  # nothing was clicked, paid, checked or typed
    assert not await driver.page.evaluate("document.getElementById('agree').checked")
    # A page that renames a control in its own click handler, or restyles it on hover, is clicked as offered.
    for name in ("Follow", "Hover me"):
        outcome = await act(driver, Click(id=named(observation, name).id))
        assert outcome.ok, (name, outcome)
    assert await record(driver) == ["clicked:Follow", "clicked:hover"]


# --- Dialogs ---------------------------------------------------------------------------------------------------


def dialog_lines(observation: Observation) -> list[str]:
    return [line for line in observation.text.splitlines() if line.startswith("Dialog:")]


@browser_test
async def test_a_confirm_waits_for_the_models_answer_which_decides_the_write(driver: PageDriver) -> None:
    observation = await open_page(driver, "hostile/dialogs.html")
    cancel = named(observation, "Cancel order").id
    for accept, written in ((False, ["kept"]), (True, ["kept", "paid"])):
        opened = await act(driver, Click(id=cancel))  # the page cannot be read until the dialog is answered
        assert opened.ok and "waits for your answer" in opened.note, opened
        shown = await driver.observe()
        assert "Pay 500 EUR to ACME now?" in shown.text and "dialog action" in shown.text, shown.text
        assert shown.controls == []
        refused = await act(driver, Click(id=cancel))
        assert refused.rejection is not None and refused.rejection.cause == "dialog_open", refused
        answered = await act(driver, AnswerDialog(accept=accept))
        assert answered.ok and ("OK" if accept else "Cancel") in answered.note, answered
        assert await record(driver) == written  # what the model chose, not an answer given for it
        assert "Cancel order" in (await driver.observe()).text
    assert [event.kind for event in driver.dialog_log] == ["confirm", "confirm"]


@browser_test
@pytest.mark.parametrize(("button", "word", "alerts"), [("Flood", "Alert number", 10), ("Big flood", "Big alert", 300)])
async def test_an_alert_flood_shows_its_start_and_is_answered_in_bulk(driver: PageDriver, button: str, word: str,
                                                                     alerts: int) -> None:
    """The model sees a flood begin (the header's few alerts, then one that waits), answers once, and the rest is
    accepted in bulk and counted: 300 alerts cost one answer, well within an episode's action budget (issue 46)."""
    observation = await open_page(driver, "hostile/dialogs.html")
    await act(driver, Click(id=named(observation, button).id))
    first = await driver.observe()
    assert [line for line in first.text.splitlines() if word in line][:4] == [
        f'Dialog: "{word} 1"', f'Dialog: "{word} 2"', f'Dialog: "{word} 3"', f"{word} 4"], first.text
    assert driver.dialogs.open is not None, "the fourth waits: the model sees the flood begin"
    answered = await act(driver, AnswerDialog(accept=True))
    assert answered.ok, answered
    after = await driver.observe()
    assert driver.dialogs.open is None, "one answer, and the rest went in bulk"
    assert dialog_lines(after)[:3] == [f'Dialog: "{word} {i}"' for i in (5, 6, 7)], after.text
    assert any(f"{alerts - 7} more" in line for line in dialog_lines(after)), after.text
    assert await record(driver) == [f"{button.lower()} over"]
    # the next flood begins afresh: its start is shown again and waits for the model
    await act(driver, Click(id=named(after, button).id))
    assert driver.dialogs.open is not None and f'Dialog: "{word} 1"' in (await driver.observe()).text
    assert (await act(driver, AnswerDialog(accept=True))).ok


@browser_test
async def test_a_prompt_is_answered_with_the_models_text_and_a_leave_page_question_by_its_choice(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "hostile/dialogs.html")
    await act(driver, Click(id=named(observation, "Rename").id))
    shown = await driver.observe()
    assert "New name of the order?" in shown.text and '"Order 77"' in shown.text, shown.text
    wrong = await act(driver, Click(id=named(observation, "Edit").id))
    assert wrong.rejection is not None and wrong.rejection.cause == "dialog_open"
    assert (await act(driver, AnswerDialog(accept=True, text="Order 78"))).ok
    assert await record(driver) == ["renamed:Order 78"]
    observation = await driver.observe()
    editing = await act(driver, Click(id=named(observation, "Edit").id))  # sets onbeforeunload, with a user gesture
    assert editing.ok and await record(driver) == ["renamed:Order 78", "editing"], editing
    leaving = await act(driver, Navigate(url="/site/forms.html"))
    assert leaving.ok and "waits for your answer" in leaving.note, leaving
    assert "whether to leave this page" in (await driver.observe()).text
    assert (await act(driver, AnswerDialog(accept=False))).ok  # Stay
    assert (await driver.observe()).url == "/site/hostile/dialogs.html"
    assert (await act(driver, Navigate(url="/site/forms.html"))).ok
    stayed_or_left = await act(driver, AnswerDialog(accept=True))  # Leave
    assert stayed_or_left.ok and stayed_or_left.navigated, stayed_or_left
    assert (await driver.observe()).url == "/site/forms.html"


@browser_test
async def test_a_dialog_left_unanswered_is_dismissed_after_its_time_bound_and_the_model_is_told(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "hostile/dialogs.html")
    driver.dialogs.wait_s = 0.05
    await act(driver, Click(id=named(observation, "Cancel order").id))
    await driver.page.wait_for_function("() => window.record.length > 0")  # the page goes on once it is dismissed
    assert await record(driver) == ["kept"]  # dismissed: Cancel, never OK
    shown = await driver.observe()
    assert any(line.startswith("Notice:") and "was dismissed" in line for line in shown.text.splitlines()), shown.text
    late = await act(driver, AnswerDialog(accept=True))
    assert late.rejection is not None and "No dialog is open" in late.rejection.reason


# --- The action (pure) -----------------------------------------------------------------------------------------


def test_the_dialog_action_is_in_the_tool_schemas_the_text_protocol_and_the_scripted_steps() -> None:
    assert parse_action("dialog", '{"accept": false}') == AnswerDialog(accept=False)
    assert parse_action("dialog", '{"accept": true, "text": "Order 78"}') == AnswerDialog(accept=True, text="Order 78")
    assert parse_action("dialog", '{"accept": "yes"}').cause == "malformed_arguments"  # type: ignore[union-attr]
    assert '{"action": "dialog", "accept": boolean, "text": string}' in text_protocol()
    step = ScriptedStep(action="dialog", accept=False)
    reply = resolve_step(step, "")
    assert reply is not None and reply.tool == "dialog" and reply.arguments == '{"accept": false}'
