"""The serving-fault layer and the serving protocol, in process: each fault kind through the real openai client into
the scripted endpoint (streamed and not), decided by plan, logged as configured and fired, and forced again.

The environment is the loop tests' fake helpdesk (tests/test_loop_scripted.py); the browser-backed runs are in
tests/test_serving_runs.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_loop_scripted import CATALOG, SOLVE, FakeSite
from tiers import examples

from adapter.failover import Fallback, ServingProtocol, ServingTurn
from adapter.loop import ModelLoop
from adapter.modelclient import model_client
from adapter.scripted import create_scripted_app
from adapter.stream import StreamCut, assemble_stream
from adapter.transcript import AgentTranscript, Bounds
from computerops.serving_faults.layer import EpisodeServingFaults, ServingFaultTransport
from computerops.serving_faults.plan import (
    SERVING_FAULT_KINDS,
    ServingDecision,
    ServingInjector,
    ServingParams,
    ServingPlan,
    ServingRule,
)

APP = create_scripted_app(list(CATALOG.values()))


def clients(faults: EpisodeServingFaults, *, fallback: str | None = None,
            app: Any = APP) -> tuple[openai.AsyncOpenAI, Fallback | None]:
    """The episode's clients as a serving run makes them (no SDK retries), their network the scripted app."""
    def client(upstream: Any) -> openai.AsyncOpenAI:
        inner = httpx2.ASGITransport(app=app)
        return model_client("http://scripted.test/v1", "scripted", max_retries=0,
                            transport=ServingFaultTransport(faults, upstream, inner=inner))
    second = None if fallback is None else Fallback(client=client("fallback"), model=f"scripted:{fallback}")
    return client("primary"), second


async def episode(rules: list[ServingRule], protocol: ServingProtocol, *, fallback: str | None = None,
                  policy: str = "oracle", app: Any = APP,
                  **bounds: Any) -> tuple[AgentTranscript, EpisodeServingFaults, FakeSite]:
    faults = EpisodeServingFaults(ServingPlan(task_id=SOLVE.id, rules=rules))
    primary, second = clients(faults, fallback=fallback, app=app)
    site = FakeSite()
    loop = ModelLoop(primary, f"scripted:{policy}", Bounds(**bounds), serving=protocol, fallback=second)
    transcript = await loop.run(site, SOLVE.spec.instruction)
    return transcript, faults, site


STREAMED = ServingProtocol(stream=True)
PLAIN = ServingProtocol(stream=False)


# --- decisions --------------------------------------------------------------------------------------------------


def test_a_rule_fires_on_its_requests_and_only_for_its_endpoint() -> None:
    injector = ServingInjector(ServingPlan(rules=[ServingRule(kind="throttle", request=2, times=2)]))
    fired = [injector.decide(n, "primary") for n in range(1, 5)]
    assert [d.kind if d else None for d in fired] == [None, "throttle", "throttle", None]
    assert injector.decide(2, "fallback") is None  # the rule names the primary
    anywhere = ServingInjector(ServingPlan(rules=[ServingRule(kind="queue_delay", upstream=None)]))
    assert anywhere.decide(1, "fallback") is not None


@given(seed=st.integers(0, 2**31), request=st.integers(1, 500), low=st.floats(0, 1), high=st.floats(0, 1))
@settings(max_examples=examples(200), deadline=None)
def test_a_request_faulted_at_a_rate_is_faulted_at_every_higher_rate(seed: int, request: int, low: float,
                                                                     high: float) -> None:
    low, high = sorted((low, high))
    kinds = list(SERVING_FAULT_KINDS)

    def decided(rate: float) -> ServingDecision | None:
        return ServingInjector(ServingPlan(seed=seed, task_id="t", rate=rate, rate_kinds=kinds)).decide(request,
                                                                                                       "primary")

    if decided(low) is not None:
        assert decided(high) is not None


def test_a_forced_injector_makes_exactly_the_logged_decisions() -> None:
    logged: dict[int, ServingDecision | None] = {2: ServingDecision(kind="throttle", source="rule:0")}
    forced = ServingInjector(ServingPlan(rules=[ServingRule(kind="partial_stream")]), forced=logged)
    assert [forced.decide(n, "primary") for n in (1, 2, 3)] == [None, logged[2], None]


# --- each kind, end to end through the openai client --------------------------------------------------------------


@pytest.mark.parametrize("protocol", [STREAMED, PLAIN], ids=["streamed", "not-streamed"])
async def test_the_reference_episode_meets_nothing_and_solves_the_task(protocol: ServingProtocol) -> None:
    transcript, faults, _ = await episode([], protocol)
    assert transcript.stop_reason == "finish" and transcript.finish and transcript.finish.success
    assert transcript.serving == [] and faults.log.fired == []
    assert all(call.streamed == protocol.stream and call.status == 200 for call in faults.log.calls)
    assert len(faults.log.calls) == len(transcript.steps)


@pytest.mark.parametrize("retry_after", [0, None], ids=["retry-after", "no-retry-after"])
@pytest.mark.parametrize("protocol", [STREAMED, PLAIN], ids=["streamed", "not-streamed"])
async def test_a_throttled_request_is_waited_for_and_asked_again(retry_after: int | None,
                                                                 protocol: ServingProtocol) -> None:
    rule = ServingRule(kind="throttle", request=2, params=ServingParams(retry_after=retry_after))
    waiting = protocol.model_copy(update={"backoff_s": 0.05})
    transcript, faults, _ = await episode([rule], waiting)
    assert transcript.finish is not None and transcript.finish.success
    kinds = [(e.reply, e.kind) for e in transcript.serving]
    assert kinds == [(2, "throttled"), (2, "waited")]
    throttled = transcript.serving[0]
    assert throttled.request == 2 and faults.log.calls[throttled.request - 1].status == 429
    assert throttled.retry_after_s == (None if retry_after is None else float(retry_after))
    assert transcript.serving[1].wait_s == (0.05 if retry_after is None else 0.0)
    assert [c.status for c in faults.log.calls[:3]] == [200, 429, 200]
    assert [c.decision.kind if c.decision else None for c in faults.log.calls[:3]] == [None, "throttle", None]


async def test_throttling_past_the_protocols_retries_ends_the_episode_with_the_429() -> None:
    rule = ServingRule(kind="throttle", request=1, times=10)
    transcript, faults, _ = await episode([rule], PLAIN.model_copy(update={"backoff_s": 0.0, "retries": 2}))
    assert transcript.stop_reason == "infrastructure" and transcript.infrastructure_cause == "HTTP 429"
    assert [c.status for c in faults.log.calls] == [429, 429, 429]  # the first ask and two retries


@pytest.mark.parametrize("protocol", [STREAMED, PLAIN], ids=["streamed", "not-streamed"])
async def test_a_throttled_primary_falls_back_to_the_pinned_endpoint(protocol: ServingProtocol) -> None:
    rule = ServingRule(kind="throttle", request=2, times=100)
    falling = protocol.model_copy(update={"on_throttle": "fallback"})
    transcript, faults, _ = await episode([rule], falling, fallback="give-up")
    answered = [s.call.upstream for s in transcript.steps]
    assert answered[0] is None and answered[1:] == ["fallback"]  # the fallback's policy gives up at once
    assert transcript.finish is not None and transcript.finish.success is False
    assert [(c.upstream, c.status) for c in faults.log.calls] == [("primary", 200), ("primary", 429),
                                                                  ("fallback", 200)]
    assert transcript.steps[1].call.model == "scripted:give-up"


async def test_a_throttle_with_no_fallback_configured_is_waited_for_instead() -> None:
    rule = ServingRule(kind="throttle", request=1, params=ServingParams(retry_after=0))
    transcript, _, _ = await episode([rule], PLAIN.model_copy(update={"on_throttle": "fallback"}))
    assert [e.kind for e in transcript.serving] == ["throttled", "waited"]
    assert transcript.finish is not None and transcript.finish.success


@pytest.mark.parametrize("protocol", [STREAMED, PLAIN], ids=["streamed", "not-streamed"])
async def test_a_request_held_before_its_reply_times_out_and_is_sent_once_more(protocol: ServingProtocol) -> None:
    rule = ServingRule(kind="timeout_before_reply", request=2)
    transcript, faults, _ = await episode([rule], protocol, request_timeout_s=0.3)
    assert transcript.finish is not None and transcript.finish.success
    assert [(e.reply, e.kind) for e in transcript.serving] == [(2, "timed_out"), (2, "resent")]
    held = faults.log.calls[1]
    assert held.status is None and held.held_s is not None and held.held_s >= 0.25  # never answered
    assert faults.log.calls[2].status == 200


async def test_a_second_timeout_of_one_reply_ends_the_episode_as_the_request_bound() -> None:
    rule = ServingRule(kind="timeout_before_reply", request=1, times=5)
    transcript, faults, _ = await episode([rule], PLAIN, request_timeout_s=0.2)
    assert transcript.stop_reason == "infrastructure" and transcript.infrastructure_cause == "request timeout"
    assert len(faults.log.calls) == 2


async def test_a_timeout_falls_back_when_the_protocol_says_so() -> None:
    rule = ServingRule(kind="timeout_before_reply", request=1)
    protocol = PLAIN.model_copy(update={"on_timeout": "fallback"})
    transcript, _, _ = await episode([rule], protocol, fallback="oracle", request_timeout_s=0.2)
    assert [e.kind for e in transcript.serving] == ["timed_out", "fell_back"]
    assert transcript.steps[0].call.upstream == "fallback" and transcript.finish and transcript.finish.success


async def test_a_queueing_delay_holds_the_request_and_changes_nothing_else() -> None:
    rule = ServingRule(kind="queue_delay", request=1, params=ServingParams(delay_s=0.2))
    transcript, faults, _ = await episode([rule], STREAMED)
    assert transcript.serving == [] and transcript.finish and transcript.finish.success
    assert faults.log.calls[0].held_s == 0.2 and transcript.steps[0].call.latency_s >= 0.2


async def test_a_cut_stream_is_not_carried_out_and_ends_the_episode_unfinished() -> None:
    rule = ServingRule(kind="partial_stream", request=2, params=ServingParams(events=2))
    transcript, faults, site = await episode([rule], STREAMED, fallback="oracle")
    assert transcript.stop_reason == "stream_cut" and transcript.finish is None
    assert len(transcript.steps) == 1 and len(site.done) == 1  # the cut reply's click never happened
    cut, refused = transcript.serving
    assert cut.kind == "stream_cut" and cut.action_started is True
    assert refused.kind == "fallback_refused"  # a fallback after the stream began, with no continuation design
    assert faults.log.calls[1].events_sent == 2 and "unfinished" in (transcript.stop_detail or "")


async def test_a_declared_continuation_design_lets_the_fallback_answer_the_cut_turn() -> None:
    rule = ServingRule(kind="partial_stream", request=2, params=ServingParams(events=1))
    protocol = STREAMED.model_copy(update={"continuation": True})
    transcript, _, _ = await episode([rule], protocol, fallback="oracle")
    assert [e.kind for e in transcript.serving] == ["stream_cut", "continued", "fell_back"]
    assert transcript.steps[1].call.upstream == "fallback"
    assert transcript.finish is not None and transcript.finish.success


async def test_a_cut_of_a_reply_that_is_not_streamed_is_logged_as_not_applied() -> None:
    rule = ServingRule(kind="partial_stream", request=1)
    transcript, faults, _ = await episode([rule], PLAIN)
    assert transcript.finish is not None and transcript.finish.success
    decision = faults.log.calls[0].decision
    assert decision is not None and decision.applied is False and faults.log.fired == []


async def test_a_cut_longer_than_the_reply_leaves_it_whole_and_is_not_applied() -> None:
    rule = ServingRule(kind="partial_stream", request=1, params=ServingParams(events=1000))
    transcript, faults, _ = await episode([rule], STREAMED)
    assert transcript.serving == [] and faults.log.fired == []


async def test_a_real_endpoints_429_is_met_by_the_protocol_but_is_no_injection() -> None:
    """An endpoint that throttles on its own: the protocol waits as for an injected one, and the layer's log shows
    nothing injected (the record counts it as not injected)."""
    asked: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        asked.append(1)
        if len(asked) == 1:
            body = json.dumps({"error": {"message": "slow down"}}).encode()
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"0")]})
            await send({"type": "http.response.body", "body": body})
            return
        await APP(scope, receive, send)

    transcript, faults, _ = await episode([], PLAIN, app=app)
    assert [e.kind for e in transcript.serving] == ["throttled", "waited"]
    assert faults.log.fired == [] and faults.log.calls[0].status == 429 and faults.log.calls[0].decision is None
    from computerops.serving_faults.record import _explained

    assert _explained(faults.log, transcript) == (["throttled@1/primary"], None)


# --- the protocol's rules, unit by unit ------------------------------------------------------------------------


def _rate_limit(retry_after: str | None) -> openai.RateLimitError:
    headers = {} if retry_after is None else {"retry-after": retry_after}
    response = httpx2.Response(429, headers=headers, request=httpx2.Request("POST", "http://x/v1/chat/completions"))
    return openai.RateLimitError("throttled", response=response, body=None)


@pytest.mark.parametrize(("said", "waited"), [("3", 3.0), ("60", 10.0), ("soon", 1.0), (None, 1.0), ("-1", 1.0)])
async def test_the_wait_after_a_429_is_its_retry_after_within_the_protocols_longest_wait(
        said: str | None, waited: float, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    turn = ServingTurn(ServingProtocol(), 1, [], None)
    assert await turn.after_throttle(_rate_limit(said), left_s=100.0)
    assert slept == [waited]


async def test_a_wait_past_the_episodes_wall_clock_is_not_taken() -> None:
    turn = ServingTurn(ServingProtocol(), 1, [], None)
    assert not await turn.after_throttle(_rate_limit("5"), left_s=2.0)


def test_a_cut_stream_is_what_the_assembler_calls_one() -> None:
    # The layer cuts at data events; what it hands back must read as a cut, never as a complete reply.
    assert isinstance(assemble_stream('data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'),
                      StreamCut)


def test_an_episode_is_a_serving_episode_or_a_long_running_one_never_both() -> None:
    from computerops.persistence.arms import Persistence
    from computerops.runs.config import PlannedEpisode
    from computerops.serving_faults.arms import serving_arm

    with pytest.raises(ValueError, match="cannot be long-running too"):
        PlannedEpisode(episode_id="e", task_id="t", serving=serving_arm("reference"), persistence=Persistence())


# --- the command line refuses what cannot run, before anything starts --------------------------------------------

NOTIFY = "helpdesk.notify-and-close-follow-up@1"


@pytest.mark.parametrize(("options", "said"), [
    (["--serving", "reference,sideways"], "unknown arm 'sideways'"),
    (["--serving", "reference,reference"], "names an arm twice"),
    (["--serving", "throttle-fallback"], "needs a fallback endpoint"),
    (["--request-timeout", "700", "--wall-clock", "600"], "request timeout (700 s, --request-timeout) is longer"),
    (["--request-timeout", "0"], "greater than 0"),
    (["--persistence", "restarted", "--fallback-policy", "oracle"], "asks only the primary endpoint"),
    (["--serving", "reference", "--persistence", "restarted"], "not both"),
    (["--serving", "reference", "--fallback-policy", "nobody"], "nobody"),
    (["--serving", "reference", "--fallback-model", "m"], "go with --fallback-base-url"),
    (["--serving", "reference", "--fallback-base-url", "http://127.0.0.1:9/v1", "--fallback-model", "m"],
     "scripted policy"),
    (["--serving", "reference", "--fallback-base-url", "http://127.0.0.1:9/v1"], "needs its --fallback-model"),
], ids=["unknown-arm", "twice", "no-fallback", "timeout-past-wall-clock", "no-timeout", "fallback-long-running",
        "with-persistence", "unknown-policy", "model-alone", "url-for-scripted", "url-without-model"])
def test_run_serving_refuses_bad_options_before_anything_runs(options: list[str], said: str, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from computerops.cli.main import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--tasks", NOTIFY, "--endpoint", "scripted:careful", "--out", str(out),
                                      *options])
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split()), result.output
    assert not out.exists()


def test_a_fallback_without_serving_and_the_time_bounds_are_planned_into_the_runs_config(tmp_path: Any) -> None:
    """A fallback alone is asked when the primary cannot be reached (adapter/failover.py); the time bounds given are
    the run's, in its manifest's config."""
    from computerops.service.launch import RunRequest, plan_run

    planned = plan_run(RunRequest(tasks=NOTIFY, endpoint="scripted:careful", fallback_policy="oracle",
                                  request_timeout=300, wall_clock=900), tmp_path / "run")
    assert planned.config.endpoint.fallback is not None and planned.config.endpoint.fallback.policy == "oracle"
    assert (planned.config.bounds.request_timeout_s, planned.config.bounds.wall_clock_s) == (300.0, 900.0)
    assert all(p.serving is None for p in planned.config.episodes)


def test_a_degraded_tool_arm_needs_a_site_that_names_its_evidence_page(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from computerops.cli.main import app

    result = CliRunner().invoke(app, ["run", "--tasks", "inventory.bulk-price-paint@1", "--endpoint", "scripted:oracle",
                                      "--out", str(tmp_path / "x"), "--serving", "degraded-tool"])
    assert result.exit_code == 2 and "names no evidence page" in " ".join(result.output.split())


# --- the record: what was injected, what ended the episode, which path --------------------------------------------


def _transcript(events: list[tuple[str, int]], stop: Any, cause: str | None = None) -> AgentTranscript:
    """A transcript whose serving events are (kind, request) in order."""
    from adapter.failover import ServingEvent

    return AgentTranscript(system_prompt="", instruction="", tool_mode="auto", first_observation="",
                           stop_reason=stop, infrastructure_cause=cause,
                           serving=[ServingEvent(reply=1, request=request, kind=kind, upstream="primary")
                                    for kind, request in events])


def _log(*decisions: Any) -> Any:
    from computerops.serving_faults.log import ServingCall, ServingLog

    return ServingLog(plan=ServingPlan(), calls=[
        ServingCall(request=n, upstream="primary", status=429 if kind == "throttle" else 200,
                    decision=None if kind is None else ServingDecision(kind=kind, source="rule:0"))
        for n, kind in enumerate(decisions, start=1)])


def test_a_failure_nothing_injected_is_not_injected_and_a_real_one_that_ends_the_episode_stays_infrastructure() -> None:
    from computerops.serving_faults.record import _explained

    real = _transcript([("throttled", 1), ("throttled", 2)], "infrastructure", "HTTP 429")
    unexplained, ended = _explained(_log(None, None), real)
    assert unexplained == ["throttled@1/primary", "throttled@2/primary"] and ended is None
    injected = _transcript([("throttled", 1)], "infrastructure", "HTTP 429")
    assert _explained(_log("throttle"), injected) == ([], "throttle")
    # An injected 429 earlier, a real failure at the end: the end is not the injection's.
    late = _transcript([("throttled", 1), ("throttled", 2)], "infrastructure", "HTTP 429")
    assert _explained(_log("throttle", None), late) == (["throttled@2/primary"], None)
    # A failure is set beside the decision for its own request, whatever the order of the others.
    held = _transcript([("timed_out", 1), ("timed_out", 2)], "infrastructure", "request timeout")
    assert _explained(_log(None, "timeout_before_reply"), held) == (["timed_out@1/primary"], "timeout_before_reply")
    assert _explained(_log("timeout_before_reply", None), held) == (["timed_out@2/primary"], None)
    # An injected kind other than the failure met at that request explains nothing.
    assert _explained(_log("queue_delay"), _transcript([("timed_out", 1)], "finish"))[0] == ["timed_out@1/primary"]
    # A primary that could not be reached is never an injection (the layer injects none): a real endpoint's failure.
    dead = _transcript([("unreachable", 1), ("fell_back", 1)], "finish")
    assert _explained(_log(None), dead) == (["unreachable@1/primary"], None)


@pytest.mark.parametrize(("kinds", "stop", "path"), [
    ([], "finish", "normal"),
    (["timed_out", "resent"], "finish", "resent"),
    (["throttled", "waited", "timed_out", "resent"], "finish", "waited"),
    (["throttled", "fell_back"], "finish", "fallback"),
    (["stream_cut", "continued", "fell_back"], "finish", "continued"),
    (["throttled", "waited", "stream_cut", "fallback_refused"], "stream_cut", "blocked"),
])
def test_the_path_is_the_last_that_applies_in_the_paths_order(kinds: list[str], stop: str, path: str) -> None:
    from computerops.serving_faults.record import _path

    events = [(kind, 1) for kind in kinds]
    assert _path(_transcript(events, stop), []) == path
    assert _path(_transcript(events, stop), [(5, "ambiguous_after_commit")]) == "after_commit_timeout"
    assert _path(_transcript(events, stop),
                 [(5, "ambiguous_after_commit"), (7, "missing_resource")]) == "degraded_evidence"


async def test_a_server_that_refuses_stream_options_is_asked_again_without_them() -> None:
    """An OpenAI-compatible server that streams but takes no `stream_options` (older servers word it so): the
    protocol asks once more without them, for the rest of the episode, and says so; usage then goes unreported."""
    refused: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if b"stream_options" in body:
            refused.append(1)
            said = json.dumps({"error": {"message": "Unrecognized request argument supplied: stream_options"}})
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": said.encode()})
            return

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        await APP(scope, replay, send)

    transcript, faults, _ = await episode([], STREAMED, app=app)
    assert transcript.finish is not None and transcript.finish.success and refused == [1]
    assert [e.kind for e in transcript.serving] == ["usage_unasked"]
    assert [c.status for c in faults.log.calls][:2] == [400, 200] and all(c.streamed for c in faults.log.calls)
    assert all(s.call.completion_tokens is None for s in transcript.steps)  # no usage chunk was asked for


async def test_a_stream_that_began_and_stalled_is_a_cut_stream_no_fallback_answers() -> None:
    """A real server (over loopback HTTP) that starts its streamed reply and then stalls: the request bound ends the
    wait, and since the stream had begun no fallback may answer the turn without a continuation design; the failure
    was not injected, so it stays the endpoint's (infrastructure)."""
    from adapter.modelclient import StreamWatch, WatchedTransport
    from computerops.runs.serving import serve_app
    from computerops.serving_faults.record import _explained

    async def stalling(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        chunk = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me"}}]}
        await send({"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(),
                    "more_body": True})
        with contextlib.suppress(TimeoutError):  # stalls until the client goes away
            async with asyncio.timeout(10):
                while (await receive())["type"] != "http.disconnect":
                    pass

    async with serve_app(stalling) as origin:
        for continuation in (False, True):
            faults = EpisodeServingFaults(ServingPlan(task_id=SOLVE.id))
            watch = StreamWatch()
            primary = model_client(f"{origin}/v1", "k", max_retries=0, transport=ServingFaultTransport(
                faults, "primary", inner=WatchedTransport(watch)))
            fallback = Fallback(client=clients(faults)[0], model="scripted:oracle")
            loop = ModelLoop(primary, "m", Bounds(request_timeout_s=0.5),
                             serving=STREAMED.model_copy(update={"continuation": continuation,
                                                                 "on_timeout": "fallback"}),
                             fallback=fallback, stream_watch=watch)
            transcript = await loop.run(FakeSite(), SOLVE.spec.instruction)
            kinds = [e.kind for e in transcript.serving]
            if continuation:  # every turn: the primary's stream stalls, the fallback answers the turn again
                assert kinds == ["stream_cut", "continued", "fell_back"] * len(transcript.steps)
                assert transcript.finish is not None and transcript.finish.success
                assert {s.call.upstream for s in transcript.steps} == {"fallback"}
            else:
                assert kinds == ["stream_cut", "fallback_refused"], kinds
                assert transcript.stop_reason == "infrastructure" and transcript.steps == []
                assert _explained(faults.log, transcript) == (["stream_cut@1/primary"], None)
