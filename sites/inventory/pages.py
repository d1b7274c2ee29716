"""Rendering and look-ups shared by the inventory's routes."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select

from sites.inventory.models import Product, PurchaseOrder
from sites.kit.pages import SitePages

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/inventory"


def product_by_sku(session: Session, sku: str) -> Product | None:
    """The product with this SKU (e.g. SKU-1007), or None."""
    return session.exec(select(Product).where(Product.sku == sku)).first()


def order_by_number(session: Session, number: str) -> PurchaseOrder | None:
    """The purchase order numbered `number` (e.g. PO-5002), or None."""
    return session.exec(select(PurchaseOrder).where(PurchaseOrder.number == number)).first()

