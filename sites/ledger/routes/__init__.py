"""The ledger's router, assembled from one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from sites.ledger.routes import checkpoints, dashboard, deliveries, dock_moves, entries, events, write_offs


def build_router() -> APIRouter:
    """Every ledger page, with paths relative to the `/ledger` mount point."""
    router = APIRouter()
    for module in (dashboard, events, deliveries, entries, checkpoints, dock_moves, write_offs):
        router.include_router(module.router)
    return router
