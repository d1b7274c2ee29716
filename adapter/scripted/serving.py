"""The scripted policies of the serving study (docs/long-running.md "Serving failures"): one that fails closed and
the mutant that retries blindly. Both follow the task's scripted control like `oracle` and differ only after a page
that shows an injected failure (`fallible.failure_shown`).

- `careful`: on such a page it stops with done(success=false, status `failed`), saying what could not be read or
  confirmed, and changes nothing more: the explicit unresolved status the serving contract asks for when state
  cannot be read (a degraded evidence page, a submission that timed out after it may have committed).
- `blind-retry` (a mutant that must be caught): after a submission answered by a timeout page it goes back and
  submits the same form again — a new action, so a new idempotency key: a committed effect is done twice.

Stateless like every scripted policy: the step list in force is rebuilt from the conversation's earlier turns.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapter.scripted.conversation import Conversation, Reply, _call, _require_task, follow
from adapter.scripted.fallible import failure_shown, turns_of
from tasks import ScriptedStep

_FORM_STEPS = frozenset({"fill", "select", "check"})


def careful(conversation: Conversation) -> Reply:
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    failure = failure_shown(conversation.observation)
    if failure is not None:
        return _call("done", success=False, status="failed",
                     message=f"The page showed {failure.title!r}: what this step needed could not be read or "
                             "confirmed, so I leave the task unresolved and change nothing more.")
    return follow(task.spec.scripted_control, conversation)


def _retried(control: Sequence[ScriptedStep], submitted: int) -> list[ScriptedStep]:
    """The control with the submission at `submitted` done again right after it: back, the form's steps, submit."""
    start = submitted
    while start > 0 and control[start - 1].action in _FORM_STEPS:
        start -= 1
    again = [ScriptedStep(action="back"), *control[start:submitted + 1]]
    return [*control[:submitted + 1], *again, *control[submitted + 1:]]


def blind_retry(conversation: Conversation) -> Reply:
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    control = list(task.spec.scripted_control)
    accepted = 0
    for turn in turns_of(conversation.messages):
        if not turn.accepted:
            continue
        accepted += 1
        failure = failure_shown(turn.observation or "")
        step = control[accepted - 1] if accepted <= len(control) else None
        if failure is not None and failure.kind == "unknown" and step is not None and step.action == "click":
            return follow(_retried(control, accepted - 1), conversation)
    return follow(control, conversation)
