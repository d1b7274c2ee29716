"""An endpoint's HTTP 2xx body read as a model reply: a JSON body as one envelope (adapter/reply.py), an event stream
assembled first (adapter/stream.py, which builds on adapter/reply.py) and read as the envelope it adds up to. The
one reader of a reply's body the loop calls (adapter/loop.py); it never raises on any input (tests/test_reply_fuzz.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

from adapter.reply import (
    MAX_JSON_DEPTH,
    MAX_REPLY_BYTES,
    EndpointFault,
    JsonProblem,
    ModelCall,
    load_json,
    read_envelope,
)
from adapter.stream import StreamCut, assemble_stream


@overload
def read_reply(
    body: bytes | str, *, content_type: str = ..., latency_s: float, estimated: int, request_sha256: str,
    headers: Mapping[str, str] | None = ..., streamed: Literal[False] = ...,
) -> ModelCall | EndpointFault: ...


@overload
def read_reply(
    body: bytes | str, *, content_type: str = ..., latency_s: float, estimated: int, request_sha256: str,
    headers: Mapping[str, str] | None = ..., streamed: bool,
) -> ModelCall | EndpointFault | StreamCut: ...


def read_reply(
    body: bytes | str, *, content_type: str = "application/json", latency_s: float, estimated: int,
    request_sha256: str, headers: Mapping[str, str] | None = None, streamed: bool = False,
) -> ModelCall | EndpointFault | StreamCut:
    """The model call an endpoint's HTTP 2xx body describes, or the fault that makes it none. With `streamed` (the
    request asked for `stream: true`) an event-stream body is assembled first (adapter/stream.py) and may be a
    `StreamCut`; a plain JSON body is read as one (servers may ignore `stream`). Without it a stream is a fault."""
    is_stream = "text/event-stream" in content_type.lower()
    if is_stream and not streamed:
        return EndpointFault("stream", "the endpoint streamed its reply, which was not requested")
    if len(body) > MAX_REPLY_BYTES:
        return EndpointFault("too_large", f"{len(body)} bytes (at most {MAX_REPLY_BYTES})")
    envelope: Any
    if is_stream:
        assembled = assemble_stream(body)
        if not isinstance(assembled, dict):
            return assembled
        envelope = assembled
    else:
        # Bytes that are not UTF-8 become lone surrogates, the same fault as an escaped one (`clean_text` catches both).
        text = body.decode("utf-8", errors="surrogateescape") if isinstance(body, bytes) else body
        try:
            envelope = load_json(text, max_depth=MAX_JSON_DEPTH * 2)
        except JsonProblem as exc:
            return EndpointFault("not_json", f"{exc} (body starts {text[:80]!r})")
    return read_envelope(envelope, latency_s=latency_s, estimated=estimated, request_sha256=request_sha256,
                         headers=headers)
