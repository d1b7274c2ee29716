"""The inventory at realistic volume: hundreds of seeded records with look-alikes, and lists that paginate, search
and filter (sites/inventory/filler.py, sites/inventory/lists.py, sites/kit/paging.py)."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from site_client import Browser, last_listings, reader_fixture, site_fixtures

from sites.inventory import INVENTORY
from sites.inventory.models import CATEGORIES
from sites.inventory.seed import PRODUCTS, PURCHASE_ORDERS
from sites.inventory.vocabulary import FILLER_CATEGORIES
from sites.kit import TenantRegistry
from sites.kit.paging import PAGE_SIZE

registry, app_client, tenant, browser = site_fixtures(INVENTORY)
reader = reader_fixture(INVENTORY)  # one tenant for every example of a property: page loads change nothing

SKU = re.compile(r'<a href="/inventory/products/(SKU-\d+)">')
ORDER = re.compile(r'<a href="/inventory/purchase-orders/(PO-\d+)">')
Snapshot = dict[str, list[dict[str, Any]]]


def snapshot_of(seed: int, root: Path) -> Snapshot:
    """A fresh tenant's rows of `seed`, from a registry of its own (its own template build)."""
    fresh = TenantRegistry(root, sites={"inventory": INVENTORY})
    try:
        return fresh.create("inventory", seed).snapshot()
    finally:
        fresh.close()


def links(page: str) -> dict[str, str]:
    """The page's pagination links by their text."""
    nav = re.search(r'<nav aria-label="Pages">(.*?)</nav>', page, re.S)
    found = re.findall(r'<a href="([^"]+)">([^<]+)</a>', nav.group(1)) if nav else []
    return {text: html.unescape(href) for href, text in found}


def every_page(browser: Browser, path: str, pattern: re.Pattern[str]) -> list[str]:
    """The rows of a list read page by page through its Next page links."""
    rows: list[str] = []
    page = browser.get(path)
    while True:
        rows += pattern.findall(page)
        following = links(page).get("Next page")
        if following is None:
            return rows
        page = browser.get(following)


def products_by_sku(browser: Browser) -> list[dict[str, Any]]:
    return sorted(browser.tenant.snapshot()["product"], key=lambda row: row["sku"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_seed_holds_hundreds_of_products_with_their_orders_and_stock_moves(seed: int, tmp_path: Path) -> None:
    rows = snapshot_of(seed, tmp_path)
    assert len(rows["product"]) >= 500
    assert len(rows["purchase_order"]) >= 150
    assert len(rows["purchase_order_line"]) >= len(rows["purchase_order"])
    assert len(rows["stock_adjustment"]) >= 400
    statuses = Counter(row["status"] for row in rows["purchase_order"])
    assert statuses["received"] > statuses["open"] > 0 and statuses["cancelled"] > 0
    assert statuses["partially received"] > 0
    months = {row["created_at"][:7] for row in rows["purchase_order"]}
    assert len(months) >= 5, "orders were placed over months"


def test_the_same_seed_gives_identical_data_and_another_seed_other_filler(tmp_path: Path) -> None:
    first, again, other = (snapshot_of(seed, tmp_path / name) for seed, name in ((4, "a"), (4, "b"), (5, "c")))
    assert first == again
    assert first["product"][24:] != other["product"][24:]
    assert first["purchase_order"][5:] != other["purchase_order"][5:]
    assert first["product"][:24] == other["product"][:24]


def test_the_filler_never_touches_what_tasks_rely_on(tmp_path: Path) -> None:
    rows = snapshot_of(2, tmp_path)
    fixed_products = set(range(1, len(PRODUCTS) + 1))
    fixed_orders = set(range(1, len(PURCHASE_ORDERS) + 1))
    filler_lines = [line for line in rows["purchase_order_line"] if line["purchase_order_id"] not in fixed_orders]
    assert not any(line["product_id"] in fixed_products for line in filler_lines)
    assert [row["product_id"] for row in rows["stock_adjustment"] if row["product_id"] in fixed_products] == [6, 8, 11]
    categories = Counter(row["category"] for row in rows["product"])
    assert categories["Fasteners"] == categories["Paint"] == 5
    assert set(FILLER_CATEGORIES) <= set(CATEGORIES)
    below = sorted(row["sku"] for row in rows["product"]
                   if row["status"] == "active" and row["stock"] < row["reorder_point"])
    assert below == ["SKU-1003", "SKU-1008", "SKU-1013", "SKU-1017", "SKU-1020"]


def test_each_products_stock_is_its_last_adjustments_stock_after_and_never_went_below_zero(tmp_path: Path) -> None:
    rows = snapshot_of(3, tmp_path)
    last: dict[int, dict[str, Any]] = {}
    for adjustment in sorted(rows["stock_adjustment"], key=lambda row: (row["created_at"], row["id"])):
        assert adjustment["stock_after"] >= 0
        last[adjustment["product_id"]] = adjustment
    stock = {row["id"]: row["stock"] for row in rows["product"]}
    assert all(stock[product_id] == row["stock_after"] for product_id, row in last.items())


def test_look_alikes_stand_beside_the_fixed_records(tmp_path: Path) -> None:
    rows = snapshot_of(1, tmp_path)
    names = Counter(row["name"] for row in rows["product"])
    assert names["Exterior paint grey 5 L"] == 1 and names["Exterior paint gray 5 L"] == 1  # one letter apart
    assert names["Claw hammer 20 oz"] == 1  # a number apart from SKU-1006's "Claw hammer 16 oz"
    assert names["Basin tap, chrome"] == 2  # SKU-1023 discontinued, a namesake active
    twins = [name for name, count in names.items() if count == 2]
    assert len(twins) >= 10
    for name in twins:
        assert {row["status"] for row in rows["product"] if row["name"] == name} == {"active", "discontinued"}
    numbers = {row["number"] for row in rows["purchase_order"]}
    assert {"PO-4001", "PO-4002", "PO-4003", "PO-4004", "PO-4005"} <= numbers  # one digit from PO-5001 …
    open_orders = Counter((row["supplier"], frozenset(line["product_id"] for line in rows["purchase_order_line"]
                                                      if line["purchase_order_id"] == row["id"]))
                          for row in rows["purchase_order"] if row["status"] == "open")
    assert max(open_orders.values()) >= 2, "a supplier has two open orders for the same products"


def test_page_two_shows_rows_26_to_50_in_the_lists_order(browser: Browser) -> None:
    page = browser.get("/inventory/products?page=2")
    expected = [row["sku"] for row in products_by_sku(browser)]
    assert SKU.findall(page) == expected[PAGE_SIZE:2 * PAGE_SIZE]
    assert f"Page 2 of {-(-len(expected) // PAGE_SIZE)}: rows 26–50 of {len(expected)}." in page
    assert links(page)["Previous page"] == "/inventory/products"


def test_the_last_page_a_page_past_the_end_and_a_non_number(browser: Browser) -> None:
    expected = [row["sku"] for row in products_by_sku(browser)]
    count = -(-len(expected) // PAGE_SIZE)
    last = browser.get(f"/inventory/products?page={count}")
    assert SKU.findall(last) == expected[(count - 1) * PAGE_SIZE:]
    assert "Next page" not in last
    assert SKU.findall(browser.get("/inventory/products?page=9999")) == SKU.findall(last)
    assert SKU.findall(browser.get("/inventory/products?page=two")) == expected[:PAGE_SIZE]
    assert SKU.findall(browser.get("/inventory/products?page=-1")) == expected[:PAGE_SIZE]


def test_page_links_keep_the_search_and_the_filters(browser: Browser) -> None:
    page = browser.get("/inventory/products?q=a&category=Electrical&status=active&stock=all")
    shown = links(page)
    assert shown["Next page"] == "/inventory/products?q=a&category=Electrical&status=active&page=2"
    second = browser.get(shown["Next page"])
    assert links(second)["Previous page"] == "/inventory/products?q=a&category=Electrical&status=active"
    assert 'value="a"' in second and '<option value="Electrical" selected>' in second


def test_search_finds_part_of_a_name_or_sku_ignoring_case(browser: Browser) -> None:
    found = SKU.findall(browser.get("/inventory/products?q=CLAW%20HAMMER"))
    named = {row["sku"] for row in products_by_sku(browser) if "claw hammer" in row["name"].lower()}
    assert set(found) == named and "SKU-1006" in found and len(found) >= 2
    assert SKU.findall(browser.get("/inventory/products?q=sku-1012")) == ["SKU-1012"]
    orders = ORDER.findall(browser.get("/inventory/purchase-orders?q=northbolt"))
    assert "PO-5002" in orders and "PO-5005" in orders


@pytest.mark.parametrize("path", ["/inventory/products", "/inventory/purchase-orders", "/inventory/adjustments"])
def test_a_nonsense_search_finds_nothing_and_says_so(browser: Browser, path: str) -> None:
    page = browser.get(f"{path}?q=zzqx%25_")
    assert "0 rows." in page
    assert re.search(r'No [a-z ]+ match(es)? &#34;zzqx%_&#34;|No [a-z ]+ match(es)? "zzqx%_"', page)


def test_each_product_filter_and_their_combination(browser: Browser) -> None:
    rows = products_by_sku(browser)
    cases: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
        ("category=Garden", lambda row: row["category"] == "Garden"),
        ("status=discontinued", lambda row: row["status"] == "discontinued"),
        ("stock=low", lambda row: row["stock"] < row["reorder_point"]),
        ("category=Plumbing&status=discontinued&stock=low",
         lambda row: row["category"] == "Plumbing" and row["status"] == "discontinued"
         and row["stock"] < row["reorder_point"]),
    ]
    for query, keep in cases:
        assert every_page(browser, f"/inventory/products?{query}", SKU) == [row["sku"] for row in rows if keep(row)]


def test_the_order_filters_and_the_adjustment_filter(browser: Browser) -> None:
    orders = sorted(browser.tenant.snapshot()["purchase_order"], key=lambda row: row["number"], reverse=True)
    opened = [row["number"] for row in orders if row["status"] == "open"]
    assert every_page(browser, "/inventory/purchase-orders?status=open", ORDER) == opened
    brightline = [row["number"] for row in orders
                  if row["supplier"] == "Brightline Electrical" and row["status"] == "received"]
    assert every_page(browser, "/inventory/purchase-orders?status=received&supplier=Brightline+Electrical",
                      ORDER) == brightline
    lost = every_page(browser, "/inventory/adjustments?reason=lost", re.compile(r"<td>(-\d+)</td><td>lost</td>"))
    assert len(lost) == sum(row["reason"] == "lost" for row in browser.tenant.snapshot()["stock_adjustment"])


def test_an_unknown_filter_value_reads_as_all(browser: Browser) -> None:
    assert SKU.findall(browser.get("/inventory/products?category=Nonsense&status=gone")) == SKU.findall(
        browser.get("/inventory/products"))


def listings(browser: Browser, path: str) -> list[tuple[str, dict[str, object]]]:
    """The whole listings the page at `path` showed: (table, filter) each."""
    browser.get(path)
    return last_listings(browser.tenant)


def test_a_filtered_list_on_one_page_is_a_whole_listing_and_a_cut_page_is_not(browser: Browser) -> None:
    assert listings(browser, "/inventory/products?category=Paint") == [("product", {"category": "Paint"})]
    assert listings(browser, "/inventory/products?category=Tools") == []  # several pages: each is cut
    assert listings(browser, "/inventory/products?q=paint") == []  # a search is no equality: no filter stated
    [(table, where)] = listings(browser, "/inventory/purchase-orders?status=open&supplier=Northbolt+Fasteners")
    assert table == "purchase_order" and where == {"status": "open", "supplier": "Northbolt Fasteners"}


def test_the_list_pages_change_nothing(browser: Browser) -> None:
    for path in ("/inventory/products?page=3", "/inventory/purchase-orders?page=2", "/inventory/adjustments?page=4",
                 "/inventory/products?q=tap&status=active"):
        browser.get(path)
    assert browser.tenant.journal() == []


def test_a_bulk_edit_on_a_later_page_returns_to_that_page(browser: Browser) -> None:
    location = browser.post("/inventory/products/bulk", {"sku": ["SKU-1030"], "action": "reorder",
                                                         "reorder_point": "7", "q": "", "category": "all",
                                                         "stock": "all", "status": "active", "page": "2"})
    assert location == "/inventory/products?status=active&page=2&updated=1"




@settings(max_examples=30, deadline=None)
@given(category=st.sampled_from(["all", "Tools", "Lighting", "Paint", "Nonsense"]),
       stock=st.sampled_from(["all", "low"]), status=st.sampled_from(["all", "active", "discontinued"]),
       search=st.sampled_from(["", "pack", "LED", "ar", "zzz"]))
def test_the_pages_of_any_filtered_list_together_hold_exactly_its_rows_in_order_once(
        reader: Browser, category: str, stock: str, status: str, search: str) -> None:
    rows = products_by_sku(reader)
    expected = [row["sku"] for row in rows
                if category in ("all", "Nonsense") or row["category"] == category
                if stock == "all" or row["stock"] < row["reorder_point"]
                if status == "all" or row["status"] == status
                if search.lower() in row["sku"].lower() or search.lower() in row["name"].lower()]
    query = f"q={search}&category={category}&stock={stock}&status={status}"
    first = reader.get(f"/inventory/products?{query}")
    count = max(1, -(-len(expected) // PAGE_SIZE))
    pages = [first, *(reader.get(f"/inventory/products?{query}&page={number}") for number in range(2, count + 1))]
    shown = [sku for page in pages for sku in SKU.findall(page)]
    assert shown == expected
    assert len(set(shown)) == len(shown)
