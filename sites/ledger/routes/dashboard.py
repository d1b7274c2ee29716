"""The dispatch console's start page and the dispatch log: read-only overviews."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.shown import listed
from sites.ledger.models import Delivery, Dispatch, Event
from sites.ledger.pages import deliveries_by_id, page

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Counts of queued, held and processed events and of pending and delivered deliveries."""
    events = list(session.exec(select(Event)))
    deliveries = list(session.exec(select(Delivery)))
    counts = [
        ("Queued events", sum(event.status == "queued" for event in events)),
        ("Held events", sum(event.status == "held" for event in events)),
        ("Processed events", sum(event.status == "processed" for event in events)),
        ("Pending deliveries", sum(delivery.status == "pending" for delivery in deliveries)),
        ("Delivered deliveries", sum(delivery.status == "delivered" for delivery in deliveries)),
    ]
    return page(operation, "dashboard.html", title="Dispatch console", counts=counts)


@router.get("/dispatches", response_class=HTMLResponse)
def dispatch_log(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every dispatch submission, oldest first, with its outcome (sent, duplicate or stale)."""
    rows = listed(session, select(Dispatch).order_by(col(Dispatch.id)))
    return page(
        operation, "dispatches.html", title="Dispatch log", dispatches=rows, deliveries=deliveries_by_id(session)
    )
