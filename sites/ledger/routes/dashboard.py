"""The dispatch console's start page and the dispatch log: read-only overviews."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import paged
from sites.ledger.models import Delivery, Dispatch, Event
from sites.ledger.pages import PREFIX, deliveries_by_id, page

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
def dispatch_log(session: SessionDep, operation: OperationDep,
                 number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The dispatch submissions, oldest first, a page at a time, with their outcome (sent, duplicate or stale)."""
    pages = paged(session, select(Dispatch).order_by(col(Dispatch.id)), page=number, path=f"{PREFIX}/dispatches")
    return page(operation, "dispatches.html", title="Dispatch log", dispatches=pages.rows, pages=pages,
                deliveries=deliveries_by_id(session))
