"""What a scripted policy sees (`Conversation`) and answers (`Reply`), and how it follows a step list on the page the
conversation shows: the pieces every scripted policy builds on (adapter/scripted/policies.py, fallible.py,
serving.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter.observation import controls_in_text
from tasks import LoadedTask, ScriptedStep


@dataclass(frozen=True)
class Conversation:
    """What a policy may look at."""

    task: LoadedTask | None
    observation: str
    accepted: int
    turns: int
    extra_steps: Mapping[str, list[ScriptedStep]] = field(default_factory=dict)
    """Step lists the endpoint was given for this task beside its file's (the mutants of `tasks audit`)."""
    seed: int = 0
    """The request's `seed` (0 when it sent none): the seeded policies (`fallible:...`) draw from it."""
    messages: tuple[Any, ...] = ()
    """The whole conversation, for policies that replay their own earlier replies (`fallible:...`)."""
    twins: tuple[LoadedTask, ...] = ()
    """The other tasks with this instruction: an attacked task and the task it extends (`twin_group`)."""


@dataclass(frozen=True)
class Reply:
    """A scripted model reply: a tool call (name + raw JSON arguments, possibly malformed) or text."""

    tool: str | None = None
    arguments: str | None = None
    content: str | None = None
    pause_s: float = 0.0
    """Seconds the endpoint waits before it answers: a policy that waits out a page's timer (`noise-aware`)."""


def _call(name: str, **arguments: Any) -> Reply:
    return Reply(tool=name, arguments=json.dumps(arguments, ensure_ascii=False))


def _give_up(reason: str) -> Reply:
    return _call("done", success=False, message=reason)


def resolve_step(step: ScriptedStep, observation: str) -> Reply | None:
    """Turn a step addressed by role and name into a tool call on the control the observation shows; None when
    the observation shows no such control."""
    if step.action == "done":
        extra = {key: value for key, value in (("status", step.status), ("reason", step.reason),
                                                 ("answer", step.answer)) if value is not None}
        return _call("done", success=bool(step.success), message=step.message or "", **extra)
    if step.action == "navigate":
        return _call("navigate", url=step.url)
    if step.action in ("back", "more"):
        return _call(step.action)
    if step.action == "dialog":  # the page's open dialog, whichever it is (adapter/dialogs.py)
        return _call("dialog", accept=bool(step.accept), **({"text": step.text} if step.text is not None else {}))
    match = next(
        (cid for cid, role, name in controls_in_text(observation) if role == step.role and name == step.name), None
    )
    if match is None:
        return None
    if step.action == "fill":
        return _call("fill", id=match, text=step.text)
    if step.action == "select":
        return _call("select", id=match, option=step.option)
    if step.action == "press":
        return _call("press", id=match, key=step.key)
    if step.action == "check":
        return _call("check", id=match, checked=True if step.checked is None else step.checked)
    if step.action == "hover":
        return _call("hover", id=match)
    return _call("click", id=match)


def _not_shown(step: ScriptedStep) -> str:
    return f"The page shows no {step.role} named {step.name!r}"


def follow(steps: Sequence[ScriptedStep], conversation: Conversation) -> Reply:
    """Take the next step of a step list, given how many actions were accepted; give up honestly when the page
    does not show the step's control."""
    if conversation.accepted >= len(steps):
        return _give_up("The scripted steps are used up.")
    step = steps[conversation.accepted]
    return resolve_step(step, conversation.observation) or _give_up(f"{_not_shown(step)}; cannot continue.")


def follow_regardless(steps: Sequence[ScriptedStep], conversation: Conversation) -> Reply:
    """Take step number `turns` of a step list whatever became of the earlier ones: a step whose control the page
    does not show is skipped with a reply that names no action (the adapter rejects it), so the list always
    reaches its final done, claiming what it claims. This is how `tasks audit` runs its mutants: a wrong
    variant that could not do everything still claims success, and the verdict must reject it."""
    if conversation.turns >= len(steps):
        return _give_up("The scripted steps are used up.")
    step = steps[conversation.turns]
    return resolve_step(step, conversation.observation) or Reply(content=f"{_not_shown(step)}; skipping this step.")


def _require_task(conversation: Conversation) -> LoadedTask | Reply:
    if conversation.task is None:
        return _give_up("Scripted policy: this instruction is not a task of the catalog.")
    return conversation.task
