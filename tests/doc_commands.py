"""The commands the README and docs/*.md write in fenced `bash` blocks, as units a test can run, and the manifest
(tests/doc_commands.yaml) that says for each one whether the slow tier runs it, which test runs it elsewhere, or why
it cannot run on this machine (issue 47).

A unit is one command of a block: a line, with the lines it goes on to (a line ending in `\\`, `&&`, `||` or `|`);
lines that are only comments are left out, a comment after a command on its line stays part of it. A unit is named
by the sha256 of its text with each line's trailing whitespace removed, so an edited command is a new unit that must
be classified again. The units of one document that run are run in order in one shell, as a reader pastes them (a
server started with `&` by one is stopped with `kill %1` by a later one)."""

from __future__ import annotations

import hashlib
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).parent / "doc_commands.yaml"
DOCUMENTS = ("README.md", "docs/*.md")
"""Where the commands are read from (globs relative to the repository root)."""

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[A-Za-z0-9_-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.S | re.M)
"""A fenced block, also one indented inside a list item (its lines then lose that indent)."""
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "zsh", "shell-session", "sh-session", "bash-session"})
"""Fences whose lines are commands (GitHub's names for shells and shell sessions)."""
_COMMAND_LINE = re.compile(r"^\s*(\$\s|(sudo\s+)?(\.venv/bin/|\./)?(computerops|bash|sh|pip|pip3|python|python3|pytest|"
                           r"git|apt|apt-get|curl|docker|ray|uv|export|cd|source)\b)")
"""A line that reads as a command a reader would paste (a `$ ` prompt, or a shell's, Python's, this project's
programs first)."""


@dataclass(frozen=True)
class DocCommand:
    """One unit: its document, its place there (block and unit, from 1) and its text."""

    document: str
    block: int
    unit: int
    text: str

    @property
    def key(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    @property
    def starts(self) -> str:
        return self.text.splitlines()[0][:80]


_CONTINUED = ("\\", "&&", "||", "|")
"""A line ending so goes on on the next line: one command."""


def _units(body: str) -> list[str]:
    units: list[list[str]] = []
    going_on = False
    for line in body.splitlines():
        stripped = line.strip()
        if not going_on and (not stripped or stripped.startswith("#")):
            continue
        if going_on:
            units[-1].append(line.rstrip())
        else:
            units.append([line.rstrip()])
        going_on = stripped.endswith(_CONTINUED)
    return ["\n".join(lines) for lines in units]


def doc_commands(root: Path = ROOT) -> list[DocCommand]:
    """Every unit of every shell block of the documents, in reading order."""
    found: list[DocCommand] = []
    documents = sorted({p for pattern in DOCUMENTS for p in root.glob(pattern)})
    for path in documents:
        text = path.read_text(encoding="utf-8")
        shell_blocks = [textwrap.dedent(m["body"]) for m in _FENCE.finditer(text) if m["lang"] in SHELL_LANGUAGES]
        for block, body in enumerate(shell_blocks, 1):
            for unit, command in enumerate(_units(body), 1):
                found.append(DocCommand(path.relative_to(root).as_posix(), block, unit, command))
    return found


def commands_outside_shell_fences(root: Path = ROOT) -> list[str]:
    """Lines that read as commands in fences no test reads as a shell's (another language, or none): where they are,
    as `document: line`. Such a command would be published untested. A `$ ` prompt inside a shell fence counts too:
    pasted, it runs `$`."""
    found: list[str] = []
    for path in sorted({p for pattern in DOCUMENTS for p in root.glob(pattern)}):
        for match in _FENCE.finditer(path.read_text(encoding="utf-8")):
            shell = match["lang"] in SHELL_LANGUAGES
            for line in textwrap.dedent(match["body"]).splitlines():
                if (hit := _COMMAND_LINE.match(line)) and (not shell or hit.group(0).lstrip().startswith("$")):
                    found.append(f"{path.relative_to(root).as_posix()}: {line.strip()}")
    return found


class ManifestEntry(BaseModel):
    """How one unit is tested. `runs`: the slow tier runs it (tests/test_doc_commands.py) in a scratch copy of the
    checkout, after the units before it in the same document that run too, within `minutes`. `not_run`: no test runs
    it as written, for the reason `why` gives (a server this machine lacks, a placeholder to fill in, a design of
    hours); `covered_by` names the tests (`tests/FILE.py::NAME`, or `.ci/run`) that run what it does, where some do."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(pattern=r"^[0-9a-f]{16}$")
    document: str
    starts: str
    status: Literal["runs", "not_run"]
    why: str = Field(min_length=20)
    minutes: int | None = Field(default=None, ge=1, le=240)
    covered_by: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> ManifestEntry:
        if (self.status == "runs") != (self.minutes is not None):
            raise ValueError(f"{self.key}: `minutes` is given exactly for a unit that runs")
        for test in self.covered_by:
            if test != ".ci/run" and not re.fullmatch(r"tests/[a-z0-9_]+\.py::[a-z0-9_]+", test):
                raise ValueError(f"{self.key}: covered_by {test!r} is not `tests/FILE.py::NAME` or `.ci/run`")
        return self


def manifest(path: Path = MANIFEST) -> dict[str, ManifestEntry]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    entries = [ManifestEntry.model_validate(item) for item in raw]
    keyed = {entry.key: entry for entry in entries}
    if len(keyed) != len(entries):
        raise ValueError(f"{path}: a key is listed twice")
    return keyed
