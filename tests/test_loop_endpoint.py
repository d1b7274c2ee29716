"""How the loop treats what an endpoint does besides replying: refusing a long prompt, hanging, needing tool_choice.

The client here is a fake with the openai SDK's call shape (no HTTP), so each behaviour is exact and fast.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import openai
import pytest
from test_reply_fuzz import Page, envelope, tool

from adapter.actions import Action
from adapter.loop import ModelLoop
from adapter.observation import Observation
from adapter.transcript import AgentTranscript, Bounds
from computerops.core.hashing import canonical_sha256

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

    async def post(self, path: str, *, body: dict[str, Any], cast_to: type, options: object) -> httpx.Response:
        """The client's request path, as the loop uses it (adapter/loop.py `_request`)."""
        assert path == "/chat/completions"
        return (await self.create(**body)).http_response


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


@dataclass
class ChangingPage(Page):
    """A page whose text changes after every action and is long, so old observations are worth eliding."""

    def __post_init__(self) -> None:
        self.version = 0

    async def observe(self) -> Observation:
        seen = await super().observe()
        text = f"{seen.text}\nversion {self.version}\n" + f"row {self.version} of the table. " * 120
        return seen.model_copy(update={"text": text})

    async def act(self, action: Action, number: int) -> Any:
        self.version += 1
        return await super().act(action, number)


CLICK = envelope(tool("click", '{"id": "1"}'))


def prompt_chars(request: dict[str, Any]) -> int:
    return len(json.dumps(request["messages"]))


async def test_a_refusal_naming_a_smaller_context_plans_with_it_and_sends_the_request_once_more_refitted() -> None:
    refusal = bad_request("request (6000 tokens) exceeds the available context size (4096 tokens)")
    endpoint = Endpoint([CLICK, CLICK, CLICK, CLICK, refusal, CLICK, envelope(tool("done", '{"success": false}'))])
    loop = ModelLoop(endpoint, "m", Bounds(context_tokens=32768))  # type: ignore[arg-type]
    transcript = await loop.run(ChangingPage(), "Do the task.")
    assert transcript.stop_reason == "finish", transcript.stop_detail
    assert transcript.context_tokens == 4096, "the refusal's context is the episode's from then on"
    refused, again = endpoint.requests[4], endpoint.requests[5]
    assert prompt_chars(again) < prompt_chars(refused), "the retry is refitted to the smaller context"
    assert transcript.token_scale > 1, "the refusal's own count calibrates the estimate"


async def test_a_refusal_that_teaches_nothing_ends_the_episode_without_a_retry() -> None:
    endpoint = Endpoint([CLICK, bad_request("prompt is too long")])
    transcript = await run(endpoint, context_tokens=32768, tool_mode="native")
    assert transcript.stop_reason == "context_exhausted" and len(endpoint.requests) == 2
    # In auto mode the one retry goes without the tool schemas, in the text protocol; refused again, it ends.
    endpoint = Endpoint([CLICK, bad_request("prompt is too long")])
    transcript = await run(endpoint, context_tokens=32768)
    assert transcript.stop_reason == "context_exhausted" and len(endpoint.requests) == 3
    assert "tools" in endpoint.requests[1] and "tools" not in endpoint.requests[2]


async def test_a_second_refusal_of_the_same_step_is_never_retried() -> None:
    refusal = bad_request("request (5000 tokens) exceeds the available context size (4096 tokens)")
    endpoint = Endpoint([CLICK, CLICK, CLICK, CLICK, refusal, refusal, CLICK])
    loop = ModelLoop(endpoint, "m", Bounds(context_tokens=32768))  # type: ignore[arg-type]
    transcript = await loop.run(ChangingPage(), "Do the task.")
    assert transcript.stop_reason == "context_exhausted" and len(endpoint.requests) == 6


async def test_episodes_start_with_the_runs_token_scale() -> None:
    endpoint = Endpoint([envelope(tool("done", '{"success": false}'))])
    loop = ModelLoop(endpoint, "m", Bounds(), token_scale=3.5)  # type: ignore[arg-type]
    transcript = await loop.run(Page(), "Do the task.")
    assert transcript.token_scale == 3.5 and transcript.context_tokens == Bounds().context_tokens


async def test_in_auto_mode_tool_schemas_that_leave_no_room_give_way_to_the_text_protocol() -> None:
    endpoint = Endpoint([envelope({"role": "assistant", "content": '{"action": "done", "success": false}'})])
    transcript = await run(endpoint, context_tokens=1400)  # the schemas alone are about 1,300 estimated tokens
    assert transcript.stop_reason == "finish" and transcript.tool_mode == "text"
    assert transcript.tool_mode_switch == "the text protocol from step 1: the tool schemas did not fit the context"
    assert "tools" not in endpoint.requests[0] and "JSON object" in endpoint.requests[0]["messages"][0]["content"]
    native = await run(Endpoint([envelope(tool("done", '{"success": false}'))]), context_tokens=1400,
                       tool_mode="native")
    assert native.stop_reason == "context_exhausted" and native.tool_mode_switch is None, "native stays native"


async def test_a_length_refusal_with_the_schemas_gives_way_to_the_text_protocol_when_nothing_else_fits() -> None:
    refusal = bad_request("Requested tokens (2500) exceed context window of 2048")
    endpoint = Endpoint([refusal, envelope({"role": "assistant", "content": '{"action": "done", "success": false}'})])
    transcript = await run(endpoint, context_tokens=32768)
    assert transcript.stop_reason == "finish" and transcript.tool_mode == "text"
    assert (transcript.tool_mode_switch or "").endswith("refused a prompt with the tool schemas for its length")
    assert "tools" in endpoint.requests[0] and "tools" not in endpoint.requests[1]


async def test_each_requests_hash_is_the_canonical_json_of_the_messages_it_sent() -> None:
    # A reviewer holding the messages recomputes it as documented (computerops/core/hashing.py): sorted keys, no
    # insignificant whitespace, UTF-8 without escapes; non-ASCII text shows a serialisation that differs.
    endpoint = Endpoint([envelope(tool("click", '{"id": "1"}')), envelope(tool("done", '{"success": false}'))])
    loop = ModelLoop(endpoint, "m", Bounds())  # type: ignore[arg-type]
    transcript = await loop.run(Page(), "Réglez la tâche — «vite».")
    assert len(transcript.steps) == len(endpoint.requests) == 2
    for step, request in zip(transcript.steps, endpoint.requests, strict=True):
        text = json.dumps(request["messages"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert step.call.request_sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert step.call.request_sha256 == canonical_sha256(request["messages"])
