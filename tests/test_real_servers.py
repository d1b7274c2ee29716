"""Real servers' quirks, met with llama-cpp-python's function-calling chat format (ComputerOps issue 24, section 3),
each imitated by the scripted endpoint (`ServerQuirks`) and met end to end: the run's probes, the bounds planned from
them and an episode of the model loop, all through the real openai client over loopback. The environment is the small
fake helpdesk of tests/test_loop_scripted.py (no browser); replies are SCRIPTED (the oracle).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import openai
import pytest
from bs4 import BeautifulSoup
from test_loop_scripted import SOLVE, FakeSite
from test_report import record

from adapter.context import ContextWindow
from adapter.loop import OVER_CAP_SLACK, ModelLoop, over_cap
from adapter.prompts import OMITTED_REPLY, RESULT_FOLLOWS, RESULT_OK
from adapter.reply import ModelCall
from adapter.scripted import ServerQuirks, create_scripted_app
from adapter.serverinfo import probe_tools
from adapter.transcript import AgentTranscript, Bounds, switch_text
from computerops.report.html import render_html
from computerops.report.layout import report_view
from computerops.report.provenance import ClaimedEndpoint, model_mismatch
from computerops.report.run import report_json, run_report
from computerops.runs.config import RunConfig, parse_endpoint, plan_episodes
from computerops.runs.endpoint import EndpointError
from computerops.runs.limits import (
    context_too_small,
    describe_planned,
    endpoint_lines,
    initial_token_scale,
    planned_bounds,
)
from computerops.runs.records import EpisodeRecord, ObservedEndpoint
from computerops.runs.runner import ask_about_limits, execute_run
from computerops.runs.serving import serve_app

MODEL = "scripted:oracle"
SOLVED = ["click:1", "fill:2", "click:3", "click:4", "select:7", "click:8"]
"""The oracle's actions on the fake helpdesk, without their step numbers."""


DEFAULTS = Bounds()


def run_config(base_url: str, bounds: Bounds = DEFAULTS) -> RunConfig:
    endpoint = parse_endpoint(None, base_url=base_url, model=MODEL, api_key_env=None)
    return RunConfig(run_id="quirks", tasks=[SOLVE.id], endpoint=endpoint, bounds=bounds,
                     episodes=plan_episodes([SOLVE.id], endpoint))


@asynccontextmanager
async def quirky_server(quirks: ServerQuirks) -> AsyncIterator[str]:
    """The scripted endpoint imitating `quirks`, on a loopback port: its base URL."""
    async with serve_app(create_scripted_app([SOLVE], default_policy="oracle", quirks=quirks)) as origin:
        yield f"{origin}/v1"


async def planned_episode(base_url: str, bounds: Bounds = DEFAULTS
                          ) -> tuple[ObservedEndpoint, Bounds, AgentTranscript, FakeSite]:
    """What the run learns of the server (as recorded in the manifest), the bounds it plans from that, and one
    episode run with them through the real openai client."""
    observed = ObservedEndpoint()
    await ask_about_limits(observed, base_url, "k", run_config(base_url, bounds))
    planned = planned_bounds(bounds, observed)
    site = FakeSite()
    async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=30.0) as client:
        loop = ModelLoop(client, MODEL, planned, token_scale=initial_token_scale(observed))
        transcript = await loop.run(site, SOLVE.spec.instruction)
    return observed, planned, transcript, site


def actions(site: FakeSite) -> list[str]:
    return [done.split(":", 1)[1] for done in site.done]


# --- Tool results dropped by the chat template --------------------------------------------------------------


async def test_a_server_that_drops_tool_results_is_found_and_gets_each_observation_in_a_user_message() -> None:
    quirks = ServerQuirks(drop_tool_results=True, strict_history=True)
    async with quirky_server(quirks) as base_url:
        observed, planned, transcript, site = await planned_episode(base_url)
    probe = observed.tool_results
    assert probe is not None and probe.verdict == "dropped", probe
    assert probe.long_result_prompt_tokens == probe.short_result_prompt_tokens, "a tool message costs nothing"
    assert planned.tool_results == "user_message" and planned.tool_mode == "auto", "native tool calls stay"
    assert "each observation in a user message" in describe_planned(Bounds(), planned, observed)
    assert ObservedEndpoint.model_validate_json(observed.model_dump_json()) == observed, "recorded in the manifest"
    assert transcript.stop_reason == "finish" and transcript.finish is not None and transcript.finish.success
    assert actions(site) == SOLVED and transcript.rejected_actions == 0, "the model read every page"
    assert transcript.tool_results == "user_message"
    assert all(s.call.tool_calls for s in transcript.steps), "native tool calls throughout"


async def test_a_server_that_keeps_tool_results_gets_them_as_tool_messages() -> None:
    async with quirky_server(ServerQuirks(strict_history=True)) as base_url:
        observed, planned, transcript, site = await planned_episode(base_url)
    assert observed.tool_results is not None and observed.tool_results.verdict == "in_prompt"
    assert planned == Bounds() and transcript.tool_results == "tool_message"
    assert actions(site) == SOLVED


async def test_observations_after_a_tool_call_go_in_a_user_message_after_a_short_tool_result() -> None:
    sent: list[list[dict[str, Any]]] = []

    async with (quirky_server(ServerQuirks(strict_history=True)) as base_url,
                openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client):
        original = client.post

        async def post(path: str, **kwargs: Any) -> Any:
            sent.append(list(kwargs["body"]["messages"]))
            return await original(path, **kwargs)

        client.post = post  # type: ignore[method-assign]
        loop = ModelLoop(client, MODEL, Bounds(tool_results="user_message"))
        await loop.run(FakeSite(), SOLVE.spec.instruction)
    last = sent[-1]
    tools = [m for m in last if m["role"] == "tool"]
    assert tools and all(m["content"] == RESULT_FOLLOWS for m in tools)
    for index, message in enumerate(last):
        if message["role"] == "tool":
            following = last[index + 1]
            assert following["role"] == "user" and str(following["content"]).startswith(RESULT_OK)


# --- max_tokens ignored with tool_choice auto ------------------------------------------------------------------


async def test_a_reply_past_max_tokens_is_truncated_and_the_episode_goes_over_to_the_text_protocol() -> None:
    async with quirky_server(ServerQuirks(ignore_max_tokens_with_tools=True)) as base_url:
        _, planned, transcript, site = await planned_episode(base_url, Bounds(action_budget=8))
    first = transcript.steps[0]
    assert first.call.completion_tokens is not None and first.call.completion_tokens > planned.max_response_tokens
    assert first.rejection is not None and first.rejection.cause == "truncated_reply", first.rejection
    assert transcript.tool_mode == "text"
    assert transcript.tool_mode_switch == switch_text(2, "the server ignored max_tokens with the tool schemas")
    assert transcript.stop_reason == "finish" and actions(site) == SOLVED
    assert all(not s.call.tool_calls for s in transcript.steps[1:]), "no tools after the switch"


async def test_in_native_mode_a_reply_past_max_tokens_is_truncated_but_native_stays() -> None:
    async with quirky_server(ServerQuirks(ignore_max_tokens_with_tools=True)) as base_url:
        _, _, transcript, _ = await planned_episode(base_url, Bounds(action_budget=3, tool_mode="native"))
    assert [s.rejection.cause for s in transcript.steps if s.rejection] == ["truncated_reply"] * 3
    assert transcript.tool_mode == "native" and transcript.tool_mode_switch is None


def test_a_reply_at_the_cap_or_a_few_tokens_past_it_is_not_over_it() -> None:
    def counted(tokens: int) -> ModelCall:
        return ModelCall(latency_s=0.0, model=None, system_fingerprint=None, finish_reason="stop", prompt_tokens=1,
                         completion_tokens=tokens, content="", tool_calls=[], prompt_tokens_estimated=1,
                         request_sha256="0" * 64)

    assert not over_cap(counted(180), 180) and not over_cap(counted(180 + OVER_CAP_SLACK), 180)
    assert over_cap(counted(181 + OVER_CAP_SLACK), 180) and over_cap(counted(2000), 180)


# --- A probe that overflows the context ---------------------------------------------------------------------


@pytest.mark.parametrize(("quirks", "verdict", "mode"), [
    # The full probe (about 860 estimated tokens) overflows 600; the minimal one fits, with the schemas dropped.
    (ServerQuirks(context_tokens=600, context_in_props=False, drop_tools=True), "ignored", "text"),
    # The minimal probe fits without the schemas (about 1,300 estimated tokens), not with them.
    (ServerQuirks(context_tokens=600, context_in_props=False), "overflow", "text"),
    # Only the full probe with the schemas overflows: the minimal one says they reach the prompt.
    (ServerQuirks(context_tokens=2600, context_in_props=False), "in_prompt", "auto"),
])
async def test_a_probe_that_overflows_the_context_is_decided_from_a_minimal_probe_that_fits(
    quirks: ServerQuirks, verdict: str, mode: str,
) -> None:
    async with quirky_server(quirks) as base_url:
        probe = await probe_tools(base_url, "k", MODEL)
    assert probe.verdict == verdict, probe
    assert probe.minimal and probe.refused_for_context == quirks.context_tokens
    observed = ObservedEndpoint(tools=probe)
    assert planned_bounds(Bounds(), observed).tool_mode == mode
    assert initial_token_scale(observed) >= 1.0


# --- Episodes that never reached the model ------------------------------------------------------------------


async def test_an_episode_whose_context_cannot_hold_one_observation_never_reaches_the_model() -> None:
    quirks = ServerQuirks(context_tokens=700)
    bounds = Bounds(context_tokens=8192, observation_chars=6000)
    async with quirky_server(quirks) as base_url:
        observed, planned, transcript, _ = await planned_episode(base_url, bounds)
    assert planned.context_tokens == 700
    assert transcript.stop_reason == "context_exhausted" and transcript.steps == []
    first_lines = endpoint_lines(bounds, planned, observed)
    assert any(line.startswith("endpoint: WARNING the context (700 tokens) cannot hold one observation")
               for line in first_lines), first_lines
    assert context_too_small(Bounds(), 1.0) is None, "the default context holds one"


def unreached(number: int) -> EpisodeRecord:
    return record(number, "model-x", "t1", "honest_failure", None).model_copy(
        update={"stop_reason": "context_exhausted", "steps": 0, "rejected_actions": 0})


def test_episodes_that_never_reached_the_model_are_counted_apart_from_every_agent_figure() -> None:
    records = [record(1, "model-x", "t1", "verified_success", True), unreached(2), unreached(3),
               record(4, "model-x", "t1", "honest_failure", None)]
    report = run_report("r", records, declared_scripted=False)
    total = report.total
    assert (total.episodes, total.attempted, total.never_reached_the_model) == (4, 2, 2)
    assert total.honest_failures == 1 and total.no_finish == 1
    assert total.verified_success_rate.denominator == 2
    assert total.per_task[0].never_reached_the_model == 2 and total.per_task[0].attempted == 2
    assert report_json(report)["total"]["never_reached_the_model"] == 2
    said = [b.text for b in report_view(report).blocks if b.kind == "paragraph"]
    assert any(t.startswith("Never reached the model: 2 episode(s)") for t in said), said
    assert "Never reached the model: 2 episode(s)" in BeautifulSoup(render_html(report), "html.parser").get_text()


# --- Protocol switches, counted -------------------------------------------------------------------------------


def test_protocol_switches_are_counted_in_the_report_by_why() -> None:
    why = "the tool schemas did not fit the context"
    switched = [record(n, "model-x", "t1", "honest_failure", None).model_copy(
        update={"tool_mode_switch": switch_text(n, why)}) for n in (1, 2)]
    report = run_report("r", [*switched, record(3, "model-x", "t1", "verified_success", True)],
                        declared_scripted=False)
    assert report.total.protocol_switches == {why: 2}
    assert report_json(report)["total"]["protocol_switches"] == {why: 2}
    text = f"Protocol switches mid-episode (native tool calls to the text protocol): 2; 2 because {why}."
    assert any(text in b.text for b in report_view(report).blocks if b.kind == "paragraph")
    assert text in BeautifulSoup(render_html(report), "html.parser").get_text()


# --- The rest -----------------------------------------------------------------------------------------------------


async def test_a_base_url_without_v1_against_a_json_404_is_refused_with_a_hint(tmp_path: Path) -> None:
    async with quirky_server(ServerQuirks()) as base_url:
        origin = base_url.removesuffix("/v1")
        with pytest.raises(EndpointError, match=r"try --base-url .*/v1\)"):
            await execute_run(run_config(origin), [SOLVE], tmp_path / "run")


def test_rejected_replies_are_elided_when_the_conversation_must_shrink() -> None:
    window = ContextWindow(budget=1500)
    window.add({"role": "system", "content": "s"})
    window.add({"role": "user", "content": "Task: t\n\nObservation:\npage"}, observation="page")
    ramble = '{"id": "1"' + " and then" * 1000
    for n in range(2):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "click", "arguments": ramble}}
        window.add({"role": "assistant", "content": ramble, "tool_calls": [call]}, rejected_reply=True)
        window.add({"role": "tool", "tool_call_id": f"c{n}", "content": "Result: rejected\n\nObservation:\npage"},
                   observation="page")
    fitted = window.fit()
    assert fitted is not None, "the rejected replies gave way"
    replies = [m for m in fitted if m["role"] == "assistant"]
    assert replies[0]["content"] == OMITTED_REPLY and replies[0]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert replies[0]["tool_calls"][0]["id"] == "c0", "the call keeps its id: its result still answers it"


def test_a_claimed_model_naming_the_served_file_is_no_mismatch() -> None:
    claimed = ClaimedEndpoint(kind="openai", base_url="http://127.0.0.1:8000/v1", model="tiny", artifact_sha256=None)
    for served in (["tiny.gguf"], ["/models/tiny.gguf"], ["tiny"]):
        assert model_mismatch(claimed, served, []) is None, served
    for served in (["tiny-2.gguf"], ["other.gguf"], ["/tiny/model.gguf"]):
        assert model_mismatch(claimed, served, []) is not None, served


async def test_the_estimate_of_a_native_request_counts_the_tool_schemas() -> None:
    # The scripted endpoint counts the messages and the schemas at the adapter's own estimate (token_factor 1).
    async with quirky_server(ServerQuirks()) as base_url:
        _, _, transcript, _ = await planned_episode(base_url, Bounds(tool_mode="native"))
    for step in transcript.steps:
        assert step.call.prompt_tokens is not None
        assert step.call.prompt_tokens_estimated == pytest.approx(step.call.prompt_tokens, rel=0.05)
