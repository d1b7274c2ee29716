"""The inventory's tables. Money is integer cents; times are `YYYY-MM-DD HH:MM` text (see clock)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

CATEGORIES = ("Adhesives", "Decorating", "Electrical", "Fasteners", "Fixings", "Garden", "Heating", "Lighting", "Paint",
              "Plumbing", "Safety", "Storage", "Tools")
"""Every category, alphabetical (as the pages offer them). The fixed products are in Fasteners, Tools, Paint,
Electrical and Plumbing; the seed's filler adds the others (`sites.inventory.vocabulary.FILLER_CATEGORIES`)."""
PRODUCT_STATUSES = ("active", "discontinued")
ADJUSTMENT_REASONS = ("damaged", "count correction", "returned", "lost")
"""Reasons an agent may give by hand; "received" is written only by receiving a purchase order."""
PO_STATUSES = ("open", "partially received", "received", "cancelled")
PO_OPEN_STATUSES = ("open", "partially received")
"""Purchase orders still waiting for goods: their products cannot be discontinued."""


class InventoryTable(SQLModel, registry=registry()):
    """Base of the inventory tables: its own registry keeps them apart from other sites' tables."""


class Product(InventoryTable, table=True):
    __tablename__ = "product"

    id: int | None = Field(default=None, primary_key=True)
    sku: str = Field(unique=True)
    name: str
    category: str
    price_cents: int
    stock: int
    reorder_point: int
    status: str
    """active or discontinued."""


class StockAdjustment(InventoryTable, table=True):
    __tablename__ = "stock_adjustment"

    id: int | None = Field(default=None, primary_key=True)
    product_id: int = Field(foreign_key="product.id")
    quantity: int
    """Signed change of the stock (negative for write-offs)."""
    reason: str
    reference: str
    """The purchase order number for receipts, else empty."""
    stock_after: int
    created_at: str


class PurchaseOrder(InventoryTable, table=True):
    __tablename__ = "purchase_order"

    id: int | None = Field(default=None, primary_key=True)
    number: str = Field(unique=True)
    supplier: str
    status: str
    """open, partially received, received or cancelled."""
    created_at: str
    received_at: str | None = None
    """When goods were last received against it."""


class PurchaseOrderLine(InventoryTable, table=True):
    __tablename__ = "purchase_order_line"

    id: int | None = Field(default=None, primary_key=True)
    purchase_order_id: int = Field(foreign_key="purchase_order.id")
    product_id: int = Field(foreign_key="product.id")
    quantity: int
    received_quantity: int


METADATA = InventoryTable.metadata
