"""Reading what an OpenAI-compatible endpoint answered, whatever it sent.

A chat completion reply is two things: the envelope the *endpoint* wrote (a JSON object with `choices`, a
`message`, `usage`) and the content the *model* wrote inside it (text, tool-call names and arguments). Faults are
classified by whose they are:

- the envelope is not JSON, not an object, an error object, has no choices, or has a field of the wrong type:
  `EndpointFault`, the episode's infrastructure outcome (the endpoint's fault, not the agent's);
- the model's content is odd (text that is not valid Unicode, a tool call without a name, arguments that are a
  list or nested too deep, numbers too long to read): a `ModelCall` whose problems the loop turns into a rejected
  action the model is told about.

Text that is not valid Unicode is one fault however it arrives: raw bytes that are not UTF-8 are decoded to lone
surrogates (`surrogateescape`), the same as a JSON escape of a lone surrogate, and one rule rejects both.
What real servers send unambiguously is read as meant: `content` as a list of text parts (joined), token counts
as integral floats (`12.0`).

Nothing here raises on any input: every path ends in one of those two classified outcomes
(tests/test_reply_fuzz.py checks it over generated replies and envelopes). JSON is read with bounds
(`load_json`) so that a hostile reply costs linear time and cannot recurse.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_REPLY_BYTES = 4_000_000
"""Largest reply body read, in decoded bytes; a longer one is the endpoint's fault (no model reply of a bounded
episode is that long). adapter/modelclient.py stops reading there (`read_within`)."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects read, in an envelope or in tool-call arguments."""
MAX_NUMBER_DIGITS = 40
"""Longest integer literal read; longer ones (a 5,000-digit number) are refused, never converted."""

_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonProblem(ValueError):
    """Text that `load_json` refuses: not JSON, nested too deep, a number too long, NaN or Infinity."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated
        """The text looks like a prefix of JSON that was cut off (an unterminated string, object or array)."""


async def read_within(pieces: AsyncIterable[bytes], limit: int) -> bytes | None:
    """The body from its (decoded) pieces, or None as soon as it is over `limit` bytes: the rest is never read, so
    a body costs at most `limit` bytes and one piece, however long it is. The one reader of what a server sends (a
    model reply, a discovery answer)."""
    body = bytearray()
    async for piece in pieces:
        body += piece
        if len(body) > limit:
            return None
    return bytes(body)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise JsonProblem(f"a number of {len(text)} digits is too long")
    return int(text)


def _constant(name: str) -> Any:
    raise JsonProblem(f"{name} is not a JSON number")


def bracket_depths(text: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """(position, depth after it) for every bracket of `text` from `start` that lies outside JSON strings, in one
    linear pass: `[`/`{` raise the depth, `]`/`}` lower it. The one scanner of JSON nesting (depth bounds here,
    the end of a text-protocol action object in adapter/actions.py)."""
    depth = 0
    in_string = escaped = False
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            yield position, depth
        elif char in "]}":
            depth -= 1
            yield position, depth


def _deeper_than(text: str, bound: int) -> bool:
    """Whether brackets outside strings nest deeper than `bound`. A text with no more opening brackets than that
    cannot, and is not scanned: a long reply of prose costs no pass in Python."""
    if text.count("[") + text.count("{") <= bound:
        return False
    return any(depth > bound for _, depth in bracket_depths(text))


def load_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` with bounds: depth at most `max_depth`, integers of at most MAX_NUMBER_DIGITS digits, no
    NaN/Infinity. Raises only JsonProblem."""
    if _deeper_than(text, max_depth):
        raise JsonProblem(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text, parse_int=_int, parse_constant=_constant)
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        cut_off = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        raise JsonProblem(exc.msg, truncated=cut_off) from None
    except (ValueError, RecursionError) as exc:  # e.g. a float literal Python cannot convert
        raise JsonProblem(str(exc)[:200] or type(exc).__name__) from None


def holds_invalid_text(value: Any) -> bool:
    """Whether a value read by `load_json` holds a lone surrogate in any string (key or value); `\\ud800` is valid
    JSON but not valid Unicode. Iterative: the value's depth is already bounded."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def clean_text(text: str) -> tuple[str, bool]:
    """The text with lone surrogates (not valid Unicode; they cannot be encoded as UTF-8 in the next request or
    the transcript) replaced by U+FFFD, and whether any were."""
    cleaned = _SURROGATE.sub("\ufffd", text)
    return cleaned, cleaned != text


class ToolCall(BaseModel):
    """One tool call of a reply, as the endpoint sent it (text cleaned of lone surrogates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    name: str | None
    """None when the call named no function (or named it with something other than a string)."""
    arguments: str
    """The arguments as text; arguments the endpoint sent as a JSON value rather than a string are re-serialised."""


class ModelCall(BaseModel):
    """What the endpoint returned for one request, as observed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    latency_s: float
    model: str | None
    system_fingerprint: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    content: str | None
    tool_calls: list[ToolCall]
    prompt_tokens_estimated: int
    request_sha256: str
    """sha256 of the canonical JSON of the messages sent, so the exact prompt lineage can be checked."""
    server_headers: dict[str, str] = Field(default_factory=dict)
    """The reply's response headers that say which server answered (`SERVER_HEADERS`, names lower-case)."""
    invalid_text: bool = False
    """The model's text or tool calls held lone surrogates, escaped or raw bytes that are not UTF-8 (replaced by
    U+FFFD here); the reply is rejected."""
    upstream: Literal["fallback"] | None = Field(default=None, exclude_if=lambda value: value is None)
    """`fallback` when the serving protocol's pinned fallback endpoint answered (adapter/failover.py); None: the
    run's own endpoint (left out of the evidence)."""


@dataclass(frozen=True)
class EndpointFault:
    """The endpoint's reply is not a chat completion: the episode's infrastructure outcome, with its cause."""

    cause: str
    """One of: not_json, not_an_object, error_object, no_choices, wrong_schema, too_large, stream."""
    detail: str

    def __str__(self) -> str:
        return f"endpoint reply {self.cause}: {self.detail}"


def _shape(value: Any, kind: type | tuple[type, ...], where: str) -> str | None:
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return None
    return f"{where} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}"


def token_count(value: Any) -> int | None:
    """A token count as a server wrote it: a non-negative integer, or a float with an integral value (`12.0`, as
    some servers write it); None for anything else. The one reading of a count (replies, the tools probe)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12:
        return value
    return None


def _count(value: Any, where: str) -> tuple[int | None, str | None]:
    if value is None:
        return None, None
    count = token_count(value)
    return count, None if count is not None else f"{where} is not a token count: {str(value)[:40]}"


def _text_part(part: Any) -> str | None:
    """The text of a content part `{"type": "text", "text": ...}`, None for any other part."""
    if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return str(part["text"])
    return None


def _content(value: Any) -> tuple[str | None, str | None]:
    """The message's text and the problem with it: a string, or a list of text parts joined as they come (each
    part continues the text before it); any other part makes it ambiguous, the endpoint's fault."""
    if value is None or isinstance(value, str):
        return value, None
    if isinstance(value, list):
        texts = [_text_part(part) for part in value]
        if all(text is not None for text in texts):
            return "".join(t for t in texts if t is not None), None
        odd = next(part for part, text in zip(value, texts, strict=True) if text is None)
        kind = odd.get("type") if isinstance(odd, Mapping) else type(odd).__name__
        return None, f"message.content holds a part that is not text ({str(kind)[:40]})"
    return None, f"message.content is {type(value).__name__}, not str or a list of text parts"


def _tool_call(raw: Any) -> tuple[ToolCall | None, bool]:
    """A tool call of the message; None for an entry that is not one at all (not an object)."""
    if not isinstance(raw, Mapping):
        return None, False
    function = raw.get("function")
    function = function if isinstance(function, Mapping) else {}
    name = function.get("name")
    arguments = function.get("arguments")
    if arguments is None:
        text = ""
    elif isinstance(arguments, str):
        text = arguments
    else:  # some servers send the arguments object itself; a list or a number is kept for the rejection
        text = json.dumps(arguments, ensure_ascii=False)
    call_id = raw.get("id")
    cleaned_args, odd_args = clean_text(text)
    cleaned_name, odd_name = clean_text(name) if isinstance(name, str) else (None, False)
    cleaned_id = clean_text(call_id)[0] if isinstance(call_id, str) else None
    return ToolCall(id=cleaned_id, name=cleaned_name, arguments=cleaned_args), odd_args or odd_name


def read_envelope(
    envelope: Any, *, latency_s: float, estimated: int, request_sha256: str, headers: Mapping[str, str] | None = None,
) -> ModelCall | EndpointFault:
    """The model call a chat completion envelope (parsed JSON, or a stream's assembly) describes, or the fault that
    makes it none: the one reading of an envelope."""
    if not isinstance(envelope, Mapping):
        return EndpointFault("not_an_object", f"the body is a JSON {type(envelope).__name__}")
    if envelope.get("error") is not None and not envelope.get("choices"):
        return EndpointFault("error_object", clean_text(str(envelope["error"]))[0][:300])
    choices = envelope.get("choices")
    if not isinstance(choices, list) or not choices:
        shown = "missing" if choices is None else json.dumps(choices)[:80]
        return EndpointFault("no_choices", f"choices is {shown}")
    choice = choices[0]
    if not isinstance(choice, Mapping):
        return EndpointFault("wrong_schema", f"choices[0] is {type(choice).__name__}, not an object")
    message = choice.get("message")
    if not isinstance(message, Mapping):
        return EndpointFault("wrong_schema", "choices[0].message is missing or not an object")
    usage = envelope.get("usage")
    usage = usage if isinstance(usage, Mapping) else {} if usage is None else None
    if usage is None:
        return EndpointFault("wrong_schema", "usage is not an object")
    content, content_problem = _content(message.get("content"))
    problems = [p for p in (
        content_problem,
        _shape(message.get("tool_calls"), list, "message.tool_calls"),
        _shape(choice.get("finish_reason"), str, "finish_reason"),
        _shape(envelope.get("model"), str, "model"),
        _shape(envelope.get("system_fingerprint"), str, "system_fingerprint"),
    ) if p]
    prompt_tokens, prompt_problem = _count(usage.get("prompt_tokens"), "usage.prompt_tokens")
    completion_tokens, completion_problem = _count(usage.get("completion_tokens"), "usage.completion_tokens")
    problems += [p for p in (prompt_problem, completion_problem) if p]
    if problems:
        return EndpointFault("wrong_schema", "; ".join(problems))
    content, odd = clean_text(content) if content is not None else (None, False)
    calls: list[ToolCall] = []
    for raw_call in message.get("tool_calls") or []:
        call, odd_call = _tool_call(raw_call)
        if call is None:
            return EndpointFault("wrong_schema", f"a tool call is {type(raw_call).__name__}, not an object")
        calls.append(call)
        odd = odd or odd_call
    model = envelope.get("model")
    fingerprint = envelope.get("system_fingerprint")
    finish_reason = choice.get("finish_reason")
    return ModelCall(
        latency_s=round(latency_s, 4), model=clean_text(model)[0] if model else None,
        system_fingerprint=clean_text(fingerprint)[0] if fingerprint else None,
        finish_reason=clean_text(finish_reason)[0] if finish_reason else None,
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, content=content, tool_calls=calls,
        prompt_tokens_estimated=estimated, request_sha256=request_sha256,
        server_headers=dict(headers or {}), invalid_text=odd,
    )
