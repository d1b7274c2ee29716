"""The ledger's procedures and the rules they enforce on the server.

* Processing an event is the only way an event becomes records: a payment posts one entry, a
  delivery request opens one delivery. A held event, an event already processed, or an event
  whose dependency is not yet processed is refused without a change.
* "Process selected" processes several events in event-number order, whole or not at all: a
  dependency selected with its dependent counts as processed first; one refused event refuses the
  batch, naming every refused event.
* A delivery is dispatched exactly once. Every dispatch submission is recorded: a second
  submission of a request id already sent is recorded as a duplicate, a submission carrying an old
  record version as stale; both are refused, and both stay visible in the journal.
* Amending a delivery needs the current record version and bumps it; a delivered one is final.
* A checkpoint counts the batch's processed and unfinished events; it may only say "complete"
  when nothing in the batch is unfinished.
* A write-off is booked only under its approval, once: a revoked, expired or used approval, or an
  amount above the approval's limit, is refused without a change.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from sites.kit.shown import ShownRecorder, listed
from sites.ledger.models import Checkpoint, Delivery, Dispatch, Entry, Event, WriteOffApproval


def _next_id(session: Session, table: type[Entry] | type[Delivery] | type[Checkpoint]) -> int:
    highest = session.exec(select(func.max(col(table.id)))).one()
    return int(highest or 0) + 1


def new_entry(session: Session, **fields: Any) -> Entry:
    """An entry to post (not yet added): the next id, and the number after the highest one of the ledger's series
    (the period's entries follow LE-1000, the last of the history, whatever ids the history took)."""
    numbers = session.exec(select(Entry.number)).all()
    highest = max((int(number.removeprefix("LE-")) for number in numbers if number.startswith("LE-")), default=1000)
    return Entry(id=_next_id(session, Entry), number=f"LE-{highest + 1}", **fields)


def refusal_to_process(
    session: Session, event: Event, *, ahead: frozenset[int] = frozenset(), shown: ShownRecorder | None = None
) -> str | None:
    """Why `event` cannot be processed now (processed, held, waiting for a dependency), or None. A dependency
    whose id is in `ahead` counts as processed: the same batch processes it first. A refusal states the event's
    status, or its dependency and the dependency's status, and records them as shown (`shown`)."""
    if event.status == "processed":
        if shown is not None:
            shown.row(event, "number", "status", "processed_at")
        return f"Refused: event {event.number} was already processed on {event.processed_at}."
    if event.status == "held":
        if shown is not None:
            shown.row(event, "number", "status")
        return f"Refused: event {event.number} is held and cannot be processed."
    if event.depends_on_id is not None:
        dependency = session.get(Event, event.depends_on_id)
        if dependency is not None and dependency.status != "processed" and dependency.id not in ahead:
            if shown is not None:
                shown.row(event, "number", "depends_on_id")
                shown.row(dependency, "number", "status")
            return (
                f"Refused: event {event.number} depends on {dependency.number}, which is {dependency.status}; "
                f"process {dependency.number} first."
            )
    return None


def refusal_to_process_batch(session: Session, events: list[Event], shown: ShownRecorder | None = None) -> str | None:
    """Why the batch `events` (processed in this order) cannot be processed, or None: a batch is processed
    whole or not at all, so one refused event refuses it, naming every refused event (each refusal records what
    it states as shown, `shown`)."""
    if not events:
        return "Refused: select at least one event to process."
    refusals, ahead = [], frozenset[int]()
    for event in events:
        refusal = refusal_to_process(session, event, ahead=ahead, shown=shown)
        if refusal is not None:
            refusals.append(refusal.removeprefix("Refused: "))
        elif event.id is not None:
            ahead |= {event.id}
    if not refusals:
        return None
    return "Refused, nothing was processed: " + " ".join(refusals)


def process_event(session: Session, event: Event, now: str) -> Entry | Delivery:
    """Turns a processable event into its record and marks it processed, in the caller's transaction."""
    assert event.id is not None, "a stored event has an id"
    record: Entry | Delivery
    if event.kind == "payment":
        record = new_entry(
            session,
            account=event.account or "",
            amount_cents=event.amount_cents or 0,
            currency=event.currency or "",
            memo=event.summary,
            event_id=event.id,
            created_at=now,
        )
    else:
        record = Delivery(
            number=f"D-{event.number.removeprefix('EV-')}",
            request_id=event.request_id or "",
            recipient=event.recipient or "",
            destination=event.destination or "",
            status="pending",
            version=1,
            event_id=event.id,
            updated_at=now,
        )
    session.add(record)
    event.status = "processed"
    event.processed_at = now
    session.add(event)
    return record


def record_of(session: Session, event: Event) -> Entry | Delivery | None:
    """The entry or delivery that processing `event` produced, or None. An event's page shows it, or that there
    is none, so the look-up is a whole list (of the one record, or of none)."""
    records: list[Entry] | list[Delivery]
    if event.kind == "payment":
        records = listed(session, select(Entry).where(Entry.event_id == event.id))
    else:
        records = listed(session, select(Delivery).where(Delivery.event_id == event.id))
    return records[0] if records else None


def dispatch(
    session: Session, delivery: Delivery, *, request_id: str, version: int, now: str, shown: ShownRecorder | None = None
) -> str | None:
    """Records one dispatch submission; returns why it was refused, or None when the delivery was sent. A refusal
    states the earlier sent dispatch, or the delivery's current version, and records them as shown (`shown`)."""
    assert delivery.id is not None, "a stored delivery has an id"
    sent = session.exec(select(Dispatch).where(Dispatch.request_id == request_id, Dispatch.outcome == "sent")).first()
    if sent is not None:
        if shown is not None:
            shown.row(sent, "request_id", "outcome", "submitted_at")
        outcome = "duplicate"
        refusal = (
            f"Refused: request {request_id} was already delivered on {sent.submitted_at}. "
            "This second submission was recorded as a duplicate."
        )
    elif version != delivery.version:
        if shown is not None:
            shown.row(delivery, "number", "version")
        outcome = "stale"
        refusal = (
            f"Refused: record version {version} is stale; delivery {delivery.number} is at version "
            f"{delivery.version}. This submission was recorded as stale."
        )
    else:
        outcome, refusal = "sent", None
        delivery.status = "delivered"
        delivery.version += 1
        delivery.updated_at = now
        session.add(delivery)
    session.add(
        Dispatch(delivery_id=delivery.id, request_id=request_id, version=version, outcome=outcome, submitted_at=now)
    )
    return refusal


def refusal_to_amend(delivery: Delivery, version: int, shown: ShownRecorder | None = None) -> str | None:
    """Why `delivery` cannot be amended from a form that carried `version`, or None. A refusal states the
    delivery's status or current version and records it as shown (`shown`)."""
    if delivery.status == "delivered":
        if shown is not None:
            shown.row(delivery, "number", "status")
        return f"Refused: delivery {delivery.number} was delivered and can no longer be amended."
    if version != delivery.version:
        if shown is not None:
            shown.row(delivery, "number", "version")
        return (
            f"Refused: record version {version} is stale; delivery {delivery.number} is at version "
            f"{delivery.version}. Reload the page and try again."
        )
    return None


def batch_counts(session: Session, batch: str) -> tuple[int, int]:
    """(processed, unfinished) events of a batch; queued and held events are unfinished."""
    events = list(session.exec(select(Event).where(Event.batch == batch)))
    processed = sum(event.status == "processed" for event in events)
    return processed, len(events) - processed


def record_checkpoint(session: Session, *, batch: str, status: str, note: str, now: str) -> str | None:
    """Records a checkpoint of `batch`; returns why it was refused (a "complete" with unfinished events)."""
    processed, unfinished = batch_counts(session, batch)
    if status == "complete" and unfinished:
        return (
            f"Refused: batch {batch} still has {unfinished} unfinished event(s); record a partial checkpoint "
            "or finish the batch first."
        )
    checkpoint_id = _next_id(session, Checkpoint)
    session.add(
        Checkpoint(
            id=checkpoint_id,
            number=f"CP-{checkpoint_id}",
            batch=batch,
            status=status,
            processed_count=processed,
            unfinished_count=unfinished,
            note=note.strip(),
            recorded_at=now,
        )
    )
    return None



TODAY_FROM = 10
"""`YYYY-MM-DD` is the first 10 characters of a clock time: an approval valid until a day is valid all that day."""


def write_off_state(approval: WriteOffApproval, now: str) -> str:
    """What an approval's page says of it: approved, revoked, used, or expired (approved, past its last day)."""
    if approval.status == "approved" and approval.valid_until < now[:TODAY_FROM]:
        return "expired"
    return approval.status


def refusal_to_write_off(approval: WriteOffApproval, cents: int | None, now: str,
                         shown: ShownRecorder | None = None) -> str | None:
    """Why a write-off of `cents` under `approval` is refused now (revoked, expired, used, no amount, above the
    limit), or None. A refusal states the approval's status, last day or limit and records it as shown."""
    state = write_off_state(approval, now)
    if state != "approved":
        if shown is not None:
            shown.row(approval, "number", "status", "valid_until")
        if state == "expired":
            return f"Refused: approval {approval.number} expired on {approval.valid_until}."
        if state == "used":
            return f"Refused: approval {approval.number} was already used on {approval.used_at}."
        return f"Refused: approval {approval.number} was revoked."
    if cents is None or cents <= 0:
        return "Refused: type a positive amount like 125.00."
    if cents > approval.limit_cents:
        if shown is not None:
            shown.row(approval, "number", "limit_cents", "currency")
        return (f"Refused: approval {approval.number} allows at most {approval.limit_cents // 100}."
                f"{approval.limit_cents % 100:02d} {approval.currency}.")
    return None


def write_off(session: Session, approval: WriteOffApproval, cents: int, now: str) -> Entry:
    """Books the write-off under `approval` (an entry on its account, in its currency) and marks the approval used."""
    entry = new_entry(
        session,
        account=approval.account,
        amount_cents=cents,
        currency=approval.currency,
        memo=f"Write-off of {approval.invoice} under {approval.number}",
        created_at=now,
    )
    session.add(entry)
    approval.status = "used"
    approval.used_at = now
    session.add(approval)
    return entry
