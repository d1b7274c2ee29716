"""Carrier updates: incoming messages from the carrier about orders' parcels (issue 42's event-processing family).

Seeded after the filler from the seed's own generator, so no other table's rows change. For every order with an open
filler "Where is my order?" or "Late delivery" ticket the carrier sent two updates, both new: one older saying the
parcel was in transit (a depot) and one newer saying where and when it was delivered; for some other orders a
delivery update the desk processed already. Codes (CU-1, CU-2, ...) follow the time each update was received, so an
order's two updates are apart in the list, with others' between them.

The desk processes an update once (`process`): a processed one cannot be processed again. What processing an update
asks of the desk (tell the customer, solve the ticket) is the task's to say; the site only keeps the mark.
"""

from __future__ import annotations

import random
from datetime import date, datetime, time, timedelta

from sqlmodel import Session, col, select

from sites.helpdesk.models import CarrierUpdate, Order, Ticket
from sites.kit.clock import EPOCH, format_time, parse_time

WAITING_SUBJECTS = ("Where is my order?", "Late delivery")
"""The subjects of tickets whose customers wait for a parcel."""
FIRST_FILLER_ID = 45
DEPOTS = ["Leeds", "Bristol", "Utrecht", "Lyon", "Hamburg", "Porto", "Aarhus", "Graz", "Turin", "Ghent"]
PLACES = [
    "left with the neighbour at no. {n}",
    "left in parcel locker {n}B",
    "handed to the customer at the front door",
    "left in the safe place by the garage",
    "left at the reception desk",
    "left at the post office on {street} Street",
    "left in the porch",
    "handed to a neighbour at no. {n}",
]
STREETS = ["Mill", "Station", "Church", "Park", "Bridge", "Market", "Castle", "King"]


def _office_hours(rng: random.Random, day: date) -> datetime:
    """A moment of `day` on a quarter hour between 08:00 and 17:45."""
    return datetime.combine(day, time(rng.randint(8, 17), rng.choice([0, 15, 30, 45])))


def _place(rng: random.Random) -> str:
    return rng.choice(PLACES).format(n=rng.randint(2, 48), street=rng.choice(STREETS))


def seed_carrier_updates(session: Session, rng: random.Random) -> None:
    """The carrier's updates (see the module docstring), drawn from `rng` after every other table is seeded."""
    waiting = session.exec(
        select(Ticket).where(col(Ticket.id) >= FIRST_FILLER_ID, col(Ticket.status) == "open",
                             col(Ticket.subject).in_(WAITING_SUBJECTS), col(Ticket.order_id).is_not(None))
        .order_by(col(Ticket.id))).all()
    order_ids = sorted({ticket.order_id for ticket in waiting if ticket.order_id is not None})
    orders = session.exec(select(Order).where(col(Order.id) >= FIRST_FILLER_ID).order_by(col(Order.id))).all()
    candidates = [order.id for order in orders if order.id is not None and order.id not in order_ids]
    done = sorted(rng.sample(candidates, k=min(12, len(candidates))))
    drafts: list[tuple[str, int, str, str, str, str]] = []  # (received, order id, event, detail, happened, status)
    last_day = (EPOCH - timedelta(days=1)).date()
    for order_id in order_ids:
        order = session.get(Order, order_id)
        assert order is not None
        first_day = max(parse_time(order.placed_at).date() + timedelta(days=1), last_day - timedelta(days=12))
        days = max(1, (last_day - first_day).days)
        transit = _office_hours(rng, first_day + timedelta(days=rng.randint(0, days - 1)))
        delivered = _office_hours(rng, transit.date() + timedelta(days=rng.randint(1, max(1, (last_day -
                                                                                             transit.date()).days))))
        drafts.append((format_time(transit + timedelta(minutes=15 * rng.randint(1, 8))), order_id, "in_transit",
                       f"sorted at the {rng.choice(DEPOTS)} depot", format_time(transit), "new"))
        drafts.append((format_time(delivered + timedelta(minutes=15 * rng.randint(1, 8))), order_id, "delivered",
                       _place(rng), format_time(delivered), "new"))
    for order_id in done:
        day = EPOCH - timedelta(days=rng.randint(13, 40))
        moment = day.replace(hour=rng.randint(8, 18), minute=rng.choice([0, 15, 30, 45]))
        drafts.append((format_time(moment + timedelta(minutes=30)), order_id, "delivered", _place(rng),
                       format_time(moment), "processed"))
    drafts.sort(key=lambda draft: (draft[0], draft[1], draft[2]))
    for number, (received, order_id, event, detail, happened, status) in enumerate(drafts, 1):
        session.add(CarrierUpdate(code=f"CU-{number}", order_id=order_id, event=event, detail=detail,
                                  happened_at=happened, received_at=received, status=status,
                                  processed_at=received if status == "processed" else None))


def process(update: CarrierUpdate, now: str) -> str | None:
    """Marks the update processed; the refusal's text when it is processed already."""
    if update.status == "processed":
        return f"Carrier update {update.code} was processed already (on {update.processed_at})."
    update.status = "processed"
    update.processed_at = now
    return None
