"""Value normalisation and row matching, shared by every check so they all agree.

Numbers compare by value (`25` equals `25.0`), booleans never equal numbers, strings compare
exactly. Unknown columns never match: a misspelt column in a task fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_MISSING = object()


def same_value(actual: Any, expected: Any) -> bool:
    """Equality after normalising numbers; bool and number are never equal."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(actual, int | float) and isinstance(expected, int | float):
        return float(actual) == float(expected)
    return bool(actual == expected)


def row_matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """True when the row has every `where` column with an equal value."""
    for column, expected in where.items():
        actual = row.get(column, _MISSING)
        if actual is _MISSING or not same_value(actual, expected):
            return False
    return True


def mismatched_columns(row: Mapping[str, Any], expect: Mapping[str, Any]) -> list[str]:
    """`column: actual != expected` for every expected column the row does not satisfy."""
    problems = []
    for column, expected in expect.items():
        actual = row.get(column, _MISSING)
        if actual is _MISSING:
            problems.append(f"{column}: no such column")
        elif not same_value(actual, expected):
            problems.append(f"{column}: {actual!r} != {expected!r}")
    return problems


def unlike_columns(row: Mapping[str, Any], like: Mapping[str, str]) -> list[str]:
    """`column: actual does not match /pattern/` for every `like` column whose text lacks its pattern."""
    problems = []
    for column, pattern in like.items():
        actual = row.get(column, _MISSING)
        if actual is _MISSING:
            problems.append(f"{column}: no such column")
        elif not isinstance(actual, str) or not re.search(pattern, actual, re.IGNORECASE):
            problems.append(f"{column}: {actual!r} does not match /{pattern}/")
    return problems
