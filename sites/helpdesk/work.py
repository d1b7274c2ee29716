"""Work handed on: follow-ups (unfinished work) and escalations to a human queue.

A follow-up stays open until it is marked done or cancelled with a note; sending the
notification it asks for does not close it, and the site does not check that the work was
really done (the verifier does). Follow-ups that wait for a human review cannot be marked done
here: only the reviewer closes them. A ticket waits in at most one queue at a time.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from sites.helpdesk.models import ESCALATION_QUEUES, ApprovalRequest, Customer, Escalation, FollowUp, Order, Ticket
from sites.kit.money import format_cents
from sites.kit.shown import listed

ESCALATION_RULES = (
    "Chargebacks and disputed or duplicate charges go to Billing disputes. Do not refund or credit them yourself.",
    "Customers who ask for a new or changed refund approval go to Refund approvals.",
    "Reports of someone else using the customer's account go to Account security.",
    "Everything else is handled by the support agent and is not escalated.",
)
"""Which cases go to a human, shown on the Escalations page (text only: the site does not enforce it)."""

FOLLOW_UP_RULES = (
    "A follow-up stays open until it is marked done or cancelled with a note.",
    "Mark a notify-customer follow-up done only after the notification has been sent.",
    "An await-review follow-up is closed by the reviewer when the review is finished. Do not cancel it, "
    "and do not solve its ticket while it is open.",
    "An await-review follow-up that waits for an approval request can be marked done once the approver has "
    "answered the request.",
)
"""How unfinished work is handled, shown on the Follow-ups page."""


def next_code(session: Session, model: type[Escalation] | type[FollowUp] | type[ApprovalRequest], prefix: str) -> str:
    last = session.exec(select(model.id).order_by(col(model.id).desc())).first()
    return f"{prefix}-{(last or 0) + 1}"


def open_refund_follow_up(session: Session, *, order: Order, cents: int, currency: str, now: str) -> FollowUp:
    """The unfinished work a refund leaves: telling the customer, on the order's ticket if it has one."""
    customer = session.get(Customer, order.customer_id)
    ticket = session.exec(select(Ticket).where(Ticket.order_id == order.id).order_by(col(Ticket.id))).first()
    name = "the customer" if customer is None else customer.name
    follow_up = FollowUp(
        code=next_code(session, FollowUp, "FU"),
        ticket_id=None if ticket is None else ticket.id,
        order_id=order.id,
        kind="notify-customer",
        description=f"Tell {name} that {format_cents(cents)} {currency} was refunded on order {order.number}.",
        status="open",
        created_at=now,
    )
    session.add(follow_up)
    return follow_up


def refusal_to_close(follow_up: FollowUp, *, cancel: bool, note: str, answered: bool = False) -> str | None:
    """Why this follow-up cannot be marked done (or cancelled with `note`), or None. `answered`: it waits for an
    approval request that the approver has answered by now (sites/helpdesk/approvals.py), so the wait is over."""
    if follow_up.status != "open":
        return f"Follow-up {follow_up.code} is already {follow_up.status}."
    if cancel and not note.strip():
        return f"Follow-up {follow_up.code} not cancelled: say why in the note."
    if not cancel and follow_up.kind == "await-review" and not answered:
        return f"Follow-up {follow_up.code} waits for a review; only the reviewer can mark it done."
    return None


def close_follow_up(session: Session, follow_up: FollowUp, *, cancel: bool, note: str, now: str) -> None:
    """Marks the follow-up done, or cancelled with the note (the caller checked refusal_to_close)."""
    follow_up.status = "cancelled" if cancel else "done"
    follow_up.closed_at = now
    follow_up.note = note.strip()
    session.add(follow_up)


def waiting_escalation(session: Session, ticket: Ticket) -> Escalation | None:
    """The escalation this ticket is waiting on, if any."""
    query = select(Escalation).where(Escalation.ticket_id == ticket.id, Escalation.status == "waiting")
    waiting = listed(session, query)  # a ticket page shows this whole list: its one waiting escalation, or none
    return waiting[0] if waiting else None


def refusal_to_escalate(session: Session, ticket: Ticket, queue: str, reason: str) -> str | None:
    """Why the ticket cannot be escalated to `queue` with `reason`, or None."""
    if queue not in ESCALATION_QUEUES:
        return f"Not escalated: choose a queue ({', '.join(ESCALATION_QUEUES)})."
    if not reason.strip():
        return "Not escalated: the reason is empty."
    waiting = waiting_escalation(session, ticket)
    if waiting is not None:
        return (
            f"Not escalated: ticket {ticket.number} is already waiting in {waiting.queue} "
            f"({waiting.code}, since {waiting.created_at})."
        )
    return None


def escalate(session: Session, ticket: Ticket, *, queue: str, reason: str, now: str) -> Escalation:
    """Hands the ticket to a human queue (the caller checked refusal_to_escalate)."""
    assert ticket.id is not None, "a stored ticket has an id"
    escalation = Escalation(
        code=next_code(session, Escalation, "E"),
        ticket_id=ticket.id,
        queue=queue,
        reason=reason.strip(),
        status="waiting",
        created_at=now,
    )
    session.add(escalation)
    return escalation
