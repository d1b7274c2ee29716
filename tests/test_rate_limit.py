"""HTTP 429 from a real loopback server through the real openai client: a Retry-After is honoured (the client
waits that long and retries), and never past the loop's bounds: a wait longer than the request timeout ends the
episode at that bound, and one the client will not wait (over two minutes) is the episode's infrastructure
failure with cause HTTP 429. The wait is checked from below only (it is a sleep); nothing asserts an upper time."""

from __future__ import annotations

import json
import time

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_reply_fuzz import Page

from adapter.loop import ModelLoop
from adapter.transcript import AgentTranscript, Bounds
from computerops.runs.serving import serve_app

GIVE_UP = {"id": "x", "object": "chat.completion", "model": "m", "choices": [{
    "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "", "tool_calls": [{
        "id": "c", "type": "function", "function": {"name": "done", "arguments": '{"success": false}'}}]}}]}


def limited(retry_after: str, times: int, arrivals: list[float]) -> Starlette:
    """Answers the first `times` requests with 429 and `Retry-After: retry_after`, then a give-up."""

    async def completions(request: Request) -> Response:
        await request.body()
        arrivals.append(time.monotonic())
        if len(arrivals) <= times:
            return JSONResponse({"error": {"message": "rate limited", "type": "rate_limit"}}, status_code=429,
                                headers={"retry-after": retry_after})
        return Response(json.dumps(GIVE_UP), media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


async def run(app: Starlette, **bounds: float) -> AgentTranscript:
    async with serve_app(app) as origin:
        client = openai.AsyncOpenAI(base_url=f"{origin}/v1", api_key="k", max_retries=2, timeout=120.0)
        try:
            return await ModelLoop(client, "m", Bounds(**bounds)).run(Page(), "Do the task.")
        finally:
            await client.close()


async def test_a_retry_after_is_waited_for_and_the_episode_goes_on() -> None:
    arrivals: list[float] = []
    transcript = await run(limited("1", 1, arrivals))
    assert transcript.stop_reason == "finish" and len(arrivals) == 2
    assert arrivals[1] - arrivals[0] >= 0.9, "the client waited the Retry-After before asking again"


async def test_a_retry_after_past_the_request_timeout_ends_at_that_bound() -> None:
    arrivals: list[float] = []
    transcript = await run(limited("60", 5, arrivals), request_timeout_s=1.0)
    assert transcript.stop_reason == "infrastructure" and transcript.infrastructure_cause == "request timeout"
    assert transcript.stop_detail == "no reply within 1.0 s (request timeout)" and len(arrivals) == 1


async def test_a_retry_after_the_client_will_not_wait_is_an_http_429_infrastructure_failure() -> None:
    arrivals: list[float] = []
    transcript = await run(limited("3600", 5, arrivals))
    assert transcript.stop_reason == "infrastructure" and transcript.infrastructure_cause == "HTTP 429"
    assert len(arrivals) == 1, "not retried: the wait asked for is longer than any bound"
