"""An HTTP 500 under the serving protocol (issue 43, part B): asked again within the bounds as the openai client's
own retries ask without the protocol, recorded as a `server_error` the serving record counts as not injected, and
ending the episode, past the retries, exactly where it ends one without the protocol."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from test_loop_scripted import SOLVE, FakeSite
from test_serving_faults import APP, episode

from adapter.failover import SERVER_ERROR_RETRIES, ServingEvent, ServingProtocol
from adapter.loop import ModelLoop
from adapter.modelclient import model_client
from adapter.transcript import AgentTranscript, Bounds
from computerops.serving_faults.log import ServingCall, ServingLog
from computerops.serving_faults.plan import ServingDecision, ServingPlan
from computerops.serving_faults.record import _explained

QUICK = ServingProtocol(stream=False, backoff_s=0.0)


def failing(times: int) -> tuple[Any, list[int]]:
    """The scripted endpoint behind a server that answers its first `times` requests with HTTP 500."""
    asked: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        asked.append(1)
        if len(asked) <= times:
            body = json.dumps({"error": {"message": "model crashed"}}).encode()
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await APP(scope, receive, send)
    return app, asked


async def without_the_protocol(app: Any) -> AgentTranscript:
    """The same episode as a run without `--serving` asks: the client's own two retries, no serving protocol."""
    client = model_client("http://scripted.test/v1", "scripted", max_retries=SERVER_ERROR_RETRIES,
                          transport=httpx2.ASGITransport(app=app))
    return await ModelLoop(client, "scripted:oracle", Bounds()).run(FakeSite(), SOLVE.spec.instruction)


async def test_one_500_is_asked_again_and_recorded_as_a_real_server_error() -> None:
    app, _ = failing(1)
    transcript, faults, _ = await episode([], QUICK, app=app)
    assert transcript.stop_reason == "finish", (transcript.stop_reason, transcript.infrastructure_error)
    assert [e.kind for e in transcript.serving] == ["server_error", "resent"]
    assert transcript.serving[0].detail == "HTTP 500 from the primary endpoint"
    assert faults.log.fired == [] and faults.log.calls[0].status == 500
    assert _explained(faults.log, transcript) == (["server_error@1/primary"], None)


async def test_a_500_is_waited_for_with_the_protocols_backoff() -> None:
    app, _ = failing(1)
    transcript, _, _ = await episode([], ServingProtocol(stream=False, backoff_s=0.05), app=app)
    assert [e.kind for e in transcript.serving] == ["server_error", "waited", "resent"]
    assert transcript.serving[1].wait_s == 0.05 and transcript.stop_reason == "finish"


async def test_500s_end_the_episode_where_they_end_it_without_the_protocol() -> None:
    for times in (SERVER_ERROR_RETRIES, SERVER_ERROR_RETRIES + 1):
        app, asked = failing(times)
        served, _, _ = await episode([], QUICK, app=app)
        plain_app, plain_asked = failing(times)
        plain = await without_the_protocol(plain_app)
        assert (served.stop_reason, served.infrastructure_cause) == (plain.stop_reason, plain.infrastructure_cause)
        assert plain.stop_reason == ("finish" if times == SERVER_ERROR_RETRIES else "infrastructure"), plain.stop_reason
        assert len(asked) == len(plain_asked), (len(asked), len(plain_asked))
    assert served.infrastructure_cause == "HTTP 500"
    assert [e.kind for e in served.serving].count("server_error") == SERVER_ERROR_RETRIES + 1


def test_only_a_held_requests_504_is_an_injected_server_error() -> None:
    log = ServingLog(plan=ServingPlan(), calls=[
        ServingCall(request=1, upstream="primary", status=504,
                    decision=ServingDecision(kind="timeout_before_reply", source="rule:0")),
        ServingCall(request=2, upstream="primary", status=500),
        ServingCall(request=3, upstream="primary", status=500,
                    decision=ServingDecision(kind="queue_delay", source="rule:1"))])
    met = AgentTranscript(system_prompt="", instruction="", tool_mode="auto", first_observation="",
                          stop_reason="finish", serving=[ServingEvent(reply=1, request=n, kind="server_error",
                                                                      upstream="primary") for n in (1, 2, 3)])
    assert _explained(log, met) == (["server_error@2/primary", "server_error@3/primary"], None)
