"""What the model sees of a page: compact text with one line per visible interactive control.

The control line format is defined here once; the renderer writes it and the scripted endpoint
reads it back (`parse_control_line`), so both always agree.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, Field

from adapter.inputs import line_attributes


class Control(BaseModel):
    """One visible, actionable control offered to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    role: str
    """ARIA role: link, button, textbox, combobox, listbox, checkbox, radio, searchbox, spinbutton, ..."""
    name: str
    """Accessible name."""
    name_from: str | None = None
    """Where a name the page does not give came from, when it is a guess (`NAME_SOURCES`): an icon-only control named
    by its image's file name or its class. None when the page names the control (text, label, aria-label, alt,
    title...). The line says so after the name: `[4] clickable "star" name-from=class`."""
    value: str | None = None
    checked: bool | None = None
    options: list[str] = Field(default_factory=list)
    required: bool = False
    disabled: bool = False
    readonly: bool = False
    validation: str | None = None
    """The browser's validationMessage, when the control is invalid."""
    href: str | None = None
    """Link target as a site path, for links."""
    input_type: str | None = None
    """The type of an <input> whose value the browser constrains (date, time, color, ...: adapter/inputs.py)."""
    name_cut: bool = False
    """The reading's character bound (adapter/reading.py) cut the name: `name` is its start."""
    name_unread: int = Field(default=0, ge=0)
    """Characters of the name the reading's bound did not read (its line counts them with those it does not show)."""
    value_unread: int = Field(default=0, ge=0)
    """Characters of the value the reading's bound did not read (counted on its line likewise)."""
    covered: bool = False
    """Its middle lies under a box fixed over the window (a cookie banner) that no scroll of the window clears: a click
    lands on that box until it is closed. The line says `covered`; the header names the box."""


class PagePart(BaseModel):
    """Where a part of a long page's observation starts: the first text line and control line shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text_line: int = Field(default=0, ge=0)
    control_line: int = Field(default=0, ge=0)


class Observation(BaseModel):
    """The rendered page: text for the model plus the control table for the adapter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    """Path and query of the page within the site."""
    title: str
    text: str
    """The complete observation text sent to the model (header, page text, control lines)."""
    controls: list[Control]
    truncated: bool = False
    """Some of the page is not in this observation (cut at the size bound, or shown in an earlier part)."""
    next_part: PagePart | None = None
    """Where the `more` action continues; None when nothing after this part was left out."""
    left_out: str | None = None
    """What of the page the reading did not read at all (its bounds, adapter/reading.py: the header's
    `Observation truncated:` words), which no part can show; None when it read the page whole."""
    dialogs: list[str] = Field(default_factory=list)
    """Texts of alert/confirm dialogs shown since the previous observation."""
    notices: list[str] = Field(default_factory=list)
    """What the adapter did on the page's behalf since the previous observation and the model should know:
    a blocked request to another origin, a closed popup, a refused download (adapter/containment.py)."""
    modal: str | None = None
    """The name of the modal dialog open on the page (a <dialog> opened modally, or a dialog marked aria-modal):
    only its controls are offered, and the page behind it is left out, as assistive technology has it."""
    loads_more: bool = False
    """The page has a list that loads more as its end scrolls into view (a sentinel): `more`, at the last part,
    scrolls it into view (adapter/driver.py)."""

    def control(self, control_id: str) -> Control | None:
        return next((c for c in self.controls if c.id == control_id), None)

    @property
    def chars(self) -> int:
        return len(self.text)


NAME_CHARS = 200
"""Characters of a control's name its line shows; the rest are counted (`"Long name…" (300 more characters)`)."""
VALUE_CHARS = 300
"""Characters of a control's value (and of its validation message) its line shows; the rest are counted."""
OPTION_CHARS = 100
"""Characters of one option its line shows; the rest are cut with an ellipsis."""
OPTIONS_CHARS = 1_500
"""Characters of options its line shows; the options after them are counted (`(25 more options)`)."""
ELLIPSIS = "…"
_CUT = re.compile(r" \((?P<count>\d+) more (?:characters|options)\)")
"""How a line says what its cut name, value, message or options left out (read past by `control_fields`)."""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _kept(text: str, limit: int) -> int:
    """How many characters of the text fit in `limit` characters once quoted (an escape `\\u0007` takes six)."""
    if len(_json(text[:limit])) - 2 <= limit:  # no escapes to make room for: the usual case, in one call
        return min(len(text), limit)
    used = 0
    for kept, char in enumerate(text[:limit]):
        used += len(_json(char)) - 2
        if used > limit:
            return kept
    return min(len(text), limit)


def _shown(text: str, limit: int, unread: int = 0) -> str:
    """A quoted string of at most `limit` characters of the text (as quoted), then what was cut (with the `unread`
    characters the reading did not copy)."""
    kept = _kept(text, limit)
    if kept == len(text) and not unread:
        return _json(text)
    return f"{_json(text[:kept] + ELLIPSIS)} ({len(text) - kept + unread} more characters)"


def _options(options: list[str]) -> str:
    """The options as a JSON list, each cut to OPTION_CHARS, as many as fit in OPTIONS_CHARS, then a count."""
    shown: list[str] = []
    used = 0
    for option in options:
        kept = _kept(option, OPTION_CHARS)
        item = option if kept == len(option) else option[:kept] + ELLIPSIS
        used += len(_json(item)) + 1
        if used > OPTIONS_CHARS and shown:
            break
        shown.append(item)
    more = len(options) - len(shown)
    return "options=" + _json(shown) + (f" ({more} more options)" if more else "")


NAME_SOURCES = frozenset({"file", "class", "id"})
"""Where a guessed name comes from (`Control.name_from`): an image's file name, a class name, or an id that reads as
words."""
NAME_FROM = "name-from"
"""The field of a control line that marks its name as a guess (`name-from=class`)."""


def format_control(control: Control) -> str:
    """`[7] textbox "Amount" value="49.90" required` — the one line a control gets; an input whose type constrains
    its value says so after its value: `[9] textbox "Ship date" value="" type=date format="YYYY-MM-DD"`; a name the
    page does not give, guessed from an icon's file name or class, is marked right after it:
    `[4] clickable "star" name-from=class`. However long a name, value, message or option list, the line stays
    short: each is cut, and the line says how much."""
    parts = [f"[{control.id}] {control.role} {_shown(control.name, NAME_CHARS, control.name_unread)}"]
    if control.name_from in NAME_SOURCES:
        parts.append(f"{NAME_FROM}={control.name_from}")
    if control.checked is not None:
        parts.append("checked" if control.checked else "unchecked")
    if control.value is not None and control.checked is None:
        parts.append(f"value={_shown(control.value, VALUE_CHARS, control.value_unread)}")
    if control.options:
        parts.append(_options(control.options))
    if typed := line_attributes(control.input_type):
        parts.append(typed)
    for flag in ("required", "disabled", "readonly", "covered"):
        if getattr(control, flag):
            parts.append(flag)
    if control.validation:
        parts.append(f"invalid={_shown(control.validation, VALUE_CHARS)}")
    return " ".join(parts)


CONTROL_MARK = "["
"""How every control line begins, and no other line of an observation (adapter/lines.py escapes page text)."""
_CONTROL_LINE = re.compile(r'\[(?P<id>[^\]\s]+)\] (?P<role>[\w-]+) (?P<name>"(?:[^"\\]|\\.)*")')
_FIELD = re.compile(r" (?P<key>[a-z][\w-]*)(?P<equals>=?)")
_JSON = json.JSONDecoder()


def parse_control_line(line: str) -> tuple[str, str, str] | None:
    """Read (id, role, name) back from a control line; None for any other line. A control line begins with
    `[` as its very first character; the renderer never lets a text line begin so."""
    match = _CONTROL_LINE.match(line)
    if not match:
        return None
    return match["id"], match["role"], json.loads(match["name"])


def control_fields(line: str) -> dict[str, object] | None:
    """Everything a control line says after its name, by key (`value`, `options`, `required`: True, ...);
    None for a line that is not a control line. Values are read as JSON, so text inside the quoted name or
    value (`options=[]` in a textbox's value) is never taken for a field."""
    match = _CONTROL_LINE.match(line)
    if not match:
        return None
    fields: dict[str, object] = {}
    at = match.end()
    while True:
        if (cut := _CUT.match(line, at)) is not None:
            at = cut.end()  # what a cut name or value left out
        if (field := _FIELD.match(line, at)) is None:
            break
        at = field.end()
        if not field["equals"]:
            fields[field["key"]] = True
            continue
        try:
            fields[field["key"]], at = _JSON.raw_decode(line, at)
        except json.JSONDecodeError:  # a bare value (`type=date`): up to the next space
            end = line.find(" ", at)
            end = len(line) if end < 0 else end
            fields[field["key"]], at = line[at:end], end
    return fields


def controls_in_text(text: str) -> list[tuple[str, str, str]]:
    """All (id, role, name) triples of an observation text, in order."""
    found = []
    for line in text.splitlines():
        parsed = parse_control_line(line)
        if parsed:
            found.append(parsed)
    return found


def control_options(text: str, role: str, name: str) -> list[str]:
    """The options the observation lists for the control with this role and name ([] when none is shown)."""
    for line in text.splitlines():
        parsed = parse_control_line(line)
        if parsed and parsed[1] == role and parsed[2] == name:
            options = (control_fields(line) or {}).get("options")
            return [str(option) for option in options] if isinstance(options, list) else []
    return []
