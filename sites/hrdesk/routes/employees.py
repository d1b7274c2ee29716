"""The employee directory (search, department and grade filters) and each employee's page."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, or_, select
from starlette.responses import HTMLResponse

from sites.hrdesk.models import DEPARTMENTS, GRADES, Employee, ExpenseClaim, LeaveBalance, LeaveRequest
from sites.hrdesk.pages import PREFIX, PageQuery, employee_by_number, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import paged
from sites.kit.shown import listed, related

router = APIRouter()


@router.get("/employees", response_class=HTMLResponse)
def employee_list(session: SessionDep, operation: OperationDep, q: str = "", department: str = "",
                  grade: str = "", page_number: PageQuery = "") -> HTMLResponse:
    """Employees by number, searched by name, number or e-mail, filtered by department and grade."""
    query = select(Employee).order_by(col(Employee.number))
    text = q.strip()
    if text:
        like = f"%{text}%"
        query = query.where(or_(col(Employee.name).ilike(like), col(Employee.number).ilike(like),
                                col(Employee.email).ilike(like)))
    department = department if department in DEPARTMENTS else ""
    grade = grade if grade in GRADES else ""
    if department:
        query = query.where(Employee.department == department)
    if grade:
        query = query.where(Employee.grade == grade)
    filters = {"q": text, "department": department, "grade": grade}
    rows = paged(session, query, page=page_number, path=f"{PREFIX}/employees", query=filters)
    return page(operation, "employees.html", title="Employees", pages=rows, filters=filters, departments=DEPARTMENTS,
                grades=GRADES)


@router.get("/employees/{number}", response_class=HTMLResponse)
def employee_detail(number: str, session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """An employee's details, manager, leave balances, leave requests and expense claims; 404 for an unknown
    number."""
    employee = employee_by_number(session, number)
    if employee is None:
        return not_found(operation, f"Employee {number}")
    balances = listed(session, select(LeaveBalance).where(LeaveBalance.employee_id == employee.id)
                      .order_by(col(LeaveBalance.leave_type)))
    leave = listed(session, select(LeaveRequest).where(LeaveRequest.employee_id == employee.id)
                   .order_by(col(LeaveRequest.number)))
    claims = listed(session, select(ExpenseClaim).where(ExpenseClaim.employee_id == employee.id)
                    .order_by(col(ExpenseClaim.number)))
    return page(operation, "employee.html", title=employee.name, employee=employee,
                manager=related(session, employee, "manager_id", Employee), balances=balances, leave=leave,
                claims=claims)
