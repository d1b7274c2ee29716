"""The stock rules: adjustments by hand, receiving purchase orders, discontinuing, bulk edits.

The rules are enforced here, on the server: stock never goes below zero, "received" stock only
comes from receiving a purchase order (never more than is still outstanding), and a product
that open purchase orders still wait for cannot be discontinued. Every function changes rows
through the caller's journaled session; a refusal is returned as text and changes nothing.
"""

from __future__ import annotations

import re

from sqlmodel import Session, col, select

from sites.inventory.models import (
    ADJUSTMENT_REASONS,
    PO_OPEN_STATUSES,
    Product,
    PurchaseOrder,
    PurchaseOrderLine,
    StockAdjustment,
)
from sites.kit.shown import ShownRecorder, listed

_INTEGER = re.compile(r"^[+-]?\d{1,6}$")
MAX_PRICE_PERCENT = 100
"""Bulk price changes are whole percentages between -90 and +100."""
MIN_PRICE_PERCENT = -90


def parse_integer(text: str) -> int | None:
    """An integer typed as `12`, `-3` or `+5`; None when it is not one."""
    text = text.strip()
    return int(text) if _INTEGER.match(text) else None


def record_adjustment(
    session: Session, product: Product, quantity: int, reason: str, reference: str, now: str
) -> StockAdjustment:
    """Changes the product's stock by `quantity` and records the adjustment (caller checked the rules)."""
    assert product.id is not None, "a stored product has an id"
    product.stock += quantity
    session.add(product)
    adjustment = StockAdjustment(
        product_id=product.id,
        quantity=quantity,
        reason=reason,
        reference=reference,
        stock_after=product.stock,
        created_at=now,
    )
    session.add(adjustment)
    return adjustment


def refusal_for_adjustment(
    product: Product, quantity_text: str, reason: str, shown: ShownRecorder | None = None
) -> str | None:
    """Why this hand adjustment may not be made, or None. A refusal that states the product's stock records it as
    shown (`shown`)."""
    quantity = parse_integer(quantity_text)
    if quantity is None:
        return f'Adjustment refused: "{quantity_text}" is not a whole number; type it like -3 or 5.'
    if quantity == 0:
        return "Adjustment refused: the quantity change must not be 0."
    if reason not in ADJUSTMENT_REASONS:
        return f"Adjustment refused: the reason must be one of {', '.join(ADJUSTMENT_REASONS)}."
    if product.stock + quantity < 0:
        if shown is not None:
            shown.row(product, "sku", "stock")
        return (
            f"Adjustment refused: {product.sku} has {product.stock} in stock; "
            f"a change of {quantity} would take it below zero."
        )
    return None


def open_orders_of(session: Session, product: Product) -> list[PurchaseOrder]:
    """Open or partially received purchase orders with a line for this product, by number."""
    query = (
        select(PurchaseOrder)
        .join(PurchaseOrderLine, col(PurchaseOrderLine.purchase_order_id) == col(PurchaseOrder.id))
        .where(PurchaseOrderLine.product_id == product.id)
        .where(col(PurchaseOrder.status).in_(PO_OPEN_STATUSES))
        .order_by(col(PurchaseOrder.number))
    )
    return list(session.exec(query))


def open_lines_of(session: Session, product: Product) -> list[PurchaseOrderLine]:
    """This product's lines on open or partially received purchase orders, by order number: a product's page names
    each line's order. (Not a whole list of the product's lines: the order's status filters them.)"""
    query = (
        select(PurchaseOrderLine)
        .join(PurchaseOrder, col(PurchaseOrderLine.purchase_order_id) == col(PurchaseOrder.id))
        .where(PurchaseOrderLine.product_id == product.id)
        .where(col(PurchaseOrder.status).in_(PO_OPEN_STATUSES))
        .order_by(col(PurchaseOrder.number), col(PurchaseOrderLine.id))
    )
    return list(session.exec(query))


def refusal_for_discontinuing(session: Session, product: Product, shown: ShownRecorder | None = None) -> str | None:
    """Why the product may not be discontinued (already is, or open orders wait for it), or None. A refusal states
    the product's status, or the open orders' numbers and that they are open, and records them as shown (`shown`)."""
    if product.status == "discontinued":
        if shown is not None:
            shown.row(product, "sku", "status")
        return f"{product.sku} is already discontinued."
    orders = open_orders_of(session, product)
    if orders:
        if shown is not None:
            shown.row(product, "sku")
            for order in orders:
                shown.row(order, "number", "status")
        numbers = ", ".join(order.number for order in orders)
        return f"Discontinue refused: {product.sku} is on open purchase order {numbers}."
    return None


def lines_of(session: Session, order: PurchaseOrder) -> list[PurchaseOrderLine]:
    """The order's lines in id order (a purchase order's page shows them all)."""
    query = select(PurchaseOrderLine).where(PurchaseOrderLine.purchase_order_id == order.id)
    return listed(session, query.order_by(col(PurchaseOrderLine.id)))


def refusal_for_receiving(
    order: PurchaseOrder, quantities: list[tuple[PurchaseOrderLine, Product, str]], shown: ShownRecorder | None = None
) -> str | None:
    """Why these received quantities (line, product, typed quantity) may not be booked, or None. A refusal that
    states the order's status or a line's outstanding quantity records those columns as shown (`shown`)."""
    if order.status not in PO_OPEN_STATUSES:
        if shown is not None:
            shown.row(order, "number", "status")
        return f"Receiving refused: purchase order {order.number} is {order.status}."
    total = 0
    for line, product, text in quantities:
        quantity = parse_integer(text)
        outstanding = line.quantity - line.received_quantity
        if quantity is None or quantity < 0:
            return f'Receiving refused: "{text}" for {product.sku} is not a whole number of 0 or more.'
        if quantity > outstanding:
            if shown is not None:
                shown.row(line, "quantity", "received_quantity")
                shown.row(product, "sku")
                shown.row(order, "number")
            return f"Receiving refused: only {outstanding} of {product.sku} are still outstanding on {order.number}."
        total += quantity
    if total == 0:
        return "Receiving refused: enter a received quantity for at least one line."
    return None


def receive(
    session: Session, order: PurchaseOrder, quantities: list[tuple[PurchaseOrderLine, Product, int]], now: str
) -> None:
    """Books received goods: line quantities, stock (one "received" adjustment per line) and order status."""
    for line, product, quantity in quantities:
        if quantity == 0:
            continue
        line.received_quantity += quantity
        session.add(line)
        record_adjustment(session, product, quantity, "received", order.number, now)
    complete = all(line.received_quantity >= line.quantity for line, _product, _quantity in quantities)
    order.status = "received" if complete else "partially received"
    order.received_at = now
    session.add(order)


def refusal_for_cancelling(order: PurchaseOrder, shown: ShownRecorder | None = None) -> str | None:
    """Why the order may not be cancelled (only open orders with nothing received can be), or None. A refusal
    states the order's status and records it as shown (`shown`)."""
    if order.status != "open":
        if shown is not None:
            shown.row(order, "number", "status")
        return f"Cancel refused: purchase order {order.number} is {order.status}."
    return None


def new_price(cents: int, percent: int) -> int:
    """The price after a change of `percent` percent, rounded half up to whole cents."""
    return (cents * (100 + percent) + 50) // 100
