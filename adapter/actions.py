"""The action set, defined once.

Each action is a pydantic model whose docstring and field descriptions are the documentation
the model reads. The OpenAI tool schemas (`tool_schemas`) and the text protocol
(`text_protocol`) are both generated from these classes; `parse_action` is the single parser
for native tool calls and text replies alike.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ControlId = Annotated[str, Field(description="Control id shown in brackets in the observation, e.g. 7 for [7].")]


def _control_id(value: Any) -> Any:
    # Models often send ids as numbers or with the brackets they saw; accept both spellings.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value.strip().strip("[]").strip()
    return value


class Click(_Action):
    """Click a link, button, checkbox, radio button or other control."""

    action: Literal["click"] = "click"
    id: ControlId

    _normalise_id = field_validator("id", mode="before")(_control_id)


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
    checked: bool = Field(default=True, description="true to check, false to uncheck.")

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
    """Show the next part of a long page whose text was cut off; the observation says when it was."""

    action: Literal["more"] = "more"


class Done(_Action):
    """Finish the task. Say whether you succeeded; put any requested answer in the message."""

    action: Literal["done"] = "done"
    success: bool = Field(description="true if the task is complete, false if you could not complete it.")
    message: str = Field(default="", description="A short report, including any answer the task asks for.")


Action = Annotated[
    Click | Fill | Select | Check | Press | Navigate | Back | More | Done, Field(discriminator="action")
]
ACTION_TYPES: tuple[type[_Action], ...] = (Click, Fill, Select, Check, Press, Navigate, Back, More, Done)
_ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
_BY_NAME: dict[str, type[_Action]] = {
    cls.model_fields["action"].default: cls for cls in ACTION_TYPES
}


class Rejection(BaseModel):
    """Model output that could not be turned into an action; the reason is shown to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cause: Literal[
        "no_action", "unknown_action", "malformed_arguments", "unknown_control", "stale_control",
        "off_site", "not_applicable", "execution_error",
    ]
    reason: str


def action_name(cls: type[_Action]) -> str:
    default = cls.model_fields["action"].default
    assert isinstance(default, str)
    return default


def _parameters(cls: type[_Action]) -> dict[str, Any]:
    schema = cls.model_json_schema()
    properties = {k: v for k, v in schema.get("properties", {}).items() if k != "action"}
    for prop in properties.values():
        prop.pop("title", None)
    required = [k for k in schema.get("required", []) if k != "action"]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@functools.cache
def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI `tools` definitions, one function per action (built once: every model request sends them; callers
    must not change them)."""
    return [
        {
            "type": "function",
            "function": {
                "name": action_name(cls),
                "description": (cls.__doc__ or "").strip(),
                "parameters": _parameters(cls),
            },
        }
        for cls in ACTION_TYPES
    ]


def text_protocol() -> str:
    """The same action set described for servers without native tool calls."""
    lines = [
        "Reply with exactly one action as a JSON object on one line, for example",
        '{"action": "click", "id": "7"}. The actions are:',
    ]
    for cls in ACTION_TYPES:
        params = _parameters(cls)["properties"]
        args = ", ".join(f'"{name}": {spec.get("type", "string")}' for name, spec in params.items())
        signature = f'{{"action": "{action_name(cls)}"' + (f", {args}" if args else "") + "}"
        lines.append(f"- {signature} — {(cls.__doc__ or '').strip()}")
    return "\n".join(lines)


def parse_action(name: str | None, arguments: str | dict[str, Any] | None) -> Action | Rejection:
    """Turn a tool call (name + JSON arguments) into an action, or a rejection with a reason."""
    if not name:
        return Rejection(cause="no_action", reason="No action was given. Reply with exactly one action.")
    if name not in _BY_NAME:
        known = ", ".join(sorted(_BY_NAME))
        return Rejection(cause="unknown_action", reason=f"Unknown action {name!r}. Known actions: {known}.")
    if arguments is None or arguments == "":
        args: Any = {}
    elif isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return Rejection(cause="malformed_arguments", reason=f"Arguments of {name} are not valid JSON: {exc.msg}.")
    else:
        args = arguments
    if not isinstance(args, dict):
        return Rejection(cause="malformed_arguments", reason=f"Arguments of {name} must be a JSON object.")
    args = {k: v for k, v in args.items() if k != "action"}
    try:
        return _ACTION_ADAPTER.validate_python({"action": name, **args})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or name}: {e['msg']}" for e in exc.errors())
        return Rejection(cause="malformed_arguments", reason=f"Invalid arguments for {name}: {problems}.")


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_text_action(text: str | None) -> Action | Rejection:
    """Parse the text protocol: the first JSON object in the reply that names an action."""
    if not text or not text.strip():
        return Rejection(cause="no_action", reason="The reply was empty. Reply with exactly one action.")
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "action" in obj:
            name = obj.get("action")
            return parse_action(name if isinstance(name, str) else None, obj)
    if _JSON_OBJECT.search(text):
        return Rejection(cause="malformed_arguments", reason="The reply holds no valid JSON action object.")
    return Rejection(cause="no_action", reason="The reply holds no action. Reply with one JSON action object.")


def action_to_arguments(action: Action) -> dict[str, Any]:
    """The JSON arguments of an action as a tool call would carry them."""
    return action.model_dump(exclude={"action"})
