"""Deliveries: list, details, exactly-once dispatch, amendment, and the generic "new delivery" form."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from computerops.core.numbers import whole_number
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import choices, filtered, searched
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import listed, related
from sites.ledger.models import DESTINATIONS, Delivery, Dispatch, Event
from sites.ledger.pages import PREFIX, delivery_by_number, not_found, page
from sites.ledger.procedures import dispatch, refusal_to_amend

router = APIRouter()

_NOTICES = Notices({"dispatched": "Delivery dispatched.", "saved": "Delivery updated."})


@router.get("/deliveries", response_class=HTMLResponse)
def delivery_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = "", destination: str = "",
                  number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The deliveries by number, a page at a time, with request id, recipient, destination, status and version:
    those whose number, request id or recipient holds `q`, of the chosen status and destination."""
    statement = filtered(select(Delivery), status=(Delivery.status, status),
                         destination=(Delivery.destination, destination))
    statement = searched(statement, q, Delivery.number, Delivery.request_id, Delivery.recipient).order_by(
        col(Delivery.number))
    chosen = {"q": q.strip(), "status": status, "destination": destination}
    pages = paged(session, statement, page=number, path=f"{PREFIX}/deliveries", query=chosen)
    return page(operation, "deliveries.html", title="Deliveries", deliveries=pages.rows, pages=pages, chosen=chosen,
                statuses=choices(session, Delivery.status), destinations=choices(session, Delivery.destination))


def _new_page(
    operation: OperationContext,
    *,
    status: int = 200,
    error: str | None = None,
    request_id: str = "",
    recipient: str = "",
    destination: str = DESTINATIONS[0],
) -> HTMLResponse:
    return page(
        operation,
        "delivery_new.html",
        status=status,
        title="New delivery",
        error=error,
        request_id=request_id,
        recipient=recipient,
        destination=destination,
        destinations=DESTINATIONS,
    )


@router.get("/deliveries/new", response_class=HTMLResponse)
def new_delivery_form(operation: OperationDep) -> HTMLResponse:
    """The generic form that opens a delivery by hand, outside any event."""
    return _new_page(operation)


@router.post("/deliveries", response_model=None)
def create_delivery(
    session: SessionDep,
    operation: OperationDep,
    request_id: Annotated[str, Form()] = "",
    recipient: Annotated[str, Form()] = "",
    destination: Annotated[str, Form()] = "",
) -> Response:
    """Opens a delivery by hand; 422 without a request id or recipient, for a used request id or bad dock."""
    request_id, recipient = request_id.strip().upper(), recipient.strip()
    error = None
    if not request_id or not recipient:
        error = "Delivery not created: the request id and the recipient are required."
    elif destination not in DESTINATIONS:
        error = f"Delivery not created: destination must be one of {', '.join(DESTINATIONS)}."
    elif session.exec(select(Delivery).where(Delivery.request_id == request_id)).first() is not None:
        error = f"Delivery not created: request id {request_id} is already used; a request is delivered once."
    if error is not None:
        return _new_page(
            operation, status=422, error=error, request_id=request_id, recipient=recipient, destination=destination
        )
    highest = max((d.id or 0 for d in session.exec(select(Delivery))), default=0)
    delivery = Delivery(
        id=highest + 1,
        number=f"D-{900 + highest + 1}",
        request_id=request_id,
        recipient=recipient,
        destination=destination,
        status="pending",
        version=1,
        updated_at=operation.clock.text(),
    )
    session.add(delivery)
    return RedirectResponse(f"{PREFIX}/deliveries/{delivery.number}?saved=1", status_code=303)


def _delivery_page(
    session: Session,
    operation: OperationContext,
    delivery: Delivery,
    *,
    status: int = 200,
    notice: str | None = None,
    dispatch_error: str | None = None,
    amend_error: str | None = None,
) -> HTMLResponse:
    history = listed(session, select(Dispatch).where(Dispatch.delivery_id == delivery.id).order_by(col(Dispatch.id)))
    source = related(session, delivery, "event_id", Event)
    return page(
        operation,
        "delivery.html",
        status=status,
        title=f"Delivery {delivery.number}",
        delivery=delivery,
        source=source,
        history=history,
        destinations=DESTINATIONS,
        notice=notice,
        dispatch_error=dispatch_error,
        amend_error=amend_error,
    )


@router.get("/deliveries/{number}", response_class=HTMLResponse)
def delivery_detail(
    number: str, session: SessionDep, operation: OperationDep, dispatched: str = "", saved: str = ""
) -> HTMLResponse:
    """A delivery's details, its dispatch history, the dispatch form and the amendment form."""
    delivery = delivery_by_number(session, number)
    if delivery is None:
        return not_found(operation, f"Delivery {number}")
    notice = _NOTICES.pick(dispatched=dispatched, saved=saved)
    return _delivery_page(session, operation, delivery, notice=notice)


def _version(text: str) -> int:
    number = whole_number(text)
    return -1 if number is None else number


@router.post("/deliveries/{number}/dispatch", response_model=None)
def dispatch_delivery(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    request_id: Annotated[str, Form()] = "",
    version: Annotated[str, Form()] = "",
) -> Response:
    """Dispatches the delivery once; a duplicate or stale submission is recorded and refused with 409."""
    delivery = delivery_by_number(session, number)
    if delivery is None:
        return not_found(operation, f"Delivery {number}")
    if request_id != delivery.request_id:
        error = f"Refused: request id {request_id or '(none)'} does not belong to delivery {delivery.number}."
        return _delivery_page(session, operation, delivery, status=422, dispatch_error=error)
    refusal = dispatch(session, delivery, request_id=request_id, version=_version(version), now=operation.clock.text(),
                       shown=operation.shown)
    if refusal is not None:
        return _delivery_page(session, operation, delivery, status=409, dispatch_error=refusal)
    return RedirectResponse(f"{PREFIX}/deliveries/{delivery.number}?dispatched=1", status_code=303)


@router.post("/deliveries/{number}", response_model=None)
def amend_delivery(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    destination: Annotated[str, Form()] = "",
    version: Annotated[str, Form()] = "",
) -> Response:
    """Changes a pending delivery's destination and bumps its version; 409 for a stale version or a delivered one."""
    delivery = delivery_by_number(session, number)
    if delivery is None:
        return not_found(operation, f"Delivery {number}")
    refusal = refusal_to_amend(delivery, _version(version), operation.shown)
    if refusal is None and destination not in DESTINATIONS:
        refusal = f"Refused: destination must be one of {', '.join(DESTINATIONS)}."
    if refusal is not None:
        return _delivery_page(session, operation, delivery, status=409, amend_error=refusal)
    if delivery.destination != destination:  # saving the same destination is not a change
        delivery.destination = destination
        delivery.version += 1
        delivery.updated_at = operation.clock.text()
        session.add(delivery)
    return RedirectResponse(f"{PREFIX}/deliveries/{delivery.number}?saved=1", status_code=303)
