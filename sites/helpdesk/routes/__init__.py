"""The helpdesk's router, assembled from one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from sites.helpdesk.routes import carrier, customers, dashboard, orders, tickets, work


def build_router() -> APIRouter:
    """Every helpdesk page, with paths relative to the `/helpdesk` mount point."""
    router = APIRouter()
    for module in (dashboard, tickets, orders, customers, work, carrier):
        router.include_router(module.router)
    return router
