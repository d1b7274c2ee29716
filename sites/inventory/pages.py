"""Rendering and look-ups shared by the inventory's routes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse

from sites.inventory.models import Product, PurchaseOrder
from sites.kit.operation import OperationContext
from sites.kit.pages import PageRenderer

RENDERER = PageRenderer(Path(__file__).parent / "templates")
PREFIX = "/inventory"


def page(operation: OperationContext, name: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """An inventory page: the shared layout with nav and the operation's logical time ("Now: ...")."""
    return RENDERER.page(name, status=status, now=operation.clock.text(), **context)


def not_found(operation: OperationContext, what: str) -> HTMLResponse:
    """The inventory's 404 page, naming what was looked for."""
    return page(operation, "not_found.html", status=404, title="Not found", message=f"{what} was not found.")


def product_by_sku(session: Session, sku: str) -> Product | None:
    """The product with this SKU (e.g. SKU-1007), or None."""
    return session.exec(select(Product).where(Product.sku == sku)).first()


def order_by_number(session: Session, number: str) -> PurchaseOrder | None:
    """The purchase order numbered `number` (e.g. PO-5002), or None."""
    return session.exec(select(PurchaseOrder).where(PurchaseOrder.number == number)).first()


def products_by_id(session: Session) -> dict[int, Product]:
    """Every product keyed by id, for tables that show SKUs."""
    return {product.id: product for product in session.exec(select(Product).order_by(col(Product.id)))
            if product.id is not None}
