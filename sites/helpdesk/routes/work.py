"""Follow-ups (unfinished work) and escalations: their pages and closing a follow-up."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, select
from starlette.responses import HTMLResponse, Response

from sites.helpdesk.approvals import answered_review
from sites.helpdesk.lists import (
    ALL,
    ESCALATION_FILTERS,
    FOLLOW_UP_FILTERS,
    escalations_selected,
    follow_ups_selected,
    list_query,
)
from sites.helpdesk.models import FollowUp, Order, Ticket
from sites.helpdesk.pages import PREFIX, PageParam, not_found, page, rows_of
from sites.helpdesk.work import ESCALATION_RULES, FOLLOW_UP_RULES, close_follow_up, refusal_to_close
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import related

router = APIRouter()


@router.get("/escalations", response_class=HTMLResponse)
def escalations(session: SessionDep, operation: OperationDep, q: str = "", status: str = ALL, queue: str = ALL,
                number: PageParam = "") -> HTMLResponse:
    """The escalation rules and one page of the tickets handed to a human queue, searched (code, reason, ticket) and
    filtered (status, queue)."""
    query = list_query(q, ESCALATION_FILTERS, {"status": status, "queue": queue})
    pages = paged(session, escalations_selected(query), page=number, path=f"{PREFIX}/escalations",
                  query=query.params)
    return page(
        operation,
        "escalations.html",
        title="Escalations",
        rules=ESCALATION_RULES,
        pages=pages,
        query=query,
        tickets=rows_of(session, Ticket, (escalation.ticket_id for escalation in pages.rows)),
    )


@router.get("/follow-ups", response_class=HTMLResponse)
def follow_ups(session: SessionDep, operation: OperationDep, q: str = "", status: str = ALL, kind: str = ALL,
               number: PageParam = "") -> HTMLResponse:
    """How follow-ups work, and one page of the follow-ups by code, searched (code, work, ticket) and filtered
    (status, kind)."""
    query = list_query(q, FOLLOW_UP_FILTERS, {"status": status, "kind": kind})
    pages = paged(session, follow_ups_selected(query), page=number, path=f"{PREFIX}/follow-ups", query=query.params)
    return page(
        operation,
        "follow_ups.html",
        title="Follow-ups",
        rules=FOLLOW_UP_RULES,
        pages=pages,
        query=query,
        tickets=rows_of(session, Ticket, (follow_up.ticket_id for follow_up in pages.rows)),
        orders=rows_of(session, Order, (follow_up.order_id for follow_up in pages.rows)),
    )


def _follow_up_by_code(session: Session, code: str) -> FollowUp | None:
    return session.exec(select(FollowUp).where(FollowUp.code == code)).first()


def _follow_up_page(
    session: Session,
    operation: OperationContext,
    follow_up: FollowUp,
    *,
    status: int = 200,
    notice: str | None = None,
    error: str | None = None,
    note: str = "",
) -> HTMLResponse:
    return page(
        operation,
        "follow_up.html",
        status=status,
        title=f"Follow-up {follow_up.code}",
        follow_up=follow_up,
        ticket=related(session, follow_up, "ticket_id", Ticket),
        order=related(session, follow_up, "order_id", Order),
        notice=notice,
        error=error,
        note=note,
    )


@router.get("/follow-ups/{code}", response_class=HTMLResponse)
def follow_up_detail(code: str, session: SessionDep, operation: OperationDep, saved: str = "") -> HTMLResponse:
    """One follow-up with its forms to mark it done or cancel it; 404 for an unknown code."""
    follow_up = _follow_up_by_code(session, code)
    if follow_up is None:
        return not_found(operation, f"Follow-up {code}")
    notice = f"Follow-up {follow_up.code} is {follow_up.status}." if saved else None
    return _follow_up_page(session, operation, follow_up, notice=notice)


def _close(session: Session, operation: OperationContext, code: str, *, cancel: bool, note: str) -> Response:
    follow_up = _follow_up_by_code(session, code)
    if follow_up is None:
        return not_found(operation, f"Follow-up {code}")
    answered = follow_up.kind == "await-review" and answered_review(session, follow_up, operation.clock.text())
    refusal = refusal_to_close(follow_up, cancel=cancel, note=note, answered=answered)
    if refusal is not None:
        return _follow_up_page(session, operation, follow_up, status=422, error=refusal, note=note)
    close_follow_up(session, follow_up, cancel=cancel, note=note, now=operation.clock.text())
    return RedirectResponse(f"{PREFIX}/follow-ups/{follow_up.code}?saved=1", status_code=303)


@router.post("/follow-ups/{code}/done", response_model=None)
def mark_done(code: str, session: SessionDep, operation: OperationDep) -> Response:
    """Marks an open follow-up done; 422 when it is closed already or waits for a review."""
    return _close(session, operation, code, cancel=False, note="")


@router.post("/follow-ups/{code}/cancel", response_model=None)
def cancel(code: str, session: SessionDep, operation: OperationDep, note: Annotated[str, Form()] = "") -> Response:
    """Cancels an open follow-up with a note saying why; 422 without a note or when it is closed."""
    return _close(session, operation, code, cancel=True, note=note)
