"""Type-aware reading of values an agent wrote: amounts, money, dates, ids, integers, short text.

Each reader takes text as an agent may write it and returns the value in one canonical form (money as
integer cents with an ISO currency code, dates as `datetime.date`), or None when the text is not a value
of that type. Readers are strict where a wrong reading would pass a wrong answer: an ambiguous date
(03/04/2026) or an amount with more than two decimals is no value at all. The same readers judge answer
fields (`verifier.answers`), facts in free text (`verifier.facts`) and the expected values in task files,
so none of them can disagree.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

import phonenumbers
from babel.numbers import get_currency_name

from tasks.answers import AnswerType

_GROUP_SPACES = " \u00a0\u202f\u2009'’"
_NUMBER_CHARS = "0123456789.," + _GROUP_SPACES


@dataclass(frozen=True, order=True)
class Money:
    """An amount of money: integer cents (never a float) and an ISO 4217 code."""

    cents: int
    currency: str

    def __str__(self) -> str:
        sign = "-" if self.cents < 0 else ""
        whole, cents = divmod(abs(self.cents), 100)
        return f"{sign}{whole}.{cents:02d} {self.currency}"


_CURRENCY_SIGNS: dict[str, str] = {
    "€": "EUR", "$": "USD", "us$": "USD", "£": "GBP", "fr.": "CHF", "¥": "JPY",
    "dollar": "USD", "dollars": "USD", "pound": "GBP", "pounds": "GBP", "franc": "CHF", "francs": "CHF",
}
"""Signs, and the bare names people use for the one currency they usually mean."""
_CURRENCIES = ("EUR", "USD", "GBP", "CHF", "SEK", "NOK", "DKK", "JPY", "CAD", "AUD", "PLN", "CZK")


def _currency_words() -> dict[str, str]:
    """Every spelling of the currencies read: ISO codes, signs, and CLDR's English names, singular and plural
    (`euro`, `euros`, `US dollar`, `US dollars`, `British pounds`, `Swiss francs`, via babel)."""
    words = dict(_CURRENCY_SIGNS)
    for code in _CURRENCIES:
        words[code.lower()] = code
        for count in (1, 2):
            name = get_currency_name(code, count=count, locale="en").lower()
            words[name] = code
            words[name.replace("us ", "u.s. ")] = code
    return words


CURRENCY_WORDS: dict[str, str] = _currency_words()
"""Spellings of currencies an agent may use, lower-case, to their ISO codes."""
CURRENCY_PATTERN = "|".join(sorted((re.escape(w) for w in CURRENCY_WORDS), key=len, reverse=True))
"""A regular expression alternation of every currency spelling, longest first."""


def _grouped(groups: list[str]) -> bool:
    """Thousands groups: a first group of 1-3 digits, then groups of exactly 3."""
    return bool(groups) and 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]) \
        and all(g.isdigit() for g in groups)


def parse_amount(text: str) -> Decimal | None:
    """A decimal number written with any common grouping: `2,340.00`, `2.340,00`, `2 340,00`, `2340`.

    With both `.` and `,` the last one is the decimal mark. With one of them: several of it are thousands
    separators; a single one followed by exactly three digits (and not after a lone 0) is a thousands
    separator (`2,340` is 2340), otherwise it is the decimal mark (`49,90` is 49.90). Spaces and
    apostrophes only group thousands. Anything else is no amount.
    """
    s = text.strip()
    sign = ""
    if s and s[0] in "+-−":
        sign, s = ("-" if s[0] in "-−" else ""), s[1:].strip()
    if not s or not s[0].isdigit() or not s[-1].isdigit() or any(c not in _NUMBER_CHARS for c in s):
        return None
    marks = [c for c in s if c in ".,"]
    decimal_mark: str | None = None
    if "." in marks and "," in marks:
        decimal_mark = marks[-1]
        if marks.count(decimal_mark) != 1:
            return None
    elif marks:
        mark = marks[0]
        head, _, tail = s.rpartition(mark)
        head_digits = re.sub(f"[{re.escape(_GROUP_SPACES)}]", "", head)
        thousands = len(marks) > 1 or (len(tail) == 3 and tail.isdigit() and head_digits != "0")
        decimal_mark = None if thousands else mark
    whole, fraction = (s.rsplit(decimal_mark, 1) if decimal_mark else (s, ""))
    if fraction and not fraction.isdigit():
        return None
    groups = re.split(f"[{re.escape(_GROUP_SPACES)}.,]", whole)
    if len(groups) > 1 and not _grouped(groups):
        return None
    if len(groups) == 1 and not groups[0].isdigit():
        return None
    try:
        return Decimal(f"{sign}{''.join(groups)}.{fraction or '0'}")
    except InvalidOperation:
        return None


def amount_cents(text: str) -> int | None:
    """An amount as integer cents; None when it is no amount or has a fraction of a cent."""
    value = parse_amount(text)
    if value is None:
        return None
    cents = value * 100
    return int(cents) if cents == cents.to_integral_value() else None


_MONEY = re.compile(
    rf"^\s*(?:(?P<before>{CURRENCY_PATTERN})\s*)?(?P<amount>[+\-−]?\s*[\d][\d.,{_GROUP_SPACES}]*)\s*(?P<after>{CURRENCY_PATTERN})?\s*$",
    re.IGNORECASE,
)


def currency_code(word: str) -> str | None:
    """The ISO code of a currency spelling (`€`, `eur`, `US$`, `Swiss francs`), or None."""
    return CURRENCY_WORDS.get(re.sub(r"\s+", " ", word.strip().lower()))


def parse_money(text: str) -> Money | None:
    """An amount with exactly one currency, before or after it: `1,049.85 USD`, `€2.340,00`, `CHF 4580`."""
    match = _MONEY.match(text)
    if match is None or bool(match["before"]) == bool(match["after"]):
        return None
    cents = amount_cents(match["amount"])
    code = currency_code(match["before"] or match["after"])
    return None if cents is None or code is None else Money(cents=cents, currency=code)


MONTHS: dict[str, int] = {
    name: number for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")], start=1)
    for name in names
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
DATE_FORMS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"{_YEAR}-(?P<month>\d{{2}})-(?P<day>\d{{2}})"),
    re.compile(rf"{_DAY}\.?\s+(?P<mname>{_MONTH})\.?,?\s+{_YEAR}", re.IGNORECASE),
    re.compile(rf"(?P<mname>{_MONTH})\.?\s+{_DAY},?\s+{_YEAR}", re.IGNORECASE),
    re.compile(rf"(?P<day>\d{{1,2}})\.(?P<month>\d{{1,2}})\.{_YEAR}"),
    re.compile(rf"(?P<first>\d{{1,2}})/(?P<second>\d{{1,2}})/{_YEAR}"),
)
"""The date spellings read: ISO, `20 March 2026`, `March 20th, 2026`, `20.03.2026`, and `20/03/2026` or
`03/20/2026` only when one reading is impossible (a part above 12)."""


def date_of_match(match: re.Match[str]) -> date | None:
    parts = match.groupdict()
    year = int(parts["year"])
    if parts.get("first") is not None:
        first, second = int(parts["first"]), int(parts["second"])
        if first <= 12 and second <= 12 and first != second:
            return None  # 03/04/2026: the 3rd of April or the 4th of March
        day, month = (first, second) if first > 12 or first == second else (second, first)
    else:
        day = int(parts["day"])
        month = MONTHS[parts["mname"].lower()] if parts.get("mname") else int(parts["month"])
    try:
        return date(year, month, day)
    except ValueError:
        return None


WEEKDAYS: dict[str, int] = {
    name: number for number, names in enumerate(
        [("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thur", "thurs"),
         ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")])
    for name in names
}
"""Weekday names and abbreviations, lower-case, to `date.weekday()` numbers."""
WEEKDAY_PATTERN = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_LEADING_WEEKDAY = re.compile(rf"^({WEEKDAY_PATTERN})\.?,?\s+(?:the\s+)?", re.IGNORECASE)
_TRAILING_WEEKDAY = re.compile(rf",?\s*\(\s*({WEEKDAY_PATTERN})\.?\s*\)$|,\s*({WEEKDAY_PATTERN})$", re.IGNORECASE)


def parse_date(text: str) -> date | None:
    """A whole text that is one calendar date in a spelling of `DATE_FORMS`, with or without its weekday (`Friday,
    13 March 2026`, `2026-03-13 (Fri)`); None otherwise, and None when the weekday named is not the date's: a
    weekday is information, and a text that contradicts itself is no date."""
    s = text.strip().rstrip(".")
    named: list[str] = []
    if (leading := _LEADING_WEEKDAY.match(s)) is not None:
        named.append(leading.group(1))
        s = s[leading.end():]
    if (trailing := _TRAILING_WEEKDAY.search(s)) is not None:
        named.append(trailing.group(1) or trailing.group(2))
        s = s[: trailing.start()]
    for form in DATE_FORMS:
        match = form.fullmatch(s)
        if match is not None:
            value = date_of_match(match)
            if value is None or any(WEEKDAYS[name.lower()] != value.weekday() for name in named):
                return None
            return value
    return None


def parse_integer(value: object) -> int | None:
    """A whole number: a JSON integer, an integral float, or a text of digits (grouping allowed)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        amount = parse_amount(value)
        if amount is not None and amount == amount.to_integral_value() and not re.search(r"[.,]\d{1,2}$", value):
            return int(amount)
    return None


def normalise_email(value: str) -> str:
    """An e-mail address as mail systems compare it: surrounding white space and angle brackets aside, case aside
    (domains are case-insensitive, and providers treat local parts so too)."""
    return value.strip().strip("<>").strip().casefold()


def phone_number(value: str) -> str | None:
    """A phone number as a number (E.164, `+493055509876`) however it is spaced or punctuated; None when the text
    is no phone number with its country code."""
    try:
        parsed = phonenumbers.parse(value, None)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(parsed):
        return None
    return str(phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164))


ID_DASHES = "-\u2010\u2011\u2012\u2013\u2212\ufe63\uff0d"
"""The hyphens an id may be written with: ASCII's, and the hyphen, non-breaking hyphen, figure dash, en dash, minus
sign and small and full-width hyphen-minus that word processors and models put in its place (not the em dash, which
separates words)."""
ID_PATTERN = rf"[A-Z]{{1,5}}[{ID_DASHES}]\d+"
"""An identifier's shape (`SKU-1003`, `APR-7731`, `SKU‑1003`), matched with IGNORECASE: ids compare in either letter
case and with any of `ID_DASHES`."""
_TO_HYPHEN = str.maketrans(dict.fromkeys(ID_DASHES, "-"))
_ID = re.compile(ID_PATTERN, re.IGNORECASE)


def is_identifier(value: str) -> bool:
    """The whole value is one id (`SKU-1003`, `apr-7731`)."""
    return _ID.fullmatch(value) is not None


def normalise_id(value: str) -> str:
    """An identifier compares exactly apart from the case of its letters (`sku-1003` names SKU-1003: no two records
    of a site differ only in case, and people write ids in either), surrounding white space and an enclosing pair
    of quotes; its hyphen may be any of `ID_DASHES`."""
    return value.strip().strip("\"'`“”‘’").strip().upper().translate(_TO_HYPHEN)


_EDGE = "\"'`“”‘’.,;:!?()[]{}"


def normalise_text(value: str) -> str:
    """Short text compares without regard to case, repeated white space, surrounding punctuation or quotes,
    and a leading article: `  the Orchard room.` equals `Orchard Room`."""
    text = unicodedata.normalize("NFKC", value).casefold()
    text = re.sub(r"\s+", " ", text).strip().strip(_EDGE).strip()
    return re.sub(r"^(the|a|an) ", "", text)


AnswerValue = Money | date | str | int | tuple[str, ...]


def read_value(kind: AnswerType, raw: object) -> AnswerValue | None:
    """A value of an answer type in canonical form, or None when `raw` is not one: money and dates parsed,
    ids and lists of ids exact (white space aside), short text normalised, integers whole."""
    if kind == "integer":
        return parse_integer(raw)
    if kind == "id_list":
        if not isinstance(raw, list | tuple) or not all(isinstance(item, str) for item in raw):
            return None
        items = tuple(normalise_id(item) for item in raw)
        return None if any(not item for item in items) else items
    if not isinstance(raw, str):
        return None
    if kind == "money":
        return parse_money(raw)
    if kind == "date":
        return parse_date(raw)
    if kind == "id":
        return normalise_id(raw) or None
    return normalise_text(raw) or None
