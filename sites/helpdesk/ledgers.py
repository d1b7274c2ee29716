"""Where the helpdesk keeps a long-running agent's durable state: refund approvals and approval requests, the effects
it sends out (refunds and goodwill credits, notifications, escalations) and its follow-ups (unfinished work).

An approval request (sites/helpdesk/approvals.py) is stated as its rows hold it, with no clock: its status is what
the desk's requests wrote (`requested`, then `used`). Whether it is pending, approved, denied, expired or invalidated
at a moment is `approvals.request_state` of its rows, its `approval_answer` rows and that moment. An answer row is
written with the request, dated when it is given; a ledger read without the moment would state an answer before it
is given, so it reads no answers. The request's await-review follow-up is among the unfinished work while open.
"""

from __future__ import annotations

from sites.kit.ledgers import ApprovalRecord, LedgerSource, Money, UnfinishedWork
from sites.kit.records import StateSnapshot

APPROVAL_INVALIDATED_BY = ["order.status", "order.total_cents", "order.currency"]
"""The facts of an approval's order whose change invalidates it (a refund approved for an order as it was)."""


def approvals(state: StateSnapshot) -> list[ApprovalRecord]:
    return [ApprovalRecord(id=row["code"], approver=row["approver"], object=f"order:{row['order_id']}",
                           action="refund", amount=Money(cents=row["amount_cents"], currency=row["currency"]),
                           policy_version=row["policy_version"], expires_at=row["expires_at"], status=row["status"],
                           invalidated_by=APPROVAL_INVALIDATED_BY)
            for row in state["refund_approval"]] + [
        ApprovalRecord(id=row["code"], approver=row["approver"], object=f"order:{row['order_id']}", action="refund",
                       amount=Money(cents=row["amount_cents"], currency=row["currency"]),
                       policy_version=row["policy_version"], expires_at=row["expires_at"], status=row["status"],
                       invalidated_by=APPROVAL_INVALIDATED_BY)
        for row in state["approval_request"]]


def unfinished(state: StateSnapshot) -> list[UnfinishedWork]:
    return [UnfinishedWork(id=row["code"], kind=row["kind"], description=row["description"], status=row["status"])
            for row in state["follow_up"] if row["status"] == "open"]


LEDGERS = LedgerSource(approvals=approvals, unfinished=unfinished,
                       tables=frozenset({"refund_approval", "approval_request", "follow_up"}),
                       effect_tables=frozenset({"refund", "notification", "escalation"}))
