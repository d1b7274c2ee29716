"""Readers of text someone else wrote, fuzzed: whole numbers, `--levels`, the action header a page may forge, the
scripted model label, a file's format field. Each either reads its input or refuses it; none raises otherwise."""

from __future__ import annotations

import pytest
import typer
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from adapter.containment import _action_of
from computerops.cli.main import Levels
from computerops.core.numbers import MAX_DIGITS, whole_number
from computerops.core.vocabulary import SCRIPTED_PREFIX, scripted_model, scripted_policy
from computerops.runs.records import EpisodeRecord

ASCII_DIGITS = "0123456789"


@given(st.text())
@example("²")
@example("١٢")
@example("1" * (MAX_DIGITS + 1))
@example(" 7")
@example("+7")
@example("")
def test_a_whole_number_is_ascii_digits_of_bounded_length_or_nothing(text: str) -> None:
    number = whole_number(text)
    readable = 1 <= len(text) <= MAX_DIGITS and all(c in ASCII_DIGITS for c in text)
    assert (number is not None) == readable
    if number is not None:
        assert number == int(text)


@given(st.text())
@example("²")
@example("1,٣")
@example("1,,2")
@example("0")
@example(" , ")
def test_levels_are_read_or_refused_never_crashed_on(text: str) -> None:
    try:
        levels = Levels.parse(text)
    except typer.BadParameter:
        return
    parts = [p.strip() for p in text.split(",") if p.strip()]
    assert levels.values == tuple(int(p) for p in parts) and all(v >= 1 for v in levels.values)
    assert all(c in ASCII_DIGITS for p in parts for c in p)


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=6), st.sampled_from([",", ", ", " ,"]))
def test_every_list_of_positive_levels_reads_back(values: list[int], separator: str) -> None:
    assert Levels.parse(separator.join(map(str, values))).values == tuple(values)


@given(st.text())
@example("²")
@example("9" * 5000)
@example("-1")
def test_an_action_header_a_page_forged_is_a_number_or_nothing(value: str) -> None:
    found = _action_of(value)
    assert found is None or found == whole_number(value)


@given(st.text())
def test_the_scripted_label_names_its_policy_and_nothing_else_does(text: str) -> None:
    if text:
        assert scripted_policy(scripted_model(text)) == text
    if not text.startswith(SCRIPTED_PREFIX):
        assert scripted_policy(text) is None


@given(st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(), max_size=2)))
def test_any_format_but_the_current_one_is_refused_by_name(found: object) -> None:
    current = EpisodeRecord.model_fields["format"].default
    if found == current:
        return
    with pytest.raises(ValidationError) as refused:
        EpisodeRecord.model_validate({"format": found})
    assert f"format {found!r} is not one this ComputerOps reads" in str(refused.value)
