"""Tool results judged in the episode (ComputerOps issue 43, point 3): with no probe run, the loop learns from the
server's own prompt counts that the pages it sends do not reach the model (adapter/delivery.py), sends them in user
messages from then on, or ends the episode as the endpoint's failure where they already went there; the report
counts the episodes that switched. The endpoint is a small in-process server imitating a chat template (no browser,
no catalog); the real server's case is in tests/test_real_model.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from fastapi import FastAPI, Request

from adapter.acting import ActionOutcome
from adapter.actions import Action
from adapter.context import estimate_tokens
from adapter.delivery import DROPPED_STEPS, NOT_DELIVERED_CAUSE, DeliveryWatch
from adapter.loop import ModelLoop
from adapter.observation import Control, Observation, format_control
from adapter.prompts import RESULT_FOLLOWS
from adapter.transcript import AgentTranscript, Bounds, switch_user_messages
from computerops.report.layout import report_view
from computerops.report.outcomes import outcome_table
from computerops.report.run import run_report
from computerops.report.tables import Paragraph
from computerops.runs.records import EpisodeRecord


@dataclass
class ListPage:
    """A list of 30 tickets that changes with every action (so no observation is the `UNCHANGED` marker): about 200
    estimated tokens a page, the kind of page a step's result carries."""

    actions: list[str] = field(default_factory=list)

    def _controls(self) -> list[Control]:
        first = 1000 + 100 * len(self.actions)
        return [Control(id=str(n), role="link", name=f"Ticket T-{first + n} of the sample list") for n in range(1, 31)]

    async def observe(self) -> Observation:
        controls = self._controls()
        text = "\n".join(["Page: tickets", f"URL: /tickets?page={len(self.actions)}",
                          *map(format_control, controls)])
        return Observation(url="/tickets", title="tickets", text=text, controls=controls)

    async def act(self, action: Action, number: int) -> ActionOutcome:
        self.actions.append(f"{number}:{action.action}")
        return ActionOutcome(ok=True)


@dataclass
class Template:
    """What the imitated server's chat template puts into the prompt it counts: every message, or not the tool
    messages (llama-cpp-python's function-calling format), or only the first two (a server that cuts the prompt to
    a context smaller than it states)."""

    drops: str = "nothing"
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def counted(self, messages: list[dict[str, Any]]) -> int:
        if self.drops == "tool":
            messages = [m for m in messages if m.get("role") != "tool"]
        elif self.drops == "all but the first two":
            messages = messages[:2]
        return sum(estimate_tokens(json.dumps(m)) for m in messages)


def template_server(template: Template) -> FastAPI:
    """Answers every request with a click on [1] (a tool call when tools were sent, else the text protocol's JSON),
    counting the prompt as `template` does."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> dict[str, Any]:
        body = await request.json()
        template.bodies.append(body)
        n = len(template.bodies)
        message: dict[str, Any] = {"role": "assistant", "content": '{"action": "click", "id": "1"}'}
        if body.get("tools"):
            message = {"role": "assistant", "content": "", "tool_calls": [{
                "id": f"call_{n}", "type": "function", "function": {"name": "click", "arguments": '{"id": "1"}'}}]}
        return {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": "template",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": template.counted(body["messages"]), "completion_tokens": 9,
                          "total_tokens": template.counted(body["messages"]) + 9}}

    return app


async def episode(template: Template, bounds: Bounds) -> AgentTranscript:
    http = openai.DefaultAsyncHttpxClient(transport=httpx2.ASGITransport(app=template_server(template)))
    async with openai.AsyncOpenAI(base_url="http://template.test/v1", api_key="k", http_client=http,
                                  max_retries=0) as client:
        return await ModelLoop(client, "template", bounds).run(ListPage(), "Open every ticket.")


BUDGET = Bounds(action_budget=7)


async def test_tool_results_a_template_drops_are_found_from_the_prompt_counts_and_sent_in_user_messages() -> None:
    template = Template(drops="tool")
    transcript = await episode(template, BUDGET)
    # Request 1 has no result; requests 2 and 3 show the first two results missing from the count.
    switched = 1 + DROPPED_STEPS
    assert transcript.tool_results == "user_message"
    assert transcript.tool_results_switch is not None
    assert transcript.tool_results_switch.startswith(switch_user_messages(switched, "tool results did not reach"))
    assert "the server's prompt grew by +" in transcript.tool_results_switch
    assert transcript.stop_reason == "budget_exhausted" and len(transcript.steps) == BUDGET.action_budget
    assert all(s.call.tool_calls for s in transcript.steps), "native tool calls throughout"
    before, after = template.bodies[switched - 1]["messages"], template.bodies[switched]["messages"]
    assert before[-1]["role"] == "tool" and before[-1]["content"] != RESULT_FOLLOWS, "a tool message until then"
    assert [m["role"] for m in after[-2:]] == ["tool", "user"] and after[-2]["content"] == RESULT_FOLLOWS, \
        "the page in a user message after the switch"
    assert "Ticket T-" in after[-1]["content"]


async def test_a_template_that_keeps_tool_results_never_switches() -> None:
    transcript = await episode(Template(drops="nothing"), BUDGET)
    assert transcript.tool_results == "tool_message" and transcript.tool_results_switch is None
    assert "tool_results_switch" not in transcript.model_dump(), "left out of the evidence when it did not switch"
    assert transcript.stop_reason == "budget_exhausted"


async def test_observations_in_user_messages_that_never_reach_the_prompt_end_the_episode_as_infrastructure() -> None:
    transcript = await episode(Template(drops="all but the first two"), Bounds(action_budget=7, tool_mode="text"))
    assert transcript.stop_reason == "infrastructure"
    assert transcript.infrastructure_cause == NOT_DELIVERED_CAUSE
    assert transcript.infrastructure_error is not None
    assert "did not reach the model" in transcript.infrastructure_error
    assert len(transcript.steps) == DROPPED_STEPS, "ended at the request that showed it, before acting on it"


async def test_an_episode_whose_results_were_switched_by_the_probe_is_not_switched_again_but_stopped() -> None:
    transcript = await episode(Template(drops="all but the first two"), Bounds(action_budget=7,
                                                                               tool_results="user_message"))
    assert transcript.tool_results_switch is None
    assert transcript.infrastructure_cause == NOT_DELIVERED_CAUSE


def _messages(*pages: str) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for page in pages:
        said += [{"role": "assistant", "content": "", "tool_calls": []}, {"role": "tool", "content": page}]
    return said


PAGE = "x" * 2000
"""A result of 500 estimated tokens (a fifth: 100)."""


def test_steps_in_a_row_whose_prompt_grew_by_less_than_a_fifth_of_their_results_are_the_verdict() -> None:
    watch = DeliveryWatch()
    for number, grown in enumerate((0, 38, 38), start=1):
        watch.see(number, _messages(*[PAGE] * (number - 1)), 200 + grown * (number - 1))
    assert watch.verdict() is not None and "+38, +38" in (watch.verdict() or "")


def test_one_step_is_no_verdict_and_a_delivered_step_starts_the_count_again() -> None:
    watch = DeliveryWatch()
    counts = [200, 238, 338, 376]  # +38 (not delivered), +100 (a fifth: delivered), +38
    for number, count in enumerate(counts, start=1):
        watch.see(number, _messages(*[PAGE] * (number - 1)), count)
        assert watch.verdict() is None, number


def test_prompts_that_are_not_each_others_continuation_or_counted_by_another_server_are_not_compared() -> None:
    watch = DeliveryWatch()
    watch.see(1, _messages(), 200)
    watch.see(2, _messages(PAGE), 201)
    elided = _messages("[observation omitted]", PAGE)  # the window elided the earlier page
    watch.see(3, elided, 202)
    assert watch.verdict() is None, "an elided prompt is not the previous one grown"
    watch.see(4, _messages("[observation omitted]", PAGE, PAGE), 203, "fallback")
    assert watch.verdict() is None, "a fallback's count is not compared with the primary's"
    watch.see(5, _messages("[observation omitted]", PAGE, PAGE, PAGE), None)
    watch.see(6, _messages("[observation omitted]", PAGE, PAGE, PAGE, PAGE), 204)
    assert watch.verdict() is None, "no count, nothing compared"


def test_short_results_are_not_judged() -> None:
    watch = DeliveryWatch()
    for number in range(1, 5):
        watch.see(number, _messages(*["Result: ok"] * (number - 1)), 200)
    assert watch.verdict() is None


def test_the_report_counts_the_episodes_that_switched() -> None:
    base = {"episode_id": "001-t", "task_id": "t", "task_sha256": "0" * 64, "endpoint": "m", "scripted": False,
            "outcome": "honest_failure", "false_completion_kind": None, "claim": {"success": None, "message": None},
            "stop_reason": "budget_exhausted", "steps": 3, "rejected_actions": 0, "rejections_by_cause": {},
            "prompt_tokens": None, "completion_tokens": None, "wall_s": 1.0, "operations": 0, "journal_entries": 0,
            "evidence_sha256": {}, "replay": "PASS", "models_seen": [], "fingerprints_seen": []}
    plain = EpisodeRecord.model_validate(base)
    switched = EpisodeRecord.model_validate({**base, "episode_id": "002-t",
                                             "tool_results_switch": switch_user_messages(3, "why")})
    assert "tool_results_switch" not in plain.model_dump(), "records without one are written as before"
    assert "tool_results_switches" not in outcome_table("m", [plain]).model_dump(), "summaries as before"
    report = run_report("r", [plain, switched], declared_scripted=False)
    assert report.total.tool_results_switches == 1
    said = " ".join(b.text for b in report_view(report).blocks if isinstance(b, Paragraph))
    assert "Tool results not reaching the model: 1 episode(s)" in said
