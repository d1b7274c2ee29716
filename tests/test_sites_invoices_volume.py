"""The invoices site at realistic volume: hundreds of seeded invoices and payable records, and lists that paginate,
search and filter (tests/test_sites_invoices.py: the apps and the record form's rules)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from site_client import Browser, last_listings, reader_fixture, seeded_fixture, site_fixtures

from computerops.catalog.crawl import page_kind
from sites.invoices import INVOICES
from sites.invoices.seed import INVOICES as FIXED_INVOICES
from sites.invoices.seed import PAYABLES as FIXED_PAYABLES
from sites.kit import StateSnapshot, TenantRegistry
from sites.kit.paging import PAGE_SIZE
from sites.kit.records import Row

registry, app_client, tenant, browser = site_fixtures(INVOICES)

SEEDS = (1, 2, 3, 7)
seeded, reader = seeded_fixture(INVOICES, SEEDS), reader_fixture(INVOICES)
INVOICE_LINK = re.compile(r'<a href="/invoices/viewer/(INV-\d+)">')
RECORD_LINK = re.compile(r'<a href="/invoices/records/(P-\d+)">')
SHEET_LINK = re.compile(r'<a href="/invoices/spreadsheet/(\d+)">')


def invoices_of(state: StateSnapshot, **where: str) -> list[Row]:
    """The invoices matching every `column=value`, in the viewer's order (by number)."""
    rows = [row for row in state["invoice"] if all(row[column] == value for column, value in where.items())]
    return sorted(rows, key=lambda row: str(row["number"]))


def numbers(rows: list[Row]) -> list[str]:
    return [str(row["number"]) for row in rows]



# --- Seeding --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_holds_over_500_invoices_with_their_lines_and_payable_records(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    assert len(state["invoice"]) >= 500 and len(state["payable"]) >= 300
    with_lines = Counter(row["invoice_id"] for row in state["invoice_line"])
    assert all(with_lines[row["id"]] >= 1 for row in state["invoice"])
    known = {row["number"] for row in state["invoice"]}
    assert all(row["invoice_number"] in known for row in state["payable"])
    assert state["email"] == []


@pytest.mark.parametrize("seed", SEEDS)
def test_the_filler_is_realistic_currencies_months_and_mostly_paid_older_invoices(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    invoices = seeded[seed]["invoice"]
    currencies = Counter(row["currency"] for row in invoices)
    assert {"EUR", "USD", "GBP", "CHF"} <= set(currencies) and currencies["EUR"] > currencies["CHF"]
    assert len({str(row["issued_on"])[:7] for row in invoices}) >= 9
    statuses = Counter(row["status"] for row in invoices)
    assert 0.5 < statuses["paid"] / len(invoices) < 0.95 and statuses["open"] >= 50
    for row in invoices:
        assert (row["status"] == "paid") == (row["paid_on"] is not None)
        assert row["paid_on"] is None or str(row["issued_on"]) <= str(row["paid_on"]) <= "2026-02-28"
    assert len({row["vendor"] for row in invoices}) >= 30


@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_keeps_the_fixed_records_the_tasks_name(seeded: dict[int, StateSnapshot], seed: int) -> None:
    state = seeded[seed]
    for at, (number, vendor, issued, currency, status, paid_on, printed, _lines) in enumerate(FIXED_INVOICES):
        assert state["invoice"][at] == {"id": at + 1, "number": number, "vendor": vendor, "issued_on": issued,
                                        "currency": currency, "status": status, "paid_on": paid_on,
                                        "total_printed": printed}
    for at, (reference, number, *_rest) in enumerate(FIXED_PAYABLES):
        assert (state["payable"][at]["reference"], state["payable"][at]["invoice_number"]) == (reference, number)
    fixed_numbers = {entry[0] for entry in FIXED_INVOICES}
    filler_payables = state["payable"][len(FIXED_PAYABLES):]
    assert not {row["invoice_number"] for row in filler_payables} & fixed_numbers
    assert [row["number"] for row in state["invoice"] if row["vendor"] == "Kestrel Logistics"] == [
        "INV-1002", "INV-1005", "INV-1010", "INV-1011"]


def test_the_same_seed_gives_identical_data(tmp_path: Path, seeded: dict[int, StateSnapshot]) -> None:
    other = TenantRegistry(tmp_path, sites={"invoices": INVOICES})
    try:
        again = other.create("invoices", 2)
        assert again.snapshot() == seeded[2]
    finally:
        other.close()


def test_different_seeds_give_different_filler(seeded: dict[int, StateSnapshot]) -> None:
    fixed = len(FIXED_INVOICES)
    fillers = [tuple((row["vendor"], row["issued_on"]) for row in seeded[seed]["invoice"][fixed:]) for seed in SEEDS]
    assert len(set(fillers)) == len(SEEDS)
    assert len({len(seeded[seed]["payable"]) for seed in SEEDS}) > 1


@pytest.mark.parametrize("seed", SEEDS)
def test_the_filler_has_look_alikes_of_names_invoices_and_payable_totals(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    vendors = {row["vendor"] for row in state["invoice"]}
    # a name a letter apart, and one with a suffix, beside vendors the tasks name
    assert {"Kestrel Logistics", "Kestral Logistics", "Harbor Office Furniture", "Harbour Office Furniture",
            "Brightline Software", "Brightline Software Ltd"} <= vendors
    # the same vendor with two invoices of the same items whose totals are close (within 5%)
    lines: dict[object, list[Row]] = {}
    for line in state["invoice_line"]:
        lines.setdefault(line["invoice_id"], []).append(line)
    shapes: dict[tuple[object, tuple[str, ...]], list[int]] = {}
    for row in state["invoice"]:
        own = lines[row["id"]]
        key = (row["vendor"], tuple(str(line["description"]) for line in own))
        shapes.setdefault(key, []).append(sum(int(str(line["amount_cents"])) for line in own))
    near = [totals for totals in shapes.values()
            if len(totals) > 1 and any(a != b and abs(a - b) <= 0.05 * max(a, b) for a in totals for b in totals)]
    assert len(near) >= 5
    # payable records whose total is one digit off their invoice's (a clerk's slip, as the fixed P-302)
    totals = {row["number"]: sum(int(str(line["amount_cents"])) for line in lines[row["id"]])
              for row in state["invoice"]}
    slips = [row for row in state["payable"] if row["total_cents"] != totals[row["invoice_number"]]
             and len(str(row["total_cents"])) == len(str(totals[row["invoice_number"]]))
             and sum(a != b for a, b in zip(str(row["total_cents"]), str(totals[row["invoice_number"]]),
                                            strict=True)) == 1]
    assert len(slips) >= 3


# --- Pagination -----------------------------------------------------------------------------------------------


def test_page_two_shows_rows_26_to_50_in_the_lists_order(reader: Browser) -> None:
    every = invoices_of(reader.tenant.snapshot())
    second = reader.get("/invoices/viewer?page=2")
    assert INVOICE_LINK.findall(second) == numbers(every)[PAGE_SIZE:2 * PAGE_SIZE]
    count = -(-len(every) // PAGE_SIZE)
    assert f"Page 2 of {count}: rows 26–50 of {len(every)}." in second
    records = reader.tenant.snapshot()["payable"]
    assert RECORD_LINK.findall(reader.get("/invoices/records?page=2")) == [
        row["reference"] for row in records[PAGE_SIZE:2 * PAGE_SIZE]]
    assert SHEET_LINK.findall(reader.get("/invoices/spreadsheet?page=2")) == [str(n) for n in range(26, 51)]


def test_the_last_page_a_page_past_the_end_and_a_page_that_is_no_number(reader: Browser) -> None:
    every = numbers(invoices_of(reader.tenant.snapshot()))
    count = -(-len(every) // PAGE_SIZE)
    last = reader.get(f"/invoices/viewer?page={count}")
    assert INVOICE_LINK.findall(last) == every[(count - 1) * PAGE_SIZE:]
    assert "Next page" not in last and "Previous page" in last
    assert INVOICE_LINK.findall(reader.get("/invoices/viewer?page=9999")) == every[(count - 1) * PAGE_SIZE:]
    for nonsense in ("two", "-3", "0", "1.5", ""):
        first = reader.get(f"/invoices/viewer?page={nonsense}")
        assert INVOICE_LINK.findall(first) == every[:PAGE_SIZE] and "Previous page" not in first


def test_page_links_keep_the_search_and_the_filters(reader: Browser) -> None:
    page = reader.get("/invoices/viewer?q=north&status=paid&currency=EUR&page=2")
    assert 'href="/invoices/viewer?q=north&amp;status=paid&amp;currency=EUR&amp;page=3"' in page
    assert 'href="/invoices/viewer?q=north&amp;status=paid&amp;currency=EUR"' in page  # the first page
    assert '<a href="/invoices/viewer">Clear search and filters</a>' in page
    records = reader.get("/invoices/records?vendor=Northwind+Supplies&page=1")
    assert "/invoices/records?vendor=Northwind+Supplies&amp;page=2" in records


def test_a_list_page_shows_one_page_of_rows_however_many_records(reader: Browser) -> None:
    for path, link in (("/invoices/viewer", INVOICE_LINK), ("/invoices/records", RECORD_LINK),
                       ("/invoices/spreadsheet", SHEET_LINK)):
        assert len(link.findall(reader.get(path))) == PAGE_SIZE


# --- Search and filters ---------------------------------------------------------------------------------------


def test_search_finds_part_of_a_vendor_name_or_number_whatever_its_case(reader: Browser) -> None:
    state = reader.tenant.snapshot()
    found = INVOICE_LINK.findall(reader.get("/invoices/viewer?q=KESTRAL"))
    assert found and found == numbers([row for row in invoices_of(state) if row["vendor"] == "Kestral Logistics"])
    northwind = {row["vendor"] for row in state["invoice"] if row["number"] in
                 INVOICE_LINK.findall(reader.get("/invoices/viewer?q=northwind+supp"))}
    assert northwind == {"Northwind Supplies", "Northwind Supply Co."}
    assert INVOICE_LINK.findall(reader.get("/invoices/viewer?q=inv-1001")) == ["INV-1001"]
    assert RECORD_LINK.findall(reader.get("/invoices/records?q=p-30")) == [f"P-30{n}" for n in range(1, 10)]


def test_a_search_that_finds_nothing_says_so(reader: Browser) -> None:
    for path in ("/invoices/viewer?q=zzqx", "/invoices/records?q=zzqx", "/invoices/spreadsheet?q=zzqx",
                 "/invoices/email?q=zzqx"):
        page = reader.get(path)
        assert "match this search" in page and "0 rows." in page
    assert INVOICE_LINK.findall(reader.get("/invoices/viewer?q=%25")) == []  # a % is a character, not a wildcard


def test_each_filter_and_a_combination_narrow_the_list(reader: Browser) -> None:
    state = reader.tenant.snapshot()
    for where in ({"status": "open"}, {"vendor": "Clearwater Utilities"}, {"currency": "CHF"},
                  {"vendor": "Northwind Supplies", "status": "open", "currency": "EUR"}):
        expected = numbers(invoices_of(state, **where))
        assert expected, where
        assert INVOICE_LINK.findall(reader.get(f"/invoices/viewer?{urlencode(where)}")) == expected[:PAGE_SIZE]
    chosen = reader.get("/invoices/viewer?vendor=Clearwater+Utilities&status=paid")
    assert '<option value="Clearwater Utilities" selected>' in chosen and '<option value="paid" selected>' in chosen
    northwind = [row["reference"] for row in state["payable"] if row["vendor"] == "Northwind Supplies"
                 and row["currency"] == "EUR"]
    assert RECORD_LINK.findall(reader.get("/invoices/records?vendor=Northwind+Supplies&currency=EUR")) == (
        northwind[:PAGE_SIZE])
    assert RECORD_LINK.findall(reader.get("/invoices/records?invoice=INV-1007")) == ["P-303"]
    assert RECORD_LINK.findall(reader.get("/invoices/records?invoice=INV-100")) == []  # exact, not a search
    assert "No records match this search and these filters." in reader.get("/invoices/records?invoice=INV-1008")


def test_a_filtered_list_on_one_page_is_a_whole_listing_and_a_cut_page_or_a_search_is_not(reader: Browser) -> None:
    reader.get("/invoices/viewer?vendor=Kestrel+Logistics")
    assert last_listings(reader.tenant) == [("invoice", {"vendor": "Kestrel Logistics"})]
    reader.get("/invoices/records?invoice=INV-1008")  # no rows: their absence is shown too
    assert last_listings(reader.tenant) == [("payable", {"invoice_number": "INV-1008"})]
    open_chf = invoices_of(reader.tenant.snapshot(), status="open", currency="CHF")
    assert 0 < len(open_chf) <= PAGE_SIZE
    reader.get("/invoices/viewer?status=open&currency=CHF")
    assert last_listings(reader.tenant) == [("invoice", {"currency": "CHF", "status": "open"})]
    for cut in ("/invoices/viewer", "/invoices/viewer?page=2", "/invoices/records", "/invoices/viewer?status=paid",
                "/invoices/viewer?q=Kestrel+Logistics"):
        reader.get(cut)
        assert last_listings(reader.tenant) == [], cut


def test_the_sheets_list_searches_sheet_numbers_and_the_outbox_paginates(browser: Browser) -> None:
    ids = [str(row["id"]) for row in browser.tenant.snapshot()["invoice"]]
    assert SHEET_LINK.findall(browser.get("/invoices/spreadsheet?q=50")) == [n for n in ids if "50" in n][:PAGE_SIZE]
    for n in range(PAGE_SIZE + 2):
        browser.post("/invoices/email", {"recipient": f"ap{n}@example.com", "subject": f"Note {n}", "body": "x"})
    outbox = browser.get("/invoices/email?page=2")
    assert "ap25@example.com" in outbox and "ap26@example.com" in outbox and "ap24@example.com" not in outbox
    assert "ap7@example.com" in browser.get("/invoices/email?q=AP7@") and "Note 17" not in browser.get(
        "/invoices/email?q=AP7@")


# --- A property: the pages of any filtered list are that list, once each, in order --------------------------------

FILTERS = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(["open", "paid"]),
    "vendor": st.sampled_from(["Northwind Supplies", "Kestral Logistics", "Clearwater Utilities", "Orbit Telecom"]),
    "currency": st.sampled_from(["EUR", "USD", "GBP", "CHF"]),
    "q": st.sampled_from(["north", "INV-11", "e", "logistics"]),
})


@settings(max_examples=15, deadline=None)
@given(where=FILTERS, asked=st.one_of(st.integers(-2, 40).map(str), st.sampled_from(["", "x", "2.0"])))
def test_the_pages_of_any_filtered_list_are_the_filtered_list_in_order_no_row_twice(
    reader: Browser, where: dict[str, str], asked: str
) -> None:
    state = reader.tenant.snapshot()
    q = where.get("q", "").lower()
    expected = numbers([row for row in invoices_of(state, **{k: v for k, v in where.items() if k != "q"})
                        if q in str(row["number"]).lower() or q in str(row["vendor"]).lower()])
    count = max(1, -(-len(expected) // PAGE_SIZE))
    walked: list[str] = []
    for number in range(1, count + 1):
        walked += INVOICE_LINK.findall(reader.get(f"/invoices/viewer?{urlencode({**where, 'page': number})}"))
    assert walked == expected
    wanted = int(asked) if asked.lstrip("-").isdigit() and int(asked) >= 1 else 1
    shown = min(wanted, count)
    page = INVOICE_LINK.findall(reader.get(f"/invoices/viewer?{urlencode({**where, 'page': asked})}"))
    assert page == expected[(shown - 1) * PAGE_SIZE:shown * PAGE_SIZE]


def test_a_list_page_loads_change_nothing(reader: Browser) -> None:
    before = reader.tenant.snapshot()
    for path in ("/invoices/viewer?status=open&page=3", "/invoices/records?q=north", "/invoices/spreadsheet?page=4"):
        reader.get(path)
    assert reader.tenant.snapshot() == before and reader.tenant.journal() == []



def test_the_crawl_counts_an_invoice_a_record_a_sheet_or_a_later_page_as_one_kind_of_page() -> None:
    """The crawl's bound (`PAGES_PER_KIND` links to one kind) spends its budget on kinds, not on these rows."""
    assert page_kind("/invoices/viewer/INV-1003") == page_kind("/invoices/viewer/INV-1517") == (
        "/invoices/viewer/*", ())
    assert page_kind("/invoices/records/P-301") != page_kind("/invoices/records/new")
    assert page_kind("/invoices/viewer?vendor=Orbit+Telecom&page=2") == page_kind("/invoices/viewer?page=9&vendor=X")
    assert page_kind("/invoices/viewer?page=2") != page_kind("/invoices/viewer")
