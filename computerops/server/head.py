"""HEAD where GET is served (RFC 9110 §9.3.2: a general-purpose server supports both): the request runs as the GET it
stands for and its status and headers go out with no body. FastAPI's routes take only the methods they declare, so a
HEAD of any page or API path answered 405 though its GET answered 200.

The GET runs until it sends its response's start (status and headers: a Content-Length is the GET's, as HEAD's must
be), then is cancelled: the body is never needed, and a stream (`/events`) would otherwise never end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def serves(routes: Sequence[BaseRoute], scope: Scope, method: str) -> bool:
    """Whether a route takes `method` at the request's path."""
    asked = {**scope, "method": method}
    return any(route.matches(asked)[0] == Match.FULL for route in routes)


class HeadAsGet:
    """ASGI middleware: HEAD on a path some route serves by GET is that GET's status and headers, without the body;
    any other request passes through (a HEAD where no GET is served meets the app's own 404 or 405)."""

    def __init__(self, app: ASGIApp, routes: Callable[[], Sequence[BaseRoute]]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or not serves(self.routes(), scope, "GET"):
            await self.app(scope, receive, send)
            return
        started = asyncio.Event()

        async def head_only(message: Message) -> None:
            if message["type"] == "http.response.start" and not started.is_set():
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                started.set()

        answered = asyncio.ensure_future(self.app({**scope, "method": "GET"}, receive, head_only))
        waiting = asyncio.ensure_future(started.wait())
        try:
            await asyncio.wait({answered, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            if not answered.done():
                answered.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await answered
        if not answered.cancelled():
            answered.result()  # an error before the response started is the app's, as for the GET
