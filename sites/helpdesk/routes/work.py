"""Follow-ups (unfinished work) and escalations: their pages and closing a follow-up."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.helpdesk.approvals import answered_review
from sites.helpdesk.models import FOLLOW_UP_STATUSES, Escalation, FollowUp, Order, Ticket
from sites.helpdesk.pages import PREFIX, not_found, orders_by_id, page, tickets_by_id
from sites.helpdesk.work import ESCALATION_RULES, FOLLOW_UP_RULES, close_follow_up, refusal_to_close
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.shown import listed, related

router = APIRouter()


@router.get("/escalations", response_class=HTMLResponse)
def escalations(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """The escalation rules and every ticket handed to a human queue."""
    rows = listed(session, select(Escalation).order_by(col(Escalation.id)))
    return page(
        operation,
        "escalations.html",
        title="Escalations",
        rules=ESCALATION_RULES,
        escalations=rows,
        tickets=tickets_by_id(session),
    )


@router.get("/follow-ups", response_class=HTMLResponse)
def follow_ups(session: SessionDep, operation: OperationDep, status: str = "all") -> HTMLResponse:
    """How follow-ups work, and the follow-ups by code, optionally only those with one status."""
    query = select(FollowUp).order_by(col(FollowUp.id))
    if status in FOLLOW_UP_STATUSES:
        query = query.where(FollowUp.status == status)
    return page(
        operation,
        "follow_ups.html",
        title="Follow-ups",
        rules=FOLLOW_UP_RULES,
        follow_ups=listed(session, query),
        tickets=tickets_by_id(session),
        orders=orders_by_id(session),
        selected_status=status if status in FOLLOW_UP_STATUSES else "all",
        statuses=("all", *FOLLOW_UP_STATUSES),
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
