"""The names a request may give for things on disk (runs, subsets, locks, episodes, evidence files), and the one
way such a name becomes a path: checked against a pattern, then resolved and required to stay inside its folder. No
route of the server opens a path built any other way."""

from __future__ import annotations

import re
from pathlib import Path

from computerops.service.errors import ServiceError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A run, subset, lock or file name: letters, digits, `.`, `_`, `-`; not starting with a dot (hidden folders hold
the server's own state); at most 100 characters."""
EPISODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,199}")
"""An episode's name, which holds a task instance id (`TEMPLATE@SEED`): `@` too, at most 200 characters."""


def checked_name(name: str, what: str) -> str:
    """`name` if it is one (NAME, no `..`), else ServiceError naming `what` it was meant to be."""
    pattern, allowed, most = ((EPISODE_NAME, "'.', '_', '@'", 200) if what == "episode"
                              else (NAME, "'.', '_'", 100))
    if not pattern.fullmatch(name) or ".." in name:
        raise ServiceError(f"{what} {name[:120]!r} is not a name: use letters, digits, {allowed} and '-' (not first), "
                           f"at most {most} characters", "bad_input")
    return name


def inside(folder: Path, name: str, what: str) -> Path:
    """The path of `name` in `folder`, refused unless it resolves (links followed) to a child of `folder`."""
    path = folder / checked_name(name, what)
    resolved, root = path.resolve(), folder.resolve()
    if resolved.parent != root:
        raise ServiceError(f"{what} {name!r} is not in {folder}", "not_found")
    return path
