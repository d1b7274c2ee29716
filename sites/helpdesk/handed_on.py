"""Per-seed handed-on work: escalations waiting for a human, the follow-ups that wait for them, and answered approval
requests, beside the fixed ones (E-1, FU-1..FU-5, AR-1..AR-3 with answers 1..4).

Seeded last, from a generator of their own drawn from the seed's (after the return approvals), so no other table's
rows change and the fixed records keep their ids and codes; the codes continue the fixed ones in the order drawn
(codes follow the highest id, sites/helpdesk/work.py `next_code`, so what an agent creates comes after these).
Every record is a look-alike of a fixed story, on filler records no other story draws:

- waiting escalations, each with its open await-review follow-up (as E-1 and FU-3 on T-2004), on the filler tickets
  that wait for the customer (`pending`) and that the escalation rules send to a human: a "Password reset" ticket to
  Account security, a "Charged twice for one order" ticket to Billing disputes (up to `ESCALATIONS` of them);
- approval requests (as AR-2 and AR-3) on filler orders whose first ticket is a "Return label request" and that have
  no refund approval: `twice` approved and then approved again (a duplicate answer, ignored), and
  `changed` approved for the order as it was before its total was corrected (invalidated), two of each, in turn.
"""

from __future__ import annotations

import random
from datetime import datetime, time, timedelta

from sqlmodel import Session, col, select

from sites.helpdesk.models import (
    REFUND_POLICY_VERSION,
    ApprovalAnswer,
    ApprovalRequest,
    Escalation,
    FollowUp,
    Order,
    RefundApproval,
    Ticket,
)
from sites.helpdesk.return_approvals import FIRST_FILLER_ID, RETURN_SUBJECT, return_orders
from sites.kit.clock import EPOCH, format_time
from sites.kit.money import format_cents

ESCALATIONS = 4
QUEUES = {"Password reset": "Account security", "Charged twice for one order": "Billing disputes"}
"""Which pending filler tickets are escalated, and to which queue (as the escalation rules say)."""
REQUEST_KINDS = ("twice", "changed")
PER_KIND = 2
APPROVERS = ("Alex Morgan", "Sam Patel")


def _moment(rng: random.Random, days: int) -> datetime:
    """Office hours `days` days from the clock's epoch (negative: before it)."""
    day = (EPOCH + timedelta(days=days)).date()
    return datetime.combine(day, time(rng.randint(9, 16), rng.choice([0, 15, 30, 45])))


def _next_id(session: Session,
             model: type[Escalation] | type[FollowUp] | type[ApprovalRequest] | type[ApprovalAnswer]) -> int:
    return (session.exec(select(model.id).order_by(col(model.id).desc())).first() or 0) + 1


def _seed_escalations(session: Session, rng: random.Random) -> None:
    tickets = list(session.exec(select(Ticket).where(col(Ticket.id) >= FIRST_FILLER_ID, Ticket.status == "pending",
                                                     col(Ticket.subject).in_(list(QUEUES))).order_by(col(Ticket.id))))
    chosen = rng.sample(tickets, k=min(len(tickets), ESCALATIONS))
    escalation_id, follow_up_id = _next_id(session, Escalation), _next_id(session, FollowUp)
    for ticket in chosen:
        assert ticket.id is not None, "a stored ticket has an id"
        queue = QUEUES[ticket.subject]
        order = None if ticket.order_id is None else session.get(Order, ticket.order_id)
        if queue == "Account security":
            reason = "Password reset emails never arrive; possible account compromise."
            problem = "password-reset problem"
        else:
            on = "" if order is None else f" on order {order.number}"
            reason, problem = f"Duplicate charge{on}; chargeback opened.", f"duplicate charge{on}"
        created = format_time(_moment(rng, -rng.randint(2, 14)))
        code = f"E-{escalation_id}"
        session.add(Escalation(id=escalation_id, code=code, ticket_id=ticket.id, queue=queue, reason=reason,
                               status="waiting", created_at=created))
        session.add(FollowUp(id=follow_up_id, code=f"FU-{follow_up_id}", ticket_id=ticket.id,
                             order_id=ticket.order_id, kind="await-review",
                             description=f"Wait for {queue} to review the {problem} ({code}).", status="open",
                             created_at=created))
        escalation_id += 1
        follow_up_id += 1


def _request_orders(session: Session) -> list[Order]:
    """The filler orders a per-seed request may be on: a return label request first, no refund approval."""
    approved = set(session.exec(select(RefundApproval.order_id)))
    orders = []
    for order in return_orders(session):
        first = session.exec(select(Ticket).where(Ticket.order_id == order.id).order_by(col(Ticket.id))).first()
        if order.id not in approved and first is not None and first.subject == RETURN_SUBJECT:
            orders.append(order)
    return orders


def _seed_requests(session: Session, rng: random.Random) -> None:
    orders = _request_orders(session)
    chosen = rng.sample(orders, k=min(len(orders), PER_KIND * len(REQUEST_KINDS)))
    request_id, answer_id = _next_id(session, ApprovalRequest), _next_id(session, ApprovalAnswer)
    answers: list[ApprovalAnswer] = []
    for index, order in enumerate(chosen):
        assert order.id is not None, "a stored order has an id"
        kind = REQUEST_KINDS[index % len(REQUEST_KINDS)]
        asked_total = order.total_cents + (rng.randint(1, 4) * 500 if kind == "changed" else 0)
        amount = f"{format_cents(order.total_cents)} {order.currency}"
        requested = _moment(rng, -rng.randint(3, 12))
        session.add(ApprovalRequest(
            id=request_id, code=f"AR-{request_id}", order_id=order.id, amount_cents=order.total_cents,
            currency=order.currency, reason=f"Item returned (order {order.number})", approver=rng.choice(APPROVERS),
            policy_version=REFUND_POLICY_VERSION, requested_at=format_time(requested),
            expires_at=format_time(_moment(rng, rng.randint(20, 40)).replace(hour=18, minute=0)),
            order_status="delivered", order_total_cents=asked_total, order_currency=order.currency,
            follow_up_id=None, status="requested", refund_id=None))
        answered = requested + timedelta(hours=rng.randint(1, 3))
        moments = [(answered, "")]
        if kind == "twice":
            moments.append((answered + timedelta(hours=rng.randint(1, 3)), " (sent again)"))
        for moment, again in moments:
            answers.append(ApprovalAnswer(id=answer_id, request_id=request_id, decision="approved",
                                          note=f"Approved: refund {amount} on order {order.number}{again}.",
                                          answered_at=format_time(moment)))
            answer_id += 1
        request_id += 1
    session.flush()  # the requests before the answers that point at them
    session.add_all(answers)


def seed_handed_on(session: Session, seed_rng: random.Random) -> None:
    """The per-seed escalations, follow-ups and approval requests (see the module docstring), drawn from a generator
    seeded from `seed_rng`."""
    rng = random.Random(seed_rng.getrandbits(64))
    _seed_escalations(session, rng)
    session.flush()
    _seed_requests(session, rng)
    session.flush()
