"""`fallible:SLIP:GIVEUP:SUBSTITUTE`: a seeded, stochastic scripted policy, so an experiment's cells are not all 0% or
100% offline.

It follows the task's scripted control like `oracle`, and errs with three probabilities:

- SLIP: each `fill` it types a slightly wrong text (`slipped`: the last digit, else the last letter, changed) and
  carries on to the step list's own done: a slipped record is a success claim the verifier must reject.
- GIVEUP: after a page that shows an injected failure (`failure_shown`), it stops with done(success=false).
- SUBSTITUTE: otherwise, when the failure came while opening an invoice (the failed step was a click on the
  `Invoice viewer` link or on an invoice number) and the portal it goes back to lists the Spreadsheet, it takes the
  substitute route the map study saw: reads the invoice's sheet (the control's, else the invoice's document
  number), submits the record with the line amounts' sum and the header fields it never read guessed
  (`GUESSED_TEXT`, `GUESSED_DATE`, the form's first other option; only a value the instruction itself states is
  typed as the control types it), and claims success.
- Else it retries: navigates to the start path and follows the control again from the top.

**Stateless.** Every reply is a function of the request's messages and seed. The route in force is rebuilt by
`replay`, which reads the policy's own earlier replies and the result lines (never elided from the context), not
the old observations (the adapter may replace those by a marker): a `navigate` its route did not call for is a
recovery from a failure, and the link the result line says it clicked next tells a substitute from a retry. Only
the current decision reads a page: the latest observation (never elided) and, for the sheet total, the page of the
sheet two observations back.

**Draws.** Each draw is uniform in [0, 1) from sha256 of (request seed, task id, turn, purpose): the slip of the fill
at turn t, the give-up at the turn that sees the failure, the substitute of the recovery begun at turn t. No global
RNG: identical requests get identical replies, and another request seed other draws.

**When retrying is correct.** A failure page of a class the kit answers without running the handler (transient_5xx,
throttling, spurious_validation, version_conflict, session_expiry, moved_endpoint, schema_drift) says nothing was
saved: redoing the steps, the submission included, records one row. A page load that fails (missing_resource) saved
nothing either; but when it answers the submission (its redirect to the saved record) the record was saved, so the
policy does not submit again: it carries on to the list's done (a rate draws missing_resource for page loads only; a
task rule putting it on the submission itself would make this a false claim). A timeout answering the submission
(ambiguous_after_commit, ambiguous_without_commit) may or may not have saved it: the policy stops honestly rather
than risk a second record. Once a submission went through, a later failure never starts a retry. Classes whose
page looks normal (false_success, stale_read, partial_success, duplicate_delivery, out_of_order) are not seen as
failures. The submission is the route's last button click: the policy is meant for tasks that write once (the
invoices ladder); an earlier write of another task would be redone by a retry from the top.

One module of over 400 lines because the replay and the decision must read every route the same way: splitting the
routes from the replay would put the two halves of one rule in two files.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from adapter.observation import control_fields, controls_in_text, parse_control_line
from adapter.prompts import OBSERVATION_MARK, OMITTED, RESULT_OK, UNCHANGED, instruction_of
from adapter.scripted.conversation import Conversation, Reply, follow, resolve_step
from tasks import LoadedTask, ScriptedStep

PREFIX = "fallible"
NAME = f"{PREFIX}:<slip>:<give-up>:<substitute>"
_PROBABILITY = re.compile(r"[0-9]+(?:\.[0-9]+)?")

FailureKind = Literal["refused", "missing", "unknown"]
FAILURE_PAGES: dict[str, FailureKind] = {
    "Service unavailable": "refused",
    "Too many requests": "refused",
    "Form not accepted": "refused",
    "Edit conflict": "refused",
    "Session expired": "refused",
    "Page moved": "refused",
    "Form changed": "refused",
    "Not found": "missing",
    "Request timed out": "unknown",
}
"""The title (and first heading) of each failure page the kit injects (sites/kit/injection.py), and what it says of
the request: refused (nothing was saved), missing (a page load failed), unknown (it may have been saved)."""

SPREADSHEET = "Spreadsheet"
GUESSED_TEXT = "Unknown"
GUESSED_DATE = "2026-01-01"
"""What the substitute route types for a header field it never read (a placeholder, read nowhere)."""
_SHEET = re.compile(r"Sheet \d+")
_INVOICE_NUMBER = re.compile(r"INV-(\d+)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_AMOUNT = re.compile(r"-?\d{1,3}(?:,?\d{3})*\.\d{2}")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_TOTAL_ID = "fallible:sheet-total"
_GUESS_ID = "fallible:guessed-option"


@dataclass(frozen=True)
class Fallibility:
    """The three probabilities of a `fallible` policy."""

    slip: float
    give_up: float
    substitute: float


def parse_name(name: str) -> Fallibility | None:
    """The probabilities a `fallible:SLIP:GIVEUP:SUBSTITUTE` name gives; None for another policy's name. Each is a
    plain decimal in [0, 1] (`0`, `0.25`, `1`); anything else raises ValueError."""
    kind, _, rest = name.partition(":")
    if kind != PREFIX:
        return None
    parts = rest.split(":")
    if len(parts) != 3 or not all(_PROBABILITY.fullmatch(part) for part in parts):
        raise ValueError(f"scripted policy {name!r}: expected {NAME}, three decimals in [0, 1] such as "
                         f"{PREFIX}:0.1:0.3:0.5")
    slip, give_up, substitute = (float(part) for part in parts)
    for label, value in (("slip", slip), ("give-up", give_up), ("substitute", substitute)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"scripted policy {name!r}: the {label} probability {value} is not in [0, 1]")
    return Fallibility(slip, give_up, substitute)


def draw(seed: int, task_id: str, index: int, purpose: str) -> float:
    """A uniform number in [0, 1) fixed by the request seed, the task, the decision's turn and its purpose."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{index}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def slipped(text: str) -> str:
    """A slightly wrong text: its last digit one up (9 becomes 0), else its last ASCII letter the next one (z
    becomes a), else an `x` added. Never the text itself."""
    for at in range(len(text) - 1, -1, -1):
        if text[at].isascii() and text[at].isdigit():
            return text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:]
    for at in range(len(text) - 1, -1, -1):
        char = text[at]
        if char.isascii() and char.isalpha():
            base = ord("a") if char.islower() else ord("A")
            return text[:at] + chr(base + (ord(char) - base + 1) % 26) + text[at + 1:]
    return text + "x"


@dataclass(frozen=True)
class Failure:
    """An injected failure page as the model sees it."""

    title: str
    kind: FailureKind


def failure_shown(observation: str) -> Failure | None:
    """The failure an observation shows, or None. The adapter shows no HTTP status: a failure page is known by its
    header line `Page: <title>` naming one of `FAILURE_PAGES` exactly (a site's own pages add the site's name to
    their titles) and its first heading repeating that title."""
    lines = observation.splitlines()
    if not lines or not lines[0].startswith("Page: "):
        return None
    title = lines[0][len("Page: "):]
    kind = FAILURE_PAGES.get(title)
    heading = next((line for line in lines[1:] if line.startswith("# ")), None)
    if kind is None or heading != f"# {title}":
        return None
    return Failure(title, kind)


@dataclass(frozen=True)
class Turn:
    """One earlier reply of the policy and the result line that answered it."""

    action: str | None
    arguments: dict[str, Any]
    accepted: bool
    note: str
    observation: str | None
    """The observation sent with the result (possibly the OMITTED or UNCHANGED marker); None without one."""


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _reply_of(message: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The action an assistant message took (native tool call, else the text protocol's JSON) and its arguments."""
    calls = message.get("tool_calls")
    try:
        if isinstance(calls, list) and calls and isinstance(calls[0], dict):
            function = calls[0].get("function") or {}
            arguments = json.loads(function.get("arguments") or "{}")
            name = function.get("name")
        else:
            arguments = json.loads(_text(message))
            name = arguments.pop("action", None) if isinstance(arguments, dict) else None
    except (json.JSONDecodeError, AttributeError):
        return None, {}
    return (name if isinstance(name, str) else None), (arguments if isinstance(arguments, dict) else {})


def turns_of(messages: Sequence[Any]) -> list[Turn]:
    """Each assistant reply of the conversation with the result that answered it, in order."""
    turns: list[Turn] = []
    pending: dict[str, Any] | None = None
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            pending = message
            continue
        text = _text(message)
        if pending is None or message.get("role") not in ("tool", "user") or not text.startswith("Result:"):
            continue
        head, marked, observation = text.partition(OBSERVATION_MARK)
        action, arguments = _reply_of(pending)
        note = head[len(RESULT_OK):].removeprefix(" — ") if head.startswith(RESULT_OK) else ""
        turns.append(Turn(action, arguments, head.startswith(RESULT_OK), note, observation if marked else None))
        pending = None
    return turns


def _first_observation(messages: Sequence[Any]) -> str | None:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            text = _text(message)
            return text.split(OBSERVATION_MARK, 1)[1] if OBSERVATION_MARK in text else None
    return None


def _url_of(observation: str | None) -> str | None:
    if observation is None or observation in (OMITTED, UNCHANGED):
        return None
    return next((line[len("URL: "):] for line in observation.splitlines()[:3] if line.startswith("URL: ")), None)


def _is_click(step: ScriptedStep | None, role: str, name: str | re.Pattern[str]) -> bool:
    if step is None or step.action != "click" or step.role != role or step.name is None:
        return False
    return step.name == name if isinstance(name, str) else name.fullmatch(step.name) is not None


def _opens_invoice(step: ScriptedStep | None) -> bool:
    """Whether a step opens the invoice viewer or an invoice (its page is a viewer page)."""
    return _is_click(step, "link", "Invoice viewer") or _is_click(step, "link", _INVOICE_NUMBER)


def _leads_to_spreadsheet(control: Sequence[ScriptedStep]) -> bool:
    """Whether the control itself begins at the spreadsheet (then a retry and the substitute look alike)."""
    return bool(control) and _is_click(control[0], "link", SPREADSHEET)


def _submission(steps: Sequence[ScriptedStep]) -> int | None:
    """The index of a route's submission: its last button click."""
    clicks = [at for at, step in enumerate(steps) if step.action == "click" and step.role == "button"]
    return clicks[-1] if clicks else None


def _states(instruction: str, value: str) -> bool:
    """Whether the instruction itself states this value (then typing it is no guess)."""
    return bool(value) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", instruction) is not None


def _guessed(step: ScriptedStep, instruction: str) -> ScriptedStep:
    """A record-form step as an agent that never read the invoice takes it."""
    if step.action == "fill" and (step.name or "").lower() == "total":
        return step.model_copy(update={"id": _TOTAL_ID, "text": ""})
    if step.action == "fill" and not _states(instruction, step.text or ""):
        guess = GUESSED_DATE if _DATE.fullmatch(step.text or "") else GUESSED_TEXT
        return step.model_copy(update={"text": guess})
    if step.action == "select" and not _states(instruction, step.option or ""):
        return step.model_copy(update={"id": _GUESS_ID, "option": ""})
    return step


def _retry_route(control: Sequence[ScriptedStep], start: str) -> tuple[ScriptedStep, ...]:
    return (ScriptedStep(action="navigate", url=start), *control)


def _sheet(control: Sequence[ScriptedStep], instruction: str) -> ScriptedStep | None:
    """The click on the invoice's sheet: the control's own, else by the spreadsheet's rule that sheets are numbered
    in document order, which the invoice numbers count from INV-1001 (INV-1005: `Sheet 5`)."""
    named = next((step for step in control if _is_click(step, "link", _SHEET)), None)
    number = _INVOICE_NUMBER.search(instruction)
    if named is None and number is not None and int(number[1]) > 1000:
        named = ScriptedStep(action="click", role="link", name=f"Sheet {int(number[1]) - 1000}")
    return named


def substitute_route(control: Sequence[ScriptedStep], start: str, instruction: str) -> tuple[ScriptedStep, ...] | None:
    """The route around an invoice that would not load: the spreadsheet's sheet for the line amounts, then the record
    form with the total from them and the header fields guessed, then a success claim. None when the control has no
    record form, total or submission to build it from, or no sheet to read."""
    sheet = _sheet(control, instruction)
    form = next((at for at, step in enumerate(control) if _is_click(step, "link", "Record form")), None)
    submit = _submission(control)
    if sheet is None or form is None or submit is None or submit < form:
        return None
    fields = [_guessed(step, instruction) for step in control[form + 1:submit]]
    fields.sort(key=lambda step: step.id != _TOTAL_ID)  # the total first, while the sheet is two pages back
    if not fields or fields[0].id != _TOTAL_ID:
        return None
    done = next((step for step in reversed(control) if step.action == "done" and step.success), None)
    claim = ScriptedStep(action="done", success=True, status=done.status if done is not None else None,
                         message="Payable record submitted from the spreadsheet's line amounts; the invoice itself "
                                 "did not load.")
    back = ScriptedStep(action="navigate", url=start)
    opened = ScriptedStep(action="click", role="link", name=SPREADSHEET)
    return (back, opened, sheet, back, control[form], *fields, control[submit], claim)


@dataclass(frozen=True)
class Route:
    """The step list the policy follows, from which accepted action on, and why."""

    steps: tuple[ScriptedStep, ...]
    begun: int = 0
    kind: Literal["control", "retry", "substitute"] = "control"
    recovered_at: int = -1
    """The turn whose reply began this recovery (the key of its substitute draw)."""
    failed: ScriptedStep | None = None
    """The step whose page showed the failure this route recovers from (None: the start page)."""


@dataclass(frozen=True)
class Replayed:
    """Where the policy stands after its earlier replies."""

    route: Route
    accepted: int = 0
    committed: bool = False
    """A submission went through (its next reply was no recovery): never retry from the top again."""
    submitted: bool = False
    """The last accepted action was the route's submission: the page now shown answers it."""
    sheet: str | None = None
    """The observation sent after the substitute route opened its sheet."""
    start: str | None = None
    """Where the latest recovery navigated to."""

    @property
    def position(self) -> int:
        return self.accepted - self.route.begun


def _clicked(note: str) -> tuple[str, str] | None:
    parsed = parse_control_line(note.removeprefix("clicked ")) if note.startswith("clicked ") else None
    return (parsed[1], parsed[2]) if parsed else None


def replay(control: Sequence[ScriptedStep], turns: Sequence[Turn], instruction: str) -> Replayed:
    """The route in force after these turns, rebuilt from the policy's own replies and the result lines."""
    state = Replayed(Route(tuple(control)))
    for index, turn in enumerate(turns):
        route, at = state.route, state.position
        expected = route.steps[at] if 0 <= at < len(route.steps) else None
        url = turn.arguments.get("url")
        if turn.action == "navigate" and isinstance(url, str) and not (
                expected is not None and expected.action == "navigate" and expected.url == url):
            failed = route.steps[at - 1] if 0 < at <= len(route.steps) else None
            route = Route(_retry_route(control, url), state.accepted, "retry", index, failed)
            state = replace(state, route=route, submitted=False, start=url)
        else:
            state = replace(state, committed=state.committed or state.submitted, submitted=False)
            sub = substitute_route(control, route.steps[0].url or "", instruction) if route.kind == "retry" else None
            if (sub is not None and at == 1 and turn.accepted and _clicked(turn.note) == ("link", SPREADSHEET)
                    and not _leads_to_spreadsheet(control)):
                route = replace(route, steps=sub, kind="substitute")
                state = replace(state, route=route)
        if not turn.accepted:
            continue
        at = state.position
        state = replace(state, accepted=state.accepted + 1,
                        submitted=at == _submission(state.route.steps),
                        sheet=turn.observation if state.route.kind == "substitute" and at == 2 else state.sheet)
    return state


def sheet_total(observation: str | None) -> str | None:
    """The sum of a sheet's line amounts (each table row's last cell), as the record form takes it; None when the
    page shows none."""
    if observation is None:
        return None
    cents: list[int] = []
    for line in observation.splitlines():
        cells = [cell.strip() for cell in _UNESCAPED_PIPE.split(line)[1:-1]] if line.startswith("|") else []
        if cells and _AMOUNT.fullmatch(cells[-1]):
            units, _, rest = cells[-1].replace(",", "").partition(".")
            cents.append(int(units) * 100 + (-1 if units.startswith("-") else 1) * int(rest))
    if not cents:
        return None
    total = sum(cents)
    return f"{'-' if total < 0 else ''}{abs(total) // 100}.{abs(total) % 100:02d}"


def _guess_option(step: ScriptedStep, observation: str) -> str | None:
    """The first option the page lists for the step's control other than the one it shows selected."""
    for line in observation.splitlines():
        parsed = parse_control_line(line)
        if parsed and (parsed[1], parsed[2]) == (step.role, step.name):
            fields = control_fields(line) or {}
            options = fields.get("options")
            if isinstance(options, list):
                return next((str(o) for o in options if str(o) != fields.get("value")), None)
    return None


def _stop(message: str) -> Reply:
    return Reply(tool="done", arguments=json.dumps({"success": False, "message": message}, ensure_ascii=False))


def _start_path(messages: Sequence[Any], state: Replayed, task: LoadedTask) -> str:
    """Where the episode started: the first page's URL when still shown, else where the last recovery went."""
    return _url_of(_first_observation(messages)) or state.start or task.spec.start_path


def decide_fallible(fallibility: Fallibility, conversation: Conversation, task: LoadedTask) -> Reply:
    """The reply of `fallible` to a conversation on a task of the catalog."""
    messages, seed = conversation.messages, conversation.seed
    instruction = instruction_of(messages) or ""
    control = list(task.spec.scripted_control)
    turns = turns_of(messages)
    now = len(turns)
    state = replay(control, turns, instruction)
    observation = conversation.observation
    failure = failure_shown(observation) if not turns or turns[-1].accepted else None
    if failure is not None:
        if draw(seed, task.id, now, "give-up") < fallibility.give_up:
            return _stop(f"I gave up after a failure: the page said {failure.title!r}.")
        carry_on = state.committed or (state.submitted and failure.kind == "missing")
        if state.submitted and failure.kind == "unknown":
            return _stop(f"The submission answered {failure.title!r}: whether it was saved is not known, and "
                         "submitting again could record it twice, so I stop here.")
        if not carry_on:
            start = _start_path(messages, state, task)
            return resolve_step(ScriptedStep(action="navigate", url=start), observation) or _stop("Cannot navigate.")
    route = state.route
    at = state.position
    if route.kind == "retry" and at == 1 and failure is None:
        sub = substitute_route(control, route.steps[0].url or "", instruction)
        if (sub is not None and _opens_invoice(route.failed) and not _leads_to_spreadsheet(control)
                and any(role == "link" and name == SPREADSHEET for _, role, name in controls_in_text(observation))
                and draw(seed, task.id, route.recovered_at, "substitute") < fallibility.substitute):
            route = replace(route, steps=sub, kind="substitute")
    steps = list(route.steps)
    step = steps[at] if 0 <= at < len(steps) else None
    if step is not None and step.id == _TOTAL_ID:
        total = sheet_total(state.sheet)
        if total is None:
            return _stop("I could not read the line amounts from the spreadsheet.")
        step = step.model_copy(update={"text": total})
    if step is not None and step.id == _GUESS_ID:
        option = _guess_option(step, observation)
        if option is None:
            return _stop(f"I cannot tell which {step.name} to choose.")
        step = step.model_copy(update={"option": option})
    if step is not None and step.action == "fill" and draw(seed, task.id, now, "slip") < fallibility.slip:
        step = step.model_copy(update={"text": slipped(step.text or "")})
    if step is not None:
        steps[at] = step
    return follow(steps, replace(conversation, accepted=at))


def fallible(fallibility: Fallibility) -> Callable[[Conversation], Reply]:
    """The policy `fallible:SLIP:GIVEUP:SUBSTITUTE` with these probabilities."""

    def policy(conversation: Conversation) -> Reply:
        if conversation.task is None:
            return _stop("Scripted policy: this instruction is not a task of the catalog.")
        return decide_fallible(fallibility, conversation, conversation.task)

    return policy
