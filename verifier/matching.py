"""Value normalisation and row matching, shared by every check so they all agree.

Numbers compare by value (`25` equals `25.0`), booleans never equal numbers, strings compare
exactly. Unknown columns never match: a misspelt column in a task fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tasks.spec import Typed
from tasks.values import is_identifier, normalise_email, normalise_id, normalise_text, phone_number

_MISSING = object()


def same_value(actual: Any, expected: Any) -> bool:
    """Equality after normalising numbers; bool and number are never equal; an id (`SKU-1003`) in either letter
    case; a typed expected value (`Typed`) by its meaning: e-mail addresses case aside, phone numbers as numbers,
    text case and spacing aside (`exact`: character for character)."""
    if isinstance(expected, Typed):
        return isinstance(actual, str) and _same_typed(actual, expected)
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(actual, int | float) and isinstance(expected, int | float):
        return float(actual) == float(expected)
    if isinstance(actual, str) and isinstance(expected, str) and is_identifier(expected):
        return normalise_id(actual) == normalise_id(expected)
    return bool(actual == expected)


def _same_typed(actual: str, expected: Typed) -> bool:
    if expected.type == "email":
        return normalise_email(actual) == normalise_email(expected.value)
    if expected.type == "exact":
        return actual == expected.value
    if expected.type == "phone":
        number = phone_number(actual)
        return number is not None and number == phone_number(expected.value)
    return normalise_text(actual) == normalise_text(expected.value)


def row_matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """True when the row has every `where` column with an equal value."""
    for column, expected in where.items():
        actual = row.get(column, _MISSING)
        if actual is _MISSING or not same_value(actual, expected):
            return False
    return True


def _column_problems(
    row: Mapping[str, Any], wanted: Mapping[str, Any], fits: Callable[[Any, Any], bool], says: str
) -> list[str]:
    problems = []
    for column, want in wanted.items():
        actual = row.get(column, _MISSING)
        if actual is _MISSING:
            problems.append(f"{column}: no such column")
        elif not fits(actual, want):
            problems.append(f"{column}: {actual!r} {says.format(want)}")
    return problems


def mismatched_columns(row: Mapping[str, Any], expect: Mapping[str, Any]) -> list[str]:
    """`column: actual != expected` for every expected column the row does not satisfy."""
    return _column_problems(row, expect, same_value, "!= {!r}")
