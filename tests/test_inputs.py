"""Typed inputs (adapter/inputs.py): what the control line says of them, and which filled values the browser keeps.

The probes here are what Chromium answered for these values (tests/test_adapter_browser.py checks the same
decisions against the live browser, with generated values).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapter.inputs import CONSTRAINED_TYPES, Probe, describe_type, fill_problem, line_attributes
from adapter.observation import Control, format_control, parse_control_line


def test_a_typed_input_says_its_type_and_format_after_its_value() -> None:
    control = Control(id="4", role="textbox", name="Ship date", value="", input_type="date", required=True)
    assert format_control(control) == '[4] textbox "Ship date" value="" type=date format="YYYY-MM-DD" required'
    assert parse_control_line(format_control(control)) == ("4", "textbox", "Ship date")


@pytest.mark.parametrize(("input_type", "shown"), [
    ("date", 'type=date format="YYYY-MM-DD"'), ("time", 'type=time format="HH:MM"'),
    ("datetime-local", 'type=datetime-local format="YYYY-MM-DDTHH:MM"'), ("month", 'type=month format="YYYY-MM"'),
    ("week", 'type=week format="YYYY-Www"'), ("color", 'type=color format="#rrggbb"'),
    # The role already says these hold numbers (spinbutton, slider); text types constrain nothing.
    ("number", ""), ("range", ""), ("text", ""), ("email", ""), (None, ""),
])
def test_only_types_with_a_syntax_of_their_own_are_marked(input_type: str | None, shown: str) -> None:
    assert line_attributes(input_type) == shown


@pytest.mark.parametrize(("probe", "kept"), [
    (Probe("date", "2024-06-01", "2024-06-01"), True),
    (Probe("date", "06/01/2024", ""), False),
    (Probe("time", "09:30", "09:30"), True),
    (Probe("time", "9:30", ""), False),
    (Probe("datetime-local", "2024-06-01 10:30", "2024-06-01T10:30"), True),  # the browser's normal form
    (Probe("month", "2024-6", ""), False),
    (Probe("week", "2024-w05", ""), False),
    (Probe("number", "1e3", "1e3"), True),
    (Probe("number", "1,000", ""), False),
    (Probe("color", "red", "#ff0000", is_colour=True), True),
    (Probe("color", "reddish", "#000000", is_colour=False), False),
    (Probe("range", "7.0", "7", bounds=("0", "10", "1")), True),
    (Probe("range", "15", "10", bounds=("0", "10", "1")), False),  # clamped
    (Probe("range", "7.5", "8", bounds=("0", "10", "1")), False),  # stepped
    (Probe("range", "nan", "5"), False),
    (Probe("date", "", ""), True),  # emptying a field
    (Probe("number", "", ""), True),
    (Probe("range", "", "50"), False),  # a slider always holds a number: it cannot be emptied
    (Probe("color", "", "#000000"), False),  # nor can a colour field
    (Probe("text", "anything", ""), True),  # not a constrained type: nothing to decide here
])
def test_a_fill_is_refused_exactly_when_the_browser_would_change_its_meaning(probe: Probe, kept: bool) -> None:
    assert (fill_problem(probe) is None) == kept


def test_a_refusal_gives_the_format_and_what_the_browser_would_make_of_it() -> None:
    assert fill_problem(Probe("date", "06/01/2024", "")) == (
        "it is a date field, which keeps only a date written YYYY-MM-DD (e.g. 2024-06-01); the browser would make it "
        "empty")
    clamped = fill_problem(Probe("range", "90", "50", bounds=("0", "50", "5")))
    assert clamped is not None and clamped.endswith('from 0 to 50 in steps of 5; the browser would make it "50"')
    assert "no spaces, '+' or separators" in describe_type("number")


@given(st.sampled_from(sorted(t for t in CONSTRAINED_TYPES if t not in ("color", "range"))),
       st.text(min_size=1).filter(str.strip))
def test_a_value_the_browser_empties_is_never_accepted(input_type: str, asked: str) -> None:
    problem = fill_problem(Probe(input_type, asked.strip(), ""))
    assert problem is not None and "the browser would make it empty" in problem


@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False))
def test_a_slider_accepts_a_value_only_when_it_keeps_the_same_number(asked: float, kept: float) -> None:
    assert (fill_problem(Probe("range", repr(asked), repr(kept))) is None) == (asked == kept)
