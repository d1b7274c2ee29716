"""`computerops export DIR --format inspect --out FILE.eval`: a run as an Inspect AI log, written with inspect_ai's own
types and writer (the optional extra `computerops[inspect]`), so that `inspect view` opens it.

One sample per admitted episode, in record order (id: the episode id; epoch: its repetition): the conversation as
the transcript records it (the system prompt, the instruction with the first page, each reply with its tool call and
each result with the page after it — the whole observations, where the model may have been sent some elided), the
**verified verdict as the main score** (`verified`: C or I, its explanation every named check), the agent's claim
(`claim`: success, failure or no finish) and the false-completion kind (`false_completion`: state, procedure,
forbidden or none) as further scores, its tokens (`model_usage`, where the server sent usage), its times
(`started_at`/`completed_at` on the run's clock from the manifest's `created_at`, `total_time` its wall seconds), and
metadata: task id and hash, outcome, endpoint, stop reason, the replay
receipt's result, the faults configured and fired, whether the run is scripted. The log's results give the share
verified per score name. Episodes come from `export.exported_episodes`: evidence that does not match the run's
checksums is refused, never exported.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from adapter.loop import result_line
from adapter.prompts import first_message, result_message
from adapter.transcript import AgentTranscript
from computerops.runs.bundle import RunDirectory
from computerops.runs.export import ExportedEpisode, exported_episodes
from computerops.runs.records import EpisodeRecord

SCORER = "computerops-verifier"


def _messages(transcript: AgentTranscript) -> list[Any]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    messages: list[Any] = [ChatMessageSystem(content=transcript.system_prompt),
                           ChatMessageUser(content=first_message(transcript.instruction,
                                                                 transcript.first_observation))]
    for step in transcript.steps:
        call = step.call
        calls = []
        if call.tool_calls:  # the first is the one carried out (adapter/loop.py)
            tool = call.tool_calls[0]
            try:
                arguments = json.loads(tool.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"raw": tool.arguments}
            calls.append(ToolCall(id=tool.id or f"call_{step.number}", function=tool.name or "",
                                  arguments=arguments if isinstance(arguments, dict) else {"value": arguments}))
        messages.append(ChatMessageAssistant(content=call.content or "", tool_calls=calls or None,
                                             model=call.model))
        if step.observation is None:  # done: nothing answered it
            continue
        said = result_message(result_line(step.note, step.rejection), step.observation)
        if calls:
            messages.append(ChatMessageTool(content=said, tool_call_id=calls[0].id, function=calls[0].function))
        else:
            messages.append(ChatMessageUser(content=said))
    return messages


def _usage(record: EpisodeRecord) -> dict[str, Any]:
    """The episode's tokens as Inspect's model usage, by endpoint; empty where the server sent no usage."""
    from inspect_ai.model import ModelUsage
    if record.prompt_tokens is None and record.completion_tokens is None:
        return {}
    given, taken = record.prompt_tokens or 0, record.completion_tokens or 0
    return {record.endpoint: ModelUsage(input_tokens=given, output_tokens=taken, total_tokens=given + taken)}


def _at(zero: dt.datetime, seconds: float | None) -> str | None:
    return None if seconds is None else (zero + dt.timedelta(seconds=seconds)).isoformat()


def _sample(episode: ExportedEpisode, transcript: AgentTranscript, zero: dt.datetime) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    record, verdict = episode.record, episode.verdict
    claim = record.claim.success
    checks = "; ".join(f"{'pass' if c.passed else 'FAIL'} {c.name} ({c.category}): {c.detail}" for c in verdict.checks)
    final = transcript.finish.message if transcript.finish is not None else (transcript.stop_detail or "")
    return EvalSample(
        id=record.episode_id, epoch=1, input=transcript.instruction,
        target=f"the verifier's checks of task {record.task_id}",
        messages=_messages(transcript),
        output=ModelOutput.from_content(model=record.endpoint, content=final or ""),
        scores={
            "verified": Score(value="C" if record.outcome == "verified_success" else "I",
                              answer=record.outcome, explanation=checks),
            "claim": Score(value={True: "success", False: "failure", None: "no finish"}[claim],
                           explanation=record.claim.message or ""),
            "false_completion": Score(value=record.false_completion_kind or "none"),
        },
        metadata={"task_id": record.task_id, "task_sha256": record.task_sha256, "outcome": record.outcome,
                  "endpoint": record.endpoint, "scripted": episode.scripted, "stop_reason": record.stop_reason,
                  "replay": record.replay, "receipt": None if episode.receipt is None else episode.receipt.result,
                  "faults_configured": record.faults_configured, "faults_fired": record.faults_fired,
                  "steps": record.steps},
        model_usage=_usage(record), total_time=record.wall_s, working_time=record.wall_s,
        started_at=_at(zero, record.started_s),
        completed_at=_at(zero, None if record.started_s is None else record.started_s + record.wall_s),
    )


def write_inspect_log(bundle: RunDirectory, out: Path) -> int:
    """Write the run as an Inspect AI log at `out` (`.eval` or `.json`); the number of samples. ImportError naming
    the extra when inspect_ai is not installed."""
    try:
        from inspect_ai.log import (
            EvalConfig,
            EvalDataset,
            EvalLog,
            EvalMetric,
            EvalResults,
            EvalScore,
            EvalSpec,
            write_eval_log,
        )
    except ImportError as exc:
        raise ImportError("--format inspect needs inspect_ai: pip install -e '.[inspect]'") from exc
    from inspect_ai.log import EvalStats
    from inspect_ai.model import ModelUsage
    manifest = bundle.manifest()
    episodes = exported_episodes(bundle)
    zero = dt.datetime.fromisoformat(manifest.created_at)  # the run's start: episodes' started_s count from it
    samples = [_sample(e, AgentTranscript.model_validate_json(
        (bundle.episode_dir(e.record.episode_id) / "transcript.json").read_text(encoding="utf-8")), zero)
        for e in episodes]
    usage: dict[str, ModelUsage] = {}
    for sample in samples:
        for model, used in sample.model_usage.items():
            usage[model] = usage[model] + used if model in usage else used
    ends = [e.record.started_s + e.record.wall_s for e in episodes if e.record.started_s is not None]
    total = len(samples)

    def share(name: str, value: str) -> EvalScore:
        hits = sum(s.scores[name].value == value for s in samples)
        return EvalScore(name=name, scorer=SCORER, scored_samples=total,
                         metrics={"share": EvalMetric(name="share", value=hits / total if total else 0.0)})

    endpoints = sorted({e.record.endpoint for e in episodes})
    log = EvalLog(
        status="success",
        eval=EvalSpec(created=manifest.created_at, task=f"computerops/{manifest.config.run_id}",
                      run_id=manifest.config.run_id,
                      dataset=EvalDataset(name="computerops catalog", samples=total,
                                          sample_ids=[s.id for s in samples]),
                      model=endpoints[0] if len(endpoints) == 1 else "several: " + ", ".join(endpoints),
                      config=EvalConfig(),
                      metadata={"scripted": manifest.scripted, "tasks": [t.id for t in manifest.tasks],
                                "code_sha256": manifest.code_sha256}),
        results=EvalResults(total_samples=total, completed_samples=total,
                            scores=[share("verified", "C"), share("claim", "success")]),
        stats=EvalStats(started_at=zero.isoformat(), completed_at=_at(zero, max(ends, default=0.0)) or "",
                        model_usage=usage),
        samples=samples,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(out))
    return total
