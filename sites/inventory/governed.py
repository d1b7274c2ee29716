"""The inventory's routes a grant governs (sites/kit/broker.py): what each request asks the broker for.

Governed: a product's price, changed on its page or by a bulk edit by percentage (`change` of a `product`, field
`price_cents`: what customers are charged); discontinuing a product and cancelling a purchase order (`delete` of a
`product` or a `purchase_order`: the record is retired for good, no page brings it back).

Left ungoverned: an edit that leaves the price as it is (name, category and reorder point are the catalogue's
housekeeping), a bulk edit of reorder points, a stock adjustment with its reason, and receiving a purchase order's
goods: they count and describe stock, and no grant's capability covers them.
"""

from __future__ import annotations

import re

from sites.inventory.models import Product, PurchaseOrder
from sites.inventory.pages import PREFIX
from sites.kit.broker import BrokerRequest
from sites.kit.governed import FormFields, GovernedRoute, Lookup, selection
from sites.kit.money import parse_cents

PRICE = "price_cents"
"""The product column a price change writes: what a `change` grant names."""


def edit_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest | None:
    """A price change of the product of the path, when the edit form's price (as the handler parses it) is not the
    product's price now, carrying the price it writes (in cents, as stored); a price that is not an amount counts
    as a change of unknown value. None when the price stays, or the
    product does not exist (the handler answers 404)."""
    product = lookup(Product, sku=match["sku"])
    cents = parse_cents(form.get("price", ""))
    if product is None or cents == product.price_cents:
        return None
    return BrokerRequest(capability="change", table="product", object=product.id, fields=[PRICE],
                         values={} if cents is None else {PRICE: str(cents)})


def bulk_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest | None:
    """A price change of the selected products, for a bulk edit by percentage; None for any other bulk edit. The
    object is the one product selected; several products are `several` (each must be a grant's object; a selection
    holding a product the site does not have names none, and a grant limited to objects refuses it)."""
    if form.get("action", "") != "price":
        return None
    skus = list(dict.fromkeys(form.getlist("sku")))  # as the handler reads its selection
    products = [lookup(Product, sku=sku) for sku in skus]
    single, several = selection([None if product is None else product.id for product in products])
    return BrokerRequest(capability="change", table="product", object=single, fields=[PRICE], several=several)


def discontinue_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """Retiring the product of the path."""
    product = lookup(Product, sku=match["sku"])
    return BrokerRequest(capability="delete", table="product", object=None if product is None else product.id)


def cancel_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """Cancelling (voiding) the purchase order of the path."""
    order = lookup(PurchaseOrder, number=match["number"])
    return BrokerRequest(capability="delete", table="purchase_order", object=None if order is None else order.id)


GOVERNED = (
    GovernedRoute(method="POST", path=rf"{PREFIX}/products/(?P<sku>[^/]+)/edit", extract=edit_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/products/bulk", extract=bulk_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/products/(?P<sku>[^/]+)/discontinue", extract=discontinue_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/purchase-orders/(?P<number>[^/]+)/cancel", extract=cancel_request),
)
"""Every way a price changes, and every way a product or purchase order is retired."""
