"""`create_server_app`: the operator server, a FastAPI app of its own (the sites are another app), serving the JSON
API (api.py) and the pages (pages.py) over one `ServerState`. A `ServiceError` becomes its 4xx with the message; a
request that does not validate, a 422 naming the field; nothing a request can send makes a 5xx but a bug."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from computerops.server import api, pages
from computerops.server.auth import TokenRequired
from computerops.server.origin import SameOrigin
from computerops.server.settings import ServerSettings, is_loopback
from computerops.server.state import ServerState
from computerops.service.errors import ServiceError


def create_server_app(settings: ServerSettings, state: ServerState | None = None) -> FastAPI:
    """The operator server over `settings` (its runs folder, index and token); `state` given, that one is used
    (tests share one), else one is started with the app and closed (its jobs interrupted) when the app stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = state is None
        app.state.server = ServerState.start(settings) if own else state
        try:
            yield
        finally:
            if own:
                app.state.server.close()

    app = FastAPI(title="ComputerOps operator server", version="1",
                  description="Launch and watch runs, read reports and episodes step by step, compare runs. "
                              "Every number is computed from the run directories (docs/server.md).",
                  lifespan=lifespan)
    if state is not None:
        app.state.server = state
    if settings.token is not None:
        app.add_middleware(TokenRequired, token=settings.token)
    app.add_middleware(SameOrigin, loopback=is_loopback(settings.host))  # outermost: before the token is looked at
    app.include_router(api.router)
    app.include_router(pages.router)

    @app.exception_handler(ServiceError)
    async def refused(request: Request, exc: ServiceError) -> Response:
        return JSONResponse({"detail": exc.message}, status_code=exc.http_status)

    return app
