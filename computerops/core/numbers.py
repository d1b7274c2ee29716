"""Whole numbers read from text a person, a page or a request wrote (a path segment, a query or form field, a header,
a CLI option), defined once for every package.

`str.isdigit` is true for Unicode digits ("١٢", "²") that `int` then refuses or reads differently, and a 20-digit
id overflows SQLite's integer: either crashed a handler with a 500. A number here is 1 to MAX_DIGITS ASCII digits.
"""

from __future__ import annotations

import re

MAX_DIGITS = 15
"""Longest number read: far above any record id, below SQLite's 64-bit integer limit."""
_WHOLE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


def whole_number(text: str) -> int | None:
    """The number `text` spells in ASCII digits (no sign, space or separator), or None."""
    return int(text) if _WHOLE.fullmatch(text) else None
