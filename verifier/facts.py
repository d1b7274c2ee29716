"""Facts stated in free text: the typed values a text mentions, read with `tasks.values`.

Free text an agent writes into a site (a notification, an escalation reason, a note) is checked by
facts, never by substring patterns: `49.90 EUR` is found in `a refund of €49,90` but not in `149.90 EUR`
or `49.901`; `O-1042` is found in `order O-1042.` but not in `O-10420`; the words `post` are not found
in `postponed`. `mentions` lists every value of one type the text states, so a check can also demand
that the text states no other value of that type (a second, contradicting amount or id).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from tasks.spec import Fact, TextCheck
from tasks.values import (
    CURRENCY_PATTERN,
    CURRENCY_WORDS,
    DATE_FORMS,
    Money,
    amount_cents,
    date_of_match,
    parse_amount,
    parse_date,
    parse_money,
)

_NUMBER = re.compile(r"(?<![\w.,/\-])(\d[\d.,\u00a0\u202f'’]*\d|\d)(?![\w/\-]|[.,]\d)")
_CURRENCY_BEFORE = re.compile(rf"(?:^|(?<=[\s(]))({CURRENCY_PATTERN})\s?$", re.IGNORECASE)
_CURRENCY_AFTER = re.compile(rf"^\s?({CURRENCY_PATTERN})(?![^\W\d_])", re.IGNORECASE)
_ID_SHAPE = re.compile(r"(?<![\w-])([A-Z]{1,5}-\d+)(?![\w]|-\w)")
NEGATIONS = ("not", "no", "never", "cannot", "can't", "won't", "n't", "without", "unable", "none", "nor",
             "neither", "nothing", "failed", "refused", "declined")
"""Words that turn a statement round; a `negation` fact is stated when the text holds any of them."""


@dataclass(frozen=True)
class Amount:
    """A number the text states, with the currency written next to it (None when there is none)."""

    cents: int
    currency: str | None
    money_like: bool
    """Written as money: with a currency, or with a decimal mark and two decimals."""


def _currency(word: str) -> str | None:
    return CURRENCY_WORDS.get(word.lower())


def amounts(text: str) -> list[Amount]:
    """Every number the text states as a whole token (not part of an id, date or longer number)."""
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group(1)
        cents = amount_cents(token)
        if cents is None:
            continue
        before = _CURRENCY_BEFORE.search(text[: match.start()])
        after = _CURRENCY_AFTER.match(text[match.end():])
        word = (after or before)
        currency = _currency(word.group(1)) if word else None
        money_like = currency is not None or re.search(r"[.,]\d{2}$", token) is not None
        found.append(Amount(cents=cents, currency=currency, money_like=money_like))
    return found


def money_mentions(text: str) -> list[Amount]:
    """The amounts the text states as money."""
    return [a for a in amounts(text) if a.money_like]


def states_money(text: str, money: Money) -> bool:
    """The text states this amount, in this currency or with no currency next to it."""
    return any(a.cents == money.cents and a.currency in (None, money.currency) for a in money_mentions(text))


def integers(text: str) -> list[int]:
    """Whole numbers the text states as such (not money, not parts of ids or dates)."""
    values = []
    for match in _NUMBER.finditer(text):
        token = match.group(1)
        if re.fullmatch(r"\d+", token) and not _CURRENCY_AFTER.match(text[match.end():]) \
                and not _CURRENCY_BEFORE.search(text[: match.start()]):
            values.append(int(token))
        elif re.fullmatch(r"\d{1,3}(,\d{3})+", token):
            amount = parse_amount(token)
            if amount is not None:
                values.append(int(amount))
    return values


def dates(text: str) -> list[date]:
    """Every calendar date the text states in a spelling `tasks.values` reads (ambiguous ones left out)."""
    found: list[tuple[int, date]] = []
    taken: list[range] = []
    for form in DATE_FORMS:
        for match in re.finditer(rf"(?<![\w.,/\-])(?:{form.pattern})(?![\w/]|[.\-]\d)", text, form.flags):
            span = range(match.start(), match.end())
            if any(span.start in t or t.start in span for t in taken):
                continue
            value = date_of_match(match)
            if value is not None:
                taken.append(span)
                found.append((match.start(), value))
    return [value for _, value in sorted(found, key=lambda item: item[0])]


def _id_pattern(identifier: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(identifier)}(?![\w]|-\w)")


def states_id(text: str, identifier: str) -> bool:
    """The identifier appears as a whole token, exactly (case included)."""
    return _id_pattern(identifier).search(text) is not None


def ids_like(text: str, identifiers: Iterable[str]) -> list[str]:
    """Every id-shaped token (`AB-123`) of the text that shares a prefix with one of `identifiers`."""
    prefixes = {i.rsplit("-", 1)[0] + "-" for i in identifiers if "-" in i}
    return [m.group(1) for m in _ID_SHAPE.finditer(text) if any(m.group(1).startswith(p) for p in prefixes)]


def _words_pattern(words: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in words.split()]
    return re.compile(r"(?<![^\W_])" + r"\s+".join(parts) + r"(?![^\W_])", re.IGNORECASE)


def states_words(text: str, words: str) -> bool:
    """The words appear as whole words, in this order, case and spacing aside (`post` is not in `postponed`)."""
    return _words_pattern(words).search(text) is not None


def negations(text: str) -> list[str]:
    """The negating words of `NEGATIONS` the text holds."""
    lowered = text.lower().replace("’", "'")
    found = [w for w in NEGATIONS if w != "n't" and states_words(lowered, w)]
    if re.search(r"[a-z]n't\b", lowered):
        found.append("n't")
    return found


def _stated(text: str, fact: Fact) -> bool:
    value = fact.value
    if fact.type == "money":
        money = parse_money(str(value))
        return money is not None and states_money(text, money)
    if fact.type == "date":
        day = parse_date(str(value))
        return day is not None and day in dates(text)
    if fact.type == "id":
        return states_id(text, str(value))
    if fact.type == "integer":
        return value in integers(text)
    if fact.type == "words":
        return any(states_words(text, words) for words in (value if isinstance(value, list) else [str(value)]))
    return bool(negations(text))


def _others(text: str, kind: str, stated: list[Fact]) -> list[str]:
    """Values of `kind` the text states that no stated fact of that kind names."""
    wanted = [f.value for f in stated if f.type == kind]
    if kind == "money":
        allowed = [m for m in (parse_money(str(v)) for v in wanted) if m is not None]
        return [f"{a.cents / 100:.2f} {a.currency or ''}".strip() for a in money_mentions(text)
                if not any(a.cents == m.cents and a.currency in (None, m.currency) for m in allowed)]
    if kind == "date":
        days = {parse_date(str(v)) for v in wanted}
        return [d.isoformat() for d in dates(text) if d not in days]
    if kind == "id":
        return [i for i in ids_like(text, [str(v) for v in wanted]) if i not in wanted]
    return [str(i) for i in integers(text) if i not in wanted]


def text_problems(text: object, check: TextCheck) -> list[str]:
    """What a free text fails of its check: facts not stated, forbidden facts stated, other values stated."""
    if not isinstance(text, str):
        return [f"{text!r} is no text"]
    problems = [f"does not state {f.type} {f.value!r}" for f in check.states if not _stated(text, f)]
    problems += [f"states {f.type} {f.value!r}" + (f" ({', '.join(negations(text))})" if f.type == "negation" else "")
                 for f in check.never_states if _stated(text, f)]
    for kind in check.no_other:
        others = _others(text, kind, [*check.states, *check.may_state])
        if others:
            problems.append(f"also states {kind} {', '.join(others)}")
    if check.nothing_else is not None:
        rest = _without(text, [*check.states, *check.may_state], check.nothing_else)
        if rest:
            problems.append(f"states more than its facts: {rest!r}")
    return problems


def _without(text: str, facts: list[Fact], labels: list[str]) -> str:
    """What is left of the text once its id and words facts and the label words are taken out (punctuation and
    white space dropped)."""
    rest = text
    for fact in facts:
        values = fact.value if isinstance(fact.value, list) else [str(fact.value)]
        for value in values:
            pattern = _id_pattern(value) if fact.type == "id" else _words_pattern(value)
            rest = pattern.sub(" ", rest)
    for label in labels:
        rest = _words_pattern(label).sub(" ", rest)
    return " ".join(re.sub(r"[^\w]+|_", " ", rest).split())
