"""What the ledger's lists share: a search that matches part of a number, memo or name, filters, and the period.

A list's search is a case-insensitive substring match over the columns a person would type part of (an entry's
number, memo or account; an event's number, summary or account); its filters are equalities (`column == value`), so a
filtered list that fits on one page is still a whole listing (`sites.kit.paging.paged`) and a searched one is not. A
filter's choices are the values its column holds now, in name order: a vocabulary, not the records.

The response queue shows the current period's batches unless a batch (or every batch) is chosen: batches whose every
event was processed before the period opened (`PERIOD_OPENED`) are closed history.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import String, cast, or_
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from sites.ledger.models import PERIOD_OPENED, Event

T = TypeVar("T")

EVERY_BATCH = "all"
"""The response queue's batch choice that lists every batch, closed ones too."""


def searched(statement: SelectOfScalar[T], text: str, *columns: Any) -> SelectOfScalar[T]:
    """The statement narrowed to rows where any of `columns` holds `text` (case-insensitive, `%` and `_` taken
    literally); unchanged for an empty or blank text."""
    words = text.strip()
    if not words:
        return statement
    return statement.where(or_(*(cast(col(column), String).icontains(words, autoescape=True) for column in columns)))


def filtered(statement: SelectOfScalar[T], **conditions: tuple[Any, str]) -> SelectOfScalar[T]:
    """The statement narrowed by each `name=(column, value)` whose value is not empty, as `column == value`."""
    for column, value in conditions.values():
        if value:
            statement = statement.where(col(column) == value)
    return statement


def choices(session: Session, column: Any) -> list[str]:
    """The distinct values the column holds, sorted: a filter's options."""
    return sorted(str(value) for value in session.exec(select(column).distinct()) if value is not None)


def period_batches(session: Session) -> list[str]:
    """The current period's batches, sorted: those with an event unprocessed or processed since the period opened."""
    open_events = select(Event.batch).where(
        or_(col(Event.processed_at).is_(None), col(Event.processed_at) >= PERIOD_OPENED)).distinct()
    return sorted(str(batch) for batch in session.exec(open_events))


def batch_choices(session: Session) -> list[str]:
    """The batches a list offers: the current period's, then the closed ones, latest first."""
    current = period_batches(session)
    closed = sorted(set(choices(session, Event.batch)) - set(current), reverse=True)
    return [*current, *closed]
