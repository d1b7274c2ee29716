"""The inventory site: its pages, its stock rules (receiving, adjustments, discontinuing, bulk edits)."""

from __future__ import annotations

import re

import pytest
from site_client import Browser, error_of, site_fixtures

from sites.inventory import INVENTORY
from sites.inventory.stock import new_price, parse_integer
from sites.kit import JournalEntry, TenantRegistry

NAV = ("Dashboard", "Products", "Purchase orders", "Stock adjustments")


registry, app_client, tenant, browser = site_fixtures(INVENTORY)


def product(browser: Browser, sku: str) -> dict[str, object]:
    [row] = [row for row in browser.tenant.snapshot()["product"] if row["sku"] == sku]
    return row


def changes(journal: list[JournalEntry]) -> list[tuple[str, str, dict[str, object], list[str]]]:
    return [(entry.table, entry.change, entry.key, entry.changed_fields()) for entry in journal]


def test_the_navigation_names_every_section(browser: Browser) -> None:
    """Every page shows the start page's navigation (tests/test_site_invariants.py); these are its sections."""
    page = browser.get("/inventory/")
    assert all(f">{name}</a>" in page for name in NAV)


FIXED = {"product": 24, "purchase_order": 5, "purchase_order_line": 8, "stock_adjustment": 3}
"""How many fixed rows of each table the seed writes first (ids 1 …), the same for every seed."""


def test_the_fixed_records_are_the_same_for_every_seed(registry: TenantRegistry) -> None:
    first, second = registry.create("inventory", 1), registry.create("inventory", 7)
    try:
        fixed = [{table: rows[:FIXED[table]] for table, rows in one.snapshot().items()} for one in (first, second)]
        assert fixed[0] == fixed[1]
        assert [row["sku"] for row in fixed[0]["product"]] == [f"SKU-{1000 + n}" for n in range(1, 25)]
        assert [row["number"] for row in fixed[0]["purchase_order"]] == [f"PO-{5000 + n}" for n in range(1, 6)]
        assert [row["id"] for row in fixed[0]["purchase_order_line"]] == list(range(1, 9))
        assert [row["product_id"] for row in fixed[0]["stock_adjustment"]] == [6, 8, 11]
    finally:
        registry.drop(first)
        registry.drop(second)


def test_the_low_stock_filter_lists_exactly_the_products_below_their_reorder_point(browser: Browser) -> None:
    page = browser.get("/inventory/products?stock=low&status=active")
    shown = re.findall(r'<a href="/inventory/products/(SKU-\d+)">', page)
    assert shown == ["SKU-1003", "SKU-1008", "SKU-1013", "SKU-1017", "SKU-1020"]
    assert "SKU-1005" not in page  # at its reorder point, not below it
    low = re.findall(r'<a href="/inventory/products/(SKU-\d+)">', browser.get("/inventory/products?stock=low"))
    assert low[:6] == [*shown, "SKU-1023"]  # then the seed's discontinued products below it, by SKU
    below = {row["sku"] for row in browser.tenant.snapshot()["product"] if row["stock"] < row["reorder_point"]}
    assert set(low) == below
    paint = re.findall(r'<a href="/inventory/products/(SKU-\d+)">', browser.get("/inventory/products?category=Paint"))
    assert paint == ["SKU-1011", "SKU-1012", "SKU-1013", "SKU-1014", "SKU-1015"]


def test_an_unknown_product_or_order_gets_a_404_page(browser: Browser) -> None:
    assert "Product SKU-9999 was not found." in browser.get("/inventory/products/SKU-9999", status=404)
    assert "Purchase order PO-1 was not found." in browser.get("/inventory/purchase-orders/PO-1", status=404)


def test_editing_a_product_changes_only_its_changed_fields(browser: Browser) -> None:
    data = {"name": "Cordless drill 18 V", "category": "Tools", "price": "89.00", "reorder_point": "8"}
    location = browser.post("/inventory/products/SKU-1007/edit", data)
    assert location == "/inventory/products/SKU-1007?saved=1"
    assert "Product saved." in browser.get(location)
    assert changes(browser.tenant.journal()) == [("product", "update", {"id": 7}, ["reorder_point"])]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("price", "cheap", 'Product not saved: "cheap" is not a price; type it like 19.90.'),
        ("reorder_point", "-1", 'Product not saved: "-1" is not a reorder point of 0 or more.'),
        ("name", " ", "Product not saved: the name is empty."),
    ],
)
def test_an_invalid_edit_is_refused_without_a_change(browser: Browser, field: str, value: str, message: str) -> None:
    data = {"name": "Cordless drill 18 V", "category": "Tools", "price": "89.00", "reorder_point": "4", field: value}
    assert error_of(browser.post("/inventory/products/SKU-1007/edit", data, status=422)) == message
    assert browser.tenant.journal() == []


def test_a_stock_adjustment_changes_stock_and_records_its_reason(browser: Browser) -> None:
    location = browser.post("/inventory/products/SKU-1012/adjustments", {"quantity": "-3", "reason": "damaged"})
    assert location == "/inventory/products/SKU-1012?adjusted=1"
    journal = browser.tenant.journal()
    assert changes(journal)[1] == ("product", "update", {"id": 12}, ["stock"])
    last = max(row["id"] for row in browser.tenant.snapshot()["stock_adjustment"])
    assert journal[0].after == {
        "id": last,  # the newest adjustment, after the seed's
        "product_id": 12,
        "quantity": -3,
        "reason": "damaged",
        "reference": "",
        "stock_after": 8,
        "created_at": "2026-03-02 09:01",
    }
    assert "Stock adjusted." in browser.get(location)


@pytest.mark.parametrize(
    ("quantity", "reason", "message"),
    [
        ("-12", "damaged", "Adjustment refused: SKU-1010 has 8 in stock; a change of -12 would take it below zero."),
        ("-3", "", "Adjustment refused: the reason must be one of damaged, count correction, returned, lost."),
        ("5", "received", "Adjustment refused: the reason must be one of damaged, count correction, returned, lost."),
        ("0", "lost", "Adjustment refused: the quantity change must not be 0."),
        ("two", "lost", 'Adjustment refused: "two" is not a whole number; type it like -3 or 5.'),
    ],
)
def test_a_forbidden_adjustment_is_refused_with_422_and_no_journal_rows(
    browser: Browser, quantity: str, reason: str, message: str
) -> None:
    page = browser.post("/inventory/products/SKU-1010/adjustments", {"quantity": quantity, "reason": reason}, 422)
    assert error_of(page) == message
    assert browser.tenant.journal() == [] and browser.tenant.operations()[0].journal_rows == 0


def test_a_product_on_an_open_purchase_order_cannot_be_discontinued(browser: Browser) -> None:
    page = browser.post("/inventory/products/SKU-1020/discontinue", status=422)
    assert error_of(page) == "Discontinue refused: SKU-1020 is on open purchase order PO-5001."
    assert browser.tenant.journal() == []


def test_discontinuing_a_product_nothing_waits_for(browser: Browser) -> None:
    assert browser.post("/inventory/products/SKU-1016/discontinue") == "/inventory/products/SKU-1016?discontinued=1"
    assert changes(browser.tenant.journal()) == [("product", "update", {"id": 16}, ["status"])]
    assert "This product is discontinued." in browser.get("/inventory/products/SKU-1016")
    page = browser.post("/inventory/products/SKU-1016/discontinue", status=422)
    assert error_of(page) == "SKU-1016 is already discontinued."


def test_receiving_in_full_raises_stock_through_the_order(browser: Browser) -> None:
    location = browser.post(
        "/inventory/purchase-orders/PO-5002/receive", {"line": ["3", "4"], "received": ["40", "100"]}
    )
    assert location == "/inventory/purchase-orders/PO-5002?received=1"
    journal = browser.tenant.journal()
    assert {entry.operation for entry in journal} == {1}
    assert [(entry.table, entry.change) for entry in journal] == [
        ("stock_adjustment", "insert"),
        ("stock_adjustment", "insert"),
        ("product", "update"),
        ("product", "update"),
        ("purchase_order", "update"),
        ("purchase_order_line", "update"),
        ("purchase_order_line", "update"),
    ]
    assert (product(browser, "SKU-1003")["stock"], product(browser, "SKU-1002")["stock"]) == (58, 145)
    orders = {row["number"]: row for row in browser.tenant.snapshot()["purchase_order"]}
    assert orders["PO-5002"]["status"] == "received"
    page = browser.get(location)
    assert "Goods received." in page and "Receive goods</button>" not in page
    refused = browser.post("/inventory/purchase-orders/PO-5002/receive", {"line": ["3"], "received": ["1"]}, 422)
    assert error_of(refused) == "Receiving refused: purchase order PO-5002 is received."


def test_a_short_delivery_leaves_the_order_partially_received_and_the_rest_outstanding(browser: Browser) -> None:
    browser.post("/inventory/purchase-orders/PO-5003/receive", {"line": ["5", "6"], "received": ["18", "10"]})
    orders = {row["number"]: row for row in browser.tenant.snapshot()["purchase_order"]}
    assert orders["PO-5003"]["status"] == "partially received"
    page = browser.get("/inventory/purchase-orders/PO-5003")
    assert 'id="received-5" name="received" value="6"' in page and 'id="received-6"' not in page
    browser.post("/inventory/purchase-orders/PO-5003/receive", {"line": ["5"], "received": ["6"]})
    assert product(browser, "SKU-1013")["stock"] == 4 + 24


@pytest.mark.parametrize(
    ("received", "message"),
    [
        (["41", "0"], "Receiving refused: only 40 of SKU-1003 are still outstanding on PO-5002."),
        (["-1", "0"], 'Receiving refused: "-1" for SKU-1003 is not a whole number of 0 or more.'),
        (["0", "0"], "Receiving refused: enter a received quantity for at least one line."),
    ],
)
def test_receiving_more_than_outstanding_or_nothing_is_refused(
    browser: Browser, received: list[str], message: str
) -> None:
    page = browser.post("/inventory/purchase-orders/PO-5002/receive", {"line": ["3", "4"], "received": received}, 422)
    assert error_of(page) == message
    assert browser.tenant.journal() == []


def test_only_an_open_order_can_be_cancelled(browser: Browser) -> None:
    assert browser.post("/inventory/purchase-orders/PO-5001/cancel") == "/inventory/purchase-orders/PO-5001?cancelled=1"
    assert changes(browser.tenant.journal()) == [("purchase_order", "update", {"id": 1}, ["status"])]
    page = browser.post("/inventory/purchase-orders/PO-5004/cancel", status=422)
    assert error_of(page) == "Cancel refused: purchase order PO-5004 is received."


def test_a_bulk_edit_changes_exactly_the_selected_rows_one_journal_row_each(browser: Browser) -> None:
    data: dict[str, str | list[str]] = {
        "sku": ["SKU-1011", "SKU-1012", "SKU-1015"], "action": "price", "price_percent": "10",
        "category": "Paint", "stock": "all",
    }
    location = browser.post("/inventory/products/bulk", data)
    assert location == "/inventory/products?category=Paint&updated=3"
    assert "Updated 3 products." in browser.get(location)
    assert changes(browser.tenant.journal()) == [
        ("product", "update", {"id": product_id}, ["price_cents"]) for product_id in (11, 12, 15)
    ]
    assert [product(browser, sku)["price_cents"] for sku in ("SKU-1011", "SKU-1012", "SKU-1013")] == [5940, 4235, 2100]


def test_a_bulk_reorder_point_skips_rows_that_already_have_it(browser: Browser) -> None:
    data: dict[str, str | list[str]] = {"sku": ["SKU-1004", "SKU-1005"], "action": "reorder", "reorder_point": "30"}
    browser.post("/inventory/products/bulk", data)
    assert changes(browser.tenant.journal()) == [("product", "update", {"id": 5}, ["reorder_point"])]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"action": "reorder", "reorder_point": "5"}, "Bulk edit refused: select at least one product."),
        (
            {"sku": "SKU-1001", "action": "price", "price_percent": "1.5"},
            'Bulk edit refused: "1.5" is not a whole percentage between -90 and 100 (and not 0).',
        ),
        (
            {"sku": "SKU-1001", "action": "reorder", "reorder_point": "x"},
            'Bulk edit refused: "x" is not a reorder point of 0 or more.',
        ),
        ({"sku": "SKU-1001"}, "Bulk edit refused: choose which change to apply."),
    ],
)
def test_an_invalid_bulk_edit_is_refused_and_keeps_the_selection(
    browser: Browser, data: dict[str, str | list[str]], message: str
) -> None:
    page = browser.post("/inventory/products/bulk", data, status=422)
    assert error_of(page) == message
    assert browser.tenant.journal() == []
    if "sku" in data:
        assert 'value="SKU-1001" checked>' in page


def test_integers_and_percentages() -> None:
    assert [parse_integer(text) for text in ("12", "-3", "+5", " 7 ")] == [12, -3, 5, 7]
    assert [parse_integer(text) for text in ("", "1.5", "x", "1 2")] == [None] * 4
    assert [new_price(cents, 10) for cents in (5400, 3850, 690, 360, 999)] == [5940, 4235, 759, 396, 1099]
    assert new_price(1000, -15) == 850
