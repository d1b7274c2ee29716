"""Reading typed values: every common spelling of a value reads the same, and nothing near it does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.values import (
    ID_DASHES,
    Money,
    amount_cents,
    is_identifier,
    normalise_id,
    normalise_text,
    parse_date,
    parse_integer,
    parse_money,
)
from verifier.facts import states_id
from verifier.matching import same_value

CENTS = st.integers(min_value=0, max_value=10**9)
CURRENCIES = st.sampled_from([("EUR", "€"), ("USD", "$"), ("GBP", "£"), ("CHF", "CHF")])


def grouped(whole: int, separator: str) -> str:
    text = f"{whole:,}"
    return text.replace(",", separator)


def spellings(cents: int) -> list[str]:
    """The ways people write an amount: plain, English grouping, continental grouping, spaces, no decimals."""
    whole, fraction = divmod(cents, 100)
    forms = [f"{whole}.{fraction:02d}", f"{grouped(whole, ',')}.{fraction:02d}",
             f"{grouped(whole, '.')},{fraction:02d}", f"{grouped(whole, ' ')},{fraction:02d}",
             f"{grouped(whole, chr(0xa0))}.{fraction:02d}"]
    if fraction == 0:
        forms += [str(whole), grouped(whole, ",") if whole >= 1000 else str(whole)]
    return forms


@given(CENTS)
def test_every_spelling_of_an_amount_reads_as_the_same_cents(cents: int) -> None:
    for text in spellings(cents):
        assert amount_cents(text) == cents, text


@given(CENTS, CURRENCIES)
def test_money_reads_with_its_currency_before_or_after_by_code_or_symbol(cents: int, currency: tuple[str, str]) -> None:
    code, symbol = currency
    for amount in spellings(cents):
        for text in (f"{amount} {code}", f"{code} {amount}", f"{symbol}{amount}", f"{amount} {symbol}",
                     f"{amount} {code.lower()}"):
            assert parse_money(text) == Money(cents=cents, currency=code), text


@given(CENTS, CURRENCIES)
def test_a_neighbouring_or_longer_amount_never_reads_as_the_same_money(cents: int, currency: tuple[str, str]) -> None:
    code, _ = currency
    right = Money(cents=cents, currency=code)
    whole, fraction = divmod(cents, 100)
    for wrong in (f"{whole}.{fraction:02d}1 {code}", f"1{whole}.{fraction:02d} {code}",
                  f"{(cents + 1) // 100}.{(cents + 1) % 100:02d} {code}", f"{whole}.{fraction:02d}",
                  f"{whole}.{fraction:02d} {code} {code}"):
        assert parse_money(wrong) != right, wrong


def test_amounts_that_could_mean_two_things_or_nothing_are_no_amount() -> None:
    assert amount_cents("0,125") is None  # a fraction of a cent
    assert amount_cents("1,2,3") is None and amount_cents("12.34.5") is None and amount_cents("") is None
    assert amount_cents("12 EUR") is None  # an amount, not money: the currency belongs to parse_money
    assert parse_money("2340 or 6480 EUR") is None and parse_money("EUR 12 EUR") is None


DATES = st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2060, 12, 31))


@given(DATES)
def test_every_spelling_of_a_date_reads_as_the_same_day(day: dt.date) -> None:
    month = day.strftime("%B")
    for text in (day.isoformat(), f"{day.day} {month} {day.year}", f"{month} {day.day}, {day.year}",
                 f"{day.day} {month[:3]} {day.year}", f"{day.strftime('%A')}, {day.day} {month} {day.year}",
                 f"{day.day:02d}.{day.month:02d}.{day.year}", f"{month} {day.day}th, {day.year}"):
        assert parse_date(text) == day, text


@given(DATES)
def test_a_slashed_date_reads_only_when_one_reading_is_possible(day: dt.date) -> None:
    european, american = parse_date(day.strftime("%d/%m/%Y")), parse_date(day.strftime("%m/%d/%Y"))
    if day.day <= 12 and day.day != day.month:
        assert european is None and american is None
    else:
        assert european == day and american == day


def test_dates_without_a_year_or_impossible_ones_are_no_date() -> None:
    assert parse_date("20 March") is None and parse_date("2026-02-30") is None and parse_date("2026-03") is None


def test_ids_compare_exactly_and_text_without_case_white_space_or_an_article() -> None:
    assert normalise_id(' "RA-12" ') == "RA-12" == normalise_id("ra-12") and normalise_id("RA-120") != "RA-12"
    assert normalise_text("  the Orchard   room. ") == normalise_text("Orchard Room")
    assert normalise_text("Orchard Room annex") != normalise_text("Orchard Room")


@given(st.sampled_from(["SKU-1003", "APR-7731", "O-1047", "T-2001"]), st.sampled_from(ID_DASHES),
       st.sampled_from([str.upper, str.lower, str.title]), st.sampled_from(["", " ", "'", "“"]))
def test_an_id_reads_the_same_in_any_case_with_any_hyphen_and_in_free_text(identifier: str, dash: str,
                                                                          case: Callable[[str], str],
                                                                          edge: str) -> None:
    written = case(identifier.replace("-", dash))
    assert is_identifier(written) and normalise_id(f"{edge}{written}{edge[::-1]}") == identifier
    assert same_value(written, identifier)
    assert states_id(f"Done: {written} is closed.", identifier)
    assert not states_id(f"Done: {written}7 is closed.", identifier)  # another id, one digit longer
    em_dashed = identifier.replace("-", "\u2014")  # an em dash separates words: no id
    assert not states_id(f"Done: {em_dashed} is closed.", identifier)


@pytest.mark.parametrize(("value", "expected"), [(3, 3), ("3", 3), (3.0, 3), ("1,000", 1000), (True, None),
                                                  (3.5, None), ("3.0", None), ("3 or 4", None)])
def test_integers_read_from_whole_numbers_only(value: object, expected: int | None) -> None:
    assert parse_integer(value) == expected
