"""What the inventory's three lists hold for a search and filters: products, purchase orders, stock adjustments.

Each list's filters come from the query string as text; a value the list does not offer reads as "all" (never an
error). Search is a case-insensitive substring over what a person would search a list by (a product's SKU and
name; an order's number and supplier; an adjustment's product SKU, product name and reference). Filters are
equalities (stock "below reorder point" compares two columns), so a list narrowed by filters alone and shown on
one page is still a whole listing of its rows (`sites.kit.paging`), and a searched one is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from sites.inventory.models import (
    ADJUSTMENT_REASONS,
    CATEGORIES,
    PO_STATUSES,
    PRODUCT_STATUSES,
    Product,
    PurchaseOrder,
    StockAdjustment,
)

ALL = "all"
STOCK_FILTERS = {ALL: "all", "low": "below reorder point"}
"""The product list's stock filter: value → the text the page shows."""
STOCK_REASONS = (*ADJUSTMENT_REASONS, "received")
"""Every reason an adjustment can have."""


def _contains(column: Any, text: str) -> ColumnElement[bool]:
    """`column` holds `text`, ignoring case (`%` and `_` typed are plain characters)."""
    return func.lower(col(column)).contains(text.lower(), autoescape=True)


def _offered(value: str, options: tuple[str, ...]) -> str:
    return value if value in options else ALL


@dataclass(frozen=True)
class ProductFilters:
    """The product list's search and filters, each an offered value or "all"."""

    search: str = ""
    category: str = ALL
    stock: str = ALL
    status: str = ALL

    @classmethod
    def read(cls, search: str, category: str, stock: str, status: str) -> ProductFilters:
        return cls(search=search.strip(), category=_offered(category, CATEGORIES),
                   stock=_offered(stock, tuple(STOCK_FILTERS)), status=_offered(status, PRODUCT_STATUSES))

    def query(self) -> dict[str, str]:
        """The list's parameters as its page links keep them ("all" left out)."""
        return _kept({"q": self.search, "category": self.category, "stock": self.stock, "status": self.status})

    def statement(self) -> SelectOfScalar[Product]:
        """The matching products by SKU."""
        statement = select(Product).order_by(col(Product.sku))
        if self.search:
            statement = statement.where(or_(_contains(Product.sku, self.search), _contains(Product.name, self.search)))
        if self.category != ALL:
            statement = statement.where(Product.category == self.category)
        if self.stock == "low":
            statement = statement.where(col(Product.stock) < col(Product.reorder_point))
        if self.status != ALL:
            statement = statement.where(Product.status == self.status)
        return statement


@dataclass(frozen=True)
class OrderFilters:
    """The purchase order list's search and filters."""

    search: str = ""
    status: str = ALL
    supplier: str = ALL

    @classmethod
    def read(cls, session: Session, search: str, status: str, supplier: str) -> OrderFilters:
        return cls(search=search.strip(), status=_offered(status, PO_STATUSES),
                   supplier=_offered(supplier, suppliers(session)))

    def query(self) -> dict[str, str]:
        return _kept({"q": self.search, "status": self.status, "supplier": self.supplier})

    def statement(self) -> SelectOfScalar[PurchaseOrder]:
        """The matching orders, newest (highest number) first."""
        statement = select(PurchaseOrder).order_by(col(PurchaseOrder.number).desc())
        if self.search:
            statement = statement.where(or_(_contains(PurchaseOrder.number, self.search),
                                            _contains(PurchaseOrder.supplier, self.search)))
        if self.status != ALL:
            statement = statement.where(PurchaseOrder.status == self.status)
        if self.supplier != ALL:
            statement = statement.where(PurchaseOrder.supplier == self.supplier)
        return statement


@dataclass(frozen=True)
class AdjustmentFilters:
    """The stock adjustment list's search and reason filter."""

    search: str = ""
    reason: str = ALL

    @classmethod
    def read(cls, search: str, reason: str) -> AdjustmentFilters:
        return cls(search=search.strip(), reason=_offered(reason, STOCK_REASONS))

    def query(self) -> dict[str, str]:
        return _kept({"q": self.search, "reason": self.reason})

    def statement(self) -> SelectOfScalar[StockAdjustment]:
        """The matching adjustments, newest first."""
        statement = select(StockAdjustment).order_by(col(StockAdjustment.created_at).desc(),
                                                     col(StockAdjustment.id).desc())
        if self.search:
            statement = statement.join(Product, col(Product.id) == col(StockAdjustment.product_id)).where(
                or_(_contains(Product.sku, self.search), _contains(Product.name, self.search),
                    _contains(StockAdjustment.reference, self.search)))
        if self.reason != ALL:
            statement = statement.where(StockAdjustment.reason == self.reason)
        return statement


def suppliers(session: Session) -> tuple[str, ...]:
    """Every supplier with a purchase order, alphabetical."""
    found = session.exec(select(PurchaseOrder.supplier).distinct().order_by(col(PurchaseOrder.supplier)))
    return tuple(found)


def products_of(session: Session, ids: set[int]) -> dict[int, Product]:
    """The products with these ids, keyed by id (a list page's rows name a page's worth of products, not all)."""
    if not ids:
        return {}
    found = session.exec(select(Product).where(col(Product.id).in_(sorted(ids))))
    return {product.id: product for product in found if product.id is not None}


def _kept(values: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in values.items() if value and value != ALL}
