"""Streamed chat completions (`stream: true`): adapter/stream.py assembles them into the reply they add up to, tells a
cut stream from a finished one and an endpoint's junk from both; the scripted endpoint streams when asked."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from adapter.reply import EndpointFault, ModelCall
from adapter.reply_body import read_reply
from adapter.scripted import create_scripted_app
from adapter.stream import StreamCut, assemble_stream, sse_events
from computerops.core.vocabulary import SCRIPTED_HEADER

TOOLS = [{"type": "function", "function": {"name": "click", "parameters": {"type": "object"}}}]
MESSAGES = [{"role": "system", "content": "You operate a web page."}, {"role": "user", "content": "Do the thing."}]
# The scripted endpoint with no tasks: oracle gives up with a long message, malformed writes prose.
CASES: dict[str, dict[str, Any]] = {
    "tool call": {"model": "scripted:oracle", "tools": TOOLS},
    "text action": {"model": "scripted:oracle"},
    "prose": {"model": "scripted:malformed"},
}
APP = create_scripted_app([])


def request(case: str, *, stream: bool, usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {**CASES[case], "messages": MESSAGES}
    if stream:
        body["stream"] = True
        if usage:
            body["stream_options"] = {"include_usage": True}
    return body


async def ask(body: dict[str, Any]) -> httpx2.Response:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=APP), base_url="http://scripted.test") as http:
        response = await http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response


def read(body: bytes | str, content_type: str = "text/event-stream") -> ModelCall | EndpointFault | StreamCut:
    return read_reply(body, content_type=content_type, latency_s=0.0, estimated=1, request_sha256="x", streamed=True)


def plain(body: bytes) -> ModelCall:
    call = read_reply(body, latency_s=0.0, estimated=1, request_sha256="x")
    assert isinstance(call, ModelCall)
    return call


def chunks(body: str) -> list[dict[str, Any]]:
    return [json.loads(data) for data, _ in sse_events(body) if data != "[DONE]"]


@pytest.mark.parametrize("usage", [True, False], ids=["usage", "no usage"])
@pytest.mark.parametrize("case", list(CASES))
async def test_a_streamed_reply_reads_as_the_unstreamed_one(case: str, usage: bool) -> None:
    whole = plain((await ask(request(case, stream=False))).content)
    response = await ask(request(case, stream=True, usage=usage))
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers[SCRIPTED_HEADER] == CASES[case]["model"].removeprefix("scripted:")
    streamed = read(response.content)
    assert isinstance(streamed, ModelCall)
    expected = whole if usage else whole.model_copy(update={"prompt_tokens": None, "completion_tokens": None})
    assert streamed == expected
    sent = chunks(response.text)
    assert {c["object"] for c in sent} == {"chat.completion.chunk"}
    assert len({(c["id"], c["model"], c["system_fingerprint"]) for c in sent}) == 1
    if case == "tool call":  # the arguments came in several pieces
        assert sum("tool_calls" in c["choices"][0]["delta"] for c in sent if c["choices"]) > 2
    assert (sent[-1]["choices"] == [] and "usage" in sent[-1]) is usage


@pytest.mark.parametrize("case", list(CASES))
async def test_a_stream_cut_at_any_event_is_a_cut_until_its_finish_reason(case: str) -> None:
    text = (await ask(request(case, stream=True))).text
    whole = read(text)
    assert isinstance(whole, ModelCall)
    events = text.split("\n\n")[:-1]  # each event with its blank line; the last is `data: [DONE]`
    finish = next(i for i, c in enumerate(chunks(text)) if c["choices"] and c["choices"][0]["finish_reason"])
    first_tool = next((i for i, c in enumerate(chunks(text))
                       if c["choices"] and "tool_calls" in c["choices"][0]["delta"]), None)
    for kept in range(len(events) + 1):
        body = "".join(event + "\n\n" for event in events[:kept])
        got = read(body)
        if kept <= finish:
            assert isinstance(got, StreamCut), kept
            assert got.events == kept
            assert (whole.content or "").startswith(got.content)
            started = first_tool is not None and kept > first_tool
            assert got.tool_call_started is started
            assert got.tool_name == (whole.tool_calls[0].name if started else None)
            assert got.completion_tokens is None and "finish_reason" in got.detail
        else:  # [DONE] missing (or the usage chunk too): the finish reason says the reply is complete
            assert isinstance(got, ModelCall), kept
            assert got.content == whole.content and got.tool_calls == whole.tool_calls
            assert got.finish_reason == whole.finish_reason


async def test_a_stream_cut_at_any_character_is_a_cut_or_complete_never_a_fault() -> None:
    text = (await ask(request("tool call", stream=True))).text
    whole = read(text)
    assert isinstance(whole, ModelCall)
    finish_end = text.index('"finish_reason": "tool_calls"')
    finish_end = text.index("\n", finish_end)  # the end of the finish chunk's data line
    for length in range(len(text)):
        got = assemble_stream(text[:length])
        assert isinstance(got, StreamCut if length < finish_end else dict), length
        if isinstance(got, StreamCut) and got.tool_name is not None:
            assert got.tool_name == whole.tool_calls[0].name


def test_a_finish_reason_without_done_is_complete_and_done_without_one_too() -> None:
    chunk = {"model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
    ending = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(ending)}\n\n"
    got = read(body)
    assert isinstance(got, ModelCall) and got.content == "hi" and got.finish_reason == "stop" and got.model == "m"
    done = read(f"data: {json.dumps(chunk)}\n\ndata: [DONE]")
    assert isinstance(done, ModelCall) and done.content == "hi" and done.finish_reason is None
    cut = read(f"data: {json.dumps(chunk)}\n\n")
    assert cut == StreamCut(events=1, content="hi", tool_call_started=False, tool_name=None, completion_tokens=None,
                            detail=cut.detail if isinstance(cut, StreamCut) else "")
    empty = read(b"")
    assert isinstance(empty, StreamCut) and empty.events == 0


def test_sse_framing_is_read_as_the_standard_says() -> None:
    first = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "a"}}]}
    other = {"choices": [{"index": 1, "delta": {"content": "not choice 0"}}]}
    usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    body = (f": keep-alive\r\nevent: message\r\nid: 1\r\ndata: {json.dumps(first)}\r\n\r\n"
            f"data: {json.dumps(other)}\r\n\r\n"
            'data: {"choices": [{"index": 0,\r\ndata: "delta": {"content": "b"}, "finish_reason": "stop"}]}\r\n\r\n'
            f": comment\r\n\r\ndata:{json.dumps(usage)}\r\n\r\ndata: [DONE]\r\n\r\n")
    got = read(body)
    assert isinstance(got, ModelCall)
    assert (got.content, got.finish_reason, got.prompt_tokens, got.completion_tokens) == ("ab", "stop", 3, 2)
    cut = read(body.split(f"data: {json.dumps(other)}")[0] + f"data:{json.dumps(usage)}\n\n")
    assert isinstance(cut, StreamCut) and cut.content == "a" and cut.completion_tokens == 2


def test_tool_call_deltas_merge_by_index() -> None:
    deltas = [
        {"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {"name": "click", "arguments": ""}}]},
        {"tool_calls": [{"index": 1, "id": "c1", "type": "function", "function": {"name": "done", "arguments": "{"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"id": '}},
                        {"index": 1, "function": {"arguments": "}"}}]},
        {"tool_calls": [{"index": 0, "id": "ignored", "function": {"name": "ignored", "arguments": '"7"}'}}]},
    ]
    body = "".join(f"data: {json.dumps({'choices': [{'index': 0, 'delta': d}]})}\n\n" for d in deltas)
    cut = read(body)
    assert isinstance(cut, StreamCut) and cut.tool_call_started and cut.tool_name == "click" and cut.content == ""
    got = read(body + 'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}\n\n')
    assert isinstance(got, ModelCall) and got.content is None
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [("c0", "click", '{"id": "7"}'),
                                                                   ("c1", "done", "{}")]


@pytest.mark.parametrize(("body", "said"), [
    ("data: not json\n\n", "not JSON"),
    ("data: [1, 2]\n\n", "JSON list"),
    ('data: {"error": {"message": "model overloaded"}}\n\n', "model overloaded"),
    ('data: {"choices": {"index": 0}}\n\n', "choices is dict"),
    ('data: {"choices": [{"index": 0, "delta": "hi"}]}\n\n', "delta is str"),
    ('data: {"choices": [{"index": 0, "delta": {"content": 5}}]}\n\n', "delta.content is int"),
    ('data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]}\n\n', "index is str"),
    ("data: " + "[" * 100 + "]" * 100 + "\n\n", "nested deeper"),
], ids=["not json", "a list", "error event", "choices object", "delta string", "content number", "index string",
        "too deep"])
def test_an_event_that_is_no_chunk_is_the_endpoints_fault(body: str, said: str) -> None:
    good = 'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n'
    got = read(good + body + "data: [DONE]\n\n")
    assert isinstance(got, EndpointFault) and got.cause == "stream" and said in got.detail, got


def test_streamed_false_keeps_refusing_a_stream_and_streamed_true_reads_plain_json() -> None:
    stream = b'data: {"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}]}\n\n'
    refused = read_reply(stream, content_type="text/event-stream", latency_s=0, estimated=1, request_sha256="x")
    assert isinstance(refused, EndpointFault) and refused.cause == "stream" and "not requested" in refused.detail
    envelope = {"choices": [{"message": {"role": "assistant", "content": "a"}, "finish_reason": "stop"}]}
    got = read(json.dumps(envelope).encode(), content_type="application/json")
    assert isinstance(got, ModelCall) and got.content == "a"
    too_large = read(b"data: " + b" " * 4_000_001)
    assert isinstance(too_large, EndpointFault) and too_large.cause == "too_large"


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in pairwise(points)] or [text]


@settings(max_examples=examples(400))
@given(content=st.text(), arguments=st.text(), content_cuts=st.lists(st.integers(0, 200), max_size=12),
       argument_cuts=st.lists(st.integers(0, 200), max_size=12), crlf=st.booleans())
def test_any_split_of_text_and_arguments_assembles_to_the_same_text(
    content: str, arguments: str, content_cuts: list[int], argument_cuts: list[int], crlf: bool,
) -> None:
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    deltas += [{"content": piece} for piece in split(content, content_cuts)]
    deltas.append({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "type"}}]})
    deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in split(arguments, argument_cuts)]
    events: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    newline = "\r\n" if crlf else "\n"
    body = "".join(f"data: {json.dumps(e)}{newline}{newline}" for e in events) + f"data: [DONE]{newline}{newline}"
    envelope = assemble_stream(body.encode())
    assert isinstance(envelope, dict)
    message = envelope["choices"][0]["message"]
    assert message["content"] == content and message["tool_calls"][0]["function"]["arguments"] == arguments
    got = read(body)
    assert isinstance(got, ModelCall) and got.content == content and got.tool_calls[0].arguments == arguments


@pytest.mark.parametrize("case", list(CASES))
async def test_the_real_openai_client_gets_the_same_reply_streamed(case: str) -> None:
    http = openai.DefaultAsyncHttpxClient(transport=httpx2.ASGITransport(app=APP))
    async with openai.AsyncOpenAI(base_url="http://scripted.test/v1", api_key="scripted", http_client=http,
                                  max_retries=0) as client:
        unstreamed = await client.post("/chat/completions", body=request(case, stream=False),
                                       cast_to=httpx2.Response)
        streamed = await client.post("/chat/completions", body=request(case, stream=True), cast_to=httpx2.Response)
        assert isinstance(unstreamed, httpx2.Response) and isinstance(streamed, httpx2.Response)
        whole = plain(unstreamed.content)
        got = read(streamed.content, content_type=streamed.headers["content-type"])
    assert isinstance(got, ModelCall)
    assert (got.content, got.tool_calls, got.finish_reason, got.prompt_tokens, got.completion_tokens) == (
        whole.content, whole.tool_calls, whole.finish_reason, whole.prompt_tokens, whole.completion_tokens)
    assert got.model == whole.model and got.system_fingerprint == whole.system_fingerprint
