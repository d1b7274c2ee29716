"""The response queue: event list, event details and the "process event" procedure."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.injection import as_delivered, committed_part
from sites.kit.listing import choices, filtered, searched
from sites.kit.operation import OperationContext
from sites.kit.pages import message_page
from sites.kit.paging import paged
from sites.kit.shown import related
from sites.ledger.lists import EVERY_BATCH, batch_choices, period_batches
from sites.ledger.models import Event
from sites.ledger.pages import PREFIX, event_by_number, events_by_id, not_found, page
from sites.ledger.procedures import (
    process_event,
    record_of,
    refusal_to_process,
    refusal_to_process_batch,
)

router = APIRouter()


@router.get("/events", response_class=HTMLResponse)
def event_list(session: SessionDep, operation: OperationDep, processed: int = 0, q: str = "", status: str = "",
               kind: str = "", batch: str = "", number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The events of the current period's batches (or of the chosen batch, or of every batch), by id, a page at a
    time, with batch, kind, dependency and status: those whose number, summary or account holds `q`, of the chosen
    status and kind. Queued events can be selected and processed together ("Process selected").

    Faults this page carries out (docs/faults.md): `duplicate_delivery` lists the event `params.event`
    a second time, as redelivered (it is the same event: processing it twice is refused, and typing
    its record in by hand duplicates it); `out_of_order` leaves the event `params.event` (a dependency)
    out of the list while its dependent is shown, as if it had not arrived yet.
    """
    notice = f"Processed {processed} event(s)." if processed > 0 else None
    chosen = {"q": q.strip(), "status": status, "kind": kind, "batch": batch}
    return _list_page(session, operation, notice=notice, chosen=chosen, page_number=number)


def _list_page(
    session: Session,
    operation: OperationContext,
    *,
    status: int = 200,
    notice: str | None = None,
    error: str | None = None,
    selected: frozenset[str] = frozenset(),
    chosen: dict[str, str] | None = None,
    page_number: str = "",
) -> HTMLResponse:
    chosen = chosen or {"q": "", "status": "", "kind": "", "batch": ""}
    statement = filtered(select(Event), status=(Event.status, chosen["status"]), kind=(Event.kind, chosen["kind"]),
                         batch=(Event.batch, "" if chosen["batch"] == EVERY_BATCH else chosen["batch"]))
    if not chosen["batch"]:  # the current period's batches: a selection, not a whole listing of the table
        statement = statement.where(col(Event.batch).in_(period_batches(session)))
    statement = searched(statement, chosen["q"], Event.number, Event.summary, Event.account).order_by(col(Event.id))
    pages = paged(session, statement, page=page_number, path=f"{PREFIX}/events", query=chosen)
    # docs/faults.md: a fault may list an event twice or leave it out (then the page does not show the whole list)
    rows = as_delivered(pages.rows, operation.fault, "event", lambda event: event.number)
    return page(
        operation,
        "events.html",
        status=status,
        title="Response queue",
        rows=rows,
        pages=pages,
        chosen=chosen,
        statuses=choices(session, Event.status),
        kinds=choices(session, Event.kind),
        batches=batch_choices(session),
        every_batch=EVERY_BATCH,
        events=events_by_id(session, (event.depends_on_id for event in pages.rows)),
        notice=notice,
        error=error,
        selected=selected,
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
    dependency = related(session, event, "depends_on_id", Event)
    return page(
        operation,
        "event.html",
        status=status,
        title=f"Event {event.number}",
        event=event,
        dependency=dependency,
        record=record_of(session, event),
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
    refusal = refusal_to_process(session, event, shown=operation.shown)
    if refusal is not None:
        return _event_page(session, operation, event, status=409, error=refusal)
    process_event(session, event, operation.clock.text())
    return RedirectResponse(f"{PREFIX}/events/{event.number}?processed=1", status_code=303)


@router.post("/events/process-selected", response_model=None)
def process_selected(
    session: SessionDep, operation: OperationDep, event: Annotated[list[str] | None, Form()] = None
) -> Response:
    """The "process event" procedure for several queued events at once, in event-number order, whole or
    not at all (409 naming every refused event, nothing changed).

    Fault this route carries out (docs/faults.md): `partial_success` processes the first `params.commit`
    events of the batch, then answers an error page.
    """
    chosen = frozenset(event or [])
    found = [e for e in (event_by_number(session, number) for number in sorted(chosen)) if e is not None]
    unknown = sorted(chosen - {e.number for e in found})
    if unknown:
        return _list_page(session, operation, status=404, selected=chosen,
                          error=f"Refused, nothing was processed: no event {', '.join(unknown)}.")
    refusal = refusal_to_process_batch(session, found, operation.shown)
    if refusal is not None:
        return _list_page(session, operation, status=409 if found else 422, error=refusal, selected=chosen)
    applied = committed_part(operation.fault, found)  # docs/faults.md: partial success commits some, then fails
    for item in applied:
        process_event(session, item, operation.clock.text())
    if len(applied) != len(found):
        return message_page(status=500, title="Processing failed",
                            message=f"Processing the selected events failed after {len(applied)} of {len(found)}.")
    return RedirectResponse(f"{PREFIX}/events?processed={len(found)}", status_code=303)
