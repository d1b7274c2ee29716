"""Rendering and look-ups shared by the ledger's routes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import Session, select
from starlette.responses import HTMLResponse

from sites.kit.operation import OperationContext
from sites.kit.pages import PageRenderer
from sites.ledger.models import Delivery, Event

RENDERER = PageRenderer(Path(__file__).parent / "templates")
PREFIX = "/ledger"


def page(operation: OperationContext, name: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """A ledger page: the shared layout with nav and the operation's logical time ("Now: ...")."""
    return RENDERER.page(name, status=status, now=operation.clock.text(), **context)


def not_found(operation: OperationContext, what: str) -> HTMLResponse:
    """The ledger's 404 page, naming what was looked for."""
    return page(operation, "not_found.html", status=404, title="Not found", message=f"{what} was not found.")


def event_by_number(session: Session, number: str) -> Event | None:
    """The event numbered `number` (e.g. EV-501), or None."""
    return session.exec(select(Event).where(Event.number == number)).first()


def delivery_by_number(session: Session, number: str) -> Delivery | None:
    """The delivery numbered `number` (e.g. D-304), or None."""
    return session.exec(select(Delivery).where(Delivery.number == number)).first()


def event_numbers(session: Session) -> dict[int, str]:
    """Every event's number keyed by id, for tables that show dependencies and sources."""
    return {event.id: event.number for event in session.exec(select(Event)) if event.id is not None}


def delivery_numbers(session: Session) -> dict[int, str]:
    """Every delivery's number keyed by id, for the dispatch log."""
    return {delivery.id: delivery.number for delivery in session.exec(select(Delivery)) if delivery.id is not None}
