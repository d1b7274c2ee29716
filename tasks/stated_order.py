"""Where an instruction states an order between its actions, read from its words: "do A, then B", "first A, then B",
"A. Then B", "once A is done, B", "B once A is done", "when A are done B", "A before doing B", "before doing B, A",
"A before you B", "after doing A, B", "B after doing A".

A side's kind is that of its first verb: a write (process, post, send, set, mark...), a read (check, look up,
open...) or finishing (finish, report, give...). An order between two writes is one the journal can show, so the
task checks it (`kind: ordered`, `order_problems`) and the audit swaps the writes to see the check fail
(`computerops.catalog.mutants`). What is not read as an order: "then" meaning "in that case" (`If X, then Y`) or "at
that time" (`See you then.`), "once" counting (`exactly once`, `once each`), "first" as an ordinal (`the first
claim`), a condition (`only when the correction changes it`), the order of the items of one action (`oldest
first`, `in the order the dependency requires`), and anything in quotes, angle brackets or parentheses (dictated
text, placeholders, asides)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from tasks.spec import Ordered
from tasks.task import TaskSpec

SideKind = Literal["write", "read", "finish"]

_WRITES = frozenset({
    "add", "amend", "apply", "approve", "archive", "ask", "book", "cancel", "change", "clear", "close", "correct",
    "create", "credit", "decide", "delete", "discontinue", "dispatch", "draft", "escalate", "forward", "handle",
    "issue", "lower", "mark", "move", "notify", "pay", "post", "prepare", "process", "raise", "receive", "record",
    "refund", "reject", "release", "rename", "reply", "request", "save", "send", "set", "solve", "submit", "tell",
    "update", "write",
})
_READS = frozenset({
    "check", "compare", "confirm", "find", "look", "make", "open", "read", "reload", "search", "see", "verify",
    "view", "wait",
})
_FINISHES = frozenset({"answer", "finish", "give", "report", "say", "stop"})
_PARTICIPLES = {
    "added": "add", "amended": "amend", "applied": "apply", "approved": "approve", "archived": "archive",
    "asked": "ask", "booked": "book", "cancelled": "cancel", "canceled": "cancel", "changed": "change",
    "cleared": "clear", "closed": "close", "corrected": "correct", "created": "create", "credited": "credit",
    "decided": "decide", "deleted": "delete", "discontinued": "discontinue", "dispatched": "dispatch",
    "drafted": "draft", "escalated": "escalate", "forwarded": "forward", "handled": "handle", "issued": "issue",
    "lowered": "lower", "marked": "mark", "moved": "move", "notified": "notify", "paid": "pay", "posted": "post",
    "prepared": "prepare", "processed": "process", "raised": "raise", "received": "receive", "recorded": "record",
    "refunded": "refund", "rejected": "reject", "released": "release", "renamed": "rename", "replied": "reply",
    "requested": "request", "saved": "save", "sent": "send", "solved": "solve", "submitted": "submit", "told": "tell",
    "updated": "update", "written": "write", "done": "do",
}
_MASKED = re.compile(r'"[^"]*"|“[^”]*”|<[^<>]*>|\([^()]*\)')
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|;")
_THEN = re.compile(r"(?:(?<=,)|(?<=,\s)|(?<=:\s)|(?<=\band\s))then\s+(?=\w)", re.IGNORECASE)
_LEADING_THEN = re.compile(r"then\s+(?=\w)", re.IGNORECASE)
_CONDITION = re.compile(r"\s*(?:if|unless|in case|should|whether)\b[^,]*,\s*(?:then\s+)?", re.IGNORECASE)
_SUBJECT = r"(?:all\s+of\s+them|it|they|he|she|both|this|that|the\s+\w+(?:\s+\w+)?)"
_TEMPORAL = re.compile(rf"\b(once|when|after)\s+({_SUBJECT}\s+(?:is|are|was|were|has\s+been|have\s+been)\s+(\w+))",
                       re.IGNORECASE)
_GERUND = re.compile(r"\b(before|after)\s+(?=you\s+\w|(?!\w*thing\b)\w{2,}ing\b)", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[,;:]\s*(?:and\s+)?|\s+and\s+")
_JOINERS = re.compile(r"(?:[\s,;:]+(?:and\b)?)+$")


@dataclass(frozen=True)
class StatedOrder:
    """One order the instruction states: `earlier` is to be done before `later` (both as written), and `marker`, the
    words that say so, begins at `at` in the instruction."""

    earlier: str
    later: str
    marker: str
    at: int

    @property
    def kinds(self) -> tuple[SideKind | None, SideKind | None]:
        """What each side is: the kind of its first verb (None: no verb this reader knows)."""
        return side_kind(self.earlier), side_kind(self.later)

    @property
    def between_writes(self) -> bool:
        """Both sides change something: an order the journal shows, so one to check."""
        return self.kinds == ("write", "write")


def side_kind(text: str) -> SideKind | None:
    """The kind of the first verb in `text` (a gerund or a participle counts as its verb)."""
    for word in re.findall(r"[a-z]+", masked(text).lower()):
        verb = _verb(word)
        if verb in _WRITES:
            return "write"
        if verb in _READS:
            return "read"
        if verb in _FINISHES:
            return "finish"
    return None


def _verb(word: str) -> str:
    """A word's verb: itself, a participle's (`told` -> `tell`), or a gerund's (`posting`, `closing`, `setting`)."""
    if word in _PARTICIPLES:
        return _PARTICIPLES[word]
    if word.endswith("ing") and len(word) > 5:
        stem = word[:-3]
        for verb in (stem, stem + "e", stem[:-1]):
            if verb in _WRITES or verb in _READS or verb in _FINISHES:
                return verb
    return word


def masked(text: str) -> str:
    """The text with what is quoted, bracketed or in parentheses blanked out (`x`), every character at its place."""
    return _MASKED.sub(lambda m: m.group(0)[0] + "x" * (len(m.group(0)) - 2) + m.group(0)[-1], text)


@dataclass(frozen=True)
class _Sentence:
    """One sentence of the instruction (a `;` ends one too): the text, the same text masked, and where it lies."""

    text: str
    masked: str
    start: int
    end: int

    def order(self, earlier: tuple[int, int], later: tuple[int, int], marker: str, at: int) -> StatedOrder:
        """A stated order between the spans `earlier` and `later`, their joining punctuation left out."""
        return StatedOrder(earlier=self._span(*earlier), later=self._span(*later), marker=marker, at=at)

    def _span(self, start: int, end: int) -> str:
        kept = _JOINERS.sub("", self.masked[start:end])
        return self.text[start:start + len(kept)].strip()

    def thens(self) -> list[re.Match[str]]:
        """Its sequencing "then"s: after a comma, a colon or "and", or opening the sentence; not the "then" of a
        condition (`If X, then Y`)."""
        marks = [m for m in _THEN.finditer(self.masked, self.start, self.end)
                 if _CONDITION.fullmatch(self.masked, self.start, m.start()) is None]
        opening = _LEADING_THEN.match(self.masked, self.start, self.end)
        return ([opening] if opening is not None else []) + marks

    def clause_start(self, start: int, end: int) -> int:
        """Where the step in [start, end) begins: past a leading condition (`If the rules say so, `) and past a
        heading whose colon introduces it (`Finish batch B-2: process each event`), though not past the colon of a
        form's values (`with the form: 13.70 EUR`)."""
        match = _CONDITION.match(self.masked, start, end)
        start = match.end() if match is not None else start
        colon = self.masked.rfind(":", start, end)
        if colon >= 0 and side_kind(self.masked[colon + 1:end]) is not None:
            return colon + 1
        return start

    def leads(self, at: int) -> bool:
        """The words at `at` begin their clause: the sentence's start, or right after a clause break."""
        before = self.masked[self.start:at].rstrip()
        return not before or before.endswith((",", ";", ":")) or re.search(r"(?:^|\W)and$", before) is not None

    def clause_before(self, at: int) -> tuple[int, int]:
        """The clause that ends at `at`: from the last clause break before it (or the sentence's start)."""
        breaks = [m.end() for m in _CLAUSE_BREAK.finditer(self.masked, self.start, at)]
        return (breaks[-1] if breaks else self.start), at

    def clause_after(self, at: int) -> tuple[int, int]:
        """The clause that begins at `at`: to the next clause break (or the sentence's end)."""
        found = _CLAUSE_BREAK.search(self.masked, at, self.end)
        return at, found.start() if found is not None else self.end

    def rest_after(self, at: int) -> tuple[int, int]:
        """What a leading clause (`Once it is approved, `) conditions: from `at`, past commas, to the next
        sequencing "then" or the sentence's end."""
        while at < self.end and self.masked[at] in " ,":
            at += 1
        later = [m.start() for m in self.thens() if m.start() >= at]
        return at, later[0] if later else self.end

    def last_step(self) -> tuple[int, int]:
        """What the sentence does last: what follows its last sequencing "then" (or its condition), to its end."""
        marks = self.thens()
        return (marks[-1].end() if marks else self.clause_start(self.start, self.end)), self.end


def stated_orders(instruction: str) -> list[StatedOrder]:
    """Every order the instruction states between two of its actions, in the order they are written."""
    hidden = masked(instruction)
    found: list[StatedOrder] = []
    previous: _Sentence | None = None  # for a sentence that opens with "Then"
    for start, end in _sentences(hidden):
        sentence = _Sentence(text=instruction, masked=hidden, start=start, end=end)
        found += _then_orders(sentence, previous)
        found += _temporal_orders(sentence)
        found += _gerund_orders(sentence)
        previous = sentence
    return sorted(found, key=lambda order: order.at)


def write_orders(instruction: str) -> list[StatedOrder]:
    """The stated orders whose two sides are both writes."""
    return [order for order in stated_orders(instruction) if order.between_writes]


def order_problems(spec: TaskSpec) -> list[str]:
    """A task whose instruction states more orders between writes than it has `ordered` checks and declared `swap:`
    equivalent mutants: some stated order is one the verdict does not hold the agent to."""
    stated = write_orders(spec.instruction)
    checks = sum(isinstance(check, Ordered) for check in spec.required_procedure)
    declared = sum(mutant.mutant.startswith("swap:") for mutant in spec.equivalent_mutants)
    if len(stated) <= checks + declared:
        return []
    said = "; ".join(f"{_short(o.earlier)!r} before {_short(o.later)!r}" for o in stated)
    return [f"{spec.id}: the instruction states {len(stated)} order(s) between writes ({said}) but the task has "
            f"{checks} `ordered` check(s) and {declared} declared `swap:` equivalent mutant(s)"]


def _short(text: str, words: int = 6) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _sentences(hidden: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of the masked instruction, leading white space left out."""
    start = 0
    for match in [*_SENTENCE_END.finditer(hidden), None]:
        end = len(hidden) if match is None else match.start()
        while start < end and hidden[start].isspace():
            start += 1
        if start < end:
            yield start, end
        start = end + 1


def _then_orders(sentence: _Sentence, previous: _Sentence | None) -> list[StatedOrder]:
    """"A, then B", "A, and then B", "first A, then B", and a sentence that opens "Then B" after the sentence of A."""
    marks = sentence.thens()
    orders = []
    step_start = sentence.start
    for k, mark in enumerate(marks):
        later = (mark.end(), marks[k + 1].start() if k + 1 < len(marks) else sentence.end)
        if mark.start() == sentence.start:
            if previous is not None:
                orders.append(sentence.order(previous.last_step(), later, mark.group(0).strip(), mark.start()))
        else:
            earlier = (sentence.clause_start(step_start, mark.start()), mark.start())
            orders.append(sentence.order(earlier, later, mark.group(0).strip(), mark.start()))
        step_start = mark.end()
    return orders


def _temporal_orders(sentence: _Sentence) -> list[StatedOrder]:
    """"Once it is approved, issue the refund", "mark it done once they have been told", "when all of them are
    processed record a checkpoint": a clause of a finished action, and the action that waits for it."""
    orders = []
    for match in _TEMPORAL.finditer(sentence.masked, sentence.start, sentence.end):
        if _verb(match.group(3).lower()) not in _WRITES | _READS:
            continue  # "once it is in place": no action finished
        later = (sentence.rest_after(match.end()) if sentence.leads(match.start())
                 else sentence.clause_before(match.start()))
        orders.append(sentence.order(match.span(2), later, match.group(1).lower(), match.start()))
    return orders


def _gerund_orders(sentence: _Sentence) -> list[StatedOrder]:
    """"Check the policy before forwarding it", "make sure before you finish", "After processing the event, post
    the fee": the marked clause and the main one, in the order the marker says."""
    orders = []
    for match in _GERUND.finditer(sentence.masked, sentence.start, sentence.end):
        marked = sentence.clause_after(match.end())
        main = (sentence.rest_after(marked[1]) if sentence.leads(match.start())
                else sentence.clause_before(match.start()))
        before = match.group(1).lower() == "before"
        orders.append(sentence.order(main if before else marked, marked if before else main, match.group(1).lower(),
                                     match.start()))
    return orders
