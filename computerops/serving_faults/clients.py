"""The model clients of a serving episode: the run's endpoint and its pinned fallback, each through the episode's
serving-fault layer (computerops/serving_faults/layer.py).

The openai client's own retries are off (`max_retries=0`): a 429 or a timeout reaches the harness's serving protocol
(adapter/failover.py), which is what the study measures, instead of being retried unseen beneath it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import openai

from adapter.failover import Fallback, Upstream
from adapter.modelclient import StreamWatch, WatchedTransport, model_client
from computerops.runs.config import FallbackEndpoint
from computerops.serving_faults.layer import EpisodeServingFaults, ServingFaultTransport


def _fallback_address(base_url: str, api_key: str, fallback: FallbackEndpoint) -> tuple[str, str]:
    """Where a fallback is asked and with which key: a scripted one at the run's scripted endpoint."""
    if fallback.base_url is None:
        return base_url, api_key
    return fallback.base_url, fallback.api_key()


@asynccontextmanager
async def fallback_client(base_url: str, api_key: str, fallback: FallbackEndpoint, *,
                          timeout_s: float) -> AsyncIterator[Fallback]:
    """The pinned fallback of an episode outside the serving study: asked as the primary is (the client's own
    retries, no fault layer), when the primary cannot be reached or the default serving protocol says
    (adapter/failover.py); closed on the way out."""
    url, key = _fallback_address(base_url, api_key, fallback)
    client = model_client(url, key, max_retries=2, timeout=timeout_s)
    try:
        yield Fallback(client=client, model=fallback.label)
    finally:
        await client.close()


@asynccontextmanager
async def serving_clients(
    base_url: str, api_key: str, fallback: FallbackEndpoint | None, faults: EpisodeServingFaults, watch: StreamWatch,
    *, timeout_s: float,
) -> AsyncIterator[tuple[openai.AsyncOpenAI, Fallback | None]]:
    """The primary client and the fallback (None without one), both closed on the way out. A scripted fallback is
    the run's scripted endpoint asked for its policy; another is its own base URL, key from its environment
    variable; each waits `timeout_s` (the run's request timeout) for a reply. `watch` is told when a streamed reply
    from either endpoint begins to arrive (beneath the fault layer: where the endpoint's bytes come in)."""
    def transport(upstream: Upstream) -> ServingFaultTransport:
        return ServingFaultTransport(faults, upstream, inner=WatchedTransport(watch))

    async with AsyncExitStack() as stack:
        primary = model_client(base_url, api_key, max_retries=0, timeout=timeout_s, transport=transport("primary"))
        stack.push_async_callback(primary.close)
        second: Fallback | None = None
        if fallback is not None:
            url, key = _fallback_address(base_url, api_key, fallback)
            client = model_client(url, key, max_retries=0, timeout=timeout_s, transport=transport("fallback"))
            stack.push_async_callback(client.close)
            second = Fallback(client=client, model=fallback.label)
        yield primary, second
