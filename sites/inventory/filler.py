"""The inventory's volume: hundreds of seed-dependent products, purchase orders and stock adjustments around the
fixed records, drawn only from the seed's generator.

What the filler keeps true, so that every task about the fixed records means what it meant:
- it never refers to a fixed product: its purchase order lines and adjustments are of filler products only, so a
  fixed product's history, open orders and stock are the fixed ones;
- no filler product is in Fasteners or Paint (tasks treat each as a whole category of five);
- no active filler product is below its reorder point (the fixed five are the answer to "which active products
  are below it"); discontinued ones may be;
- every product's stock is its last adjustment's `stock_after`, and no adjustment takes stock below zero.

Look-alikes: products named like a fixed product but for a letter, a number or a suffix (`vocabulary.LOOK_ALIKES`),
products listed twice under two SKUs (an old discontinued SKU and its active replacement), purchase orders
PO-4001 … numbered one digit away from the fixed PO-5001 …, and pairs of open orders from one supplier for the same
products a few days apart.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sites.inventory.vocabulary import (
    BRANDS,
    FILLER_CATEGORIES,
    LOOK_ALIKES,
    PRODUCT_LINES,
    REORDER_POINTS,
    SUPPLIERS,
)

FILLER_PRODUCTS = (500, 540)
"""How many filler products a seed draws (inclusive range): with the 24 fixed ones, at least 524."""
FILLER_ORDERS = (150, 190)
HAND_ADJUSTMENTS = (220, 280)
TWIN_PRODUCTS = 12
"""Products listed twice: a discontinued SKU and its active replacement of the same name."""
TWIN_ORDERS = 6
"""Open purchase orders that have a near-duplicate from the same supplier a few days later."""
FIRST_FILLER_ORDER_NUMBER = 4001
"""Filler orders are older than the fixed PO-5001 …, numbered in the order they were placed."""
START = datetime(2025, 9, 1)
END = datetime(2026, 2, 11)
"""Filler dates fall between these days: before the fixed records' February and the site's clock (2026-03-02)."""
RECENT = datetime(2026, 1, 15)
"""Orders placed after this are mostly still open; older ones mostly received."""
HAND_REASONS = (("count correction", 40), ("damaged", 30), ("returned", 20), ("lost", 10))
ORDER_QUANTITIES = (5, 6, 10, 12, 20, 24, 25, 30, 40, 50, 60, 100)


Row = dict[str, Any]


@dataclass
class Filler:
    """Rows to insert, as column values with their ids."""

    products: list[Row] = field(default_factory=list)
    orders: list[Row] = field(default_factory=list)
    lines: list[Row] = field(default_factory=list)
    adjustments: list[Row] = field(default_factory=list)


def _moment(rng: random.Random, start: datetime, end: datetime) -> datetime:
    """A working-hours time between two days (08:00–17:55, on five minutes)."""
    day = start + timedelta(days=rng.randrange(max(1, (end - start).days)))
    return day.replace(hour=rng.randint(8, 17), minute=5 * rng.randrange(12))


def _text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _price(rng: random.Random, low: int, high: int, percent: int = 100) -> int:
    """A shelf price in cents between `low` and `high` (scaled by `percent`), ending in 0 or 9 cents."""
    cents = max(99, rng.randint(low, high) * percent // 100)
    return cents - cents % 10 + rng.choice((0, 9, 9))


def _after_brand(stem: str) -> str:
    """A line's name after a brand: `Wood glue` → `wood glue`, but `LED batten` stays."""
    return stem if stem[:2].isupper() else stem[0].lower() + stem[1:]


def _stock(rng: random.Random, status: str, reorder_point: int) -> int:
    """Stock of a product: active ones at or above their reorder point, discontinued ones anywhere near it."""
    if status == "active":
        return reorder_point + rng.randint(0, 2 * reorder_point + 30)
    return rng.randint(0, reorder_point + 3)


def _product(rng: random.Random, name: str, category: str, price: int, status: str) -> Row:
    reorder_point = rng.choice(REORDER_POINTS)
    return {"name": name, "category": category, "price_cents": price, "stock": _stock(rng, status, reorder_point),
            "reorder_point": reorder_point, "status": status}


def _products(rng: random.Random, fixed_prices: Mapping[int, int]) -> list[Row]:
    """The filler's products in SKU order (without ids): drawn lines and brands, look-alikes of the fixed products,
    and twins."""
    pool = [(brand, percent, stem, variant, low, high, category)
            for category in FILLER_CATEGORIES for stem, variants, low, high in PRODUCT_LINES[category]
            for variant in variants for brand, percent in BRANDS]
    rng.shuffle(pool)
    count = rng.randint(*FILLER_PRODUCTS) - len(LOOK_ALIKES) - TWIN_PRODUCTS
    drawn: list[Row] = []
    for brand, percent, stem, variant, low, high, category in pool[:count]:
        name = f"{brand} {_after_brand(stem)} {variant}" if brand else f"{stem} {variant}"
        status = "discontinued" if rng.random() < 0.08 else "active"
        drawn.append(_product(rng, name, category, _price(rng, low, high, percent), status))
    for name, category, resembles in LOOK_ALIKES:
        fixed = fixed_prices[resembles]
        drawn.append(_product(rng, name, category, _price(rng, fixed * 85 // 100, fixed * 115 // 100), "active"))
    twins = []
    for original in rng.sample(drawn[:count], TWIN_PRODUCTS):
        original["status"] = "discontinued"  # the old SKU, replaced by a new one of the same name
        price = original["price_cents"] + rng.choice((-50, 0, 50, 100, 150))
        twins.append(_product(rng, original["name"], original["category"], max(99, price), "active"))
    products = drawn + twins
    rng.shuffle(products)
    return products


@dataclass
class _Order:
    created: datetime
    category: str
    supplier: str
    status: str
    lines: list[tuple[int, int, int]]
    """(product id, quantity, received quantity)."""
    received: datetime | None = None


def _status(rng: random.Random, created: datetime) -> str:
    weights = ((55, 20, 20, 5) if created >= RECENT else (0, 6, 84, 10))
    return rng.choices(("open", "partially received", "received", "cancelled"), weights)[0]


def _lines(rng: random.Random, status: str, candidates: list[int]) -> list[tuple[int, int, int]]:
    """An order's lines with what was received of each: all of it, none, or (partially received) some."""
    chosen = rng.sample(candidates, min(len(candidates), rng.choice((1, 1, 2, 2, 2, 3, 3, 4))))
    quantities = [rng.choice(ORDER_QUANTITIES) for _ in chosen]
    received = [quantity if status == "received" else 0 for quantity in quantities]
    if status == "partially received":  # some arrived, not all: the first line half, the others all or nothing
        received = [quantities[0] // 2] + [q if rng.random() < 0.5 else 0 for q in quantities[1:]]
    return list(zip(chosen, quantities, received, strict=True))


def _orders(rng: random.Random, products: Mapping[int, Row]) -> list[_Order]:
    """Filler purchase orders in the order they were placed, with near-duplicate open pairs."""
    by_category: dict[tuple[str, bool], list[int]] = defaultdict(list)
    for product_id, product in products.items():
        by_category[(product["category"], False)].append(product_id)
        if product["status"] == "active":  # only active products are still ordered
            by_category[(product["category"], True)].append(product_id)
    orders = []
    for _ in range(rng.randint(*FILLER_ORDERS) - TWIN_ORDERS):
        created = _moment(rng, START, END)
        category = rng.choice(FILLER_CATEGORIES)
        status = _status(rng, created)
        lines = _lines(rng, status, by_category[(category, status in ("open", "partially received"))])
        arrived = any(received for _, _, received in lines)
        received = _moment(rng, created + timedelta(days=2), created + timedelta(days=14)) if arrived else None
        orders.append(_Order(created, category, rng.choice(SUPPLIERS[category]), status, lines, received))
    open_orders = [order for order in orders if order.status == "open"]
    for order in rng.sample(open_orders, min(TWIN_ORDERS, len(open_orders))):
        twin_lines = [(product_id, quantity + rng.choice((-5, 5, 10)) if quantity > 5 else quantity + 5, 0)
                      for product_id, quantity, _ in order.lines]
        orders.append(_Order(order.created + timedelta(days=rng.randint(1, 3)), order.category, order.supplier,
                             "open", twin_lines))
    return sorted(orders, key=lambda order: order.created)


def _hand_adjustments(rng: random.Random, product_ids: list[int]) -> list[tuple[datetime, int, int, str]]:
    """Adjustments made by hand: (time, product id, quantity, reason)."""
    reasons = [reason for reason, _ in HAND_REASONS]
    weights = [weight for _, weight in HAND_REASONS]
    made = []
    for _ in range(rng.randint(*HAND_ADJUSTMENTS)):
        reason = rng.choices(reasons, weights)[0]
        quantity = {"damaged": -rng.randint(1, 5), "lost": -rng.randint(1, 3), "returned": rng.randint(1, 4),
                    "count correction": rng.choice((-6, -4, -3, -2, -1, 1, 2, 3, 5))}[reason]
        made.append((_moment(rng, START, END), rng.choice(product_ids), quantity, reason))
    return made


def _settle_stock(products: Mapping[int, Row], adjustments: list[Row]) -> None:
    """Fills each adjustment's `stock_after` backwards from its product's stock (the last one ends at it), raising a
    product's stock where its history would otherwise have gone below zero."""
    history: dict[int, list[Row]] = defaultdict(list)
    for adjustment in adjustments:
        history[adjustment["product_id"]].append(adjustment)
    for product_id, rows in history.items():
        product = products[product_id]
        lowest, after = product["stock"], product["stock"]
        for row in reversed(rows):
            after -= row["quantity"]
            lowest = min(lowest, after)
        product["stock"] += max(0, -lowest)
        after = product["stock"]
        for row in reversed(rows):
            row["stock_after"] = after
            after -= row["quantity"]


def draw_filler(rng: random.Random, *, fixed_prices: Mapping[int, int], first_ids: Mapping[str, int]) -> Filler:
    """The seed's filler rows. `fixed_prices` are the fixed products' prices by id (look-alikes are priced near
    them); `first_ids` the first free id of each table (`product`, `purchase_order`, `purchase_order_line`,
    `stock_adjustment`)."""
    filler = Filler()
    products: dict[int, Row] = {}
    for product_id, product in enumerate(_products(rng, fixed_prices), first_ids["product"]):
        products[product_id] = {"id": product_id, "sku": f"SKU-{1000 + product_id}", **product}
    filler.products = list(products.values())
    moves: list[tuple[datetime, int, int, str, str]] = []
    line_id = first_ids["purchase_order_line"]
    for number, order in enumerate(_orders(rng, products)):
        order_id = first_ids["purchase_order"] + number
        code = f"PO-{FIRST_FILLER_ORDER_NUMBER + number}"
        filler.orders.append({"id": order_id, "number": code, "supplier": order.supplier, "status": order.status,
                              "created_at": _text(order.created),
                              "received_at": None if order.received is None else _text(order.received)})
        for product_id, quantity, received in order.lines:
            filler.lines.append({"id": line_id, "purchase_order_id": order_id, "product_id": product_id,
                                 "quantity": quantity, "received_quantity": received})
            line_id += 1
            if received and order.received is not None:
                moves.append((order.received, product_id, received, "received", code))
    moves += [(moment, product_id, quantity, reason, "")
              for moment, product_id, quantity, reason in _hand_adjustments(rng, list(products))]
    moves.sort(key=lambda move: (move[0], move[1]))
    filler.adjustments = [
        {"id": adjustment_id, "product_id": product_id, "quantity": quantity, "reason": reason,
         "reference": reference, "stock_after": 0, "created_at": _text(moment)}
        for adjustment_id, (moment, product_id, quantity, reason, reference)
        in enumerate(moves, first_ids["stock_adjustment"])
    ]
    _settle_stock(products, filler.adjustments)
    return filler
