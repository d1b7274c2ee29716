"""The dispatch console's start page and the dispatch log: read-only overviews."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import col, func, select
from starlette.responses import HTMLResponse

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import paged
from sites.ledger.models import Delivery, Dispatch, Event
from sites.ledger.pages import PREFIX, deliveries_by_id, page

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Counts of queued, held and processed events and of pending and delivered deliveries, each counted by the
    database (not by loading the rows)."""
    events = dict(session.exec(select(Event.status, func.count()).group_by(col(Event.status))).all())
    deliveries = dict(session.exec(select(Delivery.status, func.count()).group_by(col(Delivery.status))).all())
    counts = [
        ("Queued events", events.get("queued", 0)),
        ("Held events", events.get("held", 0)),
        ("Processed events", events.get("processed", 0)),
        ("Pending deliveries", deliveries.get("pending", 0)),
        ("Delivered deliveries", deliveries.get("delivered", 0)),
    ]
    return page(operation, "dashboard.html", title="Dispatch console", counts=counts)


@router.get("/dispatches", response_class=HTMLResponse)
def dispatch_log(session: SessionDep, operation: OperationDep,
                 number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The dispatch submissions, oldest first, a page at a time, with their outcome (sent, duplicate or stale)."""
    pages = paged(session, select(Dispatch).order_by(col(Dispatch.id)), page=number, path=f"{PREFIX}/dispatches")
    return page(operation, "dispatches.html", title="Dispatch log", dispatches=pages.rows, pages=pages,
                deliveries=deliveries_by_id(session, (row.delivery_id for row in pages.rows)))
