"""Seed data of the helpdesk: fixed records that tasks rely on, then seed-dependent filler.

The fixed records are identical for every seed. Filler (sites/helpdesk/filler.py: hundreds of customers, orders and
tickets, with look-alikes of the fixed ones) is drawn from the template generator and numbered above every fixed
record (customers and ids from 45, orders from O-1095, tickets from T-2095), so seeds differ without ever touching a
fixed record, and the fixed records lead every list in its default order.

The approval scenarios (issue 27, sites/helpdesk/approvals.py) have fixed records of their own (customers 40-44,
orders O-1090..O-1094, tickets T-2090..T-2094) and no refund rows (a refund the desk issues keeps its id):

- O-1090 / T-2090 (Lena Fischer, 64.00 EUR): no approval yet; an agent requests one and waits for it.
- O-1091 / T-2091 (Kwame Mensah, 80.00 EUR): the customer wants 95.00 EUR back (the order and his return
  postage): a request for more than is refundable is denied.
- O-1092 / T-2092 (Sofia Rossi, 45.00 USD): AR-1, approved, expired on 2026-03-01 12:00.
- O-1093 / T-2093 (Jonas Berg, 59.00 EUR): AR-2, answered twice (approved, then approved again: the second answer is
  a duplicate and ignored).
- O-1094 / T-2094 (Aiko Sato, 75.00 EUR): AR-3 (60.00 EUR), approved for the order as it was (delivered,
  90.00 EUR); its total was corrected to 75.00 EUR afterwards, which invalidates AR-3.
"""

from __future__ import annotations

import random

from sqlmodel import Session

from sites.helpdesk.carrier import seed_carrier_updates
from sites.helpdesk.filler import Mimic, seed_filler
from sites.helpdesk.handed_on import seed_handed_on
from sites.helpdesk.models import (
    REFUND_POLICY_VERSION,
    ApprovalAnswer,
    ApprovalRequest,
    Customer,
    Escalation,
    FollowUp,
    Order,
    RefundApproval,
    Ticket,
)
from sites.helpdesk.return_approvals import seed_return_approvals

# (id, name, email, tier)
CUSTOMERS = [
    (1, "Dana Reyes", "dana.reyes@example.com", "premium"),
    (2, "Priya Natarajan", "priya.natarajan@example.com", "standard"),
    (3, "Tomás Herrera", "tomas.herrera@example.com", "standard"),
    (4, "Mei Chen", "mei.chen@example.com", "premium"),
]
# (id, number, customer id, total cents, currency, placed at)
ORDERS = [
    (1, "O-1041", 1, 12000, "EUR", "2026-02-10 10:00"),
    (2, "O-1042", 1, 4990, "EUR", "2026-02-20 14:30"),
    (3, "O-1043", 2, 3500, "USD", "2026-01-05 09:15"),
    (4, "O-1044", 2, 12900, "USD", "2026-02-25 16:45"),
    (5, "O-1045", 3, 8950, "EUR", "2026-02-27 11:00"),
    (6, "O-1046", 4, 21400, "USD", "2026-02-12 13:20"),
]
# (code, order id, approver, amount cents, currency, expires at, policy version)
APPROVALS = [
    ("RA-11", 2, "Alex Morgan", 4990, "EUR", "2026-02-28 09:00", REFUND_POLICY_VERSION),
    ("RA-12", 2, "Sam Patel", 4990, "EUR", "2026-03-31 18:00", REFUND_POLICY_VERSION),
    ("RA-13", 5, "Alex Morgan", 8950, "EUR", "2026-03-31 18:00", "2025-09"),
]
# (number, customer id, order id, subject, body, status, priority, updated at)
TICKETS = [
    (
        "T-2001",
        1,
        2,
        "Refund for damaged kettle",
        "The kettle from order O-1042 arrived with a cracked lid. I would like a refund.",
        "open",
        "high",
        "2026-02-22 08:40",
    ),
    (
        "T-2002",
        2,
        4,
        "Where is my order?",
        "My order O-1044 shows as delivered but I have not received it yet.",
        "open",
        "normal",
        "2026-02-26 12:05",
    ),
    (
        "T-2003",
        3,
        5,
        "Wrong size delivered",
        "I ordered the jacket in size M and received size L.",
        "open",
        "normal",
        "2026-02-27 17:20",
    ),
    (
        "T-2004",
        4,
        None,
        "Password reset",
        "I cannot log in to my account; the password reset email never arrives.",
        "pending",
        "low",
        "2026-02-18 10:10",
    ),
    (
        "T-2005",
        4,
        None,
        "Invoice copy request",
        "Could you send me a copy of my last invoice for my records?",
        "open",
        "normal",
        "2026-02-24 15:45",
    ),
    (
        "T-2006",
        2,
        None,
        "Change delivery address",
        "Please deliver future orders to my new address in Leeds.",
        "open",
        "normal",
        "2026-02-23 09:30",
    ),
    (
        "T-2007",
        4,
        6,
        "Charged twice for one order",
        "My card was charged twice for order O-1046 and my bank has opened a chargeback. Please sort this out.",
        "open",
        "high",
        "2026-03-01 16:10",
    ),
    (
        "T-2008",
        3,
        None,
        "Login from a device I do not own",
        "I got a login alert from a phone I do not own, and my delivery address was changed. Please lock my account.",
        "open",
        "high",
        "2026-03-02 07:55",
    ),
]
# (code, ticket id, queue, reason, status, created at)
ESCALATIONS = [
    ("E-1", 4, "Account security", "Password reset emails never arrive; possible account compromise.", "waiting",
     "2026-02-18 10:15"),
]
# (code, ticket id, order id, kind, description, status, created at, closed at, note)
FOLLOW_UPS = [
    ("FU-1", 3, 5, "notify-customer", "Tell Tomás Herrera that his replacement jacket in size M has shipped.",
     "open", "2026-02-28 09:00", None, ""),
    ("FU-2", 6, None, "notify-customer",
     "Confirm to Priya Natarajan that future orders will go to her new address in Leeds.",
     "open", "2026-02-23 10:00", None, ""),
    ("FU-3", 4, None, "await-review", "Wait for Account security to review the password-reset problem (E-1).",
     "open", "2026-02-18 10:15", None, ""),
    ("FU-4", 2, 4, "reconcile-status", "Check with the carrier whether order O-1044 was really delivered.",
     "open", "2026-02-26 12:10", None, ""),
    ("FU-5", 5, None, "notify-customer", "Send Mei Chen a copy of her last invoice.",
     "cancelled", "2026-02-24 16:00", "2026-02-24 16:30", "Sent by post at the customer's request."),
]

# The approval scenarios' records (see the module docstring), numbered above any filler.
# (id, name, email, tier)
APPROVAL_CUSTOMERS = [
    (40, "Lena Fischer", "lena.fischer@example.com", "standard"),
    (41, "Kwame Mensah", "kwame.mensah@example.com", "standard"),
    (42, "Sofia Rossi", "sofia.rossi@example.com", "premium"),
    (43, "Jonas Berg", "jonas.berg@example.com", "standard"),
    (44, "Aiko Sato", "aiko.sato@example.com", "premium"),
]
# (id, number, customer id, total cents, currency, status, placed at)
APPROVAL_ORDERS = [
    (40, "O-1090", 40, 6400, "EUR", "delivered", "2026-02-21 10:30"),
    (41, "O-1091", 41, 8000, "EUR", "delivered", "2026-02-14 15:00"),
    (42, "O-1092", 42, 4500, "USD", "delivered", "2026-02-19 12:10"),
    (43, "O-1093", 43, 5900, "EUR", "delivered", "2026-02-16 09:40"),
    (44, "O-1094", 44, 7500, "EUR", "delivered", "2026-02-17 13:25"),
]
# (id, number, customer id, order id, subject, body, updated at); every one open, normal priority
APPROVAL_TICKETS = [
    (40, "T-2090", 40, 40, "Blender stopped working",
     "The blender from order O-1090 stopped working after two days. Please refund the 64.00 EUR.",
     "2026-03-01 09:30"),
    (41, "T-2091", 41, 41, "Refund the whole order",
     "The lamp from order O-1091 flickers. I want 95.00 EUR back: the 80.00 EUR I paid and 15.00 EUR of return "
     "postage.",
     "2026-03-01 10:45"),
    (42, "T-2092", 42, 42, "Refund still not received",
     "You approved a refund of 45.00 USD for order O-1092 weeks ago and I still have not received it.",
     "2026-03-01 14:05"),
    (43, "T-2093", 43, 43, "Refund for scratched table",
     "The side table from order O-1093 arrived scratched. I was told the 59.00 EUR refund was approved.",
     "2026-02-27 16:00"),
    (44, "T-2094", 44, 44, "Refund for broken chair",
     "The chair from order O-1094 has a broken leg. Please refund the 60.00 EUR you approved.",
     "2026-03-01 11:20"),
]
# (id, code, order id, amount cents, currency, reason, approver, policy, requested at, expires at,
#  order facts when requested (status, total cents, currency))
APPROVAL_REQUESTS = [
    (1, "AR-1", 42, 4500, "USD", "Desk lamp arrived broken", "Alex Morgan", REFUND_POLICY_VERSION,
     "2026-02-20 09:00", "2026-03-01 12:00", ("delivered", 4500, "USD")),
    (2, "AR-2", 43, 5900, "EUR", "Side table arrived scratched", "Sam Patel", REFUND_POLICY_VERSION,
     "2026-02-27 09:30", "2026-03-31 18:00", ("delivered", 5900, "EUR")),
    (3, "AR-3", 44, 6000, "EUR", "Chair arrived with a broken leg", "Alex Morgan", REFUND_POLICY_VERSION,
     "2026-02-24 08:00", "2026-03-31 18:00", ("delivered", 9000, "EUR")),
]
# (id, request id, decision, note, answered at)
APPROVAL_ANSWERS = [
    (1, 1, "approved", "Approved: refund 45.00 USD on order O-1092.", "2026-02-20 11:00"),
    (2, 2, "approved", "Approved: refund 59.00 EUR on order O-1093.", "2026-02-27 10:00"),
    (3, 2, "approved", "Approved: refund 59.00 EUR on order O-1093 (sent again).", "2026-02-27 15:00"),
    (4, 3, "approved", "Approved: refund 60.00 EUR on order O-1094.", "2026-02-24 12:00"),
]

def _seed_fixed(session: Session) -> None:
    for customer_id, name, email, tier in CUSTOMERS:
        session.add(Customer(id=customer_id, name=name, email=email, tier=tier))
    for order_id, number, customer_id, total, currency, placed in ORDERS:
        session.add(
            Order(
                id=order_id,
                number=number,
                customer_id=customer_id,
                total_cents=total,
                currency=currency,
                status="delivered",
                placed_at=placed,
            )
        )
    for index, (code, order_id, approver, amount, currency, expires, policy) in enumerate(APPROVALS, 1):
        session.add(
            RefundApproval(
                id=index,
                code=code,
                order_id=order_id,
                approver=approver,
                amount_cents=amount,
                currency=currency,
                expires_at=expires,
                policy_version=policy,
                status="active",
            )
        )
    for index, (number, customer_id, ticket_order, subject, body, status, priority, updated) in enumerate(TICKETS, 1):
        session.add(
            Ticket(
                id=index,
                number=number,
                customer_id=customer_id,
                order_id=ticket_order,
                subject=subject,
                body=body,
                status=status,
                priority=priority,
                updated_at=updated,
            )
        )
    session.flush()  # tickets and orders before the rows that point at them
    for index, (code, escalated, queue, reason, status, created) in enumerate(ESCALATIONS, 1):
        session.add(
            Escalation(
                id=index, code=code, ticket_id=escalated, queue=queue, reason=reason, status=status, created_at=created
            )
        )
    for index, (code, work_ticket, work_order, kind, text, status, created, closed, note) in enumerate(FOLLOW_UPS, 1):
        session.add(
            FollowUp(
                id=index,
                code=code,
                ticket_id=work_ticket,
                order_id=work_order,
                kind=kind,
                description=text,
                status=status,
                created_at=created,
                closed_at=closed,
                note=note,
            )
        )


def _seed_approval_scenarios(session: Session) -> None:
    for customer_id, name, email, tier in APPROVAL_CUSTOMERS:
        session.add(Customer(id=customer_id, name=name, email=email, tier=tier))
    for order_id, number, customer_id, total, currency, status, placed in APPROVAL_ORDERS:
        session.add(Order(id=order_id, number=number, customer_id=customer_id, total_cents=total, currency=currency,
                          status=status, placed_at=placed))
    for ticket_id, number, customer_id, ticket_order, subject, body, updated in APPROVAL_TICKETS:
        session.add(Ticket(id=ticket_id, number=number, customer_id=customer_id, order_id=ticket_order,
                           subject=subject, body=body, status="open", priority="normal", updated_at=updated))
    session.flush()
    for (request_id, code, request_order, cents, currency, reason, approver, policy, requested, expires,
         (order_status, order_total, order_currency)) in APPROVAL_REQUESTS:
        session.add(ApprovalRequest(
            id=request_id, code=code, order_id=request_order, amount_cents=cents, currency=currency, reason=reason,
            approver=approver, policy_version=policy, requested_at=requested, expires_at=expires,
            order_status=order_status, order_total_cents=order_total, order_currency=order_currency,
            follow_up_id=None, status="requested", refund_id=None))
    session.flush()
    for answer_id, request_id, decision, note, answered in APPROVAL_ANSWERS:
        session.add(ApprovalAnswer(id=answer_id, request_id=request_id, decision=decision, note=note,
                                   answered_at=answered))


def look_alike_mimics() -> dict[str, Mimic]:
    """What the look-alikes of each fixed customer copy: the subject and body of the customer's first ticket about an
    order, with that order's total and currency (the body's mention of the order number made a placeholder)."""
    customers = {customer_id: name for customer_id, name, _, _ in [*CUSTOMERS, *APPROVAL_CUSTOMERS]}
    orders = {order_id: (number, total, currency) for order_id, number, _, total, currency, _ in ORDERS}
    orders.update({order_id: (number, total, currency)
                   for order_id, number, _, total, currency, _, _ in APPROVAL_ORDERS})
    tickets = [(customer_id, order_id, subject, body) for _, customer_id, order_id, subject, body, *_ in TICKETS]
    tickets += [(customer_id, order_id, subject, body) for _, _, customer_id, order_id, subject, body, _ in
                APPROVAL_TICKETS]
    mimics: dict[str, Mimic] = {}
    for customer_id, order_id, subject, body in tickets:
        name = customers[customer_id]
        if order_id is None or name in mimics:
            continue
        number, total, currency = orders[order_id]
        mimics[name] = Mimic(subject=subject, body=body.replace(number, "{order}"), total_cents=total,
                             currency=currency)
    return mimics


def seed_helpdesk(session: Session, rng: random.Random) -> None:
    """Fills an empty helpdesk database: the fixed records, then filler drawn from `rng`."""
    _seed_fixed(session)
    session.flush()
    _seed_approval_scenarios(session)
    session.flush()  # fixed rows first: the filler is numbered above them
    seed_filler(session, rng, look_alike_mimics())
    session.flush()
    seed_carrier_updates(session, rng)  # after the filler: what it draws changes no other table's rows
    session.flush()
    seed_return_approvals(session, rng)  # its own generator, drawn after every other table's
    session.flush()
    seed_handed_on(session, rng)  # last: its own generator, drawn after the return approvals'
