"""What a model's reply says, read honestly (issue 43, part B): a long reply that began no action is not a cut-off
action, and a server that ignores `max_tokens` in native mode does not overrun the context.

The replies go through the loop's own path from fake clients with the openai SDK's call shape (no HTTP)."""

from __future__ import annotations

import json

import pytest
from test_loop_endpoint import Endpoint, run
from test_reply_fuzz import envelope, run_reply, tool

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
