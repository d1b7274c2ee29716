"""`create_server_app`: the operator server, a FastAPI app of its own (the sites are another app), serving the JSON
API (api.py) and the pages (pages.py) over one `ServerState`. A `ServiceError` becomes its 4xx with the message; a
request that does not validate, a 422 naming the field; nothing a request can send makes a 5xx but a bug."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.types import Scope

from computerops.core.problems import problems_of
from computerops.server import api, pages
from computerops.server.auth import TokenRequired
from computerops.server.head import HeadAsGet, serves
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
    generated = app.openapi

    def openapi() -> dict[str, Any]:
        return app.openapi_schema or api.json_refusals_of_streams(generated())

    app.openapi = openapi  # type: ignore[method-assign]
    if settings.token is not None:
        app.add_middleware(TokenRequired, token=settings.token)
    app.add_middleware(SameOrigin, loopback=is_loopback(settings.host))  # before the token is looked at
    app.add_middleware(HeadAsGet, routes=lambda: app.router.routes)  # outermost: a HEAD is guarded as its GET
    app.include_router(api.router)
    app.include_router(pages.router)

    @app.exception_handler(ServiceError)
    async def refused(request: Request, exc: ServiceError) -> Response:
        return JSONResponse({"detail": exc.message}, status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        """A request that does not validate: 422 with one line naming each field, as every refusal reads."""
        return JSONResponse({"detail": problems_of(exc.errors(), skip_first=("body", "query", "path"))},
                            status_code=422)

    @app.exception_handler(HTTPException)
    async def not_routed(request: Request, exc: HTTPException) -> Response:
        """A path or method no route takes: OPTIONS answers which methods the path allows; a page path is answered
        with a page, an API path with JSON (as every API refusal is)."""
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            allowed = allowed_methods(app, request.scope)
            if request.method == "OPTIONS":
                return Response(status_code=204, headers={"Allow": ", ".join(allowed)})
            headers["Allow"] = ", ".join(allowed)
        message = (f"nothing is served at {request.url.path}" if exc.status_code == 404 else
                   f"{request.method} is not allowed here (allowed: {headers.get('Allow', '')})"
                   if exc.status_code == 405 else str(exc.detail))
        if request.url.path == "/api" or request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=exc.status_code, headers=headers)
        return pages.render("error.html", exc.status_code, message=message, headers=headers)

    return app


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """The methods some route takes at the request's path, with OPTIONS, and HEAD where GET is (head.py), sorted."""
    methods = {"OPTIONS"} | {m for m in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
                             if serves(app.router.routes, scope, m)}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)
