"""Free text read against the task it answers: what the instruction forbids and says to leave, which record a
place word picks, whose a thing is, which way money moves, what a relative clause says of a named record, and two
facts that must name one thing (`verifier.prohibitions`, `verifier.settling`, `TextCheck.apposed`).

Each rule is pinned from both sides by generated cases: the operators that make a text wrong (the forbidden act
done, another place, an owner, money toward the writer, a reversal of the named record, the two facts in two roles)
and the neighbours a careful reviewer accepts (the act denied, the same place in other words, a place that picks no
record, an owner denied, money toward the customer, a state that agrees, the facts side by side in any order).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from tasks.spec import TextCheck
from verifier.facts import KnownIds, text_problems
from verifier.prohibitions import Prohibition, prohibitions

CHECKPOINT_INSTRUCTION = ("Finish batch B-2: process each of its queued events through the console, then record a "
                          "checkpoint for batch B-2 with status complete. Do not dispatch the delivery that an event "
                          "opens, and do not touch other batches.")
COMPLETE = TextCheck.model_validate({
    "never_states": [{"words": ["incomplete", "unfinished", "pending", "remaining", "left", "queued", "open"]},
                     {"denies": ["complete", "completed", "done", "finished", "processed", "all"]}],
    "may_state": [{"id": "B-2"}, {"id": "EV-506"}, {"id": "EV-507"}, {"id": "EV-508"}, {"id": "D-508"}],
    "no_other": ["id"]})
LEDGER = KnownIds.of(
    {"event": [{"number": "EV-506", "batch": "B-2"}, {"number": "EV-507", "batch": "B-2"},
               {"number": "EV-508", "batch": "B-2"}],
     "delivery": [{"number": "D-508", "request_id": "REQ-7108"}], "checkpoint": []},
    (), CHECKPOINT_INSTRUCTION)
DONE = "EV-506, EV-507 and EV-508 processed"


@pytest.mark.parametrize(("instruction", "rules"), [
    (CHECKPOINT_INSTRUCTION, [Prohibition("dispatch", frozenset({"delivery"}))]),
    ("Forward the invoice. Do not change its subject or text.",
     [Prohibition("change", frozenset({"subject", "text"}))]),
    ("Answer the ticket; don't contact the vendor.", [Prohibition("contact", frozenset({"vendor"}))]),
    ("Reject the second claim. Do not decide any other claim.", []),  # about other records: no_other's matter
    ("Do not change anything else.", []),
    ("Ticket T-1: Olga reports a login from a device they do not own.", []),  # no imperative
])
def test_a_prohibition_is_an_imperative_about_a_named_thing(instruction: str, rules: list[Prohibition]) -> None:
    assert [(r.verb, r.things) for r in prohibitions(instruction)] == [(r.verb, r.things) for r in rules]


DISPATCHED = ["the delivery dispatched", "the delivery was dispatched", "we dispatched the delivery",
              "D-508's delivery has been dispatched", "I also dispatched the deliveries",
              "the delivery has been sent out", "the delivery went out with the second run",  # in other words
              "we did not hold back the delivery"]
NOT_DISPATCHED = ["the delivery not dispatched", "the delivery was not dispatched, as asked",
                  "we did not dispatch the delivery", "no delivery was dispatched"]
LEFT_AS_TOLD = ["I left the delivery alone", "the delivery is still pending, as instructed",
                "the delivery that an event opened was left undispatched", "D-508 left pending"]
LEFT_UNDONE = ["EV-508 left", "EV-508 and the delivery are still pending", "the events and D-508 remaining"]


@pytest.mark.parametrize(("clause", "passes"), [*((c, False) for c in DISPATCHED), *((c, True) for c in NOT_DISPATCHED),
                                               *((c, True) for c in LEFT_AS_TOLD),
                                               *((c, False) for c in LEFT_UNDONE)])
@pytest.mark.parametrize("joint", ["{done} and {clause}.", "{done}. {Clause}.", "{done}; {clause}."])
def test_a_note_may_not_say_done_what_the_instruction_forbids_and_may_say_it_was_left(clause: str, passes: bool,
                                                                                        joint: str) -> None:
    text = joint.format(done=DONE, clause=clause, Clause=clause[0].upper() + clause[1:])
    problems = text_problems(text, COMPLETE, LEDGER)
    assert (problems == []) == passes, (text, problems)


INVOICE_INSTRUCTION = "Ticket T-2005: Mei Chen asks for a copy of her last invoice. Tell Mei how it was sent."
POST = TextCheck.model_validate({"states": [{"words": ["post", "posted", "by mail"]}]})
MEI = KnownIds.of({"ticket": [{"number": "T-2005"}], "invoice": [{"number": "INV-1"}]}, (), INVOICE_INSTRUCTION)
PLACES = {"last": True, "latest": True, "most recent": True, "newest": True, "first": False, "earliest": False,
          "oldest": False, "previous": False, "earlier": False, "second": False, "third": False, "7th": False}


@given(st.sampled_from(sorted(PLACES)), st.sampled_from(["A copy of your {p} invoice was sent to you by post.",
                                                          "We posted your {p} invoice to you.",
                                                          "Your {p} invoice went out by post today."]))
@settings(max_examples=examples(60))
def test_a_place_word_picks_a_record_and_must_pick_the_instructions(place: str, frame: str) -> None:
    text = frame.format(p=place)
    problems = text_problems(text, POST, MEI)
    assert (problems == []) == PLACES[place], (text, problems)


@pytest.mark.parametrize("text", [
    "The copy was first sent by post on Monday.",  # when, not which
    "A copy of your invoice was sent by post; the first Process step is done.",  # a label
    "Your invoice was sent by post to your original address.",  # no place in a series
    "First, a copy of your last invoice was sent to you by post.",
])
def test_a_place_word_that_picks_no_record_is_no_matter(text: str) -> None:
    assert text_problems(text, POST, MEI) == [], text


TAKEOVER = TextCheck.model_validate({
    "reading": "circumstance",
    "states": [{"words": ["takeover", "does not own", "unknown device", "someone else", "unrecognised"]}]})
SITUATION = ["Login from a device the customer does not own", "Suspected takeover: a login from an unknown device"]
OWNERS = ["the customer's own phone logged in", "it is her new phone", "the device is hers",
          "it was our own support team", "it's her laptop", "the login was the customer's", "that was us",
          "it turned out to be her tablet"]
NOT_OWNERS = ["someone else's device logged in", "it is not hers", "the device is in Lagos", "it was at 03:12",
              "the phone is an unknown model"]


@pytest.mark.parametrize(("situation", "after"), itertools.product(SITUATION, OWNERS + NOT_OWNERS))
@pytest.mark.parametrize("joint", ["{s}; {a}.", "{s}. {A}.", "{s}, but {a}."])
def test_a_reason_that_says_whose_the_thing_is_explains_it_away(situation: str, after: str, joint: str) -> None:
    text = joint.format(s=situation, a=after, A=after[0].upper() + after[1:])
    problems = text_problems(text, TAKEOVER)
    assert any("whose it is" in p for p in problems) == (after in OWNERS), (text, problems)


REFUND = TextCheck.model_validate({
    "states": [{"words": ["refund", "refunded"]}, {"words": ["issued", "refunded", "credited"]}],
    "may_state": [{"money": "59.00 EUR"}, {"id": "O-1093"}], "no_other": ["money", "id"]})
O_1093 = KnownIds(kinds={"O-1093": frozenset({"order", "number"})})


@pytest.mark.parametrize(("where", "passes"), [
    ("from your card to our account", False), ("into our bank account", False), ("to our company account", False),
    ("from your account to us", False),
    ("to your card", True), ("back to your original payment method", True), ("to the card you paid with", True),
])
def test_a_refund_moves_money_toward_the_customer(where: str, passes: bool) -> None:
    text = f"We have issued a refund of 59.00 EUR for order O-1093 {where}."
    problems = text_problems(text, REFUND, O_1093)
    assert (problems == []) == passes, (text, problems)


DUPLICATE = TextCheck.model_validate({
    "reading": "circumstance", "states": [{"words": ["duplicate", "same", "twice"]}, {"id": "X-5005"}],
    "may_state": [{"id": "X-5006"}], "no_other": ["id"]})
CLAIMS = KnownIds(kinds={"X-5005": frozenset({"claim", "number"}), "X-5006": frozenset({"claim", "number"})})


@pytest.mark.parametrize(("relative", "passes"), [
    ("which we also rejected", False), ("which was declined", False), ("which we cancelled as well", False),
    ("which failed", False), ("the claim we declined", False), ("that we rejected as well", False),
    ("which was filed earlier", True), ("which has the same receipt", True), ("which was not rejected", True),
])
def test_a_relative_clause_that_reverses_the_named_record_is_a_claim_about_it(relative: str, passes: bool) -> None:
    text = f"Duplicate of X-5005, {relative}."
    problems = text_problems(text, DUPLICATE, CLAIMS)
    assert (problems == []) == passes, (text, problems)


MANAGER = TextCheck.model_validate({
    "reading": "circumstance", "apposed": True,
    "states": [{"words": "Fatima Haddad"}, {"words": ["manager", "line manager", "supervisor"]}]})
APPOSED = ["your manager, who is Fatima Haddad", "your manager, Fatima Haddad", "Fatima Haddad (your manager)",
           "Fatima Haddad, your line manager", "your supervisor Fatima Haddad", "your manager: Fatima Haddad",
           "Fatima Haddad = your manager"]
TWO_ROLES = ["Fatima Haddad is to submit it through your manager", "Fatima Haddad submits these through her manager",
             "your manager and Fatima Haddad", "Fatima Haddad's team, not your manager"]


@pytest.mark.parametrize(("phrase", "passes"), [*((p, True) for p in APPOSED), *((p, False) for p in TWO_ROLES)])
def test_facts_that_name_one_thing_stand_side_by_side(phrase: str, passes: bool) -> None:
    text = f"Team expense: please submit it through {phrase}." if passes else f"Team expense: {phrase}."
    problems = text_problems(text, MANAGER)
    assert (problems == []) == passes, (text, problems)


def test_apposed_needs_two_words_facts() -> None:
    with pytest.raises(ValueError, match="apposed needs two"):
        TextCheck.model_validate({"states": [{"words": "Fatima Haddad"}], "apposed": True})


LEAVE_INSTRUCTION = ("Ingrid Larsen has written to the HR desk about Chen Kowalski's annual leave from 2026-06-22 to "
                     "2026-06-26. Do what the latest message asks; if it asks for a rejection, give the manager's "
                     "reason as the note.")
SHORT = TextCheck.model_validate({"reading": "circumstance", "states": [{"words": ["short", "short-staffed"]}]})
LEAVE = KnownIds.of({"leave_request": [{"number": "L-3106"}]}, (), LEAVE_INSTRUCTION)
ASKER_SLOTS = ["Rejected at the request of {n}: the team is short that week.",
               "Rejected at {n}'s request: the team is short that week.",
               "Rejected as {n} asked: the team is short that week.",
               "Rejected as requested by {n}; the team is short that week."]


@pytest.mark.parametrize(("slot", "name"), itertools.product(ASKER_SLOTS, ["Ingrid Larsen", "Ingrid", "Chen Kowalski",
                                                                         "Chen"]))
def test_the_one_who_asked_is_the_instructions_asker(slot: str, name: str) -> None:
    text = slot.format(n=name)
    problems = text_problems(text, SHORT, LEAVE)
    assert (problems == []) == name.startswith("Ingrid"), (text, problems)


def test_a_person_who_asked_for_something_else_is_no_asker_slot() -> None:
    text = "Chen Kowalski requested leave that week; rejected at Ingrid Larsen's request: the team is short that week."
    assert text_problems(text, SHORT, LEAVE) == []
    assert text_problems("Rejected at the request of Chen Kowalski: the team is short that week.", SHORT,
                         KnownIds.of({}, (), "Reject leave L-3106: the team is short.")) != []  # no asker: names


@pytest.mark.parametrize(("text", "passes"), [
    ("Duplicate of X-5005 (also rejected).", False), ("Duplicate of X-5005 - rejected too.", False),
    ("Duplicate of X-5005 (same amount, same date).", True),
])
def test_a_parenthesis_after_a_named_record_is_said_of_it(text: str, passes: bool) -> None:
    problems = text_problems(text, DUPLICATE, CLAIMS)
    assert (problems == []) == passes, (text, problems)


@pytest.mark.parametrize(("place", "passes"), [("latest", True), ("last", True), ("most recent", True),
                                               ("first", False), ("original", False), ("earlier", False)])
@pytest.mark.parametrize("frame", ["Per {p} message from Ingrid Larsen: the team is short that week.",
                                   "Rejected as Ingrid Larsen's {p} message asks: the team is short that week."])
def test_a_place_after_a_preposition_or_a_name_picks_a_record_too(place: str, passes: bool, frame: str) -> None:
    text = frame.format(p=place)
    problems = text_problems(text, SHORT, LEAVE)
    assert (problems == []) == passes, (text, problems)


def test_a_denied_or_customer_bound_return_is_no_failed_delivery() -> None:
    toward = "We have issued a refund of 59.00 EUR for order O-1093: it has been returned to your card."
    assert not any("failure" in p for p in text_problems(toward, REFUND, O_1093))  # ("returned" itself is unread)
    denied = "We have issued a refund of 59.00 EUR for order O-1093; nothing was returned to us."
    assert text_problems(denied, REFUND, O_1093) == []
    assert text_problems("We have issued a refund of 59.00 EUR for order O-1093. It was returned to us.", REFUND,
                         O_1093) != []


def test_a_retraction_of_a_fact_said_in_other_words_unsettles() -> None:
    text = "Login from a device the customer did not recognise at first; possible takeover."
    assert any("retraction" in p for p in text_problems(text, TAKEOVER)), text_problems(text, TAKEOVER)
    assert text_problems("Login from a device the customer does not recognise; possible takeover.", TAKEOVER) == []


@pytest.mark.parametrize(("after", "passes"), [
    ("the one after them did not go through", False), ("the last of them wasn't run", False),
    ("they did not all go through", False),
    ("nothing is left", True), ("none of them is pending", True), ("the delivery was not dispatched", True),
])
def test_a_complete_note_may_not_deny_an_event_in_words_it_does_not_forbid(after: str, passes: bool) -> None:
    text = f"EV-506, EV-507 and EV-508 processed; {after}."
    problems = text_problems(text, COMPLETE, LEDGER)
    assert (problems == []) == passes, (text, problems)


@pytest.mark.parametrize("text", ["A copy of the invoice before your last one was sent to you by post.",
                                  "We posted the invoice prior to your latest invoice.",
                                  "A copy of your invoice other than the last one went out by post."])
def test_a_place_shifted_by_a_relation_picks_another_record(text: str) -> None:
    assert any("by a place" in p for p in text_problems(text, POST, MEI)), text_problems(text, POST, MEI)
