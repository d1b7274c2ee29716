"""Which parts of a free text assert something: clauses, and the words that take an assertion back.

A notice that mentions "refund" and "issued" does not say that the refund was issued when it says the refund "is
pending and will be issued", "would be issued once approved", "was not issued" or "was issued but reversed". The
verifier reads free text in clauses (sentences, split further at conjunctions such as *and*, *but*, *which*) and
marks where a statement is taken back:

- **negation** (`not`, `no`, `never`, `n't`, `without`, `instead of`, ...) takes back what follows it in its clause
  ("sent by post, not by e-mail" asserts post and denies e-mail);
- **modality and futurity** (`will`, `would`, `should`, `can`, `may`, `to be`, `going to`, `being`, ...) take back
  what follows them in the clause; **pending states** (`pending`, `scheduled`, `queued`, `awaiting`, `in progress`,
  ...) take back the whole clause; a **condition** (`if`, `once`, `unless`, `as soon as`, ...) takes back its whole
  sentence, and so does a question;
- **reported failure**: a delivery that came back (`bounced`, `undeliverable`, `was returned`, `returned to
  sender`) takes back the whole text (the notice that something was sent and then returned does not say it
  arrived); other failures (`failed`, `rejected`, `declined`, `reversed`, `voided`) take back their sentence.

An `outcome` reading (the default: a notice that something was done) applies all of them; a `circumstance` reading
(a reason describing a situation, where "suspected account takeover" is exactly what is meant) applies negation
only. Numbers written in words are read as digits first (`text_to_num`), so "forty-nine euros ninety" is an amount.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from text_to_num import alpha2digit

Reading = Literal["outcome", "circumstance"]

_NEGATORS = (
    "not", "never", "cannot", "can't", "without", "none", "nothing", "nor", "neither", "nobody", "nowhere",
    "unable", "instead of", "rather than", "other than", "except", "yet to", "failed to", "fail to",
)
_MODALS = (
    "will", "would", "shall", "should", "could", "can", "may", "might", "must", "to be", "going to", "about to",
    "need to", "needs to", "has to", "have to", "plan to", "plans to", "planned to", "intend to", "intends to",
    "expect to", "expects to", "expected to", "try to", "trying to", "attempt to", "attempting to", "want to",
    "wants to", "hope", "hopes", "hopefully", "being", "soon", "later",
)
_PENDING = (
    "pending", "scheduled", "queued", "awaiting", "upcoming", "in progress", "under review", "on hold", "request",
    "requests",
    "not yet", "tomorrow", "next week", "next month", "in due course",
)
_CONDITIONS = ("if", "unless", "once", "as soon as", "provided that", "in case", "whether", "should you", "assuming")
_SENTENCE_NEGATIONS = ("it is not true that", "it's not true that", "it is not the case that", "it is false that",
                       "it is untrue that")
"""Negations that take back their whole sentence, "and" and "which" included."""
_DELIVERY_FAILURES = (
    "bounced", "bounce", "bounces", "undeliverable", "undelivered", "returned to sender", "was returned",
    "were returned", "been returned", "got returned", "is returned", "came back", "did not arrive",
    "didn't arrive", "never arrived", "delivery failure", "could not be delivered",
)
_FAILURES = ("failed", "failure", "rejected", "declined", "reversed", "voided", "unsuccessful", "error")
_CLAUSE_BREAKS = (
    "and", "but", "however", "although", "though", "whereas", "while", "so", "which", "who", "because",
    "since", "then",
)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "no.", "nr.", "approx.", "vs.", "mr.", "ms.", "mrs.", "dr.", "st.")


def _phrase(words: tuple[str, ...]) -> re.Pattern[str]:
    parts = sorted((r"\s+".join(re.escape(part) for part in w.split()) for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w'’-])(?:" + "|".join(parts) + r")(?![\w'’-])", re.IGNORECASE)


_NEGATOR = re.compile(_phrase(_NEGATORS).pattern + r"|[a-z]n['’]t\b|(?<![\w'’-])no(?![\w'’-]|\.|\s*#?\d)",
                      re.IGNORECASE)
_MODAL = re.compile(_phrase(_MODALS).pattern + r"|['’]ll\b", re.IGNORECASE)
_PENDING_STATE = _phrase(_PENDING)
_CONDITION = _phrase(_CONDITIONS)
_SENTENCE_NEGATION = _phrase(_SENTENCE_NEGATIONS)
_NOT_BEFORE = re.compile(r"(?:\bnot|\bno longer|n['’]t)\s+(?:\w+\s+)?$", re.IGNORECASE)
"""A pending state denied right before it ("not pending", "is no longer queued") is no pending state."""
_DELIVERY_FAILURE = _phrase(_DELIVERY_FAILURES)
_FAILURE = _phrase(_FAILURES)
_BREAK = re.compile(r"\s*;\s*|,?\s+(?:" + "|".join(_CLAUSE_BREAKS) + r")(?![\w'’-])\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:[\"'’”)\]]*)\s+|\n+|\s*[;•]\s*")


@dataclass(frozen=True)
class Clause:
    """A clause of a text: its span, and what takes back statements in it."""

    start: int
    end: int
    whole_clause_taken_back: str | None
    """The marker that takes back the whole clause (a pending state, a condition of its sentence, a failure), or
    None."""
    taken_back_after: tuple[tuple[int, str], ...]
    """(position, marker) of each negation or modal in the clause: what follows it is taken back."""

    def why_not_asserted(self, start: int, end: int) -> str | None:
        """Why the words at [start, end) are not asserted here, or None when they are."""
        if self.whole_clause_taken_back is not None:
            return self.whole_clause_taken_back
        before = [marker for position, marker in self.taken_back_after if position < start]
        return before[-1] if before else None


def _sentences(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start:match.start()].rstrip()
        if any(piece.lower().endswith(abbreviation) for abbreviation in _ABBREVIATIONS):
            continue
        if piece.strip():
            yield start, match.start()
        start = match.end()
    if text[start:].strip():
        yield start, len(text)


def _outside(matches: Iterator[re.Match[str]], spans: list[tuple[int, int]]) -> list[re.Match[str]]:
    """Markers that are not part of one of the spans (a fact's own words are never its own marker)."""
    return [m for m in matches if not any(s <= m.start() < e or m.start() <= s < m.end() for s, e in spans)]


@lru_cache(maxsize=4096)
def digits(text: str) -> str:
    """The text with numbers written in words as digits ("forty-nine euros" -> "49 euros"); small numbers that are
    words in prose ("one copy") are left as they are."""
    return str(alpha2digit(text, "en"))


def clauses(text: str, reading: Reading = "outcome", facts: tuple[tuple[int, int], ...] = ()) -> list[Clause]:
    """The text's clauses with their markers, for the given reading; `facts` are the spans of the words being
    read, which never count as markers themselves."""
    spans = list(facts)
    whole_text = None
    if reading == "outcome":
        failures = _outside(_DELIVERY_FAILURE.finditer(text), spans)
        whole_text = f"reported failure {failures[0].group(0)!r}" if failures else None
    found: list[Clause] = []
    for s_start, s_end in _sentences(text):
        sentence = text[s_start:s_end]
        whole_sentence = whole_text
        if whole_sentence is None and (negated := _SENTENCE_NEGATION.search(sentence)) is not None:
            whole_sentence = f"negation {negated.group(0)!r}"
        if reading == "outcome" and whole_sentence is None:
            local = [(a - s_start, b - s_start) for a, b in spans]
            condition = _outside(_CONDITION.finditer(sentence), local)
            failure = _outside(_FAILURE.finditer(sentence), local)
            if sentence.rstrip().endswith("?"):
                whole_sentence = "question"
            elif condition:
                whole_sentence = f"condition {condition[0].group(0)!r}"
            elif failure:
                whole_sentence = f"reported failure {failure[0].group(0)!r}"
        c_start = 0
        pieces = []
        for match in _BREAK.finditer(sentence):
            pieces.append((c_start, match.start()))
            c_start = match.end()
        pieces.append((c_start, len(sentence)))
        for a, b in pieces:
            if a >= b:
                continue
            start, end = s_start + a, s_start + b
            clause_text = text[start:end]
            local = [(x - start, y - start) for x, y in spans]
            markers = [(start + m.start(), f"negation {m.group(0)!r}")
                       for m in _outside(_NEGATOR.finditer(clause_text), local)]
            whole = whole_sentence
            if reading == "outcome":
                markers += [(start + m.start(), f"modality {m.group(0)!r}")
                            for m in _outside(_MODAL.finditer(clause_text), local)]
                pending = [m for m in _outside(_PENDING_STATE.finditer(clause_text), local)
                           if not _NOT_BEFORE.search(clause_text[: m.start()])]
                if whole is None and pending:
                    whole = f"pending state {pending[0].group(0)!r}"
            found.append(Clause(start=start, end=end, whole_clause_taken_back=whole,
                                taken_back_after=tuple(sorted(markers))))
    return found


def clause_of(found: list[Clause], position: int) -> Clause | None:
    return next((c for c in found if c.start <= position < c.end), None)
