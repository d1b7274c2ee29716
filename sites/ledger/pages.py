"""Rendering and look-ups shared by the ledger's routes."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select

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


def events_by_id(session: Session) -> dict[int, Event]:
    """Every event keyed by id, for tables that show dependencies and sources (the template reads the number)."""
    return {event.id: event for event in session.exec(select(Event)) if event.id is not None}


def deliveries_by_id(session: Session) -> dict[int, Delivery]:
    """Every delivery keyed by id, for the dispatch log (the template reads the number)."""
    return {delivery.id: delivery for delivery in session.exec(select(Delivery)) if delivery.id is not None}
