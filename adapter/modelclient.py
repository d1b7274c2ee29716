"""The model client of a run: the openai client whose every reply is read within `reply.MAX_REPLY_BYTES` decoded
bytes, whatever the endpoint sends.

The openai SDK reads a whole body before anyone can look at its size (a raw response, and the body of every error
status), so the bound sits beneath it, in the client's transport (`BoundedTransport`): each response's body is read
there in decoded pieces (httpx2 inflates gzip, deflate and the rest in pieces of at most 1 MiB) through
`reply.read_within`, and reading stops at the bound. A body over it is `ReplyCutOff`, an openai error the SDK
passes on without retrying; the loop counts it as the endpoint's fault (`endpoint reply too_large`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx2
import openai

from adapter.reply import MAX_REPLY_BYTES, EndpointFault, read_within
from computerops.core import defaults

_ENCODING_HEADERS = ("content-encoding", "content-length", "transfer-encoding")
"""Headers that describe the body as it travelled, not as it is handed on (decoded, whole)."""


class ReplyCutOff(openai.APIError):
    """A reply over the bound: reading stopped there, and the episode ends as the endpoint's fault."""

    def __init__(self, request: httpx2.Request, limit: int) -> None:
        self.fault = EndpointFault("too_large", f"over {limit} decoded bytes (the rest was not read)")
        super().__init__(str(self.fault), request, body=None)


async def read_whole(request: httpx2.Request, response: httpx2.Response,
                     limit: int = MAX_REPLY_BYTES) -> httpx2.Response:
    """`response` with its body read whole and decoded, within `limit` bytes (ReplyCutOff over it), its travel
    headers dropped: what every transport of ours above the network hands on."""
    try:
        async with contextlib.aclosing(response.aiter_bytes()) as pieces:
            body = await read_within(pieces, limit)
    finally:
        await response.aclose()
    if body is None:
        raise ReplyCutOff(request, limit)
    headers = [(name, value) for name, value in response.headers.multi_items()
               if name.lower() not in _ENCODING_HEADERS]
    extensions: dict[str, Any] = {key: response.extensions[key] for key in ("http_version", "reason_phrase")
                                  if key in response.extensions}
    return httpx2.Response(response.status_code, headers=headers, content=body, extensions=extensions)


class BoundedTransport(httpx2.AsyncBaseTransport):
    """A transport that hands on each response with its body read whole, decoded, within `limit` bytes."""

    def __init__(self, limit: int = MAX_REPLY_BYTES, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.limit = limit
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await read_whole(request, await self.inner.handle_async_request(request), self.limit)

    async def aclose(self) -> None:
        await self.inner.aclose()


class StreamWatch:
    """Whether the latest request's streamed reply had begun to arrive (its 200 and event-stream headers came): the
    serving protocol refuses another answer to a turn whose stream began (adapter/failover.py)."""

    def __init__(self) -> None:
        self.began = False


class WatchedTransport(httpx2.AsyncBaseTransport):
    """A transport that tells a `StreamWatch` when a streamed reply begins to arrive from `inner`."""

    def __init__(self, watch: StreamWatch, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.watch = watch
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code == 200 and "text/event-stream" in response.headers.get("content-type", "").lower():
            self.watch.began = True
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def model_client(base_url: str, api_key: str, *, max_retries: int = 2, timeout: float = defaults.REQUEST_TIMEOUT_S,
                 transport: httpx2.AsyncBaseTransport | None = None) -> openai.AsyncOpenAI:
    """The openai client a run asks its model through, every reply bounded (`BoundedTransport` over `transport`,
    by default the network). `timeout` is the run's request timeout (`Bounds.request_timeout_s`): the loop bounds
    each request by it too, so a reply a run allows is never cut sooner by the client. The SDK's own client
    defaults are kept (`DefaultAsyncHttpxClient`); with a transport
    of its own, httpx2 does not route through proxies named in the environment."""
    http = openai.DefaultAsyncHttpxClient(transport=BoundedTransport(inner=transport))
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout,
                              http_client=http)
