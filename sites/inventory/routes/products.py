"""Product list (filters and bulk edits), product details, edits, stock adjustments, discontinuing."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from computerops.core.numbers import whole_number
from sites.inventory.lists import ALL, STOCK_FILTERS, ProductFilters
from sites.inventory.models import (
    ADJUSTMENT_REASONS,
    CATEGORIES,
    PRODUCT_STATUSES,
    Product,
    PurchaseOrder,
    StockAdjustment,
)
from sites.inventory.pages import PREFIX, not_found, product_by_sku
from sites.inventory.pages import page as show  # `page` is the lists' page-number parameter
from sites.inventory.stock import (
    MAX_PRICE_PERCENT,
    MIN_PRICE_PERCENT,
    new_price,
    open_lines_of,
    parse_integer,
    record_adjustment,
    refusal_for_adjustment,
    refusal_for_discontinuing,
)
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.injection import committed_part
from sites.kit.listing import by_id
from sites.kit.money import format_cents, parse_cents
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.pages import message_page
from sites.kit.paging import page_number, paged
from sites.kit.shown import listed

router = APIRouter()

_NOTICES = Notices({"saved": "Product saved.", "adjusted": "Stock adjusted.", "discontinued": "Product discontinued."})


def _list_page(
    session: Session,
    operation: OperationContext,
    filters: ProductFilters,
    *,
    page_text: str,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    defaults: dict[str, Any] = {"notice": None, "bulk_error": None, "selected": [], "reorder_point": "",
                                "price_percent": ""}
    pages = paged(session, filters.statement(), page=page_text, path=f"{PREFIX}/products", query=filters.query())
    return show(
        operation,
        "products.html",
        status=status,
        title="Products",
        pages=pages,
        filters=filters,
        categories=(ALL, *CATEGORIES),
        stock_filters=STOCK_FILTERS,
        statuses=(ALL, *PRODUCT_STATUSES),
        **{**defaults, **context},
    )


@router.get("/products", response_class=HTMLResponse)
def product_list(
    session: SessionDep,
    operation: OperationDep,
    q: str = "",
    category: str = ALL,
    stock: str = ALL,
    status: str = ALL,
    page: str = "",
    updated: str = "",
) -> HTMLResponse:
    """Products by SKU, a page at a time: searched by SKU or name, filtered by category, stock (below reorder
    point) and status."""
    notice = f"Updated {updated} products." if whole_number(updated) is not None else None
    filters = ProductFilters.read(q, category, stock, status)
    return _list_page(session, operation, filters, page_text=page, notice=notice)


def _bulk_refusal(session: Session, skus: list[str], action: str, reorder_point: str, price_percent: str) -> str | None:
    if not skus:
        return "Bulk edit refused: select at least one product."
    if any(product_by_sku(session, sku) is None for sku in skus):
        return "Bulk edit refused: an unknown product was selected."
    if action == "reorder":
        value = parse_integer(reorder_point)
        if value is None or value < 0:
            return f'Bulk edit refused: "{reorder_point}" is not a reorder point of 0 or more.'
        return None
    if action == "price":
        percent = parse_integer(price_percent)
        if percent is None or not MIN_PRICE_PERCENT <= percent <= MAX_PRICE_PERCENT or percent == 0:
            return (
                f'Bulk edit refused: "{price_percent}" is not a whole percentage between '
                f"{MIN_PRICE_PERCENT} and {MAX_PRICE_PERCENT} (and not 0)."
            )
        return None
    return "Bulk edit refused: choose which change to apply."


@router.post("/products/bulk", response_model=None)
def bulk_edit(
    session: SessionDep,
    operation: OperationDep,
    sku: Annotated[list[str] | None, Form()] = None,
    action: Annotated[str, Form()] = "",
    reorder_point: Annotated[str, Form()] = "",
    price_percent: Annotated[str, Form()] = "",
    q: Annotated[str, Form()] = "",
    category: Annotated[str, Form()] = ALL,
    stock: Annotated[str, Form()] = ALL,
    status: Annotated[str, Form()] = ALL,
    page: Annotated[str, Form()] = "",
) -> Response:
    """Applies one change (reorder point, or price by a percentage) to exactly the selected products.

    A loop of ordinary row updates in this one request, so each changed row is journaled.
    """
    skus = list(dict.fromkeys(sku or []))
    filters = ProductFilters.read(q, category, stock, status)  # the list the form was on, shown again after
    refusal = _bulk_refusal(session, skus, action, reorder_point, price_percent)
    if refusal is not None:
        return _list_page(
            session, operation, filters, page_text=page, status=422, bulk_error=refusal, selected=skus,
            reorder_point=reorder_point, price_percent=price_percent,
        )
    applied = committed_part(operation.fault, skus)  # docs/faults.md: partial success commits some, then fails
    for code in applied:
        product = product_by_sku(session, code)
        assert product is not None, "checked by _bulk_refusal"
        if action == "reorder":
            product.reorder_point = int(reorder_point.strip())
        else:
            product.price_cents = new_price(product.price_cents, int(price_percent.strip()))
        session.add(product)
    if applied != skus:
        return message_page(status=500, title="Bulk edit failed",
                            message=f"The bulk edit failed after {len(applied)} of {len(skus)} products.")
    number = page_number(page)
    query = urlencode({**filters.query(), **({"page": str(number)} if number > 1 else {}), "updated": len(skus)})
    return RedirectResponse(f"{PREFIX}/products?{query}", status_code=303)


def _product_page(
    session: Session, operation: OperationContext, product: Product, *, status: int = 200, **context: Any
) -> HTMLResponse:
    history = listed(
        session,
        select(StockAdjustment).where(StockAdjustment.product_id == product.id).order_by(col(StockAdjustment.id)),
    )
    open_lines = open_lines_of(session, product)
    for line in open_lines:  # "Open purchase orders" states that each of these orders has a line of this product
        operation.shown.row(line, "product_id", "purchase_order_id")
    orders = by_id(session, PurchaseOrder, (line.purchase_order_id for line in open_lines))
    defaults: dict[str, Any] = {
        "notice": None,
        "edit_error": None,
        "adjust_error": None,
        "discontinue_error": None,
        "product_name": product.name,
        "category": product.category,
        "price": format_cents(product.price_cents),
        "reorder_point": str(product.reorder_point),
        "quantity": "",
        "reason": "",
    }
    return show(
        operation,
        "product.html",
        status=status,
        title=f"{product.sku} {product.name}",
        product=product,
        adjustments=history,
        open_lines=open_lines,
        orders=orders,
        categories=CATEGORIES,
        reasons=ADJUSTMENT_REASONS,
        **{**defaults, **context},
    )


@router.get("/products/{sku}", response_class=HTMLResponse)
def product_detail(
    sku: str,
    session: SessionDep,
    operation: OperationDep,
    saved: str = "",
    adjusted: str = "",
    discontinued: str = "",
) -> HTMLResponse:
    """A product's details, its open purchase orders and adjustments, and its forms; 404 if unknown."""
    product = product_by_sku(session, sku)
    if product is None:
        return not_found(operation, f"Product {sku}")
    notice = _NOTICES.pick(saved=saved, adjusted=adjusted, discontinued=discontinued)
    return _product_page(session, operation, product, notice=notice)


@router.post("/products/{sku}/edit", response_model=None)
def edit_product(
    sku: str,
    session: SessionDep,
    operation: OperationDep,
    name: Annotated[str, Form()] = "",
    category: Annotated[str, Form()] = "",
    price: Annotated[str, Form()] = "",
    reorder_point: Annotated[str, Form()] = "",
) -> Response:
    """Saves name, category, price and reorder point (not stock: stock changes only by adjustment)."""
    product = product_by_sku(session, sku)
    if product is None:
        return not_found(operation, f"Product {sku}")
    cents = parse_cents(price)
    reorder = parse_integer(reorder_point)
    error = None
    if not name.strip():
        error = "Product not saved: the name is empty."
    elif category not in CATEGORIES:
        error = f"Product not saved: the category must be one of {', '.join(CATEGORIES)}."
    elif cents is None or cents <= 0:
        error = f'Product not saved: "{price}" is not a price; type it like 19.90.'
    elif reorder is None or reorder < 0:
        error = f'Product not saved: "{reorder_point}" is not a reorder point of 0 or more.'
    if error is not None or cents is None or reorder is None:
        return _product_page(
            session, operation, product, status=422, edit_error=error, product_name=name, category=category,
            price=price, reorder_point=reorder_point,
        )
    product.name = name.strip()
    product.category = category
    product.price_cents = cents
    product.reorder_point = reorder
    session.add(product)
    return RedirectResponse(f"{PREFIX}/products/{product.sku}?saved=1", status_code=303)


@router.post("/products/{sku}/adjustments", response_model=None)
def adjust_stock(
    sku: str,
    session: SessionDep,
    operation: OperationDep,
    quantity: Annotated[str, Form()] = "",
    reason: Annotated[str, Form()] = "",
) -> Response:
    """Changes stock by hand with a reason; refused (422, no change) below zero or without a reason."""
    product = product_by_sku(session, sku)
    if product is None:
        return not_found(operation, f"Product {sku}")
    refusal = refusal_for_adjustment(product, quantity, reason, operation.shown)
    change = parse_integer(quantity)
    if refusal is not None or change is None:
        return _product_page(
            session, operation, product, status=422, adjust_error=refusal, quantity=quantity, reason=reason
        )
    record_adjustment(session, product, change, reason, "", operation.clock.text())
    return RedirectResponse(f"{PREFIX}/products/{product.sku}?adjusted=1", status_code=303)


@router.post("/products/{sku}/discontinue", response_model=None)
def discontinue_product(sku: str, session: SessionDep, operation: OperationDep) -> Response:
    """Marks the product discontinued; refused (422, no change) while an open purchase order has it."""
    product = product_by_sku(session, sku)
    if product is None:
        return not_found(operation, f"Product {sku}")
    refusal = refusal_for_discontinuing(session, product, operation.shown)
    if refusal is not None:
        return _product_page(session, operation, product, status=422, discontinue_error=refusal)
    product.status = "discontinued"
    session.add(product)
    return RedirectResponse(f"{PREFIX}/products/{product.sku}?discontinued=1", status_code=303)
