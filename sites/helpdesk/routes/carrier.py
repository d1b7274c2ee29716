"""Carrier updates: the list of incoming updates, one update with its order's tickets, and marking it processed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.helpdesk.carrier import process
from sites.helpdesk.lists import ALL, CARRIER_FILTERS, carrier_updates_selected, list_query
from sites.helpdesk.models import CarrierUpdate, Order, Ticket
from sites.helpdesk.pages import PREFIX, PageParam, not_found, page, rows_of
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import listed, related

router = APIRouter()


@router.get("/carrier-updates", response_class=HTMLResponse)
def carrier_updates(session: SessionDep, operation: OperationDep, q: str = "", status: str = ALL, event: str = ALL,
                    number: PageParam = "") -> HTMLResponse:
    """One page of the carrier's updates in the order received, searched (code, order) and filtered (status,
    event)."""
    query = list_query(q, CARRIER_FILTERS, {"status": status, "event": event})
    pages = paged(session, carrier_updates_selected(query), page=number, path=f"{PREFIX}/carrier-updates",
                  query=query.params)
    return page(operation, "carrier_updates.html", title="Carrier updates", pages=pages, query=query,
                orders=rows_of(session, Order, (update.order_id for update in pages.rows)))


def _update_page(session: Session, operation: OperationContext, update: CarrierUpdate, *, status: int = 200,
                 notice: str | None = None, error: str | None = None) -> HTMLResponse:
    tickets = listed(session, select(Ticket).where(Ticket.order_id == update.order_id).order_by(col(Ticket.id)))
    return page(operation, "carrier_update.html", status=status, title=f"Carrier update {update.code}",
                update=update, order=related(session, update, "order_id", Order), tickets=tickets, notice=notice,
                error=error)


def _by_code(session: Session, code: str) -> CarrierUpdate | None:
    return session.exec(select(CarrierUpdate).where(CarrierUpdate.code == code)).first()


@router.get("/carrier-updates/{code}", response_class=HTMLResponse)
def carrier_update(code: str, session: SessionDep, operation: OperationDep, saved: str = "") -> HTMLResponse:
    """One carrier update with its order's tickets and the form that marks it processed; 404 for an unknown code."""
    update = _by_code(session, code)
    if update is None:
        return not_found(operation, f"Carrier update {code}")
    notice = f"Carrier update {update.code} marked processed." if saved else None
    return _update_page(session, operation, update, notice=notice)


@router.post("/carrier-updates/{code}/process", response_model=None)
def process_update(code: str, session: SessionDep, operation: OperationDep) -> Response:
    """Marks a new carrier update processed; 422 when it is processed already."""
    update = _by_code(session, code)
    if update is None:
        return not_found(operation, f"Carrier update {code}")
    refusal = process(update, operation.clock.text())
    if refusal is not None:
        return _update_page(session, operation, update, status=422, error=refusal)
    session.add(update)
    return RedirectResponse(f"{PREFIX}/carrier-updates/{update.code}?saved=1", status_code=303)
