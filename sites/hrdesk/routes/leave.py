"""Leave requests: the list (search, status, type and department filters), each request's page, and its approval
or rejection."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, or_, select
from starlette.responses import HTMLResponse, Response

from sites.hrdesk.decisions import approve_leave, refusal_to_approve_leave, refusal_to_reject_leave, reject_leave
from sites.hrdesk.models import DEPARTMENTS, LEAVE_STATUSES, LEAVE_TYPES, Employee, LeaveRequest
from sites.hrdesk.pages import PREFIX, PageQuery, balance_of, chosen, employees_by_id, leave_by_number, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import related

router = APIRouter()

_NOTICES = Notices({"approved": "Leave approved.", "rejected": "Leave rejected."})


@router.get("/leave", response_class=HTMLResponse)
def leave_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = "", type: str = "",
               department: str = "", page_number: PageQuery = "") -> HTMLResponse:
    """Leave requests by number, searched by request number or employee name, filtered by status, leave type and
    the employee's department."""
    query = select(LeaveRequest).order_by(col(LeaveRequest.number))
    text = q.strip()
    status, type, department = chosen(status, LEAVE_STATUSES), chosen(type, LEAVE_TYPES), chosen(department,
                                                                                                DEPARTMENTS)
    if text or department:
        query = query.join(Employee, col(Employee.id) == col(LeaveRequest.employee_id))
    if text:
        like = f"%{text}%"
        query = query.where(or_(col(LeaveRequest.number).ilike(like), col(Employee.name).ilike(like)))
    if status:
        query = query.where(LeaveRequest.status == status)
    if type:
        query = query.where(LeaveRequest.leave_type == type)
    if department:
        query = query.where(Employee.department == department)
    filters = {"q": text, "status": status, "type": type, "department": department}
    rows = paged(session, query, page=page_number, path=f"{PREFIX}/leave", query=filters)
    employees = employees_by_id(session, (request.employee_id for request in rows.rows))
    return page(operation, "leave_list.html", title="Leave requests", pages=rows, employees=employees,
                filters=filters, statuses=LEAVE_STATUSES, types=LEAVE_TYPES, departments=DEPARTMENTS)


def _leave_page(session: Session, operation: OperationContext, request: LeaveRequest, *, status: int = 200,
                notice: str | None = None, error: str | None = None, note: str = "") -> HTMLResponse:
    employee = related(session, request, "employee_id", Employee)
    assert employee is not None and employee.id is not None  # a request's employee is a foreign key
    return page(operation, "leave.html", status=status, title=f"Leave request {request.number}", request=request,
                employee=employee, balance=balance_of(session, employee.id, request.leave_type), notice=notice,
                error=error, note=note)


@router.get("/leave/{number}", response_class=HTMLResponse)
def leave_detail(number: str, session: SessionDep, operation: OperationDep, approved: str = "",
                 rejected: str = "") -> HTMLResponse:
    """A leave request with the employee's balance of its type and the decision forms; 404 for an unknown number."""
    request = leave_by_number(session, number)
    if request is None:
        return not_found(operation, f"Leave request {number}")
    return _leave_page(session, operation, request, notice=_NOTICES.pick(approved=approved, rejected=rejected))


@router.post("/leave/{number}/approve", response_model=None)
def approve(number: str, session: SessionDep, operation: OperationDep) -> Response:
    """Approves a submitted request and takes its days from the balance; 422 for a decided request or one beyond
    the balance."""
    request = leave_by_number(session, number)
    if request is None:
        return not_found(operation, f"Leave request {number}")
    employee = session.get(Employee, request.employee_id)
    assert employee is not None and employee.id is not None
    balance = balance_of(session, employee.id, request.leave_type)
    refusal = refusal_to_approve_leave(request, employee, balance)
    if refusal is not None:
        return _leave_page(session, operation, request, status=422, error=refusal)
    approve_leave(request, balance, now=operation.clock.text())
    session.add(request)
    if balance is not None:
        session.add(balance)
    return RedirectResponse(f"{PREFIX}/leave/{request.number}?approved=1", status_code=303)


@router.post("/leave/{number}/reject", response_model=None)
def reject(number: str, session: SessionDep, operation: OperationDep,
           note: Annotated[str, Form()] = "") -> Response:
    """Rejects a submitted request with a reason; 422 for a decided request or no reason."""
    request = leave_by_number(session, number)
    if request is None:
        return not_found(operation, f"Leave request {number}")
    refusal = refusal_to_reject_leave(request, note)
    if refusal is not None:
        return _leave_page(session, operation, request, status=422, error=refusal, note=note)
    reject_leave(request, note, now=operation.clock.text())
    session.add(request)
    return RedirectResponse(f"{PREFIX}/leave/{request.number}?rejected=1", status_code=303)
