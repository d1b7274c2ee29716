"""Serving an ASGI app on a free loopback port inside the running event loop, and binding browser contexts
to the tenants a sites app serves."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager

import uvicorn
from playwright.async_api import Browser, BrowserContext
from starlette.types import ASGIApp

from adapter.containment import contain
from adapter.scope import SiteScope


class EmbeddedServer(uvicorn.Server):
    """A uvicorn server inside a run: it never takes the process's signals. uvicorn's own `serve` installs handlers
    for SIGINT and SIGTERM that stop the server first: a Ctrl-C (or the operator server's cancel) then took the sites
    and the scripted endpoint away from the episodes in flight, and one was admitted with the outcome of a vanished
    site (an oracle episode as an honest failure). Without them the signal interrupts the run itself (asyncio's
    handler cancels it), and the servers stop last, with it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@asynccontextmanager
async def serve_app(app: ASGIApp, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """Run `app` with uvicorn on a free port of `host`; yields its origin, e.g. http://127.0.0.1:41234."""
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose protocol says TCP (and on the connections
    # they accept). Without it uvicorn's response, written as headers then body, waited on the client's delayed
    # ACK: about 40 ms per request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = EmbeddedServer(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off",
                                           access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()  # raises the start-up error
                raise RuntimeError("server stopped before it started")
            await asyncio.sleep(0.01)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def tenant_context(browser: Browser, origin: str, token: str, *, site_prefix: str) -> BrowserContext:
    """A new contained browser context (adapter/containment.py: nothing it does leaves `site_prefix` on `origin`)
    whose every request to the site reaches the tenant `token`, as each episode's does. The context's egress proxy
    binds each request by the tenant header: the browser holds no tenant cookie that page script could read,
    shadow or send elsewhere, and a binding the page set is taken out of its requests (computerops/core/binding.py)."""
    return await contain(browser, SiteScope(origin, site_prefix), base_url=origin, tenant=token)
