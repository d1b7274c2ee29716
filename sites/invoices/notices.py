"""The vendor notices inbox: credits vendors announce off open invoices, each to be applied once to the invoice's
payable record (its total goes down by the credit) and then marked processed.

Seeded after all the filler from the same generator (nothing else draws from it afterwards), so adding notices
changed no row of the other tables for any seed: every seed's invoices, lines and payables are what they were.
"""

from __future__ import annotations

import random
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session, col, select

from sites.invoices.models import METADATA, Invoice, Payable

NOTICES = (30, 40)
"""How many notices a seed draws (inclusive range), of distinct open invoices that have exactly one record."""


def seed_notices(session: Session, rng: random.Random) -> None:
    """Inserts the notices: for a sample of the open invoices with one payable record, a credit in whole 5.00s up
    to half the record's total, received over the last days of February, numbered N-501 on in received order."""
    open_numbers = set(session.exec(select(Invoice.number).where(Invoice.status == "open")).all())
    payables = session.exec(select(Payable).order_by(col(Payable.id))).all()
    per_invoice: dict[str, list[Payable]] = {}
    for payable in payables:
        per_invoice.setdefault(payable.invoice_number, []).append(payable)
    candidates = [found[0] for number, found in per_invoice.items()
                  if number in open_numbers and len(found) == 1 and found[0].total_cents >= 2000]
    chosen = rng.sample(candidates, min(len(candidates), rng.randint(*NOTICES)))
    drafts: list[dict[str, Any]] = []
    for payable in chosen:
        credit = rng.randint(1, max(1, min(payable.total_cents // 2, 60000) // 500)) * 500
        received = f"2026-02-{rng.randint(20, 28):02d} {rng.randint(8, 17):02d}:{rng.randrange(0, 60, 5):02d}"
        drafts.append({"received_at": received, "vendor": payable.vendor, "invoice_number": payable.invoice_number,
                       "credit_cents": credit, "status": "new", "processed_at": None})
    drafts.sort(key=lambda draft: (draft["received_at"], draft["invoice_number"]))
    for notice_id, draft in enumerate(drafts, 1):
        draft.update(id=notice_id, number=f"N-{500 + notice_id}")
    if drafts:
        session.connection().execute(insert(METADATA.tables["vendor_notice"]), drafts)
