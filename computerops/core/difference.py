"""Where two recorded JSON values first differ: the one diff that `run --resume` (manifests) and
`computerops verify` (verdicts, derived fields, summaries) report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def first_difference_of(recorded: dict[str, Any], now: dict[str, Any], keys: Sequence[str]) -> str | None:
    """`first_difference` over the `keys` of two records, taken in the order given (not sorted), so the most
    specific input can be named before a broader one that covers it too."""
    for key in keys:
        found = first_difference({key: recorded[key]}, {key: now[key]})
        if found:
            return found
    return None


def first_difference(recorded: object, now: object, path: str = "") -> str | None:
    """Where two JSON-like values first differ (depth first, keys in order), e.g.
    `code_sha256.sites: '3f2a…' recorded, '9c1b…' now`; None when they are equal."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in sorted(set(recorded) | set(now)):
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded or key not in now:
                return f"{where}: {recorded.get(key, '(absent)')!r} recorded, {now.get(key, '(absent)')!r} now"
            found = first_difference(recorded[key], now[key], where)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(now, list):
        for index, (old, new) in enumerate(zip(recorded, now, strict=False)):
            found = first_difference(old, new, f"{path}[{index}]")
            if found:
                return found
        if len(recorded) != len(now):
            return f"{path}: {len(recorded)} items recorded, {len(now)} now"
        return None
    return None if recorded == now else f"{path}: {recorded!r} recorded, {now!r} now"
