"""Facts stated in free text: the typed values a text mentions, and whether it asserts them.

Free text an agent writes into a site (a notification, an escalation reason, a note) is checked by facts, never by
substring patterns: `49.90 EUR` is found in `a refund of €49,90` and in `forty-nine euros and ninety cents` but not
in `149.90 EUR` or `49.901`; `O-1042` is found in `order O-1042.` and in `order 1042` (a bare number read as the
record of that kind it names, `verifier.facts.KnownIds`) but not in `O-10420`; the words `post` are not found in
`postponed`. A fact a check requires must be *asserted* (`verifier.assertions`): "the refund will be issued" or
"was not issued" mentions the words without stating that it was. A date whose weekday contradicts it is a wrong
fact, not a date with a word beside it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date

from sites.kit.records import JournalEntry, StateSnapshot
from tasks.spec import Fact, TextCheck
from tasks.values import (
    CURRENCY_PATTERN,
    CURRENCY_WORDS,
    DATE_FORMS,
    ID_DASHES,
    ID_PATTERN,
    WEEKDAY_PATTERN,
    WEEKDAYS,
    Money,
    amount_cents,
    date_of_match,
    normalise_id,
    parse_amount,
    parse_date,
    parse_money,
)
from verifier.assertions import Clause, attributive, clause_of, clauses, digits
from verifier.prohibitions import Prohibition, conditional_acts, forms, makes, prohibitions, unplaced, words_of
from verifier.record_states import RecordState, record_states, states_said
from verifier.roles import askers
from verifier.settling import Unsettled, unsettled

_NUMBER = re.compile(r"(?<![\w.,/\-#])(\d[\d.,\u00a0\u202f'’]*\d|\d)(?![\w/\-]|[.,]\d)")
_CURRENCY_BEFORE = re.compile(rf"(?:^|(?<=[\s(]))({CURRENCY_PATTERN})\s?$", re.IGNORECASE)
_CURRENCY_AFTER = re.compile(rf"^\s?({CURRENCY_PATTERN})(?![^\W\d_])", re.IGNORECASE)
_ID_SHAPE = re.compile(rf"(?<![\w-])({ID_PATTERN})(?![\w]|-\w)", re.IGNORECASE)
"""An id-shaped token, in either letter case (ids compare as `tasks.values.normalise_id` says)."""
_MINOR_UNITS = re.compile(
    rf"(?<![\w.,])(\d+)\s+({CURRENCY_PATTERN})\s+(?:and\s+)?(\d{{1,2}})(?:\s+(?:cents?|pence|p|c))?(?![\w.,]\d?)",
    re.IGNORECASE)
_BARE_NUMBER = re.compile(r"(?:(?<![\w.,/-])#\s?|(?<![\w.,/-])(?:(?:no|nr|number)\.?\s*#?\s?))?(?<![\w.,/-])(\d+)"
                          r"(?![\w/-]|[.,]\d)", re.IGNORECASE)
_KIND_WORD = re.compile(r"([A-Za-z][\w-]*)\s*(?:(?:no|nr|number)\.?\s*)?#?\s*$", re.IGNORECASE)
_WEEKDAY_NEAR = re.compile(rf"\b({WEEKDAY_PATTERN})\.?,?\s*(?:the\s+)?$", re.IGNORECASE)
_LABEL_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:[-'’][^\W\d_]+)*")
_LABEL_WORDS = 5
_APPOSITION = re.compile(r"\s*[,:(–—-]?\s*(?:(?:who|which)\s+(?:is|was)\s+|(?:is|was|=)\s+|namely\s+|i\.e\.\s*)?"
                         r"(?:(?:your|their|his|her|the|our|my)\s+)?(?:(?:own|current|direct)\s+)?\)?\s*",
                         re.IGNORECASE)
"""What may stand between two words facts that name one thing: a comma, a colon, a bracket or a dash, a copula
("Fatima Haddad *is your* manager") and a possessive or article ("your manager*, * Fatima Haddad")."""
_VERB = re.compile(r"(?<![\w'’-])(?:is|are|was|were|has|have|had|[a-z]{2,}ed)(?![\w'’-])", re.IGNORECASE)
"""A finite verb: a clause without one is a part of the next clause's subject ("EV-508 | and the delivery are")."""
_WEEKDAY_AFTER = re.compile(rf"^,?\s*\(?\s*({WEEKDAY_PATTERN})\b", re.IGNORECASE)


_SMALL = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_SCALE_COMMA = re.compile(r"\b(thousand|million|billion),\s+(?=(?:one|two|three|four|five|six|seven|eight|nine|"
                          r"ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|"
                          r"thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)\b)", re.IGNORECASE)
_SMALL_MONEY = re.compile(rf"\b({'|'.join(_SMALL)})(?=\s+(?:{CURRENCY_PATTERN}|cents?|pence)(?![^\W\d_]))",
                          re.IGNORECASE)


_NUMBER_SIGN = re.compile(rf"(?<![\w'’-])(?:no|nr|num)\.\s*(?=#?\s*(?:{ID_PATTERN})(?![\w]|-\w))", re.IGNORECASE)
"""The abbreviation of "number" right before an id ("Approval *no.* APR-7731")."""
_NEGATIVE_PREFIX = re.compile(r"(?<![\w-])(un|non|in|dis)-(?=[a-z])", re.IGNORECASE)


def read_text(text: str) -> str:
    """The text as the verifier reads it: numbers in words as digits (small ones too where they count money: "one
    euro"), and an amount written in major and minor units ("49 euros and 90 cents") as one amount ("49.90
    euros")."""
    joined = _SCALE_COMMA.sub(r"\1 ", text)  # "one thousand, one hundred" is one number
    joined = _NEGATIVE_PREFIX.sub(r"\1", joined)  # "un-finished" is "unfinished", "non-issued" "nonissued"
    joined = _NUMBER_SIGN.sub("", joined)  # "Approval no. APR-7731": the abbreviation of "number", no negation
    converted = _SMALL_MONEY.sub(lambda m: str(_SMALL.index(m.group(1).lower())), digits(joined))
    return _MINOR_UNITS.sub(lambda m: f"{m.group(1)}.{int(m.group(3)):02d} {m.group(2)}", converted)


@dataclass(frozen=True)
class Mention:
    """A typed value the text states, and where."""

    kind: str
    value: Money | date | str | int
    start: int
    end: int
    currency: str | None = None
    """For an amount: the currency written next to it (None when there is none)."""


@dataclass(frozen=True)
class KnownIds:
    """Every identifier of the tenant's records (values like `O-1047` in any column), each with the words that name
    its kind (its tables' and columns' names: `order`, `number`), so that "order 1047" reads as O-1047; and the words
    of the records' labels, which the reader of free text accounts for (`verifier.settling`)."""

    kinds: Mapping[str, frozenset[str]]
    record_words: frozenset[str] = frozenset()
    """The lower-case words of the tenant's labels (a value that starts with a capital and has at most `_LABEL_WORDS`
    words: a product, a claim's description, a customer's name; not a phrase such as a carrier's "left in parcel
    locker 40B") that the agent did not write, and of the task's instruction: "the *kettle*" and "the team *dinner*
    after *stocktake*" name records the site holds."""
    named: frozenset[str] | None = None
    """The lower-case words of the task's instruction (None when not known): the only names a text that bears on a
    check may use besides its facts ("Dear *Mai*" to Olga, a refund "to *Sam Patel*", the approver, are not the task's
    people)."""
    prohibited: tuple[Prohibition, ...] = ()
    """What the instruction forbids of named things ("Do not dispatch the delivery"): a text may not say it was done,
    and what it says to leave is no unfinished work (`verifier.prohibitions`); and what it allows only on a
    condition ("Escalate it only if …") where the episode made no record of that act (no escalation inserted)."""
    askers: frozenset[str] | None = None
    """The lower-case names the instruction makes the ones who asked (`verifier.roles`; None: it names none)."""
    tables: frozenset[str] = frozenset()
    """The words of the tenant's table names ("event", "delivery"): the kinds of record a clause may name."""
    states: Mapping[str, RecordState] = field(default_factory=dict)
    """Each record's status, by its id (`verifier.record_states`): what a text says of a record's state is
    compared with it."""
    ranked: tuple[str, ...] = ()
    """The ids of the records the task's checks select, lowest number first: "your *second* claim" names the second
    of them of that kind (`ordinal_ids`)."""
    own: str | None = None
    """The id of the record the text is written on (its note, its reason), when it has one: "*this claim* was
    rejected" is said of it."""

    @classmethod
    def of(cls, state: StateSnapshot | None, journal: Sequence[JournalEntry] = (), instruction: str = "",
           selected: Iterable[str] = ()) -> KnownIds:
        kinds: dict[str, set[str]] = {}
        written = {(entry.table, column, value) for entry in journal
                   for column, value in (entry.after or {}).items()
                   if isinstance(value, str)
                   and (entry.change == "insert" or (entry.before or {}).get(column) != value)}
        told = frozenset(re.sub(r"['’]s$", "", w.lower()) for w in _LABEL_WORD.findall(instruction))
        words: set[str] = set(told)
        for table, rows in (state or {}).items():
            for row in rows:
                for column, value in row.items():
                    if not isinstance(value, str):
                        continue
                    if _ID_SHAPE.fullmatch(value):
                        found = kinds.setdefault(normalise_id(value), set())
                        found.update(_words_of(table))
                        found.update(_words_of(column))
                    elif (table, column, value) not in written and value[:1].isupper():
                        label = _LABEL_WORD.findall(value)
                        if len(label) <= _LABEL_WORDS:
                            words.update(w.lower() for w in label)
        tables = frozenset(w for table in (state or {}) for w in _words_of(table) if " " not in w)
        made = {w for entry in journal if entry.change == "insert" for w in _words_of(entry.table)}
        undone = tuple(Prohibition(verb, frozenset(), conditional=True, makes=table)
                       for verb in conditional_acts(instruction)
                       for table in sorted(t for t in tables if makes(verb, t))[:1]
                       if not any(makes(verb, w) for w in made))
        return cls(kinds={k: frozenset(v) for k, v in kinds.items()}, record_words=frozenset(words),
                   named=told if instruction else None, prohibited=(*prohibitions(instruction), *undone),
                   askers=askers(instruction), tables=tables, states=record_states(state or {}, _ID_SHAPE),
                   ranked=tuple(sorted({normalise_id(i) for i in selected if _ID_SHAPE.fullmatch(i)},
                                       key=lambda i: (i.rsplit("-", 1)[0], int(i.rsplit("-", 1)[1])))))

    def on(self, row: Mapping[str, object]) -> KnownIds:
        """These known ids, read for a text written on this row (its own id, when it has one the reader knows)."""
        own = next((str(row[c]).upper() for c in ("number", "code") if str(row.get(c, "")).upper() in self.states),
                   None)
        return replace(self, own=own)

    def protects(self, clause_text: str, ids: Sequence[str]) -> bool:
        """Whether a clause names only what the instruction says to leave alone (the things of a prohibition, or
        records of that kind: "I left *the delivery* alone", "*D-508* is still pending"), and names it."""
        protected = frozenset(f for rule in self.prohibited for thing in rule.things for f in forms(thing))
        if not protected:
            return False
        described = frozenset(f for rule in self.prohibited for word in rule.described for f in forms(word))
        kept = [i for i in ids if self.kinds.get(i, frozenset()) & protected]
        if len(kept) < len(ids):
            return False
        seen_protected = bool(kept)
        describing = False  # right after a protected thing, words may describe it: "the delivery an *event* opened"
        for word in words_of(clause_text):
            if forms(word) & protected:
                seen_protected = describing = True
            elif word.lower() in ("and", "or", "&", "plus", "as", "with"):
                describing = False
            elif forms(word) & self.tables and not (describing and forms(word) & described):
                return False
        return seen_protected

    def by_number(self, number: str, kind_word: str | None) -> list[str]:
        """Known ids with this number, of the kind the word names (any kind when the number stands alone after #)."""
        found = [i for i in self.kinds if i.rsplit("-", 1)[1] == number]
        if kind_word is None:
            return found
        word = kind_word.lower().rstrip("s")
        return [i for i in found if word in self.kinds[i]]


def _words_of(name: str) -> set[str]:
    parts = name.lower().split("_")
    return {*parts, " ".join(parts), "-".join(parts), "".join(parts)}


def _amounts(text: str) -> list[Mention]:
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group(1)
        cents = amount_cents(token)
        if cents is None:
            continue
        before = _CURRENCY_BEFORE.search(text[: match.start()])
        after = _CURRENCY_AFTER.match(text[match.end():])
        word = (after or before)
        currency = CURRENCY_WORDS.get(word.group(1).lower()) if word else None
        money_like = currency is not None or re.search(r"[.,]\d{2}$", token) is not None
        if money_like:
            found.append(Mention("money", Money(cents=cents, currency=currency or ""), match.start(), match.end(),
                                 currency))
    return found


def money_mentions(text: str) -> list[Mention]:
    """The amounts the text states as money (with a currency, or with two decimals)."""
    return _amounts(read_text(text))


def states_money(text: str, money: Money) -> bool:
    """The text states this amount, in this currency or with no currency next to it."""
    return any(_same_money(m, money) for m in money_mentions(text))


def _same_money(mention: Mention, money: Money) -> bool:
    assert isinstance(mention.value, Money)
    return mention.value.cents == money.cents and mention.currency in (None, money.currency)


def integers(text: str) -> list[int]:
    """Whole numbers the text states as such (not money, not parts of ids or dates)."""
    return [m.value for m in _integers(read_text(text)) if isinstance(m.value, int)]


def _integers(text: str) -> list[Mention]:
    values = []
    for match in _NUMBER.finditer(text):
        token = match.group(1)
        if re.fullmatch(r"\d+", token) and not _CURRENCY_AFTER.match(text[match.end():]) \
                and not _CURRENCY_BEFORE.search(text[: match.start()]):
            values.append(Mention("integer", int(token), match.start(), match.end()))
        elif re.fullmatch(r"\d{1,3}(,\d{3})+", token):
            amount = parse_amount(token)
            if amount is not None:
                values.append(Mention("integer", int(amount), match.start(), match.end()))
    return values


def _dates(text: str) -> tuple[list[Mention], list[str]]:
    """Every calendar date the text states (ambiguous ones left out), and the dates whose weekday contradicts them."""
    found: list[Mention] = []
    contradicted: list[str] = []
    taken: list[range] = []
    for form in DATE_FORMS:
        for match in re.finditer(rf"(?<![\w.,/\-])(?:{form.pattern})(?![\w/]|[.\-]\d)", text, form.flags):
            span = range(match.start(), match.end())
            if any(span.start in t or t.start in span for t in taken):
                continue
            value = date_of_match(match)
            if value is None:
                continue
            taken.append(span)
            weekday = _WEEKDAY_NEAR.search(text[: match.start()]) or _WEEKDAY_AFTER.match(text[match.end():])
            if weekday is not None:
                named = weekday.group(1)
                if WEEKDAYS[named.lower()] != value.weekday():
                    contradicted.append(f"{named} {value.isoformat()} (it is a {value.strftime('%A')})")
                    continue
            found.append(Mention("date", value, match.start(), match.end()))
    return sorted(found, key=lambda m: m.start), contradicted


def dates(text: str) -> list[date]:
    """Every calendar date the text states in a spelling `tasks.values` reads (ambiguous and contradicted ones left
    out)."""
    return [m.value for m in _dates(read_text(text))[0]]  # type: ignore[misc]


def _id_pattern(identifier: str) -> re.Pattern[str]:
    """The identifier as a whole token, its letters in either case and its hyphens any of `ID_DASHES`."""
    spelled = "".join(f"[{ID_DASHES}]" if char == "-" else re.escape(char) for char in identifier)
    return re.compile(rf"(?<![\w-]){spelled}(?![\w]|-\w)", re.IGNORECASE)


_ORDINAL = re.compile(r"(?<![\w'’-])(?:your|the|his|her|their|this|that|my|our)\s+(first|1st|earlier|earliest|original|"
                      r"older|oldest|second|2nd|third|3rd|later|latest|last|newer|newest|most\s+recent)\s+([a-z]+)",
                      re.IGNORECASE)
_ORDINAL_OF = re.compile(r"(?<![\w'’-])(?:the|your|his|her|their)\s+(first|earlier|earliest|older|oldest|original|"
                         r"second|later|latest|last|newer|newest)\s+(?:one\s+)?of\s+(?:the|your|his|her|their|both)\s+"
                         r"(?:two\s+|both\s+)?([a-z]+)", re.IGNORECASE)
"""A record named by its place among two of a kind: "the *newer of the two claims*"."""
_PLACE_OF = {"first": 0, "1st": 0, "earlier": 0, "earliest": 0, "original": 0, "older": 0, "oldest": 0, "second": 1,
             "2nd": 1, "third": 2, "3rd": 2}
"""Where an ordinal puts a record among the task's records of its kind (any other: the last)."""


def ordinal_ids(text: str, known: KnownIds) -> list[Mention]:
    """Records named by their place among the task's records of one kind ("your second claim" is X-5006 when the
    task's checks select X-5005 and X-5006), where the task's checks select two or more of that kind, all of one
    table (one id prefix: "the earlier approval" among RA-25 and AR-8 is not read). A place an id follows names that
    id ("the earlier approval RA-25", "your earlier claim, X-5005")."""
    found = []
    for match in [*_ORDINAL.finditer(text), *_ORDINAL_OF.finditer(text)]:
        noun = forms(match.group(2))
        ranked = [i for i in known.ranked if known.kinds.get(i, frozenset()) & noun]
        place = _PLACE_OF.get(re.sub(r"\s+", " ", match.group(1).lower()), len(ranked) - 1)
        of_one_kind = len({i.rsplit("-", 1)[0] for i in ranked}) == 1  # not RA-25 and AR-8, both "approvals"
        gap = len(text[match.end():]) - len(text[match.end():].lstrip(" ,("))
        if (named_after := _ID_SHAPE.match(text, match.end() + gap)) is not None:  # "the earlier approval RA-25"
            found.append(Mention("id", normalise_id(named_after.group(1)), match.start(1), match.end(2)))
        elif len(ranked) >= 2 and place < len(ranked) and of_one_kind:
            found.append(Mention("id", ranked[place], match.start(1), match.end(2)))
    return found


def _ids(text: str, known: KnownIds) -> list[Mention]:
    """Id-shaped tokens, bare numbers that name a known record ("order 1047", "#1047") and records named by their
    place among the task's ("your second claim")."""
    found = [Mention("id", normalise_id(m.group(1)), m.start(1), m.end(1)) for m in _ID_SHAPE.finditer(text)]
    found += ordinal_ids(text, known)
    taken = [(m.start, m.end) for m in found]
    for match in _BARE_NUMBER.finditer(text):
        start, end = match.start(1), match.end(1)
        if any(a <= start < b for a, b in taken):
            continue
        hashed = "#" in match.group(0)
        kind = _KIND_WORD.search(text[: match.start()])
        word = kind.group(1) if kind is not None else None
        named = known.by_number(match.group(1), word) if word is not None else []
        if not named and hashed:
            named = known.by_number(match.group(1), None)  # "#1047" names whatever record has that number
        found += [Mention("id", identifier, match.start(), end) for identifier in named]
    return sorted(found, key=lambda m: m.start)


def states_id(text: str, identifier: str, known: KnownIds | None = None) -> bool:
    """The identifier appears as a whole token (its letters in either case), or as a bare number naming it."""
    return any(m.value == normalise_id(identifier) for m in _ids(read_text(text), known or KnownIds(kinds={})))


def ids_stated(text: str, known: KnownIds) -> frozenset[str]:
    """Every record the text names (normalised): id-shaped tokens and bare numbers that name a known record."""
    return frozenset(str(m.value) for m in _ids(read_text(text), known))


def ids_like(text: str, identifiers: Iterable[str]) -> list[str]:
    """Every id-shaped token (`AB-123`) of the text that shares a prefix with one of `identifiers`."""
    prefixes = {normalise_id(i).rsplit("-", 1)[0] + "-" for i in identifiers if "-" in i}
    found = [normalise_id(m.group(1)) for m in _ID_SHAPE.finditer(text)]
    return [i for i in found if any(i.startswith(p) for p in prefixes)]


_REPEAT = re.compile(r"(?:twice|two\s+times|three\s+times|thrice)$", re.IGNORECASE)
_OBJECT_GAP = r"(?:\s+(?!(?:not|never|no|once|only|but|and|or|then)(?![\w'’-]))[\w'’.,-]+){0,5}?\s+"
"""Between a verb and the repeat that ends its phrase, its object ("charged *the customer's card* twice"): up to five
words, none a negation, a coordination or "once"."""


def _words_pattern(words: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in words.split()]
    # A prefix joined by a hyphen makes another word: "mailed" is not found in "e-mailed", nor "approved" in
    # "non-approved"; the head of a compound still is the word ("short" in "short-staffed").
    repeat = _REPEAT.search(words)
    if repeat is not None and repeat.start() > 0:  # "taken twice" is found in "taken from the card two times" too
        verb = r"\s+".join(re.escape(part) for part in words[: repeat.start()].split())
        times = r"(?:twice|two\s+times)" if repeat.group(0).lower() in ("twice", "two times") else (
            r"\s+".join(re.escape(part) for part in repeat.group(0).split()))
        return re.compile(r"(?<![^\W_])(?<![^\W_]-)" + verb + _OBJECT_GAP + times + r"(?![^\W_])", re.IGNORECASE)
    return re.compile(r"(?<![^\W_])(?<![^\W_]-)" + r"\s+".join(parts) + r"(?![^\W_])", re.IGNORECASE)


def states_words(text: str, words: str) -> bool:
    """The words appear as whole words, in this order, case and spacing aside (`post` is not in `postponed`)."""
    return _words_pattern(words).search(text) is not None


def _alternatives(fact: Fact) -> list[str]:
    return fact.value if isinstance(fact.value, list) else [str(fact.value)]


@dataclass(frozen=True)
class Reading:
    """One text as the verifier reads it: the converted text, its mentions and its clauses."""

    text: str
    mentions: list[Mention]
    contradicted_dates: list[str]
    clauses: list[Clause]
    currency_written: bool = False
    """Whether a stated amount counts only with its currency next to it (the check's `currency: required`)."""
    known: KnownIds | None = None
    """The tenant's records and the instruction the text is read against."""

    @classmethod
    def of(cls, raw: str, check: TextCheck, known: KnownIds) -> Reading:
        text = read_text(raw)
        found_dates, contradicted = _dates(text)
        mentions = sorted([*_amounts(text), *found_dates, *_ids(text, known), *_integers(text)],
                          key=lambda m: m.start)
        spans = tuple((m.start(), m.end()) for fact in [*check.states, *check.never_states]
                      if fact.type in ("words", "denies") for words in _alternatives(fact)
                      for m in _words_pattern(words).finditer(text))
        return cls(text=text, mentions=mentions, contradicted_dates=contradicted,
                   clauses=clauses(text, check.reading, spans), currency_written=check.currency == "required",
                   known=known)

    def why_not(self, start: int, end: int) -> str | None:
        """Why the words at [start, end) are not asserted (None: they are)."""
        clause = clause_of(self.clauses, start)
        return "outside any clause" if clause is None else clause.why_not_asserted(start, end)

    def occurrences(self, fact: Fact) -> list[tuple[int, int]]:
        if fact.type in ("words", "denies"):
            return sorted((m.start(), m.end()) for words in _alternatives(fact)
                          for m in _words_pattern(words).finditer(self.text))
        return [(m.start, m.end) for m in self.mentions
                if _mention_is(m, fact) and not (fact.type == "money" and self.currency_written and m.currency is None)]

    def asserted(self, fact: Fact, forbidden: bool = False) -> tuple[bool, str | None]:
        """Whether some occurrence of the fact is asserted (for `denies`: taken back, by a negation or, in an outcome
        reading, by modality, a condition, a pending state or a reported failure); else why not, for the first.
        A `forbidden` words fact (a `never_states` one) standing right before its noun in a clause's subject
        ("the *queued* events were processed") says which things, not their state: it is not asserted there."""
        reasons: list[str | None] = []
        for start, end in self.occurrences(fact):
            clause = clause_of(self.clauses, start)
            if forbidden and fact.type == "words" and clause is not None and attributive(
                    self.text[clause.start:clause.end], start - clause.start, end - clause.start):
                reasons.append("attributive")
                continue
            if forbidden and fact.type == "words" and clause is not None and self._left_alone(clause):
                reasons.append("of what the instruction says to leave alone")
                continue
            why = self.why_not(start, end)
            if forbidden and why is not None and why.startswith("reported failure"):
                why = None  # a remainder is no less left when a run failed ("…failed, and EV-508 is still queued")
            if fact.type == "denies":
                if why is not None and why != "outside any clause":
                    return True, None
            elif why is None:
                return True, None
            reasons.append(why)
        return False, (reasons[0] if reasons else None)

    def _left_alone(self, clause: Clause) -> bool:
        """Whether the clause names only what the instruction says to leave alone ("I left the delivery alone"),
        with the subjects it shares ("EV-508 *and* the delivery are still pending" is one clause's subject)."""
        if self.known is None:
            return False
        start, here = clause.start, self.clauses.index(clause)
        while here > 0 and self.clauses[here].opened_by in ("and", "or") and (
                self.clauses[here - 1].sentence == clause.sentence
                and not _VERB.search(self.text, self.clauses[here - 1].start, self.clauses[here - 1].end)):
            here -= 1
            start = self.clauses[here].start
        ids = [str(m.value) for m in self.mentions if m.kind == "id" and start <= m.start < clause.end]
        return self.known.protects(self.text[start:clause.end], ids)

    def unsettled(self, check: TextCheck, known: KnownIds) -> list[Unsettled]:
        """What the text says about its check that the reader cannot account for (`verifier.settling`)."""
        kinds = {f.type for f in [*check.states, *check.never_states, *check.may_state]} | {"id"}
        left_alone = [c for c in self.clauses if self._left_alone(c)]  # no matter of the check: the instruction's
        bearing = sorted(span for span in {*(span for f in [*check.states, *check.never_states, *check.may_state]
                                             for span in self.occurrences(f)),
                                           *((m.start, m.end) for m in self.mentions if m.kind in kinds)}
                         if not any(c.start <= span[0] < c.end for c in left_alone))
        stated = sorted(span for f in check.states if f.type != "denies" for span in self.occurrences(f))
        fact_words = frozenset(word.lower() for f in [*check.states, *check.never_states, *check.may_state]
                               if f.type in ("words", "denies") for words in _alternatives(f) for word in words.split())
        # Every word is read where the text says what happened (a fact it must state, or one it must not deny); a
        # check that only forbids words (a qualifier that may not name another floor) reads those alone.
        every_word = bool(check.states) or any(f.type == "denies" for f in check.never_states)
        named = [(m.start, m.end, str(m.value)) for m in self.mentions if m.kind == "id"]
        own_nouns = frozenset(known.kinds.get(known.own, frozenset()) & known.tables) if known.own else frozenset()
        said = states_said(self.text, named, known.own, own_nouns, known.states)
        false_states = [Unsettled(f"says {s.record} is {s.words}, which the site does not hold (it is {s.status})",
                                  s.words) for s in said if s.true is False]
        said_of_the_protected = [
            Unsettled(f"says of what the instruction says to leave what the reader cannot place ({', '.join(words)})",
                      self.text[c.start:c.end].strip())
            for c in left_alone if (words := unplaced(words_of(self.text[c.start:c.end]), known.prohibited))]
        return false_states + said_of_the_protected + unsettled(
            self.text, self.clauses, check.reading, bearing, stated, fact_words, every_word, known.named,
            known.record_words, known.prohibited, known.tables, known.askers,
            denying=check.reading == "outcome" and any(f.type == "denies" for f in check.never_states),
            true_states=[(s.start, s.end) for s in said if s.true])

    def asserted_together(self, facts: list[Fact], apposed: bool = False) -> tuple[bool, str | None]:
        """Whether one clause asserts every one of these words facts (they describe one event); `apposed`: with
        each standing beside the next, in apposition (they name one thing)."""
        occurrences = [self.occurrences(f) for f in facts]
        reasons = []
        units = [(c.start, c.end) for c in self.clauses]
        if apposed:  # "your manager, who is Fatima Haddad": a relative clause may hold the apposition
            units += [(a.start, b.end) for a, b in itertools.pairwise(self.clauses)
                      if b.opened_by in ("who", "which") and a.sentence == b.sentence]
        for start, end in units:
            chosen = []
            for spans in occurrences:
                inside = [(a, b) for a, b in spans if start <= a < end]
                good = [span for span in inside if self.why_not(*span) is None]
                if good:
                    chosen.append(good)
                elif inside:
                    reasons.append(self.why_not(*inside[0]) or "")
                    break
                else:
                    break
            if len(chosen) < len(facts):
                continue
            if not apposed or any(self._side_by_side(spans) for spans in itertools.product(*chosen)):
                return True, None
            reasons.append("not side by side: they may name two things")
        return False, (reasons[0] if reasons else None)

    def _side_by_side(self, spans: Sequence[tuple[int, int]]) -> bool:
        ordered = sorted(spans)
        return all(_APPOSITION.fullmatch(self.text[a_end:b_start]) is not None
                   for (_, a_end), (b_start, _) in itertools.pairwise(ordered))


def _mention_is(mention: Mention, fact: Fact) -> bool:
    if mention.kind != fact.type:
        return False
    if fact.type == "money":
        money = parse_money(str(fact.value))
        return money is not None and _same_money(mention, money)
    if fact.type == "date":
        return mention.value == parse_date(str(fact.value))
    if fact.type == "id":
        return mention.value == normalise_id(str(fact.value))
    return mention.value == fact.value


def _describe(fact: Fact) -> str:
    return f"{fact.type} {fact.value!r}"


def text_problems(text: object, check: TextCheck, known: KnownIds | None = None) -> list[str]:
    """What a free text fails of its check: facts not asserted, forbidden facts asserted, other values stated,
    dates whose weekday contradicts them."""
    if not isinstance(text, str):
        return [f"{text!r} is no text"]
    known = known or KnownIds(kinds={})
    reading = Reading.of(text, check, known)
    problems: list[str] = []
    together = [f for f in check.states if f.type == "words"]
    if together:
        ok, why = reading.asserted_together(together, check.apposed)
        if not ok:
            what = " with ".join(_describe(f) for f in together)
            problems.append(f"does not assert {what}" + (f" ({why})" if why else ""))
    for fact in check.states:
        if fact.type == "words":
            continue
        ok, why = reading.asserted(fact)
        if not ok:
            problems.append(f"does not assert {_describe(fact)}" + (f" ({why})" if why else ""))
    for fact in check.never_states:
        if reading.asserted(fact, forbidden=True)[0]:
            problems.append(f"asserts {_describe(fact)}")
    problems += [f"states a weekday that contradicts its date: {d}" for d in reading.contradicted_dates]
    for kind in check.no_other:
        others = _others(reading, kind, [*check.states, *check.may_state], known)
        if others:
            problems.append(f"also states {kind} {', '.join(others)}")
    if check.nothing_else is not None:
        rest = _without(reading.text, [*check.states, *check.may_state], check.nothing_else)
        if rest:
            problems.append(f"states more than its facts: {rest!r}")
    said = " ".join(problems)
    return problems + [str(u) for u in reading.unsettled(check, known) if f"({u.what})" not in said]


def _others(reading: Reading, kind: str, stated: list[Fact], known: KnownIds | None) -> list[str]:
    """Values of `kind` the text states that no stated fact of that kind names: for ids, every other record the text
    names (an id of the same kind as an allowed one, any known record's id, or a bare number naming one)."""
    wanted = [f for f in stated if f.type == kind]
    mentions = [m for m in reading.mentions if m.kind == kind and not any(_mention_is(m, f) for f in wanted)]
    if kind == "money":
        return [f"{m.value.cents / 100:.2f} {m.currency or ''}".strip() for m in mentions  # type: ignore[union-attr]
                ]
    if kind == "date":
        return [m.value.isoformat() for m in mentions]  # type: ignore[union-attr]
    if kind == "id":
        prefixes = {normalise_id(str(f.value)).rsplit("-", 1)[0] + "-" for f in wanted if "-" in str(f.value)}
        kinds = (known or KnownIds(kinds={})).kinds
        return list(dict.fromkeys(str(m.value) for m in mentions
                                  if str(m.value) in kinds or any(str(m.value).startswith(p) for p in prefixes)))
    return [str(m.value) for m in mentions]


def _without(text: str, facts: list[Fact], labels: list[str]) -> str:
    """What is left of the text once its id and words facts and the label words are taken out (punctuation and
    white space dropped)."""
    rest = text
    for fact in facts:
        for value in _alternatives(fact):
            pattern = _id_pattern(value) if fact.type == "id" else _words_pattern(value)
            rest = pattern.sub(" ", rest)
    for label in labels:
        rest = _words_pattern(label).sub(" ", rest)
    return " ".join(re.sub(r"[^\w]+|_", " ", rest).split())
