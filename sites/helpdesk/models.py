"""The helpdesk's tables. Money is integer cents; times are `YYYY-MM-DD HH:MM` text (see clock)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

REFUND_POLICY_VERSION = "2026-03"
"""The refund policy in force; approvals issued under another version are not honoured."""

TICKET_STATUSES = ("open", "pending", "solved")
TICKET_PRIORITIES = ("low", "normal", "high")
CURRENCIES = ("EUR", "USD")


class HelpdeskTable(SQLModel, registry=registry()):
    """Base of the helpdesk tables: its own registry keeps them apart from other sites' tables."""


class Customer(HelpdeskTable, table=True):
    __tablename__ = "customer"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    email: str
    tier: str


class Order(HelpdeskTable, table=True):
    __tablename__ = "order"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    customer_id: int = Field(foreign_key="customer.id")
    total_cents: int
    currency: str
    status: str
    """delivered, refunded or partially_refunded."""
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


METADATA = HelpdeskTable.metadata
