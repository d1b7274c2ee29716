"""The <input> types whose value the browser constrains: the format the model is told, and whether a value
the model fills survives the browser's value sanitisation.

A date, time, month, week, colour, number or range input keeps only values of its own syntax; anything else
the browser silently replaces (with "", a default colour, a clamped number) and fires no error. The driver
asks the browser what it would keep (a detached probe input of the same type and bounds, so the page sees
nothing), and `fill_problem` decides from that whether the fill can mean what the model asked.
Pure: no browser needed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class InputFormat:
    """How a constrained input type is described to the model."""

    kind: str
    """What the field holds, in words ("a date")."""
    syntax: str | None
    """The value syntax shown in the control line (`format="YYYY-MM-DD"`); None where the role already says it."""
    example: str


CONSTRAINED_TYPES: dict[str, InputFormat] = {
    "date": InputFormat("a date", "YYYY-MM-DD", "2024-06-01"),
    "time": InputFormat("a time", "HH:MM", "14:30"),
    "datetime-local": InputFormat("a date and time", "YYYY-MM-DDTHH:MM", "2024-06-01T14:30"),
    "month": InputFormat("a month", "YYYY-MM", "2024-06"),
    "week": InputFormat("a week", "YYYY-Www", "2024-W23"),
    "color": InputFormat("a colour", "#rrggbb", "#1a7f37"),
    # A number input is a spinbutton and a range input a slider in the control line: the role says "a number".
    "number": InputFormat("a number", None, "12.5"),
    "range": InputFormat("a number", None, "40"),
}
"""Every input type whose value the browser sanitises; the ones with a syntax are marked in the control line."""

NEVER_EMPTY = frozenset({"color", "range"})
"""Input types whose value is never empty: the browser puts a default colour or number in place of ""."""


def line_attributes(input_type: str | None) -> str:
    """`type=date format="YYYY-MM-DD"` for a control line, or "" for a type the line need not explain."""
    shown = CONSTRAINED_TYPES.get(input_type or "")
    if shown is None or shown.syntax is None:
        return ""
    return f"type={input_type} format={json.dumps(shown.syntax)}"


@dataclass(frozen=True)
class Probe:
    """What the browser makes of a value in an input like the one to fill (from the driver's probe)."""

    input_type: str
    asked: str
    """The value asked for, trimmed of surrounding white space (the browser never keeps it for these types)."""
    kept: str
    """The value a fresh input of the same type and bounds holds after being given `asked`."""
    is_colour: bool = False
    """`asked` is a CSS colour (a colour input normalises any of them to #rrggbb, and the rest to black)."""
    bounds: tuple[str, str, str] = ("", "", "")
    """min, max and step as the page wrote them (for a range input's reason)."""


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def fill_problem(probe: Probe) -> str | None:
    """Why filling `probe.asked` would not leave the field holding what was asked (None when the browser keeps
    it, or a normal form of it with the same meaning: "2024-06-01 10:30" -> "2024-06-01T10:30", "#FF0000" ->
    "#ff0000", "7.0" -> "7" on a slider). Any field but a colour or a slider can be emptied; those two always
    hold a value, so emptying one would leave a value the model did not ask for."""
    if probe.input_type not in CONSTRAINED_TYPES:
        return None
    if probe.asked == "":
        if probe.input_type in NEVER_EMPTY:
            return f"it is {describe_type(probe.input_type, probe.bounds)}, and it cannot be emptied"
        return None
    if probe.input_type == "color":
        kept = probe.is_colour
    elif probe.input_type == "range":
        asked = _number(probe.asked)
        kept = asked is not None and asked == _number(probe.kept)
    else:  # date, time, month, week and number keep a valid value as written, datetime-local in normal form
        kept = probe.kept != ""
    if kept:
        return None
    after = f"{json.dumps(probe.kept)}" if probe.kept else "empty"
    return f"it is {describe_type(probe.input_type, probe.bounds)}; the browser would make it {after}"


def describe_type(input_type: str, bounds: tuple[str, str, str] = ("", "", "")) -> str:
    """`a date field, which keeps only a date written YYYY-MM-DD (e.g. 2024-06-01)`, for a refusal."""
    shown = CONSTRAINED_TYPES[input_type]
    syntax = f" written {shown.syntax}" if shown.syntax else ""
    reason = f"a {input_type} field, which keeps only {shown.kind}{syntax} (e.g. {shown.example})"
    if input_type == "number":
        reason += ": digits, one optional '.', an optional leading '-' or exponent; no spaces, '+' or separators"
    if input_type == "range":
        low, high, step = bounds
        reason += f" from {low or '0'} to {high or '100'} in steps of {step or '1'}"
    return reason
