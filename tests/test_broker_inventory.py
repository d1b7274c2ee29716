"""The inventory's governed routes (sites/inventory/governed.py) in the operation log: a price changed on the
product's page (compared with the price it has now) or by a bulk edit decided as `change` of `price_cents`;
discontinuing a product and cancelling a purchase order as `delete`; other edits, stock adjustments and receiving
goods carry no decision."""

from __future__ import annotations

from broker_checks import allowed, blocked, enforce, ungoverned
from site_client import Browser, site_fixtures

from sites.inventory import INVENTORY
from sites.kit import Tenant
from sites.kit.broker import Grant

registry, app_client, tenant, browser = site_fixtures(INVENTORY)

SKU_1001 = 1  # product id N is SKU-(1000+N); SKU-1001 costs 8.90, reorder point 50
EDIT = {"name": "Wood screws 4x40 mm, box of 200", "category": "Fasteners", "price": "8.90", "reorder_point": "50"}
PRICE_OF_1001 = Grant(id="reprice", capability="change", table="product", objects=[SKU_1001], fields=["price_cents"])


def _product(tenant: Tenant, product_id: int) -> dict[str, object]:
    return next(row for row in tenant.snapshot()["product"] if row["id"] == product_id)


def test_a_price_edit_is_a_change_of_the_price_and_other_edits_are_not(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, PRICE_OF_1001)
    ungoverned(tenant, browser, "/inventory/products/SKU-1001/edit", {**EDIT, "reorder_point": "60"})
    decision = allowed(tenant, browser, "/inventory/products/SKU-1001/edit", {**EDIT, "price": "9.90"},
                       grant="reprice")
    assert decision.request.object == SKU_1001 and decision.request.fields == ["price_cents"]
    assert _product(tenant, SKU_1001)["price_cents"] == 990
    form = {"name": "Drywall screws 3.5x35 mm, box of 500", "category": "Fasteners", "price": "1.00",
            "reorder_point": "40"}
    decision = blocked(tenant, browser, "/inventory/products/SKU-1002/edit", form)
    assert decision.reasons == ["grant reprice covers product 1, not product 2"]


def test_a_bulk_price_edit_is_a_change_of_each_selected_products_price(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, PRICE_OF_1001)
    form: dict[str, str | list[str]] = {"action": "price", "price_percent": "10", "sku": ["SKU-1001"]}
    allowed(tenant, browser, "/inventory/products/bulk", form, grant="reprice")
    decision = blocked(tenant, browser, "/inventory/products/bulk", {**form, "sku": ["SKU-1001", "SKU-1002"]})
    assert decision.request.object is None
    ungoverned(tenant, browser, "/inventory/products/bulk",
               {"action": "reorder", "reorder_point": "10", "sku": ["SKU-1001", "SKU-1002"]})


def test_discontinuing_and_cancelling_are_deletes_of_their_record(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, Grant(id="retire", capability="delete", table="product", objects=[SKU_1001]),
            Grant(id="void", capability="delete", table="purchase_order", objects=[1]))
    allowed(tenant, browser, "/inventory/products/SKU-1001/discontinue", {}, grant="retire")
    assert _product(tenant, SKU_1001)["status"] == "discontinued"
    blocked(tenant, browser, "/inventory/products/SKU-1004/discontinue", {})
    allowed(tenant, browser, "/inventory/purchase-orders/PO-5001/cancel", {}, grant="void")
    decision = blocked(tenant, browser, "/inventory/purchase-orders/PO-5002/cancel", {})
    assert decision.request.table == "purchase_order" and decision.request.object == 2


def test_stock_adjustments_and_receiving_goods_carry_no_decision(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant)  # no grant at all: a governed request would be blocked
    ungoverned(tenant, browser, "/inventory/products/SKU-1001/adjustments", {"quantity": "-2", "reason": "damaged"})
    ungoverned(tenant, browser, "/inventory/purchase-orders/PO-5001/receive",
               {"line": ["1", "2"], "received": ["60", "12"]})
