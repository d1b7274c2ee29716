"""Reading a streamed chat completion (`stream: true`, OpenAI's server-sent events) as the reply it adds up to.

The body is a series of events separated by blank lines; each event's `data:` lines (joined by newlines) are one
`chat.completion.chunk` object, and the stream ends with `data: [DONE]`. Comment lines (`:`) and the other fields
(`event:`, `id:`, `retry:`) are ignored; `\\r\\n` and `\\r` line ends are read as `\\n`. An event left without its
closing blank line at the end of the body is read when it is whole (`data: [DONE]` with no newline after it) and
dropped when it is not (the cut fell inside it).

`assemble_stream` adds up choice 0's deltas (text concatenated, tool calls merged by their `index`: id, type and
name taken once, arguments concatenated), the last `finish_reason`, the top-level `model` and `system_fingerprint`,
and the `usage` object (the last chunk's, when `stream_options.include_usage` asked for one), and returns the
non-streamed envelope those make, so that `adapter.reply_body.read_reply` applies its envelope checks to it unchanged.
Three outcomes:

- a complete stream (a `finish_reason`, or `data: [DONE]`; some servers omit one or the other): the envelope;
- a stream that stopped before either: `StreamCut`, saying how far it got (the text so far, whether an action had
  begun), for the loop to tell a cut reply from a finished one;
- an event that is not a JSON object, an `error` event, or a field of the wrong kind: `EndpointFault` with cause
  `stream`, the endpoint's fault.

Each event is read with `load_json` (depth- and number-bounded); the body's size is bounded by the caller.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapter.reply import MAX_JSON_DEPTH, EndpointFault, JsonProblem, clean_text, load_json, token_count

DONE = "[DONE]"


@dataclass(frozen=True)
class StreamCut:
    """A streamed reply that ended before it was complete: no finish_reason and no `data: [DONE]`."""

    events: int
    """Data events received (chunks), [DONE] excluded."""
    content: str
    """The text content emitted before the cut (clean_text'ed)."""
    tool_call_started: bool
    """Whether any tool_calls delta had arrived (an action had begun)."""
    tool_name: str | None
    """The first tool call's name if it had arrived."""
    completion_tokens: int | None
    """usage.completion_tokens if a usage chunk came, else None."""
    detail: str
    """One line saying what was missing."""


def sse_events(text: str) -> Iterator[tuple[str, bool]]:
    """The data of each event of an SSE body, with whether the event was closed by a blank line (the last one of a
    cut body may not be). Events without data lines (comments only, a bare `event:`) are skipped."""
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            if data:
                yield "\n".join(data), True
            data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
        elif line == "data":
            data.append("")
    if data:
        yield "\n".join(data), False


@dataclass
class _Call:
    id: Any = None
    type: Any = None
    name: Any = None
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Sum:
    events: int = 0
    done: bool = False
    content: list[str] | None = None
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: Any = None
    top: dict[str, Any] = field(default_factory=dict)
    usage: Any = None


def _add_calls(total: _Sum, deltas: Any) -> str | None:
    """Merge a delta's tool calls into the sum; the problem with them, or None."""
    if not isinstance(deltas, list):
        return f"delta.tool_calls is {type(deltas).__name__}, not a list"
    for position, delta in enumerate(deltas):
        if not isinstance(delta, Mapping):
            return f"a tool call delta is {type(delta).__name__}, not an object"
        index = delta.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool):
            return f"a tool call delta's index is {type(index).__name__}, not an integer"
        call = total.calls.setdefault(index, _Call())
        function = delta.get("function")
        function = function if isinstance(function, Mapping) else {}
        call.id = call.id if call.id is not None else delta.get("id")
        call.type = call.type if call.type is not None else delta.get("type")
        call.name = call.name if call.name is not None else function.get("name")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif arguments is not None:  # an arguments object, as some servers send it whole
            call.arguments.append(json.dumps(arguments, ensure_ascii=False))
    return None


def _add_chunk(total: _Sum, chunk: Mapping[str, Any]) -> str | None:
    """Add one chunk's choice 0 and top-level fields to the sum; the problem with it, or None."""
    for key in ("model", "system_fingerprint"):
        if total.top.get(key) is None and chunk.get(key) is not None:
            total.top[key] = chunk[key]
    if chunk.get("usage") is not None:
        total.usage = chunk["usage"]
    choices = chunk.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        return f"choices is {type(choices).__name__}, not a list"
    for choice in choices:
        if not isinstance(choice, Mapping):
            return f"a choice is {type(choice).__name__}, not an object"
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta")
        delta = {} if delta is None else delta
        if not isinstance(delta, Mapping):
            return f"delta is {type(delta).__name__}, not an object"
        content = delta.get("content")
        if isinstance(content, str):
            total.content = [] if total.content is None else total.content
            total.content.append(content)
        elif content is not None:
            return f"delta.content is {type(content).__name__}, not a string"
        if delta.get("tool_calls") is not None and (problem := _add_calls(total, delta["tool_calls"])):
            return problem
        if choice.get("finish_reason") is not None:
            total.finish_reason = choice["finish_reason"]
    return None


def _envelope(total: _Sum) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if total.content is None
                               else "".join(total.content)}
    if total.calls:
        message["tool_calls"] = [
            {"id": call.id, "type": call.type or "function",
             "function": {"name": call.name, "arguments": "".join(call.arguments)}}
            for _, call in sorted(total.calls.items())]
    envelope: dict[str, Any] = {
        "model": total.top.get("model"), "system_fingerprint": total.top.get("system_fingerprint"),
        "choices": [{"index": 0, "message": message, "finish_reason": total.finish_reason}],
    }
    if total.usage is not None:
        envelope["usage"] = total.usage
    return envelope


def _cut(total: _Sum) -> StreamCut:
    content = clean_text("".join(total.content or []))[0]
    first = total.calls[min(total.calls)] if total.calls else None
    name = clean_text(first.name)[0] if first is not None and isinstance(first.name, str) else None
    usage = total.usage if isinstance(total.usage, Mapping) else {}
    if first is not None:
        where = f"in tool call {name!r}" if name is not None else "in a tool call, before its name"
    else:
        where = f"{len(content)} characters of text"
    return StreamCut(
        events=total.events, content=content, tool_call_started=first is not None, tool_name=name,
        completion_tokens=token_count(usage.get("completion_tokens")),
        detail=f"the stream stopped after {total.events} events ({where}) with no finish_reason and no data: {DONE}",
    )


def assemble_stream(body: bytes | str) -> dict[str, Any] | StreamCut | EndpointFault:
    """The non-streamed envelope a streamed reply's body adds up to, the `StreamCut` it is when it stopped before
    it was complete, or the `EndpointFault` (cause `stream`) when an event is not a chunk."""
    text = body.decode("utf-8", errors="surrogateescape") if isinstance(body, bytes) else body
    total = _Sum()
    for data, closed in sse_events(text):
        if data.strip() == DONE:
            total.done = True
            break
        try:
            chunk = load_json(data, max_depth=MAX_JSON_DEPTH * 2)
        except JsonProblem as exc:
            if not closed:  # the cut fell inside the last event
                break
            return EndpointFault("stream", f"event {total.events + 1} is not JSON: {exc} (starts {data[:80]!r})")
        if not isinstance(chunk, Mapping):
            return EndpointFault("stream", f"event {total.events + 1} is a JSON {type(chunk).__name__}, "
                                           "not an object")
        if chunk.get("error") is not None:
            return EndpointFault("stream", f"event {total.events + 1} is an error object: "
                                           f"{clean_text(str(chunk['error']))[0][:300]}")
        total.events += 1
        if problem := _add_chunk(total, chunk):
            return EndpointFault("stream", f"event {total.events}: {problem}")
    if total.finish_reason is None and not total.done:
        return _cut(total)
    return _envelope(total)
