"""Dashboard, approvals and notifications: the read-only overview pages."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.helpdesk.approvals import request_views
from sites.helpdesk.models import ApprovalRequest, Escalation, FollowUp, Notification, RefundApproval, Ticket
from sites.helpdesk.pages import customers_by_id, orders_by_id, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.shown import listed

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Counts of tickets by status, active approvals, notifications sent, open work and waiting escalations."""
    tickets = list(session.exec(select(Ticket)))
    approvals = list(session.exec(select(RefundApproval)))
    counts = [
        ("Open tickets", sum(ticket.status == "open" for ticket in tickets)),
        ("Pending tickets", sum(ticket.status == "pending" for ticket in tickets)),
        ("Solved tickets", sum(ticket.status == "solved" for ticket in tickets)),
        ("Active approvals", sum(approval.status == "active" for approval in approvals)),
        ("Notifications sent", len(list(session.exec(select(Notification))))),
        ("Open follow-ups", len(list(session.exec(select(FollowUp).where(FollowUp.status == "open"))))),
        ("Waiting escalations", len(list(session.exec(select(Escalation).where(Escalation.status == "waiting"))))),
    ]
    return page(operation, "dashboard.html", title="Helpdesk", counts=counts)


@router.get("/approvals", response_class=HTMLResponse)
def approvals(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every refund approval with its order, approver, amount, expiry, policy and status, and every approval request
    with its state as of now."""
    rows = listed(session, select(RefundApproval).order_by(col(RefundApproval.id)))
    orders = orders_by_id(session)
    requests = request_views(session, listed(session, select(ApprovalRequest).order_by(col(ApprovalRequest.id))),
                             orders, operation.clock.text())
    return page(operation, "approvals.html", title="Approvals", approvals=rows, orders=orders, requests=requests)


@router.get("/notifications", response_class=HTMLResponse)
def notifications(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every notification sent, oldest first."""
    rows = listed(session, select(Notification).order_by(col(Notification.id)))
    return page(
        operation,
        "notifications.html",
        title="Notifications",
        notifications=rows,
        customers=customers_by_id(session),
    )
