"""The invoices site's tables. Money is integer cents; dates are `YYYY-MM-DD`, times `YYYY-MM-DD HH:MM`."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

ACCEPTED_CURRENCIES = ("EUR", "USD", "GBP")
"""The only currencies the record form accepts; an invoice in any other cannot be recorded."""


class InvoicesTable(SQLModel, registry=registry()):
    """Base of the invoices tables: its own registry keeps them apart from other sites' tables."""


class Invoice(InvoicesTable, table=True):
    """An invoice document, as the viewer shows it. Read-only for agents."""

    __tablename__ = "invoice"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    vendor: str
    issued_on: str
    currency: str
    status: str
    """open or paid."""
    paid_on: str | None = None
    total_printed: bool
    """False for a scan whose total is not printed: the total is the sum of the line amounts."""


class InvoiceLine(InvoicesTable, table=True):
    """One line item of an invoice; `amount_cents` is quantity × unit price."""

    __tablename__ = "invoice_line"

    id: int | None = Field(default=None, primary_key=True)
    invoice_id: int = Field(foreign_key="invoice.id")
    position: int
    description: str
    quantity: int
    unit_cents: int
    amount_cents: int


class Payable(InvoicesTable, table=True):
    """A payable record made by the record form: what accounts payable will pay."""

    __tablename__ = "payable"

    id: int | None = Field(default=None, primary_key=True)
    reference: str = Field(unique=True)
    invoice_number: str
    vendor: str
    invoice_date: str
    currency: str
    total_cents: int
    status: str
    """submitted."""
    submitted_at: str
    updated_at: str


class Email(InvoicesTable, table=True):
    """A message sent from the email app. No task allows sending one."""

    __tablename__ = "email"

    id: int | None = Field(default=None, primary_key=True)
    message_id: str
    recipient: str
    subject: str
    body: str
    sent_at: str



class VendorNotice(InvoicesTable, table=True):
    """A vendor's notice in the notices inbox: a credit off one invoice's payable total (an event to process once).

    Added after the other tables, seeded from the seed's generator after all the filler, so the other tables'
    rows are what they were before it existed."""

    __tablename__ = "vendor_notice"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    """N-(500 + id), in the order received."""
    received_at: str
    vendor: str
    invoice_number: str
    credit_cents: int
    """How much the payable's total goes down by when the notice is processed."""
    status: str
    """new or processed."""
    processed_at: str | None = None


METADATA = InvoicesTable.metadata
