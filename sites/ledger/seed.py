"""Seed data of the ledger: fixed records that tasks rely on, then seed-dependent filler.

Fixed records (identical for every seed):

* events EV-501..EV-512 (ids 1-12). Batch B-1: EV-501..EV-505, where EV-504 depends on EV-503 and
  EV-505 is a delivery request (REQ-7105). Batch B-2: EV-506..EV-509, where EV-507 depends on
  EV-506, EV-508 is a delivery request (REQ-7108) and EV-509 is already processed. Batch B-3:
  EV-510 processed, EV-511 held by compliance review, EV-512 depends on EV-511.
* entries LE-1001..LE-1004 (ids 1-4; LE-1003 and LE-1004 were posted by EV-509 and EV-510).
* deliveries D-301..D-308 (ids 1-8, request ids REQ-7001..REQ-7008); D-302 and D-303 were
  delivered (one sent dispatch each); D-307 is at record version 3, D-308 at version 2.
* checkpoint CP-1 (batch B-3, partial).

Filler is drawn from the template generator: events EV-520 onwards in batch B-4, deliveries from
D-309 with request ids REQ-8xxx, and entries after LE-1004, so no seed touches a fixed record.
Write-off approvals (AP-601 onwards) are drawn last, after every other table's filler, so adding them changed
nothing that a seed draws for the other tables: five to seven invoices, each with its current approval (approved,
valid into March) and an earlier one for the same invoice, account and currency with another limit (revoked, or
expired in February), listed in a drawn order.
The posted history of the four months before the period (sites/ledger/history.py: about 500 entries, the events of
closed weekly batches that posted most of them, look-alikes of the queue's payments) is drawn after everything else,
so it changed nothing that a seed draws for the tables above.
"""

from __future__ import annotations

import random

from sqlmodel import Session, select

from sites.ledger.history import seed_history
from sites.ledger.models import (
    ACCOUNTS,
    CURRENCIES,
    DESTINATIONS,
    Checkpoint,
    Delivery,
    Dispatch,
    Entry,
    Event,
    WriteOffApproval,
)

# (number, batch, summary, account, amount cents, currency, depends on event id, status, processed at)
PAYMENT_EVENTS: dict[int, tuple[str, str, str, str, int, str, int | None, str, str | None]] = {
    1: ("EV-501", "B-1", "Payment received from Northwind Traders", ACCOUNTS[1], 125000, "EUR", None, "queued", None),
    2: ("EV-502", "B-1", "Payment received from Harbor Freight", ACCOUNTS[2], 8000, "EUR", None, "queued", None),
    3: ("EV-503", "B-1", "Invoice 88 settlement, part 1", ACCOUNTS[0], 30000, "EUR", None, "queued", None),
    4: ("EV-504", "B-1", "Invoice 88 settlement, part 2", ACCOUNTS[0], 45000, "EUR", 3, "queued", None),
    6: ("EV-506", "B-2", "Deposit from Northwind Traders", ACCOUNTS[1], 21000, "USD", None, "queued", None),
    7: ("EV-507", "B-2", "Balance from Northwind Traders", ACCOUNTS[1], 9550, "USD", 6, "queued", None),
    9: (
        "EV-509",
        "B-2",
        "Payment received from Harbor Freight",
        ACCOUNTS[2],
        4000,
        "EUR",
        None,
        "processed",
        "2026-02-27 10:00",
    ),
    10: ("EV-510", "B-3", "Transfer to operations", ACCOUNTS[0], 50000, "EUR", None, "processed", "2026-02-28 09:30"),
    11: ("EV-511", "B-3", "Incoming transfer held by compliance review", ACCOUNTS[3], 99000, "EUR", None, "held", None),
    12: ("EV-512", "B-3", "Release of suspense funds", ACCOUNTS[3], 99000, "EUR", 11, "queued", None),
}
# (number, batch, summary, recipient, destination, request id)
DELIVERY_EVENTS = {
    5: ("EV-505", "B-1", "Delivery requested by Lindqvist Bakery", "Lindqvist Bakery", "Dock 3", "REQ-7105"),
    8: ("EV-508", "B-2", "Delivery requested by Moreau Optics", "Moreau Optics", "Dock 2", "REQ-7108"),
}
# (id, number, account, amount cents, currency, memo, event id, created at)
ENTRIES: list[tuple[int, str, str, int, str, str, int | None, str]] = [
    (1, "LE-1001", ACCOUNTS[0], 1000000, "EUR", "Opening balance", None, "2026-02-01 08:00"),
    (2, "LE-1002", ACCOUNTS[1], 250000, "EUR", "Opening balance", None, "2026-02-01 08:00"),
    (3, "LE-1003", ACCOUNTS[2], 4000, "EUR", "Payment received from Harbor Freight", 9, "2026-02-27 10:00"),
    (4, "LE-1004", ACCOUNTS[0], 50000, "EUR", "Transfer to operations", 10, "2026-02-28 09:30"),
]
# (id, number, request id, recipient, destination, status, version, updated at)
DELIVERIES = [
    (1, "D-301", "REQ-7001", "Okafor Hardware", "Dock 1", "pending", 1, "2026-02-24 09:00"),
    (2, "D-302", "REQ-7002", "Silva Imports", "Dock 2", "delivered", 2, "2026-02-26 14:00"),
    (3, "D-303", "REQ-7003", "Brennan & Sons", "Dock 4", "delivered", 2, "2026-02-26 15:30"),
    (4, "D-304", "REQ-7004", "Haddad Textiles", "Dock 5", "pending", 1, "2026-02-25 11:15"),
    (5, "D-305", "REQ-7005", "Ito Ceramics", "Dock 1", "pending", 1, "2026-02-25 13:40"),
    (6, "D-306", "REQ-7006", "Novak Garden Supply", "Dock 2", "pending", 1, "2026-02-26 10:05"),
    (7, "D-307", "REQ-7007", "Duarte Marine", "Dock 6", "pending", 3, "2026-02-27 16:20"),
    (8, "D-308", "REQ-7008", "Kowalski Books", "Dock 3", "pending", 2, "2026-02-27 17:45"),
]

_RECIPIENTS = [
    "Ana Okafor",
    "Ben Lindqvist",
    "Chloé Moreau",
    "David Silva",
    "Elif Kowalski",
    "Farid Haddad",
    "Grace Brennan",
    "Hugo Ito",
    "Ines Novak",
    "Jonas Duarte",
]
_SUMMARIES = ["Card settlement", "Supplier refund", "Customer payment", "Bank interest", "Fee reversal"]


def _seed_fixed(session: Session) -> None:
    for event_id, (number, batch, summary, account, cents, currency, depends, status, at) in sorted(
        PAYMENT_EVENTS.items()
    ):
        session.add(
            Event(
                id=event_id,
                number=number,
                batch=batch,
                kind="payment",
                summary=summary,
                account=account,
                amount_cents=cents,
                currency=currency,
                depends_on_id=depends,
                status=status,
                processed_at=at,
            )
        )
    for event_id, (number, batch, summary, recipient, destination, request_id) in DELIVERY_EVENTS.items():
        session.add(
            Event(
                id=event_id,
                number=number,
                batch=batch,
                kind="delivery-request",
                summary=summary,
                recipient=recipient,
                destination=destination,
                request_id=request_id,
                status="queued",
            )
        )
    session.flush()
    for entry_id, number, account, cents, currency, memo, source_id, created in ENTRIES:
        session.add(
            Entry(
                id=entry_id,
                number=number,
                account=account,
                amount_cents=cents,
                currency=currency,
                memo=memo,
                event_id=source_id,
                created_at=created,
            )
        )
    for delivery_id, number, request_id, recipient, destination, status, version, updated in DELIVERIES:
        session.add(
            Delivery(
                id=delivery_id,
                number=number,
                request_id=request_id,
                recipient=recipient,
                destination=destination,
                status=status,
                version=version,
                updated_at=updated,
            )
        )
        session.flush()  # the delivery before its dispatch
        if status == "delivered":
            session.add(
                Dispatch(
                    delivery_id=delivery_id,
                    request_id=request_id,
                    version=version - 1,
                    outcome="sent",
                    submitted_at=updated,
                )
            )
    session.add(
        Checkpoint(
            id=1,
            number="CP-1",
            batch="B-3",
            status="partial",
            processed_count=1,
            unfinished_count=2,
            note="EV-511 is on hold; EV-512 waits for it.",
            recorded_at="2026-02-28 17:00",
        )
    )


def _february_time(rng: random.Random) -> str:
    return f"2026-02-{rng.randint(1, 28):02d} {rng.randint(8, 18):02d}:{rng.choice([0, 15, 30, 45]):02d}"


def _seed_filler(session: Session, rng: random.Random) -> None:
    entry_id = len(ENTRIES)
    for offset in range(rng.randint(8, 12)):
        event_id = 20 + offset
        processed = rng.random() < 0.5
        at = _february_time(rng)
        account, cents = rng.choice(ACCOUNTS[:3]), rng.randint(1000, 90000)
        currency, summary = rng.choice(CURRENCIES), rng.choice(_SUMMARIES)
        session.add(
            Event(
                id=event_id,
                number=f"EV-{500 + event_id}",
                batch="B-4",
                kind="payment",
                summary=summary,
                account=account,
                amount_cents=cents,
                currency=currency,
                status="processed" if processed else "queued",
                processed_at=at if processed else None,
            )
        )
        session.flush()  # the event before its entry, so the entry's foreign key resolves
        if processed:
            entry_id += 1
            session.add(
                Entry(
                    id=entry_id,
                    number=f"LE-{1000 + entry_id}",
                    account=account,
                    amount_cents=cents,
                    currency=currency,
                    memo=summary,
                    event_id=event_id,
                    created_at=at,
                )
            )
    for _ in range(rng.randint(3, 5)):
        entry_id += 1
        session.add(
            Entry(
                id=entry_id,
                number=f"LE-{1000 + entry_id}",
                account=rng.choice(ACCOUNTS[:3]),
                amount_cents=rng.randint(500, 20000),
                currency=rng.choice(CURRENCIES),
                memo="Manual adjustment",
                created_at=_february_time(rng),
            )
        )
    for delivery_id in range(len(DELIVERIES) + 1, len(DELIVERIES) + 1 + rng.randint(8, 12)):
        delivered = rng.random() < 0.4
        at, request_id = _february_time(rng), f"REQ-{8000 + delivery_id}"
        session.add(
            Delivery(
                id=delivery_id,
                number=f"D-{300 + delivery_id}",
                request_id=request_id,
                recipient=rng.choice(_RECIPIENTS),
                destination=rng.choice(DESTINATIONS),
                status="delivered" if delivered else "pending",
                version=2 if delivered else 1,
                updated_at=at,
            )
        )
        session.flush()  # the delivery before its dispatch
        if delivered:
            session.add(
                Dispatch(delivery_id=delivery_id, request_id=request_id, version=1, outcome="sent", submitted_at=at)
            )


_CUSTOMERS = [
    "Okafor Hardware",
    "Silva Imports",
    "Brennan & Sons",
    "Haddad Textiles",
    "Ito Ceramics",
    "Novak Garden Supply",
    "Duarte Marine",
    "Kowalski Books",
    "Lindqvist Bakery",
    "Moreau Optics",
]
_APPROVERS = ["Maria Jensen", "Tom Achebe", "Lena Vogel"]


def _seed_write_offs(session: Session, rng: random.Random) -> None:
    """Write-off approvals: per invoice the current approval and an earlier, revoked or expired one (drawn last)."""
    customers = rng.sample(_CUSTOMERS, rng.randint(5, 7))
    invoices = rng.sample(range(4100, 5000), len(customers))
    # (invoice, customer, account, limit cents, currency, approver, status, valid until)
    rows: list[tuple[str, str, str, int, str, str, str, str]] = []
    for customer, invoice_number in zip(customers, invoices, strict=True):
        account, currency = rng.choice(ACCOUNTS[:3]), rng.choice(CURRENCIES)
        limit = rng.randint(400, 9000) * 5
        earlier = limit + rng.choice([-1, 1]) * rng.randint(20, 300) * 5
        until = f"2026-03-{rng.randint(9, 31):02d}"
        invoice = f"INV-{invoice_number}"
        rows.append((invoice, customer, account, limit, currency, rng.choice(_APPROVERS), "approved", until))
        if rng.random() < 0.5:  # the earlier approval was revoked (its last day as the current one's)
            rows.append((invoice, customer, account, earlier, currency, rng.choice(_APPROVERS), "revoked", until))
        else:  # the earlier approval expired in February
            expired = f"2026-02-{rng.randint(1, 27):02d}"
            rows.append((invoice, customer, account, earlier, currency, rng.choice(_APPROVERS), "approved", expired))
    rng.shuffle(rows)
    for offset, (invoice, customer, account, cents, currency, approver, status, until) in enumerate(rows):
        session.add(
            WriteOffApproval(
                id=offset + 1,
                number=f"AP-{601 + offset}",
                invoice=invoice,
                customer=customer,
                account=account,
                limit_cents=cents,
                currency=currency,
                approver=approver,
                status=status,
                valid_until=until,
            )
        )


def seed_ledger(session: Session, rng: random.Random) -> None:
    """Fills an empty ledger database: the fixed records, then filler drawn from `rng` (write-off approvals, then
    the posted history of the months before the period, last)."""
    _seed_fixed(session)
    session.flush()  # fixed rows first, so foreign keys of the filler resolve in order
    _seed_filler(session, rng)
    _seed_write_offs(session, rng)
    session.flush()
    seed_history(session, rng, first_entry_id=max(entry.id or 0 for entry in session.exec(select(Entry))) + 1)
