"""An episode's record as derived from its transcript (issue 43, part B): a stream the endpoint itself cut is an
infrastructure failure, an injected one the serving study's treatment; a claim of success in plain text is recorded
apart from `done`; an episode whose replies carried no usage says so.

`derived_fields` is what a run writes and `verify` recomputes; here it reads hand-made transcripts of one real task
(loaded alone, no browser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapter.actions import Rejection
from adapter.claims import TextClaim
from adapter.failover import ServingEvent
from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript, Step
from computerops.core.vocabulary import StopReason
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.runs.episode import derived_fields
from computerops.serving_faults.record import ServingRecord
from tasks.catalog import load_task
from verifier import Claim, judge

TASK = load_task(Path(__file__).parents[1] / "tasks" / "catalog" / "helpdesk" / "notify-and-close-follow-up.yaml")
CONFIG = RunConfig(run_id="r", tasks=[TASK.id], endpoint=EndpointConfig(kind="openai", base_url="http://127.0.0.1:9/v1",
                                                                         model="m"),
                   episodes=[PlannedEpisode(episode_id="001", task_id=TASK.id)])


def call(content: str = "", *, prompt: int | None = 10, completion: int | None = 5) -> ModelCall:
    return ModelCall(latency_s=0.1, model="m", system_fingerprint=None, finish_reason="stop", prompt_tokens=prompt,
                     completion_tokens=completion, content=content, tool_calls=[], prompt_tokens_estimated=10,
                     request_sha256="0" * 64)


def transcript(stop: StopReason, steps: list[Step] | None = None, **extra: Any) -> AgentTranscript:
    return AgentTranscript(system_prompt="s", instruction="i", tool_mode="auto", first_observation="o",
                           steps=steps or [], stop_reason=stop, **extra)


def derived(recorded: AgentTranscript) -> dict[str, Any]:
    verdict = judge(TASK.spec, TASK.sha256, state={}, journal=[], operations=[], claim=Claim(success=None))
    return derived_fields(CONFIG, TASK, CONFIG.episodes[0], recorded, [], [], verdict)


CUT = [ServingEvent(reply=1, request=1, kind="stream_cut", upstream="primary", detail="the stream ended early",
                    emitted_chars=12, action_started=False)]


def test_a_stream_the_endpoint_cut_is_an_infrastructure_failure_with_its_cause() -> None:
    fields = derived(transcript("stream_cut", serving=CUT))
    assert fields["outcome"] == "infrastructure_failure"
    assert fields["infrastructure_cause"] == "stream cut"


def test_an_injected_cut_that_ended_the_episode_stays_the_treatments_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    from computerops.serving_faults import study

    def injected(*_: Any) -> ServingRecord:
        return ServingRecord(arm="partial-stream", path="blocked", ended_by_injection="partial_stream", model_s=0.1,
                             replies={"primary": 0, "fallback": 0}, completion_tokens={}, duplicate_effects=None,
                             state_unreadable=True, unresolved_explicit=True, false_success_claim=False,
                             contract_held=True)

    monkeypatch.setattr(study, "serving_of", injected)
    fields = derived(transcript("stream_cut", serving=CUT))
    assert fields["outcome"] == "honest_failure" and fields["infrastructure_cause"] is None


@pytest.mark.parametrize("stop", ["budget_exhausted", "wall_clock", "context_exhausted"])
def test_the_agents_own_stops_stay_agent_outcomes(stop: StopReason) -> None:
    fields = derived(transcript(stop))
    assert fields["outcome"] == "honest_failure" and fields["infrastructure_cause"] is None


def test_an_infrastructure_stop_keeps_its_recorded_cause() -> None:
    fields = derived(transcript("infrastructure", infrastructure_cause="HTTP 500"))
    assert fields["outcome"] == "infrastructure_failure" and fields["infrastructure_cause"] == "HTTP 500"


NO_ACTION = Rejection(cause="no_action", reason="No tool call was made. Call exactly one of the tools.")


def reply(number: int, content: str, *, acted: bool = False, prompt: int | None = 10,
          completion: int | None = 5) -> Step:
    return Step(number=number, call=call(content, prompt=prompt, completion=completion),
                action={"action": "click", "id": "1"} if acted else None, rejection=None if acted else NO_ACTION,
                note="", observation="o")


def test_a_claim_in_plain_text_is_recorded_with_its_reply_and_is_never_a_success_or_a_done_claim() -> None:
    fields = derived(transcript("budget_exhausted", [reply(1, "Let me look."), reply(2, "The task is completed."),
                                                     reply(3, "The task is completed.")]))
    assert fields["text_claim"] == TextClaim(reply=2, text="The task is completed.", replies=2)
    assert fields["claim"].success is None and fields["outcome"] == "honest_failure"


def test_prose_beside_an_action_or_a_negated_claim_is_no_claim_in_text() -> None:
    fields = derived(transcript("budget_exhausted", [reply(1, "Done! Clicking the link.", acted=True),
                                                     reply(2, "I have not completed the task.")]))
    assert fields["text_claim"] is None


@pytest.mark.parametrize(("usage", "no_usage"), [
    ([(None, None), (None, None)], True), ([(None, None), (12, 3)], False), ([(12, None)], False), ([], False)])
def test_an_episode_none_of_whose_replies_carried_usage_says_the_server_sends_none(
        usage: list[tuple[int | None, int | None]], no_usage: bool) -> None:
    steps = [reply(n, "x", acted=True, prompt=p, completion=c) for n, (p, c) in enumerate(usage, 1)]
    fields = derived(transcript("budget_exhausted", steps))
    assert fields["no_usage"] is no_usage
    assert fields["prompt_tokens"] is None or not no_usage


def test_an_episode_1_record_is_recomputed_by_the_rules_it_was_written_under() -> None:
    """`verify` of a run sealed before episode/2: no claim in text or missing usage read, and a cut stream the agent's
    outcome, as its record says (kills a verify that applies today's rules to yesterday's records)."""
    verdict = judge(TASK.spec, TASK.sha256, state={}, journal=[], operations=[], claim=Claim(success=None))
    claimed = transcript("budget_exhausted", steps=[reply(1, "The task is completed.")])
    for recorded, field, now, then in (
            (transcript("stream_cut", serving=CUT), "outcome", "infrastructure_failure", "honest_failure"),
            (claimed, "text_claim", TextClaim(reply=1, text="The task is completed."), None),
            (transcript("budget_exhausted", steps=[reply(1, "Hello.", prompt=None, completion=None)]),
             "no_usage", True, False)):
        assert derived(recorded)[field] == now
        old = derived_fields(CONFIG, TASK, CONFIG.episodes[0], recorded, [], [], verdict,
                             record_format="computerops.episode/1")
        assert old[field] == then, field
