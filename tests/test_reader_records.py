"""Free text read against the records it names and the episode it reports: an act the instruction allows only on a
condition and the episode did not do, a state said of a record compared with the site's, a record named by its place
among the task's, and money the writer's side paid in a circumstance (`verifier.prohibitions`,
`verifier.record_states`, `verifier.facts.ordinal_ids`, `verifier.settling`).

Each rule is pinned from both sides: the texts a careful reviewer refuses (the act said done in any tense or voice,
another state, another place, the writer paying) and the neighbours he accepts (the act denied or done, the state the
site holds, the right place, the customer charged).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from sites.kit.records import JournalEntry
from tasks.spec import TextCheck
from verifier.facts import KnownIds, ordinal_ids, read_text, text_problems
from verifier.prohibitions import conditional_acts, makes

REPLY_INSTRUCTION = ("Ticket T-2005: Mei Chen asks for a copy of her last invoice. Escalate it only if the escalation "
                     "rules require it. Otherwise find out how the copy was sent and tell Mei.")
BY_POST = TextCheck.model_validate({"states": [{"words": ["post", "posted"]}],
                                    "may_state": [{"id": "T-2005"}], "no_other": ["id"]})
HELPDESK = {"ticket": [{"number": "T-2005", "status": "solved"}, {"number": "T-2006", "status": "open"},
                       {"number": "T-2007", "status": "pending"}],
            "escalation": [], "notification": []}


def _escalated(table: str = "escalation") -> JournalEntry:
    return JournalEntry.model_validate({"seq": 1, "operation": 1, "logical_time": 1, "table": table,
                                        "change": "insert", "key": {"id": 1}, "after": {"id": 1, "ticket_id": 5},
                                        "before": None})


@pytest.mark.parametrize(("instruction", "acts"), [
    (REPLY_INSTRUCTION, ("escalate",)),
    ("If it is denied, refund nothing: tell the customer.", ("refund",)),
    ("Issue it under RA-25 if RA-25 is still valid. If it is not, refund nothing now.", ("refund",)),
    ("Issue it only if that approval is valid under the current policy.", ("issue",)),
    ("Change nothing else.", ()),  # about other records: the mutation checks' matter
    ("Escalate the ticket to Billing disputes.", ()),  # an act required, not conditional
])
def test_a_conditional_act_is_read_from_the_instruction(instruction: str, acts: tuple[str, ...]) -> None:
    assert conditional_acts(instruction) == acts


def test_an_act_makes_the_records_of_the_table_it_shares_a_stem_with() -> None:
    assert makes("escalate", "escalation") and makes("refund", "refund") and makes("approve", "approval")
    assert not makes("issue", "invoice") and not makes("change", "chargeback") and not makes("send", "sent")


SAID_DONE = ["your ticket has also been escalated to billing", "I escalated it as well", "T-2005 was escalated",
             "we have escalated your request"]
NOT_SAID_DONE = ["it was not escalated", "nothing was escalated", "no escalation was needed",
                 "the rules did not require escalating it"]


@given(done=st.sampled_from(SAID_DONE), joiner=st.sampled_from(["; ", ". ", ", and "]))
@settings(max_examples=examples(20), deadline=None)
def test_a_conditional_act_the_episode_did_not_do_may_not_be_said_done(done: str, joiner: str) -> None:
    text = f"A copy of your last invoice was sent to you by post{joiner}{done}."
    undone = KnownIds.of(HELPDESK, (), REPLY_INSTRUCTION)
    assert any("allows only on a condition" in p for p in text_problems(text, BY_POST, undone))
    done_here = KnownIds.of(HELPDESK, [_escalated()], REPLY_INSTRUCTION)  # the episode escalated: it may say so
    assert not text_problems(text, BY_POST, done_here)


@pytest.mark.parametrize("denied", NOT_SAID_DONE)
def test_a_conditional_act_denied_is_what_was_asked(denied: str) -> None:
    text = f"A copy of your last invoice was sent to you by post; {denied}."
    problems = text_problems(text, BY_POST, KnownIds.of(HELPDESK, (), REPLY_INSTRUCTION))
    assert not any("allows only on a condition" in p for p in problems)


CLAIMS = {"expense_claim": [{"number": "X-5005", "status": "receipt_requested"},
                            {"number": "X-5006", "status": "rejected"},
                            {"number": "X-5007", "status": "approved"},
                            {"number": "X-5008", "status": "submitted"}]}
DUPLICATE = TextCheck.model_validate({"states": [{"words": ["duplicate"]}, {"id": "X-5005"}],
                                      "may_state": [{"id": "X-5006"}], "no_other": ["id"],
                                      "reading": "circumstance"})
RECEIPT = TextCheck.model_validate({"states": [{"words": ["receipt"]}, {"words": ["attach", "send"]}],
                                    "may_state": [{"id": "X-5005"}], "no_other": ["id"],
                                    "reading": "circumstance"})
CLAIMS_KNOWN = KnownIds.of(CLAIMS, (), "Tomasz Nowak filed the team dinner after stocktake twice, with no receipt. Ask "
                                        "him for the receipt on the first claim (the lower claim number) and reject "
                                        "the second as a duplicate of the first, telling him why.",
                           ["X-5005", "X-5006"])
COPULAS = ["which is", "which is still", ", still", " (", ", which has been", " is now", ", itself"]


@given(copula=st.sampled_from(COPULAS),
       state=st.sampled_from(["open", "waiting", "pending", "outstanding", "receipt_requested", "rejected",
                              "approved", "submitted"]))
@settings(max_examples=examples(40), deadline=None)
def test_a_state_said_of_a_named_record_is_compared_with_the_sites(copula: str, state: str) -> None:
    text = f"Duplicate of X-5005{copula if copula.startswith((',', ' (')) else ', ' + copula} {state}."
    problems = text_problems(text, DUPLICATE, CLAIMS_KNOWN.on({"number": "X-5006"}))
    false = any("which the site does not hold" in p for p in problems)
    undecided = state in ("open", "waiting", "pending", "outstanding", "receipt_requested", "submitted")
    # X-5005 waits for its receipt: any word of being undecided is true of it, a decision is not; "submitted" is
    # another status, but also an event ("was submitted twice"), so it is not called false.
    assert false == (state in ("rejected", "approved")), problems
    if undecided and state != "submitted":
        assert not problems, problems


@pytest.mark.parametrize(("row", "sentence", "false"), [
    ("X-5005", "this claim was rejected as a duplicate", True),  # the record the note is on
    ("X-5005", "your claim is still open", False),
    ("X-5006", "this claim is rejected as a duplicate of X-5005", False),
    ("X-5006", "this claim was approved", True),
])
def test_this_claim_is_the_record_the_text_is_written_on(row: str, sentence: str, false: bool) -> None:
    text = f"Please attach the receipt for the team dinner; {sentence}."
    problems = text_problems(text, RECEIPT, CLAIMS_KNOWN.on({"number": row}))
    assert any("which the site does not hold" in p for p in problems) == false, problems


def test_a_state_of_a_status_the_reader_does_not_know_stays_unaccounted() -> None:
    known = KnownIds.of({"expense_claim": [{"number": "X-5005", "status": "escrowed"},
                                           {"number": "X-5006", "status": "rejected"}]})
    problems = text_problems("Duplicate of X-5005, which is still open.", DUPLICATE, known.on({"number": "X-5006"}))
    assert problems and not any("which the site does not hold" in p for p in problems)


@pytest.mark.parametrize(("words", "named"), [
    ("your first claim", "X-5005"), ("the earlier claim", "X-5005"), ("his original claim", "X-5005"),
    ("your second claim", "X-5006"), ("the later claim", "X-5006"), ("your last claim", "X-5006"),
    ("your latest claims", "X-5006"),
])
def test_a_record_named_by_its_place_among_the_tasks_is_that_record(words: str, named: str) -> None:
    assert [m.value for m in ordinal_ids(read_text(f"Attach it to {words}."), CLAIMS_KNOWN)] == [named]


def test_a_place_names_no_record_where_the_task_selects_one_of_its_kind() -> None:
    one = KnownIds.of(CLAIMS, (), "", ["X-5005"])
    assert ordinal_ids("Attach it to your second claim.", one) == []
    assert ordinal_ids("Attach it to your second message.", CLAIMS_KNOWN) == []  # no record of that kind


@pytest.mark.parametrize(("row", "text", "refused"), [
    ("X-5005", "Please attach the receipt for the team dinner to your second claim.", True),
    ("X-5005", "Please attach the receipt for the team dinner to your first claim.", False),
    ("X-5006", "Duplicate of your first claim for the team dinner.", False),
    ("X-5006", "Duplicate of your second claim for the team dinner.", True),
])
def test_a_place_is_checked_as_the_record_it_names(row: str, text: str, refused: bool) -> None:
    check = RECEIPT if row == "X-5005" else DUPLICATE
    assert bool(text_problems(text, check, CLAIMS_KNOWN.on({"number": row}))) == refused


CHARGEBACK = TextCheck.model_validate({"states": [{"words": ["charged twice", "duplicate payment"]}],
                                       "may_state": [{"id": "O-1422"}], "no_other": ["id"],
                                       "reading": "circumstance"})
ORDERS = KnownIds.of({"order": [{"number": "O-1422", "status": "delivered"}]})
PAID_OUT = ["we paid the customer twice", "we have refunded the customer", "our shop credited the card twice",
            "the customer was paid twice", "you were refunded already", "I reimbursed her",
            "we sent the customer the money twice", "we gave the amount back twice"]
CHARGED = ["the customer was charged twice", "the card was charged twice", "we took the payment twice",
           "we did not pay the customer anything"]


@pytest.mark.parametrize(("clause", "refused"), [*((c, True) for c in PAID_OUT), *((c, False) for c in CHARGED)])
def test_money_the_writers_side_paid_is_no_charge(clause: str, refused: bool) -> None:
    text = f"Duplicate payment on O-1422: {clause}."
    problems = text_problems(text, CHARGEBACK, ORDERS)
    assert any("money from the writer's side" in p for p in problems) == refused, problems


def test_every_pair_of_rules_keeps_the_control_texts_settled() -> None:
    """The controls' own texts stay settled with every new rule in force at once."""
    for text, check, known in itertools.product(
            ["A copy of your last invoice was sent to you by post, as you asked."], [BY_POST],
            [KnownIds.of(HELPDESK, (), REPLY_INSTRUCTION)]):
        assert not text_problems(text, check, known)
    assert not text_problems("Duplicate of X-5005.", DUPLICATE, CLAIMS_KNOWN.on({"number": "X-5006"}))
    assert not text_problems("Duplicate charge on O-1422: the customer was charged twice.", CHARGEBACK, ORDERS)


APPROVAL_INSTRUCTION = ("Ticket T-2135: Quinn Nowak asks for the 80.99 USD refund of order O-1047 that approval RA-25 "
                        "approved. Issue it under RA-25 if RA-25 is still valid. If it is not, refund nothing now: "
                        "request a new approval for 80.99 USD from the order page.")
APPROVALS = {"refund": [], "refund_approval": [{"code": "RA-25", "status": "active"}],
             "order": [{"number": "O-1047", "status": "delivered"}], "ticket": [{"number": "T-2135", "status": "open"}]}
REASON = TextCheck.model_validate({"never_states": [{"words": ["approved", "valid", "still valid"]}],
                                   "may_state": [{"id": "O-1047"}, {"id": "T-2135"}, {"id": "RA-25"},
                                                 {"money": "80.99 USD"}],
                                   "no_other": ["id", "money"], "reading": "circumstance"})
REFUNDED_IN_OTHER_WORDS = ["80.99 USD paid back under RA-25", "Quinn Nowak already got the 80.99 USD back",
                           "the refund under RA-25 went through", "a refund was issued", "the money was repaid",
                           "refunded under RA-25"]
NOT_REFUNDED = ["no refund issued", "nothing was refunded", "the refund request was made to the approver",
                "a new approval was requested for 80.99 USD"]


@pytest.mark.parametrize(("clause", "refused"), [*((c, True) for c in REFUNDED_IN_OTHER_WORDS),
                                                 *((c, False) for c in NOT_REFUNDED)])
def test_a_conditional_act_said_done_in_other_words(clause: str, refused: bool) -> None:
    problems = text_problems(f"Item returned; RA-25 expired; {clause} (T-2135)", REASON,
                             KnownIds.of(APPROVALS, (), APPROVAL_INSTRUCTION))
    assert any("allows only on a condition" in p for p in problems) == refused, problems


@pytest.mark.parametrize("clause", ["your ticket was also passed to billing", "I handed it to the billing disputes "
                                    "queue", "an escalation was made", "it was forwarded to a specialist"])
def test_an_escalation_in_other_words_is_an_escalation(clause: str) -> None:
    text = f"A copy of your last invoice was sent to you by post; {clause}."
    assert any("allows only on a condition" in p
               for p in text_problems(text, BY_POST, KnownIds.of(HELPDESK, (), REPLY_INSTRUCTION)))


@pytest.mark.parametrize(("text", "settled"), [
    ("Item returned; RA-25 is no longer valid (expired) (T-2135)", True),  # a forbidden fact, denied
    ("Item returned; RA-25 was valid at first (T-2135)", False),
])
def test_no_longer_denies_a_fact_the_check_does_not_require(text: str, settled: bool) -> None:
    assert (not text_problems(text, REASON, KnownIds.of(APPROVALS, (), APPROVAL_INSTRUCTION))) == settled


def test_the_copula_of_a_true_state_is_accounted_for() -> None:
    text = "Duplicate of X-5005, which stays open until the receipt arrives."
    assert not text_problems(text, DUPLICATE, CLAIMS_KNOWN.on({"number": "X-5006"}))


@pytest.mark.parametrize(("words", "named"), [("the newer of the two claims", "X-5006"),
                                              ("the older of your claims", "X-5005")])
def test_a_place_among_two_names_that_record(words: str, named: str) -> None:
    assert [m.value for m in ordinal_ids(f"Attach it to {words}.", CLAIMS_KNOWN)] == [named]


def test_a_place_read_as_a_record_of_the_task_is_checked_as_its_id() -> None:
    known = CLAIMS_KNOWN.on({"number": "X-5006"})
    assert not text_problems("Duplicate of your earlier claim, X-5005.", DUPLICATE, known)
    assert text_problems("Duplicate of your later claim, X-5006.", DUPLICATE, known)  # states no X-5005


TAKEOVER = TextCheck.model_validate({"states": [{"words": ["takeover", "compromised"]}], "reading": "circumstance"})


@pytest.mark.parametrize(("text", "owned"), [
    ("Login from the customer's second phone; possible account takeover.", True),
    ("Login from her spare laptop; possible account takeover.", True),
    ("Login from someone else's phone; possible account takeover.", False),
    ("Login from a phone that is not theirs; possible account takeover.", False),
])
def test_a_possessive_of_the_customer_before_a_device_says_whose_it_is(text: str, owned: bool) -> None:
    problems = text_problems(text, TAKEOVER, KnownIds(kinds={}))
    assert any("says whose it is" in p for p in problems) == owned, problems


@pytest.mark.parametrize(("sentence", "slot"), [
    ("Chen Kowalski wanted this rejected: the team is short that week.", True),
    ("Chen Kowalski wants the request approved.", True),
    ("Chen Kowalski requested leave for that week.", False),
])
def test_someone_wanting_an_outcome_is_an_asker(sentence: str, slot: bool) -> None:
    from verifier.roles import other_asker
    named = frozenset({"chen", "kowalski", "ingrid", "larsen"})
    assert (other_asker(sentence, 0, len(sentence), named, frozenset({"ingrid larsen"})) is not None) == slot


def test_no_before_an_id_is_the_abbreviation_of_number() -> None:
    assert read_text("Approval no. APR-7731") == "Approval APR-7731"
    assert read_text("There is no APR here") == "There is no APR here"


@pytest.mark.parametrize(("clause", "stated"), [
    ("the customer was charged twice", True), ("the customer's card was charged two times", True),
    ("payment was taken from the customer's card two times", True), ("we charged the card twice", True),
    ("the card was charged once, not twice", False), ("the card was charged and then refunded twice", False),
    ("the card was charged only once", False),
])
def test_a_repeat_after_the_verbs_object_is_the_repeat_of_that_verb(clause: str, stated: bool) -> None:
    check = TextCheck.model_validate({"states": [{"words": ["charged twice", "taken twice"]}],
                                      "reading": "circumstance"})
    problems = text_problems(f"Duplicate on O-1422: {clause}.", check, ORDERS)
    assert any("does not assert" in p for p in problems) != stated, problems


LATEST = TextCheck.model_validate({"states": [{"words": ["short"]}], "reading": "circumstance"})
MESSAGES = KnownIds.of({"message": [{"subject": "Leave"}]}, (),
                       "Ingrid Larsen has written twice about Chen Kowalski's leave; act on her latest message, and "
                       "if it asks for a rejection, give the manager's reason as the note.")


@pytest.mark.parametrize(("text", "other_place"), [
    ("Ingrid Larsen's newest message replaces her earlier one: the team is short that week.", False),
    ("Her latest message supersedes the earlier message: the team is short that week.", False),
    ("Per Ingrid Larsen's earlier message: the team is short that week.", True),
])
def test_a_record_named_as_replaced_is_no_record_acted_on(text: str, other_place: bool) -> None:
    problems = text_problems(text, LATEST, MESSAGES)
    assert any("by a place the task does not" in p for p in problems) == other_place, problems


def test_a_place_among_records_of_two_tables_names_none() -> None:
    known = KnownIds.of({"refund_approval": [{"code": "RA-25", "status": "active"}],
                         "approval_request": [{"code": "AR-8", "status": "requested"}]}, (), "", ["RA-25", "AR-8"])
    assert ordinal_ids("The earlier approval lapsed.", known) == []  # "approval" names both tables' records
    assert [m.value for m in ordinal_ids("The earlier approval RA-25 lapsed.", known)] == ["RA-25"]  # its id names it


@pytest.mark.parametrize(("text", "false"), [
    ("Duplicate of X-5005, approved by Dana.", False),  # a participle after a comma may name an event
    ("Duplicate of X-5005, which is approved.", True),
    ("Duplicate of X-5005 (approved).", True),
])
def test_a_decision_is_false_only_said_as_a_state(text: str, false: bool) -> None:
    problems = text_problems(text, DUPLICATE, CLAIMS_KNOWN.on({"number": "X-5006"}))
    assert any("which the site does not hold" in p for p in problems) == false, problems


def test_an_event_status_of_another_record_is_not_called_false() -> None:
    known = KnownIds.of({"order": [{"number": "O-1047", "status": "refunded"},
                                   {"number": "O-1048", "status": "delivered"}]})
    check = TextCheck.model_validate({"states": [{"words": ["refunded"]}], "may_state": [{"id": "O-1047"}],
                                      "no_other": ["id"]})
    problems = text_problems("Order O-1047, which was delivered on 2 February, has been refunded.", check, known)
    assert not any("which the site does not hold" in p for p in problems), problems
