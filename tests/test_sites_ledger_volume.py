"""The ledger at realistic volume: four months of posted history per seed, and lists that paginate, search and
filter (tests/test_sites_ledger.py: the procedures and their rules)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

import pytest
from site_client import Browser, last_listings, reader_fixture, seeded_fixture, site_fixtures

from sites.kit import StateSnapshot, TenantRegistry
from sites.kit.paging import PAGE_SIZE
from sites.kit.records import Row
from sites.ledger import LEDGER
from sites.ledger.history import FIRST_EVENT_ID, LOOK_ALIKES
from sites.ledger.models import PERIOD_OPENED
from sites.ledger.seed import DELIVERIES, DELIVERY_EVENTS, ENTRIES, PAYMENT_EVENTS

registry, app_client, tenant, browser = site_fixtures(LEDGER)

SEEDS = (1, 2, 3, 7)
seeded, reader = seeded_fixture(LEDGER, SEEDS), reader_fixture(LEDGER)
QUEUE_BATCHES = ("B-1", "B-2", "B-3", "B-4")
ENTRY_ROW = re.compile(r"<tr><td>(LE-\d+)</td>")
EVENT_LINK = re.compile(r'<td><a href="/ledger/events/(EV-\d+)">')
DELIVERY_LINK = re.compile(r'<td><a href="/ledger/deliveries/(D-\d+)">')


def latest_first(rows: list[Row]) -> list[str]:
    """Entry numbers in the entries list's order: latest first, the later-posted first among the same minute."""
    ordered = sorted(rows, key=lambda row: (str(row["created_at"]), int(str(row["id"]))), reverse=True)
    return [str(row["number"]) for row in ordered]


def history_events(state: StateSnapshot) -> list[Row]:
    return [row for row in state["event"] if int(str(row["id"])) >= FIRST_EVENT_ID]



# --- Seeding --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_holds_over_500_entries_most_posted_by_processed_events_of_closed_batches(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    assert len(state["entry"]) >= 500
    history = history_events(state)
    assert len(history) >= 350
    by_id = {row["id"]: row for row in state["event"]}
    posted = Counter(row["event_id"] for row in state["entry"] if row["event_id"] is not None)
    for event in history:
        assert event["status"] == "processed" and event["kind"] == "payment"
        assert str(event["processed_at"]) < PERIOD_OPENED and str(event["batch"]).startswith("B-20")
        assert posted[event["id"]] == 1
    by_hand = [row for row in state["entry"] if row["event_id"] is None]
    assert 0.1 < len(by_hand) / len(state["entry"]) < 0.35
    for entry in state["entry"]:
        if entry["event_id"] is not None:  # an entry from an event carries the event's values
            source = by_id[entry["event_id"]]
            assert [entry[c] for c in ("account", "amount_cents", "currency", "memo")] == [
                source["account"], source["amount_cents"], source["currency"], source["summary"]]
    assert len({str(row["created_at"])[:7] for row in state["entry"]}) >= 5


@pytest.mark.parametrize("seed", SEEDS)
def test_the_history_leaves_the_queue_and_the_fixed_records_as_they_were(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    # nothing of the history is unfinished or in a queue batch: B-1..B-4 hold the fixed events and the filler only
    assert all(int(str(row["id"])) < FIRST_EVENT_ID for row in state["event"]
               if row["status"] != "processed" or row["batch"] in QUEUE_BATCHES)
    fixed_events = {row["id"]: row for row in state["event"] if int(str(row["id"])) <= 12}
    assert set(fixed_events) == set(PAYMENT_EVENTS) | set(DELIVERY_EVENTS)
    for event_id, (number, batch, summary, account, cents, currency, depends, status, at) in PAYMENT_EVENTS.items():
        row = fixed_events[event_id]
        assert [row[c] for c in ("number", "batch", "summary", "account", "amount_cents", "currency",
                                  "depends_on_id", "status", "processed_at")] == [
            number, batch, summary, account, cents, currency, depends, status, at]
    for entry_id, number, account, cents, currency, memo, source, created in ENTRIES:
        assert state["entry"][entry_id - 1] == {"id": entry_id, "number": number, "account": account,
                                                "amount_cents": cents, "currency": currency, "memo": memo,
                                                "event_id": source, "created_at": created}
    assert [row["number"] for row in state["delivery"][:len(DELIVERIES)]] == [d[1] for d in DELIVERIES]
    checkpoints = [(row["number"], row["batch"], row["processed_count"]) for row in state["checkpoint"]]
    assert checkpoints == [("CP-1", "B-3", 1)]


@pytest.mark.parametrize("seed", SEEDS)
def test_history_entries_end_at_le_1000_and_every_number_is_taken_once(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    entries = seeded[seed]["entry"]
    numbers = [int(str(row["number"]).removeprefix("LE-")) for row in entries]
    assert len(set(numbers)) == len(numbers)
    history = sorted(n for n in numbers if n <= 1000)
    assert history == list(range(history[0], 1001))
    period = sorted(n for n in numbers if n > 1000)
    assert period == list(range(1001, 1001 + len(period)))
    # the history's entries are numbered in the order they were posted
    ordered = sorted((row for row in entries if int(str(row["number"])[3:]) <= 1000),
                     key=lambda row: int(str(row["id"])))
    assert [str(row["created_at"]) for row in ordered] == sorted(str(row["created_at"]) for row in ordered)


def test_the_next_entry_keeps_the_periods_numbering(browser: Browser) -> None:
    before = browser.tenant.snapshot()["entry"]
    period = max(int(str(row["number"])[3:]) for row in before)
    browser.post("/ledger/entries", {"account": "ACC-100 Operations", "amount": "12.50", "currency": "EUR",
                                     "memo": "Bank charges March"})
    browser.post("/ledger/events/EV-501/process")
    inserted = [entry.after for entry in browser.tenant.journal() if entry.table == "entry"]
    assert [row["number"] for row in inserted if row is not None] == [f"LE-{period + 1}", f"LE-{period + 2}"]


def test_the_same_seed_gives_identical_data(tmp_path: Path, seeded: dict[int, StateSnapshot]) -> None:
    other = TenantRegistry(tmp_path, sites={"ledger": LEDGER})
    try:
        assert other.create("ledger", 2).snapshot() == seeded[2]
    finally:
        other.close()


def test_different_seeds_give_different_history(seeded: dict[int, StateSnapshot]) -> None:
    histories = [tuple((row["summary"], row["amount_cents"], row["processed_at"]) for row in history_events(seeded[s]))
                 for s in SEEDS]
    assert len(set(histories)) == len(SEEDS)
    assert len({len(seeded[seed]["entry"]) for seed in SEEDS}) > 1


@pytest.mark.parametrize("seed", SEEDS)
def test_the_history_has_look_alikes_of_the_queues_payments_recalls_and_bank_charges(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    old = [(row["account"], row["amount_cents"], row["currency"], row["summary"]) for row in history_events(state)]
    queued = {(row["account"], row["amount_cents"], row["currency"], row["summary"]) for row in state["event"]
              if row["status"] == "queued" and row["kind"] == "payment" and int(str(row["id"])) <= 12}
    assert set(LOOK_ALIKES) <= set(old) and len(set(LOOK_ALIKES) & queued) == len(LOOK_ALIKES)
    by_number = {row["number"]: row for row in state["event"]}
    recalls = [row for row in state["entry"] if str(row["memo"]).startswith("Recall of ")]
    assert recalls
    for recall in recalls:  # a recall names an old event, on its account, for its amount
        recalled = by_number[str(recall["memo"]).removeprefix("Recall of ")]
        assert int(str(recalled["id"])) >= FIRST_EVENT_ID and recalled["processed_at"] <= recall["created_at"]
        assert (recall["account"], recall["amount_cents"]) == (recalled["account"], recalled["amount_cents"])
    charges = [str(row["memo"]) for row in state["entry"] if str(row["memo"]).startswith("Bank charges")]
    assert charges and all(re.fullmatch(r"Bank charges [A-Z][a-z]+ 202[56]", memo) for memo in charges)
    # amounts tasks count over the whole entry table stay absent
    assert not [row for row in state["entry"] if row["amount_cents"] in (99000, 480000)]


# --- Pagination -----------------------------------------------------------------------------------------------


def test_the_entries_list_shows_the_latest_first_a_page_at_a_time(reader: Browser) -> None:
    entries = reader.tenant.snapshot()["entry"]
    every = latest_first(entries)
    count = -(-len(every) // PAGE_SIZE)
    first = reader.get("/ledger/entries")
    assert ENTRY_ROW.findall(first) == every[:PAGE_SIZE]
    assert {"LE-1001", "LE-1002", "LE-1003", "LE-1004"} <= set(ENTRY_ROW.findall(first))  # the fixed stay on page 1
    second = reader.get("/ledger/entries?page=2")
    assert ENTRY_ROW.findall(second) == every[PAGE_SIZE:2 * PAGE_SIZE]
    assert f"Page 2 of {count}: rows 26–50 of {len(every)}." in second


def test_the_last_page_a_page_past_the_end_and_a_page_that_is_no_number(reader: Browser) -> None:
    every = latest_first(reader.tenant.snapshot()["entry"])
    count = -(-len(every) // PAGE_SIZE)
    last = reader.get(f"/ledger/entries?page={count}")
    assert ENTRY_ROW.findall(last) == every[(count - 1) * PAGE_SIZE:]
    assert "Next page" not in last and "Previous page" in last
    assert ENTRY_ROW.findall(reader.get("/ledger/entries?page=9999")) == every[(count - 1) * PAGE_SIZE:]
    for nonsense in ("two", "-3", "0", "1.5", ""):
        page = reader.get(f"/ledger/entries?page={nonsense}")
        assert ENTRY_ROW.findall(page) == every[:PAGE_SIZE] and "Previous page" not in page


def test_page_links_keep_the_search_and_the_filters(reader: Browser) -> None:
    page = reader.get("/ledger/entries?q=northwind&currency=EUR&page=2")
    assert 'href="/ledger/entries?q=northwind&amp;currency=EUR&amp;page=3"' in page
    assert 'href="/ledger/entries?q=northwind&amp;currency=EUR"' in page  # the first page
    assert '<a href="/ledger/entries">Clear search and filters</a>' in page
    events = reader.get("/ledger/events?batch=all&status=processed&page=2")
    assert "/ledger/events?status=processed&amp;batch=all&amp;page=3" in events


def test_every_list_page_shows_at_most_one_page_of_rows(reader: Browser) -> None:
    assert len(ENTRY_ROW.findall(reader.get("/ledger/entries"))) == PAGE_SIZE
    assert len(EVENT_LINK.findall(reader.get("/ledger/events?batch=all"))) == PAGE_SIZE
    for path in ("/ledger/events", "/ledger/deliveries", "/ledger/dispatches", "/ledger/write-offs"):
        assert 0 < reader.get(path).count("<tr><td") <= PAGE_SIZE, path


# --- Search and filters ---------------------------------------------------------------------------------------


def test_entry_search_finds_part_of_a_memo_number_or_account_whatever_its_case(reader: Browser) -> None:
    entries = reader.tenant.snapshot()["entry"]
    recalls = latest_first([row for row in entries if "recall of ev-1" in str(row["memo"]).lower()])
    assert recalls and ENTRY_ROW.findall(reader.get("/ledger/entries?q=RECALL+OF+EV-1")) == recalls[:PAGE_SIZE]
    assert ENTRY_ROW.findall(reader.get("/ledger/entries?q=le-1003")) == ["LE-1003"]
    harbor = latest_first([row for row in entries if "harbor" in str(row["memo"]).lower()
                           or "harbor" in str(row["account"]).lower()])
    assert ENTRY_ROW.findall(reader.get("/ledger/entries?q=Harbor")) == harbor[:PAGE_SIZE]


def test_a_search_that_finds_nothing_says_so(reader: Browser) -> None:
    for path in ("/ledger/entries?q=zzqx", "/ledger/events?q=zzqx", "/ledger/deliveries?q=zzqx"):
        page = reader.get(path)
        assert "match this search" in page and "0 rows." in page, path
    assert ENTRY_ROW.findall(reader.get("/ledger/entries?q=%25")) == []  # a % is a character, not a wildcard


def test_entry_filters_narrow_the_list_alone_and_together(reader: Browser) -> None:
    entries = reader.tenant.snapshot()["entry"]
    for where in ({"account": "ACC-300 Suspense"}, {"currency": "USD"},
                  {"account": "ACC-200 Northwind Traders", "currency": "USD"}):
        expected = latest_first([row for row in entries if all(row[k] == v for k, v in where.items())])
        assert expected, where
        assert ENTRY_ROW.findall(reader.get(f"/ledger/entries?{urlencode(where)}")) == expected[:PAGE_SIZE]
    chosen = reader.get("/ledger/entries?account=ACC-300+Suspense")
    assert '<option value="ACC-300 Suspense" selected>' in chosen


def test_the_queue_shows_the_periods_batches_unless_a_batch_or_every_batch_is_chosen(reader: Browser) -> None:
    events = reader.tenant.snapshot()["event"]
    period = [str(row["number"]) for row in events if row["batch"] in QUEUE_BATCHES]
    assert EVENT_LINK.findall(reader.get("/ledger/events")) == period  # by id, as the queue always was
    every = [str(row["number"]) for row in events]
    assert EVENT_LINK.findall(reader.get("/ledger/events?batch=all&page=3")) == every[2 * PAGE_SIZE:3 * PAGE_SIZE]
    week = str(events[-1]["batch"])
    assert EVENT_LINK.findall(reader.get(f"/ledger/events?batch={week}")) == [
        str(row["number"]) for row in events if row["batch"] == week][:PAGE_SIZE]
    assert EVENT_LINK.findall(reader.get("/ledger/events?status=held")) == ["EV-511"]
    northwind = [str(row["number"]) for row in events if "northwind" in str(row["summary"]).lower()
                 or "northwind" in str(row["account"] or "").lower()]
    assert EVENT_LINK.findall(reader.get("/ledger/events?batch=all&q=NORTHWIND")) == northwind[:PAGE_SIZE]
    options = reader.get("/ledger/events")
    assert options.index('<option value="B-4">') < options.index(f'<option value="{week}">')


def test_the_checkpoint_form_offers_the_periods_batches_only(browser: Browser) -> None:
    page = browser.get("/ledger/checkpoints")
    assert re.findall(r'<option value="(B-[^"]+)"', page) == list(QUEUE_BATCHES)
    closed = str(browser.tenant.snapshot()["event"][-1]["batch"])
    refused = browser.post("/ledger/checkpoints", {"batch": closed, "status": "complete", "note": ""}, status=422)
    assert "choose a listed batch" in refused and browser.tenant.journal() == []


def test_deliveries_search_and_filters(reader: Browser) -> None:
    deliveries = sorted(reader.tenant.snapshot()["delivery"], key=lambda row: str(row["number"]))
    pending_dock_2 = [str(row["number"]) for row in deliveries
                      if row["status"] == "pending" and row["destination"] == "Dock 2"]
    assert DELIVERY_LINK.findall(reader.get("/ledger/deliveries?status=pending&destination=Dock+2")) == pending_dock_2
    assert DELIVERY_LINK.findall(reader.get("/ledger/deliveries?q=req-7003")) == ["D-303"]


# --- What a page shows ------------------------------------------------------------------------------------------


def test_a_filtered_list_on_one_page_is_a_whole_listing_and_a_cut_page_or_a_search_is_not(reader: Browser) -> None:
    reader.get("/ledger/events?batch=B-2")
    assert last_listings(reader.tenant) == [("event", {"batch": "B-2"})]
    entries = reader.tenant.snapshot()["entry"]
    few = [row for row in entries if row["account"] == "ACC-210 Harbor Freight" and row["currency"] == "USD"]
    assert len(few) <= PAGE_SIZE
    reader.get("/ledger/entries?account=ACC-210+Harbor+Freight&currency=USD")  # its rows, or their absence
    assert last_listings(reader.tenant) == [("entry", {"account": "ACC-210 Harbor Freight", "currency": "USD"})]
    reader.get("/ledger/deliveries")
    assert last_listings(reader.tenant) == [("delivery", {})]
    for cut in ("/ledger/entries", "/ledger/entries?page=2", "/ledger/events?batch=all", "/ledger/events",
                "/ledger/entries?q=LE-1003"):
        reader.get(cut)
        assert last_listings(reader.tenant) == [], cut


def test_list_page_loads_change_nothing(reader: Browser) -> None:
    before = reader.tenant.snapshot()
    for path in ("/ledger/entries?currency=USD&page=4", "/ledger/events?batch=all&page=9", "/ledger/deliveries?q=D-3"):
        reader.get(path)
    assert reader.tenant.snapshot() == before and reader.tenant.journal() == []
