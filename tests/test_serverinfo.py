"""What a server says of its own limits (adapter/serverinfo.py) and what the run plans from it
(computerops/runs/limits.py): each server's own shape, refusal wordings, the tools probe against servers that keep,
drop and refuse tools, and properties over any payload."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from adapter import serverinfo
from adapter.actions import tool_schemas
from adapter.context import estimate_tokens
from adapter.scripted import ServerQuirks, create_scripted_app
from adapter.scripted.server import history_problem
from adapter.serverinfo import (
    MAX_ANSWER_BYTES,
    PROBE_ESTIMATED_TOKENS,
    ObservedContext,
    ToolsProbe,
    context_from_lmstudio,
    context_from_models,
    context_from_ollama,
    context_from_props,
    context_from_refusal,
    discover_context,
    probe_tools,
    requested_in_refusal,
    server_root,
    tools_verdict,
)
from adapter.transcript import Bounds
from computerops.runs.limits import describe_planned, initial_token_scale, planned_bounds
from computerops.runs.provenance import observe_endpoint
from computerops.runs.records import ObservedEndpoint
from computerops.runs.serving import serve_app

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                max_size=4), max_leaves=20)
SHAPED = st.fixed_dictionaries({}, optional={
    "data": st.lists(st.fixed_dictionaries({}, optional={"id": st.sampled_from(["m", "other"]), "max_model_len": JSON,
                                                          "context_length": JSON}), max_size=3),
    "default_generation_settings": st.fixed_dictionaries({}, optional={"n_ctx": JSON}), "n_ctx": JSON,
    "loaded_context_length": JSON, "parameters": JSON | st.text(max_size=40).map(lambda t: f"num_ctx {t}"),
})


@given(st.one_of(JSON, SHAPED))
def test_no_payload_breaks_discovery_and_any_context_found_is_a_plausible_size(payload: Any) -> None:
    for found in (context_from_models(payload, "m"), context_from_props(payload), context_from_lmstudio(payload),
                  context_from_ollama(payload)):
        assert found is None or (isinstance(found.tokens, int) and 0 < found.tokens < 10**9 and found.source)


def test_each_servers_own_shape() -> None:
    vllm = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B", "object": "model", "max_model_len": 32768}]}
    assert context_from_models(vllm, "Qwen/Qwen2.5-7B") == ObservedContext(tokens=32768,
                                                                          source="GET /models max_model_len")
    assert context_from_models(vllm, "echoed-name") is not None, "one served model: its context, whatever the name"
    two = {"data": [{"id": "a", "max_model_len": 4096}, {"id": "b", "max_model_len": 8192}]}
    assert context_from_models(two, "b") == ObservedContext(tokens=8192, source="GET /models max_model_len")
    assert context_from_models(two, "c") is None, "several models and none named: nothing is guessed"
    assert context_from_models({"data": [{"id": "m", "max_model_len": True}]}, "m") is None
    llama = {"default_generation_settings": {"n_ctx": 4096, "temperature": 0.8}, "total_slots": 1}
    assert context_from_props(llama) == ObservedContext(tokens=4096,
                                                        source="GET /props default_generation_settings.n_ctx")
    lmstudio = {"id": "qwen2.5-7b", "max_context_length": 131072, "loaded_context_length": 4096}
    assert context_from_lmstudio(lmstudio) == ObservedContext(tokens=4096,
                                                              source="GET /api/v0/models loaded_context_length")
    ollama = {"parameters": "stop \"<|im_end|>\"\nnum_ctx 8192\ntemperature 0.7", "model_info": {
        "qwen2.context_length": 32768}}
    assert context_from_ollama(ollama) == ObservedContext(tokens=8192, source="POST /api/show parameters num_ctx")
    assert context_from_ollama({"parameters": "temperature 0.7", "model_info": {"qwen2.context_length": 32768}}) is None


@pytest.mark.parametrize(("text", "limit", "requested"), [
    ("This model's maximum context length is 8192 tokens. However, you requested 9001 tokens (8821 in the "
     "messages, 180 in the completion).", 8192, 9001),  # OpenAI, vLLM
    ("Error code: 400 - {'error': {'code': 400, 'message': 'request (4476 tokens) exceeds the available context "
     "size (4096 tokens)', 'type': 'exceed_context_size_error', 'n_prompt_tokens': 4476, 'n_ctx': 4096}}", 4096, 4476),
    ("Requested tokens (2100) exceed context window of 2048", 2048, 2100),  # llama-cpp-python
    ("Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context "
     "length of only 4096 tokens, which is not enough.", 4096, None),  # LM Studio
    ("the request exceeds the available context size, try increasing it", None, None),  # older llama.cpp
    ("prompt is too long", None, None),
])
def test_a_refusal_says_the_context_and_the_count_where_its_words_do(text: str, limit: int | None,
                                                                    requested: int | None) -> None:
    assert (context_from_refusal(text), requested_in_refusal(text)) == (limit, requested)


@given(st.text(max_size=300))
def test_any_refusal_text_gives_a_plausible_number_or_none(text: str) -> None:
    for found in (context_from_refusal(text), requested_in_refusal(text)):
        assert found is None or 0 < found < 10**9


def test_the_tools_verdict_needs_the_schemas_to_add_tokens() -> None:
    kept = tools_verdict(with_tools=PROBE_ESTIMATED_TOKENS * 4 + 3000, without_tools=PROBE_ESTIMATED_TOKENS * 4)
    assert kept.verdict == "in_prompt" and kept.token_scale == 4.0
    dropped = tools_verdict(with_tools=1117, without_tools=1110)
    assert dropped.verdict == "ignored" and "added 7 prompt tokens" in (dropped.detail or "")
    assert tools_verdict(None, 100).verdict == "unknown"


@given(st.integers(256, 200_000), st.integers(1, 10**6), st.sampled_from(["auto", "native", "text"]),
       st.sampled_from(["in_prompt", "ignored", "refused", "unknown", None]))
def test_planned_bounds_never_exceed_the_configured_and_change_only_what_the_server_said(
    configured: int, stated: int, mode: str, verdict: str | None,
) -> None:
    bounds = Bounds(context_tokens=configured, tool_mode=mode)
    observed = ObservedEndpoint(context=ObservedContext(tokens=stated, source="s"),
                                tools=None if verdict is None else ToolsProbe(verdict=verdict))
    planned = planned_bounds(bounds, observed)
    Bounds.model_validate(planned.model_dump())  # still valid bounds
    assert planned.context_tokens <= configured
    assert planned.context_tokens == max(min(configured, stated), 256, bounds.max_response_tokens + 1)
    switched = mode == "auto" and verdict in ("ignored", "refused")
    assert planned.tool_mode == ("text" if switched else mode)
    assert planned.model_dump(exclude={"context_tokens", "tool_mode"}) == bounds.model_dump(
        exclude={"context_tokens", "tool_mode"})
    assert bool(describe_planned(bounds, planned, observed)) == (planned != bounds)
    assert planned_bounds(bounds, ObservedEndpoint()) == bounds, "a server that says nothing changes nothing"


def test_the_initial_scale_is_the_probes_never_below_one() -> None:
    probe = ToolsProbe(verdict="in_prompt", without_tools_prompt_tokens=PROBE_ESTIMATED_TOKENS * 3,
                       estimated_prompt_tokens=PROBE_ESTIMATED_TOKENS)
    assert initial_token_scale(ObservedEndpoint(tools=probe)) == 3.0
    low = probe.model_copy(update={"without_tools_prompt_tokens": 1})
    assert initial_token_scale(ObservedEndpoint(tools=low)) == 1.0
    assert initial_token_scale(ObservedEndpoint()) == 1.0


def test_the_server_root_is_the_base_url_without_v1() -> None:
    assert server_root("http://127.0.0.1:8080/v1/") == server_root("http://127.0.0.1:8080") == "http://127.0.0.1:8080"


# --- Against servers over loopback ------------------------------------------------------------------


async def test_the_probe_tells_a_server_that_keeps_tools_from_one_that_drops_them() -> None:
    for quirks, verdict in [(ServerQuirks(), "in_prompt"), (ServerQuirks(drop_tools=True), "ignored"),
                            (ServerQuirks(tools_need_tool_choice=True), "in_prompt"),
                            (ServerQuirks(token_factor=4.0), "in_prompt")]:
        async with serve_app(create_scripted_app([], default_policy="give-up", quirks=quirks)) as origin:
            probe = await probe_tools(f"{origin}/v1", "k", "any")
        assert probe.verdict == verdict, quirks
        assert probe.token_scale is not None and probe.token_scale == pytest.approx(quirks.token_factor, rel=0.01)


async def test_the_probe_reports_a_server_that_refuses_tools() -> None:
    async def completions(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        if "tools" in body:
            return JSONResponse({"error": {"message": "this model does not support tools"}}, status_code=400)
        return JSONResponse({"choices": [{"message": {"content": "ready"}}], "usage": {"prompt_tokens": 900}})

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    async with serve_app(app) as origin:
        probe = await probe_tools(f"{origin}/v1", "k", "m")
    assert probe.verdict == "refused" and "does not support tools" in (probe.detail or "")


@pytest.mark.parametrize(("routes", "expected"), [
    ([Route("/props", lambda _: JSONResponse({"default_generation_settings": {"n_ctx": 2048}}))],
     ObservedContext(tokens=2048, source="GET /props default_generation_settings.n_ctx")),
    ([Route("/api/v0/models/{name:path}", lambda r: JSONResponse(
        {"loaded_context_length": 4096} if r.path_params["name"] == "my/model" else {}))],
     ObservedContext(tokens=4096, source="GET /api/v0/models loaded_context_length")),
    ([Route("/api/show", lambda _: JSONResponse({"parameters": "num_ctx 16384"}), methods=["POST"]),
      Route("/props", lambda _: JSONResponse({"error": "not here"}, status_code=404))],
     ObservedContext(tokens=16384, source="POST /api/show parameters num_ctx")),
    ([], None),
])
async def test_discovery_asks_each_servers_own_endpoint(routes: list[Route], expected: ObservedContext | None) -> None:
    async with serve_app(Starlette(routes=routes)) as origin:
        assert await discover_context(f"{origin}/v1", "k", "my/model", {"data": []}) == expected


def test_the_strict_history_quirk_knows_openais_tool_message_rules() -> None:
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function",
                                                                "function": {"name": "click", "arguments": "{}"}}]}
    answer = {"role": "tool", "tool_call_id": "a", "content": "ok"}
    user, system = {"role": "user", "content": "page"}, {"role": "system", "content": "s"}
    assert history_problem([system, user, call, answer, {"role": "assistant", "content": "x"}, user]) is None
    assert history_problem([system, user, call, user]) is not None, "a call left unanswered"
    assert history_problem([system, user, answer]) is not None, "an answer to no call"
    assert history_problem([system, user, call, answer, answer]) is not None, "one call answered twice"
    assert history_problem([system, user, call]) is not None


async def _trickle() -> AsyncIterator[bytes]:
    yield b'{"data": ['
    for _ in range(100):
        await asyncio.sleep(0.05)
        yield b" "
    yield b"]}"


HOSTILE_ANSWERS: dict[str, Callable[[], Response]] = {
    "deep": lambda: Response(b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", media_type="application/json"),
    "surrogates": lambda: Response(b'{"data": [{"id": "\\ud800m", "\\udfff": "\\ud800"}], "n_ctx": 4096}',
                                   media_type="application/json"),
    "huge": lambda: Response(b'{"data": "' + b"x" * (MAX_ANSWER_BYTES + 10) + b'"}', media_type="application/json"),
    "digits": lambda: Response(b'{"default_generation_settings": {"n_ctx": ' + b"9" * 5000 + b"}}",
                               media_type="application/json"),
    "trickle": lambda: StreamingResponse(_trickle(), media_type="application/json"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_ANSWERS))
async def test_a_hostile_server_answer_never_crashes_the_run_start_or_its_manifest(
    kind: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(serverinfo, "PROBE_TIMEOUT_S", 1.0)  # the trickle takes 5 s: cut off after 1

    async def answer(_: Request) -> Response:
        return HOSTILE_ANSWERS[kind]()

    app = Starlette(routes=[Route(path, answer, methods=["GET", "POST"]) for path in
                            ("/v1/models", "/props", "/api/show", "/v1/chat/completions")])
    async with serve_app(app) as origin:
        observed = await observe_endpoint(f"{origin}/v1", "k")
        observed.context = await discover_context(f"{origin}/v1", "k", "m", observed.models_payload)
        observed.tools = await probe_tools(f"{origin}/v1", "k", "m")
    ObservedEndpoint.model_validate_json(observed.model_dump_json())  # it can be written and read back
    if kind == "surrogates":
        assert observed.models_payload == {"data": [{"id": "\ufffdm", "\ufffd": "\ufffd"}], "n_ctx": 4096}
    else:
        assert observed.models_payload is None and observed.context is None
    # A trickle not whole within the bound decided nothing: abandoned, and said so; the others are answers to nothing.
    assert observed.tools.verdict == ("not_checked" if kind == "trickle" else "unknown")


SCHEMA_ESTIMATE = estimate_tokens(json.dumps(tool_schemas()))


@given(st.integers(1, 200_000), st.floats(0.25, 8.0), st.integers(0, 7))
def test_schemas_counted_at_any_plausible_tokeniser_scale_are_in_the_prompt_and_a_template_few_are_not(
    without: int, scale: float, template: int,
) -> None:
    kept = tools_verdict(with_tools=without + round(SCHEMA_ESTIMATE * scale), without_tools=without)
    assert kept.verdict == "in_prompt", "a tokeniser counting a quarter of the estimate or more"
    dropped = tools_verdict(with_tools=without + template, without_tools=without)
    assert dropped.verdict == "ignored", "a few template tokens are not the schemas"
