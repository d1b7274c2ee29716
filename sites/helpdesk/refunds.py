"""The refund procedure: which approvals a refund may use, and what issuing one changes.

The rules are enforced here, on the server, so an agent cannot refund with an expired, used,
foreign or outdated approval, or for a different amount than the one approved.
"""

from __future__ import annotations

from sqlmodel import Session, select

from sites.helpdesk.models import CURRENCIES, REFUND_POLICY_VERSION, ApprovalRequest, Order, Refund, RefundApproval
from sites.helpdesk.work import open_refund_follow_up
from sites.kit.money import format_cents
from sites.kit.shown import ShownRecorder


def refunded_cents(session: Session, order: Order) -> int:
    """Sum of every refund and goodwill credit already issued on the order."""
    return sum(refund.amount_cents for refund in session.exec(select(Refund).where(Refund.order_id == order.id)))


def refusal_for_amount(session: Session, order: Order, cents: int | None, text: str, kind: str) -> str | None:
    """Why `text` cannot be refunded on this order (unparseable, not positive, too much), or None."""
    if cents is None:
        return f'{kind} refused: "{text}" is not an amount; type it like 49.90.'
    if cents <= 0:
        return f"{kind} refused: the amount must be more than 0.00."
    remaining = order.total_cents - refunded_cents(session, order)
    if cents > remaining:
        return (
            f"{kind} refused: {format_cents(cents)} {order.currency} is more than the "
            f"{format_cents(remaining)} {order.currency} still refundable on order {order.number}."
        )
    return None


def refusal_for_approval(
    *, order: Order, approval: RefundApproval | None, code: str, cents: int, currency: str, now: str,
    shown: ShownRecorder | None = None,
) -> str | None:
    """Why this approval does not allow refunding `cents` `currency` on `order` at `now`, or None. A refusal that
    states the approval's columns records them as shown (`shown`)."""
    if currency not in CURRENCIES:
        return f"Refund refused: unknown currency {currency}."
    if code in ("", "none"):
        return f"Refund refused: an approval is required to refund order {order.number}."
    if approval is None:
        return f"Refund refused: approval {code} does not exist."

    def stating(message: str, *fields: str) -> str:
        if shown is not None:
            shown.row(approval, "code", *fields)
        return message

    if approval.order_id != order.id:
        return stating(f"Refund refused: approval {approval.code} is not for order {order.number}.", "order_id")
    if approval.status != "active":
        return stating(f"Refund refused: approval {approval.code} has already been used.", "status")
    if approval.expires_at <= now:  # both are YYYY-MM-DD HH:MM, so text order is time order
        return stating(f"Refund refused: approval {approval.code} expired on {approval.expires_at}.", "expires_at")
    if approval.policy_version != REFUND_POLICY_VERSION:
        return stating(
            f"Refund refused: approval {approval.code} was issued under refund policy "
            f"{approval.policy_version}, but policy {REFUND_POLICY_VERSION} is in force.", "policy_version")
    if approval.amount_cents != cents or approval.currency != currency:
        return stating(
            f"Refund refused: approval {approval.code} covers {format_cents(approval.amount_cents)} "
            f"{approval.currency}, not {format_cents(cents)} {currency}.", "amount_cents", "currency")
    return None


def issue_refund(
    session: Session,
    *,
    order: Order,
    cents: int,
    reason: str,
    created_at: str,
    approval: RefundApproval | None,
    request: ApprovalRequest | None = None,
) -> Refund:
    """Records a refund (method "approval" when bound to an approval or an approved request, else "goodwill") in the
    session.

    The approval (or the request, pointing at the refund) becomes "used", the order "refunded" or
    "partially_refunded", and a follow-up opens to tell the customer (unfinished work until someone marks it
    done); the caller's session commits all of it, with its journal rows, as one transaction.
    """
    assert order.id is not None, "a stored order has an id"
    already = refunded_cents(session, order)
    refund = Refund(
        order_id=order.id,
        amount_cents=cents,
        currency=approval.currency if approval is not None else order.currency if request is None else request.currency,
        reason=reason,
        method="goodwill" if approval is None and request is None else "approval",
        approval_id=None if approval is None else approval.id,
        status="issued",
        created_at=created_at,
    )
    session.add(refund)
    if approval is not None:
        approval.status = "used"
        session.add(approval)
    if request is not None:
        session.flush()
        request.status = "used"
        request.refund_id = refund.id
        session.add(request)
    order.status = "refunded" if already + cents >= order.total_cents else "partially_refunded"
    session.add(order)
    open_refund_follow_up(session, order=order, cents=cents, currency=refund.currency, now=created_at)
    return refund
