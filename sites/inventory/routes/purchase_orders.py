"""Purchase order list, details, receiving goods (the only way stock is "received") and cancelling."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session
from starlette.responses import HTMLResponse, Response

from sites.inventory.lists import ALL, OrderFilters, products_of, suppliers
from sites.inventory.models import PO_STATUSES, PurchaseOrder
from sites.inventory.pages import PREFIX, not_found, order_by_number
from sites.inventory.pages import page as show
from sites.inventory.stock import lines_of, parse_integer, receive, refusal_for_cancelling, refusal_for_receiving
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged

router = APIRouter()

_NOTICES = Notices({"received": "Goods received.", "cancelled": "Purchase order cancelled."})


@router.get("/purchase-orders", response_class=HTMLResponse)
def order_list(
    session: SessionDep, operation: OperationDep, q: str = "", status: str = ALL, supplier: str = ALL, page: str = ""
) -> HTMLResponse:
    """Purchase orders newest first, a page at a time, with supplier, status and dates: searched by number or
    supplier, filtered by status and supplier."""
    filters = OrderFilters.read(session, q, status, supplier)
    pages = paged(session, filters.statement(), page=page, path=f"{PREFIX}/purchase-orders", query=filters.query())
    return show(operation, "purchase_orders.html", title="Purchase orders", pages=pages, filters=filters,
                statuses=(ALL, *PO_STATUSES), suppliers=(ALL, *suppliers(session)))


def _order_page(
    session: Session, operation: OperationContext, order: PurchaseOrder, *, status: int = 200, **context: Any
) -> HTMLResponse:
    lines = lines_of(session, order)
    defaults: dict[str, Any] = {
        "notice": None,
        "receive_error": None,
        "cancel_error": None,
        "typed": {line.id: str(line.quantity - line.received_quantity) for line in lines},
    }
    return show(
        operation,
        "purchase_order.html",
        status=status,
        title=f"Purchase order {order.number}",
        order=order,
        lines=lines,
        products=products_of(session, {line.product_id for line in lines}),
        **{**defaults, **context},
    )


@router.get("/purchase-orders/{number}", response_class=HTMLResponse)
def order_detail(
    number: str, session: SessionDep, operation: OperationDep, received: str = "", cancelled: str = ""
) -> HTMLResponse:
    """A purchase order's lines with the receiving form; 404 for an unknown number."""
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Purchase order {number}")
    notice = _NOTICES.pick(received=received, cancelled=cancelled)
    return _order_page(session, operation, order, notice=notice)


@router.post("/purchase-orders/{number}/receive", response_model=None)
def receive_order(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    line: Annotated[list[str] | None, Form()] = None,
    received: Annotated[list[str] | None, Form()] = None,
) -> Response:
    """Books the received quantity of each outstanding line: stock rises through this procedure only.

    `line` and `received` are parallel lists (line id, typed quantity); a line not sent counts as 0.
    Any rule broken → 422 naming it, and no change.
    """
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Purchase order {number}")
    typed_by_line = dict(zip(line or [], received or [], strict=False))
    lines = lines_of(session, order)
    products = products_of(session, {item.product_id for item in lines})
    entries = [(item, products[item.product_id], typed_by_line.get(str(item.id), "0")) for item in lines]
    refusal = refusal_for_receiving(order, entries, operation.shown)
    if refusal is not None:
        typed = {item.id: text for item, _product, text in entries}
        return _order_page(session, operation, order, status=422, receive_error=refusal, typed=typed)
    counted = [(item, product, parse_integer(text) or 0) for item, product, text in entries]
    receive(session, order, counted, operation.clock.text())
    return RedirectResponse(f"{PREFIX}/purchase-orders/{order.number}?received=1", status_code=303)


@router.post("/purchase-orders/{number}/cancel", response_model=None)
def cancel_order(number: str, session: SessionDep, operation: OperationDep) -> Response:
    """Cancels an open purchase order with nothing received yet; otherwise 422 and no change."""
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Purchase order {number}")
    refusal = refusal_for_cancelling(order, operation.shown)
    if refusal is not None:
        return _order_page(session, operation, order, status=422, cancel_error=refusal)
    order.status = "cancelled"
    session.add(order)
    return RedirectResponse(f"{PREFIX}/purchase-orders/{order.number}?cancelled=1", status_code=303)
