"""`seen` and `not_used`: judged on what each response showed and which app served it, never on the address.

Built from records alone (no site): operations with their `shown`, a journal and a final state. Each wrong way of
"having looked" has its case: a page that showed another row, a list filtered away from the row, the row before
it changed, a stale copy, a read after the write, a sub-page of a forbidden app; and each right way: any page that
showed the fact, a list that shows a row's absence, another fact that tells the same, the site's own redirect.
"""

from __future__ import annotations

from typing import Any

import pytest

from sites.kit.faults import FaultClass, FaultDecision
from sites.kit.records import JournalEntry, Operation, Shown, ShownListing, ShownRows, StateSnapshot
from tasks.spec import NotUsed, Seen
from verifier.seen import History, check_not_used, check_seen

STATE: StateSnapshot = {"invoice": [{"id": 1, "number": "INV-1", "status": "open", "total": 10},
                     {"id": 2, "number": "INV-2", "status": "paid", "total": 20}],
         "credit": [{"id": 7, "invoice_id": 1, "amount": 5}]}


def op(seq: int, *, shown: Shown | None = None, method: str = "GET", path: str = "/x", app: str | None = None,
       status: int = 200, location: str | None = None, fault: FaultClass | None = None,
       action: int | None = None) -> Operation:
    decision = None if fault is None else FaultDecision(fault=fault, source="rule:0")
    return Operation(seq=seq, action=seq if action is None else action, method=method, path=path, query="",
                     content_type=None, body="", status=status, location=location, response_digest="0" * 64,
                     journal_rows=0, fault=decision, app=app, shown=Shown() if shown is None else shown)


def rows(table: str, fields: list[str], *keys: int) -> Shown:
    return Shown(records=[ShownRows(table=table, fields=fields, key=["id"], rows=[[k] for k in keys])])


def listing(table: str, **where: Any) -> Shown:
    return Shown(listings=[ShownListing(table=table, where=where)])


def seen(**spec: Any) -> Seen:
    return Seen.model_validate({"name": "looked", **spec})


PAID = seen(table="invoice", where={"number": "INV-2"}, fields=["status"])


@pytest.mark.parametrize(("shown", "passed"), [
    (rows("invoice", ["number", "status"], 2), True),   # INV-2's page, or any list showing its status
    (rows("invoice", ["number", "status"], 1), False),  # the sibling invoice
    (rows("invoice", ["number"], 2), False),            # INV-2, but a view without its status
    (listing("invoice", status="open"), False),         # a list filtered so that INV-2 is not on it
    (Shown(documents=["policy"]), False),
])
def test_a_fact_counts_only_when_a_response_showed_it(shown: Shown, passed: bool) -> None:
    assert check_seen(PAID, [op(1, shown=shown)], [], STATE).passed is passed


def test_a_row_is_matched_as_it_was_when_the_page_rendered() -> None:
    journal = [JournalEntry(seq=1, operation=3, logical_time=3, table="invoice", key={"id": 1}, change="update",
                            before={"id": 1, "number": "INV-1", "status": "paid", "total": 10},
                            after={"id": 1, "number": "INV-1", "status": "open", "total": 10})]
    was_paid = seen(table="invoice", where={"number": "INV-1", "status": "paid"}, fields=["status"])
    assert check_seen(was_paid, [op(2, shown=rows("invoice", ["status"], 1))], journal, STATE).passed
    assert not check_seen(was_paid, [op(4, shown=rows("invoice", ["status"], 1))], journal, STATE).passed
    history = History.of(STATE, journal)
    assert history.row_at("invoice", {"id": 1}, 2) == journal[0].before
    assert history.row_at("invoice", {"id": 1}, 3) == STATE["invoice"][0]
    inserted = [JournalEntry(seq=1, operation=5, logical_time=5, table="credit", key={"id": 7}, change="insert",
                             before=None, after=STATE["credit"][0])]
    assert History.of(STATE, inserted).row_at("credit", {"id": 7}, 4) is None


def test_a_whole_list_shows_the_absence_of_a_row_and_a_narrower_one_does_not() -> None:
    credits = seen(table="credit", where={"invoice_id": 2}, listing=True)
    assert check_seen(credits, [op(1, shown=listing("credit"))], [], STATE).passed
    assert check_seen(credits, [op(1, shown=listing("credit", invoice_id=2))], [], STATE).passed
    assert not check_seen(credits, [op(1, shown=listing("credit", invoice_id=1))], [], STATE).passed
    assert not check_seen(credits, [op(1, shown=listing("credit", invoice_id=2, amount=5))], [], STATE).passed
    assert not check_seen(credits, [op(1, shown=listing("invoice"))], [], STATE).passed


def test_a_searched_list_shows_a_set_of_rows_whole_only_when_each_of_them_was_on_it() -> None:
    open_ones = seen(table="invoice", where={"status": "open"}, listing=True, fields=["total"])
    searched = [ShownListing(table="invoice", where={}, searched=True)]

    def page(*keys: int) -> Operation:
        return op(3, shown=Shown(records=[ShownRows(table="invoice", fields=["number", "total"], key=["id"],
                                                    rows=[[k] for k in keys])], listings=searched))

    assert check_seen(open_ones, [page(1)], [], STATE).passed          # "INV-1" searched: every open invoice
    assert check_seen(open_ones, [page(1, 2)], [], STATE).passed       # "INV" searched: more than them
    assert not check_seen(open_ones, [page(2)], [], STATE).passed      # "INV-2" searched: not the open one
    assert not check_seen(seen(table="credit", where={}, listing=True), [page(1)], [], STATE).passed
    # a row that was open when the page rendered and changed later must have been on it too
    journal = [JournalEntry(seq=1, operation=5, logical_time=5, table="invoice", key={"id": 2}, change="update",
                            before={"id": 2, "number": "INV-2", "status": "open", "total": 20},
                            after=STATE["invoice"][1])]
    assert not check_seen(open_ones, [page(1)], journal, STATE).passed
    assert check_seen(open_ones, [page(1, 2)], journal, STATE).passed
    # a row inserted after the page rendered was no row of it
    inserted = [JournalEntry(seq=1, operation=5, logical_time=5, table="invoice", key={"id": 3}, change="insert",
                             before=None, after={"id": 3, "number": "INV-3", "status": "open", "total": 1})]
    later = {"invoice": [*STATE["invoice"], {"id": 3, "number": "INV-3", "status": "open", "total": 1}]}
    assert check_seen(open_ones, [page(1)], inserted, later).passed


def test_a_list_with_fields_must_show_its_rows_with_them() -> None:
    totals = seen(table="invoice", where={}, listing=True, fields=["total"])
    whole = Shown(records=[ShownRows(table="invoice", fields=["number", "total"], key=["id"], rows=[[1], [2]])],
                  listings=[ShownListing(table="invoice", where={})])
    bare = whole.model_copy(update={"records": [ShownRows(table="invoice", fields=["number"], key=["id"],
                                                          rows=[[1], [2]])]})
    assert check_seen(totals, [op(1, shown=whole)], [], STATE).passed
    assert not check_seen(totals, [op(1, shown=bare)], [], STATE).passed


def test_each_row_of_per_must_have_been_shown_on_some_page() -> None:
    both = seen(table="invoice", where={}, fields=["status"], per="number", each=["INV-1", "INV-2"])
    one, other = op(1, shown=rows("invoice", ["status"], 1)), op(2, shown=rows("invoice", ["status"], 2))
    assert check_seen(both, [one, other], [], STATE).passed
    assert not check_seen(both, [one], [], STATE).passed


def test_the_window_bounds_when_it_was_shown_and_how_fresh_its_data_was() -> None:
    write = [JournalEntry(seq=1, operation=3, logical_time=3, table="credit", key={"id": 7}, change="insert",
                          before=None, after=STATE["credit"][0])]
    before = seen(table="invoice", where={"number": "INV-2"}, fields=["status"], before="first-write")
    assert check_seen(before, [op(2, shown=rows("invoice", ["status"], 2))], write, STATE).passed
    assert not check_seen(before, [op(4, shown=rows("invoice", ["status"], 2))], write, STATE).passed
    after = seen(table="credit", where={"invoice_id": 1}, listing=True, after={"fault_fired": "stale_read"})
    stale = op(5, shown=listing("credit").model_copy(update={"as_of": 2}), fault="stale_read")
    fresh = op(6, shown=listing("credit"))
    assert not check_seen(after, [stale], write, STATE).passed  # a stale copy is as old as the page it copies
    assert check_seen(after, [stale, fresh], write, STATE).passed
    late = seen(table="credit", where={"invoice_id": 1}, fields=["amount"],
                after={"table": "credit", "change": ["insert"]})
    assert not check_seen(late, [op(2, shown=rows("credit", ["amount"], 7))], write, STATE).passed
    assert check_seen(late, [op(4, shown=rows("credit", ["amount"], 7))], write, STATE).passed


def test_another_fact_that_tells_the_same_counts_and_a_document_is_a_document() -> None:
    either = seen(table="credit", where={"invoice_id": 1}, listing=True,
                  alternatives=[{"table": "invoice", "where": {"number": "INV-1"}, "fields": ["status"],
                                 "why": "the status shows the credit"}])
    assert check_seen(either, [op(1, shown=rows("invoice", ["status"], 1))], [], STATE).passed
    rules = seen(document="policy")
    assert check_seen(rules, [op(1, shown=Shown(documents=["policy"]))], [], STATE).passed
    assert not check_seen(rules, [op(1, shown=Shown(documents=["other"]))], [], STATE).passed


def test_evidence_recorded_before_pages_were_recorded_is_refused_by_name() -> None:
    old = op(1).model_copy(update={"shown": None})
    result = check_seen(PAID, [old], [], STATE)
    assert not result.passed and "recorded before" in result.detail


def test_an_app_is_used_by_any_of_its_pages_but_not_by_the_sites_own_redirect() -> None:
    forbidden = NotUsed(name="only-listed", apps=["records", "spreadsheet"])
    submit = op(1, method="POST", path="/inv/records", app="form", status=303, location="/inv/records/P-9?saved=1",
                action=4)
    shown_new = op(2, path="/inv/records/P-9", app="records", action=4).model_copy(update={"query": "saved=1"})
    assert check_not_used(forbidden, [submit, shown_new]).passed
    sub_page = op(3, path="/inv/spreadsheet/2", app="spreadsheet")
    assert not check_not_used(forbidden, [submit, shown_new, sub_page]).passed
    later = op(3, path="/inv/records/P-9", app="records", action=5)
    assert not check_not_used(forbidden, [submit, shown_new, later]).passed
    own_redirect = op(2, method="POST", path="/inv/records/P-9", app="records", status=303, location="/inv/records")
    assert not check_not_used(forbidden, [own_redirect, op(3, path="/inv/records", app="records", action=2)]).passed
