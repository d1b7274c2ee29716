"""Hostile and odd replies of an OpenAI-compatible endpoint on loopback, read through the run's own model client
(adapter/modelclient.py: the real openai client over a bounded transport) and the loop.

- a reply over the bound is cut off while it is read, whatever its encoding, and the runner's memory stays
  bounded (measured: the peak RSS of a subprocess that asks a hostile endpoint for hundreds of MB);
- a long valid reply is parsed off the event loop;
- raw bytes that are not UTF-8 are the same fault as an escaped lone surrogate: rejected, never typed;
- what real servers send unambiguously (content as text parts, integral token counts as floats) is accepted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import struct
import sys
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from test_reply_fuzz import Page, classify, envelope, tool

from adapter.loop import ModelLoop
from adapter.modelclient import model_client
from adapter.reply import MAX_REPLY_BYTES, EndpointFault, ModelCall
from adapter.reply_body import read_reply
from adapter.serverinfo import probe_tools
from adapter.transcript import AgentTranscript, Bounds
from computerops.core.vocabulary import ToolMode
from computerops.runs.serving import serve_app

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
PREFIX = b'{"object": "chat.completion", "choices": [{"message": {"role": "assistant", "content": "'
"""A reply that starts like any other and never ends its content."""


def endless(encoding: str, decoded: int) -> Iterator[bytes]:
    """`PREFIX` and then "x" up to `decoded` bytes, as an `encoding` body made while it is sent: one 1 MiB deflate
    block repeated (each is the same once the window holds only "x"), so a body that decodes to hundreds of MB costs
    the sender about 1 KB per MiB and no memory."""
    if encoding == "identity":
        piece = b"x" * (64 * 1024)
        yield PREFIX
        for _ in range(decoded // len(piece)):
            yield piece
        return
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate: httpx2 reads it as "deflate" too
    mib = b"x" * MIB
    first = packer.compress(PREFIX + mib) + packer.flush(zlib.Z_SYNC_FLUSH)
    block = packer.compress(mib) + packer.flush(zlib.Z_SYNC_FLUSH)
    blocks = max(decoded // MIB - 1, 0)
    if encoding == "gzip":
        yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # a gzip header: deflate, no name, no time
    yield first
    crc = zlib.crc32(PREFIX + mib)
    for _ in range(blocks):
        yield block
        crc = zlib.crc32(mib, crc) if encoding == "gzip" else crc
    yield packer.flush()
    if encoding == "gzip":
        yield struct.pack("<II", crc, (len(PREFIX) + MIB * (blocks + 1)) & 0xFFFFFFFF)


@dataclass
class Stage:
    """What the endpoint answers to each chat request, in turn (the last one again once they run out)."""

    answers: list[Any]
    requests: int = 0
    sent: list[int] = field(default_factory=list)
    """Per streamed answer, how many pieces of it the endpoint got to send."""

    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            await request.body()
            self.requests += 1
            answer = self.answers[min(self.requests, len(self.answers)) - 1]
            return answer() if callable(answer) else Response(answer, media_type="application/json")

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])

    def streamed(self, encoding: str, decoded: int) -> StreamingResponse:
        count = len(self.sent)
        self.sent.append(0)

        def pieces() -> Iterator[bytes]:
            for piece in endless(encoding, decoded):
                self.sent[count] += 1
                yield piece

        headers = {} if encoding == "identity" else {"content-encoding": encoding}
        return StreamingResponse(pieces(), media_type="application/json", headers=headers)


@asynccontextmanager
async def endpoint(stage: Stage) -> AsyncIterator[openai.AsyncOpenAI]:
    """The run's model client (retrying as a run's does) to `stage`'s endpoint, served on loopback."""
    async with serve_app(stage.app()) as origin:
        client = model_client(f"{origin}/v1", "k", max_retries=2, timeout=60.0)
        try:
            yield client
        finally:
            await client.close()


async def episode(client: openai.AsyncOpenAI, *, tool_mode: ToolMode = "auto", page: Page | None = None,
                  ) -> AgentTranscript:
    """One step of an episode; its transcript must serialise."""
    loop = ModelLoop(client, "m", Bounds(action_budget=1, tool_mode=tool_mode))
    transcript = await loop.run(page or Page(), "Do the task.")
    AgentTranscript.model_validate_json(transcript.model_dump_json())
    return transcript


# A reply over the bound ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["identity", "gzip", "deflate"])
async def test_a_reply_over_the_bound_is_cut_off_while_it_is_read_and_never_retried(encoding: str) -> None:
    decoded = 64 * MIB
    stage = Stage([])
    stage.answers.append(lambda: stage.streamed(encoding, decoded))
    async with endpoint(stage) as client:
        transcript = await episode(client)
    assert transcript.stop_reason == "infrastructure"
    assert transcript.infrastructure_cause == "endpoint reply too_large"
    assert "the rest was not read" in (transcript.infrastructure_error or "")
    assert stage.requests == 1, "a reply over the bound is the endpoint's fault, not a reason to ask again"
    if encoding == "identity":  # (compressed, all 64 MB are a few KB that fit the socket's buffers)
        whole = sum(1 for _ in endless(encoding, decoded))
        assert stage.sent[0] < whole / 2, "the endpoint never got to send the rest"


RSS_PROBE = """
import asyncio, json, resource, sys
from adapter.modelclient import ReplyCutOff, model_client
from adapter.reply_body import read_reply

def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

async def main(origin, replies):
    client = model_client(origin + "/v1", "k", max_retries=0, timeout=60.0)
    async def ask():  # as the loop asks (adapter/loop.py ModelLoop._request) and reads (read_reply)
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "Do the task."}])
        except ReplyCutOff as cut:
            return cut.fault.cause
        return type(read_reply(raw.http_response.content, latency_s=0, estimated=0, request_sha256="")).__name__
    warm = await ask()  # a small valid reply first: every import and the connection pool are in place
    before = peak_kib()
    causes = [await ask() for _ in range(replies)]
    print(json.dumps({"warm": warm, "causes": causes, "before_kib": before, "after_kib": peak_kib()}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_the_runners_memory_stays_bounded_under_a_reply_of_hundreds_of_megabytes() -> None:
    # 300 MB decoded per reply: read whole it would take the process past 300 MB; gzip sends it in about 300 KB.
    decoded = 300 * MIB
    kinds = ["gzip", "identity", "deflate"]
    stage = Stage([envelope(tool("done", '{"success": false}'))])
    stage.answers += [lambda kind=kind: stage.streamed(kind, decoded) for kind in kinds]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with serve_app(stage.app()) as origin:
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", RSS_PROBE, origin, str(len(kinds)), cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(probe.communicate(), timeout=120)
    assert probe.returncode == 0, err.decode()[-2000:]
    seen = json.loads(out)
    grown_mib = (seen["after_kib"] - seen["before_kib"]) / 1024
    # The bound is 4 MB of body plus a piece in flight and a copy; reading any of these whole would be 300 MiB.
    assert grown_mib < 64, f"peak RSS grew by {grown_mib:.0f} MiB under replies of {decoded // MIB} MiB"
    assert seen["warm"] == "ModelCall" and seen["causes"] == ["too_large"] * len(kinds)


# A long valid reply ----------------------------------------------------------------------------------------------

async def test_a_long_valid_reply_is_parsed_off_the_event_loop() -> None:
    # Text that is all brackets is the slowest to check for depth: the envelope's nesting is scanned in Python.
    body = envelope({"role": "assistant", "content": "[]" * ((MAX_REPLY_BYTES - 200) // 2)})
    started = time.perf_counter()
    assert isinstance(read_reply(body, latency_s=0, estimated=0, request_sha256=""), ModelCall)
    parse_s = time.perf_counter() - started
    assert parse_s > 0.05, "the reply parses too fast to tell whether it blocks the event loop"
    longest_gap = 0.0
    done = asyncio.Event()

    async def ticking() -> None:
        nonlocal longest_gap
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            longest_gap, last = max(longest_gap, now - last), now

    stage = Stage([body])
    async with endpoint(stage) as client:
        ticker = asyncio.create_task(ticking())
        transcript = await ModelLoop(client, "m", Bounds(action_budget=1)).run(Page(), "Do the task.")
        done.set()
        await ticker
    assert transcript.steps and transcript.steps[0].rejection is not None, "the reply was read (and rejected)"
    # Parsed on the event loop, some tick would wait the whole parse; off it, ticks go on between its slices.
    assert longest_gap < parse_s / 3, f"the event loop stood still {longest_gap:.3f} s (a parse takes {parse_s:.3f} s)"


# Text that is not valid Unicode -----------------------------------------------------------------------------------

NOT_UTF8 = st.lists(st.integers(0x80, 0xFF), min_size=1, max_size=6).map(bytes).filter(
    lambda raw: not _decodes(raw))


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _escaped(raw: bytes) -> bytes:
    """The same text with each byte that is not UTF-8 sent as the JSON escape of its lone surrogate instead."""
    return json.dumps(raw.decode("utf-8", errors="surrogateescape")).encode()[1:-1]


def text_reply(text: bytes) -> bytes:
    return b'{"choices": [{"message": {"role": "assistant", "content": "' + text + b'"}}]}'


def fill_reply(text: bytes) -> bytes:
    arguments = b'{\\"id\\": \\"2\\", \\"text\\": \\"' + text + b'\\"}'
    return (b'{"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", '
            b'"function": {"name": "fill", "arguments": "' + arguments + b'"}}]}}]}')


def read(body: bytes) -> ModelCall | EndpointFault:
    return read_reply(body, latency_s=0, estimated=0, request_sha256="")


@given(NOT_UTF8, st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\'), max_size=8),
       st.sampled_from([text_reply, fill_reply]))
def test_raw_bytes_that_are_not_utf8_are_the_same_fault_as_an_escaped_surrogate(raw: bytes, around: str,
                                                                               reply: Any) -> None:
    text = around.encode()
    as_sent, as_escaped = read(reply(text + raw + text)), read(reply(text + _escaped(raw) + text))
    assert isinstance(as_sent, ModelCall) and as_sent.invalid_text
    assert as_sent == as_escaped


INVALID = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80\x80"]
"""A stray byte, a broken two-byte sequence, an encoded surrogate, a code point past U+10FFFF, a cut-off sequence,
bare continuation bytes."""


@pytest.mark.parametrize("raw", INVALID, ids=[r.hex() for r in INVALID])
async def test_text_that_is_not_utf8_is_rejected_and_never_typed_into_the_page(raw: bytes) -> None:
    action = b'{\\"action\\": \\"fill\\", \\"id\\": \\"2\\", \\"text\\": \\"a' + raw + b'b\\"}'
    stage = Stage([fill_reply(b"a" + raw + b"b"), text_reply(action), fill_reply(b"a" + _escaped(raw) + b"b")])
    async with endpoint(stage) as client:
        modes: list[ToolMode] = ["native", "text", "native"]
        for tool_mode in modes:
            page = Page()
            transcript = await episode(client, tool_mode=tool_mode, page=page)
            assert classify(transcript) == "rejected:invalid_text", (tool_mode, transcript.steps)
            assert page.acted == []


# What real servers send -------------------------------------------------------------------------------------------

DONE = '{"action": "done", "success": false}'


@given(st.lists(st.integers(0, len(DONE)), max_size=4).map(sorted), st.integers(0, 10**9), st.integers(0, 10**6))
def test_content_in_text_parts_and_integral_float_counts_read_as_the_plain_shapes(cuts: list[int], prompt: int,
                                                                                  completion: int) -> None:
    edges = [0, *cuts, len(DONE)]
    parts = [{"type": "text", "text": DONE[a:b]} for a, b in itertools.pairwise(edges)]
    plain = read(envelope({"role": "assistant", "content": DONE},
                          usage={"prompt_tokens": prompt, "completion_tokens": completion}))
    shaped = read(envelope({"role": "assistant", "content": parts},
                           usage={"prompt_tokens": float(prompt), "completion_tokens": float(completion)}))
    assert isinstance(plain, ModelCall) and shaped == plain


AMBIGUOUS: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}, None),  # not text
    ({"role": "assistant", "content": [{"type": "text", "text": DONE}, "and more"]}, None),  # a bare string part
    ({"role": "assistant", "content": [{"type": "text", "text": 5}]}, None),  # a text part whose text is a number
    ({"role": "assistant", "content": DONE}, {"prompt_tokens": 12.5}),  # half a token
    ({"role": "assistant", "content": DONE}, {"completion_tokens": -3.0}),  # a negative count
]
"""Shapes that say nothing unambiguous: still the endpoint's fault."""


async def test_text_parts_and_float_counts_from_an_endpoint_make_an_episode_not_an_infrastructure_failure() -> None:
    parts = [{"type": "text", "text": DONE[:9]}, {"type": "text", "text": DONE[9:]}]
    usage = {"prompt_tokens": 812.0, "completion_tokens": 9.0, "total_tokens": 821.0}
    stage = Stage([envelope({"role": "assistant", "content": parts}, usage=usage)])
    async with endpoint(stage) as client:
        modes: list[ToolMode] = ["text", "auto"]
        for tool_mode in modes:
            transcript = await episode(client, tool_mode=tool_mode)
            assert transcript.stop_reason == "finish", transcript.infrastructure_error
            call = transcript.steps[0].call
            assert (call.content, call.prompt_tokens, call.completion_tokens) == (DONE, 812, 9)
    for message, odd_usage in AMBIGUOUS:
        fault = read(envelope(message, **({"usage": odd_usage} if odd_usage else {})))
        assert isinstance(fault, EndpointFault) and fault.cause == "wrong_schema", message


async def test_the_tools_probe_reads_integral_float_counts_as_episodes_do() -> None:
    async def completions(request: Request) -> Response:
        counted = 2000.0 if "tools" in await request.json() else 400.0  # the schemas reach the prompt
        return Response(envelope({"role": "assistant", "content": "ready"},
                                 usage={"prompt_tokens": counted, "completion_tokens": 1.0}),
                        media_type="application/json")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    async with serve_app(app) as origin:
        probe = await probe_tools(f"{origin}/v1", "k", "m")
    counts = (probe.with_tools_prompt_tokens, probe.without_tools_prompt_tokens)
    assert probe.verdict == "in_prompt" and counts == (2000, 400)
