"""Free text read as assertions: generated sentences that assert a fact pass, the same words taken back fail.

Each case is generated from templates and facts by program (Hypothesis draws the fact, the template, the case and
the spacing), so the reader is tested on the classes, not on a list of examples: negation, modality and futurity,
pending states, conditions, reported failure, requests, and the valid ways of asserting (perfect and past tense,
a second clause that looks ahead, a negation that follows the fact).
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words
from tiers import examples

from tasks.spec import Fact, TextCheck
from tasks.values import parse_date, parse_money
from verifier.facts import KnownIds, states_id, states_money, text_problems

EVENTS = [
    (["refund", "refunded"], ["issued", "processed", "paid", "credited"], "refund"),
    (["copy"], ["posted", "mailed", "sent"], "copy"),
    (["credit", "credited"], ["issued", "applied", "paid"], "credit"),
    (["parcel", "package"], ["shipped", "dispatched", "delivered"], "parcel"),
]

ASSERTED = [
    "We have {verb} your {noun}.",
    "Your {noun} was {verb} today.",
    "Your {noun} has been {verb}, and you will see it within 3 days.",
    "Good news: your {noun} was {verb}. It should reach you soon.",
    "We {verb} the {noun} for order O-1042; no further action is needed.",
    "The {noun} has been {verb}, not delayed.",
    "Hello Dana,\nyour {noun} has been {verb}.\nKind regards",
    "Your {noun} was {verb} as you requested.",
    "We checked the order and then {verb} the {noun}.",
]
NOT_ASSERTED = [
    "Your {noun} will be {verb} soon.",
    "Your {noun} is pending and will be {verb}.",
    "We have not {verb} your {noun}.",
    "Your {noun} was never {verb}.",
    "Once approved, your {noun} will be {verb}.",
    "If it is approved, your {noun} is {verb}.",
    "Your {noun} is scheduled to be {verb} next week.",
    "Your {noun} could be {verb} tomorrow.",
    "We {verb} your {noun}, but it was returned to sender.",
    "We {verb} your {noun}. It bounced.",
    "Your {noun} is being {verb}.",
    "Your {noun} has not yet been {verb}.",
    "Your {noun} would have been {verb}.",
    "Your {noun} is still awaiting approval before it is {verb}.",
    "We {verb} your {noun} request to the team.",
    "We are unable to confirm that your {noun} was {verb}.",
    "Your {noun} {verb}? Not yet.",
    "Your {noun} is queued to be {verb}.",
]


def _check(nouns: list[str], verbs: list[str]) -> TextCheck:
    return TextCheck(states=[Fact(type="words", value=nouns), Fact(type="words", value=verbs)])


def _case(text: str, how: str) -> str:
    return {"as is": text, "upper": text.upper(), "lower": text.lower(), "spaced": text.replace(" ", "  ")}[how]


CASES = st.sampled_from(["as is", "upper", "lower", "spaced"])


@given(st.sampled_from(EVENTS), st.sampled_from([(t, True) for t in ASSERTED] + [(t, False) for t in NOT_ASSERTED]),
       st.data(), CASES)
@settings(max_examples=examples(200))
def test_a_text_states_the_event_only_when_it_asserts_it(event: tuple[list[str], list[str], str],
                                                         template: tuple[str, bool], data: st.DataObject,
                                                         how: str) -> None:
    """The same words asserted state the event; taken back (negated, pending, conditional, reported failed) they
    do not, in any letter case or spacing."""
    nouns, verbs, noun = event
    verb = data.draw(st.sampled_from(verbs))
    text = _case(template[0].format(noun=noun, verb=verb), how)
    problems = text_problems(text, _check(nouns, verbs))
    if template[1]:
        assert problems == [], text
    else:
        assert problems and problems[0].startswith("does not assert"), text


def test_a_denial_is_a_negation_of_the_words_and_a_circumstance_ignores_modality() -> None:
    complete = TextCheck(never_states=[Fact(type="denies", value=["complete", "done"])])
    assert text_problems("Batch B-2 complete; nothing left.", complete) == []
    assert text_problems("Batch B-2 is not complete.", complete) == ["asserts denies ['complete', 'done']"]
    leftover = TextCheck(never_states=[Fact(type="words", value=["left", "remaining"])])
    assert text_problems("All processed, nothing left.", leftover) == []
    assert text_problems("Two events remaining.", leftover) == ["asserts words ['left', 'remaining']"]
    login = TextCheck(reading="circumstance", states=[Fact(type="words", value=["takeover", "unknown device"])],
                      never_states=[Fact(type="denies", value=["takeover"])])
    assert text_problems("Suspected account takeover: a login from an unknown device.", login) == []
    assert text_problems("This may be a takeover: a login from a new phone.", login) == []
    assert text_problems("No sign of takeover; the login is the customer's own phone.", login)[:2] == [
        "does not assert words ['takeover', 'unknown device'] (negation 'No')", "asserts denies ['takeover']"]


@given(st.integers(min_value=100, max_value=999_999), st.sampled_from(["EUR", "USD", "GBP"]))
def test_an_amount_in_words_is_the_amount(cents: int, code: str) -> None:
    whole, fraction = divmod(cents, 100)
    name = {"EUR": "euros", "USD": "US dollars", "GBP": "pounds"}[code]
    words = f"{num2words(whole, lang='en')} {name}" + (f" and {num2words(fraction, lang='en')} cents" if fraction
                                                        else "")
    money = parse_money(f"{whole}.{fraction:02d} {code}")
    assert money is not None
    assert states_money(f"We refunded {words}.", money), words
    other = parse_money(f"{whole}.{(fraction + 1) % 100:02d} {code}")
    assert other is not None and not states_money(f"We refunded {words}.", other), words


KNOWN = KnownIds(kinds={"O-1042": frozenset({"order", "number"}), "O-1047": frozenset({"order", "number"}),
                        "T-2001": frozenset({"ticket", "number"}), "FU-2": frozenset({"follow", "up", "follow up",
                                                                                       "follow_up", "code"})})


def test_a_bare_number_names_the_record_of_the_kind_it_is_said_to_be() -> None:
    check = TextCheck(states=[Fact(type="words", value="refunded")],
                      may_state=[Fact(type="id", value="O-1042"), Fact(type="id", value="T-2001")], no_other=["id"])
    for right in ("We refunded order 1042.", "We refunded order #1042.", "We refunded order no. 1042 (ticket 2001).",
                  "We refunded 2 items of O-1042.", "Refunded on 2 March."):
        assert text_problems(right, check, KNOWN) == [], right
    for wrong in ("We refunded order 1047.", "We refunded #1047.", "We refunded order no. 1047.",
                  "We refunded O-1047."):
        assert text_problems(wrong, check, KNOWN) == ["also states id O-1047"], wrong
    assert states_id("order 1042 is refunded", "O-1042", KNOWN) and not states_id("1042 items", "O-1042", KNOWN)


@given(st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2099, 12, 31)), st.integers(0, 6))
def test_a_date_with_a_weekday_reads_only_when_the_weekday_is_its_own(day: dt.date, shift: int) -> None:
    names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    named = names[(day.weekday() + shift) % 7]
    for text in (f"{named}, {day.isoformat()}", f"{named} {day.day} {day.strftime('%B')} {day.year}",
                 f"{day.isoformat()} ({named[:3]})"):
        assert parse_date(text) == (day if shift == 0 else None), text
    check = TextCheck(states=[Fact(type="words", value="due")], may_state=[Fact(type="date", value=day.isoformat())],
                      no_other=["date"])
    problems = text_problems(f"The invoice is due on {named}, {day.isoformat()}.", check)
    assert (problems == []) == (shift == 0), problems


@pytest.mark.parametrize(("text", "expected"), [
    ("We have issued a refund of 49.90 EUR for order O-1042.", []),
    ("We issued a refund of forty-nine euros and ninety cents.", []),
    ("Your refund of 49.90 EUR is pending and will be issued.", ["does not assert", "unsettled: modality 'will'"]),
    ("We refunded forty-nine euros and ninety-one cents.", ["also states money 49.91 EUR"]),
    ("We refunded order 1047.", ["also states id O-1047"]),
])
def test_the_refund_notice_of_the_catalog_reads_as_it_means(text: str, expected: list[str]) -> None:
    check = TextCheck.model_validate({
        "states": [{"words": ["refund", "refunded"]}, {"words": ["issued", "refunded", "processed", "paid",
                                                                 "credited"]}],
        "may_state": [{"money": "49.90 EUR"}, {"id": "O-1042"}], "no_other": ["money", "id"]})
    problems = text_problems(text, check, KNOWN)
    assert len(problems) == len(expected) and all(p.startswith(e) for p, e in zip(problems, expected, strict=True)), \
        problems
