"""What an action may do to a control (`check_applicable`, by the control's role), and what came of an action
(`ActionOutcome`: carried out, or rejected with a reason the model reads), with the driver's wordings of each
rejection."""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict

from adapter.actions import Action, Check, Drag, Fill, Hover, Rejection, Select
from adapter.observation import Control, format_control

FILLABLE_ROLES = frozenset({"textbox", "searchbox", "spinbutton", "slider", "combobox"})
SELECTABLE_ROLES = frozenset({"combobox", "listbox"})
CHECKABLE_ROLES = frozenset({"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"})


class ActionOutcome(BaseModel):
    """What happened to one action: carried out, or rejected with a reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    rejection: Rejection | None = None
    note: str = ""
    navigated: bool = False
    """The action loaded a new document in the page (a link, a form submission, a navigation)."""


def reject(cause: str, reason: str) -> ActionOutcome:
    return ActionOutcome(ok=False, rejection=Rejection.model_validate({"cause": cause, "reason": reason}))


def check_state(checked: bool) -> str:
    return "checked" if checked else "unchecked"


def stale(control_id: str) -> ActionOutcome:
    return reject(
        "stale_control",
        f"Control [{control_id}] is no longer on the page; the page changed. Use an id from the latest observation.",
    )


def changed_control(control_id: str, how: str) -> ActionOutcome:
    return reject("changed_control", f"Control [{control_id}] was not acted on: {how}. Look at the latest "
                                      "observation again before acting.")


def short_error(error: Exception) -> str:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return first[:200]


def described(control: Control) -> str:
    return format_control(control).split(" value=")[0].split(" options=")[0]


def at_point(at: tuple[float, float] | None) -> str:
    """A point of a control's box as the model gave it (" at x 0.25, y 0.5"), or nothing for none."""
    return "" if at is None else f" at x {at[0]:g}, y {at[1]:g}"


def bad_point(at: tuple[float, float] | None) -> str | None:
    """Why a point of a control's box is not one (the parser refuses these; an action built otherwise may hold them)."""
    if at is None or all(math.isfinite(v) and 0 <= v <= 1 for v in at):
        return None
    return "a point of a control is given by x and y, fractions of its box from 0 to 1"


def pixels(action: Drag) -> str:
    return f"dx {action.dx or 0:g}, dy {action.dy or 0:g} px"


def check_applicable(action: Action, control: Control) -> str | None:
    """Why this action does not fit this control, or None when it does."""
    if control.disabled and not isinstance(action, Hover):  # the pointer over a disabled control activates nothing
        return f"Control [{control.id}] is disabled."
    if isinstance(action, Fill):
        if control.role not in FILLABLE_ROLES or control.options:
            return f"Cannot fill [{control.id}], a {control.role}; fill works on text boxes."
        if control.readonly:
            return f"Control [{control.id}] is read-only."
    if isinstance(action, Select):
        if control.role not in SELECTABLE_ROLES or not control.options:
            return f"Cannot select on [{control.id}], a {control.role}; select works on drop-down lists."
        if action.option not in control.options:
            listed = json.dumps(control.options, ensure_ascii=False)
            return f"[{control.id}] has no option {action.option!r}. Its options are {listed}."
    if isinstance(action, Check):
        if control.role not in CHECKABLE_ROLES:
            return f"Cannot check [{control.id}], a {control.role}; check works on checkboxes and radio buttons."
        if control.role == "radio" and not action.checked:
            return f"Radio button [{control.id}] cannot be unchecked; check another option of its group."
    return None
