"""A real OpenAI-compatible HTTP server whose replies come from a scripted policy.

It serves `/v1/models` and `/v1/chat/completions` (native tool calls, or the text protocol when the request
carries no tools; streamed as OpenAI's server-sent events when it says `stream: true`). Replies are deterministic:
ids and token counts derive from the request, and the model is named `scripted:<policy>` so its results are never
mistaken for a real model's.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from adapter.context import text_tokens
from adapter.prompts import normalise_instruction
from adapter.scripted.conversation import Reply
from adapter.scripted.policies import POLICIES, decide, policy_by_name, twin_group
from computerops.core.hashing import canonical_sha256
from computerops.core.vocabulary import SCRIPTED_HEADER, scripted_model, scripted_policy
from tasks import LoadedTask, ScriptedStep

SCRIPTED_FINGERPRINT = "computerops-scripted-v1"


@dataclass(frozen=True)
class ServerQuirks:
    """Behaviours of real servers the scripted endpoint can imitate, to test the adapter against them end to end
    (all off by default). Taken from llama.cpp's server, LM Studio and Ollama as met in use."""

    context_tokens: int | None = None
    """Refuse, with llama.cpp's HTTP 400 wording, a request whose counted prompt and reply room exceed this."""
    context_in_props: bool = True
    """With `context_tokens`, say it in GET /props (llama.cpp does); False: only the refusal names it."""
    token_factor: float = 1.0
    """Prompt tokens counted per estimated token (real tokenisers count 3-4x the 4-characters estimate)."""
    tools_need_tool_choice: bool = False
    """Leave the tool schemas out of the prompt unless the request sends tool_choice."""
    drop_tools: bool = False
    """Always leave the tool schemas out of the prompt (a server or template without tool support)."""
    refuse_null_content: bool = False
    """Answer HTTP 500 to a history holding an assistant message whose content is null."""
    strict_history: bool = False
    """Answer HTTP 400, as OpenAI's API does, to a history whose tool messages do not answer the tool calls of the
    assistant message just before them, one each, by id (`history_problem`)."""
    served_model: str | None = None
    """Serve any requested model name with the default policy, echo the requested name in replies, and list only
    this one in GET /v1/models (a server with one model file)."""
    drop_tool_results: bool = False
    """Leave tool messages out of the prompt, as llama-cpp-python's function-calling chat template does: they are
    neither counted nor seen by the policy (the model never reads a page sent as a tool result)."""
    ignore_max_tokens_with_tools: bool = False
    """With tools and tool_choice auto, ignore max_tokens, as llama-cpp-python's function calling does: a tool call
    runs on for about 2,000 tokens past its arguments (which are then no JSON) and the usage counts them all."""


RAMBLE = " and then I will check the page again" * 220
"""What a tool call runs on with when max_tokens is ignored (`ignore_max_tokens_with_tools`): about 2,000 tokens."""


def model_view(messages: list[Any], quirks: ServerQuirks) -> list[Any]:
    """The messages as the imitated chat template puts them into the prompt."""
    if not quirks.drop_tool_results:
        return messages
    return [m for m in messages if not (isinstance(m, dict) and m.get("role") == "tool")]


def history_problem(messages: list[Any]) -> str | None:
    """What breaks OpenAI's rules for tool messages in a chat history, or None: an assistant message's tool calls
    must be answered at once by one tool message each, with their ids, and a tool message must answer one."""
    waiting: list[object] = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                return f"messages[{index}]: a tool message must answer a tool call just before it ({call_id!r})"
            waiting.remove(call_id)
            continue
        if waiting:
            return f"messages[{index}]: tool calls {waiting} of the assistant message before were not answered"
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls:
            waiting = [c.get("id") for c in calls if isinstance(c, dict)]
            if len(set(waiting)) != len(calls) or not all(isinstance(i, str) and i for i in waiting):
                return f"messages[{index}]: every tool call needs an id of its own"
    return f"the last tool calls {waiting} were not answered" if waiting else None


def _counted(text: str) -> int:
    """Tokens the scripted endpoint counts for a text: the shared estimate (adapter/context.py), at least 1."""
    return max(1, text_tokens(text))


def prompt_tokens(body: dict[str, Any], *, with_tools: bool, token_factor: float = 1.0) -> int:
    """The prompt tokens the scripted endpoint counts: the messages and, when they reach the prompt, the tool
    schemas, at the 4-characters estimate times `token_factor`."""
    counted = sum(_counted(json.dumps(m)) for m in body.get("messages", []))
    if with_tools:
        counted += _counted(json.dumps(body.get("tools")))
    return math.ceil(counted * token_factor)


def _completion(policy: str, body: dict[str, Any], reply: Reply, *, tools_in_prompt: bool,
                quirks: ServerQuirks, model: str) -> dict[str, Any]:
    messages = body.get("messages", [])
    digest = canonical_sha256(messages)[:24]
    use_tools = tools_in_prompt and reply.tool is not None
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if use_tools:
        arguments = reply.arguments or "{}"
        if quirks.ignore_max_tokens_with_tools and body.get("tool_choice") == "auto":
            arguments += RAMBLE
        message["tool_calls"] = [{
            "id": f"call_{digest[:16]}", "type": "function",
            "function": {"name": reply.tool, "arguments": arguments},
        }]
        finish_reason = "tool_calls"
        said = (reply.tool or "") + arguments
    else:
        if reply.tool is not None:  # text protocol: the action as a JSON object in the content
            try:
                arguments = json.loads(reply.arguments or "{}")
                message["content"] = json.dumps({"action": reply.tool, **arguments}, ensure_ascii=False)
            except json.JSONDecodeError:
                message["content"] = f'{{"action": "{reply.tool}", {reply.arguments}'
        else:
            message["content"] = reply.content or ""
        finish_reason = "stop"
        said = message["content"] or ""
    counted = prompt_tokens(body, with_tools=tools_in_prompt, token_factor=quirks.token_factor)
    completion_tokens = _counted(said)
    return {
        "id": f"chatcmpl-scripted-{digest}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "system_fingerprint": SCRIPTED_FINGERPRINT,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": counted,
            "completion_tokens": completion_tokens,
            "total_tokens": counted + completion_tokens,
        },
    }


STREAM_PIECE = 40
"""Characters of text or tool-call arguments per chunk of a streamed reply."""


def _pieces(text: str) -> list[str]:
    return [text[i:i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)] or [""]


def stream_completion(completion: dict[str, Any], *, include_usage: bool) -> str:
    """A completion as the server-sent events of its stream: a chunk with the role, the text in pieces, the tool
    call (id, type and name first, then its arguments in pieces), a chunk with the finish reason, the usage chunk
    (`choices: []`) when the request asked for it, and `data: [DONE]`."""
    choice = completion["choices"][0]
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    if message.get("content") is not None:
        deltas += [{"content": piece} for piece in _pieces(message["content"])]
    for index, call in enumerate(message.get("tool_calls") or []):
        deltas.append({"tool_calls": [{"index": index, "id": call["id"], "type": call["type"],
                                       "function": {"name": call["function"]["name"], "arguments": ""}}]})
        deltas += [{"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                   for piece in _pieces(call["function"]["arguments"])]
    top = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
    chunks = [{**top, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
              for delta in deltas]
    chunks.append({**top, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}]})
    if include_usage:
        chunks.append({**top, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]})
    return "".join(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"


def policy_of_model(model: object, default_policy: str | None) -> str | None:
    """The policy a request asks for: its model name `scripted:<policy>`, else the server's default."""
    return scripted_policy(model) or default_policy


def create_scripted_app(
    tasks: list[LoadedTask], default_policy: str | None = None,
    extra_steps: Mapping[str, Mapping[str, list[ScriptedStep]]] | None = None,
    quirks: ServerQuirks | None = None,
) -> FastAPI:
    """The endpoint app over the given tasks (found by their instruction text).

    The request's model name `scripted:<policy>` picks the policy; other names get `default_policy`
    (the `--policy` of `computerops mock-llm`), or a 404 when there is none. `extra_steps` (task id -> name ->
    steps) are the step lists `mutant:<name>` follows. `quirks` imitate real servers' behaviours.
    """
    quirks = quirks or ServerQuirks()
    if default_policy is not None:
        policy_by_name(default_policy)  # fail at start-up, not on the first request
    if quirks.served_model is not None and default_policy is None:
        raise ValueError("a served_model quirk needs a default policy to serve every model name with")
    by_instruction: dict[str, list[LoadedTask]] = {}
    for task in tasks:  # the scripted policies find a task by its instruction (twins by the payload shown)
        by_instruction.setdefault(normalise_instruction(task.spec.instruction), []).append(task)
    for group in by_instruction.values():
        problem = twin_group(group) if len(group) > 1 else None
        if problem is not None:
            raise ValueError(f"{problem}; the scripted endpoint could not tell them apart")
    app = FastAPI(title="ComputerOps scripted endpoint")
    listed = [default_policy] if default_policy else [p for p in POLICIES]

    served = [quirks.served_model] if quirks.served_model is not None else [scripted_model(p) for p in listed]

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        return JSONResponse({
            "object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "computerops-scripted"}
                     for name in served],
        }, headers={SCRIPTED_HEADER: ",".join(listed)})

    if quirks.context_tokens is not None and quirks.context_in_props:
        @app.get("/props")
        async def props() -> JSONResponse:  # llama.cpp's server says its per-slot context here
            return JSONResponse({"default_generation_settings": {"n_ctx": quirks.context_tokens}, "total_slots": 1})

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        try:
            body = await request.json()
        except json.JSONDecodeError as exc:
            raise HTTPException(status_code=400, detail=f"request body is not JSON: {exc.msg}") from exc
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise HTTPException(status_code=400, detail="request needs a 'messages' list")
        if quirks.refuse_null_content and any(isinstance(m, dict) and m.get("role") == "assistant"
                                              and m.get("content") is None for m in body["messages"]):
            raise HTTPException(status_code=500, detail="chat template error: assistant content is null")
        if quirks.strict_history and (problem := history_problem(body["messages"])):
            raise HTTPException(status_code=400, detail=f"invalid chat history: {problem}")
        requested = body.get("model")
        policy = default_policy if quirks.served_model is not None else policy_of_model(requested, default_policy)
        if policy is None:
            raise HTTPException(status_code=404, detail=f"unknown model {body.get('model')!r}; use scripted:<policy>")
        try:
            policy_by_name(policy)
        except ValueError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        tools_in_prompt = bool(body.get("tools")) and not quirks.drop_tools and (
            not quirks.tools_need_tool_choice or "tool_choice" in body)
        body = {**body, "messages": model_view(body["messages"], quirks)}  # what the model is given
        if quirks.context_tokens is not None:
            counted = prompt_tokens(body, with_tools=tools_in_prompt, token_factor=quirks.token_factor)
            room = body.get("max_tokens")
            wanted = counted + (room if isinstance(room, int) else 0)
            if wanted > quirks.context_tokens:  # llama.cpp's own words and error object
                return JSONResponse({"error": {
                    "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": counted,
                    "n_ctx": quirks.context_tokens,
                    "message": f"request ({wanted} tokens) exceeds the available context size "
                               f"({quirks.context_tokens} tokens)"}}, status_code=400)
        seed = body.get("seed")  # the seeded policies draw from it; a request without a whole-number seed: 0
        seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
        reply = decide(policy, body["messages"], by_instruction, extra_steps, seed=seed)
        if reply.pause_s > 0:
            await asyncio.sleep(reply.pause_s)
        model = str(requested) if quirks.served_model is not None else scripted_model(policy)
        completion = _completion(policy, body, reply, tools_in_prompt=tools_in_prompt, quirks=quirks, model=model)
        if body.get("stream") is True:
            options = body.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True
            return Response(stream_completion(completion, include_usage=usage), media_type="text/event-stream",
                            headers={SCRIPTED_HEADER: policy, "Cache-Control": "no-cache"})
        return JSONResponse(completion, headers={SCRIPTED_HEADER: policy})

    return app
