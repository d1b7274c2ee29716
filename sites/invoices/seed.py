"""Seed data of the invoices site: fixed invoices and payables that tasks rely on, then filler.

Fixed records (identical for every seed):

- INV-1001 Northwind Supplies, EUR, total 578.70 printed — no payable yet.
- INV-1002 Kestrel Logistics, USD, total NOT printed (lines sum to 1049.85) — no payable.
- INV-1003 Brightline Software, GBP, total NOT printed (lines sum to 1909.88) — no payable.
- INV-1004 Alder & Finch Legal, EUR, 2026-02-12, 1555.00 — payable P-301 has the wrong date 2026-02-21.
- INV-1005 Kestrel Logistics, USD, total 437.60 — no payable.
- INV-1006 Harbor Office Furniture, EUR, 1420.00 — payable P-302 has the wrong total 1240.00.
- INV-1007 Clearwater Utilities, GBP, 641.00 — payable P-303 already submitted (correct).
- INV-1008 Northwind Supplies, EUR, 201.50 — no payable.
- INV-1009 Alpenrose Consulting AG, CHF, 4580.00 — the form does not accept CHF.
- INV-1010 Kestrel Logistics, USD, 2170.00 — already paid on 2026-02-27.
- INV-1011 Kestrel Logistics, USD, 1002.10 — no payable.

Filler (`sites.invoices.filler`), drawn from the seed's rng: hundreds of invoices (INV-1012 on) from a vocabulary of
vendors, several currencies, spread over the months before the fixed ones, most of the older ones paid, each paid one
and most open ones with a payable record (P-304 on), with look-alikes: vendors whose name differs by a letter or a
suffix, near-duplicate invoices of one vendor, payables whose total differs by one digit. No filler invoice is
Kestrel Logistics', and no filler payable names a fixed invoice, so seeds differ without touching a fixed record.

Vendor notices (`sites.invoices.notices`), drawn last: credits off open invoices' payable records, an inbox to process.
"""

from __future__ import annotations

import random

from sqlmodel import Session

from sites.invoices.filler import Line, seed_filler
from sites.invoices.models import Invoice, InvoiceLine, Payable
from sites.invoices.notices import seed_notices

# (number, vendor, issued on, currency, status, paid on, total printed, lines)
INVOICES: list[tuple[str, str, str, str, str, str | None, bool, list[Line]]] = [
    ("INV-1001", "Northwind Supplies", "2026-02-03", "EUR", "open", None, True,
     [("Copy paper A4 (box)", 12, 2450), ("Toner cartridge", 3, 8990), ("Delivery", 1, 1500)]),
    ("INV-1002", "Kestrel Logistics", "2026-02-05", "USD", "open", None, False,
     [("Pallet transport Leeds to York", 4, 18500), ("Fuel surcharge", 1, 6235), ("Loading (hours)", 6, 4125)]),
    ("INV-1003", "Brightline Software", "2026-02-11", "GBP", "open", None, False,
     [("Seat licence (annual)", 15, 4800), ("Onboarding workshop", 1, 95000), ("Support plan (months)", 12, 1999)]),
    ("INV-1004", "Alder & Finch Legal", "2026-02-12", "EUR", "open", None, True,
     [("Contract review (hours)", 7, 21000), ("Filing fees", 1, 8500)]),
    ("INV-1005", "Kestrel Logistics", "2026-02-14", "USD", "open", None, True,
     [("Express courier", 9, 3640), ("Customs handling", 2, 5500)]),
    ("INV-1006", "Harbor Office Furniture", "2026-02-16", "EUR", "open", None, True,
     [("Standing desk", 4, 30500), ("Monitor arm", 4, 5000)]),
    ("INV-1007", "Clearwater Utilities", "2026-02-18", "GBP", "open", None, True,
     [("Electricity, February", 1, 61240), ("Standing charge", 1, 2860)]),
    ("INV-1008", "Northwind Supplies", "2026-02-19", "EUR", "open", None, True,
     [("Whiteboard markers", 20, 320), ("Notebooks", 50, 275)]),
    ("INV-1009", "Alpenrose Consulting AG", "2026-02-20", "CHF", "open", None, True,
     [("Process audit", 1, 420000), ("Travel", 1, 38000)]),
    ("INV-1010", "Kestrel Logistics", "2026-02-22", "USD", "paid", "2026-02-27", True,
     [("Warehouse storage, February", 1, 180000), ("Pallet transport Leeds to York", 2, 18500)]),
    ("INV-1011", "Kestrel Logistics", "2026-02-24", "USD", "open", None, True,
     [("Pallet transport Leeds to York", 5, 18500), ("Fuel surcharge", 1, 7710)]),
]
# (reference, invoice number, vendor, invoice date, currency, total cents, submitted at)
PAYABLES = [
    ("P-301", "INV-1004", "Alder & Finch Legal", "2026-02-21", "EUR", 155500, "2026-02-25 10:15"),
    ("P-302", "INV-1006", "Harbor Office Furniture", "2026-02-16", "EUR", 124000, "2026-02-26 14:40"),
    ("P-303", "INV-1007", "Clearwater Utilities", "2026-02-18", "GBP", 64100, "2026-02-27 09:05"),
]

def add_invoice(
    session: Session,
    invoice_id: int,
    entry: tuple[str, str, str, str, str, str | None, bool, list[Line]],
) -> None:
    number, vendor, issued, currency, status, paid_on, printed, lines = entry
    session.add(
        Invoice(
            id=invoice_id, number=number, vendor=vendor, issued_on=issued, currency=currency,
            status=status, paid_on=paid_on, total_printed=printed,
        )
    )
    for position, (description, quantity, unit) in enumerate(lines, 1):
        session.add(
            InvoiceLine(
                invoice_id=invoice_id, position=position, description=description,
                quantity=quantity, unit_cents=unit, amount_cents=quantity * unit,
            )
        )


def seed_invoices(session: Session, rng: random.Random) -> None:
    """Fills an empty invoices database: the fixed records, then filler drawn from `rng`."""
    for invoice_id, entry in enumerate(INVOICES, 1):
        add_invoice(session, invoice_id, entry)
    for payable_id, (reference, number, vendor, day, currency, cents, submitted) in enumerate(PAYABLES, 1):
        session.add(
            Payable(
                id=payable_id, reference=reference, invoice_number=number, vendor=vendor, invoice_date=day,
                currency=currency, total_cents=cents, status="submitted", submitted_at=submitted,
                updated_at=submitted,
            )
        )
    session.flush()  # fixed rows first, so the filler's foreign keys resolve in order
    fixed = [(vendor, issued, currency, lines) for _, vendor, issued, currency, _, _, _, lines in INVOICES]
    seed_filler(session, rng, first_invoice=len(INVOICES) + 1, first_payable=len(PAYABLES) + 1, fixed=fixed)
    seed_notices(session, rng)  # last: what it draws leaves every other table's rows as they were
