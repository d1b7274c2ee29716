"""Two guards every local web service needs against the browser it serves: a request that changes anything must come
from the server's own pages (a page on another site can make the browser POST a form to 127.0.0.1, and the form's
launch would run), and a server bound to loopback answers only to loopback host names (else a site whose name is
made to resolve to 127.0.0.1, DNS rebinding, could read the API from its own pages)."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1", "testserver"})
"""Host names a loopback-bound server answers to (`testserver`: Starlette's test client)."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _host_name(host: str) -> str:
    """`host` of a Host header without its port (`[::1]:8700` → `[::1]`)."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class SameOrigin(BaseHTTPMiddleware):
    """Refuse (403) a changing request whose Origin is another site's, a CORS preflight from another site, and on
    loopback a request for another host."""

    def __init__(self, app: ASGIApp, loopback: bool) -> None:
        super().__init__(app)
        self.loopback = loopback

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        host = request.headers.get("host", "")
        if self.loopback and _host_name(host.lower()) not in LOOPBACK_NAMES:
            return JSONResponse({"detail": f"this server answers to loopback names only, not {host[:100]!r}"},
                                status_code=403)
        origin = request.headers.get("origin")
        if (request.method == "OPTIONS" and "access-control-request-method" in request.headers
                and (origin is None or urlsplit(origin).netloc.lower() != host.lower())):
            # A CORS preflight: another site's page asking to call this server. Refused in words (a 204 without
            # CORS headers would fail in the browser with no reason given).
            return JSONResponse({"detail": f"cross-origin requests are not served (from {str(origin)[:100]!r}): "
                                           "use this server's own pages, or a client that sends no Origin"},
                                status_code=403)
        if request.method not in SAFE_METHODS and origin is not None and origin != "null":
            if urlsplit(origin).netloc.lower() != host.lower():
                return JSONResponse({"detail": f"a request from {origin[:100]!r} may not change anything here: use "
                                               "this server's own pages or a client without an Origin"},
                                    status_code=403)
        elif request.method not in SAFE_METHODS and origin == "null":
            return JSONResponse({"detail": "a request from an opaque origin may not change anything here"},
                                status_code=403)
        return await call_next(request)
