"""What is wrong with a value a person gave (an option, a file), in one line of their words: pydantic's validation
errors without its model names, error codes, input dumps or documentation links.

`problems(exc)` joins each error as `<where>: <what>`: where is the field's path (`design.arms.0`), or, for a
command's options, the option's flag (`--fault-rate`) when `as_option` is set; what is pydantic's message with its
"Value error, " prefix dropped, and the value given where pydantic knows it and it is short. Every CLI and service
refusal that comes from a model's validation goes through it (tests/test_cli_errors.py runs the commands with bad
values and asserts one line, no traceback, no pydantic text)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

_SHOWN_INPUT = 60
"""The longest given value quoted back."""


def _where(loc: tuple[int | str, ...], as_option: bool) -> str:
    if as_option and loc and isinstance(loc[0], str):
        return "--" + loc[0].replace("_", "-") + "".join(f".{part}" for part in loc[1:])
    return ".".join(str(part) for part in loc) or "(the whole value)"


def _given(error: ErrorDetails) -> str:
    value: Any = error.get("input")
    if error["type"] in ("missing", "extra_forbidden") or isinstance(value, dict | list):
        return ""
    text = repr(value)
    return f" (given {text})" if len(text) <= _SHOWN_INPUT else ""


def _what(error: ErrorDetails) -> str:
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if error["type"] == "extra_forbidden":
        return "not a known field"
    return message if message[1:2].isupper() else message[:1].lower() + message[1:]  # "JSON ...", not "jSON ..."


def problems(exc: ValidationError, *, as_option: bool = False, located: bool = True) -> str:
    """Each error of `exc` as `<where>: <what>`, joined by "; " (one line); only `<what>` where the messages name
    what they are about themselves (`located` False: validators that say `--api-key-env NAME: ...`)."""
    return problems_of(exc.errors(), as_option=as_option, located=located)


def problems_of(errors: Sequence[ErrorDetails], *, as_option: bool = False, located: bool = True,
                skip_first: Collection[str] = ()) -> str:
    """`problems` over pydantic's error list (a web framework's validation error carries one); a location's first
    part is dropped when it is one of `skip_first` (a request's `body`, `query`, `path`) and more parts follow."""
    said = []
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "json_invalid":
            loc = loc[:1]  # the rest is a character position, not a field
        if len(loc) > 1 and loc[0] in skip_first:
            loc = loc[1:]
        said.append((f"{_where(loc, as_option)}: " if located else "") + f"{_what(error)}{_given(error)}")
    return "; ".join(said).replace("\n", " ")


def said(exc: BaseException, *, as_option: bool = False) -> str:
    """An exception's text for a person: `problems` for a validation error, else its own message on one line."""
    if isinstance(exc, ValidationError):
        return problems(exc, as_option=as_option)
    return " ".join(str(exc).split("\n"))
