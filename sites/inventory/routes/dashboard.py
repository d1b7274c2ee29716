"""Dashboard and the stock adjustment history: the read-only overview pages."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import func
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse

from sites.inventory.lists import ALL, STOCK_REASONS, AdjustmentFilters, products_of
from sites.inventory.models import PO_OPEN_STATUSES, InventoryTable, Product, PurchaseOrder
from sites.inventory.pages import PREFIX
from sites.inventory.pages import page as show
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import paged

router = APIRouter()


def _count(session: Session, model: type[InventoryTable], *conditions: ColumnElement[bool]) -> int:
    """How many rows of `model` meet every condition (counted in the database: the tables hold hundreds)."""
    return int(session.exec(select(func.count()).select_from(model).where(*conditions)).one())


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Counts of products, of active products below their reorder point and of open purchase orders."""
    active = col(Product.status) == "active"
    counts = [
        ("Active products", _count(session, Product, active)),
        ("Discontinued products", _count(session, Product, col(Product.status) == "discontinued")),
        ("Active products below reorder point",
         _count(session, Product, active, col(Product.stock) < col(Product.reorder_point))),
        ("Open purchase orders", _count(session, PurchaseOrder, col(PurchaseOrder.status).in_(PO_OPEN_STATUSES))),
    ]
    return show(operation, "dashboard.html", title="Inventory", counts=counts)


@router.get("/adjustments", response_class=HTMLResponse)
def adjustments(
    session: SessionDep, operation: OperationDep, q: str = "", reason: str = ALL, page: str = ""
) -> HTMLResponse:
    """Stock adjustments newest first, a page at a time, with product, change, reason and reference: searched by
    the product's SKU or name or the reference, filtered by reason."""
    filters = AdjustmentFilters.read(q, reason)
    pages = paged(session, filters.statement(), page=page, path=f"{PREFIX}/adjustments", query=filters.query())
    return show(operation, "adjustments.html", title="Stock adjustments", pages=pages, filters=filters,
                reasons=(ALL, *STOCK_REASONS),
                products=products_of(session, {adjustment.product_id for adjustment in pages.rows}))
