"""The helpdesk's tables. Money is integer cents; times are `YYYY-MM-DD HH:MM` text (see clock)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

REFUND_POLICY_VERSION = "2026-03"
"""The refund policy in force; approvals issued under another version are not honoured."""

TICKET_STATUSES = ("open", "pending", "solved")
TICKET_PRIORITIES = ("low", "normal", "high")
CURRENCIES = ("EUR", "USD")
ORDER_STATUSES = ("delivered", "partially_refunded", "refunded")
CUSTOMER_TIERS = ("standard", "premium")
ESCALATION_QUEUES = ("Billing disputes", "Refund approvals", "Account security")
"""The human queues a ticket can be escalated to; the Escalations page states which cases go where."""
ESCALATION_STATUSES = ("waiting", "answered")
FOLLOW_UP_KINDS = ("notify-customer", "await-review", "reconcile-status")
"""Unfinished work: a customer to tell, a human review to wait for, a status to check."""
FOLLOW_UP_STATUSES = ("open", "done", "cancelled")


class HelpdeskTable(SQLModel, registry=registry()):
    """Base of the helpdesk tables: its own registry keeps them apart from other sites' tables."""


class Customer(HelpdeskTable, table=True):
    __tablename__ = "customer"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    email: str
    tier: str
    """One of CUSTOMER_TIERS."""


class Order(HelpdeskTable, table=True):
    __tablename__ = "order"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    customer_id: int = Field(foreign_key="customer.id")
    total_cents: int
    currency: str
    status: str
    """One of ORDER_STATUSES."""
    placed_at: str


class Ticket(HelpdeskTable, table=True):
    __tablename__ = "ticket"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    customer_id: int = Field(foreign_key="customer.id")
    order_id: int | None = Field(default=None, foreign_key="order.id")
    subject: str
    body: str
    status: str
    priority: str
    updated_at: str


class RefundApproval(HelpdeskTable, table=True):
    __tablename__ = "refund_approval"

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(unique=True)
    order_id: int = Field(foreign_key="order.id")
    approver: str
    amount_cents: int
    currency: str
    expires_at: str
    policy_version: str
    status: str
    """active or used."""


class Refund(HelpdeskTable, table=True):
    __tablename__ = "refund"

    id: int | None = Field(default=None, primary_key=True)
    order_id: int = Field(foreign_key="order.id")
    amount_cents: int
    currency: str
    reason: str
    method: str
    """approval (bound to a refund approval) or goodwill (no approval)."""
    approval_id: int | None = Field(default=None, foreign_key="refund_approval.id")
    status: str
    created_at: str


class Notification(HelpdeskTable, table=True):
    __tablename__ = "notification"

    id: int | None = Field(default=None, primary_key=True)
    message_id: str
    customer_id: int = Field(foreign_key="customer.id")
    ticket_id: int | None = Field(default=None, foreign_key="ticket.id")
    subject: str
    body: str
    sent_at: str


class Escalation(HelpdeskTable, table=True):
    """A ticket handed to a human queue. Humans answer it; the agent can only hand over."""

    __tablename__ = "escalation"

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(unique=True)
    ticket_id: int = Field(foreign_key="ticket.id")
    queue: str
    reason: str
    status: str
    """One of ESCALATION_STATUSES: waiting (for a human) or answered."""
    created_at: str


class FollowUp(HelpdeskTable, table=True):
    """Unfinished work. It stays open until someone marks it done or cancels it with a note;
    nothing else (not even sending the notification it asks for) closes it."""

    __tablename__ = "follow_up"

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(unique=True)
    ticket_id: int | None = Field(default=None, foreign_key="ticket.id")
    order_id: int | None = Field(default=None, foreign_key="order.id")
    kind: str
    """One of FOLLOW_UP_KINDS."""
    description: str
    status: str
    """One of FOLLOW_UP_STATUSES."""
    created_at: str
    closed_at: str | None = None
    note: str = ""
    """Why it was cancelled (required for a cancel)."""


class ApprovalRequest(HelpdeskTable, table=True):
    """A refund approval the desk asked a human for (sites/helpdesk/approvals.py says how it is answered).

    It records what was asked (amount, currency, reason), who answers and under which policy, the approval's expiry
    should it be approved, and the order's facts it was asked for: a change of any of them since invalidates it."""

    __tablename__ = "approval_request"

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(unique=True)
    order_id: int = Field(foreign_key="order.id")
    amount_cents: int
    currency: str
    reason: str
    approver: str
    policy_version: str
    requested_at: str
    expires_at: str
    """When an approval given for it lapses."""
    order_status: str
    order_total_cents: int
    order_currency: str
    """The order's facts when it was asked: an approval holds for the order as it was."""
    follow_up_id: int | None = Field(default=None, foreign_key="follow_up.id")
    """The await-review follow-up that waits for its answer."""
    status: str
    """What the desk's own requests wrote: requested, or used (by `refund_id`)."""
    refund_id: int | None = Field(default=None, foreign_key="refund.id")


class ApprovalAnswer(HelpdeskTable, table=True):
    """A human's answer to an approval request, given at `answered_at`: before then it is not shown or honoured.
    Only a request's first answer counts; any later one is a duplicate, shown as ignored."""

    __tablename__ = "approval_answer"

    id: int | None = Field(default=None, primary_key=True)
    request_id: int = Field(foreign_key="approval_request.id")
    decision: str
    """approved or denied."""
    note: str
    answered_at: str


CARRIER_EVENTS = ("in_transit", "delivered")
CARRIER_UPDATE_STATUSES = ("new", "processed")


class CarrierUpdate(HelpdeskTable, table=True):
    """An incoming message from the carrier about an order's parcel (issue 42: events the desk processes). It says
    what happened (`event`), where (`detail`) and when (`happened_at`); it arrived at `received_at`. The desk marks
    it processed once it has acted on it; a processed update cannot be processed again."""

    __tablename__ = "carrier_update"

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(unique=True)
    order_id: int = Field(foreign_key="order.id")
    event: str
    """One of CARRIER_EVENTS."""
    detail: str
    happened_at: str
    received_at: str
    status: str
    """One of CARRIER_UPDATE_STATUSES."""
    processed_at: str | None = None


METADATA = HelpdeskTable.metadata
