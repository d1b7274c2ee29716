"""The sites server: every registered site mounted under `/{name}`, behind the operation log."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse

from computerops.core.binding import TENANT_COOKIE, TENANT_HEADER
from sites.kit.noise_layer import NoiseMiddleware
from sites.kit.oplog import OperationLogMiddleware
from sites.kit.pages import KIT_PAGES, message_page
from sites.kit.tenancy import TenantRegistry


async def _http_error_page(_request: Request, error: Exception) -> Response:
    """HTTP errors as small HTML pages (agents read pages, not JSON)."""
    assert isinstance(error, StarletteHTTPException)
    page = message_page(status=error.status_code, title=f"Error {error.status_code}", message=str(error.detail))
    page.headers.update(error.headers or {})
    return page


def _redirect_to(path: str) -> Callable[[], Response]:
    def redirect() -> Response:
        return RedirectResponse(path, status_code=303)

    return redirect


def create_app(registry: TenantRegistry, *, database_in_thread: bool = True, site: str | None = None) -> FastAPI:
    """An app serving the registry's sites; no engine or tenant exists until the registry makes one.
    `database_in_thread=False` (replay's): the operation log's own database calls, and the sites' sync handlers,
    run in place, not in worker threads. `site` (replay's): only that site's pages are routed; a request under
    another site's mount point is still logged and refused by the operation log, which knows every site (the
    router tries each route in turn, so one site's routes instead of all is the cheaper match)."""
    app = FastAPI(title="ComputerOps sites", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.registry = registry
    routed = registry.sites.values() if site is None else [registry.site(site)]
    for site_definition in routed:
        app.include_router(site_definition.router(), prefix=site_definition.prefix)
        # The bare mount point redirects to a relative start page (not Starlette's absolute URL).
        app.add_api_route(site_definition.prefix, _redirect_to(site_definition.start_path), methods=["GET"],
                          include_in_schema=False)
    app.add_middleware(OperationLogMiddleware, registry=registry, database_in_thread=database_in_thread)
    app.add_middleware(NoiseMiddleware, registry=registry)  # outside the log: it records the site's own pages
    app.add_exception_handler(StarletteHTTPException, _http_error_page)

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        sites = sorted(registry.sites.values(), key=lambda site: site.name)
        return KIT_PAGES.page("kit/index.html", sites=sites, cookie=TENANT_COOKIE, header=TENANT_HEADER)

    @app.get("/_enter/{code}", response_model=None)
    def enter(code: str) -> Response:
        tenant = registry.redeem(code)
        if tenant is None:
            return message_page(
                status=403, title="Unknown entry code",
                message="This entry code is not known to this server, or it was used already: each enters once.")
        site = registry.site(tenant.site)
        response = RedirectResponse(site.start_path, status_code=303)
        # Only the tenant's own site ever gets the token: scoped to its path, never sent from another site's page.
        response.set_cookie(TENANT_COOKIE, tenant.token, httponly=True, samesite="strict", path=site.prefix)
        return response

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        return JSONResponse({"ok": True})

    return app
