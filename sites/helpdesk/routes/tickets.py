"""Ticket list, ticket details, status changes, customer notifications and escalation."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.helpdesk.lists import ALL, TICKET_FILTERS, list_query, tickets_selected
from sites.helpdesk.models import ESCALATION_QUEUES, TICKET_STATUSES, Customer, FollowUp, Notification, Order, Ticket
from sites.helpdesk.pages import PREFIX, PageParam, customers_of, not_found, page, ticket_by_number
from sites.helpdesk.work import escalate, refusal_to_escalate, waiting_escalation
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import listed, related

router = APIRouter()

_NOTICES = Notices({"saved": "Ticket updated.", "notified": "Notification sent.", "escalated": "Ticket escalated."})


@router.get("/tickets", response_class=HTMLResponse)
def ticket_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = ALL, priority: str = ALL,
                number: PageParam = "") -> HTMLResponse:
    """One page of the tickets by number, searched (number, subject, customer) and filtered (status, priority)."""
    query = list_query(q, TICKET_FILTERS, {"status": status, "priority": priority})
    pages = paged(session, tickets_selected(query), page=number, path=f"{PREFIX}/tickets", query=query.params)
    return page(
        operation,
        "tickets.html",
        title="Tickets",
        pages=pages,
        query=query,
        customers=customers_of(session, (ticket.customer_id for ticket in pages.rows)),
    )


def _ticket_page(
    session: Session,
    operation: OperationContext,
    ticket: Ticket,
    *,
    status: int = 200,
    notice: str | None = None,
    status_error: str | None = None,
    notify_error: str | None = None,
    subject: str = "",
    message: str = "",
    escalate_error: str | None = None,
    queue: str = "",
    reason: str = "",
) -> HTMLResponse:
    follow_ups = listed(session, select(FollowUp).where(FollowUp.ticket_id == ticket.id).order_by(col(FollowUp.id)))
    return page(
        operation,
        "ticket.html",
        status=status,
        title=f"Ticket {ticket.number}",
        ticket=ticket,
        customer=related(session, ticket, "customer_id", Customer),
        order=related(session, ticket, "order_id", Order),
        statuses=TICKET_STATUSES,
        notice=notice,
        status_error=status_error,
        notify_error=notify_error,
        subject=subject,
        message=message,
        follow_ups=follow_ups,
        waiting=waiting_escalation(session, ticket),
        queues=ESCALATION_QUEUES,
        escalate_error=escalate_error,
        queue=queue,
        reason=reason,
    )


@router.get("/tickets/{number}", response_class=HTMLResponse)
def ticket_detail(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    saved: str = "",
    notified: str = "",
    escalated: str = "",
) -> HTMLResponse:
    """A ticket's details with its status form and notify form; 404 for an unknown number."""
    ticket = ticket_by_number(session, number)
    if ticket is None:
        return not_found(operation, f"Ticket {number}")
    notice = _NOTICES.pick(saved=saved, notified=notified, escalated=escalated)
    return _ticket_page(session, operation, ticket, notice=notice)


@router.post("/tickets/{number}/status", response_model=None)
def change_status(
    number: str, session: SessionDep, operation: OperationDep, status: Annotated[str, Form()] = ""
) -> Response:
    """Sets the ticket's status (and its updated_at); 422 for a status that does not exist."""
    ticket = ticket_by_number(session, number)
    if ticket is None:
        return not_found(operation, f"Ticket {number}")
    if status not in TICKET_STATUSES:
        error = f"Status must be one of {', '.join(TICKET_STATUSES)}."
        return _ticket_page(session, operation, ticket, status=422, status_error=error)
    if ticket.status != status:  # saving the same status is not a change
        ticket.status = status
        ticket.updated_at = operation.clock.text()
        session.add(ticket)
    return RedirectResponse(f"{PREFIX}/tickets/{ticket.number}?saved=1", status_code=303)


@router.post("/tickets/{number}/notify", response_model=None)
def notify_customer(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    subject: Annotated[str, Form()] = "",
    message: Annotated[str, Form()] = "",
) -> Response:
    """Sends the ticket's customer a notification; 422 without a subject or message."""
    ticket = ticket_by_number(session, number)
    if ticket is None:
        return not_found(operation, f"Ticket {number}")
    if not subject.strip() or not message.strip():
        fields = (("subject", subject), ("message", message))
        missing = " and ".join(name for name, value in fields if not value.strip())
        return _ticket_page(
            session,
            operation,
            ticket,
            status=422,
            notify_error=f"Notification not sent: the {missing} is empty.",
            subject=subject,
            message=message,
        )
    session.add(
        Notification(
            message_id=f"N-{operation.rng.randint(100000, 999999)}",
            customer_id=ticket.customer_id,
            ticket_id=ticket.id,
            subject=subject.strip(),
            body=message.strip(),
            sent_at=operation.clock.text(),
        )
    )
    return RedirectResponse(f"{PREFIX}/tickets/{ticket.number}?notified=1", status_code=303)


@router.post("/tickets/{number}/escalate", response_model=None)
def escalate_ticket(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    queue: Annotated[str, Form()] = "",
    reason: Annotated[str, Form()] = "",
) -> Response:
    """Hands the ticket to a human queue; 422 for an unknown queue, no reason, or one already waiting."""
    ticket = ticket_by_number(session, number)
    if ticket is None:
        return not_found(operation, f"Ticket {number}")
    refusal = refusal_to_escalate(session, ticket, queue, reason)
    if refusal is not None:
        return _ticket_page(session, operation, ticket, status=422, escalate_error=refusal, queue=queue, reason=reason)
    escalate(session, ticket, queue=queue, reason=reason, now=operation.clock.text())
    return RedirectResponse(f"{PREFIX}/tickets/{ticket.number}?escalated=1", status_code=303)
