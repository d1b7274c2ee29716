"""A local HTTP server for the fixture pages in tests/fixtures/pages/, shared by the browser tests.

Pages are served under `/site/`; `/site/submit` echoes a GET form's fields, `/site/api/ping`
answers "pong", a POST to `/site/slow` redirects to `/site/submit` after 0.7 s, and
`/elsewhere/page.html` is a page off the site. Every request is recorded with its
`X-ComputerOps-Action` header (and its `Idempotency-Key`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from playwright.async_api import Browser

from adapter.containment import contain
from adapter.driver import PageDriver
from adapter.observation import Control, Observation
from adapter.scope import SiteScope

PAGES = Path(__file__).parent / "fixtures" / "pages"


@dataclass
class FixtureSite:
    origin: str
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    """(method, path with query, X-ComputerOps-Action header) of every request, in order."""
    keys: list[tuple[str, str | None]] = field(default_factory=list)
    """(path with query, Idempotency-Key header) of every request, in order."""

    def tagged(self, path_start: str) -> list[str | None]:
        return [tag for _, path, tag in self.requests if path.startswith(path_start)]

    def keyed(self, path_start: str) -> list[str | None]:
        return [key for path, key in self.keys if path.startswith(path_start)]


def fixture_handler(site: FixtureSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

        def _send(self, status: int, body: str, content_type: str = "text/html", **headers: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", f"{content_type}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> str:
            site.requests.append((self.command, self.path, self.headers.get("X-ComputerOps-Action")))
            site.keys.append((self.path, self.headers.get("Idempotency-Key")))
            return urlsplit(self.path).path

        def do_GET(self) -> None:
            path = self._record()
            if path == "/site/submit":
                items = "".join(f"<li>{k}: {v}</li>" for k, v in parse_qsl(urlsplit(self.path).query))
                self._send(200, f"<title>Submitted</title><h1>Submitted</h1><ul>{items}</ul>")
            elif path == "/site/api/ping":
                self._send(200, "pong", "text/plain")
            elif path.startswith("/site/") and (PAGES / path.removeprefix("/site/")).is_file():
                self._send(200, (PAGES / path.removeprefix("/site/")).read_text(encoding="utf-8"))
            elif path == "/elsewhere/page.html":
                self._send(200, "<title>Elsewhere</title><p>Not the site</p>")
            else:
                self._send(404, "<title>Not found</title><p>Not found</p>")

        def do_POST(self) -> None:
            path = self._record()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            if path == "/site/slow":
                time.sleep(0.7)  # the driver must wait for this navigation to finish
                self._send(303, "", Location=f"/site/submit?{body}")
            else:
                self._send(404, "<title>Not found</title>")

    return Handler


@contextmanager
def serve_fixture_site() -> Iterator[FixtureSite]:
    """The fixture server on a free loopback port, for the duration of the block."""
    fixture_site = FixtureSite(origin="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), fixture_handler(fixture_site))
    fixture_site.origin = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fixture_site
    finally:
        server.shutdown()
        server.server_close()


@asynccontextmanager
async def fixture_driver(browser: Browser, site: FixtureSite, *, max_chars: int = 6000) -> AsyncIterator[PageDriver]:
    """A driver on a page of its own contained browser context (adapter/containment.py), for the fixture site."""
    context = await contain(browser, SiteScope(site.origin, "/site/"))
    try:
        page = await context.new_page()
        yield PageDriver(page, origin=site.origin, site_prefix="/site/", max_chars=max_chars)
    finally:
        await context.close()


async def open_page(driver: PageDriver, name: str) -> Observation:
    """Load a fixture page (and its frames and scripts), let it settle as after an action (its opening
    animations included), and observe it."""
    await driver.page.goto(f"{driver.origin}/site/{name}", wait_until="load")
    await driver.settle()
    return await driver.observe()


def named(observation: Observation, name: str, role: str | None = None) -> Control:
    """The one control of that name (and role); fails the test when there is not exactly one."""
    found = [c for c in observation.controls if c.name == name and (role is None or c.role == role)]
    assert len(found) == 1, f"expected one control {name!r}, found {found}"
    return found[0]
