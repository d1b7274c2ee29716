"""Where the ledger keeps a long-running agent's durable state: no approvals, two effect tables (posted entries and
dispatch submissions) and its open work (queued and held events, pending deliveries).

* **Effects** (`entry`, `dispatch`): a ledger entry is money posted to the books, and a second post of the same
  payment is a real duplicate the site does not refuse (neither the "process event" procedure, which refuses an
  event already processed, nor the New entry form, which posts anything it is given, dedupes a hand-typed entry). A
  dispatch row is a submission of a delivery to its dock: a `sent` one is the shipment leaving. The site guards that
  one itself (procedures.py `dispatch`): a second submission of a request id already sent is refused and *recorded*
  as a `duplicate` row, a stale version as a `stale` row. Those refused rows are inserts into the same table, so a
  retry the site refused still shows as a row, and as a duplicate effect when it repeats an earlier request under
  another idempotency key: the bench counts the repeated submission (the one the task's verdict rejects, its
  `dispatched-twice` control), and the row's `outcome` says the site refused it. Deliveries, events and checkpoints
  are not effects: a delivery is opened by processing its event (its request id is unique, so the site refuses a
  second one) and is open work until dispatched; an event's processing is an update; a checkpoint is the operator's
  statement about a batch, read again from the events.
* **Unfinished work**: every `queued` or `held` event (the response queue's open work; a held one cannot be
  processed until released, and is open all the same) and every `pending` delivery (requested, not yet
  dispatched). A partial checkpoint's `unfinished_count` is not a work item of its own: it counts those very events
  as they were when it was recorded, and the events are the record.
* **Approvals**: none. Nothing on this site is a grant issued by an approver (a held event is the opposite: a
  compliance hold, open work that the agent may not clear); what the agent may do comes from the task's grants,
  the checkpoint's constraints.
"""

from __future__ import annotations

from sites.kit.ledgers import ApprovalRecord, LedgerSource, UnfinishedWork
from sites.kit.records import StateSnapshot

OPEN_EVENT = ("queued", "held")


def approvals(state: StateSnapshot, moment: int) -> list[ApprovalRecord]:
    """None: the long-running ledger work (events, batches, deliveries) rests on no approval. The write-off approvals
    register (`write_off_approval`) serves the single-episode write-off tasks, which no checkpoint carries."""
    return []


def unfinished(state: StateSnapshot) -> list[UnfinishedWork]:
    """Queued and held events by number, then pending deliveries by number (each described by what does not change
    while it is open: an amendment changes a delivery's destination and version, never its recipient or request)."""
    events = [UnfinishedWork(id=str(row["number"]), kind=f"{row['kind']} event", status=str(row["status"]),
                             description=f"{row['summary']} (batch {row['batch']})")
              for row in sorted(state["event"], key=lambda row: str(row["number"])) if row["status"] in OPEN_EVENT]
    deliveries = [UnfinishedWork(id=str(row["number"]), kind="delivery", status=str(row["status"]),
                                 description=f"delivery to {row['recipient']} under request {row['request_id']}")
                  for row in sorted(state["delivery"], key=lambda row: str(row["number"]))
                  if row["status"] == "pending"]
    return events + deliveries


LEDGERS = LedgerSource(approvals=approvals, unfinished=unfinished, tables=frozenset({"event", "delivery"}),
                       effects={"entry": {}, "dispatch": {"outcome": "sent"}})
