"""The model request (adapter/loop.py `ModelLoop._request`) goes through the openai client's own request path but
skips `chat.completions.create`'s typed-params transform (about 5 ms of typing introspection a request). That is
only right while the transform changes nothing in the bodies the loop sends: checked here for generated bodies, and
the request on the wire compared with the one `create` sends."""

from __future__ import annotations

import asyncio
import json
from typing import Any, get_args

import httpx2
import openai
from hypothesis import given, settings
from hypothesis import strategies as st
from openai._utils import async_maybe_transform
from openai.types.chat import completion_create_params
from tiers import examples

from adapter.actions import AnswerFieldSchema, FinishSchema, tool_schemas
from adapter.loop import ModelLoop
from adapter.transcript import Bounds
from tasks.answers import AnswerType

TEXT = st.text(max_size=40)
TOOL_CALL = st.fixed_dictionaries({
    "id": st.text(min_size=1, max_size=12), "type": st.just("function"),
    "function": st.fixed_dictionaries({"name": st.sampled_from(["click", "fill", "done", "x"]), "arguments": TEXT}),
})
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": TEXT}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none() | TEXT,
                           "tool_calls": st.lists(TOOL_CALL, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": TEXT}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.text(min_size=1, max_size=12),
                           "content": TEXT}),
)
FINISH = st.builds(FinishSchema, fields=st.dictionaries(
    st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    st.builds(AnswerFieldSchema, type=st.sampled_from(get_args(AnswerType)), description=TEXT), max_size=3))


def _body(messages: list[dict[str, Any]], finish: FinishSchema, tools: bool, seed: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": messages, "max_tokens": 180, "temperature": 0.0}
    if seed is not None:
        body["seed"] = seed
    if tools:
        body["tools"] = tool_schemas(finish)
        body["tool_choice"] = "auto"
    return body


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(MESSAGE, min_size=1, max_size=6), FINISH, st.booleans(), st.none() | st.integers(0, 2**31))
def test_the_skipped_transform_changes_nothing_in_the_loops_bodies(
    messages: list[dict[str, Any]], finish: FinishSchema, tools: bool, seed: int | None,
) -> None:
    body = _body(messages, finish, tools, seed)
    transformed = asyncio.run(async_maybe_transform(body, completion_create_params.CompletionCreateParamsNonStreaming))
    assert transformed == body


def test_the_request_on_the_wire_is_the_one_create_sends() -> None:
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"id": "r", "object": "chat.completion", "created": 0, "model": "m",
                                          "choices": []}, headers={"x-server": "test"})

    async def both() -> tuple[bytes, str, Any]:
        client = openai.AsyncOpenAI(base_url="http://127.0.0.1:1/v1", api_key="secret", max_retries=0,
                                    http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)))
        loop = ModelLoop(client, "m", Bounds())
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        reply = await loop._request(messages, "native")
        await client.chat.completions.create(**_body(messages, loop.finish, True, Bounds().seed))
        return reply
    content, content_type, headers = asyncio.run(both())
    ours, theirs = seen
    assert json.loads(ours.content) == json.loads(theirs.content)
    assert (ours.method, ours.url) == (theirs.method, theirs.url)
    assert ours.headers["authorization"] == theirs.headers["authorization"] == "Bearer secret"
    assert ours.headers["content-type"] == theirs.headers["content-type"]
    assert json.loads(content)["id"] == "r" and content_type == "application/json" and headers["x-server"] == "test"


def test_an_error_status_still_raises_openais_error() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, json={"error": {"message": "context length exceeded"}})

    async def ask() -> None:
        client = openai.AsyncOpenAI(base_url="http://127.0.0.1:1/v1", api_key="k", max_retries=0,
                                    http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)))
        await ModelLoop(client, "m", Bounds())._request([{"role": "user", "content": "u"}], "text")
    try:
        asyncio.run(ask())
    except openai.BadRequestError as error:
        assert "context length exceeded" in str(error)
    else:
        raise AssertionError("a 400 reply did not raise openai.BadRequestError")
