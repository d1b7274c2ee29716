"""The ledger's tables: events in the response queue, ledger entries, deliveries, dispatches, checkpoints.

Money is integer cents; times are `YYYY-MM-DD HH:MM` text from the logical clock.
"""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

EVENT_KINDS = ("payment", "delivery-request")
EVENT_STATUSES = ("queued", "processed", "held")
DELIVERY_STATUSES = ("pending", "delivered")
DISPATCH_OUTCOMES = ("sent", "duplicate", "stale")
CHECKPOINT_STATUSES = ("complete", "partial")
ACCOUNTS = ("ACC-100 Operations", "ACC-200 Northwind Traders", "ACC-210 Harbor Freight", "ACC-300 Suspense")
DESTINATIONS = ("Dock 1", "Dock 2", "Dock 3", "Dock 4", "Dock 5", "Dock 6")
CURRENCIES = ("EUR", "USD")
PERIOD_OPENED = "2026-02-01 08:00"
"""When the current period opened (its opening balances): batches whose every event was processed before it are
closed history; the response queue and the checkpoint form show the period's batches."""


class LedgerTable(SQLModel, registry=registry()):
    """Base of the ledger tables: its own registry keeps them apart from other sites' tables."""


class Event(LedgerTable, table=True):
    """An event in the response queue; only the "process event" procedure turns it into records."""

    __tablename__ = "event"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    batch: str
    kind: str
    """payment (posts a ledger entry) or delivery-request (opens a delivery)."""
    summary: str
    account: str | None = None
    amount_cents: int | None = None
    currency: str | None = None
    recipient: str | None = None
    destination: str | None = None
    request_id: str | None = None
    depends_on_id: int | None = Field(default=None, foreign_key="event.id")
    """The event that must be processed before this one, if any."""
    status: str
    """queued, processed or held (held events cannot be processed)."""
    processed_at: str | None = None


class Entry(LedgerTable, table=True):
    """A ledger entry: posted by processing a payment event, or typed in by hand (event_id empty)."""

    __tablename__ = "entry"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    account: str
    amount_cents: int
    currency: str
    memo: str
    event_id: int | None = Field(default=None, foreign_key="event.id")
    created_at: str


class Delivery(LedgerTable, table=True):
    """A delivery that must happen exactly once: one request id, and a record version for every change."""

    __tablename__ = "delivery"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    request_id: str = Field(unique=True)
    recipient: str
    destination: str
    status: str
    """pending or delivered."""
    version: int
    event_id: int | None = Field(default=None, foreign_key="event.id")
    updated_at: str


class Dispatch(LedgerTable, table=True):
    """One submission of a delivery's dispatch: sent, or refused as a duplicate or a stale version."""

    __tablename__ = "dispatch"

    id: int | None = Field(default=None, primary_key=True)
    delivery_id: int = Field(foreign_key="delivery.id")
    request_id: str
    version: int
    outcome: str
    submitted_at: str


class Checkpoint(LedgerTable, table=True):
    """The operator's checkpoint of a batch: what was processed and what is unfinished at that time."""

    __tablename__ = "checkpoint"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    batch: str
    status: str
    """complete or partial."""
    processed_count: int
    unfinished_count: int
    note: str
    recorded_at: str


class WriteOffApproval(LedgerTable, table=True):
    """An approver's leave to write an uncollectable invoice off: up to a limit, on one account, until a date.

    Only the approval's own "Post write-off" form books a write-off under it (procedures.py `refusal_to_write_off`):
    a revoked, expired or already used approval, or an amount above its limit, is refused without a change."""

    __tablename__ = "write_off_approval"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    invoice: str
    customer: str
    account: str
    limit_cents: int
    currency: str
    approver: str
    status: str
    """approved, revoked or used (an approved one past its valid-until date has expired)."""
    valid_until: str
    """The last day it may be used, `YYYY-MM-DD`."""
    used_at: str | None = None


WRITE_OFF_STATUSES = ("approved", "revoked", "used")

METADATA = LedgerTable.metadata
