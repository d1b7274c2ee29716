"""What the model sees of a page: compact text with one line per visible interactive control.

The control line format is defined here once; the renderer writes it and the scripted endpoint
reads it back (`parse_control_line`), so both always agree.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, Field


class Control(BaseModel):
    """One visible, actionable control offered to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    role: str
    """ARIA role: link, button, textbox, combobox, listbox, checkbox, radio, searchbox, spinbutton, ..."""
    name: str
    """Accessible name."""
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
    dialogs: list[str] = Field(default_factory=list)
    """Texts of alert/confirm dialogs shown since the previous observation."""
    notices: list[str] = Field(default_factory=list)
    """What the adapter did on the page's behalf since the previous observation and the model should know:
    a blocked request to another origin, a closed popup, a refused download (adapter/containment.py)."""

    def control(self, control_id: str) -> Control | None:
        return next((c for c in self.controls if c.id == control_id), None)

    @property
    def chars(self) -> int:
        return len(self.text)


def format_control(control: Control) -> str:
    """`[7] textbox "Amount" value="49.90" required` — the one line a control gets."""
    parts = [f"[{control.id}] {control.role} {json.dumps(control.name, ensure_ascii=False)}"]
    if control.checked is not None:
        parts.append("checked" if control.checked else "unchecked")
    if control.value is not None and control.checked is None:
        parts.append(f"value={json.dumps(control.value, ensure_ascii=False)}")
    if control.options:
        parts.append("options=" + json.dumps(control.options, ensure_ascii=False))
    for flag in ("required", "disabled", "readonly"):
        if getattr(control, flag):
            parts.append(flag)
    if control.validation:
        parts.append(f"invalid={json.dumps(control.validation, ensure_ascii=False)}")
    return " ".join(parts)


_CONTROL_LINE = re.compile(r'^\s*\[(?P<id>[^\]\s]+)\] (?P<role>[\w-]+) (?P<name>"(?:[^"\\]|\\.)*")')


def parse_control_line(line: str) -> tuple[str, str, str] | None:
    """Read (id, role, name) back from a control line; None for any other line."""
    match = _CONTROL_LINE.match(line)
    if not match:
        return None
    return match["id"], match["role"], json.loads(match["name"])


def controls_in_text(text: str) -> list[tuple[str, str, str]]:
    """All (id, role, name) triples of an observation text, in order."""
    found = []
    for line in text.splitlines():
        parsed = parse_control_line(line)
        if parsed:
            found.append(parsed)
    return found


_OPTIONS = re.compile(r" options=(?P<options>\[(?:[^\]\"\\]|\"(?:[^\"\\]|\\.)*\")*\])")


def control_options(text: str, role: str, name: str) -> list[str]:
    """The options the observation lists for the control with this role and name ([] when none is shown)."""
    for line in text.splitlines():
        parsed = parse_control_line(line)
        if parsed and parsed[1] == role and parsed[2] == name:
            match = _OPTIONS.search(line)
            return list(json.loads(match["options"])) if match else []
    return []
