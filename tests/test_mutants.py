"""Mutant generation, pure: which variants of a scripted control the audit makes, from the control and its run."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapter.actions import Done
from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript, Step
from computerops.catalog.audit import effect_of, sampled, shows_all
from computerops.catalog.mutant_reads import blind_views, information_reads, list_fact, read_list_fact, read_mutants
from computerops.catalog.mutant_texts import (
    address_spellings,
    amounts_in_words,
    answer_variants,
    forbidden_acts,
    is_free_text,
    non_assertions,
    other_records,
    same_record_by_number,
    weekday_contradictions,
)
from computerops.catalog.mutants import (
    ScriptedRun,
    browser_mutants,
    claim_mutants,
    neighbour_ids,
    neighbour_page,
    side_trips,
    swap_mutants,
    value_perturbations,
    write_segments,
)
from replays import RecordedEpisode
from sites.kit.records import JournalEntry, Operation, Shown, ShownRows
from tasks.spec import AnswerField, ScriptedStep, TextCheck
from tasks.task import TaskSpec
from verifier import Claim, judge
from verifier.facts import KnownIds, text_problems

STEPS = [
    ScriptedStep(id="open-policy", action="click", role="link", name="Mail policy"),
    ScriptedStep(id="back", action="click", role="link", name="Inbox"),
    ScriptedStep(id="open-invoice", action="click", role="link", name="Invoice INV-4502"),
    ScriptedStep(id="choose", action="select", role="combobox", name="Folder", option="Archive"),
    ScriptedStep(id="note", action="fill", role="textbox", name="Note", text="Paid 49.90 EUR for INV-4502"),
    ScriptedStep(id="send", action="click", role="button", name="Send"),
    ScriptedStep(id="finish", action="done", success=True, message="Sent."),
]
PAGES = {0: "/webmail/", 1: "/webmail/policy", 2: "/webmail/", 3: "/webmail/messages/5"}


def operation(seq: int, action: int, method: str, path: str, rows: int = 0) -> Operation:
    shown = Shown(documents=["mail-policy"]) if path == "/webmail/policy" else Shown()
    return Operation(seq=seq, action=action, method=method, path=path, query="", content_type=None, body="",
                     status=303 if method == "POST" else 200, location=None, response_digest="0" * 64,
                     journal_rows=rows, shown=shown)


SPEC = TaskSpec(id="t.x", site="webmail", title="t", family="f", instruction="i", start_path="/webmail/",
                expected_state=[], required_procedure=[{"kind": "visited", "name": "v", "path": "/x"}],
                scripted_control=STEPS)


def scripted_run() -> ScriptedRun:
    ops = [operation(n + 1, action, "GET", path) for n, (action, path) in enumerate(PAGES.items())]
    ops += [operation(5, 6, "POST", "/webmail/messages/5/forward", 1), operation(6, 6, "GET", "/webmail/sent")]
    journal = [JournalEntry(seq=1, operation=5, logical_time=5, table="message", key={"id": 20}, change="insert",
                            before=None, after={"id": 20, "sent_at": "2026-03-02 09:05", "body": "x"})]
    call = ModelCall(latency_s=0, model="m", system_fingerprint=None, finish_reason=None, prompt_tokens=None,
                     completion_tokens=None, content=None, tool_calls=[], prompt_tokens_estimated=0,
                     request_sha256="0")
    observation = '[4] combobox "Folder" value="Inbox" options=["Inbox", "Archive", "Spam"]'
    steps = [Step(number=n, call=call, action={}, rejection=None, note="", observation=observation)
             for n in range(1, len(STEPS))]
    transcript = AgentTranscript(system_prompt="", instruction="", tool_mode="auto", first_observation="",
                                 steps=steps, finish=Done(success=True, message="Sent."), stop_reason="finish")
    verdict = judge(SPEC, "0", state={}, journal=journal, operations=ops, claim=Claim(success=True))
    return ScriptedRun(steps=STEPS, transcript=transcript,
                       evidence=RecordedEpisode(episode_id="e", operations=ops, journal=journal, final_state={},
                                                verdict=verdict))


def test_every_operator_makes_its_mutants_from_the_control_and_its_run() -> None:
    run = scripted_run()
    mutants = {m.id: m for m in browser_mutants(run)}
    assert {f"drop:{s.id}" for s in STEPS[:-1]} <= set(mutants)
    assert "duplicate:send" in mutants and "sibling:send" in mutants
    duplicate = mutants["duplicate:send"].steps
    assert duplicate is not None and [s.action for s in duplicate][6:10] == ["navigate", "select", "fill", "click"]
    sibling = mutants["sibling:send"].steps
    assert sibling is not None and sibling[6].url == "/webmail/messages/6"
    # The policy page is a side trip (Inbox brings the browser back), so reading it late leaves the rest intact.
    assert list(side_trips(run, 5)) == [(0, 1)]
    late = mutants["late-read:open-policy"].steps
    assert late is not None and [s.url for s in late if s.action == "navigate"] == ["/webmail/policy"]
    assert late[-1].action == "done" and late[-2].url == "/webmail/policy"
    assert mutants["perturb:choose:option"].steps[3].option == "Spam"  # type: ignore[index]
    assert mutants["perturb:open-invoice:next-id"].steps[2].name == "Invoice INV-4503"  # type: ignore[index]
    assert {"perturb:note:next-id", "perturb:note:cent-up", "perturb:note:cent-down", "perturb:note:case",
            "perturb:note:space"} <= set(mutants)
    assert all(m.steps is not None and m.steps[-1] == STEPS[-1] for m in mutants.values())


def test_a_quicker_audit_keeps_the_first_browser_mutants_of_each_class_and_every_answer_mutant() -> None:
    run = scripted_run()
    every = [*browser_mutants(run), *claim_mutants(SPEC, run.claim)]
    assert sampled(every, None) == every
    kept = sampled(every, 2)
    browser = [m for m in every if m.steps is not None]
    for mutant_class in {m.mutant_class for m in browser}:
        of_class = [m for m in browser if m.mutant_class == mutant_class]
        assert [m for m in kept if m.mutant_class == mutant_class and m.steps is not None] == of_class[:2]
    assert [m for m in every if m.steps is None] == [m for m in kept if m.steps is None]
    assert len(kept) < len(every)


def test_value_perturbations_change_each_kind_of_value_by_a_little() -> None:
    assert dict(value_perturbations("2026-02-20")) == {"day-later": "2026-02-21", "day-earlier": "2026-02-19",
                                                       "space": "  2026-02-20 "}
    assert dict(value_perturbations("49.90"))["cent-up"] == "49.91"
    assert dict(value_perturbations("49,90"))["cent-down"] == "49,89"
    assert dict(value_perturbations("40"))["unit-down"] == "39"
    assert dict(value_perturbations("ap@example.com"))["other-address"] == "aps@example.com"
    assert neighbour_ids("order O-1042 and O-7") == "order O-1043 and O-7" and neighbour_ids("no id") is None
    assert neighbour_ids("/ledger/events/EV-099") == "/ledger/events/EV-100"
    assert neighbour_page("/webmail/messages/5?x=1") == "/webmail/messages/6?x=1" and neighbour_page("/a/b") is None


def test_an_effect_covers_the_reference_when_only_clock_times_generated_ids_and_extra_reads_differ() -> None:
    run = scripted_run()
    claim = Claim(success=True)
    reference = effect_of(run.evidence, claim)
    later = run.evidence.journal[0].model_copy(update={"after": {"id": 20, "sent_at": "2026-03-02 09:17",
                                                                  "body": "x"}})
    extra_read = [*run.evidence.operations, operation(7, 6, "GET", "/webmail/policy")]
    shifted = RecordedEpisode(episode_id="e", operations=extra_read, journal=[later], final_state={},
                              verdict=run.evidence.verdict)
    assert effect_of(shifted, claim).covers(reference)
    changed = later.model_copy(update={"after": {"id": 20, "sent_at": "2026-03-02 09:17", "body": "y"}})
    other = RecordedEpisode(episode_id="e", operations=extra_read, journal=[changed], final_state={},
                            verdict=run.evidence.verdict)
    assert not effect_of(other, claim).covers(reference)
    unread = [op for op in run.evidence.operations if op.path != "/webmail/policy"]
    skipped = RecordedEpisode(episode_id="e", operations=unread, journal=run.evidence.journal, final_state={},
                              verdict=run.evidence.verdict)
    assert not effect_of(skipped, claim).covers(reference)  # what a page showed before the write is missing
    assert not effect_of(run.evidence, Claim(success=False)).covers(reference)  # another answer


def test_the_reads_of_a_control_are_replaced_by_views_that_do_not_show_them_and_by_pages_that_do() -> None:
    run = scripted_run()
    assert list(information_reads(run)) == [(0, 1, "/webmail/policy", True)]
    observation = '[9] combobox "Status" value="open" options=["all", "open", "solved"]\n[10] searchbox "Search"'
    views = dict(blind_views("/helpdesk/tickets?status=open&q=kettle", observation))
    assert views == {"filter-status-all": "/helpdesk/tickets?status=all&q=kettle",
                     "filter-status-solved": "/helpdesk/tickets?status=solved&q=kettle",
                     "search-nothing": "/helpdesk/tickets?status=open&q=zzz+nothing+matches"}
    assert dict(blind_views("/helpdesk/orders/O-1042", ""))["sibling"] == "/helpdesk/orders/O-1043"
    pages = {"/webmail/policy": frozenset({"doc:mail-policy"}),
             "/webmail/help": frozenset({"doc:mail-policy", "doc:help"}), "/webmail/": frozenset()}
    mutants = {m.id: m for m in read_mutants(run, pages)}
    valid = mutants["other-page:open-policy"]
    assert valid.expect == "valid" and valid.steps is not None
    assert [s.url for s in valid.steps[:2]] == ["/webmail/help", "/webmail/"]  # then back where the trip began
    assert all(m.expect == "wrong" for i, m in mutants.items() if i.startswith("blind-read"))


def test_free_text_is_rewritten_to_assert_nothing_and_values_are_spelled_otherwise() -> None:
    text = "We have issued a refund of 49.90 EUR for order O-1042."
    rewrites = dict(non_assertions(text))
    assert rewrites["negated"] == "It is not true that we have issued a refund of 49.90 EUR for order O-1042."
    assert rewrites["future"] == "We will be issued a refund of 49.90 EUR for order O-1042."
    assert set(rewrites) == {"negated", "future", "pending", "conditional", "reported-failure", "conceded",
                             "double-negated", "foreign", "taken-back", "degree"}
    check = TextCheck.model_validate({"states": [{"words": "refund"}, {"words": "issued"}]})
    assert text_problems(text, check) == [] and all(text_problems(t, check) for t in rewrites.values())
    # What unsettles in any reading does so even in a text checked only for what it must not say
    # (verifier/settling.py); a word the reader cannot account for matters only where the text says what happened.
    never = TextCheck.model_validate({"never_states": [{"words": "cancelled"}], "may_state": [{"id": "O-1042"}],
                                      "no_other": ["id"]})
    assert text_problems(text, never) == []
    for how in ("conceded", "double-negated", "foreign", "degree"):
        assert any(p.startswith("unsettled") for p in text_problems(rewrites[how], never)), how
    words = {how: (value, valid) for how, value, valid in amounts_in_words(text)}
    assert words["amount-in-words"] == ("We have issued a refund of forty-nine euros and ninety cents for order "
                                        "O-1042.", True)
    assert words["amount-off-in-words"][1] is False and "ninety-one cents" in words["amount-off-in-words"][0]
    known = KnownIds(kinds={"O-1042": frozenset({"order"}), "O-1043": frozenset({"order"})})
    assert dict(other_records(text, known))["other-record-by-number"].endswith("for order 1043.")
    assert dict(same_record_by_number(text, known))["same-record-by-number"].endswith("for order 1042.")
    assert dict(same_record_by_number("Refunded O-1042.", known))["same-record-by-number"] == "Refunded order 1042."
    assert dict(address_spellings("ap@brightlane.example")) == {
        "email-capitals": "AP@BRIGHTLANE.EXAMPLE", "email-domain-capitals": "ap@BRIGHTLANE.EXAMPLE"}
    assert dict(address_spellings("+49 30 5550 9876")) == {"phone-compact": "+493055509876",
                                                            "phone-dashes": "+49-30-5550-9876"}
    assert is_free_text(text) and not is_free_text("ap@brightlane.example") and not is_free_text("2026-02-12")
    assert dict(weekday_contradictions("Due 2026-03-20, thanks"))["wrong-weekday"] == "Due Saturday, 2026-03-20, thanks"


def test_a_right_answer_is_written_another_way_and_a_wrong_weekday_is_wrong() -> None:
    due = AnswerField(type="date", description="d", expected="2026-03-20")
    assert {(how, value, valid) for how, value, valid in answer_variants(due, "20 March 2026")} == {
        ("weekday", "Friday, 2026-03-20", True), ("wrong-weekday", "Saturday, 2026-03-20", False)}
    total = AnswerField(type="money", description="t", expected="437.60 USD")
    assert list(answer_variants(total, "437.60 USD")) == [("currency-name", "437.60 US dollars", True)]
    room = AnswerField(type="text", description="r", expected="Orchard Room", match="with_qualifiers")
    assert list(answer_variants(room, "Orchard Room")) == [("qualifier", "Orchard Room (as stated)", True)]
    assert list(answer_variants(room.model_copy(update={"match": "exact"}), "Orchard Room")) == []


def _shown_op(seq: int, path: str, rows: dict[str, list[int]], method: str = "GET", journal_rows: int = 0) -> Operation:
    records = [ShownRows(table=table, fields=sorted(FIELDS[table]), key=["id"], rows=[[i] for i in ids])
               for table, ids in rows.items()]
    return operation(seq, seq, method, path, journal_rows).model_copy(update={"shown": Shown(records=records)})


FIELDS = {"order": {"number", "total_cents", "customer_id"}, "customer": {"grade"}}
STATE: dict[str, list[dict[str, Any]]] = {
    "order": [{"id": i, "number": f"O-{i}", "total_cents": 100 * i, "customer_id": 7 if i == 2 else 8}
              for i in (1, 2, 3)],
    "customer": [{"id": 7, "grade": "G2"}, {"id": 8, "grade": "G4"}]}


def _episode(*ops: Operation, changed: bool = False) -> RecordedEpisode:
    write = next(op.seq for op in ops if op.method == "POST")
    journal = [JournalEntry(seq=1, operation=write, logical_time=1, table="order", key={"id": 2},
                            change="update", before={"id": 2, "total_cents": 200},
                            after={"id": 2, "total_cents": 250})] if changed else []
    return RecordedEpisode(episode_id="e", operations=list(ops), journal=journal, final_state=STATE,
                           verdict=scripted_run().evidence.verdict)


def test_a_view_that_hid_only_other_records_is_told_apart_from_one_that_hid_the_named_record() -> None:
    # The reference: the whole orders list, the customer O-2 points at, then the write to O-2. The instruction names
    # O-2; the customer is what O-2 points at.
    claim = Claim(success=True, message="Corrected O-2.")
    instruction = "Correct the total of order O-2."
    reference = effect_of(_episode(_shown_op(1, "/orders", {"order": [1, 2, 3]}),
                                   _shown_op(2, "/customers/7", {"customer": [7]}),
                                   _shown_op(3, "/orders/O-2", {}, "POST", 1), changed=True),
                          claim, instruction=instruction)
    assert {f for f in reference.named if f.startswith("row:order:")} == {
        f"row:order:[2]:{field}" for field in FIELDS["order"]}
    assert "row:customer:[7]:grade" in reference.named and "row:customer:[8]:grade" not in reference.named

    def mutant(*ops: Operation, changed: bool = True) -> bool:
        effect = effect_of(_episode(*ops, changed=changed), claim)
        assert not effect.covers(reference) or ops[0].path == "/orders"
        return effect.covers_named(reference)

    write = _shown_op(3, "/orders/O-2", {}, "POST", 1)
    customer = _shown_op(2, "/customers/7", {"customer": [7]})
    assert mutant(_shown_op(1, "/orders?status=open", {"order": [2]}), customer, write)  # only others hidden
    assert not mutant(_shown_op(1, "/orders?status=paid", {"order": [1, 3]}), customer, write)  # O-2 hidden
    assert not mutant(_shown_op(1, "/orders?status=open", {"order": [2]}), write.model_copy(update={"seq": 2}),
                      _shown_op(3, "/customers/8", {"customer": [8]}))  # its customer never shown
    late = [_shown_op(1, "/orders?status=paid", {"order": [1, 3]}), customer.model_copy(update={"seq": 2}),
            write, _shown_op(4, "/orders", {"order": [1, 2, 3]})]
    assert not mutant(*late)  # O-2 shown only after the change that rests on it
    assert not mutant(_shown_op(1, "/orders?status=open", {"order": [2]}), customer, write, changed=False)

    # A reference that reads O-2 back after writing it: a mutant without that read-back hid something of O-2 (facts
    # carry no values, so only when it was shown tells a read-back apart).
    back = _shown_op(4, "/orders/O-2", {"order": [2]})
    read_back = effect_of(_episode(_shown_op(1, "/orders", {"order": [1, 2, 3]}), customer, write, back,
                                   changed=True), claim, instruction=instruction)
    filtered = _shown_op(1, "/orders?status=open", {"order": [2]})
    assert not effect_of(_episode(filtered, customer, write, changed=True), claim).covers_named(read_back)
    assert effect_of(_episode(filtered, customer, write, back, changed=True), claim).covers_named(read_back)

    # A page the task declares may be dropped (its step spare): what only it showed of O-2 is not required.
    spared = effect_of(_episode(_shown_op(1, "/orders", {"order": [1, 2, 3]}), customer, write, back, changed=True),
                       claim, instruction=instruction, spare_steps=frozenset({3}))  # operation 4 is step 4
    assert effect_of(_episode(filtered, customer, write, changed=True), claim).covers_named(spared)
    assert not effect_of(_episode(_shown_op(1, "/orders?status=paid", {"order": [1, 3]}), customer, write, back,
                                  changed=True), claim).covers_named(spared)  # O-2 before the change still needed


TWO_WRITES = [
    ScriptedStep(id="open-a", action="click", role="link", name="Event EV-501"),
    ScriptedStep(id="amount", action="fill", role="textbox", name="Amount", text="4.50"),
    ScriptedStep(id="process", action="click", role="button", name="Process event"),
    ScriptedStep(id="open-b", action="click", role="link", name="Checkpoints"),
    ScriptedStep(id="record", action="click", role="button", name="Record checkpoint"),
    ScriptedStep(id="finish", action="done", success=True, message="Done."),
]


def two_write_run(instruction: str) -> ScriptedRun:
    """A control that processes an event on its page, then records a checkpoint on another: two write segments."""
    ops = [operation(1, 0, "GET", "/ledger/"), operation(2, 1, "GET", "/ledger/events/EV-501"),
           operation(3, 3, "POST", "/ledger/events/EV-501/process", 1), operation(4, 3, "GET", "/ledger/events/EV-501"),
           operation(5, 4, "GET", "/ledger/checkpoints"), operation(6, 5, "POST", "/ledger/checkpoints", 1),
           operation(7, 5, "GET", "/ledger/checkpoints")]
    base = scripted_run()
    transcript = base.transcript.model_copy(update={"instruction": instruction, "steps": base.transcript.steps[:5]})
    return ScriptedRun(steps=TWO_WRITES, transcript=transcript,
                       evidence=RecordedEpisode(episode_id="e", operations=ops, journal=[], final_state={},
                                                verdict=base.evidence.verdict))


def test_where_the_instruction_states_an_order_two_writes_are_swapped_each_from_the_page_it_began_on() -> None:
    run = two_write_run("Process EV-501 with an amount of 4.50, then record a checkpoint of batch B-1.")
    assert write_segments(run) == [(0, 2), (3, 4)]
    [swap] = list(swap_mutants(run))
    assert swap.id == "swap:process:record" and swap.mutant_class == "swap-order" and swap.expect == "wrong"
    assert swap.steps is not None
    assert [(s.action, s.id, s.url) for s in swap.steps] == [
        ("navigate", None, "/ledger/events/EV-501"), ("click", "open-b", None), ("click", "record", None),
        ("navigate", None, "/ledger/"), ("click", "open-a", None), ("fill", "amount", None),
        ("click", "process", None), ("done", "finish", None)]
    assert swap in list(browser_mutants(run))


def test_no_swap_where_the_instruction_states_no_order_between_writes() -> None:
    for instruction in ("Process EV-501 and record a checkpoint of batch B-1.",
                        "Check the queue first, then process EV-501 and record a checkpoint."):
        run = two_write_run(instruction)
        assert list(swap_mutants(run)) == []
        assert not any(m.mutant_class == "swap-order" for m in browser_mutants(run))


def test_a_forbidden_act_is_said_done_for_each_prohibition_of_a_named_thing() -> None:
    instruction = "Finish batch B-2. Do not dispatch the delivery that an event opens, and do not touch other batches."
    assert list(forbidden_acts("EV-506 processed.", instruction)) == [
        ("forbidden-dispatch", "EV-506 processed. Also dispatched the delivery.")]
    assert list(forbidden_acts("EV-506 processed.", "Process EV-506. Change nothing else.")) == []


@given(st.dictionaries(st.sampled_from(["category", "status", "site"]), st.sampled_from(["Paint", "open", "x:y"]),
                       max_size=2), st.booleans())
def test_a_list_fact_reads_back_as_written(where: dict[str, str], searched: bool) -> None:
    assert read_list_fact(list_fact("product", where, searched=searched)) == ("product", where, searched)
    assert read_list_fact("row:product:[1]:name") is None


def test_a_whole_list_covers_a_narrower_one_and_a_searched_list_only_a_searched_one() -> None:
    paint = list_fact("product", {"category": "Paint"}, searched=False)
    paint_searched = list_fact("product", {"category": "Paint"}, searched=True)
    whole, whole_searched = list_fact("product", {}, searched=False), list_fact("product", {}, searched=True)
    assert shows_all(frozenset({whole}), frozenset({paint}))
    assert shows_all(frozenset({whole}), frozenset({paint_searched}))
    assert shows_all(frozenset({whole_searched}), frozenset({paint_searched}))
    assert not shows_all(frozenset({whole_searched}), frozenset({paint}))  # a search shows the matches only
    assert not shows_all(frozenset({paint}), frozenset({whole}))
    assert not shows_all(frozenset({list_fact("order", {}, searched=False)}), frozenset({paint}))
    assert not shows_all(frozenset({whole}), frozenset({"row:product:[1]:name"}))
