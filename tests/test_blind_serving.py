"""Blind cases for the serving-fault study (docs/long-running.md "Serving failures", README "Serving failures").

Written from the documentation and public signatures only. Each case asks what a wrong implementation would do
that a looser test would let pass: a rule that fires one request too many, a rate that does not nest, a cut stream
that leaks its finish, a protocol that acts on half a tool call, a record that calls an injected failure
infrastructure, a verifier that accepts an edited log.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiers import examples

from adapter.acting import ActionOutcome
from adapter.actions import Action
from adapter.failover import Fallback, ServingProtocol
from adapter.loop import ModelLoop
from adapter.modelclient import model_client
from adapter.observation import Control, Observation, format_control
from adapter.stream import StreamCut, assemble_stream, sse_events
from adapter.transcript import AgentTranscript, Bounds
from computerops.serving_faults.layer import EpisodeServingFaults, ServingFaultTransport
from computerops.serving_faults.log import ServingLog, log_problems
from computerops.serving_faults.plan import (
    SERVING_FAULT_KINDS,
    ServingDecision,
    ServingInjector,
    ServingParams,
    ServingPlan,
    ServingRule,
    draw,
)

CHAT = "http://model.test/v1/chat/completions"
UPSTREAMS = ("primary", "fallback")


# ---------------------------------------------------------------------------------------------------------------
# Decisions (computerops/serving_faults/plan.py)
# ---------------------------------------------------------------------------------------------------------------

@settings(max_examples=examples(400), deadline=None)
@given(request=st.integers(1, 12), times=st.integers(1, 6), n=st.integers(1, 30),
       kind=st.sampled_from(SERVING_FAULT_KINDS))
def test_a_rule_fires_on_its_request_and_exactly_the_times_minus_one_after_it(request: int, times: int, n: int,
                                                                            kind: str) -> None:
    plan = ServingPlan(rules=[ServingRule(kind=kind, request=request, times=times)])
    decided = ServingInjector(plan).decide(n, "primary")
    expected = request <= n < request + times
    assert (decided is not None) == expected, (request, times, n)
    if decided is not None:
        assert decided.kind == kind
        assert decided.source == "rule:0"


@pytest.mark.parametrize(("rule_upstream", "asked", "fires"), [
    ("primary", "primary", True), ("primary", "fallback", False),
    ("fallback", "fallback", True), ("fallback", "primary", False),
    (None, "primary", True), (None, "fallback", True),
])
def test_a_rule_is_limited_to_its_upstream_and_none_means_both(rule_upstream: str | None, asked: str,
                                                               fires: bool) -> None:
    plan = ServingPlan(rules=[ServingRule(kind="throttle", request=3, times=1,
                                          upstream=rule_upstream)])
    assert (ServingInjector(plan).decide(3, asked) is not None) == fires  # type: ignore[arg-type]


def test_the_default_rule_upstream_is_the_primary_only() -> None:
    """A rule with no upstream named is the primary's (ServingRule's default): a fallback is not throttled by it."""
    plan = ServingPlan(rules=[ServingRule(kind="throttle", request=1, times=5)])
    assert ServingInjector(plan).decide(2, "fallback") is None
    assert ServingInjector(plan).decide(2, "primary") is not None


@settings(max_examples=examples(400), deadline=None)
@given(seed=st.integers(0, 2**31), task=st.text(min_size=0, max_size=12), repetition=st.integers(1, 5),
       request=st.integers(1, 60), kind=st.sampled_from(SERVING_FAULT_KINDS),
       low=st.floats(0.0, 1.0), high=st.floats(0.0, 1.0), upstream=st.sampled_from(UPSTREAMS))
def test_rates_nest_a_request_faulted_at_a_rate_is_faulted_at_every_higher_rate(
        seed: int, task: str, repetition: int, request: int, kind: str, low: float, high: float,
        upstream: str) -> None:
    low, high = min(low, high), max(low, high)

    def at(rate: float) -> ServingDecision | None:
        plan = ServingPlan(seed=seed, task_id=task, repetition=repetition, rate=rate,
                           rate_kinds=[kind])
        return ServingInjector(plan).decide(request, upstream)  # type: ignore[arg-type]

    lower, higher = at(low), at(high)
    if lower is not None:
        assert higher is not None and higher.kind == lower.kind
    # and the documented formula: it fires exactly where draw(...) is below the rate
    assert (lower is not None) == (draw(seed, task, repetition, request, kind) < low)


@pytest.mark.parametrize("kind", SERVING_FAULT_KINDS)
def test_rate_zero_never_fires_and_rate_one_always_fires(kind: str) -> None:
    never = ServingInjector(ServingPlan(seed=3, task_id="t", rate=0.0, rate_kinds=[kind]))
    always = ServingInjector(ServingPlan(seed=3, task_id="t", rate=1.0, rate_kinds=[kind]))
    for n in range(1, 40):
        assert never.decide(n, "primary") is None
        fired = always.decide(n, "primary")
        assert fired is not None and fired.kind == kind and fired.source == "rate"


def test_a_rate_draws_for_its_own_kinds_only() -> None:
    """A rate over `throttle` never decides a `partial_stream`, however many requests."""
    injector = ServingInjector(ServingPlan(seed=1, task_id="t", rate=1.0, rate_kinds=["throttle"]))
    kinds = {d.kind for n in range(1, 50) if (d := injector.decide(n, "primary")) is not None}
    assert kinds == {"throttle"}


def test_decisions_are_a_function_of_plan_request_and_endpoint_not_of_asking_order() -> None:
    plan = ServingPlan(seed=11, task_id="helpdesk.x", repetition=2, rate=0.4,
                       rate_kinds=["throttle", "partial_stream", "queue_delay"],
                       rules=[ServingRule(kind="timeout_before_reply", request=4, times=2, upstream=None)])
    forward = [(n, u, ServingInjector(plan).decide(n, u)) for n in range(1, 30) for u in UPSTREAMS]  # type: ignore[arg-type]
    shared = ServingInjector(plan)
    backward = {(n, u): shared.decide(n, u) for n in reversed(range(1, 30)) for u in UPSTREAMS}  # type: ignore[arg-type]
    again = ServingInjector(plan)
    for n, u, decided in forward:
        assert backward[(n, u)] == decided
        assert again.decide(n, u) == decided  # type: ignore[arg-type]
    # and the seed matters: another seed decides differently somewhere
    other = ServingInjector(plan.model_copy(update={"seed": 12}))
    assert any(other.decide(n, u) != d for n, u, d in forward)  # type: ignore[arg-type]


def test_a_rule_carries_its_params_into_the_decision() -> None:
    params = ServingParams(retry_after=7, delay_s=0.5, events=3, hold_s=9.0)
    plan = ServingPlan(rules=[ServingRule(kind="throttle", request=2, params=params)])
    decided = ServingInjector(plan).decide(2, "primary")
    assert decided is not None and decided.params == params and decided.applied


@settings(max_examples=examples(200), deadline=None)
@given(decisions=st.dictionaries(st.integers(1, 20), st.one_of(
    st.none(), st.builds(ServingDecision, kind=st.sampled_from(SERVING_FAULT_KINDS),
                         source=st.sampled_from(["rule:0", "rate"]),
                         params=st.builds(ServingParams, retry_after=st.one_of(st.none(), st.integers(0, 30)))))),
       upstream=st.sampled_from(UPSTREAMS))
def test_a_forced_injector_makes_exactly_the_logged_decisions(decisions: dict[int, ServingDecision | None],
                                                              upstream: str) -> None:
    """Forced, the plan is not consulted: a request the plan would throttle but the log says was not, is not."""
    plan = ServingPlan(rate=1.0, rate_kinds=["throttle"])  # would fire on every request
    forced = ServingInjector(plan, forced=decisions)
    for n, logged in decisions.items():
        assert forced.decide(n, upstream) == logged  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------------
# The layer (computerops/serving_faults/layer.py)
# ---------------------------------------------------------------------------------------------------------------

def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def text_stream(pieces: list[str], *, usage: bool = True) -> bytes:
    events = [chunk({"role": "assistant", "content": pieces[0]})] + [chunk({"content": p}) for p in pieces[1:]]
    events.append(chunk({}, "stop"))
    if usage:
        events.append({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [],
                       "usage": {"prompt_tokens": 5, "completion_tokens": len(pieces), "total_tokens": 5}})
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


def tool_stream(name: str, arguments: str, *, tokens: int = 3) -> bytes:
    """A streamed tool call: its name in the first event, its arguments halved over the next two."""
    half = len(arguments) // 2
    events = [chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call1", "type": "function",
                                                          "function": {"name": name, "arguments": ""}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:half]}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
              chunk({}, "tool_calls"),
              {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [],
               "usage": {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}}]
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


def envelope(name: str, arguments: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                       "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                           "role": "assistant", "content": None,
                           "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": name, "arguments": arguments}}]}}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}).encode()


@dataclass
class Upstream:
    """A fake endpoint: answers every chat request with the next of `replies` (the last repeated), streamed when
    asked to stream; counts what reached it."""

    replies: list[tuple[str, str]] = field(default_factory=lambda: [("done", '{"success": false}')])
    seen: list[dict[str, Any]] = field(default_factory=list)
    models_seen: int = 0

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/models"):
            self.models_seen += 1
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        body = json.loads(request.content)
        self.seen.append(body)
        name, arguments = self.replies[min(len(self.seen), len(self.replies)) - 1]
        if body.get("stream") is True:
            return httpx2.Response(200, content=tool_stream(name, arguments),
                                   headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, content=envelope(name, arguments), headers={"content-type": "application/json"})

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self.handler)


def faults_of(*rules: ServingRule, **plan: Any) -> EpisodeServingFaults:
    return EpisodeServingFaults(ServingPlan(rules=list(rules), **plan))


async def ask(transport: httpx2.AsyncBaseTransport, *, stream: bool = True, url: str = CHAT) -> httpx2.Response:
    async with httpx2.AsyncClient(transport=transport) as client:
        response = await client.post(url, json={"model": "m", "stream": stream,
                                                "messages": [{"role": "user", "content": "hi"}]})
        await response.aread()
        return response


@pytest.mark.parametrize("retry_after", [None, 0, 7])
async def test_a_throttle_is_a_429_before_the_endpoint_with_retry_after_only_when_configured(
        retry_after: int | None) -> None:
    endpoint = Upstream()
    faults = faults_of(ServingRule(kind="throttle", request=1, params=ServingParams(retry_after=retry_after)))
    response = await ask(ServingFaultTransport(faults, "primary", inner=endpoint.transport()))
    assert response.status_code == 429
    assert endpoint.seen == [], "the endpoint never sees a throttled request"
    if retry_after is None:
        assert "retry-after" not in response.headers
    else:
        assert response.headers["retry-after"] == str(retry_after)
    error = response.json()["error"]
    assert isinstance(error, dict) and error.get("message")
    # nothing the harness receives says a failure was injected
    said = (response.text + json.dumps(dict(response.headers))).lower()
    assert "inject" not in said and "fault" not in said
    [call] = faults.log.calls
    assert call.status == 429 and call.decision is not None and call.decision.applied


async def test_a_queue_delay_holds_then_answers_as_ever() -> None:
    endpoint = Upstream()
    faults = faults_of(ServingRule(kind="queue_delay", request=1, params=ServingParams(delay_s=0.4)))
    started = time.monotonic()
    response = await ask(ServingFaultTransport(faults, "primary", inner=endpoint.transport()))
    waited = time.monotonic() - started
    assert response.status_code == 200 and len(endpoint.seen) == 1
    assert waited >= 0.38
    assert not isinstance(assemble_stream(response.content), StreamCut), "answered whole"
    [call] = faults.log.calls
    assert call.held_s is not None and call.held_s >= 0.38


async def test_a_held_request_is_never_answered_until_the_harness_gives_up() -> None:
    endpoint = Upstream()
    faults = faults_of(ServingRule(kind="timeout_before_reply", request=1))
    transport = ServingFaultTransport(faults, "primary", inner=endpoint.transport())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ask(transport), timeout=1.0)
    assert endpoint.seen == [], "before the endpoint sees the request"
    [call] = faults.log.calls
    assert call.status is None, "held until the harness gave up: nothing went back"
    assert call.decision is not None and call.decision.kind == "timeout_before_reply" and call.decision.applied


async def test_a_held_request_nobody_gives_up_on_is_answered_504_after_hold_s() -> None:
    endpoint = Upstream()
    faults = faults_of(ServingRule(kind="timeout_before_reply", request=1, params=ServingParams(hold_s=0.3)))
    started = time.monotonic()
    response = await ask(ServingFaultTransport(faults, "primary", inner=endpoint.transport()))
    assert response.status_code == 504 and time.monotonic() - started >= 0.28
    assert endpoint.seen == []


def data_events(body: bytes) -> list[str]:
    return [data for data, _closed in sse_events(body.decode())]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.text(alphabet="abc xyz", min_size=1, max_size=4), min_size=1, max_size=8),
       events=st.integers(0, 14), usage=st.booleans())
def test_a_cut_stream_never_holds_a_finish_or_done_nor_more_than_its_events(pieces: list[str], events: int,
                                                                           usage: bool) -> None:
    whole = text_stream(pieces, usage=usage)

    def answer(_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=whole, headers={"content-type": "text/event-stream"})

    faults = faults_of(ServingRule(kind="partial_stream", request=1, params=ServingParams(events=events)))
    response = asyncio.run(ask(ServingFaultTransport(faults, "primary", inner=httpx2.MockTransport(answer))))
    [call] = faults.log.calls
    assert call.decision is not None and call.decision.kind == "partial_stream"
    if call.decision.applied:
        sent = data_events(response.content)
        assert len(sent) <= events
        assert call.events_sent == len(sent)
        assert "[DONE]" not in response.text
        for data in sent:
            for choice in json.loads(data).get("choices", []):
                assert choice.get("finish_reason") is None
        assert isinstance(assemble_stream(response.content), StreamCut)
    else:
        assert response.content == whole, "a cut not applied leaves the reply as it was"
    if 1 <= events <= len(pieces):
        assert call.decision.applied, "a cut before the finish event is carried out"
    if events >= len(data_events(whole)):
        assert not call.decision.applied, "a reply shorter than the cut cannot be cut"


async def test_a_cut_of_a_reply_not_streamed_is_logged_not_applied() -> None:
    endpoint = Upstream()
    faults = faults_of(ServingRule(kind="partial_stream", request=1, params=ServingParams(events=1)))
    response = await ask(ServingFaultTransport(faults, "primary", inner=endpoint.transport()), stream=False)
    assert response.status_code == 200
    assert response.content == envelope("done", '{"success": false}')
    [call] = faults.log.calls
    assert call.decision is not None and not call.decision.applied and not call.streamed
    assert faults.log.fired == []


async def test_requests_other_than_chat_pass_untouched_and_are_not_numbered() -> None:
    endpoint = Upstream()
    faults = faults_of(ServingRule(kind="throttle", request=1, times=1))
    transport = ServingFaultTransport(faults, "primary", inner=endpoint.transport())
    async with httpx2.AsyncClient(transport=transport) as client:
        models = await client.get("http://model.test/v1/models")
    assert models.status_code == 200 and endpoint.models_seen == 1
    assert faults.log.calls == []
    response = await ask(transport)
    assert response.status_code == 429, "the first chat request is request 1, whatever /models calls came before"


async def test_requests_are_numbered_across_primary_and_fallback_and_a_rule_keeps_to_its_upstream() -> None:
    primary, fallback = Upstream(), Upstream()
    faults = faults_of(ServingRule(kind="throttle", request=2, times=2, upstream="primary"),
                       ServingRule(kind="throttle", request=4, times=1, upstream=None))
    to_primary = ServingFaultTransport(faults, "primary", inner=primary.transport())
    to_fallback = ServingFaultTransport(faults, "fallback", inner=fallback.transport())
    statuses = []
    for transport in (to_primary, to_fallback, to_primary, to_fallback, to_primary):
        statuses.append((await ask(transport)).status_code)
    # request 2 is the fallback's (the primary rule does not fire on it); 3 the primary's; 4 the fallback's (both)
    assert statuses == [200, 200, 429, 429, 200]
    assert [(c.request, c.upstream) for c in faults.log.calls] == [
        (1, "primary"), (2, "fallback"), (3, "primary"), (4, "fallback"), (5, "primary")]
    assert [c.decision is not None for c in faults.log.calls] == [False, False, True, True, False]


# ---------------------------------------------------------------------------------------------------------------
# verify: log_problems
# ---------------------------------------------------------------------------------------------------------------

_GENUINE: list[tuple[ServingLog, ServingPlan]] = []


async def genuine_log() -> tuple[ServingLog, ServingPlan]:
    """The log of five requests (a queueing delay by rate holds one a second): made once, shared by the cases."""
    if not _GENUINE:
        _GENUINE.append(await _make_genuine_log())
    log, plan = _GENUINE[0]
    return log.model_copy(deep=True), plan


async def _make_genuine_log() -> tuple[ServingLog, ServingPlan]:
    plan = ServingPlan(seed=5, task_id="t", rules=[ServingRule(kind="throttle", request=2, times=1,
                                                               params=ServingParams(retry_after=3)),
                                                   ServingRule(kind="partial_stream", request=4)],
                       rate=0.3, rate_kinds=["queue_delay"])
    faults = EpisodeServingFaults(plan)
    primary, fallback = Upstream(), Upstream()
    for transport in (ServingFaultTransport(faults, "primary", inner=primary.transport()),) * 3 + (
            ServingFaultTransport(faults, "fallback", inner=fallback.transport()),
            ServingFaultTransport(faults, "primary", inner=primary.transport())):
        await ask(transport, stream=True)
    return faults.log, plan


async def test_the_genuine_log_has_no_problems() -> None:
    log, plan = await genuine_log()
    assert [c.request for c in log.calls] == [1, 2, 3, 4, 5]
    assert log_problems(log, plan) == []
    assert log_problems(ServingLog.model_validate_json(log.model_dump_json()), plan) == []


def _drop_fired(log: ServingLog) -> ServingLog:
    return log.model_copy(update={"calls": [c.model_copy(update={"decision": None}) if c.decision else c
                                            for c in log.calls]})


def _forge_throttle(log: ServingLog) -> ServingLog:
    calls = list(log.calls)
    calls[0] = calls[0].model_copy(update={"decision": ServingDecision(kind="throttle", source="rule:0"),
                                           "status": 429})
    return log.model_copy(update={"calls": calls})


def _edit_params(log: ServingLog) -> ServingLog:
    calls = [c.model_copy(update={"decision": c.decision.model_copy(
        update={"params": c.decision.params.model_copy(update={"retry_after": 30})})})
        if c.decision is not None and c.decision.kind == "throttle" else c for c in log.calls]
    return log.model_copy(update={"calls": calls})


def _swap_upstream(log: ServingLog) -> ServingLog:
    calls = [c.model_copy(update={"upstream": "fallback" if c.upstream == "primary" else "primary"})
             if c.request == 2 else c for c in log.calls]
    return log.model_copy(update={"calls": calls})


def _renumber(log: ServingLog) -> ServingLog:
    """The log's calls, shifted a request on (as if one had been dropped from the front)."""
    calls = [c.model_copy(update={"request": c.request - 1}) for c in log.calls[1:]]
    return log.model_copy(update={"calls": calls})


def _throttle_not_applied(log: ServingLog) -> ServingLog:
    calls = [c.model_copy(update={"decision": c.decision.model_copy(update={"applied": False})})
             if c.decision is not None and c.decision.kind == "throttle" else c for c in log.calls]
    return log.model_copy(update={"calls": calls})


def _other_plan(log: ServingLog) -> ServingLog:
    return log.model_copy(update={"plan": log.plan.model_copy(update={"seed": log.plan.seed + 1})})


@pytest.mark.parametrize("forge", [_drop_fired, _forge_throttle, _edit_params, _swap_upstream, _renumber,
                                   _throttle_not_applied, _other_plan], ids=lambda f: f.__name__.strip("_"))
async def test_log_problems_refuses_an_edited_log(forge: Any) -> None:
    log, plan = await genuine_log()
    forged = forge(log)
    assert forged != log
    assert log_problems(forged, plan), f"{forge.__name__} went unnoticed"


# ---------------------------------------------------------------------------------------------------------------
# The protocol (adapter/failover.py through adapter/loop.py ModelLoop(serving=...))
# ---------------------------------------------------------------------------------------------------------------

CONTROLS = [Control(id="1", role="link", name="Tickets"), Control(id="2", role="link", name="Orders")]
CLICK_1 = ("click", '{"id": "1"}')
CLICK_2 = ("click", '{"id": "2"}')
DONE = ("done", '{"success": false}')


@dataclass
class Page:
    acted: list[Action] = field(default_factory=list)

    async def observe(self) -> Observation:
        text = "Page: p\nURL: /helpdesk/\n\n" + "\n".join(format_control(c) for c in CONTROLS)
        return Observation(url="/helpdesk/", title="p", text=text, controls=CONTROLS)

    async def act(self, action: Action, number: int) -> ActionOutcome:
        self.acted.append(action)
        return ActionOutcome(ok=True, note="done")


@dataclass
class Episode:
    transcript: AgentTranscript
    page: Page
    primary: Upstream
    fallback: Upstream | None
    log: ServingLog
    elapsed_s: float


async def episode(*rules: ServingRule, protocol: ServingProtocol, primary: list[tuple[str, str]],
                  fallback: list[tuple[str, str]] | None = None, **bounds: Any) -> Episode:
    faults = faults_of(*rules)
    first = Upstream(replies=primary)
    second = None if fallback is None else Upstream(replies=fallback)
    client = model_client("http://model.test/v1", "k", max_retries=0,
                          transport=ServingFaultTransport(faults, "primary", inner=first.transport()))
    other = None
    if second is not None:
        other = Fallback(client=model_client("http://fallback.test/v1", "k", max_retries=0,
                                             transport=ServingFaultTransport(faults, "fallback",
                                                                             inner=second.transport())),
                         model="fb")
    page = Page()
    loop = ModelLoop(client, "m", Bounds(**{"wall_clock_s": 60.0, "request_timeout_s": 5.0, **bounds}),
                     serving=protocol, fallback=other)
    started = time.monotonic()
    transcript = await loop.run(page, "Do the task.")
    elapsed = time.monotonic() - started
    AgentTranscript.model_validate_json(transcript.model_dump_json())
    return Episode(transcript, page, first, second, faults.log, elapsed)


def kinds(transcript: AgentTranscript) -> list[str]:
    return [e.kind for e in transcript.serving]


async def test_replies_are_streamed_with_usage_and_nothing_else_happens_without_faults() -> None:
    run = await episode(protocol=ServingProtocol(stream=True), primary=[CLICK_1, DONE])
    assert run.transcript.stop_reason == "finish"
    assert all(body.get("stream") is True for body in run.primary.seen)
    assert all((body.get("stream_options") or {}).get("include_usage") is True for body in run.primary.seen)
    assert run.transcript.serving == [] and [a.action for a in run.page.acted] == ["click"]


@pytest.mark.parametrize("with_fallback", [True, False])
async def test_a_cut_tool_call_is_never_carried_out_and_a_fallback_after_it_is_refused(with_fallback: bool) -> None:
    """The cut reply named `click` and half its arguments: nothing of it is done, and without a continuation design
    the fallback is never asked; the episode ends `stream_cut`, unfinished."""
    cut = ServingRule(kind="partial_stream", request=1, params=ServingParams(events=2))
    run = await episode(cut, protocol=ServingProtocol(stream=True, on_throttle="fallback", on_timeout="fallback"),
                        primary=[CLICK_1, DONE], fallback=[CLICK_2, DONE] if with_fallback else None)
    assert run.page.acted == []
    assert run.transcript.stop_reason == "stream_cut"
    assert run.fallback is None or run.fallback.seen == [], "two models never answer one turn"
    assert "stream_cut" in kinds(run.transcript)
    if with_fallback:
        assert "fallback_refused" in kinds(run.transcript)
    assert "continued" not in kinds(run.transcript) and "fell_back" not in kinds(run.transcript)
    cut_event = next(e for e in run.transcript.serving if e.kind == "stream_cut")
    assert cut_event.action_started is True
    assert not any(step.action for step in run.transcript.steps), "no step carries the cut action"


async def test_under_a_continuation_design_the_fallback_answers_the_whole_turn_again() -> None:
    cut = ServingRule(kind="partial_stream", request=1, params=ServingParams(events=2))
    run = await episode(cut, protocol=ServingProtocol(stream=True, continuation=True),
                        primary=[CLICK_1, DONE], fallback=[CLICK_2, DONE])
    assert "continued" in kinds(run.transcript)
    assert run.transcript.stop_reason == "finish"
    # the only click carried out is the fallback's whole one, never the cut primary's
    assert [a.model_dump().get("id") for a in run.page.acted if a.action == "click"][:1] == ["2"]
    first = run.transcript.steps[0]
    assert first.call.upstream == "fallback"
    assert len(run.fallback.seen) >= 1  # type: ignore[union-attr]


async def test_a_continuation_design_without_a_fallback_still_ends_unfinished() -> None:
    cut = ServingRule(kind="partial_stream", request=1, params=ServingParams(events=2))
    run = await episode(cut, protocol=ServingProtocol(stream=True, continuation=True), primary=[CLICK_1, DONE])
    assert run.page.acted == [] and run.transcript.stop_reason == "stream_cut"


async def test_on_throttle_fallback_sends_the_request_at_once_to_the_fallback() -> None:
    throttle = ServingRule(kind="throttle", request=1, times=50, params=ServingParams(retry_after=30))
    run = await episode(throttle, protocol=ServingProtocol(stream=True, on_throttle="fallback", max_wait_s=30),
                        primary=[CLICK_1, DONE], fallback=[CLICK_2, DONE])
    assert run.elapsed_s < 10, "at once: no Retry-After wait"
    assert "waited" not in kinds(run.transcript) and "fell_back" in kinds(run.transcript)
    assert run.transcript.steps[0].call.upstream == "fallback"
    assert [a.model_dump().get("id") for a in run.page.acted] == ["2"]
    assert run.primary.seen == []


@pytest.mark.parametrize(("retry_after", "max_wait_s"), [(30, 0.3), (None, 0.2), (1, 0.0)])
async def test_a_wait_after_a_429_never_exceeds_max_wait_s(retry_after: int | None, max_wait_s: float) -> None:
    throttle = ServingRule(kind="throttle", request=1, times=1, params=ServingParams(retry_after=retry_after))
    run = await episode(throttle, protocol=ServingProtocol(stream=True, backoff_s=5.0, max_wait_s=max_wait_s),
                        primary=[DONE])
    waits = [e.wait_s for e in run.transcript.serving if e.wait_s is not None]
    assert all(w <= max_wait_s + 1e-6 for w in waits), waits
    assert run.elapsed_s < max_wait_s + 5
    assert run.transcript.stop_reason == "finish"
    throttled = next(e for e in run.transcript.serving if e.kind == "throttled")
    assert throttled.retry_after_s == (None if retry_after is None else float(retry_after))


async def test_a_wait_never_goes_past_the_wall_clock() -> None:
    throttle = ServingRule(kind="throttle", request=1, times=1, params=ServingParams(retry_after=20))
    run = await episode(throttle, protocol=ServingProtocol(stream=True, max_wait_s=30.0), primary=[DONE],
                        wall_clock_s=1.5)
    assert run.elapsed_s < 6.0, f"the episode's wall clock is 1.5 s; it took {run.elapsed_s:.1f}"
    assert sum(e.wait_s or 0.0 for e in run.transcript.serving) <= 1.5 + 1e-6


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_throttle_retries_are_bounded(retries: int) -> None:
    throttle = ServingRule(kind="throttle", request=1, times=100, params=ServingParams(retry_after=0))
    run = await episode(throttle, protocol=ServingProtocol(stream=True, retries=retries, backoff_s=0.0),
                        primary=[DONE])
    assert len(run.log.calls) == retries + 1, "the first ask and `retries` more"
    assert run.transcript.stop_reason != "finish"
    assert kinds(run.transcript).count("throttled") == retries + 1


async def test_on_throttle_fallback_without_a_fallback_never_has_a_fallback_answer() -> None:
    throttle = ServingRule(kind="throttle", request=1, times=1, params=ServingParams(retry_after=0))
    run = await episode(throttle, protocol=ServingProtocol(stream=True, on_throttle="fallback", backoff_s=0.0),
                        primary=[DONE])
    assert "fell_back" not in kinds(run.transcript)
    assert all(step.call.upstream is None for step in run.transcript.steps)
    assert all(c.upstream == "primary" for c in run.log.calls)


@pytest.mark.parametrize("on_timeout", ["retry", "fallback"])
async def test_a_request_without_a_reply_is_sent_once_more(on_timeout: str) -> None:
    held = ServingRule(kind="timeout_before_reply", request=1, times=1)
    run = await episode(held, protocol=ServingProtocol(stream=True, on_timeout=on_timeout),
                        primary=[CLICK_1, DONE], fallback=[CLICK_2, DONE], request_timeout_s=0.5)
    assert "timed_out" in kinds(run.transcript)
    assert run.transcript.stop_reason == "finish"
    second = run.log.calls[1]
    assert second.upstream == ("primary" if on_timeout == "retry" else "fallback")
    assert run.transcript.steps[0].call.upstream == (None if on_timeout == "retry" else "fallback")


async def test_a_second_timeout_of_one_reply_is_not_resent_again() -> None:
    held = ServingRule(kind="timeout_before_reply", request=1, times=5)
    run = await episode(held, protocol=ServingProtocol(stream=True), primary=[DONE], request_timeout_s=0.4)
    assert len(run.log.calls) == 2, "sent once more, not again"
    assert run.transcript.stop_reason != "finish"


async def test_an_injected_fault_never_shows_in_what_the_model_is_sent() -> None:
    throttle = ServingRule(kind="throttle", request=1, times=1, params=ServingParams(retry_after=0))
    run = await episode(throttle, protocol=ServingProtocol(stream=True, backoff_s=0.0), primary=[CLICK_1, DONE])
    prompts = json.dumps([body["messages"] for body in run.primary.seen]).lower()
    assert "inject" not in prompts


# ---------------------------------------------------------------------------------------------------------------
# The fallback matrix (computerops/serving_faults/arms.py)
# ---------------------------------------------------------------------------------------------------------------

def test_arm_b_throttles_the_primary_from_the_second_request_on_and_never_the_fallback() -> None:
    from computerops.serving_faults.arms import serving_arm
    arm = serving_arm("throttle-fallback")
    assert arm.protocol.stream and arm.protocol.on_throttle == "fallback"
    injector = ServingInjector(arm.plan(0, "helpdesk.t", 1))
    assert injector.decide(1, "primary") is None
    for n in range(2, 40):
        decided = injector.decide(n, "primary")
        assert decided is not None and decided.kind == "throttle"
        assert injector.decide(n, "fallback") is None


@pytest.mark.parametrize("continuation", [False, True])
def test_arm_c_cuts_only_the_second_reply_after_two_events(continuation: bool) -> None:
    from computerops.serving_faults.arms import serving_arm
    arm = serving_arm("partial-stream", continuation=continuation)
    assert arm.protocol.stream and arm.protocol.continuation == continuation
    injector = ServingInjector(arm.plan(4, "helpdesk.t", 2))
    decided = {n: injector.decide(n, "primary") for n in range(1, 20)}
    assert [n for n, d in decided.items() if d is not None] == [2]
    assert decided[2] is not None and decided[2].kind == "partial_stream" and decided[2].params.events == 2


@pytest.mark.parametrize("arm_name", ["reference", "timeout-after-commit", "degraded-tool"])
def test_arms_a_d_e_inject_nothing_model_side_and_every_arm_streams(arm_name: str) -> None:
    from computerops.serving_faults.arms import serving_arm
    arm = serving_arm(arm_name)  # type: ignore[arg-type]
    assert arm.protocol.stream
    injector = ServingInjector(arm.plan(9, "helpdesk.t", 1))
    assert all(injector.decide(n, u) is None for n in range(1, 30) for u in UPSTREAMS)  # type: ignore[arg-type]


@pytest.mark.parametrize(("names", "has_fallback", "wrong"), [
    ("throttle-fallback", False, "fallback"),
    ("reference,reference", True, "twice"),
    ("reference,throttle", True, "unknown"),
])
def test_parse_serving_arms_refuses_what_cannot_run(names: str, has_fallback: bool, wrong: str) -> None:
    from computerops.serving_faults.arms import parse_serving_arms
    with pytest.raises(ValueError, match=wrong):
        parse_serving_arms(names, ["helpdesk"], has_fallback=has_fallback)


# ---------------------------------------------------------------------------------------------------------------
# End to end: one small run in the browser, its records, and verify (computerops/runs/runner.py)
# ---------------------------------------------------------------------------------------------------------------

NOTIFY = "helpdesk.notify-and-close-follow-up@1"
REFUND = "helpdesk.refund-under-outdated-policy@1"
E2E = [  # (episode suffix, task, policy, arm)
    ("ref", NOTIFY, "careful", "reference"),
    ("b", NOTIFY, "careful", "throttle-fallback"),
    ("c", NOTIFY, "careful", "partial-stream"),
    ("d-careful", NOTIFY, "careful", "timeout-after-commit"),
    ("d-blind", NOTIFY, "blind-retry", "timeout-after-commit"),
    ("e-oracle", REFUND, "oracle", "degraded-tool"),
]


@dataclass
class Run:
    out: Path
    records: dict[str, Any]


@pytest.fixture(scope="module")
def serving_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    from computerops.runs.config import EndpointConfig, FallbackEndpoint, PlannedEpisode, RunConfig
    from computerops.runs.runner import execute_run
    from computerops.serving_faults.arms import serving_arm
    from tasks import load_catalog

    catalog = load_catalog()
    planned = [PlannedEpisode(episode_id=f"{i:03d}-{name}", task_id=task, policy=policy, pair=f"{task}-{policy}",
                              serving=serving_arm(arm))  # type: ignore[arg-type]
               for i, (name, task, policy, arm) in enumerate(E2E, start=1)]
    out = tmp_path_factory.mktemp("serving") / "run"
    config = RunConfig(run_id="blind-serving", tasks=[NOTIFY, REFUND], episodes=planned,
                       endpoint=EndpointConfig(kind="scripted", policies=["careful", "blind-retry", "oracle"],
                                               fallback=FallbackEndpoint(policy="false-finish")))
    records = asyncio.run(execute_run(config, [catalog[NOTIFY], catalog[REFUND]], out))
    return Run(out, {r.episode_id.split("-", 1)[1]: r for r in records})


def browser(test: Any) -> Any:
    """The end-to-end blind cases: in the slow tier, as tests/test_serving_runs.py runs the same arms, policies and
    verification in CI (the in-process blind cases above run in every tier)."""
    return pytest.mark.slow(pytest.mark.browser(test))


@browser
def test_e2e_every_episode_has_a_serving_record_and_the_reference_path_is_normal(serving_run: Run) -> None:
    assert set(serving_run.records) == {name for name, *_ in E2E}
    assert all(r.serving is not None for r in serving_run.records.values())
    ref = serving_run.records["ref"].serving
    assert ref.path == "normal" and ref.injected == [] and ref.not_injected == [] and ref.contract_held
    assert ref.replies.get("fallback", 0) == 0


@browser
def test_e2e_arm_b_falls_back_and_an_early_false_finish_breaks_the_contract(serving_run: Run) -> None:
    record = serving_run.records["b"]
    serving = record.serving
    assert serving.path == "fallback"
    assert any(i.startswith("throttle@2/primary") for i in serving.injected)
    assert serving.not_injected == [], "the 429s were injected, every one"
    assert serving.replies.get("fallback", 0) >= 1
    assert record.outcome != "infrastructure_failure"
    # the README's false-finish fallback claims success early: caught, never a held contract
    assert serving.false_success_claim and not serving.contract_held


@browser
def test_e2e_arm_c_a_cut_stream_ends_unfinished_saying_so_and_is_not_infrastructure(serving_run: Run) -> None:
    record = serving_run.records["c"]
    serving = record.serving
    assert serving.path == "blocked"
    assert serving.ended_by_injection == "partial_stream"
    assert record.outcome != "infrastructure_failure", "an injected failure is part of the treatment"
    assert serving.state_unreadable and serving.unresolved_explicit is True
    assert not serving.false_success_claim and serving.contract_held
    assert serving.replies.get("fallback", 0) == 0, "refused: no continuation design"
    assert "partial_stream@2/primary" in serving.injected


@browser
def test_e2e_arm_d_careful_keeps_exactly_once_and_blind_retry_duplicates(serving_run: Run) -> None:
    careful, blind = serving_run.records["d-careful"].serving, serving_run.records["d-blind"].serving
    for serving in (careful, blind):
        assert serving.path == "after_commit_timeout"
        assert any(i.startswith("ambiguous_after_commit@op") for i in serving.injected)
        assert serving.state_unreadable
    assert careful.duplicate_effects == 0 and careful.contract_held and careful.unresolved_explicit
    assert blind.duplicate_effects == 1 and not blind.contract_held


@browser
def test_e2e_arm_e_oracle_invents_eligibility_on_a_degraded_evidence_page(serving_run: Run) -> None:
    serving = serving_run.records["e-oracle"].serving
    assert serving.path == "degraded_evidence"
    assert "shown-the-approvals-policy" in serving.invented_eligibility
    assert not serving.contract_held
    assert any(i.startswith("missing_resource@op") for i in serving.injected)


@browser
def test_e2e_the_serving_logs_match_their_plans_and_verify_passes(serving_run: Run) -> None:
    from computerops.runs.bundle import RunDirectory
    from computerops.runs.verification import verify_run
    bundle = RunDirectory.open(serving_run.out)
    for name, record in serving_run.records.items():
        log = ServingLog.model_validate_json((bundle.episode_dir(record.episode_id) / "serving.json").read_text())
        assert log_problems(log, log.plan) == [], name
        assert [c.request for c in log.calls] == list(range(1, len(log.calls) + 1)), name
    verification = asyncio.run(verify_run(bundle))
    assert verification.passed, verification.problems


@browser
def test_e2e_verify_refuses_a_serving_log_with_its_throttles_dropped(serving_run: Run, tmp_path: Path) -> None:
    import shutil

    from computerops.runs.bundle import RunDirectory
    from computerops.runs.verification import verify_run
    copy = tmp_path / "run"
    shutil.copytree(serving_run.out, copy)
    bundle = RunDirectory.open(copy)
    path = bundle.episode_dir(serving_run.records["b"].episode_id) / "serving.json"
    log = ServingLog.model_validate_json(path.read_text())
    path.write_text(_drop_fired(log).model_dump_json())
    verification = asyncio.run(verify_run(bundle))
    assert not verification.passed and verification.problems
