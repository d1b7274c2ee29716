"""Rendering and look-ups shared by the ledger's routes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sqlmodel import Session, select

from sites.kit.listing import by_id
from sites.kit.pages import SitePages
from sites.ledger.models import Delivery, Event

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/ledger"


def event_by_number(session: Session, number: str) -> Event | None:
    """The event numbered `number` (e.g. EV-501), or None."""
    return session.exec(select(Event).where(Event.number == number)).first()


def delivery_by_number(session: Session, number: str) -> Delivery | None:
    """The delivery numbered `number` (e.g. D-304), or None."""
    return session.exec(select(Delivery).where(Delivery.number == number)).first()


def events_by_id(session: Session, ids: Iterable[int | None]) -> dict[int, Event]:
    """The events numbered by `ids` keyed by id, for tables that show dependencies and sources (the template reads
    the number of the rows on the page, so only those are read)."""
    return by_id(session, Event, ids)


def deliveries_by_id(session: Session, ids: Iterable[int | None]) -> dict[int, Delivery]:
    """The deliveries `ids` keyed by id, for the dispatch log (the template reads the number of the page's rows)."""
    return by_id(session, Delivery, ids)
