"""No model reply and no endpoint envelope crashes the loop: each ends in a classified outcome.

The replies go through the loop's own path (`ModelLoop.run`: reading the body, interpreting the action, echoing
it into the history, serialising the transcript and the next request) from a fake client that answers with the
generated HTTP body. Outcomes: the episode's infrastructure stop (the endpoint's fault) or a recorded step (an
action carried out, or a rejection with its cause: the model's fault). Never an exception.

`NASTY` is the corpus of hand-found cases, each with the outcome it must get; the property tests generate the
rest (over 10,000 examples in all).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from adapter.actions import Action, Rejection, parse_text_action
from adapter.loop import ModelLoop
from adapter.observation import Control, Observation, format_control
from adapter.reply import EndpointFault
from adapter.reply_body import read_reply
from adapter.transcript import AgentTranscript, Bounds

CONTROLS = [Control(id="1", role="link", name="Tickets"), Control(id="2", role="textbox", name="Note")]


@dataclass
class Page:
    """A one-page environment that accepts every action on its controls."""

    acted: list[Action] = field(default_factory=list)

    async def observe(self) -> Observation:
        text = "Page: p\nURL: /helpdesk/\n\n" + "\n".join(format_control(c) for c in CONTROLS)
        return Observation(url="/helpdesk/", title="p", text=text, controls=CONTROLS)

    async def act(self, action: Action, number: int) -> Carried:
        self.acted.append(action)
        return Carried()


@dataclass(frozen=True)
class Carried:
    ok: bool = True
    rejection: Rejection | None = None
    note: str = "done"
    navigated: bool = False


class _Raw:
    def __init__(self, body: bytes, content_type: str) -> None:
        self.http_response = httpx.Response(200, content=body, headers={"content-type": content_type})


@dataclass
class FakeClient:
    """Answers every chat request with the same body; keeps each request it was sent, encoded as UTF-8 JSON the
    way an HTTP client must."""

    body: bytes
    content_type: str = "application/json"
    sent: list[bytes] = field(default_factory=list)

    @property
    def chat(self) -> FakeClient:
        return self

    @property
    def completions(self) -> FakeClient:
        return self

    @property
    def with_raw_response(self) -> FakeClient:
        return self

    async def create(self, **kwargs: Any) -> _Raw:
        self.sent.append(json.dumps(kwargs, ensure_ascii=False).encode("utf-8"))  # raises on a lone surrogate
        return _Raw(self.body, self.content_type)

    async def post(self, path: str, *, body: dict[str, Any], cast_to: type, options: object) -> Any:
        """The client's request path, as the loop uses it (adapter/loop.py `_request`)."""
        return (await self.create(**body)).http_response


async def run_reply(body: bytes, content_type: str = "application/json", tool_mode: str = "auto") -> AgentTranscript:
    """One episode of one step in which the endpoint always answers `body`; the transcript must serialise."""
    client = FakeClient(body, content_type)
    loop = ModelLoop(client, "m", Bounds(action_budget=1, tool_mode=tool_mode))  # type: ignore[arg-type]
    transcript = await loop.run(Page(), "Do the task.")
    AgentTranscript.model_validate_json(transcript.model_dump_json())
    return transcript


def classify(transcript: AgentTranscript) -> str:
    """`infrastructure`, `finish`, `rejected:<cause>` of the first step, or `acted`."""
    if transcript.stop_reason == "infrastructure":
        assert transcript.infrastructure_error, "an infrastructure stop must say why"
        return "infrastructure"
    if transcript.stop_reason == "finish" and len(transcript.steps) == 1:
        return "finish"
    first = transcript.steps[0]
    return f"rejected:{first.rejection.cause}" if first.rejection else "acted"


def envelope(message: Any, **extra: Any) -> bytes:
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], **extra}
    return json.dumps(body).encode()


def tool(name: Any, arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}


NASTY: list[tuple[str, bytes, str]] = [
    # the endpoint's faults: the episode's infrastructure outcome
    ("truncated body", envelope({"role": "assistant", "content": "hi"})[:40], "infrastructure"),
    ("not JSON", b"<html>502 Bad Gateway</html>", "infrastructure"),
    ("a JSON list", b"[1, 2, 3]", "infrastructure"),
    ("a JSON string", b'"hello"', "infrastructure"),
    ("empty body", b"", "infrastructure"),
    ("error object with 200", b'{"error": {"message": "model not loaded"}}', "infrastructure"),
    ("choices null", b'{"choices": null}', "infrastructure"),
    ("choices empty", b'{"choices": []}', "infrastructure"),
    ("choices a dict", b'{"choices": {"message": {}}}', "infrastructure"),
    ("message a string", b'{"choices": [{"message": "click 1"}]}', "infrastructure"),
    ("content a number", envelope({"role": "assistant", "content": 7}), "infrastructure"),
    ("tool_calls a dict", envelope({"role": "assistant", "tool_calls": {"a": 1}}), "infrastructure"),
    ("usage a list", envelope({"role": "assistant", "content": "x"}, usage=[1]), "infrastructure"),
    ("usage a string count", envelope({"role": "assistant", "content": "x"}, usage={"prompt_tokens": "12"}),
     "infrastructure"),
    ("usage a 5,000-digit count", envelope({"role": "assistant", "content": "x"})[:-1]
     + b', "usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}", "infrastructure"),
    ("envelope nested 100,000 deep", b'{"choices": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "infrastructure"),
    ("NaN in the envelope", b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": NaN}}',
     "infrastructure"),
    # the model's faults: a rejection with its cause
    ("lone surrogate in content", envelope({"role": "assistant", "content": "\ud800 click"}), "rejected:invalid_text"),
    ("lone surrogate in arguments", envelope(tool("fill", '{"id": "2", "text": "\\ud800"}')), "rejected:invalid_text"),
    ("lone surrogate in a tool name", envelope(tool("cl\ud800ick", "{}")), "rejected:invalid_text"),
    ("tool name null", envelope(tool(None, '{"id": "1"}')), "rejected:no_action"),
    ("tool name a number", envelope(tool(7, '{"id": "1"}')), "rejected:no_action"),
    ("arguments a list", envelope(tool("click", ["1"])), "rejected:malformed_arguments"),
    ("arguments a number", envelope(tool("click", 1)), "rejected:malformed_arguments"),
    ("arguments an object", envelope(tool("click", {"id": "1"})), "acted"),
    ("arguments nested 10,000 deep", envelope(tool("fill", '{"id": "2", "text": ' + "[" * 10_000 + "]" * 10_000
                                                  + "}")), "rejected:malformed_arguments"),
    ("a 5,000-digit id", envelope(tool("click", '{"id": ' + "7" * 5000 + "}")), "rejected:malformed_arguments"),
    ("a number where text belongs", envelope(tool("fill", '{"id": "2", "text": 5}')), "rejected:malformed_arguments"),
    ("success \"yes\"", envelope(tool("done", '{"success": "yes"}')), "rejected:malformed_arguments"),
    ("success 1.0", envelope(tool("done", '{"success": 1.0}')), "rejected:malformed_arguments"),
    ("unterminated arguments", envelope(tool("click", '{"id": "1')), "rejected:truncated_reply"),
    ("cut off at the length limit", json.dumps({"choices": [{"message": {"content": '{"action": "cl'},
                                                             "finish_reason": "length"}]}).encode(),
     "rejected:truncated_reply"),
    ("200,000 braces of text", envelope({"role": "assistant", "content": "{" * 200_000}), "rejected:truncated_reply"),
    ("a tool call that is a string", envelope({"role": "assistant", "tool_calls": ["click"]}), "infrastructure"),
    ("two tool calls", envelope({"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "click", "arguments": '{"id": "1"}'}},
        {"id": "b", "function": {"name": "done", "arguments": '{"success": true}'}}]}), "acted"),
    ("a valid done", envelope(tool("done", '{"success": true}')), "finish"),
]


@pytest.mark.parametrize(("body", "expected"), [(b, e) for _, b, e in NASTY], ids=[n for n, _, _ in NASTY])
async def test_each_nasty_reply_gets_its_outcome(body: bytes, expected: str) -> None:
    assert classify(await run_reply(body)) == expected


async def test_an_unrequested_stream_is_the_endpoints_fault() -> None:
    transcript = await run_reply(b'data: {"choices": []}\n\n', content_type="text/event-stream")
    assert transcript.stop_reason == "infrastructure" and "stream" in (transcript.infrastructure_error or "")


async def test_several_tool_calls_run_the_first_and_say_so() -> None:
    body = dict(NASTY_BY_NAME)["two tool calls"]
    transcript = await run_reply(body)
    first = transcript.steps[0]
    assert first.action == {"action": "click", "id": "1"} and len(first.call.tool_calls) == 2
    assert "only the first of 2 tool calls" in first.note


NASTY_BY_NAME = [(name, body) for name, body, _ in NASTY]

# Generated replies -------------------------------------------------------------------------------------------

NASTY_TEXT = st.sampled_from(["\ud800", "\udfff", "\x00", "\u2028", "{", "}", "[", '"', "\\", "\\u", "\\ud800",
                              '{"action": "click", "id": 1}', "1" * 50, "[" * 40, "💥", "\ufeff", "NaN"])
TEXT = st.lists(st.one_of(st.text(max_size=20), NASTY_TEXT), max_size=6).map("".join)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
ARGUMENTS = st.one_of(TEXT, JSON, JSON.map(json.dumps), st.fixed_dictionaries(
    {"id": st.one_of(st.sampled_from(["1", "2", 1, "[2]", 99]), JSON), "text": JSON}).map(json.dumps))
NAMES = st.one_of(st.sampled_from(["click", "fill", "done", "navigate", "more", "back", "press", "select", "check"]),
                  JSON)
TOOL_CALL = st.fixed_dictionaries({"id": JSON, "type": JSON, "function": st.one_of(
    st.fixed_dictionaries({"name": NAMES, "arguments": ARGUMENTS}), JSON)})
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": JSON, "content": st.one_of(TEXT, JSON)}),
    st.fixed_dictionaries({"role": JSON, "content": JSON, "tool_calls": st.one_of(st.lists(TOOL_CALL, max_size=3),
                                                                                   JSON)}),
)
ENVELOPE = st.fixed_dictionaries(
    {"choices": st.one_of(st.lists(st.fixed_dictionaries({"message": st.one_of(MESSAGE, JSON),
                                                          "finish_reason": JSON}), max_size=2), JSON)},
    optional={"usage": st.one_of(JSON, st.fixed_dictionaries({"prompt_tokens": JSON, "completion_tokens": JSON})),
              "model": JSON, "error": JSON, "system_fingerprint": JSON},
)


def _encode(value: Any) -> bytes:
    # Lone surrogates are written as JSON escapes, the way a server would send them.
    return json.dumps(value, ensure_ascii=True).encode()


@settings(max_examples=examples(1500))
@given(ENVELOPE)
async def test_generated_envelopes_end_in_a_classified_outcome(value: dict[str, Any]) -> None:
    classify(await run_reply(_encode(value)))


@settings(max_examples=examples(1000))
@given(st.binary(max_size=200) | ENVELOPE.map(_encode).flatmap(lambda b: st.integers(0, len(b)).map(lambda n: b[:n])))
async def test_generated_bodies_and_cut_off_envelopes_end_in_a_classified_outcome(body: bytes) -> None:
    classify(await run_reply(body))


@settings(max_examples=examples(600))
@given(TEXT, st.sampled_from(["stop", "length", None]))
async def test_generated_text_replies_end_in_a_classified_outcome(content: str, finish_reason: str | None) -> None:
    body = _encode({"choices": [{"message": {"role": "assistant", "content": content},
                                 "finish_reason": finish_reason}]})
    classify(await run_reply(body, tool_mode="text"))


@settings(max_examples=examples(300))
@given(st.integers(1, 300_000), st.sampled_from(["{", '{"a":', "[", '{"action": "click", "id": "']))
def test_the_text_protocol_stays_linear_on_long_unbalanced_replies(count: int, piece: str) -> None:
    result = parse_text_action(piece * (count // len(piece) + 1))
    assert isinstance(result, Rejection)


def test_read_reply_classifies_without_raising() -> None:
    fault = read_reply(b"{", latency_s=0, estimated=0, request_sha256="")
    assert isinstance(fault, EndpointFault) and fault.cause == "not_json"
