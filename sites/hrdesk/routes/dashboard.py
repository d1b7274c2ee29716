"""The dashboard (what waits for a decision) and the HR policy page."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import func
from sqlmodel import select
from starlette.responses import HTMLResponse

from sites.hrdesk.models import APPROVAL_LIMITS, DESK_USER, ExpenseClaim, LeaveRequest
from sites.hrdesk.pages import page
from sites.kit.deps import OperationDep, SessionDep

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """How many leave requests and expense claims wait for the desk, with links to them."""
    waiting_leave = session.exec(select(func.count()).where(LeaveRequest.status == "submitted")).one()
    waiting_claims = session.exec(select(func.count()).where(ExpenseClaim.status == "submitted")).one()
    awaiting_receipts = session.exec(select(func.count()).where(ExpenseClaim.status == "receipt_requested")).one()
    return page(operation, "dashboard.html", title="Dashboard", desk_user=DESK_USER, waiting_leave=waiting_leave,
                waiting_claims=waiting_claims, awaiting_receipts=awaiting_receipts)


@router.get("/policy", response_class=HTMLResponse)
def policy(operation: OperationDep) -> HTMLResponse:
    """The expense policy (approval limits by grade, receipts) and the leave rules the desk enforces."""
    return page(operation, "policy.html", title="HR policy", limits=sorted(APPROVAL_LIMITS.items()))
