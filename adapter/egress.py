"""The network fence of a contained browser context: a loopback HTTP proxy that forwards only requests for pages of
the site under test and refuses everything else, so nothing the browser sends reaches another origin.

Playwright's routing (adapter/containment.py) sees the requests pages make, but it lets the hops of a redirect go
without asking, and requests it cannot tie to a frame (a prerender, a service worker's script); the browser sends
every HTTP request of the context, those included, through this proxy (Playwright proxies loopback too). The proxy
forwards one request per connection to the site's own origin (never anywhere else), with `Connection: close` both
ways so a connection can never carry a second request past the check, and bytes otherwise unchanged. It refuses:
any URL outside the site (adapter/scope.py), speculative loads (prefetch, prerender), service worker scripts, and
every CONNECT tunnel (WebSockets and https; the sites use neither). In a context bound to a tenant, the proxy binds
every request it forwards to that tenant by the tenant header, which page content can neither read, set nor shadow:
a tenant cookie or header that page script set is taken out of the request, and the attempt reported like a
refusal (computerops/core/binding.py), so a page can neither move the agent to another tenant nor lock it out of its
own. Everything refused gets `403`; a refused
navigation (most often the hop of a redirect) gets a short page that says so, which loads like any page: a
navigation left without a document could leave a page that was still loading never to finish (Chromium fires no
DOMContentLoaded for a document whose parsing a navigation stopped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from ada_url import parse_url

from adapter.scope import SiteScope
from computerops.core.binding import TENANT_HEADER, tenant_bindings, without_bindings
from computerops.core.vocabulary import DISPLAYED_DESTINATIONS

HEAD_LIMIT = 64 * 1024
"""Largest request or response head read; a larger one is refused."""
UPSTREAM_TIMEOUT_S = 10.0
NAVIGATION_DESTINATIONS = DISPLAYED_DESTINATIONS
"""`Sec-Fetch-Dest` values of requests that load a document into a page or frame."""
WORKER_DESTINATIONS = frozenset({"serviceworker", "sharedworker"})
_HOP_BY_HOP = frozenset({
    "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer",
    "upgrade",
})


@dataclass(frozen=True)
class RefusedRequest:
    """A request the proxy refused: what the browser sent of it, and why."""

    method: str
    url: str
    headers: dict[str, str]
    """The request's headers, names lower-case."""
    reason: str
    binding: bool = False
    """Not refused but cleaned: it carried a tenant binding the page set, which was taken out before forwarding."""
    oversized: bool = False
    """Its head was over HEAD_LIMIT (page script's cookies, as a rule): answered 431, never forwarded."""

    @property
    def destination(self) -> str:
        """The `Sec-Fetch-Dest` the browser gave it ("" when none)."""
        return self.headers.get("sec-fetch-dest", "")


def _speculative(headers: dict[str, str]) -> bool:
    return "prefetch" in headers.get("sec-purpose", "") or "prefetch" in headers.get("purpose", "")


_BINDING_REMOVED = ("it carried a tenant binding the page set (a tenant cookie or header), taken out: the harness "
                    "binds every request of the episode to its tenant itself")

_OVERSIZED = (f"its head was over {HEAD_LIMIT // 1024} KiB (cookies page script set, as a rule); answered 431, and "
              "every cookie page script can set (not HttpOnly) was removed so that the next request goes through")

OVERSIZED_PAGE = ("<!doctype html><title>Request too large</title><h1>Request too large</h1><p>The request carried "
                  "more than the site accepts (cookies set by the page's script). Those cookies were removed: try "
                  "again.</p>")
"""What a navigation refused for the size of its head shows."""

BLOCKED_PAGE = ("<!doctype html><title>Blocked</title><h1>Blocked</h1><p>This address is not part of the site under "
                "test, so nothing was loaded from it. Use back or navigate to return to the site.</p>")
"""What a refused navigation shows (at the refused address, which the page then has)."""


def _response(status: str, body: bytes = b"", content_type: str = "text/plain") -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nContent-Type: {content_type}; charset=utf-8\r\n"
            "X-ComputerOps-Blocked: containment\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def _pairs(lines: list[str]) -> list[tuple[str, str]]:
    """A request head's header lines as (name, value)."""
    return [(name, value) for name, _, value in (line.partition(":") for line in lines)]


def _close_headers(lines: list[str]) -> list[str]:
    """Header lines without the hop-by-hop headers (and those the Connection header names), plus `Connection:
    close`."""
    named = {token.strip().lower() for line in lines if line.lower().startswith("connection:")
             for token in line.split(":", 1)[1].split(",")}
    kept = [line for line in lines if line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP | named]
    return [*kept, "Connection: close"]


class EgressProxy:
    """The proxy of one contained context: `await start()` gives the address to pass as the context's proxy;
    every refusal is passed to `on_refused`; `await close()` stops it and ends its connections."""

    def __init__(self, scope: SiteScope, on_refused: Callable[[RefusedRequest], None], *,
                 tenant: str | None = None) -> None:
        parts = parse_url(scope.origin, attributes=("protocol", "hostname", "port"))
        if parts["protocol"] != "http:":
            raise ValueError(f"the egress proxy fences http origins only, not {scope.origin}")
        self.scope = scope
        self.on_refused = on_refused
        self._tenant = tenant
        """The token every forwarded request is bound to (None: requests go as the browser sent them)."""
        self._upstream = (str(parts["hostname"]), int(parts["port"] or 80))
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen on a free loopback port; the proxy's address, e.g. `http://127.0.0.1:40001`."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=HEAD_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        """Stop listening and end every open connection."""
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass  # the browser or the site hung up, or sent what no HTTP peer sends: this connection ends
        finally:
            self._connections.discard(task)
            writer.close()
            with suppress(OSError):
                await writer.wait_closed()

    def _refusal(self, method: str, url: str, headers: dict[str, str]) -> str | None:
        """Why the proxy refuses this request, or None to forward it."""
        if method == "CONNECT":
            return "a tunnel (a WebSocket or an https connection); the site uses neither"
        if headers.get("sec-fetch-dest", "") in WORKER_DESTINATIONS or "service-worker" in headers:
            return "a service worker script; workers that outlive the page are not allowed"
        if _speculative(headers):
            return "a speculative load (prefetch or prerender)"
        return self.scope.problem(url)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n"))[:-4].decode("latin-1")
        except asyncio.LimitOverrunError:  # a head over HEAD_LIMIT: refused and reported, never dropped unsaid
            await self._refuse_oversized(reader, writer)
            return
        request_line, *lines = head.split("\r\n")
        words = request_line.split(" ")
        if len(words) != 3:
            writer.write(_response("400 Bad Request"))
            return
        method, target, version = words
        headers = {name.strip().lower(): value.strip()
                   for name, _, value in (line.partition(":") for line in lines)}
        url = f"connect://{target}" if method == "CONNECT" else target
        reason = self._refusal(method, url, headers)
        if reason is not None:
            self.on_refused(RefusedRequest(method=method, url=url, headers=headers, reason=reason))
            navigation = headers.get("sec-fetch-dest", "") in NAVIGATION_DESTINATIONS
            writer.write(_response("403 Forbidden", BLOCKED_PAGE.encode(), "text/html") if navigation
                         else _response("403 Forbidden", b"blocked"))
            await writer.drain()
            return
        if self._tenant is not None and tenant_bindings(_pairs(lines)):
            self.on_refused(RefusedRequest(method=method, url=url, headers=headers, reason=_BINDING_REMOVED,
                                           binding=True))
            lines = [f"{name}:{value}" for name, value in without_bindings(_pairs(lines))]
        await self._forward(method, target, version, lines, reader, writer)

    async def _refuse_oversized(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A request whose head is over HEAD_LIMIT: what a server does (431), and the report of it, with the start
        of its head (its request line and headers, as far as they were read)."""
        start, _, rest = (await reader.read(HEAD_LIMIT)).decode("latin-1").partition("\r\n")
        words = start.split(" ")
        method, url = (words[0], words[1]) if len(words) == 3 else ("", "")
        headers = {name.strip().lower(): value.strip()
                   for name, _, value in (line.partition(":") for line in rest.split("\r\n")[:-1])}
        self.on_refused(RefusedRequest(method=method, url=url, headers=headers, reason=_OVERSIZED, oversized=True))
        navigation = headers.get("sec-fetch-dest", "") in NAVIGATION_DESTINATIONS
        writer.write(_response("431 Request Header Fields Too Large", OVERSIZED_PAGE.encode(), "text/html")
                     if navigation else _response("431 Request Header Fields Too Large", b"too large"))
        await writer.drain()

    async def _forward(self, method: str, target: str, version: str, lines: list[str],
                       reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parts = parse_url(target, attributes=("pathname", "search"))
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self._upstream, limit=HEAD_LIMIT), UPSTREAM_TIMEOUT_S)
        except (OSError, TimeoutError):
            writer.write(_response("502 Bad Gateway", b"the site did not answer"))
            await writer.drain()
            return
        try:
            bound = [] if self._tenant is None else [f"{TENANT_HEADER}: {self._tenant}"]
            head = [f"{method} {parts['pathname']}{parts['search']} {version}", *_close_headers(lines), *bound]
            upstream_writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            upload = asyncio.create_task(_pipe(reader, upstream_writer))
            try:
                await self._relay_response(upstream_reader, writer)
            finally:
                upload.cancel()
                await asyncio.gather(upload, return_exceptions=True)
        finally:
            upstream_writer.close()
            with suppress(OSError):
                await upstream_writer.wait_closed()

    @staticmethod
    async def _relay_response(upstream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The site's response to the browser: interim (1xx) heads as they are, the final head with `Connection:
        close`, then the body until the site closes the connection."""
        while True:
            status_line, *lines = (await upstream.readuntil(b"\r\n\r\n"))[:-4].decode("latin-1").split("\r\n")
            status = status_line.split(" ", 2)[1] if status_line.count(" ") >= 1 else ""
            interim = status.startswith("1") and status != "101"
            head = [status_line, *(lines if interim else _close_headers(lines))]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            if not interim:
                break
        await _pipe(upstream, writer)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(65536):
        writer.write(chunk)
        await writer.drain()
