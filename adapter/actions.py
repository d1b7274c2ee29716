"""The action set, defined once.

Each action is a pydantic model whose docstring and field descriptions are the documentation
the model reads. The OpenAI tool schemas (`tool_schemas`) and the text protocol
(`text_protocol`) are both generated from these classes; `parse_action` is the single parser
for native tool calls and text replies alike. A task's answer fields (`FinishSchema`) extend `done`'s
definition for that task's episodes; statuses and reason codes come from `tasks.answers`, the same on
every task, so `done`'s shape never says whether a task is feasible.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from adapter.reply import JsonProblem, bracket_depths, holds_invalid_text, load_json
from computerops.core.vocabulary import ACTION_NAMES
from tasks.answers import FORMATS, REASONS, REFUSAL_STATUSES, SHAPES, STATUSES, AnswerStatus, AnswerType, ReasonCode


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    _OPTIONAL: ClassVar[tuple[str, ...]] = ()
    """Fields left out of the action's dump (its transcript record, its tool call's arguments) when not given: a
    click without a point is recorded as it always was."""

    @model_serializer(mode="wrap")
    def _given_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        for name in self._OPTIONAL:
            if dumped.get(name) is None:
                dumped.pop(name, None)
        return dumped


ControlId = Annotated[str, Field(description="Control id shown in brackets in the observation, e.g. 7 for [7].")]


def _control_id(value: Any) -> Any:
    # Models often send ids as numbers or with the brackets they saw; accept both spellings.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value.strip().strip("[]").strip()
    return value


Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
"""A point's place across (x) or down (y) a control's box: 0 is its left (top) edge, 1 its right (bottom) edge (the
driver keeps the point a pixel inside the box)."""
Pixels = Annotated[float, Field(ge=-10_000, le=10_000, allow_inf_nan=False)]


def _point_given(x: float | None, y: float | None) -> tuple[float, float] | None:
    """The point of a box that x and y name (either alone: the middle on the other axis), or None for neither."""
    if x is None and y is None:
        return None
    return (0.5 if x is None else x, 0.5 if y is None else y)


class Click(_Action):
    """Click a link, button, checkbox, radio button or other control. To click a particular point of a control (a
    canvas, a map, a colour strip, a slider's track), give x and/or y: fractions of its box from its top-left
    corner, e.g. x 0.25 y 0.5 is a quarter of the way across, half way down; the one left out is the middle."""

    action: Literal["click"] = "click"
    _OPTIONAL = ("x", "y")
    id: ControlId
    x: Fraction | None = Field(default=None, description="0 = the control's left edge, 1 = its right edge.")
    y: Fraction | None = Field(default=None, description="0 = the control's top edge, 1 = its bottom edge.")

    _normalise_id = field_validator("id", mode="before")(_control_id)

    @property
    def point(self) -> tuple[float, float] | None:
        """The point of the control's box to click (fractions across and down), or None: where the driver picks."""
        return _point_given(self.x, self.y)


class Hover(_Action):
    """Move the mouse pointer over a control without clicking, e.g. to open a menu that opens on pointer over."""

    action: Literal["hover"] = "hover"
    id: ControlId

    _normalise_id = field_validator("id", mode="before")(_control_id)


class Drag(_Action):
    """Press the mouse on a control, move it and release it: onto another control (to_id, e.g. a list item onto
    another place or a card onto a column), onto a point of a control (x and/or y: fractions of the box of to_id,
    or of the dragged control itself without to_id, e.g. x 0.8 on a slider's track), or by a distance in pixels
    (dx right, dy down, e.g. a slider's handle 40 px to the right)."""

    action: Literal["drag"] = "drag"
    _OPTIONAL = ("to_id", "x", "y", "dx", "dy")
    id: ControlId
    to_id: str | None = Field(default=None, description="The id of the control to release the mouse over.")
    x: Fraction | None = Field(default=None, description="Where to release across: 0 = left edge, 1 = right edge.")
    y: Fraction | None = Field(default=None, description="Where to release down: 0 = top edge, 1 = bottom edge.")
    dx: Pixels | None = Field(default=None, description="Instead of a target: pixels to move right (negative: left).")
    dy: Pixels | None = Field(default=None, description="Instead of a target: pixels to move down (negative: up).")

    _normalise_id = field_validator("id", "to_id", mode="before")(_control_id)

    @model_validator(mode="after")
    def _one_destination(self) -> Drag:
        by_offset = self.dx is not None or self.dy is not None
        if by_offset and (self.to_id is not None or self.point is not None):
            raise ValueError("give either dx/dy or a target (to_id and/or x, y), not both")
        if not by_offset and self.to_id is None and self.point is None:
            raise ValueError("say where to release: to_id, x/y or dx/dy")
        return self

    @property
    def point(self) -> tuple[float, float] | None:
        """The release point as fractions of the target's box, or None: its middle (or an offset)."""
        return _point_given(self.x, self.y)


class Fill(_Action):
    """Replace the text of a text box, text area or other text input."""

    action: Literal["fill"] = "fill"
    id: ControlId
    text: str = Field(description="The complete new text of the field.")

    _normalise_id = field_validator("id", mode="before")(_control_id)


class Select(_Action):
    """Choose an option of a drop-down list by its visible label."""

    action: Literal["select"] = "select"
    id: ControlId
    option: str = Field(description="The label of the option exactly as listed in the observation.")

    _normalise_id = field_validator("id", mode="before")(_control_id)


class Check(_Action):
    """Set a checkbox or radio button to checked or unchecked."""

    action: Literal["check"] = "check"
    id: ControlId
    checked: StrictBool = Field(default=True, description="true to check, false to uncheck.")

    _normalise_id = field_validator("id", mode="before")(_control_id)


class Press(_Action):
    """Press a key on a control: arrow keys move a slider or spin button, Enter submits, Escape closes."""

    action: Literal["press"] = "press"
    id: ControlId
    key: str = Field(description='A key name such as "Enter", "Escape", "ArrowDown", "ArrowRight", "Tab", "a".')

    _normalise_id = field_validator("id", mode="before")(_control_id)


class Navigate(_Action):
    """Open a page of this site by its path, e.g. /helpdesk/tickets. Other sites are not allowed."""

    action: Literal["navigate"] = "navigate"
    url: str = Field(description="A path or URL on this site.")


class Back(_Action):
    """Go back to the previous page."""

    action: Literal["back"] = "back"


class More(_Action):
    """Show the next part of a long page whose text was cut off, or more of a list that loads on scroll; the
    observation says when."""

    action: Literal["more"] = "more"


class AnswerDialog(_Action):
    """Answer the dialog the page opened (a confirm, prompt, alert or leave-page question), shown in the observation:
    accept true is OK (or Leave), false is Cancel (or Stay). While it is open, the page waits for this answer."""

    action: Literal["dialog"] = "dialog"
    accept: StrictBool = Field(description="true for OK / Leave, false for Cancel / Stay.")
    text: str | None = Field(default=None, description="For a prompt dialog: the text to answer with.")


def _listed(names: Mapping[Any, str]) -> str:
    return "; ".join(f"{name}: {meaning}" for name, meaning in names.items())


class Done(_Action):
    """Finish the task. Say whether you succeeded and with which status; a refusal (the task must not or cannot be
    done) gives its reason code; a task that asks for information gives it in `answer`, field by field."""

    action: Literal["done"] = "done"
    success: StrictBool = Field(description="true if the task is complete, false if you did not complete it.")
    """A JSON boolean only: "yes", 1 or 1.0 is not a claim of success (the reply is rejected and the model told)."""
    status: AnswerStatus | None = Field(
        default=None, description="How the task ended (default: success when success is true, else failed). "
        + _listed(STATUSES) + ".")
    reason: ReasonCode | None = Field(
        default=None, description="For a refusal status, why: " + _listed(REASONS) + ".")
    answer: dict[str, Any] | None = Field(default=None, description="The answer the task asks for, field by field.")
    message: str = Field(default="", description="A short report for people; it is not scored.")

    @property
    def finished_status(self) -> AnswerStatus:
        return self.status or ("success" if self.success else "failed")


class AnswerFieldSchema(BaseModel):
    """One answer field of a task as the model is told it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: AnswerType
    description: str


class FinishSchema(BaseModel):
    """What `done` must carry in one task's episodes: its answer fields (none for most tasks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[str, AnswerFieldSchema] = Field(default_factory=dict)

    def answer_schema(self) -> dict[str, Any]:
        return {
            "type": "object", "description": "The answer the task asks for, field by field.",
            "properties": {
                name: ({"type": "array", "items": {"type": "string"}} if SHAPES[f.type] == "string_list"
                       else {"type": SHAPES[f.type]}) | {"description": f"{f.description} ({FORMATS[f.type]})"}
                for name, f in self.fields.items()
            },
            "required": list(self.fields), "additionalProperties": False,
        }

    def problem(self, done: Done) -> str | None:
        """Why this `done` does not fit the task's finish (shown to the model), or None."""
        if done.success and done.status not in (None, "success"):
            return f"success is true but status is {done.status}; a completed task has status success."
        if not done.success and done.status == "success":
            return "success is false but status is success."
        if done.finished_status in REFUSAL_STATUSES and done.reason is None:
            return f"status {done.finished_status} is a refusal: give its reason code."
        if done.finished_status not in REFUSAL_STATUSES and done.reason is not None:
            return "a reason code belongs to a refusal status only."
        if not self.fields:
            return "this task asks for no answer fields; leave answer out." if done.answer else None
        if done.answer is None:
            return f"give the answer with the fields {', '.join(self.fields)}." if done.success else None
        missing = [name for name in self.fields if name not in done.answer]
        extra = [name for name in done.answer if name not in self.fields]
        if missing or extra:
            return "the answer needs exactly the fields " + ", ".join(self.fields) + (
                f" (missing {', '.join(missing)})" if missing else "") + (
                f" (unknown {', '.join(extra)})" if extra else "") + "."
        for name, spec in self.fields.items():
            value, shape = done.answer[name], SHAPES[spec.type]
            fits = (isinstance(value, str) if shape == "string"
                    else isinstance(value, int) and not isinstance(value, bool) if shape == "integer"
                    else isinstance(value, list) and all(isinstance(item, str) for item in value))
            if not fits:
                wanted = {"string": "a string", "integer": "an integer", "string_list": "a list of strings"}[shape]
                return f"answer field {name} must be {wanted}."
        return None


NO_ANSWER = FinishSchema()


Action = Annotated[
    Click | Fill | Select | Check | Press | Hover | Drag | Navigate | Back | More | AnswerDialog | Done,
    Field(discriminator="action"),
]
ACTION_TYPES: tuple[type[_Action], ...] = (
    Click, Fill, Select, Check, Press, Hover, Drag, Navigate, Back, More, AnswerDialog, Done)
_ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
_BY_NAME: dict[str, type[_Action]] = {
    cls.model_fields["action"].default: cls for cls in ACTION_TYPES
}
if tuple(_BY_NAME) != ACTION_NAMES:  # the vocabulary tasks name their steps in must be this action set
    raise AssertionError(f"computerops.core.vocabulary.ACTION_NAMES {ACTION_NAMES} != the actions {tuple(_BY_NAME)}")


class Rejection(BaseModel):
    """Model output that could not be turned into an action; the reason is shown to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cause: Literal[
        "no_action", "unknown_action", "malformed_arguments", "unknown_control", "stale_control",
        "off_site", "not_applicable", "execution_error", "invalid_text", "truncated_reply", "changed_control",
        "dialog_open", "interrupted",
    ]
    reason: str


def action_name(cls: type[_Action]) -> str:
    default = cls.model_fields["action"].default
    assert isinstance(default, str)
    return default


def _parameters(cls: type[_Action], finish: FinishSchema = NO_ANSWER) -> dict[str, Any]:
    schema = cls.model_json_schema()
    properties = {k: v for k, v in schema.get("properties", {}).items() if k != "action"}
    for prop in properties.values():
        prop.pop("title", None)
        if "anyOf" in prop:  # an optional field: show its one type (null is the same as leaving it out)
            kinds = [kind for kind in prop.pop("anyOf") if kind.get("type") != "null"]
            prop.update(kinds[0] if len(kinds) == 1 else {"anyOf": kinds})
            prop.pop("default", None)
    if cls is Done:
        if finish.fields:
            properties["answer"] = finish.answer_schema()
        else:
            properties.pop("answer")
    required = [k for k in schema.get("required", []) if k != "action"]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@functools.cache
def _schemas(finish_json: str) -> list[dict[str, Any]]:
    finish = FinishSchema.model_validate_json(finish_json)
    return [
        {
            "type": "function",
            "function": {
                "name": action_name(cls),
                "description": " ".join((cls.__doc__ or "").split()),
                "parameters": _parameters(cls, finish),
            },
        }
        for cls in ACTION_TYPES
    ]


def tool_schemas(finish: FinishSchema = NO_ANSWER) -> list[dict[str, Any]]:
    """OpenAI `tools` definitions, one function per action, `done` with the task's answer fields (built once per
    finish schema: every model request sends them; callers must not change them)."""
    return _schemas(finish.model_dump_json())


def text_protocol(finish: FinishSchema = NO_ANSWER) -> str:
    """The same action set described for servers without native tool calls."""
    lines = [
        "Reply with exactly one action as a JSON object on one line, for example",
        '{"action": "click", "id": "7"}. The actions are:',
    ]
    for cls in ACTION_TYPES:
        params = _parameters(cls, finish)["properties"]
        args = ", ".join(f'"{name}": {spec.get("type", "string")}' for name, spec in params.items())
        signature = f'{{"action": "{action_name(cls)}"' + (f", {args}" if args else "") + "}"
        lines.append(f"- {signature} — {' '.join((cls.__doc__ or '').split())}")
    lines.append(f"done's status is one of: {_listed(STATUSES)}.")
    lines.append(f"A refusal's reason is one of: {_listed(REASONS)}.")
    if finish.fields:
        lines.append("done's answer is an object with exactly these fields: " + "; ".join(
            f'"{name}" ({SHAPES[f.type].replace("_", " of ")}): {f.description}, {FORMATS[f.type]}'
            for name, f in finish.fields.items()) + ".")
    return "\n".join(lines)


def parse_action(
    name: str | None, arguments: str | dict[str, Any] | None, finish: FinishSchema = NO_ANSWER
) -> Action | Rejection:
    """Turn a tool call (name + JSON arguments) into an action, or a rejection with a reason; a `done` must also
    fit the task's finish schema."""
    if not name:
        return Rejection(cause="no_action", reason="No action was given. Reply with exactly one action.")
    if name not in _BY_NAME:
        known = ", ".join(sorted(_BY_NAME))
        return Rejection(cause="unknown_action", reason=f"Unknown action {name!r}. Known actions: {known}.")
    if arguments is None or arguments == "":
        args: Any = {}
    elif isinstance(arguments, str):
        try:
            args = load_json(arguments)
        except JsonProblem as exc:
            cause: Literal["truncated_reply", "malformed_arguments"] = (
                "truncated_reply" if exc.truncated else "malformed_arguments")
            return Rejection(cause=cause, reason=f"Arguments of {name} are not valid JSON: {exc}.")
    else:
        args = arguments
    if holds_invalid_text(args):
        return Rejection(cause="invalid_text", reason=f"Arguments of {name} hold text that is not valid Unicode (a "
                                                      "lone surrogate).")
    if not isinstance(args, dict):
        return Rejection(cause="malformed_arguments", reason=f"Arguments of {name} must be a JSON object.")
    args = {k: v for k, v in args.items() if k != "action"}
    try:
        action = _ACTION_ADAPTER.validate_python({"action": name, **args})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or name}: {e['msg']}" for e in exc.errors())
        return Rejection(cause="malformed_arguments", reason=f"Invalid arguments for {name}: {problems}.")
    problem = finish.problem(action) if isinstance(action, Done) else None
    if problem is not None:
        return Rejection(cause="malformed_arguments", reason=f"Invalid done: {problem}")
    return action


MAX_TEXT_REPLY_CHARS = 20_000
"""The text protocol reads at most this much of a reply (a bounded reply of `max_response_tokens` is far shorter)."""
MAX_TEXT_CANDIDATES = 32
"""At most this many `{` positions are tried as the start of the action object, so parsing stays linear."""


def parse_text_action(text: str | None, finish: FinishSchema = NO_ANSWER) -> Action | Rejection:
    """Parse the text protocol: the first JSON object in the reply that names an action.

    Linear in the reply and bounded: only the first MAX_TEXT_REPLY_CHARS characters are read, and at most
    MAX_TEXT_CANDIDATES candidate starts are tried, each with the bounded reader of `adapter.reply`."""
    if not text or not text.strip():
        return Rejection(cause="no_action", reason="The reply was empty. Reply with exactly one action.")
    text = text[:MAX_TEXT_REPLY_CHARS]
    braces = 0
    cut_off = False
    for match in re.finditer(r"\{", text):
        braces += 1
        if braces > MAX_TEXT_CANDIDATES:
            break
        start = match.start()
        end = _object_end(text, start)
        if end is None:
            cut_off = True
            continue
        try:
            obj = load_json(text[start:end])
        except JsonProblem:
            continue
        if isinstance(obj, dict) and "action" in obj:
            name = obj.get("action")
            return parse_action(name if isinstance(name, str) else None, obj, finish)
    if cut_off:
        return Rejection(cause="truncated_reply", reason="The reply's JSON action object is not closed.")
    if braces:
        return Rejection(cause="malformed_arguments", reason="The reply holds no valid JSON action object.")
    return Rejection(cause="no_action", reason="The reply holds no action. Reply with one JSON action object.")


def _object_end(text: str, start: int) -> int | None:
    """Where the JSON object starting at `start` closes (by brackets outside strings), or None if it never does."""
    return next((position + 1 for position, depth in bracket_depths(text, start) if depth == 0), None)


def action_to_arguments(action: Action) -> dict[str, Any]:
    """The JSON arguments of an action as a tool call would carry them."""
    return action.model_dump(exclude={"action"})
