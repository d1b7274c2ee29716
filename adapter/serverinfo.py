"""What an OpenAI-compatible server says of its own limits, asked before a run: the context it serves and whether
it puts the tool schemas into the prompt.

Servers say their context in different places, none of them standard:
- vLLM: `max_model_len` of the model in `GET /v1/models`;
- llama.cpp's server: `GET /props` (beside /v1), `default_generation_settings.n_ctx` (per slot), or `n_ctx`;
- LM Studio: `GET /api/v0/models/{model}`, `loaded_context_length` (what is loaded, not the model's maximum);
- Ollama: `POST /api/show`, a `num_ctx` line in `parameters` (when none is set, Ollama uses its own default,
  which it does not report: nothing is recorded then);
- and any server, in the wording of a refusal of an over-long prompt (`context_from_refusal`).

Whether tools reach the prompt is measured, not assumed: two one-token requests differing only in the tool
schemas, and the server's own prompt-token counts of each (`probe_tools`). A server that counts the same tokens
with and without them drops the tools (llama.cpp's did, without `tool_choice`); the run then uses the text
protocol, which needs no tool support. A probe refused for its length (the schemas alone can overflow a small
context) is asked again with a minimal prompt, so the verdict comes from a probe that fits; when even that is refused
with the schemas and answered without them, the schemas overflow the context (`overflow`).

Whether tool *results* reach the prompt is measured the same way (`probe_tool_results`): a conversation ending in a
tool call and its result, with a long result and a short one. A chat template that drops tool messages
(llama-cpp-python's function-calling one did) counts both the same; the run then sends each observation in a user
message after a short tool result. Everything found is recorded as observed, with where it came from.

The chat-completion probes are asked one at a time (never several at once on a server with one slot), each with
`max_tokens: 1` so a server computes little beyond reading the prompt, and each waits as long as the run lets one
model reply take (`Bounds.request_timeout_s`): a model served on a CPU reads a prompt slowly, and a probe cut sooner
would decide nothing. A probe that gets no answer within that bound is abandoned: its connection is closed (httpx
closes a response it did not finish reading), no further probe is sent to the server that did not answer, and the
verdict is `not_checked`, its detail saying why ("no answer within 120 s"), never a silent None. What the server
does with the abandoned request is its own: llama-cpp-python's server (0.3.x) drops a non-streamed request whose
client left before it began, and finishes one already running (reading the prompt, then its one token) before it
takes the next; with nothing further sent, the first episode waits behind at most that one.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Literal
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field

from adapter.actions import text_protocol, tool_schemas
from adapter.context import estimate_tokens
from adapter.prompts import system_prompt
from adapter.reply import JsonProblem, clean_text, load_json, read_within, token_count

PROBE_TIMEOUT_S = 15.0
"""Longest wait for one request to a server's own endpoints (/models, /props, ...): a server that does not answer is
recorded as not saying. The chat-completion probes wait the run's request timeout instead (see above)."""


class ObservedContext(BaseModel):
    """A context size the server stated, and where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: int
    source: str
    """Where it was read, e.g. `GET /props default_generation_settings.n_ctx`."""


ToolsVerdict = Literal["in_prompt", "ignored", "refused", "overflow", "unknown", "not_checked"]


class ToolsProbe(BaseModel):
    """What the server did with tool schemas in a probe request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: ToolsVerdict
    """in_prompt: its prompt count grew by the schemas; ignored: it did not (the tools were dropped); refused:
    the request with tools was refused as unsupported; overflow: a minimal prompt was answered without the schemas and
    refused for its length with them (no native prompt fits the context); unknown: no counts to compare (the detail
    says why); not_checked: a probe got no answer within its bound (the detail says why: `because ...`)."""
    with_tools_prompt_tokens: int | None = None
    without_tools_prompt_tokens: int | None = None
    estimated_prompt_tokens: int | None = None
    """The adapter's estimate of the probe prompt without tools: the server's count over it is the token scale
    episodes start with (`token_scale`)."""
    refused_for_context: int | None = None
    """The context a refusal of a probe request for its length named (the schemas alone can overflow a small
    context): the server's word on its context where it says it nowhere else."""
    minimal: bool = False
    """The counts are the minimal probe's (`MINIMAL_PROBE_MESSAGES`): the full one was refused for its length."""
    full_prompt_tokens: int | None = None
    """With `minimal`: the server's count of the full probe without tools, where it answered it or its refusal
    named its count. The token scale comes from it (a minimal prompt's few chat-template tokens weigh more)."""
    detail: str | None = None

    @property
    def token_scale(self) -> float | None:
        """Server tokens per estimated token in the probe, None without both counts."""
        if self.full_prompt_tokens is not None:
            return self.full_prompt_tokens / PROBE_ESTIMATED_TOKENS
        if self.without_tools_prompt_tokens is None or not self.estimated_prompt_tokens:
            return None
        return self.without_tools_prompt_tokens / self.estimated_prompt_tokens


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**9 else None


def context_from_models(payload: object, model: str) -> ObservedContext | None:
    """vLLM's `max_model_len` (and the `context_length` some proxies add) for `model` in a GET /models answer;
    the only listed model's when `model` is not listed (servers that serve one model under any name)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    named = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in named:
        for key in ("max_model_len", "context_length", "context_window"):
            if (tokens := _positive(entry.get(key))) is not None:
                return ObservedContext(tokens=tokens, source=f"GET /models {key}")
    return None


def context_from_props(payload: object) -> ObservedContext | None:
    """llama.cpp's `GET /props`: the per-slot context of its generation settings, else its `n_ctx`."""
    if not isinstance(payload, dict):
        return None
    settings = payload.get("default_generation_settings")
    if isinstance(settings, dict) and (tokens := _positive(settings.get("n_ctx"))) is not None:
        return ObservedContext(tokens=tokens, source="GET /props default_generation_settings.n_ctx")
    if (tokens := _positive(payload.get("n_ctx"))) is not None:
        return ObservedContext(tokens=tokens, source="GET /props n_ctx")
    return None


def context_from_lmstudio(payload: object) -> ObservedContext | None:
    """LM Studio's `GET /api/v0/models/{model}`: the context the model is loaded with."""
    if isinstance(payload, dict) and (tokens := _positive(payload.get("loaded_context_length"))) is not None:
        return ObservedContext(tokens=tokens, source="GET /api/v0/models loaded_context_length")
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def context_from_ollama(payload: object) -> ObservedContext | None:
    """Ollama's `POST /api/show`: a `num_ctx` set in the model's parameters (its default is not reported)."""
    parameters = payload.get("parameters") if isinstance(payload, dict) else None
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if found is not None and (tokens := _positive(int(found.group(1)[:10]))) is not None:
        return ObservedContext(tokens=tokens, source="POST /api/show parameters num_ctx")
    return None


_REFUSAL_LIMITS = (
    re.compile(r"maximum context length is (\d{2,9})", re.IGNORECASE),  # OpenAI, vLLM
    # llama.cpp, llama-cpp-python, LM Studio ("loaded with context length of only 4096 tokens")
    re.compile(r"context (?:window|size|length) (?:(?:of|is)\s+)?(?:only\s+)?\(?(\d{2,9})", re.IGNORECASE),
    re.compile(r"""["']?n_ctx["']?\s*[:=]\s*(\d{2,9})"""),  # llama.cpp's error object
)


_REFUSAL_REQUESTED = (
    re.compile(r"you requested (\d{1,9}) tokens", re.IGNORECASE),  # OpenAI, vLLM (prompt and reply room)
    re.compile(r"request \((\d{1,9}) tokens\)", re.IGNORECASE),  # llama.cpp
    re.compile(r"requested tokens \((\d{1,9})\)", re.IGNORECASE),  # llama-cpp-python
    re.compile(r"""["']?n_prompt_tokens["']?\s*[:=]\s*(\d{1,9})"""),  # llama.cpp's error object
)


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        if found := pattern.search(text):
            return _positive(int(found.group(1)))
    return None


def context_from_refusal(text: str) -> int | None:
    """The context size a refusal of an over-long prompt names ("This model's maximum context length is 8192
    tokens", "exceeds the available context size (4096 tokens)", "exceed context window of 2048"), else None."""
    return _first_number(_REFUSAL_LIMITS, text)


def requested_in_refusal(text: str) -> int | None:
    """The tokens a refusal says the request took ("you requested 9000 tokens", "request (4476 tokens)",
    "Requested tokens (2100)"): the server's own count of a prompt it would not take, else None."""
    return _first_number(_REFUSAL_REQUESTED, text)


def server_root(base_url: str) -> str:
    """The server's own root: the base URL without its trailing /v1 (where /props and /api live)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


MAX_ANSWER_BYTES = 1_000_000
"""Largest answer read from a server's own endpoints (/models, /props, ...): what they say of themselves is small."""


class ServerAnswer(BaseModel):
    """What a server answered to one discovery request, read within bounds: at most MAX_ANSWER_BYTES, within
    its time bound in all (PROBE_TIMEOUT_S, or a probe's request timeout; a server that trickles its answer is cut
    off too), JSON read by `reply.load_json`
    (bounded depth and numbers) with lone surrogates replaced, so a hostile answer can neither crash the run nor
    the manifest it is recorded in."""

    model_config = ConfigDict(frozen=True)

    status: int | None
    """The HTTP status, None when no answer came (`error` says why)."""
    payload: Any = None
    """The answer as JSON, None when it was not JSON (or too deep, too long)."""
    text: str = ""
    """The first 500 characters of the answer, cleaned, for error messages."""
    headers: dict[str, str] = Field(default_factory=dict)
    error: str | None = None
    timed_out: bool = False
    """No whole answer came within the bound: the request was abandoned and its connection closed."""


def _cleaned(value: Any) -> Any:
    """A JSON value with every string (keys included) cleaned of lone surrogates."""
    if isinstance(value, str):
        return clean_text(value)[0]
    if isinstance(value, list):
        return [_cleaned(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(str(k))[0]: _cleaned(v) for k, v in value.items()}
    return value


async def fetch_json(client: httpx.AsyncClient, method: str, url: str, *, timeout_s: float | None = None,
                     **kwargs: Any) -> ServerAnswer:
    """One request to a server's own endpoint, bounded in size and in time (`timeout_s` in all, by default
    PROBE_TIMEOUT_S; `ServerAnswer`); never raises for what the server does. A request abandoned at the bound has its
    connection closed."""
    bound = PROBE_TIMEOUT_S if timeout_s is None else timeout_s

    async def read() -> ServerAnswer:
        async with client.stream(method, url, **kwargs) as response:
            body = await read_within(response.aiter_bytes(), MAX_ANSWER_BYTES)
            if body is None:
                return ServerAnswer(status=response.status_code, headers=dict(response.headers),
                                    error=f"answer over {MAX_ANSWER_BYTES} bytes")
            text = clean_text(body.decode("utf-8", errors="replace"))[0]
            try:
                payload = _cleaned(load_json(text))
            except JsonProblem:
                payload = None
            return ServerAnswer(status=response.status_code, payload=payload, text=text[:500],
                                headers=dict(response.headers))  # header values are latin-1: no surrogates

    try:
        return await asyncio.wait_for(read(), timeout=bound)
    except TimeoutError:
        return ServerAnswer(status=None, error=not_answered(bound), timed_out=True)
    except httpx.HTTPError as exc:
        return ServerAnswer(status=None, error=clean_text(f"{type(exc).__name__}: {exc}")[0][:500])


def not_answered(timeout_s: float) -> str:
    """Why a probe decided nothing when the server did not answer in time."""
    return f"no answer within {timeout_s:g} s"


async def _json(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> object:
    answer = await fetch_json(client, method, url, **kwargs)
    return answer.payload if answer.status == 200 else None


async def discover_context(base_url: str, api_key: str, model: str, models_payload: object) -> ObservedContext | None:
    """The context the server says it serves `model` with, from the first place that says it (see the module
    docstring), or None."""
    if (found := context_from_models(models_payload, model)) is not None:
        return found
    root = server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, headers=headers) as client:
        if (found := context_from_props(await _json(client, "GET", f"{root}/props"))) is not None:
            return found
        lmstudio = await _json(client, "GET", f"{root}/api/v0/models/{quote(model, safe='')}")
        if (found := context_from_lmstudio(lmstudio)) is not None:
            return found
        return context_from_ollama(await _json(client, "POST", f"{root}/api/show", json={"model": model}))


PROBE_MESSAGES = [
    {"role": "system", "content": system_prompt(text_protocol_mode=False)},
    {"role": "user", "content": "Reply with the single word: ready. The text below is a sample only.\n\n"
                                + text_protocol()},
]
"""The probe's prompt: text like an episode's (the system prompt and the protocol's JSON), long enough that the
server's count of it over the estimate is the token scale to start episodes with (a chat template's own few
tokens hardly move it)."""
PROBE_ESTIMATED_TOKENS = sum(estimate_tokens(json.dumps(m)) for m in PROBE_MESSAGES)
MINIMAL_PROBE_MESSAGES = [
    {"role": "system", "content": system_prompt(text_protocol_mode=False)},
    {"role": "user", "content": "Reply with the single word: ready."},
]
"""The probe's prompt when the full one was refused for its length: as small as an episode's system prompt allows,
so what decides is whether the tool schemas fit, not the sample text."""
MINIMAL_PROBE_ESTIMATED_TOKENS = sum(estimate_tokens(json.dumps(m)) for m in MINIMAL_PROBE_MESSAGES)


def _prompt_tokens(payload: object) -> int | None:
    usage = payload.get("usage") if isinstance(payload, dict) else None
    return _positive(token_count(usage.get("prompt_tokens"))) if isinstance(usage, dict) else None


def tools_verdict(with_tools: int | None, without_tools: int | None, *, minimal: bool = False) -> ToolsProbe:
    """Whether the schemas reached the prompt, from the two counts: they must add at least a fifth of their
    estimated size (tokenisers differ about 4x from the estimate either way; a dropped schema adds a few
    template tokens at most). `minimal`: the counts are of the minimal probe."""
    estimated = MINIMAL_PROBE_ESTIMATED_TOKENS if minimal else PROBE_ESTIMATED_TOKENS
    counts = {"with_tools_prompt_tokens": with_tools, "without_tools_prompt_tokens": without_tools,
              "estimated_prompt_tokens": estimated, "minimal": minimal}
    if with_tools is None or without_tools is None:
        return ToolsProbe(verdict="unknown", **counts, detail="the server reported no prompt tokens")
    threshold = max(8, estimate_tokens(json.dumps(tool_schemas())) // 5)
    verdict: ToolsVerdict = "in_prompt" if with_tools - without_tools >= threshold else "ignored"
    return ToolsProbe(verdict=verdict, **counts, detail=None if verdict == "in_prompt" else
                      f"the tool schemas added {with_tools - without_tools} prompt tokens (fewer than {threshold})")


def _length_refusal(answer: ServerAnswer) -> int | None:
    """The context a 400 refusing a probe for its length names, else None."""
    return context_from_refusal(answer.text) if answer.status == 400 else None


def _counted(answer: ServerAnswer) -> int | None:
    return _prompt_tokens(answer.payload) if answer.status == 200 else None


async def _probe_pair(client: httpx.AsyncClient, url: str, model: str, messages: list[dict[str, Any]],
                      timeout_s: float) -> tuple[ServerAnswer, ServerAnswer]:
    """One-token requests of `messages` without and with the tool schemas (and tool_choice auto), one after the
    other; when the first gets no answer in time the second is not sent (it is answered as the first)."""
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": 1, "temperature": 0}
    plain = await fetch_json(client, "POST", url, json=body, timeout_s=timeout_s)
    if plain.timed_out:
        return plain, plain
    tooled = await fetch_json(client, "POST", url, json={**body, "tools": tool_schemas(), "tool_choice": "auto"},
                              timeout_s=timeout_s)
    return plain, tooled


async def probe_tools(base_url: str, api_key: str, model: str, *, timeout_s: float | None = None) -> ToolsProbe:
    """Two one-token requests, with and without the tool schemas (and tool_choice auto), compared by the
    server's prompt-token counts (`tools_verdict`); refused for their length, the same with the minimal prompt.
    Each waits `timeout_s` (the run's request timeout; by default PROBE_TIMEOUT_S); one not answered in time makes the
    verdict `not_checked`."""
    timeout_s = PROBE_TIMEOUT_S if timeout_s is None else timeout_s
    url = f"{base_url.rstrip('/')}/chat/completions"
    async with httpx.AsyncClient(timeout=timeout_s, headers={"Authorization": f"Bearer {api_key}"}) as client:
        plain, tooled = await _probe_pair(client, url, model, PROBE_MESSAGES, timeout_s)
        if plain.timed_out or tooled.timed_out:
            return ToolsProbe(verdict="not_checked", detail=not_answered(timeout_s))
        limit = next((c for c in (_length_refusal(tooled), _length_refusal(plain)) if c is not None), None)
        if limit is not None and plain.status is not None and tooled.status is not None:
            refused = tooled if _length_refusal(tooled) is not None else plain
            full = _counted(plain) or (requested_in_refusal(plain.text) if plain.status == 400 else None)
            return await _minimal_probe(client, url, model, limit, refused, full, timeout_s)
    if plain.status is None or tooled.status is None:
        return ToolsProbe(verdict="unknown", detail=f"probe request failed: {plain.error or tooled.error}")
    plain_count = {"without_tools_prompt_tokens": _counted(plain), "estimated_prompt_tokens": PROBE_ESTIMATED_TOKENS}
    if tooled.status == 400 and plain.status == 200 and "tool" in tooled.text.lower():
        return ToolsProbe(verdict="refused", **plain_count, detail=f"HTTP 400 with tools: {tooled.text[:300]}")
    if plain.status != 200 or tooled.status != 200:
        return ToolsProbe(verdict="unknown", **plain_count, detail=f"probe answered HTTP {plain.status} without "
                                                                  f"tools, HTTP {tooled.status} with them")
    return tools_verdict(_counted(tooled), _counted(plain))


async def _minimal_probe(client: httpx.AsyncClient, url: str, model: str, limit: int, refused: ServerAnswer,
                         full: int | None, timeout_s: float) -> ToolsProbe:
    """The verdict of the minimal probe, after the full one was refused for its length (`refused`, naming the
    context `limit`; `full`: the server's count of the full probe without tools, where it said one)."""
    plain, tooled = await _probe_pair(client, url, model, MINIMAL_PROBE_MESSAGES, timeout_s)
    said = f"the server refused the full probe for its length ({refused.text[:200]})"
    known = {"refused_for_context": limit, "minimal": True, "full_prompt_tokens": full}
    if plain.timed_out or tooled.timed_out:
        return ToolsProbe(verdict="not_checked", **known, detail=f"{said}; the minimal probe got "
                                                                 f"{not_answered(timeout_s)}")
    if plain.status == 200 and _length_refusal(tooled) is not None:
        return ToolsProbe(verdict="overflow", without_tools_prompt_tokens=_counted(plain),
                          estimated_prompt_tokens=MINIMAL_PROBE_ESTIMATED_TOKENS, **known,
                          detail=f"{said}, and a minimal prompt with the tool schemas too, not without them")
    if plain.status == 200 and tooled.status == 200:
        found = tools_verdict(_counted(tooled), _counted(plain), minimal=True)
        return found.model_copy(update={**known, "detail": "; ".join(
            d for d in (said + ": decided from a minimal prompt", found.detail) if d)})
    return ToolsProbe(verdict="unknown", **known, detail=f"{said}; the minimal probe answered HTTP {plain.status} "
                                                         f"without tools, HTTP {tooled.status} with them")


ToolResultsVerdict = Literal["in_prompt", "dropped", "unknown", "not_checked"]


class ToolResultsProbe(BaseModel):
    """What the server did with a tool message's content in a probe request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: ToolResultsVerdict
    """in_prompt: a long tool result counted more prompt tokens than a short one; dropped: it did not (the chat
    template leaves tool messages out, so the model would never see a page after the first); unknown: no counts to
    compare (the detail says why); not_checked: no probe decided it (the detail says why: `because ...`), e.g. it got
    no answer within its bound, or the tools probe before it did not find the schemas in the prompt."""
    long_result_prompt_tokens: int | None = None
    short_result_prompt_tokens: int | None = None
    detail: str | None = None


PROBE_RESULT_TEXT = "Result: ok\n\nObservation:\nPage: probe\n" + "".join(
    f"[{n}] link \"Ticket T-{2000 + n} of the sample list\"\n" for n in range(1, 41))
"""The long tool result of the probe: an observation's kind of text, about 1,700 characters."""
PROBE_RESULT_SHORT = "Result: ok"


def probe_result_messages(result: str) -> list[dict[str, Any]]:
    """A conversation as an episode's ends after one native tool call: the call, and its result `result`."""
    call = {"id": "call_probe", "type": "function", "function": {"name": "click", "arguments": '{"id": "1"}'}}
    return [*MINIMAL_PROBE_MESSAGES, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_probe", "content": result}]


def tool_results_verdict(long_result: int | None, short_result: int | None) -> ToolResultsProbe:
    """Whether the tool result reached the prompt: the long one must add at least a fifth of its estimated size
    over the short one (as `tools_verdict` does for the schemas)."""
    counts = {"long_result_prompt_tokens": long_result, "short_result_prompt_tokens": short_result}
    if long_result is None or short_result is None:
        return ToolResultsProbe(verdict="unknown", **counts, detail="the server reported no prompt tokens")
    threshold = max(8, estimate_tokens(PROBE_RESULT_TEXT) // 5)
    if long_result - short_result >= threshold:
        return ToolResultsProbe(verdict="in_prompt", **counts)
    return ToolResultsProbe(verdict="dropped", **counts, detail=(
        f"a tool result of {len(PROBE_RESULT_TEXT)} characters added {long_result - short_result} prompt tokens "
        f"(fewer than {threshold}): the chat template leaves tool messages out"))


async def probe_tool_results(base_url: str, api_key: str, model: str, *,
                             timeout_s: float | None = None) -> ToolResultsProbe:
    """Two one-token requests ending in a tool call's result, a long one and a short one, with the tool schemas
    as episodes send them, compared by the server's prompt-token counts (`tool_results_verdict`). Each waits
    `timeout_s` (the run's request timeout; by default PROBE_TIMEOUT_S); one not answered in time makes the verdict
    `not_checked`."""
    timeout_s = PROBE_TIMEOUT_S if timeout_s is None else timeout_s
    url = f"{base_url.rstrip('/')}/chat/completions"
    body: dict[str, Any] = {"model": model, "max_tokens": 1, "temperature": 0, "tools": tool_schemas(),
                            "tool_choice": "auto"}
    async with httpx.AsyncClient(timeout=timeout_s, headers={"Authorization": f"Bearer {api_key}"}) as client:
        long = await fetch_json(client, "POST", url, json={**body, "messages": probe_result_messages(
            PROBE_RESULT_TEXT)}, timeout_s=timeout_s)
        if long.timed_out:
            return ToolResultsProbe(verdict="not_checked", detail=not_answered(timeout_s))
        short = await fetch_json(client, "POST", url, json={**body, "messages": probe_result_messages(
            PROBE_RESULT_SHORT)}, timeout_s=timeout_s)
    if short.timed_out:
        return ToolResultsProbe(verdict="not_checked", detail=not_answered(timeout_s))
    if long.status != 200 or short.status != 200:
        said = long.error or short.error or (long.text if long.status != 200 else short.text)[:300]
        return ToolResultsProbe(verdict="unknown", detail=f"probe answered HTTP {short.status} with a short tool "
                                                          f"result, HTTP {long.status} with a long one: {said}")
    return tool_results_verdict(_counted(long), _counted(short))
