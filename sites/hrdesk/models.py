"""The HR desk's tables and the policy it enforces. Money is integer cents; dates are `YYYY-MM-DD` text, times
`YYYY-MM-DD HH:MM` text from the logical clock (see sites/kit/clock.py)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

DESK_USER = "Ruth Adeyemi"
"""The HR officer signed in to the desk: every decision the desk records is hers."""

DEPARTMENTS = ("Engineering", "Finance", "Marketing", "Operations", "People", "Sales", "Support")
GRADES = ("G1", "G2", "G3", "G4", "G5")
LEAVE_TYPES = ("annual", "sick", "unpaid")
BALANCED_LEAVE_TYPES = ("annual", "sick")
"""Leave types drawn from a balance of days; unpaid leave has none and is approved without one."""
LEAVE_STATUSES = ("submitted", "approved", "rejected", "cancelled")
EXPENSE_CATEGORIES = ("travel", "meals", "lodging", "equipment", "training", "software")
EXPENSE_STATUSES = ("submitted", "receipt_requested", "approved", "rejected")
CURRENCIES = ("EUR", "GBP", "USD")

APPROVAL_LIMITS = {"G1": 50000, "G2": 50000, "G3": 100000, "G4": 250000, "G5": 500000}
"""The most the desk may approve on one claim, in cents of the claim's own currency, by the claimant's grade
(the expense policy states it); a larger claim goes to the finance director, not to the desk."""


class HrdeskTable(SQLModel, registry=registry()):
    """Base of the HR desk's tables: its own registry keeps them apart from other sites' tables."""


class Employee(HrdeskTable, table=True):
    __tablename__ = "employee"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    """E-1001 and up."""
    name: str
    email: str
    department: str
    grade: str
    title: str
    manager_id: int | None = Field(default=None, foreign_key="employee.id")


class LeaveBalance(HrdeskTable, table=True):
    __tablename__ = "leave_balance"

    id: int | None = Field(default=None, primary_key=True)
    employee_id: int = Field(foreign_key="employee.id")
    leave_type: str
    days: int
    """Whole days left this year; approving leave of this type takes its days from here."""


class LeaveRequest(HrdeskTable, table=True):
    __tablename__ = "leave_request"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    """L-3001 and up."""
    employee_id: int = Field(foreign_key="employee.id")
    leave_type: str
    start_date: str
    end_date: str
    days: int
    """Working days the request takes from the balance."""
    reason: str
    status: str
    submitted_at: str
    decided_by: str = ""
    decided_at: str = ""
    decision_note: str = ""


class ExpenseClaim(HrdeskTable, table=True):
    __tablename__ = "expense_claim"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    """X-5001 and up."""
    employee_id: int = Field(foreign_key="employee.id")
    category: str
    description: str
    amount_cents: int
    currency: str
    incurred_on: str
    receipt: str
    """The receipt's reference (RC-40711), empty when none was attached."""
    status: str
    submitted_at: str
    approver: str = ""
    decided_at: str = ""
    note: str = ""


METADATA = HrdeskTable.metadata
