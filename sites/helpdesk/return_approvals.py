"""Refund approvals for returns: per-seed `refund_approval` rows beside the three fixed ones (RA-11..RA-13).

Seeded last, from a generator of their own drawn from the seed's (after the carrier updates), so no other table's
rows change and the fixed approvals keep their ids and codes. The orders are filler orders whose first ticket is a
"Return label request" (the customer is sending the item back): twelve of them are drawn (fewer on a seed with fewer
such orders) and dealt into three kinds, four each, in turn:

- `pair`: two approvals of the order's total, one that expired before the logical clock starts and one valid for
  weeks after it, both under the policy in force (which one has the lower code is drawn);
- `outdated`: one approval of the order's total, valid for weeks, issued under an outdated refund policy;
- `expired`: one approval of the order's total that expired before the clock starts.

Codes continue the fixed ones (RA-14, RA-15, ...) in the order drawn, so an order's number says nothing of its
approvals' codes. The Approvals page lists every approval: three fixed and at most sixteen of these.
"""

from __future__ import annotations

import random
from datetime import datetime, time, timedelta

from sqlmodel import Session, col, select

from sites.helpdesk.models import REFUND_POLICY_VERSION, Order, RefundApproval, Ticket
from sites.kit.clock import EPOCH, format_time

RETURN_SUBJECT = "Return label request"
FIRST_FILLER_ID = 45
KINDS = ("pair", "outdated", "expired")
PER_KIND = 4
APPROVERS = ("Alex Morgan", "Sam Patel")
OUTDATED_POLICIES = ("2025-03", "2025-09")


def _moment(rng: random.Random, days: int) -> str:
    """Office hours `days` days from the clock's epoch (negative: before it)."""
    day = (EPOCH + timedelta(days=days)).date()
    return format_time(datetime.combine(day, time(rng.randint(9, 17), rng.choice([0, 30]))))


def return_orders(session: Session) -> list[Order]:
    """The filler orders whose first ticket is a return label request, by id."""
    tickets = session.exec(select(Ticket).where(col(Ticket.id) >= FIRST_FILLER_ID, col(Ticket.order_id).is_not(None))
                           .order_by(col(Ticket.id)))
    first: dict[int, Ticket] = {}
    for ticket in tickets:
        assert ticket.order_id is not None
        first.setdefault(ticket.order_id, ticket)
    ids = sorted(order_id for order_id, ticket in first.items() if ticket.subject == RETURN_SUBJECT)
    return [order for order_id in ids if (order := session.get(Order, order_id)) is not None]


def seed_return_approvals(session: Session, seed_rng: random.Random) -> None:
    """The per-seed approvals (see the module docstring), drawn from a generator seeded from `seed_rng`."""
    rng = random.Random(seed_rng.getrandbits(64))
    orders = return_orders(session)
    chosen = rng.sample(orders, k=min(len(orders), PER_KIND * len(KINDS)))
    last = session.exec(select(RefundApproval.id).order_by(col(RefundApproval.id).desc())).first() or 0
    number = 10 + last + 1  # RA-11 is id 1

    def add(order: Order, expires: str, policy: str) -> None:
        nonlocal number
        assert order.id is not None, "a stored order has an id"
        session.add(RefundApproval(code=f"RA-{number}", order_id=order.id, approver=rng.choice(APPROVERS),
                                   amount_cents=order.total_cents, currency=order.currency, expires_at=expires,
                                   policy_version=policy, status="active"))
        number += 1

    for index, order in enumerate(chosen):
        kind = KINDS[index % len(KINDS)]
        if kind == "pair":
            expired, valid = _moment(rng, -rng.randint(1, 40)), _moment(rng, rng.randint(7, 45))
            for expires in ([expired, valid] if rng.random() < 0.5 else [valid, expired]):
                add(order, expires, REFUND_POLICY_VERSION)
        elif kind == "outdated":
            add(order, _moment(rng, rng.randint(7, 45)), rng.choice(OUTDATED_POLICIES))
        else:
            add(order, _moment(rng, -rng.randint(1, 40)), REFUND_POLICY_VERSION)
    session.flush()
