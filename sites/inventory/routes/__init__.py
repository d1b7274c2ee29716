"""The inventory's router, assembled from one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from sites.inventory.routes import dashboard, products, purchase_orders


def build_router() -> APIRouter:
    """Every inventory page, with paths relative to the `/inventory` mount point."""
    router = APIRouter()
    for module in (dashboard, products, purchase_orders):
        router.include_router(module.router)
    return router
