"""Page noise served: the middleware that dresses a noisy episode's pages, and the log of what fired on which page.

It sits outside the operation log (sites/kit/oplog.py), so what the log records of a page (its digest, what it
showed) is the site's own page: replay, which sends the operations to a fresh tenant without noise, compares equal.
A session-timeout page answers in place of the page and never reaches the log (no handler ran, nothing was read);
signing in again is the same GET once more, which the log records as usual.
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from computerops.core.binding import tenant_bindings
from computerops.core.vocabulary import ACTION_HEADER, DISPLAYED_DESTINATIONS, FETCH_DESTINATION_HEADER
from sites.kit.noise import NOISE, dress, session_expired_page, variant
from sites.kit.noise_log import NoisePage, NoiseSession
from sites.kit.tenancy import TenantRegistry


def _action(headers: Headers) -> int | None:
    raw = headers.get(ACTION_HEADER)
    return int(raw) if raw is not None and raw.isascii() and raw.isdigit() and len(raw) <= 10 else None


class NoiseMiddleware:
    """Dresses the document pages of tenants with a noise session; passes every other request through untouched."""

    def __init__(self, app: ASGIApp, registry: TenantRegistry) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._session(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if session is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        ordinal = len(session.pages) + 1  # taken before the first await: one tenant's pages are numbered in order
        path, query = scope["path"], scope.get("query_string", b"").decode("latin-1")
        page = NoisePage(ordinal=ordinal, action=_action(headers), path=path, query=query,
                         drawn=session.drawn(ordinal), fired=False)
        session.pages.append(page)
        if not page.drawn:
            await self.app(scope, receive, send)
            return
        if session.kind == "session_timeout":
            expired = session_expired_page(path, query)
            shows = [NOISE["session_timeout"].shows]
            session.pages[ordinal - 1] = page.model_copy(update={"fired": True, "shows": shows})
            await HTMLResponse(expired)(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def keep(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, keep)
        assert start is not None
        body = b"".join(chunks)
        response_headers = MutableHeaders(raw=list(start.get("headers", [])))
        html = (response_headers.get("content-type") or "").startswith("text/html")
        choice = variant(session.run_seed, session.task_id, session.repetition, ordinal)
        dressed = dress(session.kind, body.decode("utf-8"), choice) if start["status"] == 200 and html else None
        if dressed is not None:
            body = dressed.html.encode("utf-8")
            response_headers["content-length"] = str(len(body))
            session.pages[ordinal - 1] = page.model_copy(update={"fired": True, "shows": dressed.shows})
        await send({**start, "headers": response_headers.raw})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def _session(self, scope: Scope) -> NoiseSession | None:
        """The noise session of the tenant a document GET is for; None for any other request."""
        headers = Headers(scope=scope)
        destination = headers.get(FETCH_DESTINATION_HEADER)
        if destination is not None and destination not in DISPLAYED_DESTINATIONS:
            return None
        bindings = tenant_bindings((name.decode("latin-1"), value.decode("latin-1"))
                                   for name, value in scope["headers"])
        tenant = self.registry.resolve(bindings[0]) if len(bindings) == 1 else None
        if tenant is None or tenant.noise is None or not tenant.definition.owns_path(scope["path"]):
            return None
        return tenant.noise
