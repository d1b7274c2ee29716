"""The wall-clock stamps written into the benchmark's files, spelled one way: UTC, ISO 8601."""

from __future__ import annotations

import datetime as dt
from typing import Literal


def utc_stamp(timespec: Literal["seconds", "milliseconds"] = "seconds") -> str:
    """Now, in UTC, as ISO 8601 (`2026-12-06T14:00:56+00:00`); milliseconds where events seconds apart are ordered."""
    return dt.datetime.now(dt.UTC).isoformat(timespec=timespec)
