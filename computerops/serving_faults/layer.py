"""The serving-fault layer: an HTTP proxy in the model client's transport, between the loop and any endpoint.

Every request of an episode's model client (the run's endpoint, scripted or `--base-url`, and its pinned fallback)
passes through `ServingFaultTransport` beneath the client's bounded reader (adapter/modelclient.py) and above the
network. For each chat-completion request it asks the episode's injector (computerops/serving_faults/plan.py) and
carries the decision out where a real deployment fails:

- `throttle`: answered 429 before the endpoint sees the request (an OpenAI-shaped rate-limit error; a
  `Retry-After` header when the decision names one);
- `queue_delay`: held `delay_s`, then passed on;
- `timeout_before_reply`: held and never answered; the harness's own request bound ends the wait (a 504 after
  `hold_s` if it never does);
- `partial_stream`: passed on, and the endpoint's streamed reply handed back cut after its first `events` data
  events, without finish reason or [DONE] (not applied to a reply that is not streamed, or shorter than the cut).

Nothing in what goes back says a failure was injected: the harness meets it as it would a real one. The layer's
log (`ServingLog`, computerops/serving_faults/log.py: the episode's `serving.json`) is the authority on what was
injected; the record sets it beside what the harness met (computerops/serving_faults/record.py). Other requests
(`/models`) pass untouched.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx2

from adapter.failover import Upstream
from adapter.modelclient import ReplyCutOff, read_whole
from adapter.stream import StreamCut, assemble_stream, sse_events
from computerops.serving_faults.log import ServingCall, ServingLog
from computerops.serving_faults.plan import ServingInjector, ServingPlan


class EpisodeServingFaults:
    """One episode's injector and log, shared by the transports of its endpoints (its requests come one at a time)."""

    def __init__(self, plan: ServingPlan) -> None:
        self.injector = ServingInjector(plan)
        self.log = ServingLog(plan=plan)

    def record(self, index: int, call: ServingCall) -> None:
        """What became of the log's request at `index` (its status, how long it was held, a cut)."""
        self.log.calls[index] = call


def _rate_limited(retry_after: int | None) -> httpx2.Response:
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    body = {"error": {"message": "Rate limit reached for requests. Please try again later.",
                      "type": "rate_limit_exceeded", "code": "rate_limit_exceeded", "param": None}}
    return httpx2.Response(429, headers=headers, content=json.dumps(body).encode())


def _cut(body: bytes, events: int) -> tuple[bytes, int] | None:
    """The first `events` data events of an SSE body, when that is a cut stream; None when the cut would leave the
    reply whole (it ends within them)."""
    text = body.decode("utf-8", errors="surrogateescape")
    kept: list[str] = []
    for data, _closed in sse_events(text):
        if len(kept) == events:
            break
        kept.append(f"data: {data}\n\n")
    cut = "".join(kept)
    if not isinstance(assemble_stream(cut), StreamCut):
        return None
    return cut.encode("utf-8", errors="surrogateescape"), len(kept)


def _streamed(request: httpx2.Request) -> bool:
    try:
        body = json.loads(request.content or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(body, dict) and body.get("stream") is True


class ServingFaultTransport(httpx2.AsyncBaseTransport):
    """The serving-fault layer for one endpoint of one episode (`upstream` says which)."""

    def __init__(self, faults: EpisodeServingFaults, upstream: Upstream,
                 inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.faults = faults
        self.upstream = upstream
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/chat/completions"):
            return await self.inner.handle_async_request(request)
        await request.aread()
        log = self.faults.log
        number = len(log.calls) + 1
        decision = self.faults.injector.decide(number, self.upstream)
        streamed = _streamed(request)
        call = ServingCall(request=number, upstream=self.upstream, decision=decision, streamed=streamed)
        log.calls.append(call)
        index = len(log.calls) - 1
        kind = None if decision is None else decision.kind
        if decision is not None and kind == "throttle":
            self.faults.record(index, call.model_copy(update={"status": 429}))
            return _rate_limited(decision.params.retry_after)
        if decision is not None and kind == "timeout_before_reply":
            began = time.monotonic()
            try:
                await asyncio.sleep(decision.params.hold_s)
            finally:  # the harness gave up (cancelled) or the hold ran out
                self.faults.record(index, call.model_copy(update={"held_s": round(time.monotonic() - began, 3)}))
            self.faults.record(index, log.calls[index].model_copy(update={"status": 504}))
            return httpx2.Response(504, content=b'{"error": {"message": "upstream timed out"}}',
                                   headers={"content-type": "application/json"})
        if decision is not None and kind == "queue_delay":
            await asyncio.sleep(decision.params.delay_s)
            call = call.model_copy(update={"held_s": decision.params.delay_s})
        response = await self.inner.handle_async_request(request)
        try:
            whole = await read_whole(request, response)
        except ReplyCutOff:  # over the bound: refused as the client's own reader refuses it
            self.faults.record(index, call.model_copy(update={"status": response.status_code}))
            raise
        body = whole.content
        if decision is not None and kind == "partial_stream":
            cut = _cut(body, decision.params.events) if streamed and response.status_code == 200 else None
            if cut is None:
                decision = decision.model_copy(update={"applied": False})
                call = call.model_copy(update={"decision": decision})
            else:
                body, sent = cut
                call = call.model_copy(update={"events_sent": sent})
        self.faults.record(index, call.model_copy(update={"status": whole.status_code}))
        return httpx2.Response(whole.status_code, headers=whole.headers, content=body, extensions=whole.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

