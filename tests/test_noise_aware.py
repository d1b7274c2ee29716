"""The scripted `noise-aware` control (adapter/scripted/noise_aware.py) and how `tasks check --noise` judges it
(computerops/catalog/noise_check.py), pure: its step index counts only the task's own accepted steps whatever noise
turns come between them (Hypothesis), it takes away what stands over the page by the declared labels, loads more,
waits out a scroll, finds renamed labels, and otherwise answers as `oracle`; the plain control must fail where the
noise stood in the named steps' way. The browser check is tests/test_noise_check.py."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from typer.testing import CliRunner

import adapter.scripted.server as scripted_server
from adapter.observation import Control, format_control
from adapter.prompts import first_message, result_message, result_ok, result_rejected
from adapter.scripted.conversation import Conversation, Reply, resolve_step
from adapter.scripted.fallible import Turn
from adapter.scripted.noise_aware import (
    HOLDS_BACK,
    IN_THE_WAY,
    MAX_WAITS,
    NAME,
    NEEDS_NOTHING,
    REVEALED_BY_WAITING,
    WAIT_S,
    Handled,
    Handling,
    decide_noise_aware,
    names_of,
    noise_aware,
    progress,
)
from adapter.scripted.policies import policy_by_name
from adapter.scripted.server import create_scripted_app
from computerops.catalog.noise_check import (
    NoiseCheckReport,
    NoiseControlResult,
    blocked_by,
    kind_summaries,
)
from computerops.cli.main import app
from sites.kit.noise import NOISE, NOISE_KINDS, NoiseKind
from tasks import ScriptedStep, load_catalog

CONTROL = [
    ScriptedStep(id="open-tickets", action="click", role="link", name="Tickets"),
    ScriptedStep(id="type-number", action="fill", role="searchbox", name="Search tickets", text="T-7"),
    ScriptedStep(id="search", action="click", role="button", name="Search"),
    ScriptedStep(id="open-ticket", action="click", role="link", name="T-7"),
    ScriptedStep(id="choose-status", action="select", role="combobox", name="Status", option="solved"),
    ScriptedStep(id="save-status", action="click", role="button", name="Save status"),
    ScriptedStep(id="finish", action="done", success=True, message="Ticket T-7 is solved."),
]
VERBS = {"click": "clicked", "fill": "filled", "select": "selected 'solved' in", "hover": "the pointer is over"}


def _note(action: str, role: str, name: str) -> str:
    return f"{VERBS[action]} {format_control(Control(id='4', role=role, name=name))}"


def _step_turn(step: ScriptedStep, renamed: bool) -> Turn:
    assert step.role is not None and step.name is not None
    name = names_of(step.role, step.name)[-1] if renamed else step.name
    return Turn(step.action, {"id": "4"}, True, _note(step.action, step.role, name), None)


NOISE_TURNS = st.sampled_from([
    Turn("click", {"id": "9"}, True, _note("click", "button", "Accept all"), None),
    Turn("click", {"id": "9"}, True, _note("click", "button", "Not now"), None),
    Turn("click", {"id": "1"}, True, _note("click", "link", "Sign in again"), None),
    Turn("click", {"id": "23"}, True, _note("click", "button", "Load more (15 more)"), None),
    Turn("hover", {"id": "22"}, True, _note("hover", "link", "T-2091"), None),
    Turn("click", {"id": "12"}, False, "", None),  # refused as covered: never a step
])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.lists(NOISE_TURNS, max_size=3), st.booleans()), min_size=len(CONTROL) - 1,
                max_size=len(CONTROL) - 1),
       st.integers(min_value=0, max_value=len(CONTROL) - 1))
def test_the_step_index_counts_only_the_tasks_own_steps_whatever_noise_turns_come_between(
        between: list[tuple[list[Turn], bool]], taken: int) -> None:
    turns: list[Turn] = []
    expected: list[Handled] = []
    for index, (noise, renamed) in enumerate(between[:taken]):
        for turn in noise:
            if turn.accepted:
                handling: Handling = ("dismissed" if "Load more" not in turn.note and turn.action == "click" else
                                      "loaded" if turn.action == "click" else "revealed")
                expected.append(Handled(len(turns), handling, index, json.loads(turn.note.split("] ", 1)[1]
                                                                                 .split(" ", 1)[1])))
            turns.append(turn)
        step = CONTROL[index]
        renamed = renamed and len(names_of(step.role, step.name)) > 1
        if renamed:
            expected.append(Handled(len(turns), "renamed", index, names_of(step.role, step.name)[-1]))
        turns.append(_step_turn(step, renamed))
    state = progress(CONTROL, turns)
    assert state.done == taken
    assert list(state.handled) == expected


def test_a_step_on_a_control_named_like_a_dismiss_label_is_the_step() -> None:
    control = [ScriptedStep(action="click", role="button", name="Accept all"),
               ScriptedStep(action="done", success=True, message="ok")]
    state = progress(control, [Turn("click", {"id": "4"}, True, _note("click", "button", "Accept all"), None)])
    assert (state.done, state.handled) == (1, ())


def _page(*lines: str, controls: Sequence[tuple[str, str]] = ()) -> str:
    rendered = [format_control(Control(id=str(at + 1), role=role, name=name)) for at, (role, name) in
                enumerate(controls)]
    return "\n".join(["Page: Tickets", "URL: /helpdesk/tickets", "", *rendered, *lines])


def _conversation(observation: str, turns: Sequence[tuple[Mapping[str, object], str | None]] = ()) -> Conversation:
    """A conversation whose replies were these (arguments with their action; the note, None for a refusal)."""
    messages: list[dict[str, object]] = [{"role": "user", "content": first_message("Solve T-7.", observation)}]
    for number, (arguments, note) in enumerate(turns):
        name = arguments["action"]
        call = {"id": f"call-{number}", "type": "function",
                "function": {"name": name, "arguments": json.dumps({k: v for k, v in arguments.items()
                                                                    if k != "action"})}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        result = result_ok(note) if note is not None else result_rejected("not_applicable", "covered")
        messages.append({"role": "tool", "tool_call_id": f"call-{number}", "content": result_message(result,
                                                                                                    observation)})
    return Conversation(task=None, observation=observation, accepted=0, turns=len(turns), messages=tuple(messages))


def _call(reply: Reply) -> tuple[str | None, dict[str, object]]:
    return reply.tool, json.loads(reply.arguments or "{}")


CONSENT = f"{NOISE['consent_banner'].shows}. We use cookies."


def test_it_takes_away_what_stands_over_the_page_before_the_step_by_the_declared_label() -> None:
    page = _page(CONSENT, controls=[("link", "Tickets"), ("button", "Accept all"), ("button", "Reject non-essential")])
    assert _call(decide_noise_aware(CONTROL, _conversation(page))) == ("click", {"id": "2"})
    expired = _page(f"# {NOISE['session_timeout'].shows}", controls=[("link", "Sign in again")])
    assert _call(decide_noise_aware(CONTROL, _conversation(expired))) == ("click", {"id": "1"})
    # the label alone, without the kind's text on the page, is no noise: the step is taken
    plain = _page(controls=[("link", "Tickets"), ("button", "Accept all")])
    assert _call(decide_noise_aware(CONTROL, _conversation(plain))) == ("click", {"id": "1"})


def test_after_a_dismissal_it_takes_the_step_the_dismissal_stood_before() -> None:
    page = _page(controls=[("link", "Tickets"), ("searchbox", "Search tickets")])
    turns = [({"action": "click", "id": "9"}, _note("click", "button", "Accept all")),
             ({"action": "click", "id": "1"}, _note("click", "link", "Tickets"))]
    assert _call(decide_noise_aware(CONTROL, _conversation(page, turns))) == ("fill", {"id": "2", "text": "T-7"})


def test_it_loads_more_only_when_the_steps_control_is_not_offered() -> None:
    done = [({"action": "click", "id": "1"}, _note("click", "link", "Tickets")),
            ({"action": "fill", "id": "2"}, _note("fill", "searchbox", "Search tickets")),
            ({"action": "click", "id": "3"}, _note("click", "button", "Search"))]
    hidden = _page(controls=[("link", "T-1"), ("button", "Load more (5 more)")])
    assert _call(decide_noise_aware(CONTROL, _conversation(hidden, done))) == ("click", {"id": "2"})
    shown = _page(controls=[("link", "T-7"), ("button", "Load more (5 more)")])
    assert _call(decide_noise_aware(CONTROL, _conversation(shown, done))) == ("click", {"id": "1"})


def test_it_waits_out_lazy_rows_by_hovering_the_control_before_them_then_gives_up_honestly() -> None:
    done = [({"action": "click", "id": "1"}, _note("click", "link", "Tickets")),
            ({"action": "fill", "id": "2"}, _note("fill", "searchbox", "Search tickets")),
            ({"action": "click", "id": "3"}, _note("click", "button", "Search"))]
    page = _page(controls=[("link", "Tickets"), ("link", "T-1"), ("link", "T-2")])
    page = page.replace('[3] link "T-2"', f'[3] link "T-2"\n{NOISE["lazy_rows"].shows}…\n[4] link "Next page"')
    reply = decide_noise_aware(CONTROL, _conversation(page, done))
    assert _call(reply) == ("hover", {"id": "3"}) and reply.pause_s == WAIT_S
    waited = [({"action": "hover", "id": "3"}, _note("hover", "link", "T-2"))] * MAX_WAITS
    assert _call(decide_noise_aware(CONTROL, _conversation(page, done + waited)))[0] == "done"


def test_it_finds_a_button_renamed_by_the_label_variation() -> None:
    done = [({"action": "click", "id": "1"}, _note("click", "link", "Tickets")),
            ({"action": "fill", "id": "2"}, _note("fill", "searchbox", "Search tickets"))]
    page = _page(controls=[("searchbox", "Search tickets"), ("button", "Go")])
    assert _call(decide_noise_aware(CONTROL, _conversation(page, done))) == ("click", {"id": "2"})
    assert names_of("button", "Save status") == ("Save status", "Update status")


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(min_value=0, max_value=len(CONTROL) - 1),
       st.lists(st.sampled_from([("link", "Tickets"), ("searchbox", "Search tickets"), ("button", "Search"),
                                 ("link", "T-7"), ("combobox", "Status"), ("button", "Save status"),
                                 ("link", "Orders")]), max_size=6))
def test_on_a_page_without_noise_it_answers_as_the_oracle(done: int, controls: list[tuple[str, str]]) -> None:
    turns = [({"action": step.action, "id": "4"}, _note(step.action, step.role or "", step.name or ""))
             for step in CONTROL[:done]]
    page = _page(controls=controls)
    oracle = resolve_step(CONTROL[done], page)
    reply = decide_noise_aware(CONTROL, _conversation(page, turns))
    assert reply == oracle if oracle is not None else _call(reply)[0] == "done"


def test_every_kind_is_handled_one_way_and_the_policy_is_served_by_its_name() -> None:
    groups = (IN_THE_WAY, HOLDS_BACK, REVEALED_BY_WAITING, NEEDS_NOTHING)
    assert sorted(kind for group in groups for kind in group) == sorted(NOISE_KINDS)
    assert all(NOISE[kind].dismiss for kind in (*IN_THE_WAY, *HOLDS_BACK))
    assert policy_by_name(NAME) is noise_aware


@pytest.mark.parametrize(("kind", "handling", "step", "blocked"), [
    ("interstitial", "dismissed", 1, True),      # a fill on the page the survey covered
    ("interstitial", "dismissed", 6, False),     # dismissed before the done: the verifier's `seen` check judges it
    ("session_timeout", "dismissed", 3, True),
    ("consent_banner", "dismissed", 0, False),   # the banner covers part of the viewport: geometry, not required
    ("label_variation", "renamed", 2, True),
    ("load_more", "loaded", 3, True),
    ("lazy_rows", "revealed", 3, True),
])
def test_the_noise_stood_in_the_named_steps_way_where_the_noise_aware_control_had_to_act(
        kind: NoiseKind, handling: Handling, step: int, blocked: bool) -> None:
    handled = [Handled(0, handling, step, "x")]
    assert blocked_by(kind, CONTROL, handled) is blocked
    assert not blocked_by(kind, CONTROL, [])


def _result(kind: NoiseKind, *, blocked: bool, plain: str, handled: Sequence[str] = ("x",)) -> NoiseControlResult:
    return NoiseControlResult(task_id="t@1", kind=kind, aware_outcome="verified_success", aware_replay="PASS",
                              handled=list(handled), blocked=blocked, plain_outcome=plain, plain_ended="-",
                              plain_replay="PASS")


def test_a_plain_control_that_verifies_where_the_noise_stood_in_its_way_fails_the_check() -> None:
    assert not _result("interstitial", blocked=True, plain="verified_success").ok
    assert _result("interstitial", blocked=True, plain="honest_failure").ok
    assert _result("consent_banner", blocked=False, plain="verified_success").ok


def test_a_kind_that_needed_nothing_says_so() -> None:
    report = NoiseCheckReport(kinds=["layout_shift", "interstitial"], verified=True, verify_problems=[], results=[
        _result("layout_shift", blocked=False, plain="verified_success", handled=()),
        _result("interstitial", blocked=True, plain="honest_failure")])
    shift, survey = kind_summaries(report)
    assert shift.reading == "needed no handling: the plain control verified every instance"
    assert survey.reading == "in the named steps' way on 1, where the plain control failed on 1"
    banner = NoiseControlResult(task_id="t@1", kind="consent_banner", aware_outcome="verified_success",
                                aware_replay="PASS", handled=["dismissed 'Accept all' before step 1"], blocked=False,
                                plain_outcome="honest_failure", plain_replay="PASS",
                                plain_ended="stopped: budget_exhausted; 29 rejected, first: Control [9] cannot be "
                                            "clicked now: it is covered by <div#noise-consent>.")
    (summary,) = kind_summaries(NoiseCheckReport(kinds=["consent_banner"], verified=True, verify_problems=[],
                                                 results=[banner]))
    assert summary.reading == ("never in the named steps' way; the plain control also failed on 1 where the "
                               "noise-aware control's turns do not show the noise in the way, 1 of them with a click "
                               "refused as covered (its rows say why)")


def test_an_unknown_noise_kind_is_refused_by_name_before_anything_runs() -> None:
    result = CliRunner().invoke(app, ["tasks", "check", "--tasks", "helpdesk.solve-ticket@1", "--noise",
                                      "interstitial,popup"])
    assert result.exit_code != 0
    assert "unknown noise kind 'popup'" in result.output


def test_the_scripted_endpoint_waits_the_pause_a_reply_asks_for_before_it_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(scripted_server, "asyncio", SimpleNamespace(sleep=sleep))
    task = load_catalog()["helpdesk.solve-ticket@1"]
    page = _page(f"{NOISE['lazy_rows'].shows}…", controls=[("link", "T-1")])
    client = TestClient(create_scripted_app([task]))
    body = {"model": f"scripted:{NAME}", "messages": [{"role": "user", "content": first_message(
        task.spec.instruction, page)}]}
    reply = client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]
    assert json.loads(reply["content"])["action"] == "hover"  # no tools offered: the text protocol
    assert waited == [WAIT_S]
    body["model"] = "scripted:oracle"  # a reply that asks for no pause is not held back
    client.post("/v1/chat/completions", json=body)
    assert waited == [WAIT_S]


def test_a_slow_control_is_waited_out_for_its_declared_timer_in_one_pause_and_lazy_rows_for_the_short_one() -> None:
    """A spinner's wait lasts the kind's declared `seconds`, whatever a step costs on the machine: waiting it out in
    `WAIT_S` pauses took three or four of the action budget's turns a spinner, and a long task
    (helpdesk.refund-after-delayed-approval@1, two spinners) ran out of its budget under the slow tier's check."""
    done = [({"action": "click", "id": "1"}, _note("click", "link", "Tickets")),
            ({"action": "fill", "id": "2"}, _note("fill", "searchbox", "Search tickets"))]
    page = _page(f"{NOISE['slow_control'].shows}", controls=[("link", "Tickets"), ("searchbox", "Search tickets")])
    reply = decide_noise_aware(CONTROL, _conversation(page, done))
    assert _call(reply)[0] == "hover"
    assert reply.pause_s == NOISE["slow_control"].seconds > WAIT_S
    lazy = _page(f"{NOISE['lazy_rows'].shows}…", controls=[("link", "Tickets"), ("searchbox", "Search tickets")])
    assert decide_noise_aware(CONTROL, _conversation(lazy, done)).pause_s == WAIT_S
