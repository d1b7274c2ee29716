"""The names a request may give for things on disk (runs, subsets, locks, episodes, evidence files), and the one
way such a name becomes a path: checked against a pattern, then resolved and required to stay inside its folder. No
route of the server opens a path built any other way."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from computerops.service.errors import ServiceError


@dataclass(frozen=True)
class NameRule:
    """What a kind of name may hold: its pattern, the characters besides letters and digits (for the error), and its
    longest length."""

    pattern: re.Pattern[str]
    allowed: str
    most: int

    @property
    def browser_pattern(self) -> str:
        """The rule as a form field's HTML `pattern`: browsers compile it with the `v` flag, under which a `-` in a
        character class must be escaped (unescaped, the browser drops the pattern and checks nothing), and `..` is
        ruled out by a lookahead."""
        return r"(?!.*\.\.)" + re.sub(r"(?<!\\)-\]", r"\\-]", self.pattern.pattern)


NAME = NameRule(re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"), "'.', '_'", 100)
"""A run, subset, lock or file name: letters, digits, `.`, `_`, `-`; not starting with a dot (hidden folders hold
the server's own state); at most 100 characters."""
EPISODE_NAME = NameRule(re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,199}"), "'.', '_', '@'", 200)
"""An episode's name, which holds a task instance id (`TEMPLATE@SEED`): `@` too, at most 200 characters."""


def checked_name(name: str, what: str, rule: NameRule = NAME) -> str:
    """`name` if it follows `rule` (and holds no `..`), else ServiceError naming `what` it was meant to be."""
    if not rule.pattern.fullmatch(name) or ".." in name:
        raise ServiceError(f"{what} {name[:120]!r} is not a name: use letters, digits, {rule.allowed} and '-' "
                           f"(not first), at most {rule.most} characters", "bad_input")
    return name


def inside(folder: Path, name: str, what: str, rule: NameRule = NAME) -> Path:
    """The path of `name` (checked by `rule`) in `folder`, refused unless it resolves (links followed) to a child of
    `folder`."""
    path = folder / checked_name(name, what, rule)
    resolved, root = path.resolve(), folder.resolve()
    if resolved.parent != root:
        raise ServiceError(f"{what} {name!r} is not in {folder}", "not_found")
    return path
