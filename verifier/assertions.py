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

- **reported speech**: words inside quotation marks, and what follows a frame that reports someone else's words
  (`you wrote`, `the customer says`, `according to`, ...) in its sentence, are not the writer's own statement.

An `outcome` reading (the default: a notice that something was done) applies all of them; a `circumstance` reading
(a reason describing a situation, where "suspected account takeover" or "the customer reports a double charge" is
exactly what is meant) applies negation only. Each clause also carries every marker in its scope, concessions
(`although`, `even though`, `despite`) and progressive verbs (`is processing`) included, for
`verifier.settling`, which decides whether the text as a whole says anything the reader cannot account for.
A word right before its noun in the subject of a clause whose verb follows ("the *queued* events were processed")
describes which things the clause is about, not their state: it is no marker, and `attributive` says so. Numbers
written in words are read as digits first (`text_to_num`), so "forty-nine euros ninety" is an amount.
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
    "unable", "instead of", "rather than", "other than", "except", "yet to", "failed to", "fail to", "far from", "non",
)
_MODALS = (
    "will", "would", "shall", "should", "could", "can", "may", "might", "must", "to be", "going to", "about to",
    "need to", "needs to", "has to", "have to", "plan to", "plans to", "planned to", "intend to", "intends to",
    "expect to", "expects to", "expected to", "try to", "trying to", "attempt to", "attempting to", "want to",
    "wants to", "hope", "hopes", "hopefully", "being", "soon", "later",
)
_MORE_PENDING = ("awaits", "await", "awaited", "tbc", "tbd", "to be confirmed", "to be determined", "eta", "for now",
                 "for the time being", "at the moment", "so far", "as of now", "temporarily", "provisionally",
                 "until further notice", "on hold", "in the works", "slated", "due to be", "earmarked", "on its way",
                 "payment run")
_PENDING = (
    "pending", "scheduled", "queued", "awaiting", "upcoming", "in progress", "under review", "on hold", "request",
    "requests",
    "not yet", "tomorrow", "next week", "next month", "in due course",
)
_CONDITIONS = ("if", "unless", "once", "as soon as", "provided that", "in case", "whether", "should you", "assuming",
               "upon", "on receipt of", "the moment", "the minute", "as and when", "as long as", "subject to")
_SENTENCE_NEGATIONS = ("it is not true that", "it's not true that", "it is not the case that", "it is false that",
                       "it is untrue that")
"""Negations that take back their whole sentence, "and" and "which" included."""
_DELIVERY_FAILURES = (
    "bounced", "bounce", "bounces", "undeliverable", "undelivered", "returned to sender", "was returned",
    "were returned", "been returned", "got returned", "is returned", "came back", "did not arrive",
    "didn't arrive", "never arrived", "delivery failure", "could not be delivered", "back to us", "returned to us",
)
_FAILURES = ("failed", "failure", "rejected", "declined", "reversed", "voided", "unsuccessful", "error")
_CONCESSIONS = ("although", "even though", "though", "despite", "in spite of", "albeit", "even if", "notwithstanding",
                "whereas", "nevertheless", "nonetheless", "even so")
_REVERSALS = (
    "declined", "decline", "declines", "refused", "refuse", "refuses", "blocked", "block", "blocks", "stopped", "stop",
    "prevented", "prevent", "halted", "cancelled", "canceled", "cancel", "undone", "undo", "rolled back", "withdrawn",
    "withdrew", "revoked", "revoke", "denied", "deny", "denies", "reverse", "void", "reject", "fail", "fails",
    "wrong", "incorrect", "incorrectly", "mistake", "mistakenly", "erroneous", "erroneously", "by error",
    "sent back", "sent it back", "came back", "back to us", "recalled", "clawed back", "taken back", "pulled back",
    "bounced back", "stalled", "choked", "crashed", "errored", "timed out", "aborted", "broke down",
)
"""Verbs and words that reverse what they govern; with `_FAILURES`, two in one clause ("declined to block") are a
double negation the reader cannot settle."""
_HEDGES = ("apparently", "likely", "most likely", "probably", "presumably", "seemingly", "seems", "seem", "appears",
           "appear", "in principle", "in theory", "suggest", "suggests", "supposedly", "allegedly", "reportedly",
           "as far as we can tell", "as far as we know", "we believe", "we think", "i believe", "i think", "ought to",
           "meant to", "supposed to", "should have", "would have", "might have", "may have", "could have", "either",
           "hoped", "expected to", "perhaps", "maybe", "possibly", "unconfirmed", "not confirmed", "possible",
           "potential", "suspected", "suspicious", "usually", "normally", "typically", "on paper", "technically",
           "nominally", "tried", "attempted")
"""Hedges and evidentials: the writer does not assert the outcome, only that it seems or was meant to be so."""
_PARTIALS = ("half of", "in part", "partly", "partially", "part of", "some of", "most of", "most", "all but",
             "except", "excluding", "apart from", "but for", "nearly all", "almost all", "not all", "less", "minus",
             "net of", "after deducting", "deducted", "withheld", "short of")
"""What makes a statement about part of its object ("all but EV-508 processed", "issued in part", "less our fee")."""
_RETRACTIONS = ("correction", "scratch that", "strike that", "disregard", "ignore the above", "ignore my previous",
                "ignore this", "ignore this message",
                "actually", "on second thought", "i take that back", "retract", "retracted", "at first", "initially",
                "originally", "ruled out", "false alarm", "disproved", "debunked", "unfounded", "baseless", "unlikely",
                "a misunderstanding", "misunderstood", "mistaken", "thought", "cleared", "dismissed", "withdrawn",
                "turned out", "later identified", "identified as", "with her permission", "with his permission",
                "with their permission", "with permission", "was a test", "former", "ex", "since recognised",
                "since recognized", "dropped off", "nothing to dispute", "no longer")
"""What takes back or supersedes a statement in any reading: a correction, a superseded first state, a suspicion
cleared or ruled out, a former holder of a role."""
_FUTURE_TIMES = ("to follow", "to come", "will follow", "follows later", "shortly", "eventually", "still", "yet",
                 "on the way", "underway", "under way", "in transit", "in the pipeline", "later today", "afterwards",
                 "outstanding")
_ADDITIVES = ("another", "a second", "a further", "additional", "an additional", "extra", "again", "twice", "once more",
              "one more", "a repeat", "repeated", "two times", "2 times", "three times", "3 times", "several times",
              "on top", "on top of that", "the same amount", "as well as that", "double", "doubled")
"""Words that add a further instance of what a clause says ("and another refund of 59.00 EUR")."""
_REPORTERS = ("you", "they", "he", "she", "customer", "client", "sender", "vendor", "caller", "user", "requester",
              "supplier", "employee", "manager", "approver")
_REPORTING_VERBS = ("wrote", "write", "writes", "said", "say", "says", "mentioned", "mention", "mentions", "claimed",
                    "claim", "claims", "stated", "state", "states", "reported", "report", "reports", "told", "tell",
                    "tells", "asked", "ask", "asks", "alleged", "allege", "alleges", "complained", "complain",
                    "complains", "suggested", "suggests", "believe", "believes", "believed", "think", "thinks",
                    "thought", "insisted", "insists", "quoted", "quotes", "noted", "notes")
_CLAUSE_BREAKS = (
    "and", "but", "however", "although", "though", "whereas", "while", "so", "which", "who", "because",
    "since", "then",
)
MARKER_WORDS: frozenset[str] = frozenset(
    word for group in (_NEGATORS, _MODALS, _MORE_PENDING, _PENDING, _CONDITIONS, _SENTENCE_NEGATIONS,
                       _DELIVERY_FAILURES, _FAILURES, _CONCESSIONS, _REVERSALS, _HEDGES, _PARTIALS, _RETRACTIONS,
                       _FUTURE_TIMES, _ADDITIVES)
    for word in group if " " not in word)
"""Every one-word marker the reader reads: in a clause it either marks something or was ruled out as a marker by a
rule of this module ("charged only *once*", "*not* pending"), so the reader accounts for it either way. The words of
a longer marker ("clawed back") are accounted for only where the whole marker stands."""
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "no.", "nr.", "approx.", "vs.", "mr.", "ms.", "mrs.", "dr.", "st.")


def _phrase(words: tuple[str, ...]) -> re.Pattern[str]:
    parts = sorted((r"\s+".join(re.escape(part) for part in w.split()) for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w'’-])(?:" + "|".join(parts) + r")(?![\w'’-])", re.IGNORECASE)


_NEGATOR = re.compile(r"(?!not\s+only\b)(?:" + _phrase(_NEGATORS).pattern
                      + r"|[a-z]n['’]t\b|(?<![\w'’-])no(?![\w'’-]|\.|\s*#?\d))", re.IGNORECASE)
"""A negation ("not only" is none)."""
_MODAL = re.compile(_phrase(_MODALS).pattern + r"|['’]ll\b", re.IGNORECASE)
_PENDING_STATE = _phrase((*_PENDING, *_MORE_PENDING))
_CONDITION = _phrase(_CONDITIONS)
_SENTENCE_NEGATION = _phrase(_SENTENCE_NEGATIONS)
_NOT_BEFORE = re.compile(r"(?:\bnot|\bno longer|n['’]t)\s+(?:\w+\s+)?$", re.IGNORECASE)
"""A pending state denied right before it ("not pending", "is no longer queued") is no pending state."""
_DELIVERY_FAILURE = _phrase(_DELIVERY_FAILURES)
_FAILURE = _phrase(_FAILURES)
_BREAK = re.compile(r"\s*;\s*|,?\s+(?:" + "|".join(_CLAUSE_BREAKS) + r")(?![\w'’-])\s*", re.IGNORECASE)
_CONCESSION = _phrase(_CONCESSIONS)
_HEDGE = _phrase(_HEDGES)
_PARTIAL = _phrase(_PARTIALS)
_RETRACTION = _phrase(_RETRACTIONS)
_NEXT_DAY = re.compile(r"(?<![\w'’-])(?:next|coming)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|"
                       r"sunday|week|month|year|weekend)(?![\w'’-])", re.IGNORECASE)
_ALL_BUT = re.compile(r"(?<![\w'’-])(?:all|nothing|anything|everything|none|everyone|nobody)$", re.IGNORECASE)
_SCOPE_BREAK = re.compile(r":\s|\s[—–-]\s|—|–|\(|,\s+(?=(?:we|you|i|it|they|he|she|the|a|an|all|every|each|my|your|"
                          r"our|this|that|its|his|her|their)\b)", re.IGNORECASE)
_SARCASTIC_NOT = re.compile(r"(?:\.{2,}|…|,|-|—)?\s*\bNOT\b[.!]*\s*$")
"""A sentence that ends in a shouted NOT ("issued... NOT.") takes itself back."""
_ADDITIVE = _phrase(_ADDITIVES)
_NUMBER_WORD = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|some|several|a\s+few|few|many|most|half)"
_DEGREE = re.compile(r"(?<![\w'’-])(?:(?:more|less|fewer)\s+than|at\s+(?:least|most)|up\s+to|over|under|above|"
                     r"below|around|roughly|approximately|nearly|almost|close\s+to|about|just\s+(?:over|under)|"
                     r"upwards\s+of|north\s+of|south\s+of)(?=\s+(?:[€$£]\s?|[A-Z]{3}\s)?\d)"
                     rf"|(?<![\w'’-]){_NUMBER_WORD}\s+of\s+(?:the|these|those|them|our|your|its|all)(?![\w'’-])"
                     r"|(?<![\w'’-])(?:nearly|almost|mostly|largely|virtually|practically|bar|barring|save\s+for)"
                     r"(?![\w'’-])", re.IGNORECASE)
"""What makes a statement about a degree or a part of its object: an amount qualified ("more than 30.50 USD"),
a part of a whole ("two of the three events"), a state not quite reached ("nearly complete"), an exception
("processed, bar EV-508")."""
_SUPERLATIVE = re.compile(r"\s+recent(?![\w'’-])", re.IGNORECASE)
"""After "most", a word that makes it a superlative ("your *most recent* invoice"), not a part."""
_DENIED_BEFORE = re.compile(r"(?:(?<![\w'’-])(?:not|no|never|nothing)|n['’]t)(?:\s+[\w'’-]+){0,3}\s+$", re.IGNORECASE)
"""Before a delivery failure, a negation in reach ("no money *has been returned*", "it was not returned"): none."""
_RELATIVE_BEFORE = re.compile(r"(?<![\w'’-])(?:that|which|whom)\s+$", re.IGNORECASE)
"""Before a part of a whole, a relative pronoun: the part is the subject of a clause that describes something else
("the delivery *that one of them* opened"), not a part of what is done."""
_DISTRIBUTIVE = re.compile(r"(?<![\w'’-])(?:each|every|per|apiece)(?![\w'’-])", re.IGNORECASE)
_AMOUNT_SHAPE = re.compile(r"\d[.,]\d{2}(?!\d)")
"""Beside an amount in its clause, a distributive word makes it an amount for each of several things ("*each*
item of your order totals 30.50 USD"), not the total."""
_BACK_TO_THE_CUSTOMER = re.compile(r"\s+back\s+to\s+(?:you|your)\b", re.IGNORECASE)
"""After "on its way", money going back to the customer: the refund made and in transit, nothing pending of it."""
_TOWARD_THE_CUSTOMER = re.compile(r"\s+to\s+(?:you|your)\b", re.IGNORECASE)
"""After "sent back" or "went back", the customer as where it went: the refund itself ("the money sent back to
your card"), not a reversal ("your bank sent it back to us")."""
_REVERSAL = re.compile(_phrase(_REVERSALS).pattern + "|" + _phrase(_FAILURES).pattern, re.IGNORECASE)
_FUTURE_TIME = _phrase(_FUTURE_TIMES)
_REPORTED = re.compile(
    r"(?<![\w'’-])(?:(?:" + "|".join(_REPORTERS) + r")(?:['’]s\s+\w+)?\s+(?:\w+\s+)?(?:" + "|".join(_REPORTING_VERBS)
    + r")|according\s+to|in\s+(?:your|their|his|her)\s+(?:own\s+)?(?:message|email|e-mail|mail|words|note|letter|"
      r"ticket|reply)|as\s+you\s+(?:said|wrote|put\s+it|mentioned|stated|reported|claimed?)|quote|quoting"
    r"|(?:the|a|an|our|your|their|its)\s+(?:[a-z][\w-]*\s+){1,2}(?:says|said|claims|claimed|reports|states|writes|"
    r"wrote|tells|told|mentions|insists|insisted|alleges|alleged|maintains|maintained)(?!\s+(?:by|to\s+be)\b))"
    r"(?![\w'’-])(?!\s+for\b)", re.IGNORECASE)
"""A frame that reports someone else's words: what follows it in the sentence is theirs. The reporter is a word of
`_REPORTERS`, a name, or any noun phrase with its determiner ("*the carrier says* it delivered your order"); "asked
for" is a request, not a report ("the refund you asked for was not approved")."""
_REPORT_AS_NOUN = re.compile(r"(?<![\w'’-])(?:what|whatever|all|everything)\s+$", re.IGNORECASE)
"""Before a report, a word that makes it a thing ("thank you for *what* you wrote about O-1259: we have issued"): it
frames nothing after it."""
_REPORT_STATED = re.compile(r"\s+(?:is|was)\s*(?:that\b|:)", re.IGNORECASE)
"""...unless the thing is then said ("what you wrote *is that* the refund was issued")."""
_NAMED_REPORTER = re.compile(r"\b(?!(?:As|It|We|I|You|They|He|She|This|That|The|A|An|Our|Your|If|When|So|And|But|"
                             r"Just|Also|Then|Here|There)\b)[A-Z][a-z]+\s+(?:"
                             + "|".join(_REPORTING_VERBS[:30]) + r")\b")
_QUOTED = re.compile(r"[\"“”„«»]([^\"“”„«»]{1,600})[\"“”„«»]|(?<![\w])['‘]([^'‘’\n]*\s[^'‘’\n]*?)['’](?![\w])")
_PROGRESSIVE = re.compile(r"(?<![\w'’-])(?:is|are|am|was|were|be|being|been|['’]re|['’]s)\s+"
                          r"(?:now\s+|currently\s+|still\s+)?"
                          r"(?!(?:nothing|something|anything|everything|thing|morning|evening|during|pending|outstanding|"
                          r"remaining|missing|according|following|interesting|amazing|king|ring|string)\b)"
                          r"([a-z]{2,}ing)\b", re.IGNORECASE)
_NOT_A_NOUN = frozenset({
    "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "will", "would", "shall", "should",
    "can", "could", "may", "might", "must", "to", "for", "until", "till", "by", "at", "in", "on", "and", "or", "but",
    "so", "as", "with", "from", "of", "than", "since", "because", "while", "when", "if", "now", "still", "yet",
    "again", "today", "tomorrow", "soon", "later", "already", "not", "never", "no", "then", "there", "here", "too",
    "also", "only", "after", "before", "pending", "awaiting", "remains", "remain", "stays", "stay",
})
_FINITE = re.compile(r"(?<![\w'’-])(?:is|are|was|were|has|have|had|got|gets|went|\w{2,}ed)(?![\w'’-])", re.IGNORECASE)
_PREDICATING = re.compile(r"(?<![\w'’-])(?:is|are|was|were|be|been|being|am|remain|remains|remained|stay|stays|"
                          r"stayed|still|left|kept|keep|keeps)(?![\w'’-])", re.IGNORECASE)
_ADVERB_ONCE = re.compile(r"(?:only|just|at|than|exactly|all|for|charged|paid|billed)\s+$", re.IGNORECASE)
"""Before `once`, a word that makes it the adverb ("charged only once"), not the condition ("once approved")."""
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:[\"'’”)\]]*)\s+|\n+|\s*[;•]\s*")


MarkerKind = Literal["negation", "modality", "pending", "future", "progressive", "condition", "question", "failure",
                     "reversal", "concession", "reported", "quoted", "additive", "hedge", "partial", "retraction",
                     "degree"]
_LABELS: dict[str, str] = {"additive": "a further instance", "partial": "a part only", "degree": "a degree or part",
                           "pending": "pending state", "failure": "reported failure", "future": "futurity",
                           "progressive": "progressive", "reported": "reported speech", "quoted": "quoted speech"}


@dataclass(frozen=True)
class Marker:
    """A word or sign that makes a statement something other than the writer's plain assertion."""

    kind: MarkerKind
    words: str
    start: int
    end: int

    def __str__(self) -> str:
        label = _LABELS.get(self.kind, self.kind)
        return label if self.kind == "question" else f"{label} {self.words!r}"


@dataclass(frozen=True)
class Clause:
    """A clause of a text: its span, its sentence's, what takes back statements in it, and every marker in scope."""

    start: int
    end: int
    whole_clause_taken_back: str | None
    """The marker that takes back the whole clause (a pending state, a condition of its sentence, a failure), or
    None."""
    taken_back_within: tuple[tuple[int, int, str], ...] = ()
    """(start, end, marker) of each span taken back: what a negation, a modal or a report governs (to the end of its
    scope, `scope_end`), quoted words and what a request asks for (in an outcome reading)."""
    sentence: tuple[int, int] = (0, 0)
    opened_by: str = ""
    """The word that opened the clause ("but", "then", "and"; "" for a sentence's first clause)."""
    markers: tuple[Marker, ...] = ()
    """Every marker of the clause, its sentence's (a condition, a question, a concession, a reported failure, a
    quotation) and the text's (a delivery that came back), in any reading."""

    def why_not_asserted(self, start: int, end: int) -> str | None:
        """Why the words at [start, end) are not asserted here, or None when they are."""
        if self.whole_clause_taken_back is not None:
            return self.whole_clause_taken_back
        within = [marker for a, b, marker in self.taken_back_within if a <= start < b]
        return within[0] if within else None


def _sentences(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start:match.start()].rstrip()
        if any(piece.lower().endswith(abbreviation) and not piece[-len(abbreviation) - 1:-len(abbreviation)].isalpha()
               for abbreviation in _ABBREVIATIONS):  # "by post." ends a sentence; "St." does not
            continue
        if piece.strip():
            yield start, match.start()
        start = match.end()
    if text[start:].strip():
        yield start, len(text)


def _outside(matches: Iterator[re.Match[str]], spans: list[tuple[int, int]]) -> list[re.Match[str]]:
    """Markers that are not part of one of the spans (a fact's own words are never its own marker; a marker that holds
    a fact's word and more, "all *but*" beside the fact "all", still is one)."""
    return [m for m in matches if not any(s <= m.start() and m.end() <= e for s, e in spans)]


@lru_cache(maxsize=4096)
def digits(text: str) -> str:
    """The text with numbers written in words as digits ("forty-nine euros" -> "49 euros"); small numbers that are
    words in prose ("one copy") are left as they are."""
    return str(alpha2digit(text, "en"))


def attributive(clause_text: str, start: int, end: int) -> bool:
    """Whether the words at [start, end) of a clause stand right before their noun in the clause's subject, its
    verb after them and no verb before ("All three *queued* events were processed"): they say which things the
    clause is about, not what state those are in ("EV-508 is queued", "two events remaining" do)."""
    following = re.match(r"\s+([A-Za-z][\w-]*)", clause_text[end:])
    if following is None or following.group(1).lower() in _NOT_A_NOUN or following.group(1).lower().endswith("ly"):
        return False
    return (_FINITE.search(clause_text, end + following.end()) is not None
            and _PREDICATING.search(clause_text[:start]) is None and _FINITE.search(clause_text[:start]) is None)


def quotations(text: str) -> list[tuple[int, int]]:
    """The spans of the text inside quotation marks (double, typographic, guillemets, or single ones around more
    than one word, so that an apostrophe is none)."""
    return [(m.start(), m.end()) for m in _QUOTED.finditer(text)]


def _markers(kind: MarkerKind, pattern: re.Pattern[str], text: str, offset: int,
             spans: list[tuple[int, int]]) -> list[Marker]:
    return [Marker(kind, m.group(0), offset + m.start(), offset + m.end()) for m in _outside(pattern.finditer(text),
                                                                                          spans)]


def _sentence_markers(text: str, s_start: int, s_end: int, spans: list[tuple[int, int]]) -> list[Marker]:
    """The markers whose scope is a whole sentence: a condition, a reported failure, a concession, a question, a
    sentence negation, a report of someone's words and the quotations."""
    sentence = text[s_start:s_end]
    local = [(a - s_start, b - s_start) for a, b in spans]
    found = [*(m for m in _markers("condition", _CONDITION, sentence, s_start, local)
               if not _ADVERB_ONCE.search(text[s_start:m.start]) or m.words.lower() != "once"),
             *_markers("failure", _FAILURE, sentence, s_start, local),
             *_markers("concession", _CONCESSION, sentence, s_start, local),
             *_markers("retraction", _RETRACTION, sentence, s_start, local),
             *(m for m in _markers("reported", _REPORTED, sentence, s_start, local)
               if not (_REPORT_AS_NOUN.search(text[s_start:m.start])
                       and not _REPORT_STATED.match(text, m.end))),
             *_markers("reported", _NAMED_REPORTER, sentence, s_start, local)]
    if (shouted := _SARCASTIC_NOT.search(sentence)) is not None:
        found.append(Marker("negation", shouted.group(0).strip(), s_start + shouted.start(), s_start + shouted.end()))
    if (negated := _SENTENCE_NEGATION.search(sentence)) is not None:
        found.append(Marker("negation", negated.group(0), s_start + negated.start(), s_start + negated.end()))
    if sentence.rstrip().endswith("?"):
        found.append(Marker("question", "?", s_end - 1, s_end))
    found += [Marker("quoted", text[a:b], a, b) for a, b in quotations(text) if s_start <= a < s_end]
    return found


def _clause_markers(clause_text: str, start: int, spans: list[tuple[int, int]]) -> list[Marker]:
    local = [(x - start, y - start) for x, y in spans]
    found = [*_markers("negation", _NEGATOR, clause_text, start, local),
             *_markers("modality", _MODAL, clause_text, start, local),
             *(m for m in _markers("reversal", _REVERSAL, clause_text, start, local)
               if not (m.words.lower().endswith("back") and _TOWARD_THE_CUSTOMER.match(clause_text, m.end - start))),
             *_markers("progressive", _PROGRESSIVE, clause_text, start, local),
             *_markers("additive", _ADDITIVE, clause_text, start, local),
             *_markers("hedge", _HEDGE, clause_text, start, local),
             *(m for m in _markers("partial", _PARTIAL, clause_text, start, local)
               if not _SUPERLATIVE.match(clause_text, m.end - start)),
             *(m for m in _markers("degree", _DEGREE, clause_text, start, local)
               if not _RELATIVE_BEFORE.search(clause_text[: m.start - start])),
             *(_markers("degree", _DISTRIBUTIVE, clause_text, start, local)
               if _AMOUNT_SHAPE.search(clause_text) else []),
             *_markers("future", _NEXT_DAY, clause_text, start, local)]
    for kind, pattern in (("pending", _PENDING_STATE), ("future", _FUTURE_TIME)):
        found += [Marker(kind, m.group(0), start + m.start(), start + m.end())  # type: ignore[arg-type]
                  for m in _outside(pattern.finditer(clause_text), local)
                  if not _NOT_BEFORE.search(clause_text[: m.start()]) and not attributive(clause_text, m.start(),
                                                                                          m.end())
                  and not (m.group(0).lower() == "on its way" and _BACK_TO_THE_CUSTOMER.match(clause_text, m.end()))]
    return found


def _naming_a_request(marker: Marker) -> bool:
    return marker.kind == "pending" and marker.words.lower() in ("request", "requests")


def _request_phrase(text: str, start: int, end: int, marker: Marker) -> tuple[int, int]:
    """The noun phrase a request names, which only asks for what it holds: up to three words before `request` and
    what follows it up to the clause's next verb ("your *refund request for O-1042* was declined" asks for the refund,
    and asserts that the request was declined)."""
    before = re.search(r"(?:[\w'’-]+\s+){0,3}$", text[start:marker.start])
    first = start + before.start() if before else marker.start
    for verb_before in _FINITE.finditer(text, first, marker.start):  # "turned down *your request*": the verb is not
        first = max(first, verb_before.end())                        # part of what is asked for
    verb = _FINITE.search(text, marker.end, end)
    return first, (verb.start() if verb else end)


def _clause_spans(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, the word that opened it: "but", "then", ... or "") of each clause of a sentence."""
    c_start, opener, pieces = 0, "", []
    for match in _BREAK.finditer(sentence):
        if match.group(0).strip(" ,").lower() == "but" and _ALL_BUT.search(sentence[:match.start()]):
            continue  # "all but EV-508" is one phrase, not two clauses
        pieces.append((c_start, match.start(), opener))
        c_start, opener = match.end(), match.group(0).strip(" ,;").lower()
    pieces.append((c_start, len(sentence), opener))
    return [(a, b, o) for a, b, o in pieces if a < b]


def scope_end(text: str, marker: Marker, limit: int) -> int:
    """Where a negation's, modal's or report's scope ends: at a colon, a dash, a parenthesis, or a comma before a new
    subject ("Without further delay, *we* have issued"), within `limit`; a colon right after a report introduces
    what it reports ("You wrote: ...") and does not end it."""
    start = marker.end
    if marker.kind == "reported" and (colon := re.match(r"\s*(?:(?:is|was)\s*)?:\s*", text[start:limit])) is not None:
        start += colon.end()
    elif marker.kind == "reported" and (source := re.match(r"[^,:;]{0,40},\s*", text[start:limit])) is not None:
        start += source.end()  # "According to the approver, <what the approver says>"
    found = _SCOPE_BREAK.search(text, start, limit)
    return found.start() if found else limit


def _taking_back_whole(markers: list[Marker], reading: Reading, sentence_negated: str | None) -> str | None:
    """What takes back a whole clause: the text's or its sentence's marker, or the clause's own pending state."""
    if sentence_negated is not None:
        return sentence_negated
    if reading != "outcome":
        return None
    for kind in ("question", "condition", "failure", "pending"):
        chosen = next((m for m in markers if m.kind == kind), None)
        if chosen is not None:
            return str(chosen)
    return None


def clauses(text: str, reading: Reading = "outcome", facts: tuple[tuple[int, int], ...] = ()) -> list[Clause]:
    """The text's clauses with their markers, for the given reading; `facts` are the spans of the words being
    read, which never count as markers themselves."""
    spans = list(facts)
    failures = [m for m in _outside(_DELIVERY_FAILURE.finditer(text), spans)
                if not _DENIED_BEFORE.search(text[max(0, m.start() - 40):m.start()])
                and not _TOWARD_THE_CUSTOMER.match(text, m.end())]
    text_marker = (Marker("failure", failures[0].group(0), failures[0].start(), failures[0].end())
                   if failures else None)
    found: list[Clause] = []
    for s_start, s_end in _sentences(text):
        sentence_markers = _sentence_markers(text, s_start, s_end, spans)
        negated = _SENTENCE_NEGATION.search(text[s_start:s_end]) or _SARCASTIC_NOT.search(text[s_start:s_end])
        sentence_negated = f"negation {negated.group(0).strip()!r}" if negated is not None else None
        quotes = [m for m in sentence_markers if m.kind == "quoted"]
        for a, b, opener in _clause_spans(text[s_start:s_end]):
            start, end = s_start + a, s_start + b
            own = _clause_markers(text[start:end], start, spans)
            scope = [*([text_marker] if text_marker else []),
                     *[m for m in sentence_markers if m.kind not in ("quoted", "reported", "negation")
                       or start <= m.start < end or (m.kind == "reported" and m.start < end)
                       or (m.kind == "quoted" and m.start < end and start < m.end)],
                     *own]
            whole = _taking_back_whole(
                [*([text_marker] if text_marker else []), *(m for m in sentence_markers if m.kind != "quoted"),
                 *(m for m in own if m.kind == "pending" and not _naming_a_request(m))], reading, sentence_negated)
            scoped = [m for m in own if m.kind == "negation"]
            within: list[tuple[int, int, str]] = []
            if reading == "outcome":
                scoped += [m for m in own if m.kind == "modality"]
                earlier = [m for m in sentence_markers if m.kind == "reported" and m.start < start
                           and scope_end(text, m, end) >= start]
                if whole is None and earlier:
                    whole = str(earlier[0])
                scoped += [m for m in sentence_markers if m.kind == "reported" and start <= m.start < end]
                within = [(m.start, m.end, str(Marker("quoted", "…", m.start, m.end))) for m in quotes]
                within += [(*_request_phrase(text, start, end, m), str(m)) for m in own if _naming_a_request(m)]
            within += [(m.start, scope_end(text, m, end), str(m)) for m in sorted(scoped, key=lambda m: m.start)]
            found.append(Clause(start=start, end=end, whole_clause_taken_back=whole,
                                taken_back_within=tuple(within), sentence=(s_start, s_end),
                                markers=tuple(sorted(scope, key=lambda m: m.start)), opened_by=opener))
    return found


def clause_of(found: list[Clause], position: int) -> Clause | None:
    return next((c for c in found if c.start <= position < c.end), None)
