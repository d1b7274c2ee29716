"""The token a server bound beyond loopback requires: `Authorization: Bearer TOKEN` on API requests, a login cookie
on pages. The cookie holds an HMAC of the token, never the token; every comparison takes constant time."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp

COOKIE = "computerops_session"
OPEN_PATHS = ("/login", "/static/")
"""Paths served without the token: the login page and the pages' style sheet."""


def session_value(token: str) -> str:
    """What the login cookie holds for `token`."""
    return hmac.new(token.encode("utf-8"), b"computerops-server-session", hashlib.sha256).hexdigest()


def token_matches(token: str, given: str) -> bool:
    return hmac.compare_digest(token.encode("utf-8"), given.encode("utf-8"))


class TokenRequired(BaseHTTPMiddleware):
    """Refuse every request without the token: 401 with a JSON message for the API, a redirect to /login for pages."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        super().__init__(app)
        self.token = token
        self.session = session_value(token)

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        path = request.url.path
        if path.startswith(OPEN_PATHS) or self.allowed(request):
            return await call_next(request)
        if path.startswith("/api/") or path in ("/openapi.json", "/docs"):
            return JSONResponse({"detail": "this server requires its token: Authorization: Bearer TOKEN"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return RedirectResponse(f"/login?next={quote(path)}", status_code=303)

    def allowed(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and given and token_matches(self.token, given.strip()):
            return True
        cookie = request.cookies.get(COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode("utf-8"), self.session.encode("utf-8"))
