"""Dashboard and the stock adjustment history: the read-only overview pages."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.inventory.models import PO_OPEN_STATUSES, Product, PurchaseOrder, StockAdjustment
from sites.inventory.pages import page, products_by_id
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.shown import listed

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def dashboard(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Counts of products, of active products below their reorder point and of open purchase orders."""
    products = list(session.exec(select(Product)))
    orders = list(session.exec(select(PurchaseOrder)))
    counts = [
        ("Active products", sum(product.status == "active" for product in products)),
        ("Discontinued products", sum(product.status == "discontinued" for product in products)),
        (
            "Active products below reorder point",
            sum(product.status == "active" and product.stock < product.reorder_point for product in products),
        ),
        ("Open purchase orders", sum(order.status in PO_OPEN_STATUSES for order in orders)),
    ]
    return page(operation, "dashboard.html", title="Inventory", counts=counts)


@router.get("/adjustments", response_class=HTMLResponse)
def adjustments(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every stock adjustment, oldest first, with its product, change, reason and reference."""
    rows = listed(session, select(StockAdjustment).order_by(col(StockAdjustment.id)))
    return page(operation, "adjustments.html", title="Stock adjustments", adjustments=rows,
                products=products_by_id(session))
