"""The invoices site's router, assembled from one module per app of the portal."""

from __future__ import annotations

from fastapi import APIRouter

from sites.invoices.routes import calculator, email, notices, portal, records, search, spreadsheet, viewer


def build_router() -> APIRouter:
    """Every invoices page, with paths relative to the `/invoices` mount point."""
    router = APIRouter()
    for module in (portal, viewer, records, search, calculator, spreadsheet, email, notices):
        router.include_router(module.router)
    return router
