"""Expense claims: the list (search, status, category, currency and department filters, and approving the claims
selected on it), each claim's page, and its approval, rejection or request for a receipt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, or_, select
from starlette.responses import HTMLResponse, Response

from sites.hrdesk.decisions import (
    approval_limit,
    approve_claim,
    refusal_to_approve_claim,
    refusal_to_reject_claim,
    refusal_to_request_receipt,
    reject_claim,
    request_receipt,
)
from sites.hrdesk.models import CURRENCIES, DEPARTMENTS, EXPENSE_CATEGORIES, EXPENSE_STATUSES, Employee, ExpenseClaim
from sites.hrdesk.pages import PREFIX, PageQuery, chosen, claim_by_number, employees_by_id, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.injection import committed_part
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.pages import message_page
from sites.kit.paging import paged
from sites.kit.shown import related

router = APIRouter()

_NOTICES = Notices({"approved": "Claim approved.", "rejected": "Claim rejected.",
                    "receipt": "Receipt requested from the employee."})
_LIST_NOTICES = Notices({"approved": "Selected claims approved."})


def _list_page(session: Session, operation: OperationContext, *, q: str = "", status: str = "",
               category: str = "", currency: str = "", department: str = "", page_number: str = "",
               http_status: int = 200, notice: str | None = None, error: str | None = None) -> HTMLResponse:
    query = select(ExpenseClaim).order_by(col(ExpenseClaim.number))
    text = q.strip()
    status, category = chosen(status, EXPENSE_STATUSES), chosen(category, EXPENSE_CATEGORIES)
    currency, department = chosen(currency, CURRENCIES), chosen(department, DEPARTMENTS)
    if text or department:
        query = query.join(Employee, col(Employee.id) == col(ExpenseClaim.employee_id))
    if text:
        like = f"%{text}%"
        query = query.where(or_(col(ExpenseClaim.number).ilike(like), col(ExpenseClaim.receipt).ilike(like),
                                col(ExpenseClaim.description).ilike(like), col(Employee.name).ilike(like)))
    for column, value in ((ExpenseClaim.status, status), (ExpenseClaim.category, category),
                          (ExpenseClaim.currency, currency)):
        if value:
            query = query.where(column == value)
    if department:
        query = query.where(Employee.department == department)
    filters = {"q": text, "status": status, "category": category, "currency": currency, "department": department}
    rows = paged(session, query, page=page_number, path=f"{PREFIX}/expenses", query=filters)
    employees = employees_by_id(session, (claim.employee_id for claim in rows.rows))
    return page(operation, "expenses.html", status=http_status, title="Expense claims", pages=rows,
                employees=employees, statuses=EXPENSE_STATUSES, categories=EXPENSE_CATEGORIES,
                currencies=CURRENCIES, departments=DEPARTMENTS, notice=notice, error=error, filters=filters)


@router.get("/expenses", response_class=HTMLResponse)
def expense_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = "", category: str = "",
                 currency: str = "", department: str = "", page_number: PageQuery = "",
                 approved: str = "") -> HTMLResponse:
    """Expense claims by number, searched by claim number, receipt, description or employee name, filtered by
    status, category, currency and the employee's department; each submitted claim can be selected for approval."""
    return _list_page(session, operation, q=q, status=status, category=category, currency=currency,
                      department=department, page_number=page_number, notice=_LIST_NOTICES.pick(approved=approved))


@router.post("/expenses/approve", response_model=None)
def approve_selected(session: SessionDep, operation: OperationDep,
                     claim: Annotated[list[str] | None, Form()] = None) -> Response:
    """Approves every selected claim, or none: 422 naming each refusal when one of them may not be approved, or
    when none is selected. Under a `partial_success` fault the first claims are approved and the rest are not,
    and an error page answers."""
    numbers = list(dict.fromkeys(claim or []))
    claims = [claim_by_number(session, number) for number in numbers]
    if not numbers:
        return _list_page(session, operation, status="submitted", http_status=422,
                          error="Select at least one claim to approve.")
    refusals = [f"{number} does not exist." for number, found in zip(numbers, claims, strict=True) if found is None]
    for found in claims:
        if found is not None:
            employee = session.get(Employee, found.employee_id)
            assert employee is not None
            if (refusal := refusal_to_approve_claim(found, employee)) is not None:
                refusals.append(refusal)
    if refusals:
        return _list_page(session, operation, status="submitted", http_status=422,
                          error="Nothing was approved: " + " ".join(refusals))
    now = operation.clock.text()
    approved = committed_part(operation.fault, claims)  # docs/faults.md: partial success commits some, then fails
    for found in approved:
        assert found is not None
        approve_claim(found, now=now)
        session.add(found)
    if len(approved) != len(claims):
        return message_page(status=500, title="Approval failed",
                            message=f"The approval failed after {len(approved)} of {len(claims)} claims.")
    return RedirectResponse(f"{PREFIX}/expenses?status=submitted&approved=1", status_code=303)


def _claim_page(session: Session, operation: OperationContext, claim: ExpenseClaim, *, status: int = 200,
                notice: str | None = None, error: str | None = None, note: str = "") -> HTMLResponse:
    employee = related(session, claim, "employee_id", Employee)
    assert employee is not None
    return page(operation, "expense.html", status=status, title=f"Expense claim {claim.number}", claim=claim,
                employee=employee, limit=approval_limit(employee), notice=notice, error=error, note=note)


@router.get("/expenses/{number}", response_class=HTMLResponse)
def expense_detail(number: str, session: SessionDep, operation: OperationDep, approved: str = "",
                   rejected: str = "", receipt: str = "") -> HTMLResponse:
    """A claim with its employee, the desk's limit for the employee's grade and the decision forms; 404 for an
    unknown number."""
    claim = claim_by_number(session, number)
    if claim is None:
        return not_found(operation, f"Expense claim {number}")
    notice = _NOTICES.pick(approved=approved, rejected=rejected, receipt=receipt)
    return _claim_page(session, operation, claim, notice=notice)


def _decide(number: str, session: Session, operation: OperationContext, note: str, flag: str,
            refusal: Callable[[ExpenseClaim], str | None], decision: Callable[[ExpenseClaim], None]) -> Response:
    claim = claim_by_number(session, number)
    if claim is None:
        return not_found(operation, f"Expense claim {number}")
    refused = refusal(claim)
    if refused is not None:
        return _claim_page(session, operation, claim, status=422, error=refused, note=note)
    decision(claim)
    session.add(claim)
    return RedirectResponse(f"{PREFIX}/expenses/{claim.number}?{flag}=1", status_code=303)


@router.post("/expenses/{number}/approve", response_model=None)
def approve(number: str, session: SessionDep, operation: OperationDep) -> Response:
    """Approves a submitted claim with a receipt within the desk's limit for the claimant's grade; 422 otherwise."""
    def refusal(claim: ExpenseClaim) -> str | None:
        employee = session.get(Employee, claim.employee_id)
        assert employee is not None
        return refusal_to_approve_claim(claim, employee)

    return _decide(number, session, operation, "", "approved", refusal,
                   lambda claim: approve_claim(claim, now=operation.clock.text()))


@router.post("/expenses/{number}/reject", response_model=None)
def reject(number: str, session: SessionDep, operation: OperationDep,
           note: Annotated[str, Form()] = "") -> Response:
    """Rejects an undecided claim with a reason; 422 for a decided claim or no reason."""
    return _decide(number, session, operation, note, "rejected", lambda claim: refusal_to_reject_claim(claim, note),
                   lambda claim: reject_claim(claim, note, now=operation.clock.text()))


@router.post("/expenses/{number}/request-receipt", response_model=None)
def ask_for_receipt(number: str, session: SessionDep, operation: OperationDep,
                    note: Annotated[str, Form()] = "") -> Response:
    """Sends a submitted claim back to its employee for the receipt, with a message; 422 otherwise."""
    return _decide(number, session, operation, note, "receipt",
                   lambda claim: refusal_to_request_receipt(claim, note),
                   lambda claim: request_receipt(claim, note, now=operation.clock.text()))
