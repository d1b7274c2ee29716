"""The logical clock: the only source of time for the sites.

The logical time of a request is its operation sequence number within the tenant (1, 2, 3...),
and it is displayed as a fixed epoch plus that many minutes. Wall-clock time never reaches a
page or a row, so the same operations give the same bytes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

EPOCH = datetime(2026, 3, 2, 9, 0)
"""Logical time 0 (naive UTC). Seed data lies before it."""

TIME_FORMAT = "%Y-%m-%d %H:%M"
"""How times are shown on pages and stored in text columns."""


def now(logical_time: int) -> datetime:
    """The display time of a logical time: EPOCH + logical_time minutes."""
    return EPOCH + timedelta(minutes=logical_time)


def format_time(moment: datetime) -> str:
    """`YYYY-MM-DD HH:MM`, the one text form of times in pages and in the database."""
    return moment.strftime(TIME_FORMAT)


def parse_time(text: str) -> datetime:
    """Inverse of `format_time`; raises ValueError for any other form."""
    return datetime.strptime(text, TIME_FORMAT)


def is_clock_time(text: str) -> bool:
    """Whether a stored text is a time the logical clock gave (`format_time` of a moment at or after EPOCH)."""
    try:
        return parse_time(text) >= EPOCH
    except ValueError:
        return False


def now_text(logical_time: int) -> str:
    """The display time of a logical time as stored text, e.g. `2026-03-02 09:05`."""
    return format_time(now(logical_time))


class LogicalClock:
    """The clock of one operation; handlers get it from the operation context."""

    def __init__(self, logical_time: int) -> None:
        self.logical_time = logical_time

    def now(self) -> datetime:
        """The current display time."""
        return now(self.logical_time)

    def text(self) -> str:
        """The current display time as `YYYY-MM-DD HH:MM`."""
        return now_text(self.logical_time)
