"""Blind cases against the scripted noise-aware control (adapter/scripted/noise_aware.py) and the judgement of
`tasks check --noise` (computerops/catalog/noise_check.py), written from their contract (docs/noise.md), not from
their authors' examples: the control deals with noise only through what sites/kit/noise.py declares, counts only the
task's own accepted steps, never loops on a dismissal or a reveal that does nothing, never guesses between two
controls a synonym could name, and the plain control is required to fail exactly where the noise stood in its way.

Pure: conversations are built as the loop writes them (adapter/prompts.py), and a small page model answers the
policy's actions where a case needs several turns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapter.acting import described
from adapter.observation import Control, controls_in_text, format_control
from adapter.prompts import first_message, result_message, result_ok, result_rejected
from adapter.scripted.conversation import Conversation, Reply
from adapter.scripted.fallible import turns_of
from adapter.scripted.noise_aware import (
    HOLDS_BACK,
    IN_THE_WAY,
    MAX_WAITS,
    REVEALED_BY_WAITING,
    Handled,
    decide_noise_aware,
    names_of,
    offered_dismissal,
    progress,
)
from computerops.catalog.noise_check import NoiseCheckReport, NoiseControlResult, blocked_by, kind_summaries
from sites.kit.noise import BUTTON_LABELS, BUTTON_VERBS, HEADER_SYNONYMS, NOISE, NoiseKind, dress
from tasks import ScriptedStep

INSTRUCTION = "Close ticket T-7 as solved."
DONE = ScriptedStep(action="done", success=True, message="Closed T-7.")


# --- Observations and conversations, as the adapter and the loop write them -------------------------------------

def line(control_id: str, role: str, name: str) -> str:
    return format_control(Control(id=control_id, role=role, name=name, href="/t" if role == "link" else None))


def note_for(action: str, control_id: str, role: str, name: str) -> str:
    """The result note the driver writes for an accepted action on a control (adapter/driver.py)."""
    control = Control(id=control_id, role=role, name=name, href="/t" if role == "link" else None)
    return {"click": f"clicked {described(control)}", "hover": f"the pointer is over {described(control)}",
            "fill": f"filled {described(control)}; it holds \"x\""}[action]


def banner(kind: NoiseKind, first_id: int) -> list[str]:
    """The lines a noise kind that stands over the page adds: its text and its declared dismiss control (with a
    second button where the kind has one)."""
    params = NOISE[kind]
    assert params.dismiss is not None
    role = "link" if kind == "session_timeout" else "button"
    lines = [f"{params.shows}. Some words about it.", line(str(first_id), role, params.dismiss)]
    if kind == "consent_banner":
        lines.append(line(str(first_id + 1), "button", "Reject non-essential"))
    return lines


def page(*lines: str, title: str = "Tickets") -> str:
    return "\n".join([f"Page: {title}", "URL: /helpdesk/tickets", "", *lines])


@dataclass
class Chat:
    """A conversation with the policy, written as the loop writes it."""

    observation: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.messages.append({"role": "user", "content": first_message(INSTRUCTION, self.observation)})

    def answer(self, reply: Reply, result: str, observation: str) -> None:
        call = {"id": f"call-{len(self.messages)}", "type": "function",
                "function": {"name": reply.tool, "arguments": reply.arguments}}
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        self.messages.append({"role": "tool", "tool_call_id": call["id"],
                              "content": result_message(result, observation)})
        self.observation = observation

    def conversation(self) -> Conversation:
        return Conversation(task=None, observation=self.observation, accepted=0, turns=len(self.messages) // 2,
                            messages=tuple(self.messages))


def arguments(reply: Reply) -> dict[str, Any]:
    return dict(json.loads(reply.arguments or "{}"))


def clicked_name(reply: Reply, observation: str) -> str | None:
    """The name of the control a click reply chose on that observation; None for any other reply."""
    if reply.tool != "click":
        return None
    chosen = arguments(reply)["id"]
    return next(name for cid, _, name in controls_in_text(observation) if cid == chosen)


def gives_up(reply: Reply) -> bool:
    return reply.tool == "done" and arguments(reply).get("success") is False


# --- The step index ----------------------------------------------------------------------------------------------

DISMISS_NAMES: list[tuple[str, str]] = [("link" if kind == "session_timeout" else "button", str(NOISE[kind].dismiss))
                                        for kind in IN_THE_WAY]
"""(role, name) of every declared control that takes away what stands over a page."""
TASK_NAMES = st.sampled_from(["Close ticket", "Save", "Save status", "Accept all invoices", "Sign in again later",
                              "Not now, later", "Load more rows", "Status", "Send reply", "Open T-7"])
"""Names of the task's own controls, some holding a declared dismiss label inside them."""


class Taken(NamedTuple):
    """One turn of an episode: the action, the control's name, whether it was accepted, the result's note, and what
    it was: a task's step, or one the noise asked for ("dismissed", "loaded", "revealed"), or a refused one."""

    action: str
    name: str
    accepted: bool
    note: str
    was: str


@st.composite
def noise_turn(draw: st.DrawFn, step: ScriptedStep) -> Taken:
    """One turn the noise asked for before `step`, or a refused one."""
    kind = draw(st.sampled_from(["dismissed", "loaded", "revealed", "refused"]))
    if kind == "dismissed":
        role, name = draw(st.sampled_from(DISMISS_NAMES))
        return Taken("click", name, True, note_for("click", "90", role, name), kind)
    if kind == "loaded":
        name = f"{NOISE['load_more'].dismiss} ({draw(st.integers(1, 40))} more)"
        return Taken("click", name, True, note_for("click", "91", "button", name), kind)
    if kind == "revealed":
        name = draw(TASK_NAMES)  # a reveal hovers over whatever control comes before the kind's text
        return Taken("hover", name, True, note_for("hover", "92", "button", name), kind)
    action = draw(st.sampled_from(["click", "fill", "hover"]))  # refused, whatever it was aimed at
    return Taken(action, str(step.name), False, "", kind)


@st.composite
def steps_and_turns(draw: st.DrawFn) -> tuple[list[ScriptedStep], list[Taken], int]:
    """A task's steps and the turns of an episode that took the first `taken` of them (some under a declared
    synonym of their name), with any noise turns and refusals between."""
    count = draw(st.integers(1, 4))
    steps: list[ScriptedStep] = []
    for _ in range(count):
        name = draw(TASK_NAMES)
        if draw(st.booleans()):
            steps.append(ScriptedStep(action="click", role="button", name=name))
        else:
            steps.append(ScriptedStep(action="fill", role="textbox", name=name, text="x"))
    taken = draw(st.integers(0, count))
    turns: list[Taken] = []
    for step in steps[:taken]:
        turns += draw(st.lists(noise_turn(step), max_size=3))
        synonyms = list(names_of(step.role, step.name)[1:])
        renamed = len(synonyms) > 0 and draw(st.booleans())
        name = draw(st.sampled_from(synonyms)) if renamed else str(step.name)
        turns.append(Taken(step.action, name, True, note_for(step.action, "7", str(step.role), name),
                           "step" if name == step.name else "renamed"))
    turns += draw(st.lists(noise_turn(steps[taken] if taken < count else DONE_AIMED), max_size=3))
    return [*steps, DONE], turns, taken


DONE_AIMED = ScriptedStep(action="click", role="button", name="Close ticket")
"""What a refused turn after the last step is aimed at (a name only)."""


def chat_of(turns: Sequence[Taken]) -> Chat:
    chat = Chat(page(line("7", "button", "Close ticket")))
    for turn in turns:
        given = {"id": "7", **({"text": "x"} if turn.action == "fill" else {})}
        reply = Reply(tool=turn.action, arguments=json.dumps(given))
        chat.answer(reply, result_ok(turn.note) if turn.accepted else result_rejected("not_applicable", "covered"),
                    chat.observation)
    return chat


class TestTheStepIndex:
    @given(steps_and_turns())
    def test_only_the_tasks_own_accepted_steps_advance_it(
            self, case: tuple[list[ScriptedStep], list[Taken], int]) -> None:
        steps, turns, taken = case
        state = progress(steps, turns_of(chat_of(turns).messages))
        assert state.done == taken
        assert [h.handling for h in state.handled] == [t.was for t in turns if t.was not in ("step", "refused")]
        assert [h.control for h in state.handled] == [t.name for t in turns if t.was not in ("step", "refused")]

    def test_a_dismissal_before_the_first_step_leaves_the_first_step_due(self) -> None:
        step = ScriptedStep(action="click", role="link", name="T-7")
        shown = page(line("3", "link", "T-7"))
        chat = Chat(page(line("3", "link", "T-7"), *banner("interstitial", 40)))
        chat.answer(Reply(tool="click", arguments='{"id": "40"}'), result_ok(note_for("click", "40", "button",
                                                                                      "Not now")), shown)
        reply = decide_noise_aware([step, DONE], chat.conversation())
        assert clicked_name(reply, shown) == "T-7"


# --- A page that answers the policy ------------------------------------------------------------------------------

STEP = ScriptedStep(action="click", role="link", name="T-7")
BANNER_IDS: dict[NoiseKind, int] = {"consent_banner": 40, "interstitial": 50, "session_timeout": 60}


@dataclass
class NoisyPage:
    """A ticket list with noise standing over it: a dismiss control takes its kind away, unless the page refuses its
    click (`refuses`, while `refused_while` still stands) or ignores it (`ignores`)."""

    standing: list[NoiseKind]
    refuses: set[str] = field(default_factory=set)
    refused_while: NoiseKind | None = None
    ignores: set[str] = field(default_factory=set)
    task_lines: list[str] = field(default_factory=lambda: [line("3", "link", "T-7")])
    extra: list[str] = field(default_factory=list)
    stepped: bool = False

    def text(self) -> str:
        lines = [*self.task_lines, *self.extra]
        for kind in self.standing:
            lines += banner(kind, BANNER_IDS[kind])
        return page(*lines)

    def act(self, reply: Reply) -> str:
        """The result line of one action (the page changes as it would)."""
        target = arguments(reply).get("id")
        found = next(((role, name) for cid, role, name in controls_in_text(self.text()) if cid == target), None)
        if reply.tool not in ("click", "hover") or found is None:
            return result_rejected("unknown_control", "no such control")
        role, name = found
        if name in self.refuses and (self.refused_while is None or self.refused_while in self.standing):
            return result_rejected("not_applicable", f"Control [{target}] cannot be clicked now: it is covered by "
                                                     "<div#noise-interstitial>.")
        if reply.tool == "click" and name not in self.ignores:
            self.standing = [kind for kind in self.standing if name != NOISE[kind].dismiss]
            self.stepped = self.stepped or name == STEP.name
        return result_ok(note_for(str(reply.tool), str(target), role, name))


def run(noisy: NoisyPage, steps: Sequence[ScriptedStep], limit: int) -> list[Reply]:
    """The policy's replies against the page until it finishes or `limit` replies; it never claims success before
    the page took its step."""
    chat = Chat(noisy.text())
    replies: list[Reply] = []
    for _ in range(limit):
        reply = decide_noise_aware(steps, chat.conversation())
        replies.append(reply)
        if reply.tool == "done":
            assert not arguments(reply)["success"] or noisy.stepped, "claimed success before its step was taken"
            break
        chat.answer(reply, noisy.act(reply), noisy.text())
    return replies


def clicks(replies: Sequence[Reply], control_id: int | str) -> int:
    return sum(1 for reply in replies if reply.tool == "click" and arguments(reply).get("id") == str(control_id))


class TestWhatStandsOverThePage:
    def test_the_declared_label_is_clicked_not_a_task_control_that_begins_with_it(self) -> None:
        observation = page(line("1", "button", "Accept all (3)"), line("2", "button", "Accept all invoices"),
                           line("3", "link", "T-7"), *banner("consent_banner", 40))
        reply = decide_noise_aware([STEP, DONE], Chat(observation).conversation())
        assert clicked_name(reply, observation) == "Accept all" and arguments(reply)["id"] == "40"

    @given(st.lists(st.tuples(st.sampled_from([str(NOISE[kind].dismiss) for kind in (*IN_THE_WAY, *HOLDS_BACK)]),
                              st.sampled_from(["", "Do not ", "Bulk: "]),
                              st.sampled_from(["", " (3)", " invoices", " (12 pending)", "…", "!"]))
                    .filter(lambda parts: bool(parts[1] or parts[2])), max_size=4),
           st.sampled_from(IN_THE_WAY))
    def test_only_a_control_named_exactly_as_a_kind_declares_is_taken_for_its_dismissal(
            self, task_names: list[tuple[str, str, str]], kind: NoiseKind) -> None:
        task_lines = [line(str(n + 1), "button", f"{head}{label}{tail}")
                      for n, (label, head, tail) in enumerate(task_names)]
        observation = page(*task_lines, *banner(kind, BANNER_IDS[kind]))
        assert offered_dismissal(observation, IN_THE_WAY) == (str(BANNER_IDS[kind]), NOISE[kind].dismiss)

    def test_a_control_named_like_a_dismissal_is_left_alone_where_the_kind_does_not_show(self) -> None:
        observation = page(line("1", "button", "Accept all"), line("2", "button", "Not now"), line("3", "link", "T-7"))
        reply = decide_noise_aware([STEP, DONE], Chat(observation).conversation())
        assert clicked_name(reply, observation) == "T-7"

    @pytest.mark.parametrize("order", [["consent_banner", "interstitial"], ["interstitial", "consent_banner"]])
    def test_two_at_once_are_both_taken_away_then_the_step_is_taken(self, order: list[NoiseKind]) -> None:
        noisy = NoisyPage(standing=list(order))
        replies = run(noisy, [STEP, DONE], limit=10)
        assert noisy.standing == [] and noisy.stepped
        assert [clicks(replies, BANNER_IDS[kind]) for kind in order] == [1, 1]
        assert replies[-1].tool == "done" and arguments(replies[-1])["success"] is True

    def test_a_dismissal_refused_under_another_is_tried_again_once_the_other_is_gone(self) -> None:
        # the consent banner's button refused while the survey stands over it (the adapter before issue 49's change)
        noisy = NoisyPage(standing=["consent_banner", "interstitial"], refuses={"Accept all"},
                          refused_while="interstitial")
        replies = run(noisy, [STEP, DONE], limit=10)
        assert noisy.standing == [] and noisy.stepped, [(r.tool, r.arguments) for r in replies]
        assert replies[-1].tool == "done" and arguments(replies[-1])["success"] is True

    @pytest.mark.parametrize("fails", ["refused", "ignored"])
    def test_a_dismissal_that_does_nothing_is_not_repeated_on_the_unchanged_page(self, fails: str) -> None:
        failing = {"Accept all"}
        noisy = NoisyPage(standing=["consent_banner"], refuses=failing if fails == "refused" else set(),
                          ignores=failing if fails == "ignored" else set())
        replies = run(noisy, [STEP, DONE], limit=3 * MAX_WAITS)
        assert clicks(replies, BANNER_IDS["consent_banner"]) == 1, [(r.tool, r.arguments) for r in replies]
        assert replies[-1].tool == "done"


class TestRevealingMore:
    """Reveals end: the rows or the control that never come are given up on honestly, however the page answers."""

    @pytest.mark.parametrize("answer", ["accepted", "refused"])
    def test_reveals_that_reveal_nothing_end_in_an_honest_give_up(self, answer: str) -> None:
        waiting = str(NOISE[REVEALED_BY_WAITING[0]].shows)
        noisy = NoisyPage(standing=[], task_lines=[line("1", "link", "T-1")], extra=[f"{waiting}…"],
                          refuses={"T-1"} if answer == "refused" else set())
        replies = run(noisy, [STEP, DONE], limit=3 * MAX_WAITS)
        assert gives_up(replies[-1]), [(r.tool, r.arguments) for r in replies]
        assert sum(reply.tool == "hover" for reply in replies) <= MAX_WAITS

    def test_a_load_more_that_loads_nothing_is_not_clicked_forever(self) -> None:
        held = f"{NOISE['load_more'].dismiss} (5 more)"
        noisy = NoisyPage(standing=[], task_lines=[line("1", "link", "T-1"), line("2", "button", held)],
                          ignores={held})
        replies = run(noisy, [STEP, DONE], limit=3 * MAX_WAITS)
        assert gives_up(replies[-1]), [(r.tool, r.arguments) for r in replies]


class TestEveryEpisodeEnds:
    @given(st.permutations(list(IN_THE_WAY)).flatmap(lambda kinds: st.integers(0, len(kinds)).map(
               lambda n: kinds[:n])),
           st.booleans(), st.booleans(), st.sampled_from(["refused", "ignored"]))
    def test_on_a_page_that_answers_nothing_it_gives_up_honestly(self, standing: list[NoiseKind], load_more: bool,
                                                                 waiting: bool, answer: str) -> None:
        # the step's control never comes: whatever noise stands over the page and however the page answers, the
        # policy stops with a claim of failure, never a success and never a loop
        extra = ([line("2", "button", f"{NOISE['load_more'].dismiss} (5 more)")] if load_more else []) + (
            [f"{NOISE[REVEALED_BY_WAITING[0]].shows}…"] if waiting else [])
        held = f"{NOISE['load_more'].dismiss} (5 more)"
        everything = {str(NOISE[kind].dismiss) for kind in IN_THE_WAY} | {"T-1", held}
        noisy = NoisyPage(standing=list(standing), task_lines=[line("1", "link", "T-1")], extra=extra,
                          refuses=everything if answer == "refused" else set(),
                          ignores=everything if answer == "ignored" else set())
        replies = run(noisy, [STEP, DONE], limit=len(IN_THE_WAY) + 2 + MAX_WAITS + 1)
        assert gives_up(replies[-1]), [(r.tool, r.arguments) for r in replies]


# --- Names the label variation gives --------------------------------------------------------------------------------

DECLARED_BUTTONS = sorted({*BUTTON_LABELS, *(f"{verb} record" for verb in BUTTON_VERBS)})


@given(st.sampled_from(DECLARED_BUTTONS), st.sampled_from(sorted(HEADER_SYNONYMS)), st.floats(0, 1, exclude_max=True))
def test_a_button_or_header_the_label_variation_renamed_is_found_by_its_declared_synonym(
        button: str, header: str, choice: float) -> None:
    from lxml import html as lxml_html

    original = (f"<html><body><button type=\"button\">{button}</button><table><tr><th>{header}</th><th>B</th>"
                "<th>C</th></tr><tr><td>1</td><td>2</td><td>3</td></tr></table></body></html>")
    dressed = dress("label_variation", original, choice)
    assert dressed is not None
    document = lxml_html.document_fromstring(dressed.html)
    shown_button, shown_header = (str(document.xpath(f"string(//{tag})")).strip() for tag in ("button", "th"))
    observation = page(line("1", "button", shown_button), line("2", "columnheader", shown_header))
    for role, name, shown in (("button", button, shown_button), ("columnheader", header, shown_header)):
        reply = decide_noise_aware([ScriptedStep(action="click", role=role, name=name), DONE],
                                   Chat(observation).conversation())
        assert clicked_name(reply, observation) == shown, (name, shown)


class TestSynonymsNeverGuess:
    def test_its_own_name_wins_over_a_control_named_like_its_synonym(self) -> None:
        observation = page(line("1", "button", "Update"), line("2", "button", "Save"))
        reply = decide_noise_aware([ScriptedStep(action="click", role="button", name="Save"), DONE],
                                   Chat(observation).conversation())
        assert clicked_name(reply, observation) == "Save"

    @pytest.mark.parametrize("step, shown", [("Save", ("Update", "Apply changes")),
                                             ("Filter", ("Apply", "Apply filters"))])
    def test_two_controls_that_different_synonyms_name_are_not_guessed_between(self, step: str,
                                                                               shown: tuple[str, str]) -> None:
        # one of them is the page's own control of that name, the other the step's control renamed: nothing on the
        # page tells which, and a wrong click is a write the task did not ask for
        observation = page(*(line(str(n + 1), "button", name) for n, name in enumerate(shown)))
        reply = decide_noise_aware([ScriptedStep(action="click", role="button", name=step), DONE],
                                   Chat(observation).conversation())
        assert gives_up(reply), clicked_name(reply, observation)


# --- The judgement of tasks check --noise --------------------------------------------------------------------------

CLICK = ScriptedStep(action="click", role="link", name="T-7")
NAVIGATE = ScriptedStep(action="navigate", url="/helpdesk/tickets")


def handled(handling: str, step: int, control: str) -> Handled:
    return Handled(turn=step, handling=handling, step=step, control=control)  # type: ignore[arg-type]


class TestWhereThePlainControlMustFail:
    @pytest.mark.parametrize("kind, steps, item, blocked", [
        ("consent_banner", [CLICK, DONE], handled("dismissed", 0, "Accept all"), False),
        ("interstitial", [CLICK, DONE], handled("dismissed", 0, "Not now"), True),
        ("interstitial", [CLICK, DONE], handled("dismissed", 1, "Not now"), False),
        ("session_timeout", [CLICK, DONE], handled("dismissed", 0, "Sign in again"), True),
        ("session_timeout", [NAVIGATE, DONE], handled("dismissed", 0, "Sign in again"), False),
        ("load_more", [CLICK, DONE], handled("loaded", 0, "Load more (5 more)"), True),
        ("lazy_rows", [CLICK, DONE], handled("revealed", 0, "T-1"), True),
        ("label_variation", [CLICK, DONE], handled("renamed", 0, "Update"), True),
    ])
    def test_blocked_exactly_where_the_noise_stood_before_a_control_of_the_named_steps(
            self, kind: NoiseKind, steps: list[ScriptedStep], item: Handled, blocked: bool) -> None:
        assert blocked_by(kind, steps, [item]) is blocked
        assert blocked_by(kind, steps, []) is False

    @pytest.mark.parametrize("blocked, aware, plain, ok", [
        (True, "verified_success", "verified_success", False),
        (True, "verified_success", "gave_up", True),
        (False, "verified_success", "verified_success", True),
        (False, "false_completion", "verified_success", False),
    ])
    def test_an_instance_passes_only_with_the_aware_control_verified_and_the_plain_one_failing_where_blocked(
            self, blocked: bool, aware: str, plain: str, ok: bool) -> None:
        result = NoiseControlResult(task_id="helpdesk.solve-ticket@1", kind="interstitial", aware_outcome=aware,
                                    aware_replay="PASS", handled=[], blocked=blocked, plain_outcome=plain,
                                    plain_ended="", plain_replay="PASS")
        assert result.ok is ok
        assert NoiseCheckReport(kinds=["interstitial"], results=[result], verified=True, verify_problems=[]).ok is ok
        assert NoiseCheckReport(kinds=["interstitial"], results=[result], verified=False, verify_problems=["x"]).ok \
            is False

    def test_a_kind_is_said_to_need_nothing_only_where_nothing_was_handled_and_the_plain_control_never_failed(
            self) -> None:
        def result(handled_: list[str], plain: str) -> NoiseControlResult:
            return NoiseControlResult(task_id="t@1", kind="layout_shift", aware_outcome="verified_success",
                                      aware_replay="PASS", handled=handled_, blocked=False, plain_outcome=plain,
                                      plain_ended="stopped: budget; 1 rejected, first: it is covered by <div>",
                                      plain_replay="PASS")
        quiet = NoiseCheckReport(kinds=["layout_shift"], results=[result([], "verified_success")], verified=True,
                                 verify_problems=[])
        assert "needed no handling" in kind_summaries(quiet)[0].reading
        failed = NoiseCheckReport(kinds=["layout_shift"], results=[result([], "gave_up")], verified=True,
                                  verify_problems=[])
        assert "needed no handling" not in kind_summaries(failed)[0].reading
