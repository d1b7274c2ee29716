"""A real OpenAI-compatible HTTP server whose replies come from a scripted policy.

It serves `/v1/models` and `/v1/chat/completions` (native tool calls, or the text protocol when
the request carries no tools). Replies are deterministic: ids and token counts derive from the
request, and the model is named `scripted:<policy>` so its results are never mistaken for a
real model's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from adapter.prompts import normalise_instruction
from adapter.scripted.policies import POLICIES, Reply, decide, policy_by_name
from tasks import LoadedTask, ScriptedStep

SCRIPTED_FINGERPRINT = "computerops-scripted-v1"


def scripted_model_name(policy: str) -> str:
    return f"scripted:{policy}"


def _estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _completion(policy: str, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    messages = body.get("messages", [])
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:24]
    use_tools = bool(body.get("tools")) and reply.tool is not None
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if use_tools:
        message["tool_calls"] = [{
            "id": f"call_{digest[:16]}", "type": "function",
            "function": {"name": reply.tool, "arguments": reply.arguments or "{}"},
        }]
        finish_reason = "tool_calls"
        said = (reply.tool or "") + (reply.arguments or "")
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
    prompt_tokens = sum(_estimate_tokens(json.dumps(m)) for m in messages)
    completion_tokens = _estimate_tokens(said)
    return {
        "id": f"chatcmpl-scripted-{digest}",
        "object": "chat.completion",
        "created": 0,
        "model": scripted_model_name(policy),
        "system_fingerprint": SCRIPTED_FINGERPRINT,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def policy_of_model(model: object, default_policy: str | None) -> str | None:
    """The policy a request asks for: its model name `scripted:<policy>`, else the server's default."""
    if isinstance(model, str) and model.startswith("scripted:") and len(model) > len("scripted:"):
        return model.split(":", 1)[1]
    return default_policy


def create_scripted_app(
    tasks: list[LoadedTask], default_policy: str | None = None,
    extra_steps: Mapping[str, Mapping[str, list[ScriptedStep]]] | None = None,
) -> FastAPI:
    """The endpoint app over the given tasks (found by their instruction text).

    The request's model name `scripted:<policy>` picks the policy; other names get `default_policy`
    (the `--policy` of `computerops mock-llm`), or a 404 when there is none. `extra_steps` (task id -> name ->
    steps) are the step lists `mutant:<name>` follows.
    """
    if default_policy is not None:
        policy_by_name(default_policy)  # fail at start-up, not on the first request
    by_instruction: dict[str, LoadedTask] = {}
    for task in tasks:
        key = normalise_instruction(task.spec.instruction)
        if key in by_instruction:  # the scripted policies find a task by its instruction alone
            raise ValueError(f"tasks {by_instruction[key].id} and {task.id} have the same instruction; the scripted "
                             "endpoint could not tell them apart")
        by_instruction[key] = task
    app = FastAPI(title="ComputerOps scripted endpoint")
    listed = [default_policy] if default_policy else [p for p in POLICIES]

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        return JSONResponse({
            "object": "list",
            "data": [{"id": scripted_model_name(p), "object": "model", "created": 0,
                      "owned_by": "computerops-scripted"} for p in listed],
        }, headers={"x-computerops-scripted": ",".join(listed)})

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError as exc:
            raise HTTPException(status_code=400, detail=f"request body is not JSON: {exc.msg}") from exc
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise HTTPException(status_code=400, detail="request needs a 'messages' list")
        if body.get("stream"):
            raise HTTPException(status_code=400, detail="the scripted endpoint does not stream")
        policy = policy_of_model(body.get("model"), default_policy)
        if policy is None:
            raise HTTPException(status_code=404, detail=f"unknown model {body.get('model')!r}; use scripted:<policy>")
        try:
            policy_by_name(policy)
        except ValueError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        reply = decide(policy, body["messages"], by_instruction, extra_steps)
        return JSONResponse(_completion(policy, body, reply), headers={"x-computerops-scripted": policy})

    return app
