"""The response queue: event list, event details and the "process event" procedure."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.ledger.models import Event
from sites.ledger.pages import PREFIX, event_by_number, event_numbers, not_found, page
from sites.ledger.procedures import amount_text, process_event, record_of, refusal_to_process

router = APIRouter()


@router.get("/events", response_class=HTMLResponse)
def event_list(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every event by number with its batch, kind, dependency and status.

    Faults this page carries out (docs/faults.md): `duplicate_delivery` lists the event `params.event`
    a second time, as redelivered (it is the same event: processing it twice is refused, and typing
    its record in by hand duplicates it); `out_of_order` leaves the event `params.event` (a dependency)
    out of the list while its dependent is shown, as if it had not arrived yet.
    """
    events = list(session.exec(select(Event).order_by(col(Event.number))))
    fault = operation.fault
    target = None if fault is None else fault.params.get("event")
    rows: list[tuple[Event, bool]] = []  # (event, shown again as redelivered)
    for event in events:
        if fault is not None and fault.fault == "out_of_order" and event.number == target:
            continue
        rows.append((event, False))
        if fault is not None and fault.fault == "duplicate_delivery" and event.number == target:
            rows.append((event, True))
    return page(
        operation,
        "events.html",
        title="Response queue",
        rows=rows,
        numbers=event_numbers(session),
        amount_text=amount_text,
    )


def _event_page(
    session: Session,
    operation: OperationContext,
    event: Event,
    *,
    status: int = 200,
    notice: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    dependency = None if event.depends_on_id is None else session.get(Event, event.depends_on_id)
    return page(
        operation,
        "event.html",
        status=status,
        title=f"Event {event.number}",
        event=event,
        dependency=dependency,
        record=record_of(session, event),
        amount=amount_text(event.amount_cents, event.currency),
        notice=notice,
        error=error,
    )


@router.get("/events/{number}", response_class=HTMLResponse)
def event_detail(number: str, session: SessionDep, operation: OperationDep, processed: str = "") -> HTMLResponse:
    """An event's details, its dependency, its resulting record and (while queued) the process form."""
    event = event_by_number(session, number)
    if event is None:
        return not_found(operation, f"Event {number}")
    return _event_page(session, operation, event, notice="Event processed." if processed else None)


@router.post("/events/{number}/process", response_model=None)
def process(number: str, session: SessionDep, operation: OperationDep) -> Response:
    """The "process event" procedure; 409 without a change for a held, processed or waiting event."""
    event = event_by_number(session, number)
    if event is None:
        return not_found(operation, f"Event {number}")
    refusal = refusal_to_process(session, event)
    if refusal is not None:
        return _event_page(session, operation, event, status=409, error=refusal)
    process_event(session, event, operation.clock.text())
    return RedirectResponse(f"{PREFIX}/events/{event.number}?processed=1", status_code=303)
