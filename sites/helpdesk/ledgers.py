"""Where the helpdesk keeps a long-running agent's durable state: refund approvals and approval requests, the effects
it sends out (refunds and goodwill credits, notifications, escalations, approval requests) and its follow-ups
(unfinished work).

An approval request (sites/helpdesk/approvals.py) is stated as it stands at the ledger's moment (the latest operation
the read includes): `approvals.request_state` of its row, its `approval_answer` rows and its order at that logical
time, so a pending request reads `pending` and an answer is never stated before it is given. The request's
await-review follow-up is among the unfinished work while open.
"""

from __future__ import annotations

from sites.helpdesk.approvals import request_state
from sites.helpdesk.models import ApprovalAnswer, ApprovalRequest, Order
from sites.kit.clock import now_text
from sites.kit.ledgers import ApprovalRecord, LedgerSource, UnfinishedWork
from sites.kit.records import StateSnapshot

APPROVAL_INVALIDATED_BY = ["order.status", "order.total_cents", "order.currency"]
"""The facts of an approval's order whose change invalidates it (a refund approved for an order as it was)."""


def _record(row: dict[str, object], status: str) -> ApprovalRecord:
    return ApprovalRecord.model_validate({
        "id": row["code"], "approver": row["approver"], "object": f"order:{row['order_id']}", "action": "refund",
        "amount": {"cents": row["amount_cents"], "currency": row["currency"]},
        "policy_version": row["policy_version"], "expires_at": row["expires_at"], "status": status,
        "invalidated_by": APPROVAL_INVALIDATED_BY})


def approvals(state: StateSnapshot, moment: int) -> list[ApprovalRecord]:
    """The desk's approvals and approval requests at `moment` (a logical time: the latest operation read)."""
    orders = {row["id"]: Order(**row) for row in state["order"]}
    answers = [ApprovalAnswer(**row) for row in state["approval_answer"]]
    found = [_record(row, str(row["status"])) for row in state["refund_approval"]]
    for row in state["approval_request"]:
        request = ApprovalRequest(**row)
        mine = [a for a in answers if a.request_id == request.id]
        found.append(_record(row, request_state(request, mine, orders[request.order_id], now_text(moment)).status))
    return found


def unfinished(state: StateSnapshot) -> list[UnfinishedWork]:
    return [UnfinishedWork(id=row["code"], kind=row["kind"], description=row["description"], status=row["status"])
            for row in state["follow_up"] if row["status"] == "open"]


LEDGERS = LedgerSource(approvals=approvals, unfinished=unfinished,
                       tables=frozenset({"refund_approval", "approval_request", "approval_answer", "order",
                                         "follow_up"}),
                       effects={"refund": {}, "notification": {}, "escalation": {}, "approval_request": {}},
                       evidence="/helpdesk/approvals")
