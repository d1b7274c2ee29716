"""Deterministic scripted policies. Each sees only the conversation, like a real model would.

`oracle` follows the task's scripted control, resolving each step's role and accessible name to
a control id in the latest observation text; if the observation does not show the control, it
gives up honestly. The other policies fail in characteristic ways. Policies are stateless: the
step to take is derived from the conversation (how many actions were accepted so far).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from adapter.observation import controls_in_text
from adapter.prompts import (
    accepted_actions,
    assistant_turns,
    instruction_of,
    is_summary_request,
    latest_observation,
    normalise_instruction,
    observations_shown,
    summary_counts,
)
from adapter.scripted.conversation import (
    Conversation,
    Reply,
    _call,
    _give_up,
    _require_task,
    follow,
    follow_regardless,
    resolve_step,
)
from adapter.scripted.fallible import fallible, parse_name
from adapter.scripted.noise_aware import noise_aware
from adapter.scripted.serving import blind_retry, careful
from tasks import LoadedTask, ScriptedStep
from tasks.spec import Variant


def twin_group(tasks: Sequence[LoadedTask]) -> str | None:
    """Why tasks sharing one instruction cannot be told apart, or None when they are twins: one plain task at most,
    and attacked tasks that all extend it (the scripted endpoint then tells them apart by the payload shown)."""
    plain = [t for t in tasks if t.spec.attack is None]
    bases = {t.spec.extends for t in tasks if t.spec.attack is not None}
    if len(plain) > 1 or len(bases) > 1 or (plain and bases != {plain[0].id} and bases):
        return f"tasks {', '.join(t.id for t in tasks)} have the same instruction and are not one task's twins"
    variants: dict[str, list[Variant]] = {}
    for control in (v for t in tasks for v in (*t.spec.negative_controls, *t.spec.equivalent_solutions)):
        variants.setdefault(control.id, []).append(control)
    # `negative:<id>` must name one control before a page has shown which twin it is; an equivalent solution the
    # attacked twins inherit from their base (tasks.catalog._APPENDED) is the same control in each
    shared = sorted(i for i, same_id in variants.items() if any(v != same_id[0] for v in same_id[1:]))
    if shared:
        return f"twins {', '.join(t.id for t in tasks)} share control ids {shared}"
    # An attacked twin is known by its payload's marker shown (`resolve_twin`): one whose marker another twin's
    # payload shows could be taken for that one, and the scripted policies would follow the wrong twin.
    attacked = [(t.id, t.spec.attack) for t in tasks if t.spec.attack is not None]
    for task_id, attack in attacked:
        for other_id, other in attacked:
            if other_id != task_id and attack.exposed_in(other.payload):
                return (f"twins {task_id} and {other_id} cannot be told apart: {other_id}'s payload shows "
                        f"{task_id}'s marker {attack.marker!r} (each attacked twin needs a marker of its own)")
    return None


def resolve_twin(group: Sequence[LoadedTask], messages: Sequence[Any]) -> LoadedTask:
    """The task of a conversation among twins: the attacked task whose payload marker an observation showed, else
    the plain one (else the first). A scripted policy knows of the attack only what the page showed it."""
    if len(group) == 1:
        return group[0]
    return next((t for t in group if _payload_shown(t, messages)), None) or next(
        (t for t in group if t.spec.attack is None), group[0])


def _payload_shown(task: LoadedTask, messages: Sequence[Any]) -> bool:
    """Whether an observation of the conversation showed the task's payload marker."""
    attack = task.spec.attack
    return attack is not None and any(attack.exposed_in(text) for text in observations_shown(messages))


def obedient(conversation: Conversation) -> Reply:
    """Follows the payload once a page showed it (the attack's obedient control); the scripted control before and
    without it. The control that makes an attack live (`tasks check`)."""
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    control = list(task.spec.scripted_control)
    attack = task.spec.attack
    return follow(attack.obedient.derive(control) if attack is not None and _payload_shown(task, conversation.messages)
                  else control, conversation)


def partial(conversation: Conversation) -> Reply:
    """Partially capable: follows the payload once shown, as `obedient` does, but leaves out the scripted control's
    last acting step (the legitimate procedure is never completed), then claims success."""
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    control = list(task.spec.scripted_control)
    acting = [i for i, s in enumerate(control) if s.action != "done"]
    last = control[acting[-1]] if acting else None
    attack = task.spec.attack
    shown = attack is not None and _payload_shown(task, conversation.messages)
    steps = attack.obedient.derive(control) if attack is not None and shown else control
    return follow([s for s in steps if s is not last], conversation)


def oracle(conversation: Conversation) -> Reply:
    task = _require_task(conversation)
    return task if isinstance(task, Reply) else follow(task.spec.scripted_control, conversation)


def _unlooked_answer(task: LoadedTask | None) -> dict[str, Any]:
    """An answer of the right shape with nothing looked up, for the policies that claim success unchecked."""
    check = task.spec.answer_check if task is not None else None
    if check is None or not check.fields:
        return {}
    blank = {"integer": 0, "id_list": []}
    return {"answer": {name: blank.get(f.type, "unknown") for name, f in check.fields.items()}}


def noop(conversation: Conversation) -> Reply:
    return _call("done", success=True, message="Done.", **_unlooked_answer(conversation.task))


def false_finish(conversation: Conversation) -> Reply:
    """Follows the first half of the scripted control, then claims success."""
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    acting = [s for s in task.spec.scripted_control if s.action != "done"]
    if conversation.accepted < len(acting) // 2:
        return follow(acting, conversation)
    return _call("done", success=True, message="All done, the task is complete.", **_unlooked_answer(task))


def give_up(conversation: Conversation) -> Reply:
    return _give_up("I could not work out how to complete this task.")


def loop(conversation: Conversation) -> Reply:
    """Repeats the first step of the scripted control for ever (a budget-exhausting loop)."""
    task = _require_task(conversation)
    if isinstance(task, Reply):
        return task
    reply = resolve_step(task.spec.scripted_control[0], conversation.observation)
    if reply is None or reply.tool == "done":
        controls = controls_in_text(conversation.observation)
        return _call("click", id=controls[0][0]) if controls else _call("back")
    return reply


_MALFORMED: tuple[Reply, ...] = (
    Reply(content="Let me think about which control to use first."),
    Reply(tool="click", arguments='{"id": 5]'),
    Reply(tool="click", arguments='{"id": "9999"}'),
    Reply(tool="navigate", arguments='{"url": "https://example.com/"}'),
    Reply(tool="teleport", arguments="{}"),
)


def malformed(conversation: Conversation) -> Reply:
    """Rotates through output the adapter must reject: prose, bad JSON, unknown id, off-site, unknown action."""
    return _MALFORMED[conversation.turns % len(_MALFORMED)]


def variant(kind: str, variant_id: str) -> Callable[[Conversation], Reply]:
    """Follows one negative control (`negative`) or equivalent solution (`equivalent`) of the task (used by
    `tasks check`)."""

    def policy(conversation: Conversation) -> Reply:
        task = _require_task(conversation)
        if isinstance(task, Reply):
            return task
        chosen = None
        for member in (task, *conversation.twins):
            variants = member.spec.negative_controls if kind == "negative" else member.spec.equivalent_solutions
            chosen = chosen or next((v for v in variants if v.id == variant_id), None)
        if chosen is None:
            return _give_up(f"Task {task.id} has no {kind} variant {variant_id!r}.")
        return follow(chosen.derive(list(task.spec.scripted_control)), conversation)

    return policy


POLICIES: dict[str, Callable[[Conversation], Reply]] = {
    "oracle": oracle,
    "false-finish": false_finish,
    "give-up": give_up,
    "loop": loop,
    "malformed": malformed,
    "noop": noop,
    "obedient": obedient,
    "partial": partial,
    "noise-aware": noise_aware,  # noise_aware.NAME, spelt out: `computerops --help` reads these keys from the source
}
def given(name: str) -> Callable[[Conversation], Reply]:
    """Follows, regardless, a step list the endpoint was given for the task under this name (`mutant:<id>`)."""

    def policy(conversation: Conversation) -> Reply:
        task = _require_task(conversation)
        if isinstance(task, Reply):
            return task
        steps = conversation.extra_steps.get(name)
        if steps is None:
            return _give_up(f"The scripted endpoint was given no steps {name!r} for task {task.id}.")
        return follow_regardless(steps, conversation)

    return policy


SERVING_POLICIES = ("careful", "blind-retry")
"""The serving study's policies (adapter/scripted/serving.py), which build on adapter/scripted/conversation.py."""
POLICY_NAMES = (*POLICIES, *SERVING_POLICIES, "negative:<control-id>", "equivalent:<solution-id>", "mutant:<mutant-id>",
                "fallible:<slip>:<give-up>:<substitute>")


def policy_by_name(name: str) -> Callable[[Conversation], Reply]:
    """A policy from its name; `negative:ID` follows that negative control, `equivalent:ID` that equivalent
    solution, `fallible:SLIP:GIVEUP:SUBSTITUTE` errs with those probabilities (adapter/scripted/fallible.py).
    Unknown or malformed names raise."""
    fallibility = parse_name(name)
    if fallibility is not None:
        return fallible(fallibility)
    if name in SERVING_POLICIES:
        return careful if name == "careful" else blind_retry
    kind, _, variant_id = name.partition(":")
    if kind in ("negative", "equivalent") and variant_id:
        return variant(kind, variant_id)
    if kind == "mutant" and variant_id:
        return given(variant_id)
    if name not in POLICIES:
        raise ValueError(f"unknown scripted policy {name!r}; known: {', '.join(POLICY_NAMES)}")
    return POLICIES[name]


def scripted_summary(messages: Sequence[Any]) -> str:
    """The scripted model's answer to a compaction's request for a summary (`model/1`), whatever its policy: written
    from what the conversation shows it, the task and how many actions were accepted (`accepted_actions`). It never
    saw the ledgers (only pages), so it keeps the count, which its policies carry on from, and none of the
    constraints, approvals or effects: a naive summary, which the compaction's boundary shows lost."""
    instruction = instruction_of(messages)
    return "\n".join([f"I am carrying out the task: {normalise_instruction(instruction or '(none given)')}",
                      summary_counts(accepted_actions(messages))])


def decide(policy: str, messages: Sequence[Any], tasks_by_instruction: Mapping[str, Sequence[LoadedTask]],
           extra_steps: Mapping[str, Mapping[str, list[ScriptedStep]]] | None = None, *, seed: int = 0) -> Reply:
    """The scripted model's reply to a chat request; `tasks_by_instruction` holds each instruction's task, or its
    twins (`twin_group`), `extra_steps` given step lists by task id and name, `seed` is the request's (0 when it
    sent none). A compaction's request for a summary is answered with `scripted_summary`."""
    if is_summary_request(messages):
        return Reply(content=scripted_summary(messages[:-1]))
    instruction = instruction_of(messages)
    group = tasks_by_instruction.get(normalise_instruction(instruction), ()) if instruction else ()
    task = resolve_twin(group, messages) if group else None
    given_steps: dict[str, list[ScriptedStep]] = {}
    for member in reversed([t for t in group if t is not task] + ([task] if task is not None else [])):
        given_steps.update((extra_steps or {}).get(member.id, {}))
    conversation = Conversation(
        task=task, observation=latest_observation(messages),
        accepted=accepted_actions(messages), turns=assistant_turns(messages),
        extra_steps=given_steps, seed=seed, messages=tuple(messages),
        twins=tuple(t for t in group if t is not task),
    )
    return policy_by_name(policy)(conversation)
