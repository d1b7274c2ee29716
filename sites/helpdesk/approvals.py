"""Human approval is state: refund approval requests, their simulated approver, and what a request allows.

An agent asks for a refund approval from an order's page (amount, currency, reason). The request is an
`approval_request` row (code `AR-n`) recording what was asked, who answers (`REQUEST_APPROVER`), the refund policy in
force, when an approval would lapse, and the order's facts it was asked for (status, total, currency); an
`await-review` follow-up opens to wait for the answer.

**The simulated human writes nothing.** Every row change must belong to an operation of the agent (the verifier
judges the journal), so the approver's answer is written by the agent's own request, at the moment it is made, as an
`approval_answer` row whose `answered_at` lies in the future: the decision and the answer time are a function of the
request and the logical clock (`decide`): the approver approves an amount up to what is still refundable on the
order, in the order's currency, and denies anything else, `ANSWER_DELAY_MINUTES` after the request (every request
advances the clock a minute, so the answer comes after that many further operations). Until the clock reaches
`answered_at` the answer does not exist for anyone: no page shows it and no rule honours it (`request_state`), so
a "delayed approval" is a request still pending until then. Seeded requests carry other answers: an approval that
expired, one given for the order as it was before it changed, and one the approver answered twice.

**The action boundary validates the record.** The refund form accepts an approval request's code as it accepts a
`RefundApproval`'s, and the refund route asks `refusal_for_request` whether the request allows this refund *now*:
pending, denied, expired, used, invalidated (the order's status, total or currency differ from the facts it was
asked for), another order, another policy version, or another amount or currency is refused, naming why. A refund
under a request marks it `used` (pointing at the refund), in the refund's own transaction, so a request pays out
once. This design was chosen over copying an approved request into a `RefundApproval` row: that copy would be a row
no human wrote, made by whichever request first read the answer; here the request *is* the approval record, and
its state at a moment is computed from its rows and that moment only.

**Duplicate answers.** Only a request's first answer (by `answered_at`, then id) counts; a later one is shown as
ignored and changes nothing, whatever it says.

**What the rows say without a clock.** `status` holds only what the agent's requests wrote (`requested`, then
`used`); pending, approved, denied, expired or invalidated is a function of the rows *and a moment*
(`request_state`). The ledger reader (sites/helpdesk/ledgers.py) is given the moment its rows were read at (the
latest operation), so it states each request as it then stood: a request still waiting for its answer reads
`pending`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from sqlmodel import Session, col, select

from sites.helpdesk.models import (
    CURRENCIES,
    REFUND_POLICY_VERSION,
    ApprovalAnswer,
    ApprovalRequest,
    Customer,
    FollowUp,
    Order,
    Ticket,
)
from sites.helpdesk.refunds import refunded_cents
from sites.helpdesk.work import next_code
from sites.kit.clock import format_time, parse_time
from sites.kit.money import format_cents
from sites.kit.shown import ShownRecorder

REQUEST_APPROVER = "Sam Patel"
"""Who answers the desk's approval requests."""
ANSWER_DELAY_MINUTES = 6
"""How long after a request its answer is given (logical minutes: operations)."""
APPROVAL_VALID_DAYS = 2
"""How long an approval given for a request holds, from the request."""
REQUEST_STATUSES = ("requested", "used")
DECISIONS = ("approved", "denied")


@dataclass(frozen=True)
class RequestState:
    """A request as of one moment: its status word, the answer that counts and the duplicates ignored."""

    status: str
    """pending, approved, denied, expired, invalidated or used."""
    answer: ApprovalAnswer | None = None
    ignored: list[ApprovalAnswer] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """For `invalidated`: the order's facts that changed since the request, in words."""


def order_changes(request: ApprovalRequest, order: Order) -> list[str]:
    """The order's facts that differ from those the request was made for, in words."""
    changes = []
    if order.status != request.order_status:
        changes.append(f"status {request.order_status} → {order.status}")
    if order.total_cents != request.order_total_cents:
        changes.append(f"total {format_cents(request.order_total_cents)} → {format_cents(order.total_cents)}")
    if order.currency != request.order_currency:
        changes.append(f"currency {request.order_currency} → {order.currency}")
    return changes


def request_state(request: ApprovalRequest, answers: list[ApprovalAnswer], order: Order, now: str) -> RequestState:
    """The request's state at `now` (times are `YYYY-MM-DD HH:MM`, so text order is time order): an answer exists
    from its `answered_at` on, and only the first one counts."""
    given = sorted((a for a in answers if a.answered_at <= now), key=lambda a: (a.answered_at, a.id or 0))
    first, ignored = (given[0], given[1:]) if given else (None, [])
    if request.status == "used":
        return RequestState("used", first, ignored)
    if first is None:
        return RequestState("pending")
    if first.decision != "approved":
        return RequestState("denied", first, ignored)
    if request.expires_at <= now:
        return RequestState("expired", first, ignored)
    changes = order_changes(request, order)
    if changes:
        return RequestState("invalidated", first, ignored, changes)
    return RequestState("approved", first, ignored)


def answers_of(session: Session, request: ApprovalRequest) -> list[ApprovalAnswer]:
    """Every answer row of a request, given or not yet given (callers show only those given by now)."""
    query = select(ApprovalAnswer).where(ApprovalAnswer.request_id == request.id).order_by(col(ApprovalAnswer.id))
    return list(session.exec(query))


def requests_of(session: Session, order: Order) -> list[ApprovalRequest]:
    """The approval requests made for an order, by code."""
    query = select(ApprovalRequest).where(ApprovalRequest.order_id == order.id).order_by(col(ApprovalRequest.id))
    return list(session.exec(query))


def refundable_cents(session: Session, order: Order) -> int:
    """What is still refundable on the order."""
    return order.total_cents - refunded_cents(session, order)


def refusal_to_request(
    session: Session, order: Order, cents: int | None, text: str, currency: str, reason: str, now: str
) -> str | None:
    """Why this approval request cannot be made, or None. Asking is free (the approver judges the amount); an open
    request for the same order must be answered first."""
    if cents is None:
        return f'Approval not requested: "{text}" is not an amount; type it like 49.90.'
    if cents <= 0:
        return "Approval not requested: the amount must be more than 0.00."
    if currency not in CURRENCIES:
        return f"Approval not requested: choose a currency ({', '.join(CURRENCIES)})."
    if not reason.strip():
        return "Approval not requested: say why the refund is needed."
    for request in requests_of(session, order):
        if request_state(request, answers_of(session, request), order, now).status == "pending":
            return f"Approval not requested: {request.code} for order {order.number} is still waiting for an answer."
    return None


def decide(session: Session, order: Order, cents: int, currency: str) -> tuple[str, str]:
    """The approver's decision on a request and the note with it: approved up to what is still refundable, in the
    order's currency; denied otherwise."""
    remaining = refundable_cents(session, order)
    if currency != order.currency:
        return "denied", f"Order {order.number} was paid in {order.currency}, not {currency}."
    if cents > remaining:
        return "denied", (f"{format_cents(cents)} {currency} is more than the {format_cents(remaining)} "
                          f"{order.currency} still refundable on order {order.number}.")
    return "approved", f"Approved: refund {format_cents(cents)} {currency} on order {order.number}."


def request_approval(
    session: Session, order: Order, *, cents: int, currency: str, reason: str, now: str
) -> ApprovalRequest:
    """Records the request, the await-review follow-up that waits for it, and its answer, due
    `ANSWER_DELAY_MINUTES` from `now` (the caller checked refusal_to_request)."""
    assert order.id is not None, "a stored order has an id"
    customer = session.get(Customer, order.customer_id)
    ticket = session.exec(select(Ticket).where(Ticket.order_id == order.id).order_by(col(Ticket.id))).first()
    code = next_code(session, ApprovalRequest, "AR")
    follow_up = FollowUp(
        code=next_code(session, FollowUp, "FU"),
        ticket_id=None if ticket is None else ticket.id,
        order_id=order.id,
        kind="await-review",
        description=(f"Wait for {REQUEST_APPROVER}'s answer to approval request {code} (refund "
                     f"{format_cents(cents)} {currency} on order {order.number}"
                     f"{'' if customer is None else ' for ' + customer.name})."),
        status="open",
        created_at=now,
    )
    session.add(follow_up)
    session.flush()
    decision, note = decide(session, order, cents, currency)
    moment = parse_time(now)
    request = ApprovalRequest(
        code=code,
        order_id=order.id,
        amount_cents=cents,
        currency=currency,
        reason=reason.strip(),
        approver=REQUEST_APPROVER,
        policy_version=REFUND_POLICY_VERSION,
        requested_at=now,
        expires_at=format_time(moment + timedelta(days=APPROVAL_VALID_DAYS)),
        order_status=order.status,
        order_total_cents=order.total_cents,
        order_currency=order.currency,
        follow_up_id=follow_up.id,
        status="requested",
    )
    session.add(request)
    session.flush()
    assert request.id is not None, "a flushed request has an id"
    session.add(ApprovalAnswer(request_id=request.id, decision=decision, note=note,
                               answered_at=format_time(moment + timedelta(minutes=ANSWER_DELAY_MINUTES))))
    return request


def refusal_for_request(
    session: Session, *, order: Order, request: ApprovalRequest, cents: int, currency: str, now: str,
    shown: ShownRecorder | None = None,
) -> str | None:
    """Why this approval request does not allow refunding `cents` `currency` on `order` at `now`, or None. A refusal
    that states the request's columns records them as shown (`shown`)."""

    def stating(message: str, *fields: str) -> str:
        if shown is not None:
            shown.row(request, "code", *fields)
        return message

    if request.order_id != order.id:
        return stating(f"Refund refused: approval {request.code} is not for order {order.number}.", "order_id")
    state = request_state(request, answers_of(session, request), order, now)
    if state.status == "used":
        return f"Refund refused: approval {request.code} has already been used."
    if state.status == "pending":
        return f"Refund refused: approval request {request.code} is still pending; {request.approver} has not answered."
    if state.status == "denied":
        return f"Refund refused: approval request {request.code} was denied."
    if state.status == "expired":
        return stating(f"Refund refused: approval {request.code} expired on {request.expires_at}.", "expires_at")
    if state.status == "invalidated":
        return stating(
            f"Refund refused: approval {request.code} was given for order {order.number} as it was "
            f"({request.order_status}, {format_cents(request.order_total_cents)} {request.order_currency}); "
            f"the order has changed since ({'; '.join(state.changed)}).",
            "order_status", "order_total_cents", "order_currency")
    if request.policy_version != REFUND_POLICY_VERSION:
        return stating(
            f"Refund refused: approval {request.code} was issued under refund policy "
            f"{request.policy_version}, but policy {REFUND_POLICY_VERSION} is in force.", "policy_version")
    if request.amount_cents != cents or request.currency != currency:
        return stating(
            f"Refund refused: approval {request.code} covers {format_cents(request.amount_cents)} "
            f"{request.currency}, not {format_cents(cents)} {currency}.", "amount_cents", "currency")
    return None


def answered_review(session: Session, follow_up: FollowUp, now: str) -> bool:
    """Whether this follow-up waits for an approval request that has been answered by `now`."""
    request = session.exec(select(ApprovalRequest).where(ApprovalRequest.follow_up_id == follow_up.id)).first()
    if request is None:
        return False
    order = session.get(Order, request.order_id)
    return order is not None and request_state(request, answers_of(session, request), order, now).status != "pending"


@dataclass(frozen=True)
class RequestView:
    """What a page shows of one request at a moment."""

    request: ApprovalRequest
    state: RequestState


def request_views(session: Session, requests: list[ApprovalRequest], orders: dict[int, Order], now: str
                  ) -> list[RequestView]:
    """Each request with its state at `now`."""
    return [RequestView(request, request_state(request, answers_of(session, request), orders[request.order_id], now))
            for request in requests]
