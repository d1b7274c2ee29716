"""The webmail's router, assembled from one module per job."""

from __future__ import annotations

from fastapi import APIRouter

from sites.webmail.routes import compose, contacts, mailbox


def build_router() -> APIRouter:
    """Every webmail page, with paths relative to the `/webmail` mount point."""
    router = APIRouter()
    for module in (mailbox, compose, contacts):
        router.include_router(module.router)
    return router
