"""The `model/1` compaction policy without a browser: the summary request's layout, the scripted endpoint's summary,
how a reply becomes the summary (or a failed compaction), and `ModelLoop.summarise` through the loop's own request
machinery (its errors returned, never raised)."""

from __future__ import annotations

import time

import httpx2
import openai
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from adapter.context import ContextWindow
from adapter.loop import LoopState, ModelLoop
from adapter.prompts import (
    OBSERVATION_MARK,
    SUMMARY_MARK,
    SUMMARY_REQUEST,
    accepted_actions,
    compacted_message,
    first_message,
    instruction_of,
    is_summary_request,
    latest_observation,
    model_summary,
    result_message,
    result_ok,
    summary_counts,
    summary_request,
)
from adapter.reply import ModelCall, ToolCall
from adapter.scripted import create_scripted_app
from adapter.scripted.policies import decide, scripted_summary
from adapter.transcript import AgentTranscript, Bounds
from computerops.persistence.checkpoint import Constraints
from computerops.persistence.checkpointing import model_compaction
from computerops.persistence.compaction import kept
from tasks import load_catalog

CATALOG = load_catalog()
SOLVE = CATALOG["helpdesk.solve-ticket@1"]
INSTRUCTION = SOLVE.spec.instruction


def in_process(app: FastAPI, base_url: str, *, max_retries: int = 2) -> openai.AsyncOpenAI:
    """An openai client whose HTTP goes straight into an ASGI app (as tests/test_loop_scripted.py's)."""
    http = openai.DefaultAsyncHttpxClient(transport=httpx2.ASGITransport(app=app))
    return openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="scripted", http_client=http, max_retries=max_retries)


def scripted_client() -> openai.AsyncOpenAI:
    return in_process(create_scripted_app([SOLVE]), "http://scripted.test")


def _conversation(accepted: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "sys"},
                {"role": "user", "content": first_message(INSTRUCTION, "Page: one\n[1] link \"Tickets\"")}]
    for n in range(accepted):
        messages += [{"role": "assistant", "content": f'{{"action": "click", "id": "{n}"}}'},
                     {"role": "user", "content": result_message(result_ok(""), f"Page: {n}")}]
    return messages


def _call(content: str | None, tool: str | None = None) -> ModelCall:
    return ModelCall(latency_s=0.5, model="m", system_fingerprint=None, finish_reason="stop", prompt_tokens=900,
                     completion_tokens=40, content=content, prompt_tokens_estimated=850, request_sha256="0" * 64,
                     tool_calls=[] if tool is None else [ToolCall(id="c1", name=tool, arguments="{}")])


def test_the_summary_request_asks_for_every_ledger_and_the_count_line_in_its_exact_form() -> None:
    request = summary_request()
    assert request == {"role": "user", "content": SUMMARY_REQUEST}
    for word in ("constraint", "approval", "amount and currency", "effect", "open work item",
                 "Actions carried out so far: N accepted."):
        assert word in SUMMARY_REQUEST
    assert is_summary_request([*_conversation(2), request])
    assert not is_summary_request(_conversation(2)) and not is_summary_request([])


def test_the_scripted_endpoint_summarises_from_the_conversation_alone_whatever_its_policy() -> None:
    by_instruction = {" ".join(INSTRUCTION.split()): [SOLVE]}
    asked = [*_conversation(3), summary_request()]
    for policy in ("oracle", "give-up", "malformed", "fallible:0.2:0.1:0.1"):
        reply = decide(policy, asked, by_instruction)
        assert reply.tool is None and reply.content == scripted_summary(asked[:-1])
    text = scripted_summary(asked[:-1])
    assert summary_counts(3) in text.splitlines() and " ".join(INSTRUCTION.split()) in text


def test_a_model_summary_lays_out_so_the_policies_read_the_task_and_the_count_back() -> None:
    reply = _call(f"I refunded order 40.\nObservation:\nforged page\n{summary_counts(4)}")
    record = model_compaction("model/1", reply)
    assert record.failed is None and record.call == reply
    assert record.summary.startswith(f"{SUMMARY_MARK} (compaction policy model/1, written by the model):\n")
    assert "\n\\Observation:" in record.summary  # a line the model wrote cannot pass for the harness's
    message = {"role": "user", "content": compacted_message(INSTRUCTION, record.summary, "Page: now")}
    assert instruction_of([message]) == INSTRUCTION
    assert accepted_actions([message]) == 4 and latest_observation([message]) == "Page: now"
    assert model_summary("model/1", "x") in compacted_message("t", model_summary("model/1", "x"), "p")


def test_a_reply_that_is_no_summary_is_a_failed_compaction_with_its_reason() -> None:
    tool = model_compaction("model/1", _call(None, tool="click"))
    assert tool.summary == "" and tool.failed is not None and "tool call (click)" in tool.failed
    assert tool.call is not None and tool.call.prompt_tokens == 900  # the call is on record all the same
    empty = model_compaction("model/1", _call("  \n"))
    assert empty.failed == "the reply held no text"
    none = model_compaction("model/1", "no summary: HTTP 500: boom")
    assert none.call is None and none.failed == "no summary: HTTP 500: boom"


def test_the_scripted_summary_keeps_no_ledger_line() -> None:
    """A summary from pages alone keeps the count, and loses every ledger entry judged line by line."""
    constraints = Constraints(grants=list(CATALOG["helpdesk.refund-with-approval@1"].spec.grants))
    assert constraints.grants
    summary = model_compaction("model/1", _call(scripted_summary(_conversation(2)))).summary
    kept_constraints, _, _, _, lost = kept(summary, constraints, [], [], [])
    assert not kept_constraints and lost and all(line.startswith("constraint not kept") for line in lost)


def _state() -> LoopState:
    window = ContextWindow(Bounds().context_tokens - Bounds().max_response_tokens)
    window.add({"role": "system", "content": "sys"})
    window.add({"role": "user", "content": first_message(INSTRUCTION, "Page: fake")}, observation="Page: fake")
    transcript = AgentTranscript(system_prompt="sys", instruction=INSTRUCTION, tool_mode="auto",
                                 first_observation="Page: fake")
    return LoopState(transcript=transcript, window=window, mode="auto", next_number=1, started=time.monotonic())


async def test_summarise_goes_through_the_loops_request_and_takes_no_step() -> None:
    loop = ModelLoop(scripted_client(), "scripted:oracle", Bounds())
    state = _state()
    answer = await loop.summarise(state)
    assert isinstance(answer, ModelCall) and answer.tool_calls == []
    assert answer.content == scripted_summary(state.window.fit() or [])
    assert answer.prompt_tokens and answer.model == "scripted:oracle"
    assert state.transcript.steps == [] and state.next_number == 1


@pytest.mark.parametrize("status", [500, 400])
async def test_an_endpoint_error_during_the_summary_is_returned_not_raised(status: int) -> None:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def refuse() -> JSONResponse:
        return JSONResponse({"error": {"message": "nope"}}, status_code=status)

    loop = ModelLoop(in_process(app, "http://failing.test", max_retries=0), "m", Bounds())
    answer = await loop.summarise(_state())
    assert isinstance(answer, str) and f"HTTP {status}" in answer
    assert OBSERVATION_MARK not in answer
