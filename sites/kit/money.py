"""Money as integer cents: parsed from what people type, shown as `49.90`."""

from __future__ import annotations

import re

_AMOUNT = re.compile(r"^(?P<units>\d{1,9})(?:[.,](?P<fraction>\d{1,2}))?$")


def parse_cents(text: str) -> int | None:
    """Cents of an amount typed as `49.90`, `49.9`, `49,90` or `49`; None when it is not one."""
    match = _AMOUNT.match(text.strip())
    if match is None:
        return None
    fraction = (match.group("fraction") or "").ljust(2, "0")
    return int(match.group("units")) * 100 + int(fraction)


def format_cents(cents: int) -> str:
    """`4990` → `49.90`; negative amounts keep their sign."""
    sign = "-" if cents < 0 else ""
    units, rest = divmod(abs(cents), 100)
    return f"{sign}{units}.{rest:02d}"
