"""Dashboard, approvals and notifications: the read-only overview pages."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlmodel import SQLModel, col, func, select
from starlette.responses import HTMLResponse

from sites.helpdesk.approvals import request_views
from sites.helpdesk.lists import NOTIFICATION_FILTERS, list_query, notifications_selected
from sites.helpdesk.models import ApprovalRequest, Escalation, FollowUp, Notification, Order, RefundApproval, Ticket
from sites.helpdesk.pages import PREFIX, PageParam, customers_of, page, rows_of
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import paged
from sites.kit.shown import listed

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Counts of tickets by status, active approvals, notifications sent, open work and waiting escalations, each
    counted by the database (not by loading the rows)."""
    tickets = dict(session.exec(select(Ticket.status, func.count()).group_by(col(Ticket.status))).all())
    approvals = dict(session.exec(
        select(RefundApproval.status, func.count()).group_by(col(RefundApproval.status))).all())

    def count(model: type[SQLModel], *where: Any) -> int:
        return int(session.exec(select(func.count()).select_from(model).where(*where)).one())

    counts = [
        ("Open tickets", tickets.get("open", 0)),
        ("Pending tickets", tickets.get("pending", 0)),
        ("Solved tickets", tickets.get("solved", 0)),
        ("Active approvals", approvals.get("active", 0)),
        ("Notifications sent", count(Notification)),
        ("Open follow-ups", count(FollowUp, col(FollowUp.status) == "open")),
        ("Waiting escalations", count(Escalation, col(Escalation.status) == "waiting")),
    ]
    return page(operation, "dashboard.html", title="Helpdesk", counts=counts)


@router.get("/approvals", response_class=HTMLResponse)
def approvals(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every refund approval with its order, approver, amount, expiry, policy and status, and every approval request
    with its state as of now."""
    rows = listed(session, select(RefundApproval).order_by(col(RefundApproval.id)))
    asked = listed(session, select(ApprovalRequest).order_by(col(ApprovalRequest.id)))
    orders = rows_of(session, Order, [*(row.order_id for row in rows), *(request.order_id for request in asked)])
    requests = request_views(session, asked, orders, operation.clock.text())
    return page(operation, "approvals.html", title="Approvals", approvals=rows, orders=orders, requests=requests)


@router.get("/notifications", response_class=HTMLResponse)
def notifications(session: SessionDep, operation: OperationDep, q: str = "", number: PageParam = "") -> HTMLResponse:
    """One page of the notifications sent, oldest first, searched (message id, subject, customer)."""
    query = list_query(q, NOTIFICATION_FILTERS, {})
    pages = paged(session, notifications_selected(query), page=number, path=f"{PREFIX}/notifications",
                  query=query.params)
    return page(
        operation,
        "notifications.html",
        title="Notifications",
        pages=pages,
        query=query,
        customers=customers_of(session, (notification.customer_id for notification in pages.rows)),
    )
