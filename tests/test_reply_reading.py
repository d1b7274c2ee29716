"""What a model's reply says, read honestly (issue 43, part B): a long reply that began no action is not a cut-off
action, and a server that ignores `max_tokens` in native mode does not overrun the context.

The replies go through the loop's own path from fake clients with the openai SDK's call shape (no HTTP)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import openai
import pytest
from test_loop_endpoint import REQUEST, Endpoint, run
from test_reply_fuzz import Page, envelope, run_reply, tool

from adapter.context import conversation_tokens, estimate_tokens
from adapter.loop import ModelLoop
from adapter.observation import Observation
from adapter.transcript import Bounds

LONG_PROSE = "I will look at the page carefully and think about what to do next. " * 40


def _cut(message: dict[str, object], **usage: int) -> bytes:
    body = json.loads(envelope(message, **({"usage": usage} if usage else {})))
    body["choices"][0]["finish_reason"] = "length"
    return json.dumps(body).encode()


@pytest.mark.parametrize("mode", ["native", "auto", "text"])
async def test_a_long_reply_of_prose_alone_is_no_action_and_is_not_told_to_shorten_an_action(mode: str) -> None:
    transcript = await run_reply(_cut({"role": "assistant", "content": LONG_PROSE}), tool_mode=mode)
    rejection = transcript.steps[0].rejection
    assert rejection is not None and rejection.cause == "no_action", rejection
    assert "shorter action" not in rejection.reason and "length limit" in rejection.reason


@pytest.mark.parametrize(("mode", "message"), [
    ("auto", tool("click", '{"id": "1", "note": "' + "x" * 50)),
    ("native", tool("click", '{"id": "1", "note": "' + "x" * 50)),
    ("text", {"role": "assistant", "content": LONG_PROSE + '{"action": "fill", "id": "2", "text": "abc'}),
    ("auto", {"role": "assistant", "content": LONG_PROSE + '{"action": "fill", "id": "2", "text": "abc'}),
])
async def test_a_reply_cut_off_after_its_action_began_is_still_truncated(mode: str, message: dict[str, object]) -> None:
    transcript = await run_reply(_cut(message), tool_mode=mode)
    rejection = transcript.steps[0].rejection
    assert rejection is not None and rejection.cause == "truncated_reply", rejection


async def test_prose_run_past_the_cap_by_a_server_that_ignores_max_tokens_is_no_action() -> None:
    body = envelope({"role": "assistant", "content": LONG_PROSE}, usage={"prompt_tokens": 10,
                                                                        "completion_tokens": 5000})
    transcript = await run(Endpoint([body]), action_budget=1, tool_mode="native", max_response_tokens=100)
    rejection = transcript.steps[0].rejection
    assert rejection is not None and rejection.cause == "no_action", rejection


class GrowingPage(Page):
    """A page whose text changes with every action, so the conversation grows by an observation a step."""

    async def observe(self) -> Observation:
        shown = await super().observe()
        text = shown.text + f"\nStep {len(self.acted)}: " + " ".join(f"row{len(self.acted)}-{n}" for n in range(150))
        return shown.model_copy(update={"text": text})


@dataclass
class OverrunningServer:
    """A server that ignores max_tokens (every reply runs to `completion` tokens) and, like llama.cpp, answers HTTP
    500 when the prompt and the reply it produces overrun its context. It counts prompt tokens as the adapter
    estimates them, so the adapter's calibration stays 1."""

    context: int
    completion: int
    prompts: list[int] = field(default_factory=list)

    async def post(self, path: str, *, body: dict[str, Any], cast_to: type, options: object) -> httpx.Response:
        prompt = conversation_tokens(body["messages"]) + estimate_tokens(json.dumps(body.get("tools", [])))
        if "tools" not in body:
            prompt -= estimate_tokens("[]")
        self.prompts.append(prompt)
        if prompt + self.completion > self.context:
            raise openai.InternalServerError("context overrun", response=httpx.Response(500, request=REQUEST),
                                             body=None)
        reply = envelope(tool("click", '{"id": "1"}'),
                         usage={"prompt_tokens": prompt, "completion_tokens": self.completion})
        return httpx.Response(200, content=reply, headers={"content-type": "application/json"})


async def test_in_native_mode_a_server_that_ignores_max_tokens_is_given_room_for_what_it_produces() -> None:
    server = OverrunningServer(context=8192, completion=3000)
    bounds = Bounds(context_tokens=8192, max_response_tokens=200, tool_mode="native", action_budget=24)
    transcript = await ModelLoop(server, "m", bounds).run(GrowingPage(), "Do the task.")  # type: ignore[arg-type]
    assert transcript.stop_reason == "budget_exhausted", (transcript.stop_reason, transcript.infrastructure_error)
    assert max(server.prompts) + 3000 <= 8192 < max(server.prompts) + 3000 + 1500, "the room was needed and kept"


async def test_a_server_whose_replies_leave_no_room_for_a_prompt_stops_saying_it_ignores_max_tokens() -> None:
    bounds = Bounds(context_tokens=8192, max_response_tokens=200, tool_mode="native", action_budget=5)
    measured = OverrunningServer(context=8192, completion=10)
    await ModelLoop(measured, "m", bounds.model_copy(update={"action_budget": 1})).run(  # type: ignore[arg-type]
        Page(), "Do the task.")
    room = 8192 - measured.prompts[0]  # the first reply fills the context: no later prompt fits beside another
    server = OverrunningServer(context=8192, completion=room)
    transcript = await ModelLoop(server, "m", bounds).run(Page(), "Do the task.")  # type: ignore[arg-type]
    assert transcript.stop_reason == "context_exhausted" and len(transcript.steps) == 1, transcript.stop_reason
    assert transcript.stop_detail is not None and "ignores max_tokens (200)" in transcript.stop_detail
    assert f"{room} completion tokens" in transcript.stop_detail


async def test_a_reply_within_max_tokens_changes_no_room() -> None:
    server = OverrunningServer(context=4096, completion=150)
    bounds = Bounds(context_tokens=4096, max_response_tokens=200, tool_mode="native", action_budget=3)
    transcript = await ModelLoop(server, "m", bounds).run(Page(), "Do the task.")  # type: ignore[arg-type]
    assert transcript.stop_reason == "budget_exhausted" and transcript.stop_detail is None
