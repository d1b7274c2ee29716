"""The HR desk's rules for deciding leave requests and expense claims (the policy page states them).

Each `refusal_...` names the rule a decision would break, or returns None when it may go ahead; each decision then
writes the request's or claim's status, the desk user as decider and the logical time. A refused decision changes
nothing (the routes answer a 422 page with the refusal).
"""

from __future__ import annotations

from sites.hrdesk.models import APPROVAL_LIMITS, DESK_USER, Employee, ExpenseClaim, LeaveBalance, LeaveRequest
from sites.kit.money import format_cents


def refusal_to_decide_leave(request: LeaveRequest) -> str | None:
    """Only a submitted request is decided, once."""
    if request.status != "submitted":
        return f"{request.number} is already {request.status}: only a submitted request can be decided."
    return None


def refusal_to_approve_leave(request: LeaveRequest, employee: Employee, balance: LeaveBalance | None) -> str | None:
    """A submitted request, and no more days than the employee has left of its type (unpaid leave has no balance)."""
    if (refusal := refusal_to_decide_leave(request)) is not None:
        return refusal
    if balance is not None and balance.days < request.days:
        return (f"{request.number} asks for {request.days} days of {request.leave_type} leave but {employee.name} has "
                f"{balance.days} left: leave beyond the balance cannot be approved.")
    return None


def refusal_to_reject_leave(request: LeaveRequest, note: str) -> str | None:
    """A submitted request, and a reason for the employee."""
    if (refusal := refusal_to_decide_leave(request)) is not None:
        return refusal
    if not note.strip():
        return "A rejection needs a reason for the employee."
    return None


def approve_leave(request: LeaveRequest, balance: LeaveBalance | None, *, now: str) -> None:
    """Approves the request and takes its days from the balance of its type."""
    request.status, request.decided_by, request.decided_at = "approved", DESK_USER, now
    if balance is not None:
        balance.days -= request.days


def reject_leave(request: LeaveRequest, note: str, *, now: str) -> None:
    """Rejects the request with the reason the employee is given."""
    request.status, request.decided_by, request.decided_at = "rejected", DESK_USER, now
    request.decision_note = note.strip()


def approval_limit(employee: Employee) -> int:
    """The most the desk may approve on one claim of this employee, in cents of the claim's currency."""
    return APPROVAL_LIMITS[employee.grade]


def refusal_to_approve_claim(claim: ExpenseClaim, employee: Employee) -> str | None:
    """A submitted claim with a receipt, for no more than the claimant's grade allows."""
    if claim.status != "submitted":
        return f"{claim.number} is {claim.status.replace('_', ' ')}: only a submitted claim can be approved."
    if not claim.receipt:
        return f"{claim.number} has no receipt: no claim is approved without one (request the receipt instead)."
    limit = approval_limit(employee)
    if claim.amount_cents > limit:
        return (f"{claim.number} is for {format_cents(claim.amount_cents)} {claim.currency}, above the "
                f"{format_cents(limit)} {claim.currency} the desk may approve for a {employee.grade} employee: "
                "it goes to the finance director.")
    return None


def refusal_to_reject_claim(claim: ExpenseClaim, note: str) -> str | None:
    """A claim not yet decided, and a reason for the employee."""
    if claim.status not in ("submitted", "receipt_requested"):
        return f"{claim.number} is already {claim.status}: it cannot be rejected."
    if not note.strip():
        return "A rejection needs a reason for the employee."
    return None


def refusal_to_request_receipt(claim: ExpenseClaim, note: str) -> str | None:
    """A submitted claim, and a message saying what is missing."""
    if claim.status != "submitted":
        return (f"{claim.number} is {claim.status.replace('_', ' ')}: a receipt can be requested only on a "
                "submitted claim.")
    if not note.strip():
        return "A receipt request needs a message for the employee."
    return None


def approve_claim(claim: ExpenseClaim, *, now: str) -> None:
    """Approves the claim for payment."""
    claim.status, claim.approver, claim.decided_at = "approved", DESK_USER, now


def reject_claim(claim: ExpenseClaim, note: str, *, now: str) -> None:
    """Rejects the claim with the reason the employee is given."""
    claim.status, claim.approver, claim.decided_at, claim.note = "rejected", DESK_USER, now, note.strip()


def request_receipt(claim: ExpenseClaim, note: str, *, now: str) -> None:
    """Sends the claim back to the employee for its receipt."""
    claim.status, claim.approver, claim.decided_at, claim.note = "receipt_requested", DESK_USER, now, note.strip()
