"""Mutants of what an agent writes: free text that stops asserting, values spelled as people spell them.

For `computerops tasks audit`. Wrong variants of a filled free text keep its words and take the assertion back
(negated, future, pending, conditional, reported failure, conceded, doubly negated, taken back later in words no
marker holds, said of a degree short of it) or say it in another language,
name another record by a bare number, or write a wrong
amount in words; valid variants write the same facts another way (the amount in words, the record by its bare
number, an e-mail address in capitals, a phone number without spaces) and must be accepted. For the structured
answer: a date with a weekday that contradicts it (wrong) or agrees with it (valid), money with its currency
written out (valid).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from typing import Any

from num2words import num2words

from tasks.spec import AnswerField
from tasks.values import currency_code, parse_date, parse_money, phone_number
from verifier.facts import KnownIds
from verifier.prohibitions import prohibitions

_ID_TOKEN = re.compile(r"(?<![\w-])([A-Z]{1,5})-(\d+)(?![\w]|-\w)")
_AMOUNT = re.compile(r"(?<![\w.,-])(\d+)[.,](\d{2})(?:\s?([A-Z]{3}))?(?![\w]|[.,]\d)")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_PAST = re.compile(r"\b(?:(?:has|have|had|was|were|is|are)\s+(?:been\s+)?)?"
                   r"((?!need)[a-z]+ed|sent|paid|made|done|given|taken|shown|written|put|set|told|sold|kept)\b")
_WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def is_free_text(text: str) -> bool:
    """A text of several words that is not one value (an id, an address, a number, a date)."""
    words = re.findall(r"[A-Za-z]{2,}", text)
    return len(words) >= 3 and not _EMAIL.fullmatch(text.strip()) and parse_date(text) is None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _each_sentence(text: str, rewrite: Any) -> str:
    """Each sentence (a `;` ends one too) rewritten."""
    return " ".join(rewrite(sentence) for sentence in _SENTENCE.split(text.strip()) if sentence)


def _future(sentence: str) -> str:
    """The sentence's first past-tense verb (with its auxiliaries) put in the future: `have issued` -> `will be
    issued`; without one, the sentence announced as what will be true."""
    match = _PAST.search(sentence)
    if match is None:
        return f"It will soon be true that {_lower_first(sentence)}"
    return sentence[: match.start()] + f"will be {match.group(1)}" + sentence[match.end():]


def non_assertions(text: str) -> Iterator[tuple[str, str]]:
    """(how, text) for each rewrite of a free text that keeps its words and asserts none of it."""
    yield "negated", _each_sentence(text, lambda s: f"It is not true that {_lower_first(s)}")
    yield "future", _each_sentence(text, _future)
    yield "pending", f"Pending: {text.strip()}"
    yield "conditional", f"If it is approved, {_lower_first(text.strip())}"
    yield "reported-failure", f"{text.strip().rstrip('.')}. It was returned to sender as undeliverable."
    # Unsettled in any reading (verifier/settling.py): a concession, a double negation, another language.
    yield "conceded", f"{text.strip().rstrip('.')}, although none of this has been confirmed."
    yield "double-negated", _each_sentence(text, lambda s: f"Nobody declined to block it: {_lower_first(s)}")
    yield "foreign", _in_german(text)
    # Unsettled by what the reader cannot account for or by a degree: a later sentence that takes it back in words
    # no marker list holds, and a statement of a part or a degree.
    yield "taken-back", f"{text.strip().rstrip('.')}. Our bank has since clawed it back."
    yield "degree", _each_sentence(text, _nearly)


def _nearly(sentence: str) -> str:
    """The sentence's first past-tense verb made a degree short of it ("was nearly issued"); without one, the sentence
    said of nearly everything."""
    match = _PAST.search(sentence)
    if match is None:
        return f"Nearly all of it: {_lower_first(sentence)}"
    return sentence[: match.start(1)] + "nearly " + sentence[match.start(1):]


def _in_german(text: str) -> str:
    """The text's records and amounts kept, its words in German: a note the reader must not read as English."""
    values = [m.group(0) for m in _ID_TOKEN.finditer(text)] + [m.group(0) for m in _AMOUNT.finditer(text)]
    return f"Erledigt und bestätigt: {', '.join(values)} wurde heute vollständig bearbeitet." if values else \
        "Erledigt und bestätigt: der Vorgang wurde heute vollständig bearbeitet."


def _kind_word(identifier: str, known: KnownIds) -> str | None:
    words = sorted(w for w in known.kinds.get(identifier, ()) if " " not in w and "-" not in w and w.isalpha()
                   and w not in ("number", "code", "reference", "id"))
    return words[0] if words else None


def _by_number(text: str, match: re.Match[str], word: str, number: int) -> str:
    """The id at `match` written as its kind and a bare number (just the number when the kind precedes it)."""
    before = text[: match.start()]
    named = re.search(rf"\b{re.escape(word)}\s+$", before, re.IGNORECASE) is not None
    return before + (f"{number}" if named else f"{word} {number}") + text[match.end():]


def other_records(text: str, known: KnownIds) -> Iterator[tuple[str, str]]:
    """(how, text) naming, by a bare number, the record next to one the text names ("O-1042" -> "order 1043"),
    when that record exists."""
    for match in _ID_TOKEN.finditer(text):
        prefix, number = match.group(1), match.group(2)
        other = f"{prefix}-{int(number) + 1}"
        word = _kind_word(other, known)
        if other in known.kinds and word is not None:
            yield "other-record-by-number", _by_number(text, match, word, int(number) + 1)
            return


def same_record_by_number(text: str, known: KnownIds) -> Iterator[tuple[str, str]]:
    """(how, text) naming a record the text names by its kind and bare number instead ("O-1042" -> "order 1042")."""
    for match in _ID_TOKEN.finditer(text):
        word = _kind_word(match.group(0), known)
        if word is not None:
            yield "same-record-by-number", _by_number(text, match, word, int(match.group(2)))
            return


def _in_words(cents: int, currency: str | None) -> str:
    whole, fraction = divmod(cents, 100)
    name = {"EUR": "euros", "USD": "US dollars", "GBP": "pounds", "CHF": "Swiss francs"}.get(currency or "", "")
    words = str(num2words(whole, lang="en")) + (f" {name}" if name else "")
    return words + (f" and {num2words(fraction, lang='en')} cents" if fraction else "")


def amounts_in_words(text: str) -> Iterator[tuple[str, str, bool]]:
    """(how, text, valid) for the first amount of the text written out in words: the same amount (valid) and one
    cent off (wrong)."""
    match = _AMOUNT.search(text)
    if match is None:
        return
    cents = int(match.group(1)) * 100 + int(match.group(2))
    currency = match.group(3) if match.group(3) and currency_code(match.group(3)) else None
    for how, value, valid in (("amount-in-words", cents, True), ("amount-off-in-words", cents + 1, False)):
        yield how, text[: match.start()] + _in_words(value, currency) + text[match.end():], valid


def address_spellings(text: str) -> Iterator[tuple[str, str]]:
    """(how, text) for an e-mail address or a phone number written as people also write it: the same value."""
    value = text.strip()
    if _EMAIL.fullmatch(value):
        yield "email-capitals", value.upper()
        local, _, domain = value.partition("@")
        yield "email-domain-capitals", f"{local}@{domain.upper()}"
    elif phone_number(value) is not None and re.search(r"\s", value):
        yield "phone-compact", re.sub(r"\s+", "", value)
        yield "phone-dashes", re.sub(r"\s+", "-", value)


def is_address(text: str) -> bool:
    """An e-mail address or a phone number: values whose case and spacing mean nothing."""
    value = text.strip()
    return bool(_EMAIL.fullmatch(value)) or phone_number(value) is not None


def answer_variants(spec: AnswerField, value: Any) -> Iterator[tuple[str, Any, bool]]:
    """(how, value, valid) for a right answer field written another way: a date with its weekday (valid) or with a
    weekday it is not (wrong), money with the currency's name (valid), ids in lower case (valid)."""
    if spec.type == "date" and isinstance(value, str):
        day = parse_date(value)
        if day is not None:
            yield "weekday", f"{_WEEKDAY_NAMES[day.weekday()]}, {day.isoformat()}", True
            yield "wrong-weekday", f"{_WEEKDAY_NAMES[(day.weekday() + 1) % 7]}, {day.isoformat()}", False
    elif spec.type == "money" and isinstance(value, str):
        money = parse_money(value)
        if money is not None and money.currency in ("EUR", "USD", "GBP", "CHF"):
            name = {"EUR": "euros", "USD": "US dollars", "GBP": "British pounds", "CHF": "Swiss francs"}
            yield "currency-name", f"{money.cents // 100}.{money.cents % 100:02d} {name[money.currency]}", True
    elif spec.type == "text" and spec.match == "with_qualifiers" and isinstance(value, str):
        yield "qualifier", f"{value} (as stated)", True
    elif spec.type == "id" and isinstance(value, str) and value.lower() != value:
        yield "lower-case", value.lower(), True
    elif spec.type == "id_list" and isinstance(value, list) and any(str(i).lower() != i for i in value):
        yield "lower-case", [str(i).lower() for i in value], True


def weekday_contradictions(text: str) -> Iterator[tuple[str, str]]:
    """(how, text) with a weekday that contradicts the first ISO date of a free text put before it."""
    match = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", text)
    if match is None:
        return
    day = date.fromisoformat(match.group(1))
    wrong = _WEEKDAY_NAMES[(day.weekday() + 1) % 7]
    yield "wrong-weekday", text[: match.start()] + f"{wrong}, {match.group(1)}" + text[match.end():]


def _past(verb: str) -> str:
    """The past participle of a regular verb ("dispatch" -> "dispatched", "change" -> "changed")."""
    return verb + ("d" if verb.endswith("e") else "ed")


def forbidden_acts(text: str, instruction: str) -> Iterator[tuple[str, str]]:
    """(how, text) for each act the instruction forbids on a named thing, said done after the text ("… Also
    dispatched the delivery."): a text that reports a breach, or a false one (`verifier.prohibitions`)."""
    for rule in prohibitions(instruction):
        thing = sorted(rule.things)[0]
        yield f"forbidden-{rule.verb}", f"{text.strip().rstrip('.')}. Also {_past(rule.verb)} the {thing}."
