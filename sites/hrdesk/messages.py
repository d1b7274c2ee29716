"""The desk's messages: what department heads write to the HR desk about their people's leave requests.

The messages are no table of their own: each is derived from a leave request of the seed's filler (ids from 7, so
the fixed requests L-3001..L-3006 have none) by its id, so they are the same on every load of a tenant, differ by
seed with the requests they are about, and leave every table (and so every snapshot) as it was. The request's id
modulo 3 says what its employee's manager wrote: 0, one message approving it; 1, one message asking the desk to
reject it; 2, a message approving it and, three hours later, one that takes the approval back and asks the desk to
reject it (the later message is the one that counts). The id modulo 4 picks the manager's reason for a rejection.
The requests written about are those submitted from `WRITTEN_FROM` on, whatever their status (a decision changes no
message: the messages stay after the desk acts on them, and some are about requests already decided)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from sqlmodel import Session, col, select

from sites.hrdesk.models import Employee, LeaveRequest
from sites.kit.clock import TIME_FORMAT, parse_time

FIRST_FILLER_REQUEST = 7
"""The id of the first filler leave request (after the six fixed ones)."""
WRITTEN_FROM = "2026-02-10"
"""Requests submitted on or after this day are written about."""
REASONS = (
    "the team is short that week",
    "a product launch falls in those days",
    "the quarterly stocktake is that week",
    "two colleagues are already away then",
)
"""A manager's reason for asking the desk to reject a request, by the request's id modulo 4."""


@dataclass(frozen=True)
class DeskMessage:
    """One message to the desk: `key` (M-<request id>-<1 or 2>) names it in its address."""

    key: str
    sent_at: str
    sender: Employee
    employee: Employee
    request: LeaveRequest
    asks: str
    """approve or reject: what the message asks the desk to do."""
    subject: str
    body: str


def _messages_about(request: LeaveRequest, employee: Employee, manager: Employee) -> list[DeskMessage]:
    assert request.id is not None
    written = parse_time(request.submitted_at)
    what = (f"{employee.name}'s {request.leave_type} leave from {request.start_date} to {request.end_date} "
            f"({request.number})")
    reason = REASONS[request.id % len(REASONS)]
    subject = f"Leave request {request.number} ({employee.name})"
    approve = f"Hello,\n\nI approve {what}.\n\n{manager.name}"
    reject = f"Hello,\n\nPlease reject {what}: {reason}.\n\n{manager.name}"
    retract = (f"Hello,\n\nPlease disregard my earlier approval of {request.number}: reject {what} instead, "
               f"{reason}.\n\n{manager.name}")
    kind = request.id % 3
    bodies = [("approve", approve)] if kind == 0 else [("reject", reject)] if kind == 1 else [
        ("approve", approve), ("reject", retract)]
    return [DeskMessage(key=f"M-{request.id}-{n}", sent_at=(written + timedelta(hours=1 + 3 * (n - 1)))
                        .strftime(TIME_FORMAT), sender=manager, employee=employee, request=request, asks=asks,
                        subject=subject if n == 1 else f"Re: {subject}", body=body)
            for n, (asks, body) in enumerate(bodies, start=1)]


def desk_messages(session: Session) -> list[DeskMessage]:
    """Every message to the desk, newest first (then by key)."""
    employees = {e.id: e for e in session.exec(select(Employee)) if e.id is not None}
    query = (select(LeaveRequest).where(col(LeaveRequest.id) >= FIRST_FILLER_REQUEST,
                                        col(LeaveRequest.submitted_at) >= WRITTEN_FROM)
             .order_by(col(LeaveRequest.id)))
    messages: list[DeskMessage] = []
    for request in session.exec(query):
        employee = employees[request.employee_id]
        manager = employees.get(employee.manager_id) if employee.manager_id is not None else None
        if manager is not None:
            messages.extend(_messages_about(request, employee, manager))
    return sorted(messages, key=lambda m: (m.sent_at, m.key), reverse=True)


def desk_message(session: Session, key: str) -> DeskMessage | None:
    """The message keyed `key` (M-<request id>-<n>), or None: the same one `desk_messages` lists under that key,
    read from its one request, its employee and the manager (not every request and employee)."""
    found = re.fullmatch(r"M-([1-9][0-9]{0,17})-[0-9]+", key)  # a key's id as `desk_messages` writes it
    request = None if found is None else session.get(LeaveRequest, int(found.group(1)))
    if request is None or request.id is None or request.id < FIRST_FILLER_REQUEST or \
            not request.submitted_at >= WRITTEN_FROM:
        return None
    employee = session.get(Employee, request.employee_id)
    manager = None if employee is None or employee.manager_id is None else session.get(Employee, employee.manager_id)
    if employee is None or manager is None:
        return None
    return next((message for message in _messages_about(request, employee, manager) if message.key == key), None)
