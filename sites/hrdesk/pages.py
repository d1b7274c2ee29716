"""Rendering and look-ups shared by the HR desk's routes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

from fastapi import Query
from sqlmodel import Session, select

from sites.hrdesk.models import Employee, ExpenseClaim, LeaveBalance, LeaveRequest
from sites.kit.listing import by_id
from sites.kit.pages import SitePages

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/hrdesk"
PageQuery = Annotated[str, Query(alias="page")]
"""A list's page number as its query string gives it (`?page=3`), read by `sites.kit.paging.paged`."""


def chosen(value: str, options: tuple[str, ...]) -> str:
    """A filter's value when it is one of its options, else "" (no filter)."""
    return value if value in options else ""


def employee_by_number(session: Session, number: str) -> Employee | None:
    """The employee numbered `number` (e.g. E-1008), or None."""
    return session.exec(select(Employee).where(Employee.number == number)).first()


def leave_by_number(session: Session, number: str) -> LeaveRequest | None:
    """The leave request numbered `number` (e.g. L-3001), or None."""
    return session.exec(select(LeaveRequest).where(LeaveRequest.number == number)).first()


def claim_by_number(session: Session, number: str) -> ExpenseClaim | None:
    """The expense claim numbered `number` (e.g. X-5001), or None."""
    return session.exec(select(ExpenseClaim).where(ExpenseClaim.number == number)).first()


def employees_by_id(session: Session, ids: Iterable[int | None]) -> dict[int, Employee]:
    """The employees `ids` keyed by id, for tables that show employee names (those of the page's rows)."""
    return by_id(session, Employee, ids)


def balance_of(session: Session, employee_id: int, leave_type: str) -> LeaveBalance | None:
    """The employee's balance of one leave type; None for a type drawn from no balance (unpaid)."""
    query = select(LeaveBalance).where(LeaveBalance.employee_id == employee_id,
                                       LeaveBalance.leave_type == leave_type)
    return session.exec(query).first()
