"""An episode's record as derived from its transcript (issue 43, part B): a stream the endpoint itself cut is an
infrastructure failure, an injected one the serving study's treatment.

`derived_fields` is what a run writes and `verify` recomputes; here it reads hand-made transcripts of one real task
(loaded alone, no browser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
    from computerops.runs import episode

    def injected(*_: Any) -> ServingRecord:
        return ServingRecord(arm="partial-stream", path="blocked", ended_by_injection="partial_stream", model_s=0.1,
                             replies={"primary": 0, "fallback": 0}, completion_tokens={}, duplicate_effects=None,
                             state_unreadable=True, unresolved_explicit=True, false_success_claim=False,
                             contract_held=True)

    monkeypatch.setattr(episode, "serving_of", injected)
    fields = derived(transcript("stream_cut", serving=CUT))
    assert fields["outcome"] == "honest_failure" and fields["infrastructure_cause"] is None


@pytest.mark.parametrize("stop", ["budget_exhausted", "wall_clock", "context_exhausted"])
def test_the_agents_own_stops_stay_agent_outcomes(stop: StopReason) -> None:
    fields = derived(transcript(stop))
    assert fields["outcome"] == "honest_failure" and fields["infrastructure_cause"] is None


def test_an_infrastructure_stop_keeps_its_recorded_cause() -> None:
    fields = derived(transcript("infrastructure", infrastructure_cause="HTTP 500"))
    assert fields["outcome"] == "infrastructure_failure" and fields["infrastructure_cause"] == "HTTP 500"
