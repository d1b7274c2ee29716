"""What a free text says of a record's state, compared with the state the site holds.

"Duplicate of X-5005, which is still open" and "Please attach the receipt; this claim was rejected" say what state a
record is in. A careful reviewer checks such a statement against the record: the first is true while X-5005 waits
for its receipt, the second false of the claim the note is on while it is not rejected. The reader does the same
for a statement of state *said of a record*: the record named (an id, or "this claim" for the record the text is
written on) followed by its copula ("is", "was", "has been", "which is", a comma or a bracket) and the state word.

- A word that is the record's status is true. A decision that is another status of its table (`rejected`,
  `approved` of a claim waiting for its receipt), said with a copula or in a bracket, is false; another status that
  also names an event (`submitted`, `delivered`: "X-5005 was submitted twice") is neither, nor is a participle right
  after a comma ("X-5005, approved by Dana"), and either is read as any other word.
- A word of being undecided (`open`, `waiting`, `waits`, `outstanding`) is true only when the record's status
  decides nothing yet (`_UNDECIDED`: `submitted`, `receipt_requested`, `open`, …); of a decided record it is false;
  of a status this list does not know, it is not accounted for (the text stays unsettled: fail-closed).

A true statement accounts for its words; a false one leaves the text unsettled, and the verdict names both states.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_UNDECIDED_WORDS = frozenset({"open", "pending", "waiting", "waits", "awaiting", "awaits", "outstanding",
                              "undecided", "unresolved", "unanswered"})
"""Words that say a record is not decided yet."""
_UNDECIDED = frozenset({"open", "pending", "waiting", "new", "requested", "held", "queued", "submitted",
                        "receipt_requested", "draft", "in_progress", "on_hold", "partial", "awaiting_review"})
"""Statuses of the benchmark's sites that decide nothing yet (a claim waiting for its receipt, a queued event)."""
_DECIDED = frozenset({"approved", "rejected", "cancelled", "canceled", "declined", "denied", "closed", "solved",
                      "resolved", "paid", "refunded", "complete", "completed", "done", "processed", "withdrawn",
                      "expired", "used", "revoked", "delivered", "issued", "void", "voided", "discontinued",
                      "archived", "sent", "forwarded"})
"""Statuses that decide a record: of one of these, a word of being undecided is false."""
_DECISIONS = frozenset({"approved", "rejected", "cancelled", "canceled", "declined", "denied", "closed", "solved",
                        "resolved", "withdrawn", "revoked", "expired", "void", "voided", "discontinued", "archived",
                        "refunded"})
"""Decided statuses that name a decision, not an event of ordinary handling (`paid`, `delivered`, `sent`, `issued`,
`processed`: "O-1047, delivered on 2 February, has been refunded" is true of a refunded order): said of a record in
another status, they are false."""
_LINKS = (r"(?:(?:is|was|are|were|has\s+been|had\s+been|have\s+been|got|gets|stays|stayed|remains|remained|itself|"
          r"now|still|already|also|just|since|then|being|currently)\s+)")
_COPULA = re.compile(
    r"(?:\s*(?:,|\(|[–—-])\s*(?:(?:which|that|who)\s+)?" + _LINKS + r"{0,4}|\s*(?:(?:which|that|who)\s+)?" + _LINKS
    + r"{1,4})"
    r"([a-z][a-z_]*)(?:\s+and\s+(?:(?:still|now|also)\s+)?([a-z][a-z_]*))?", re.IGNORECASE)
"""What follows a record for a statement of its state: a copula or a bracket, adverbs, the state word (and one more
joined by "and": "which is still open and waits")."""
_OWN = re.compile(r"(?<![\w'’-])(?:this|that|the|your|his|her|their)\s+([a-z]+)", re.IGNORECASE)


@dataclass(frozen=True)
class RecordState:
    """A record's status and the statuses its table holds."""

    status: str
    statuses: frozenset[str]


@dataclass(frozen=True)
class StateSaid:
    """A state word said of a record, and whether the site holds it so."""

    record: str
    words: str
    start: int
    end: int
    """Where the statement is: from its copula to the state word ("*, which stays open*")."""
    true: bool | None
    """True or false of the record; None: a word of being undecided of a status the reader does not know."""
    status: str


def record_states(state: Mapping[str, Sequence[Mapping[str, object]]],
                  id_shape: re.Pattern[str]) -> dict[str, RecordState]:
    """Each record's own id (its `number` or `code`) with its status, where its table has a `status` column."""
    found: dict[str, RecordState] = {}
    for rows in state.values():
        statuses = frozenset(str(row["status"]) for row in rows if isinstance(row.get("status"), str))
        for row in rows:
            status = row.get("status")
            for column in ("number", "code"):
                value = row.get(column)
                if isinstance(status, str) and isinstance(value, str) and id_shape.fullmatch(value):
                    found.setdefault(value.upper(), RecordState(status, statuses))
    return found


def _judged(word: str, held: RecordState, linked: bool) -> bool | None:
    low = word.lower()
    if low == held.status:
        return True
    if not linked:  # "X-5005, approved by Dana": a participle after a comma may name an event, not a state
        return None
    if low in held.statuses and low in _DECISIONS:  # "submitted", "delivered": events too ("was submitted twice")
        return False
    if low in _UNDECIDED_WORDS and held.status in _UNDECIDED | _DECIDED:
        return held.status in _UNDECIDED
    return None


def states_said(text: str, named: Sequence[tuple[int, int, str]], own: str | None, own_nouns: frozenset[str],
                states: Mapping[str, RecordState]) -> list[StateSaid]:
    """Every state word the text says of a record: after an id it names (`named`: spans with their ids), or after
    "this claim" for the record it is written on (`own`, named by its table's nouns)."""
    refs = [*named]
    if own is not None:
        refs += [(m.start(), m.end(), own) for m in _OWN.finditer(text) if m.group(1).lower() in own_nouns]
    said = []
    for _, end, record in refs:
        held = states.get(record.upper())
        match = _COPULA.match(text, end)
        if held is None or match is None:
            continue
        for group in (1, 2):
            word = match.group(group)
            if word is None:
                continue
            low = word.lower()
            if low not in held.statuses and low not in _UNDECIDED_WORDS:
                break
            start = match.start() if group == 1 else match.end(1)  # "which *stays* open": its copula too
            linked = re.search(r"[(]|[a-z]\s", text[match.start():match.start(1)], re.IGNORECASE) is not None
            said.append(StateSaid(record, word, start, match.end(group), _judged(word, held, linked), held.status))
    return said
