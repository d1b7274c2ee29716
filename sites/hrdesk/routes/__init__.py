"""The HR desk's router, assembled from one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from sites.hrdesk.routes import dashboard, employees, expenses, leave, messages


def build_router() -> APIRouter:
    """Every HR desk page, with paths relative to the `/hrdesk` mount point."""
    router = APIRouter()
    for module in (dashboard, employees, leave, expenses, messages):
        router.include_router(module.router)
    return router
