"""A model served slowly (a small model on a laptop CPU) or not at all: the run's time bounds are options and reach
every client, the server's probes wait as long as a reply may and say when they decided nothing, and a primary that
cannot be reached hands its episode to the pinned fallback (issue 43). Against servers on loopback, in process."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_loop_endpoint import Endpoint
from test_reply_fuzz import Page, envelope, tool

from adapter.failover import Fallback, ServingProtocol
from adapter.loop import ModelLoop
from adapter.modelclient import model_client
from adapter.serverinfo import ToolResultsProbe, ToolsProbe, probe_tool_results, probe_tools
from adapter.transcript import AgentTranscript, Bounds
from computerops.core import defaults
from computerops.report.layout import report_view
from computerops.report.provenance import tool_results_text, tools_text
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig, time_bounds
from computerops.runs.limits import endpoint_lines
from computerops.runs.records import ObservedEndpoint, RunManifest
from computerops.runs.runner import ask_about_limits
from computerops.runs.serving import serve_app
from computerops.service.launch import RunRequest

CLICK = envelope(tool("click", '{"id": "1"}'))
DONE = envelope(tool("done", '{"success": false}'))


# --- The time bounds as options ----------------------------------------------------------------------


def test_the_time_bounds_are_options_and_a_request_timeout_past_the_wall_clock_is_refused() -> None:
    assert time_bounds(300.0, 900.0) == {"request_timeout_s": 300.0, "wall_clock_s": 900.0}
    assert time_bounds(600.0, 600.0)["request_timeout_s"] == 600.0, "a reply may take the whole episode"
    with pytest.raises(ValueError, match=r"request timeout \(901 s.*wall clock \(900 s"):
        time_bounds(901.0, 900.0)
    for bad in ({"request_timeout": 0}, {"wall_clock": -1.0}):
        with pytest.raises(ValueError):
            RunRequest.model_validate(bad)
    request = RunRequest(request_timeout=300, wall_clock=900)
    assert (request.request_timeout, request.wall_clock) == (300.0, 900.0)
    assert RunRequest().request_timeout == defaults.REQUEST_TIMEOUT_S


def test_the_launch_form_takes_the_time_bounds_to_the_run_request() -> None:
    from computerops.server.launching import LaunchRun, run_request
    from computerops.server.pages import LAUNCH_FIELDS
    assert {"request_timeout", "wall_clock"} <= set(LAUNCH_FIELDS)
    launch = LaunchRun(run_id="slow", tasks="all", request_timeout=300, wall_clock=900)
    request = run_request(launch, settings=None)  # type: ignore[arg-type]  # no subset: the settings are not read
    assert (request.request_timeout, request.wall_clock) == (300.0, 900.0)


def test_an_experiment_design_with_a_request_timeout_past_its_wall_clock_is_refused() -> None:
    from computerops.experiment.spec import ExperimentSpec
    design: dict[str, Any] = {
        "id": "slow", "version": 1, "question": "Does a slow server's design keep its bounds?",
        "tasks": [{"id": "helpdesk.solve-ticket@1"}], "endpoint": {"kind": "scripted", "policies": ["oracle"]},
        "repetitions": 1, "analysis": {"primary": "paired_false_completion"}}
    spec = ExperimentSpec.model_validate({**design, "bounds": {"request_timeout_s": 300, "wall_clock_s": 900}})
    assert (spec.bounds.request_timeout_s, spec.bounds.wall_clock_s) == (300.0, 900.0)
    with pytest.raises(ValueError, match=r"request timeout \(700 s"):
        ExperimentSpec.model_validate({**design, "bounds": {"request_timeout_s": 700, "wall_clock_s": 600}})


def test_the_model_client_waits_as_long_as_it_is_told_and_the_default_is_the_request_timeouts() -> None:
    assert model_client("http://127.0.0.1:9/v1", "k", timeout=900.0).timeout == 900.0
    assert model_client("http://127.0.0.1:9/v1", "k").timeout == defaults.REQUEST_TIMEOUT_S


def _slow_completions(delay_s: float, seen: list[dict[str, Any]]) -> Starlette:
    async def completions(request: Request) -> Response:
        seen.append(json.loads(await request.body()))
        await asyncio.sleep(delay_s)
        return Response(DONE, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


async def _episode(base_url: str, bounds: Bounds) -> tuple[AgentTranscript, float]:
    client = model_client(base_url, "k", max_retries=0, timeout=bounds.request_timeout_s)
    try:
        began = time.monotonic()
        transcript = await ModelLoop(client, "m", bounds).run(Page(), "Do the task.")
        return transcript, time.monotonic() - began
    finally:
        await client.close()


async def test_a_slow_server_is_cut_at_the_request_timeout_given_and_answered_within_a_longer_one() -> None:
    seen: list[dict[str, Any]] = []
    async with serve_app(_slow_completions(1.0, seen)) as origin:
        cut, cut_s = await _episode(f"{origin}/v1", Bounds(request_timeout_s=0.4, wall_clock_s=30))
        answered, answered_s = await _episode(f"{origin}/v1", Bounds(request_timeout_s=3.0, wall_clock_s=30))
    assert cut.stop_reason == "infrastructure" and cut.stop_detail == "no reply within 0.4 s (request timeout)"
    assert 0.35 < cut_s < 0.9, "cut at the bound given, not sooner and not at another"
    assert answered.stop_reason == "finish" and 1.0 <= answered_s < 3.0


# --- The probes against a slow server ----------------------------------------------------------------


@dataclass
class ProbedServer:
    """A chat-completions server that answers after `delay_s`, counting prompt tokens by the characters sent, and
    records what it was sent, how many requests it held at once and which ones the client abandoned."""

    delay_s: float
    bodies: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    most_at_once: int = 0
    abandoned: int = 0

    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            body = json.loads(await request.body())
            self.bodies.append(body)
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
            try:
                deadline = time.monotonic() + self.delay_s
                while time.monotonic() < deadline:  # as a server that notices a closed connection does
                    if await request.is_disconnected():
                        self.abandoned += 1
                        return Response(status_code=499)
                    await asyncio.sleep(0.02)
            finally:
                self.in_flight -= 1
            prompt = len(json.dumps(body.get("messages"))) // 4 + len(json.dumps(body.get("tools", []))) // 4
            return JSONResponse({"choices": [{"message": {"role": "assistant", "content": "ready"}}],
                                 "usage": {"prompt_tokens": prompt, "completion_tokens": 1}})

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


async def test_probes_go_one_at_a_time_with_max_tokens_1_and_decide_within_the_bound() -> None:
    server = ProbedServer(delay_s=0.2)
    async with serve_app(server.app()) as origin:
        tools = await probe_tools(f"{origin}/v1", "k", "m", timeout_s=2.0)
        results = await probe_tool_results(f"{origin}/v1", "k", "m", timeout_s=2.0)
    assert (tools.verdict, results.verdict) == ("in_prompt", "in_prompt")
    assert len(server.bodies) == 4 and [b["max_tokens"] for b in server.bodies] == [1, 1, 1, 1]
    assert server.most_at_once == 1, "never several probes at once on one server"
    assert server.abandoned == 0


async def test_a_probe_slower_than_its_bound_is_abandoned_closed_and_not_checked_with_its_reason() -> None:
    server = ProbedServer(delay_s=3.0)
    async with serve_app(server.app()) as origin:
        began = time.monotonic()
        tools = await probe_tools(f"{origin}/v1", "k", "m", timeout_s=0.5)
        results = await probe_tool_results(f"{origin}/v1", "k", "m", timeout_s=0.5)
        took = time.monotonic() - began
        await asyncio.sleep(0.3)  # the server's side of the closed connections
    assert tools == ToolsProbe(verdict="not_checked", detail="no answer within 0.5 s")
    assert results == ToolResultsProbe(verdict="not_checked", detail="no answer within 0.5 s")
    assert len(server.bodies) == 2, "after one probe went unanswered, its pair is not sent"
    assert server.abandoned == 2, "each abandoned probe's connection was closed (not left running on the server)"
    assert took < 1.6
    assert tools_text(tools) == "not checked, because no answer within 0.5 s"


async def test_a_run_whose_probe_could_not_finish_says_so_in_its_manifest_progress_and_report() -> None:
    server = ProbedServer(delay_s=3.0)
    bounds = Bounds(request_timeout_s=0.5, wall_clock_s=60)
    async with serve_app(server.app()) as origin:
        endpoint = EndpointConfig(kind="openai", base_url=f"{origin}/v1", model="m")
        config = RunConfig(run_id="slow", tasks=["helpdesk.solve-ticket@1"], endpoint=endpoint, bounds=bounds,
                           episodes=[PlannedEpisode(episode_id="001-solve", task_id="helpdesk.solve-ticket@1")])
        observed = ObservedEndpoint()
        await ask_about_limits(observed, f"{origin}/v1", "k", config)
    assert observed.tools is not None and observed.tools.verdict == "not_checked"
    results = observed.tool_results
    assert results is not None and results.verdict == "not_checked"
    because = "the tools probe before it got no answer within 0.5 s"
    assert results.detail == because
    written = json.loads(observed.model_dump_json())
    assert written["tool_results"] == {"verdict": "not_checked", "long_result_prompt_tokens": None,
                                       "short_result_prompt_tokens": None, "detail": because}
    lines = endpoint_lines(bounds, bounds, observed)
    assert f"endpoint: WARNING tool results: not checked, because {because}: whether the model sees each page " \
           "after a tool call is unknown" in lines
    assert any(line.startswith("endpoint: WARNING tools: not checked, because no answer within 0.5 s")
               for line in lines)
    assert tool_results_text(results) == f"not checked, because {because}"
    view = _report_of(config, observed)
    warnings = [b.text for b in view.blocks if getattr(b, "tone", None) == "warning"]
    assert f"TOOL RESULTS NOT CHECKED: tool results not checked, because {because}; whether the model saw each " \
           "page after a tool call is unknown" in warnings


def test_tool_results_not_probed_because_the_schemas_do_not_reach_the_prompt_say_so_and_warn_of_nothing() -> None:
    from computerops.runs.runner import unprobed_tool_results
    ignored = ToolsProbe(verdict="ignored", detail="the tool schemas added 2 prompt tokens")
    assert unprobed_tool_results(ignored) == "the tool schemas do not reach the prompt (tools ignored)"
    observed = ObservedEndpoint(tools=ignored, tool_results=ToolResultsProbe(
        verdict="not_checked", detail=unprobed_tool_results(ignored)))
    planned = Bounds(tool_mode="text")  # auto mode plans the text protocol for such a server
    assert not [line for line in endpoint_lines(Bounds(), planned, observed) if "not checked" in line]


def _report_of(config: RunConfig, observed: ObservedEndpoint) -> Any:
    from computerops.report.run import run_report
    from computerops.runs.records import RunExecution
    manifest = RunManifest(config=config, created_at="2026-12-05T00:00:00+00:00", scripted=False, tasks=[],
                           code_sha256={}, protocol_sha256={}, versions={}, endpoint_observed=observed,
                           execution=RunExecution(concurrency=1, trace=False))
    return report_view(run_report("slow", [], declared_scripted=False, manifest=manifest))


# --- A primary that cannot be reached ----------------------------------------------------------------


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _dead_primary_episode(fallback: Endpoint | None) -> AgentTranscript:
    primary = model_client(f"http://127.0.0.1:{closed_port()}/v1", "k", max_retries=0, timeout=5.0)
    second = None if fallback is None else Fallback(client=fallback, model="fallback-model")  # type: ignore[arg-type]
    try:
        loop = ModelLoop(primary, "m", Bounds(), serving=ServingProtocol(), fallback=second)
        transcript = await loop.run(Page(), "Do the task.")
    finally:
        await primary.close()
    AgentTranscript.model_validate_json(transcript.model_dump_json())
    return transcript


async def test_a_primary_that_refuses_connections_hands_the_episode_to_the_fallback_for_good() -> None:
    fallback = Endpoint([CLICK, CLICK, DONE])
    transcript = await _dead_primary_episode(fallback)
    assert transcript.stop_reason == "finish" and len(transcript.steps) == 3
    assert [s.call.upstream for s in transcript.steps] == ["fallback"] * 3, "each reply attributed to its endpoint"
    events = [(e.reply, e.kind, e.upstream) for e in transcript.serving]
    assert events == [(1, "unreachable", "primary"), (1, "fell_back", "fallback")], \
        "pinned: later replies are not asked of the dead primary again"
    assert "ConnectError" in transcript.serving[0].detail
    assert [r["model"] for r in fallback.requests] == ["fallback-model"] * 3


async def test_a_primary_that_cannot_be_reached_without_a_fallback_is_a_connection_failure() -> None:
    transcript = await _dead_primary_episode(None)
    assert transcript.stop_reason == "infrastructure" and transcript.infrastructure_cause == "connection failed"
    assert [e.kind for e in transcript.serving] == ["unreachable"]


async def test_a_client_timeout_is_not_an_unreachable_primary() -> None:
    """The client's own timeout is an APIConnectionError too: it is a timeout, never handed to the fallback as a
    dead primary (the protocol's `on_timeout` decides timeouts)."""
    request = openai.APITimeoutError(request=__import__("httpx2").Request("POST", "http://127.0.0.1:9/v1"))
    primary, fallback = Endpoint([request]), Endpoint([DONE])
    loop = ModelLoop(primary, "m", Bounds(), serving=ServingProtocol(),  # type: ignore[arg-type]
                     fallback=Fallback(client=fallback, model="f"))  # type: ignore[arg-type]
    transcript = await loop.run(Page(), "Do the task.")
    assert transcript.infrastructure_cause == "timeout" and not fallback.requests
    assert "unreachable" not in {e.kind for e in transcript.serving}


def test_a_resumed_run_keeps_its_manifests_time_bounds_and_refuses_new_ones(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from computerops.cli.main import app
    result = CliRunner().invoke(app, ["run", "--resume", str(tmp_path), "--request-timeout", "300",
                                      "--wall-clock", "900"])
    assert result.exit_code == 2
    assert "drop --request-timeout, --wall-clock" in " ".join(result.output.split())
