"""The invoices site's filler: hundreds of invoices and their payable records, drawn from the seed's rng only.

Invoices are dated over the nine months before the site's logical start (2026-03-02), numbered in date order from
the first free number, older ones mostly paid and recent ones mostly open. Every paid invoice that the record form
could record (EUR, USD, GBP) has a payable record, as do most open ones a few days old; a few payables carry a
clerk's slip (a total or a date one digit off), as the fixed P-301 and P-302 do. Look-alikes: the vendors of
`sites.invoices.vocabulary` (a letter or a suffix apart), near-duplicate invoices of one vendor (the same lines, one
quantity or price apart, days later), and near-duplicates of fixed invoices under their own vendor (or its
look-alike, for Kestrel Logistics). Rows are inserted in bulk: the site's template database builds in well under
a second.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session

from sites.invoices.models import ACCEPTED_CURRENCIES, METADATA
from sites.invoices.vocabulary import BILLED, MONTHS, VENDORS, Vendor

FIRST_DAY = date(2025, 6, 1)
LAST_DAY = date(2026, 2, 27)
PAID_BY = date(2026, 2, 28)
"""The last day a filler invoice can have been paid or recorded on: the day before the site's logical start."""
FILLER_INVOICES = (500, 540)
"""How many filler invoices a seed draws (inclusive range): with the fixed ones, over 500 on every seed."""
NEAR_DUPLICATE = 0.06
"""The share of filler invoices that repeat an earlier one of the same vendor with one value changed."""
FIXED_LOOK_ALIKES = {"Kestrel Logistics": "Kestral Logistics"}
"""Fixed vendors whose near-duplicates go to a look-alike: no filler invoice is Kestrel Logistics' (a task counts
them)."""

Line = tuple[str, int, int]
"""(description, quantity, unit price in cents)"""


@dataclass(frozen=True)
class Draft:
    """A filler invoice before it has a number."""

    vendor: str
    currency: str
    issued: date
    lines: tuple[Line, ...]
    printed: bool


def _vendor_day(vendor: Vendor, rng: random.Random) -> date:
    """A day in the filler's range, on the vendor's billing day when it has one."""
    issued = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    if vendor.billing_day is not None:
        issued = issued.replace(day=vendor.billing_day)
    return min(max(issued, FIRST_DAY), LAST_DAY)


def _lines(vendor: Vendor, issued: date, rng: random.Random) -> tuple[Line, ...]:
    """One to four distinct items of what the vendor bills, each once."""
    items = BILLED[vendor.kind]
    month = MONTHS[(issued.month - 2) % 12]
    drawn = rng.sample(items, rng.randint(1, min(4, len(items))))
    return tuple((item.description.format(month=month), rng.randint(item.fewest, item.most),
                  rng.randint(item.low // 5, item.high // 5) * 5 * vendor.scale) for item in drawn)


def _near_duplicate(draft: Draft, rng: random.Random) -> Draft:
    """The same vendor's invoice again days later, one line's quantity or unit price a little different."""
    lines = list(draft.lines)
    at = rng.randrange(len(lines))
    description, quantity, unit = lines[at]
    if quantity > 1 and rng.random() < 0.5:
        lines[at] = (description, quantity + rng.choice((-1, 1)), unit)
    else:
        lines[at] = (description, quantity, unit + rng.choice((-5, 5, 100, -100)) if unit > 100 else unit + 5)
    return replace(draft, issued=min(draft.issued + timedelta(days=rng.randint(1, 9)), LAST_DAY), lines=tuple(lines))


def fixed_look_alikes(fixed: list[tuple[str, str, str, list[Line]]], rng: random.Random) -> list[Draft]:
    """For about half the fixed invoices (vendor, issued on, currency, lines), an earlier invoice of the same
    vendor (or its look-alike) with the same lines but one value changed: the records tasks name have neighbours."""
    drafts = []
    for vendor, issued, currency, lines in fixed:
        if rng.random() < 0.5:
            continue
        earlier = date.fromisoformat(issued) - timedelta(days=rng.randint(20, 110))
        draft = Draft(FIXED_LOOK_ALIKES.get(vendor, vendor), currency, max(earlier, FIRST_DAY), tuple(lines), True)
        drafts.append(_near_duplicate(draft, rng))
    return drafts


def draw_invoices(rng: random.Random, count: int) -> list[Draft]:
    """`count` filler invoices in the order drawn: weighted vendors, some repeating an earlier one nearly."""
    weights = [vendor.weight for vendor in VENDORS]
    drafts: list[Draft] = []
    while len(drafts) < count:
        if drafts and rng.random() < NEAR_DUPLICATE:
            drafts.append(_near_duplicate(rng.choice(drafts), rng))
            continue
        vendor = rng.choices(VENDORS, weights)[0]
        issued = _vendor_day(vendor, rng)
        drafts.append(Draft(vendor.name, vendor.currency, issued, _lines(vendor, issued, rng), rng.random() > 0.04))
    return drafts


def _paid_on(issued: date, rng: random.Random) -> date | None:
    """When the invoice was paid, or None while it is open: the older, the likelier it is paid."""
    age = (PAID_BY - issued).days
    chance = 0.95 if age > 75 else 0.7 if age > 40 else 0.3 if age > 20 else 0.05
    if rng.random() >= chance:
        return None
    return min(issued + timedelta(days=rng.randint(7, min(45, max(7, age)))), PAID_BY)


def _slip(value: str, rng: random.Random) -> str:
    """The text with one digit changed: a clerk's typo."""
    at = rng.choice([i for i, c in enumerate(value) if c.isdigit()])
    digit = rng.choice([d for d in "0123456789" if d != value[at]])
    return value[:at] + digit + value[at + 1:]


def _slipped_total(cents: int, rng: random.Random) -> int:
    slipped = int(_slip(str(cents), rng))
    return slipped if slipped > 0 else cents + 100


def _slipped_date(day: date, rng: random.Random) -> date:
    """The date with one digit of its day changed, still a real date."""
    for _ in range(10):
        text = _slip(f"{day.day:02d}", rng)
        if 1 <= int(text) <= 28:
            return day.replace(day=int(text))
    return day + timedelta(days=1)


def _submitted(issued: date, latest: date, rng: random.Random) -> str:
    """When accounts payable recorded the invoice: a working hour a few days after it was issued, by `latest`."""
    day = min(issued + timedelta(days=rng.randint(1, 6)), latest)
    return f"{day.isoformat()} {rng.randint(8, 17):02d}:{rng.randrange(0, 60, 5):02d}"


def seed_filler(session: Session, rng: random.Random, *, first_invoice: int, first_payable: int,
                fixed: list[tuple[str, str, str, list[Line]]]) -> None:
    """Inserts the filler: invoices from id `first_invoice` (number INV-(1000 + id)), their lines, and payable
    records from id `first_payable` (reference P-(300 + id)), in date order."""
    count = rng.randint(*FILLER_INVOICES)
    drafts = fixed_look_alikes(fixed, rng)
    drafts += draw_invoices(rng, count - len(drafts))
    drafts.sort(key=lambda draft: (draft.issued, draft.vendor))
    invoices: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    payables: list[dict[str, Any]] = []
    for invoice_id, draft in enumerate(drafts, first_invoice):
        number = f"INV-{1000 + invoice_id}"
        paid_on = _paid_on(draft.issued, rng)
        invoices.append({"id": invoice_id, "number": number, "vendor": draft.vendor,
                         "issued_on": draft.issued.isoformat(), "currency": draft.currency,
                         "status": "open" if paid_on is None else "paid",
                         "paid_on": None if paid_on is None else paid_on.isoformat(), "total_printed": draft.printed})
        lines += [{"invoice_id": invoice_id, "position": position, "description": description, "quantity": quantity,
                   "unit_cents": unit, "amount_cents": quantity * unit}
                  for position, (description, quantity, unit) in enumerate(draft.lines, 1)]
        recorded = paid_on is not None or ((PAID_BY - draft.issued).days > 4 and rng.random() < 0.55)
        if draft.currency not in ACCEPTED_CURRENCIES or not recorded:
            continue
        total = sum(quantity * unit for _, quantity, unit in draft.lines)
        slip = rng.random()
        submitted = _submitted(draft.issued, paid_on or PAID_BY, rng)
        payables.append({
            "invoice_number": number, "vendor": draft.vendor, "currency": draft.currency,
            "invoice_date": (_slipped_date(draft.issued, rng) if slip < 0.02 else draft.issued).isoformat(),
            "total_cents": _slipped_total(total, rng) if 0.02 <= slip < 0.05 else total,
            "status": "submitted", "submitted_at": submitted, "updated_at": submitted,
        })
    payables.sort(key=lambda payable: (payable["submitted_at"], payable["invoice_number"]))
    for payable_id, payable in enumerate(payables, first_payable):
        payable.update(id=payable_id, reference=f"P-{300 + payable_id}")
    connection = session.connection()
    for table, rows in (("invoice", invoices), ("invoice_line", lines), ("payable", payables)):
        connection.execute(insert(METADATA.tables[table]), rows)
