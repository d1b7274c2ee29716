"""The record form's rules: what a payable record must hold, and what submitting or correcting changes.

Enforced on the server: a vendor, an invoice number like INV-1001, a real date (YYYY-MM-DD), a
currency the form accepts (EUR, USD, GBP) and a positive total. Not refused but detectable from the
journal: a second record for the same invoice (a duplicate submission) and a record for an invoice
that is already paid — the tasks' checks count payable rows per invoice number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from sqlmodel import Session, col, select

from sites.invoices.models import ACCEPTED_CURRENCIES, Payable
from sites.kit.money import parse_cents

_INVOICE_NUMBER = re.compile(r"^INV-\d{4}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class RecordFields:
    """The record form's fields as typed."""

    vendor: str = ""
    invoice_number: str = ""
    invoice_date: str = ""
    currency: str = ""
    total: str = ""


@dataclass(frozen=True)
class ValidRecord:
    """Record fields that passed every rule."""

    vendor: str
    invoice_number: str
    invoice_date: str
    currency: str
    total_cents: int


def _is_date(text: str) -> bool:
    if not _DATE.match(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def validate(fields: RecordFields) -> ValidRecord | str:
    """The record, or the first rule it breaks as a message the agent reads."""
    vendor, number, day = fields.vendor.strip(), fields.invoice_number.strip(), fields.invoice_date.strip()
    cents = parse_cents(fields.total)
    if not vendor:
        return "Record not saved: the vendor is empty."
    if not _INVOICE_NUMBER.match(number):
        return f'Record not saved: "{number}" is not an invoice number; type it like INV-1001.'
    if not _is_date(day):
        return f'Record not saved: "{day}" is not a date; type it like 2026-02-03.'
    if fields.currency not in ACCEPTED_CURRENCIES:
        return (
            f'Record not saved: currency "{fields.currency}" is not accepted; the form accepts '
            f"{', '.join(ACCEPTED_CURRENCIES)} only."
        )
    if cents is None:
        return f'Record not saved: "{fields.total}" is not an amount; type it like 578.70.'
    if cents <= 0:
        return "Record not saved: the total must be more than 0.00."
    return ValidRecord(vendor, number, day, fields.currency, cents)


def next_reference(session: Session) -> str:
    """The reference of the next payable: P-(300 + next id), e.g. P-318."""
    last = session.exec(select(Payable).order_by(col(Payable.id).desc())).first()
    following = 1 if last is None or last.id is None else last.id + 1
    return f"P-{300 + following}"


def submit(session: Session, record: ValidRecord, now: str) -> Payable:
    """Adds a new payable record (status submitted) to the session."""
    payable = Payable(
        reference=next_reference(session), invoice_number=record.invoice_number, vendor=record.vendor,
        invoice_date=record.invoice_date, currency=record.currency, total_cents=record.total_cents,
        status="submitted", submitted_at=now, updated_at=now,
    )
    session.add(payable)
    return payable


def correct(session: Session, payable: Payable, record: ValidRecord, now: str) -> bool:
    """Sets only the fields that differ (and updated_at); False when nothing differed."""
    changed = False
    for name in ("vendor", "invoice_number", "invoice_date", "currency", "total_cents"):
        value = getattr(record, name)
        if getattr(payable, name) != value:
            setattr(payable, name, value)
            changed = True
    if changed:
        payable.updated_at = now
        session.add(payable)
    return changed
