"""`noise-aware`: the scripted control under page noise (docs/noise.md; `tasks check --noise` proves it verifies).

It follows the task's scripted control as `oracle` does, and deals with what the noise kinds of `sites/kit/noise.py`
put in its way, by what they declare (never by a task's own files):

- Before a step, it takes away what stands over the page (`IN_THE_WAY`: the consent banner, the survey interstitial,
  the expired-session page) by the kind's declared `dismiss` label, when the page shows the kind's text.
- When the step's control is not offered yet, it reveals more of the page: the "Load more" button (`HOLDS_BACK`), or,
  where rows wait for a scroll or a submit control for a timer (`REVEALED_BY_WAITING`), it pauses (`wait_for`: a
  timer's declared length, else `WAIT_S`) and hovers over the control just before the kind's text, which scrolls it
  into view, and looks again.
- It finds a step's button or column header by its name or by a name the kind's label variation gives it
  (`BUTTON_LABELS`, `BUTTON_VERBS`, `HEADER_SYNONYMS`); where two different synonyms each name a control, it cannot
  tell which is the step's, and gives up rather than guess.
- A dismissal or "Load more" clicked on a page that still shows just what it showed then (the click was refused, or
  did nothing) is not clicked again on it; reveals in a row, refused ones too, are at most `MAX_WAITS`.

**Stateless.** Which step comes next is read from the conversation (`turns_of`): an accepted action counts as the
task's step unless it is one of the policy's own noise turns (a click on a declared dismiss control, a hover) that
is not that step (`progress`). `progress` also says, from a transcript, how the noise stood in the control's way,
which `computerops/catalog/noise_check.py` uses to say where the plain control (`oracle`, which ignores the noise)
must fail.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from adapter.observation import controls_in_text, parse_control_line
from adapter.prompts import OMITTED, UNCHANGED, observations_shown
from adapter.scripted.conversation import Conversation, Reply, _call, _give_up, _require_task, resolve_step
from adapter.scripted.fallible import Turn, turns_of
from sites.kit.noise import BUTTON_LABELS, BUTTON_VERBS, HEADER_SYNONYMS, NOISE, NoiseKind
from tasks import ScriptedStep

NAME: Final = "noise-aware"
WAIT_S: Final = 0.5
"""How long the policy pauses before it looks again at a page whose control waits for a scroll (a timer's kind is
waited out for its declared `seconds` instead: `wait_for`)."""
MAX_WAITS: Final = 8
"""Reveals in a row before it gives up honestly: the control did not appear."""

IN_THE_WAY: tuple[NoiseKind, ...] = ("consent_banner", "interstitial", "session_timeout")
"""Kinds that stand over (or in place of) the page until their `dismiss` control is used: taken away first."""
HOLDS_BACK: tuple[NoiseKind, ...] = ("load_more",)
"""Kinds whose `dismiss` control reveals what they hold back: used only when the step's control is not offered."""
REVEALED_BY_WAITING: tuple[NoiseKind, ...] = ("lazy_rows", "slow_control")
"""Kinds that hide a control until a scroll or a timer: waited out when the step's control is not offered."""
NEEDS_NOTHING: tuple[NoiseKind, ...] = ("layout_shift", "label_variation")
"""Kinds that hide no control (label variation renames them: matched through the declared synonyms)."""

_CONTROL_ACTIONS = frozenset({"click", "fill", "select", "check", "press", "hover"})
_NOISE_ACTIONS = frozenset({"click", "hover"})

Handling = Literal["dismissed", "loaded", "revealed", "renamed"]


@dataclass(frozen=True)
class Handled:
    """One way the noise stood in the control's way: a noise turn, or a step taken on a control under another name."""

    turn: int
    """The index of the turn (from 0, over the conversation's answered replies)."""
    handling: Handling
    step: int
    """The index of the task's step it stood before."""
    control: str
    """The control's name as the page offered it."""


@dataclass(frozen=True)
class Progress:
    """Where the policy stands: the task's own steps accepted, and what it did about the noise on the way."""

    done: int
    handled: tuple[Handled, ...] = ()
    refused_hovers: tuple[int, ...] = ()
    """The turns whose hover the adapter refused (a reveal that could not even be tried)."""

    def waits_in_a_row(self, turns: int) -> int:
        """How many of the last `turns` turns were reveals, refused ones included, counted back from the latest."""
        count, at = 0, turns - 1
        revealed = {h.turn for h in self.handled if h.handling == "revealed"} | set(self.refused_hovers)
        while at in revealed:
            count, at = count + 1, at - 1
        return count


def names_of(role: str | None, name: str | None) -> tuple[str, ...]:
    """A control's name, then what the label variation may call it instead: a button's whole label or its leading
    verb swapped for a declared synonym, a column header for its synonyms."""
    if name is None:
        return ()
    names = [name]
    if role == "button":
        names += BUTTON_LABELS.get(name, ())
        head, _, rest = name.partition(" ")
        if rest:
            names += [f"{verb} {rest}" for verb in BUTTON_VERBS.get(head, ())]
    elif role == "columnheader":
        names += HEADER_SYNONYMS.get(name, ())
    return tuple(dict.fromkeys(names))


def _dismiss_label(kind: NoiseKind) -> str:
    label = NOISE[kind].dismiss
    assert label is not None, f"{kind} declares no dismiss label"
    return label


def is_dismiss_name(name: str, kinds: Sequence[NoiseKind]) -> bool:
    """Whether a control's name is the declared `dismiss` label of one of these kinds, exactly; a kind that holds rows
    back (`HOLDS_BACK`) counts them after it, as "Load more (15 more)" (sites/kit/noise.py writes it so). A task's own
    control that only begins with a label ("Accept all (3)") is none."""
    return any(name == (label := _dismiss_label(kind))
               or (kind in HOLDS_BACK and re.fullmatch(re.escape(label) + r" \(\d+ more\)", name) is not None)
               for kind in kinds)


def offered_dismissal(observation: str, kinds: Sequence[NoiseKind],
                      tried: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The id and name of a dismiss control of one of these kinds the page offers while it shows the kind's text,
    the first kind given first, leaving out the ids `tried` (clicked on this same page before, to no effect); None
    when none is shown."""
    controls = controls_in_text(observation)
    for kind in kinds:
        if NOISE[kind].shows not in observation:
            continue
        found = next(((cid, name) for cid, _, name in controls
                      if cid not in tried and is_dismiss_name(name, (kind,))), None)
        if found is not None:
            return found
    return None


def revealing(observation: str, kinds: Sequence[NoiseKind]) -> tuple[str, NoiseKind] | None:
    """The id of the control just before the text of a kind that waits for a scroll or a timer (the first control
    of the page when none comes before it), and that kind; None when the page shows no such text."""
    marks = [(kind, NOISE[kind].shows) for kind in kinds if NOISE[kind].shows]
    last: str | None = None
    first: str | None = None
    for line in observation.splitlines():
        parsed = parse_control_line(line)
        if parsed is not None:
            last, first = parsed[0], first or parsed[0]
            continue
        kind = next((kind for kind, mark in marks if mark in line), None)
        if kind is not None:
            target = last or first or next((cid for cid, _, _ in controls_in_text(observation)), None)
            return None if target is None else (target, kind)
    return None


def wait_for(kind: NoiseKind) -> float:
    """How long the policy pauses before it looks again at a page that shows `kind`'s text: a timer's declared
    length (`seconds`: the slow control's spinner), so that one wait normally outlasts it however fast the machine
    takes a step (a pause of WAIT_S a step took three to four of the action budget's turns a spinner, and a long task
    ran out of them); WAIT_S for a list that loads on a scroll (the hover itself reveals it)."""
    return max(WAIT_S, NOISE[kind].seconds)


def acted_on(note: str) -> tuple[str, str] | None:
    """The (role, name) of the control an accepted action's result line names (`clicked [4] button "Save"`)."""
    for at in (match.start() for match in re.finditer(r"\[", note)):
        parsed = parse_control_line(note[at:])
        if parsed is not None:
            return parsed[1], parsed[2]
    return None


def _is_step(step: ScriptedStep | None, turn: Turn, acted: tuple[str, str] | None) -> bool:
    if step is None or step.action != turn.action:
        return False
    return acted is None or (acted[0] == step.role and acted[1] in names_of(step.role, step.name))


def progress(control: Sequence[ScriptedStep], turns: Sequence[Turn]) -> Progress:
    """The task's steps accepted after these turns and what the noise made the policy do on the way. An accepted
    click on a declared dismiss control, or a hover, that is not the step due is a noise turn; any other accepted
    action is the step due (a step on a control found under another name is marked `renamed`)."""
    done = 0
    handled: list[Handled] = []
    refused_hovers: list[int] = []
    for index, turn in enumerate(turns):
        if not turn.accepted:
            if turn.action == "hover":
                refused_hovers.append(index)
            continue
        acted = acted_on(turn.note)
        step = control[done] if done < len(control) else None
        if turn.action in _NOISE_ACTIONS and not _is_step(step, turn, acted):
            name = acted[1] if acted is not None else ""
            # the policy hovers only to reveal, whatever control lies just before the kind's text (a "Load more" too)
            handling: Handling = ("revealed" if turn.action == "hover" else
                                  "dismissed" if is_dismiss_name(name, IN_THE_WAY) else
                                  "loaded" if is_dismiss_name(name, HOLDS_BACK) else "revealed")
            handled.append(Handled(index, handling, done, name))
            continue
        if step is not None and acted is not None and acted[1] != step.name:
            handled.append(Handled(index, "renamed", done, acted[1]))
        done += 1
    return Progress(done, tuple(handled), tuple(refused_hovers))


def tried_on(messages: Sequence[object], turns: Sequence[Turn], observation: str) -> frozenset[str]:
    """The ids clicked on a page that showed just this observation (each turn acts on the observation shown before
    its result): clicked there, and the page still shows the same, so the click was refused or did nothing."""
    shown = observations_shown(messages)
    before: str | None = shown[0] if shown else None
    tried: set[str] = set()
    for turn in turns:
        if turn.action == "click" and before == observation:
            tried.add(str(turn.arguments.get("id")))
        if turn.observation != UNCHANGED:
            before = None if turn.observation in (None, OMITTED) else turn.observation
    return frozenset(tried)


def synonyms_offered(step: ScriptedStep, observation: str) -> list[str]:
    """The names other than its own that the label variation may give the step's control and that a control of its
    role on the page has, in the order declared."""
    offered = {name for _, role, name in controls_in_text(observation) if role == step.role}
    return [name for name in names_of(step.role, step.name)[1:] if name in offered]


def resolve_named(step: ScriptedStep, observation: str) -> Reply | None:
    """`resolve_step` on the step's control under its own name, else under the one name the label variation gives
    it that the page offers; None where none, or two different ones, are offered (nothing tells which is the step's)."""
    own = resolve_step(step, observation)
    if own is not None or step.name is None:  # done, navigate, back, more, dialog: no control to find
        return own
    synonyms = synonyms_offered(step, observation)
    return resolve_step(step.model_copy(update={"name": synonyms[0]}), observation) if len(synonyms) == 1 else None


def decide_noise_aware(control: Sequence[ScriptedStep], conversation: Conversation) -> Reply:
    """The next reply: take away what stands over the page, else the step due (by any of its names), else reveal
    more of the page, else give up honestly as `oracle` does."""
    observation = conversation.observation
    turns = turns_of(conversation.messages)
    state = progress(control, turns)
    if state.done >= len(control):
        return _give_up("The scripted steps are used up.")
    step = control[state.done]
    tried = tried_on(conversation.messages, turns, observation)
    in_the_way = offered_dismissal(observation, IN_THE_WAY, tried)
    if in_the_way is not None:
        return _call("click", id=in_the_way[0])
    reply = resolve_named(step, observation)
    if reply is not None:
        return reply
    if len(synonyms := synonyms_offered(step, observation)) > 1:
        return _give_up(f"The page shows {step.role}s named {' and '.join(map(repr, synonyms))}: either could be "
                        f"{step.name!r}; cannot tell which.")
    if step.action in _CONTROL_ACTIONS:
        held = offered_dismissal(observation, HOLDS_BACK, tried)
        if held is not None:
            return _call("click", id=held[0])
        revealed = revealing(observation, REVEALED_BY_WAITING)
        if revealed is not None and state.waits_in_a_row(len(turns)) < MAX_WAITS:
            reply = _call("hover", id=revealed[0])
            return Reply(tool=reply.tool, arguments=reply.arguments, pause_s=wait_for(revealed[1]))
    return _give_up(f"The page shows no {step.role} named {step.name!r}; cannot continue.")


def noise_aware(conversation: Conversation) -> Reply:
    """The policy `noise-aware` (a scripted control: its results are labelled scripted like every policy's)."""
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    return decide_noise_aware(list(task.spec.scripted_control), conversation)
