"""The ledger's posted history: the months before the current period, drawn per seed from `rng` only.

The current period opened on 2026-02-01 (`PERIOD_OPENED`, the fixed opening balances LE-1001 and LE-1002); before it
lie four months of closed weekly batches (`B-2025-W40` ... `B-2026-W05`), every event of them processed and each
with the entry it posted, and entries typed in by hand beside them (bank charges, accruals, corrections, recalls).
Nothing of the history is queued or held, so the queue's batches B-1..B-4 keep their make-up.

Numbering keeps every fixed and filler record where it was: history events are EV-1001 onwards (ids from
`FIRST_EVENT_ID`), history entries end at LE-1000 just before the period's first entry (ids after the filler's), so
the entry posted next is numbered as before, in the period's series.

Look-alikes: old events on the queue's accounts for the same amounts and summaries as the fixed queued payments
(Northwind Traders' 1250.00 EUR payment, Harbor Freight's 80.00 EUR, invoice 88's settlement parts, Northwind
Traders' USD deposit and balance), hand-typed recalls of old events ("Recall of EV-1xxx") and monthly bank charges
named with their year ("Bank charges November 2025"), so the deciding record has to be told apart by its number,
batch, status or date. No history entry is for 990.00 or 4800.00 (amounts tasks count over the whole table).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from sqlmodel import Session

from sites.ledger.models import ACCOUNTS, CURRENCIES, Entry, Event

FIRST_EVENT_ID = 1001
"""Id of the first history event (fixed events are 1-12, the queue's filler 20 onwards)."""
LAST_HISTORY_ENTRY = 1000
"""Number of the last history entry (LE-1000); the period's entries start at LE-1001."""
AMOUNTS_NEVER_DRAWN = frozenset({99000, 480000})
"""Amounts no history entry has: tasks count entries of these amounts over the whole table."""

_FIRST_DAY, _LAST_DAY = dt.date(2025, 10, 1), dt.date(2026, 1, 31)
_PARTIES = [
    "Okafor Hardware", "Silva Imports", "Brennan & Sons", "Haddad Textiles", "Ito Ceramics", "Novak Garden Supply",
    "Duarte Marine", "Kowalski Books", "Lindqvist Bakery", "Moreau Optics", "Achebe Print Works", "Vogel Instruments",
    "Jensen Cold Storage", "Petrov Electrical", "Castillo Coffee", "Nakamura Tools",
]
_SUPPLIERS = ["Baltic Paper Mill", "Cargo Insurance Group", "Fleet Fuel Services", "Portside Security",
              "Meridian Telecom", "Crane Hire North"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


@dataclass(frozen=True)
class _Posting:
    """One history posting: an event's (`batch` set) or one typed in by hand."""

    at: str
    account: str
    cents: int
    currency: str
    memo: str
    batch: str | None


def _amount(rng: random.Random, low: int, high: int) -> int:
    cents = rng.randint(low, high) * 5
    return cents + 5 if cents in AMOUNTS_NEVER_DRAWN else cents


def _business_time(rng: random.Random) -> dt.datetime:
    while True:
        day = _FIRST_DAY + dt.timedelta(days=rng.randrange((_LAST_DAY - _FIRST_DAY).days + 1))
        if day.weekday() < 5:
            return dt.datetime.combine(day, dt.time(rng.randint(8, 17), rng.choice([0, 15, 30, 45])))


def _batch(at: dt.datetime) -> str:
    year, week, _ = at.isocalendar()
    return f"B-{year}-W{week:02d}"


def _event_posting(rng: random.Random) -> tuple[str, int, str, str]:
    """(account, cents, currency, summary) of an event: counterparties' payments mostly, some operations."""
    roll = rng.random()
    invoice = rng.randint(12, 140)
    if roll < 0.3:
        summary = rng.choice(["Payment received from Northwind Traders", "Deposit from Northwind Traders",
                              "Balance from Northwind Traders", f"Invoice {invoice} settlement, Northwind Traders"])
        return ACCOUNTS[1], _amount(rng, 400, 40000), rng.choice(["EUR", "EUR", "USD"]), summary
    if roll < 0.55:
        summary = rng.choice(["Payment received from Harbor Freight", f"Harbor Freight, freight bill {invoice}"])
        return ACCOUNTS[2], _amount(rng, 200, 8000), "EUR", summary
    if roll < 0.9:
        party = rng.choice(_PARTIES)
        summary = rng.choice([f"Customer payment from {party}", f"Card settlement, {party}",
                              f"Supplier refund from {rng.choice(_SUPPLIERS)}", "Transfer to operations",
                              f"Invoice {invoice} settlement, part {rng.randint(1, 2)}", "Bank interest"])
        return ACCOUNTS[0], _amount(rng, 100, 60000), rng.choice(CURRENCIES), summary
    summary = rng.choice(["Incoming transfer cleared from review", "Release of suspense funds",
                          "Unidentified incoming transfer"])
    return ACCOUNTS[3], _amount(rng, 1000, 50000), "EUR", summary


def _hand_posting(rng: random.Random, at: dt.datetime,
                  recallable: list[tuple[str, _Posting]]) -> tuple[str, int, str, str]:
    """(account, cents, currency, memo) of an entry typed in by hand; a recall names the event it reverses."""
    roll = rng.random()
    if roll < 0.15 and recallable:
        number, recalled = rng.choice(recallable)
        return recalled.account, recalled.cents, recalled.currency, f"Recall of {number}"
    if roll < 0.45:
        return ACCOUNTS[0], _amount(rng, 100, 990), "EUR", f"Bank charges {_MONTHS[at.month - 1]} {at.year}"
    if roll < 0.7:
        return (rng.choice(ACCOUNTS[:3]), _amount(rng, 100, 4000), rng.choice(CURRENCIES),
                f"Manual adjustment, ref ADJ-{rng.randint(1000, 9999)}")
    supplier = rng.choice(_SUPPLIERS)
    return (ACCOUNTS[0], _amount(rng, 2000, 30000), "EUR",
            rng.choice([f"Accrual, {supplier}", f"Correction of {supplier} accrual"]))


# (account, cents, currency, summary): the fixed queued payments' look-alikes, each posted once in the history
LOOK_ALIKES = [
    (ACCOUNTS[1], 125000, "EUR", "Payment received from Northwind Traders"),
    (ACCOUNTS[2], 8000, "EUR", "Payment received from Harbor Freight"),
    (ACCOUNTS[0], 30000, "EUR", "Invoice 88 settlement, part 1"),
    (ACCOUNTS[0], 45000, "EUR", "Invoice 88 settlement, part 2"),
    (ACCOUNTS[1], 21000, "USD", "Deposit from Northwind Traders"),
    (ACCOUNTS[1], 9550, "USD", "Balance from Northwind Traders"),
]


def seed_history(session: Session, rng: random.Random, *, first_entry_id: int) -> None:
    """Adds the history: 500 to 540 entries, about four in five posted by processed events of closed weekly
    batches (with the look-alikes of the queue's payments among them), the rest typed in by hand."""
    times = sorted(_business_time(rng) for _ in range(rng.randint(500, 540)))
    looked_alike = set(rng.sample(range(len(times)), len(LOOK_ALIKES)))
    alikes = iter(LOOK_ALIKES)
    postings: list[_Posting] = []
    processed: list[tuple[str, _Posting]] = []  # (event number, its posting), for recalls
    for index, at in enumerate(times):
        text = at.strftime("%Y-%m-%d %H:%M")
        if index in looked_alike or rng.random() < 0.8:
            account, cents, currency, summary = next(alikes) if index in looked_alike else _event_posting(rng)
            posting = _Posting(text, account, cents, currency, summary, _batch(at))
            processed.append((f"EV-{FIRST_EVENT_ID + len(processed)}", posting))
        else:
            posting = _Posting(text, *_hand_posting(rng, at, processed), None)
        postings.append(posting)
    first_number = LAST_HISTORY_ENTRY - len(postings) + 1
    event_id = FIRST_EVENT_ID
    for offset, posting in enumerate(postings):
        source = None
        if posting.batch is not None:
            source = event_id
            session.add(Event(id=event_id, number=f"EV-{event_id}", batch=posting.batch, kind="payment",
                              summary=posting.memo, account=posting.account, amount_cents=posting.cents,
                              currency=posting.currency, status="processed", processed_at=posting.at))
            session.flush()  # the event before its entry
            event_id += 1
        session.add(Entry(id=first_entry_id + offset, number=f"LE-{first_number + offset}", account=posting.account,
                          amount_cents=posting.cents, currency=posting.currency, memo=posting.memo, event_id=source,
                          created_at=posting.at))
