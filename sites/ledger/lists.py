"""What the ledger's lists add to the kit's search and filters (`sites.kit.listing`): the period.

Its lists search the columns a person would type part of (an entry's number, memo or account; an event's number,
summary or account).

The response queue shows the current period's batches unless a batch (or every batch) is chosen: batches whose every
event was processed before the period opened (`PERIOD_OPENED`) are closed history.
"""

from __future__ import annotations

from sqlalchemy import or_
from sqlmodel import Session, col, select

from sites.kit.listing import choices
from sites.ledger.models import PERIOD_OPENED, Event

EVERY_BATCH = "all"
"""The response queue's batch choice that lists every batch, closed ones too."""


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
