"""Facts in free text: a value is stated only as a whole token of its type, never as part of another."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tasks.spec import Fact, TextCheck
from tasks.values import Money
from verifier.facts import (
    dates,
    ids_like,
    integers,
    money_mentions,
    states_id,
    states_money,
    states_words,
    text_problems,
)

PREFIX = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=4)
NUMBER = st.integers(min_value=1, max_value=99999)
PUNCTUATION = st.sampled_from(["", ".", ",", ";", ")", ":", "!"])


@given(PREFIX, NUMBER, PUNCTUATION, st.sampled_from([str.upper, str.lower, str.title]))
def test_an_id_is_stated_as_a_whole_token_whatever_punctuation_follows(prefix: str, number: int, end: str,
                                                                       case: Callable[[str], str]) -> None:
    """In any letter case: ids compare as `normalise_id` says."""
    identifier = f"{prefix}-{number}"
    assert states_id(f"Order ({case(identifier)}{end} is done", identifier)
    assert states_id(f"{case(identifier)}{end}", identifier)


@given(PREFIX, NUMBER)
def test_a_longer_or_other_id_never_states_the_id(prefix: str, number: int) -> None:
    identifier = f"{prefix}-{number}"
    for text in (f"{prefix}-{number}0", f"X{prefix}-{number}", f"{prefix}-{number}-2", f"x{prefix.lower()}-{number}",
                 f"{prefix}-{number + 1}", f"{prefix}{number}"):
        assert not states_id(f"see {text} now", identifier), text


@given(st.integers(min_value=1, max_value=10**7), st.sampled_from(["EUR", "USD", "GBP"]))
def test_money_is_stated_in_any_spelling_and_never_inside_a_longer_number(cents: int, code: str) -> None:
    money = Money(cents=cents, currency=code)
    whole, fraction = divmod(cents, 100)
    symbol = {"EUR": "€", "USD": "$", "GBP": "£"}[code]
    for text in (f"a refund of {whole}.{fraction:02d} {code}.", f"{symbol}{whole:,}.{fraction:02d} was paid",
                 f"({code} {whole}.{fraction:02d})", f"{whole}.{fraction:02d} as agreed"):
        assert states_money(text, money), text
    for text in (f"1{whole}.{fraction:02d} {code}", f"{whole}.{fraction:02d}5 {code}", f"ID-{whole}.{fraction:02d}",
                 f"{whole}.{fraction:02d} {'USD' if code != 'USD' else 'EUR'}"):
        assert not states_money(text, money), text


def test_mentions_list_every_value_of_a_type_and_leave_ids_and_dates_alone() -> None:
    text = "Order O-1042 (2 items) refunded 49.90 EUR on 2026-03-02; the other 12,50 € stays, ref 2026"
    assert [(a.value.cents, a.currency) for a in money_mentions(text)] == [(4990, "EUR"), (1250, "EUR")]  # type: ignore[union-attr]
    assert dates(text) == [dt.date(2026, 3, 2)]
    assert integers(text) == [2, 2026]
    assert ids_like("APR-7731 or APR-7604, not INV-4502", ["APR-7731"]) == ["APR-7731", "APR-7604"]


def test_words_are_whole_words() -> None:
    assert states_words("It was sent by POST.", "post") and not states_words("It was postponed.", "post")
    assert states_words("refund   issued", "refund issued") and not states_words("refunds issued", "refund issued")


def test_a_text_check_rejects_missing_forbidden_and_other_values() -> None:
    check = TextCheck(states=[Fact(type="words", value=["refund", "refunded"])],
                      may_state=[Fact(type="money", value="49.90 EUR"), Fact(type="id", value="O-1042")],
                      no_other=["money", "id"])
    assert text_problems("We refunded 49.90 EUR for O-1042.", check) == []
    assert text_problems("We refunded you.", check) == []  # leaving a fact out is allowed; getting it wrong is not
    assert text_problems("We refunded 49.91 EUR.", check) == ["also states money 49.91 EUR"]
    assert text_problems("We refunded 49.90 EUR or 59.90 EUR.", check) == ["also states money 59.90 EUR"]
    assert text_problems("We refunded O-1043.", check) == ["also states id O-1043"]
    assert text_problems("We have not refunded it.", check) == [
        "does not assert words ['refund', 'refunded'] (negation 'not')"]
    assert text_problems("Done.", check) == ["does not assert words ['refund', 'refunded']"]
    assert text_problems(None, check) == ["None is no text"]


def test_a_text_check_with_nothing_to_check_or_a_fact_of_the_wrong_type_does_not_load() -> None:
    with pytest.raises(ValidationError, match="must say what the text means"):
        TextCheck()
    with pytest.raises(ValidationError, match="must say what the text means"):
        TextCheck(may_state=[Fact(type="id", value="O-1042")], no_other=["id"])
    with pytest.raises(ValidationError, match="needs a stated or allowed fact"):
        TextCheck(states=[Fact(type="words", value="x")], no_other=["money"])
    with pytest.raises(ValidationError, match="not a money fact"):
        Fact.model_validate({"money": "49.90"})
    assert Fact.model_validate({"id": "O-1042"}) == Fact(type="id", value="O-1042")


def test_nothing_else_allows_the_facts_and_their_labels_only() -> None:
    check = TextCheck(states=[Fact(type="id", value="APR-7731")], no_other=["id"], nothing_else=["approval", "code"])
    for right in ("APR-7731", "Approval APR-7731", "Approval code: APR-7731", " approval code - APR-7731. "):
        assert text_problems(right, check) == [], right
    for wrong in ("Approved by Helen Park, approval APR-7731.", "APR-7731 (see attached)", "APR-7731 not valid"):
        assert text_problems(wrong, check) and "states more than its facts" in text_problems(wrong, check)[-1]
    with pytest.raises(ValidationError, match="id and words facts only"):
        TextCheck(states=[Fact(type="money", value="1.00 EUR")], nothing_else=[])


@given(st.integers(1, 999_999), st.sampled_from(["EUR", "USD", "CHF", "GBP"]),
       st.sampled_from(["{a} {c}", "{c} {a}", "{a} {c}.", "a total of {a} {c}, thanks"]))
def test_an_amount_asked_with_its_currency_is_stated_only_with_it(cents: int, currency: str, form: str) -> None:
    # `currency: required` (the instruction asks for the total and its currency): the bare amount states nothing,
    # the amount beside its currency states it, another currency still contradicts it.
    amount = f"{cents // 100}.{cents % 100:02d}"
    fact = {"money": f"{amount} {currency}"}
    required = TextCheck.model_validate({"states": [fact], "no_other": ["money"], "currency": "required"})
    optional = TextCheck.model_validate({"states": [fact], "no_other": ["money"]})
    bare = f"Your order totals {amount}."
    assert text_problems(bare, required) and not text_problems(bare, optional)
    written = "Your order totals " + form.format(a=amount, c=currency)
    assert not text_problems(written, required) and not text_problems(written, optional)
    other = next(c for c in ("EUR", "USD") if c != currency)
    assert text_problems(f"Your order totals {amount} {other}.", required)
