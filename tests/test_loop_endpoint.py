"""How the loop treats what an endpoint does besides replying: refusing a long prompt, hanging, needing tool_choice.

The client here is a fake with the openai SDK's call shape (no HTTP), so each behaviour is exact and fast.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import openai
import pytest
from test_reply_fuzz import Page, envelope, tool

from adapter.loop import AgentTranscript, Bounds, ModelLoop

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

CONTEXT_REFUSALS = [  # as servers word them
    "This model's maximum context length is 8192 tokens. However, you requested 9001 tokens",  # OpenAI, vLLM
    "the request exceeds the available context size, try increasing it",  # llama.cpp
    "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context "
    "length of only 4096 tokens",  # LM Studio
    "input length exceeds the context length",  # Ollama
]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.http_response = httpx.Response(200, content=body, headers={"content-type": "application/json"})


@dataclass
class Endpoint:
    """Answers with `answers` in turn: bytes are a 200 body, an exception is raised, a float sleeps that long."""

    answers: list[bytes | Exception | float]
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def chat(self) -> Endpoint:
        return self

    @property
    def completions(self) -> Endpoint:
        return self

    @property
    def with_raw_response(self) -> Endpoint:
        return self

    async def create(self, **kwargs: Any) -> _Raw:
        self.requests.append(kwargs)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, float):
            await asyncio.sleep(answer)
            answer = envelope(tool("done", '{"success": false}'))
        return _Raw(answer)


async def run(endpoint: Endpoint, **bounds: Any) -> AgentTranscript:
    loop = ModelLoop(endpoint, "m", Bounds(**bounds))  # type: ignore[arg-type]
    transcript = await loop.run(Page(), "Do the task.")
    AgentTranscript.model_validate_json(transcript.model_dump_json())
    return transcript


def bad_request(message: str) -> openai.BadRequestError:
    return openai.BadRequestError(message, response=httpx.Response(400, request=REQUEST), body=None)


@pytest.mark.parametrize("message", CONTEXT_REFUSALS)
async def test_a_context_length_refusal_is_the_episodes_context_exhausted_stop(message: str) -> None:
    transcript = await run(Endpoint([envelope(tool("click", '{"id": "1"}')), bad_request(message)]))
    assert transcript.stop_reason == "context_exhausted"
    assert transcript.infrastructure_error is None and transcript.stop_detail and "refused" in transcript.stop_detail
    assert len(transcript.steps) == 1


async def test_another_bad_request_is_the_endpoints_failure() -> None:
    transcript = await run(Endpoint([bad_request("model 'x' not found")]))
    assert transcript.stop_reason == "infrastructure" and "not found" in (transcript.infrastructure_error or "")


async def test_a_hanging_endpoint_ends_at_the_request_timeout_as_infrastructure() -> None:
    transcript = await run(Endpoint([30.0]), request_timeout_s=0.2)
    assert transcript.stop_reason == "infrastructure"
    assert transcript.stop_detail == "no reply within 0.2 s (request timeout)"


async def test_a_request_cannot_outlast_the_episodes_wall_clock() -> None:
    transcript = await run(Endpoint([30.0]), wall_clock_s=0.3, request_timeout_s=60.0)
    assert transcript.stop_reason == "wall_clock"
    assert transcript.stop_detail is not None and "wall clock" in transcript.stop_detail


async def test_tools_are_sent_with_an_explicit_tool_choice_and_no_null_content_is_echoed() -> None:
    endpoint = Endpoint([envelope(tool("click", '{"id": "1"}')), envelope(tool("done", '{"success": false}'))])
    transcript = await run(endpoint)
    assert transcript.stop_reason == "finish"
    first, second = endpoint.requests
    assert first["tool_choice"] == "auto" and first["tools"]
    echoed = [m for m in second["messages"] if m["role"] == "assistant"]
    assert echoed and all(isinstance(m["content"], str) for m in echoed)
    json.dumps(second["messages"]).encode("utf-8")


async def test_text_mode_sends_neither_tools_nor_tool_choice() -> None:
    endpoint = Endpoint([envelope({"role": "assistant", "content": '{"action": "done", "success": false}'})])
    transcript = await run(endpoint, tool_mode="text")
    assert transcript.stop_reason == "finish"
    assert "tools" not in endpoint.requests[0] and "tool_choice" not in endpoint.requests[0]
