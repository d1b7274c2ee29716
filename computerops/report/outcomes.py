"""Outcome tables: one group of episodes (a run, or one endpoint within it) counted by outcome, claim and task,
with its rates, usage (tokens, wall time) and stop reasons.

Infrastructure failures (the endpoint or the browser failed) are counted apart with their causes and stay out of
every agent figure: attempted, no finish and every rate count the other episodes. So do episodes that never reached
the model (`never_reached_the_model`: the context was exhausted before any reply), which say nothing of it either.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from adapter.transcript import switch_why
from computerops.core.stats import clustered_bootstrap
from computerops.report.figures import (
    DEFAULT_BOOTSTRAP_RESAMPLES,
    DEFAULT_BOOTSTRAP_SEED,
    FROZEN,
    BootstrapInterval,
    PassHatK,
    Proportion,
    by_task,
    interval,
    pass_hat_k,
    proportion,
)
from computerops.report.vocabulary import FALSE_COMPLETION_KINDS, STOP_REASONS
from computerops.runs.records import EpisodeRecord, verdict_category

PASSED = frozenset({"verified_success", "unclaimed_success"})
"""The outcomes the verifier passes: the task was done."""
TAXONOMY = ("claimed/pass", "claimed/fail", "not-claimed/pass", "not-claimed/fail")
"""Success claim (claimed: done(success=true)) x verifier (pass: verified or unclaimed success)."""


class TaskRow(BaseModel):
    """One task's episodes within a group."""

    model_config = FROZEN

    task_id: str
    attempted: int
    verified_success: int
    self_reported_success: int
    false_completions: int
    false_completion_kinds: dict[str, int]
    no_finish: int
    unclaimed_success: int
    honest_failures: int
    damaging_failures: int
    forbidden_mutations: int
    infrastructure_failures: int
    never_reached_the_model: int
    episodes: int
    """Admitted episodes of the task: attempted, infrastructure failures and those that never reached the model."""
    infrastructure_causes: dict[str, int]


class TokenStats(BaseModel):
    """prompt_tokens + completion_tokens per episode, over the episodes where the endpoint reported both."""

    model_config = FROZEN

    known: int
    unknown: int
    """Episodes whose endpoint did not report prompt or completion tokens: left out, never guessed."""
    no_usage: int = Field(default=0, exclude_if=lambda value: not value)
    """Of the unknown, episodes whose replies carried no usage at all (`EpisodeRecord.no_usage`): the server sends
    none. Left out of the JSON when 0, so reports sealed before it compare as they were written."""
    total: int | None
    mean: float | None
    median: float | None


class LatencyStats(BaseModel):
    """wall_s per episode: seconds from creating the tenant to the end of the browser session."""

    model_config = FROZEN

    episodes: int
    mean_s: float | None
    median_s: float | None
    max_s: float | None


class OutcomeTable(BaseModel):
    """Counts for one group of episodes (a run, or one endpoint/policy within it)."""

    model_config = FROZEN

    label: str
    scripted: bool
    """True when any episode's replies came from the scripted endpoint."""
    episodes: int
    """Admitted episodes: attempted, infrastructure failures and those that never reached the model."""
    attempted: int
    """Episodes the agent's figures count: every admitted episode but infrastructure failures and those that never
    reached the model."""
    verified_success: int
    self_reported_success: int
    """Episodes that ended with done(success=true), whatever the verifier says."""
    false_completions: int
    false_completion_kinds: dict[str, int]
    honest_failures: int
    damaging_failures: int
    """Episodes without a success claim (claimed failure or no finish) that made a forbidden mutation."""
    forbidden_mutations: int
    """Episodes that made a forbidden mutation, whatever they claimed: false completions of that kind plus
    damaging failures, so damage is never hidden among failures."""
    claimed_failure: int
    """Episodes that ended with done(success=false)."""
    claimed_in_text: int = Field(default=0, exclude_if=lambda value: not value)
    """Attempted episodes without a done(success=true) whose model claimed success in plain text in a reply without
    an action (`EpisodeRecord.text_claim`): counted apart from `done` claims, never a success. Left out of the JSON
    when 0 (as `text_false_completions`), so reports sealed before it compare as they were written."""
    text_false_completions: int = Field(default=0, exclude_if=lambda value: not value)
    """Of `claimed_in_text`, the episodes the verifier says did not do the task."""
    no_finish: int
    """Attempted episodes that ended without any done: budget, context or wall clock."""
    unclaimed_success: int
    infrastructure_failures: int
    """Episodes the endpoint or the browser failed: outside every agent figure, counted here with their causes."""
    infrastructure_causes: dict[str, int]
    """Infrastructure failures by cause (e.g. `HTTP 500`, `timeout`, `endpoint reply not_json`)."""
    never_reached_the_model: int
    """Episodes that ended `context_exhausted` before any reply (`never_reached_the_model`): the model never read a
    prompt, so they are outside every agent figure, like infrastructure failures."""
    protocol_switches: dict[str, int]
    """Episodes that went over from native tool calls to the text protocol mid-episode, by why (`switch_why`: the
    schemas did not fit, a length refusal, tools refused, max_tokens ignored), in name order."""
    tool_results_switches: int = Field(default=0, exclude_if=lambda value: not value)
    """Episodes that found mid-episode, from the server's prompt counts, that tool results were not reaching the model
    and sent observations in user messages from then on (`EpisodeRecord.tool_results_switch`); left out of the JSON
    when none (so summaries sealed before it compare as they were written)."""
    replay_pass: int
    rejected_actions: int
    blocked_requests: int
    """Requests of the pages that containment stopped, summed over episodes."""
    episodes_with_blocked_requests: int
    page_writes: int = Field(default=0, exclude_if=lambda value: not value)
    """Writes the pages' own script made, no action of the model's (`EpisodeRecord.page_writes`), summed over
    episodes; left out of the JSON when none (so summaries sealed before it compare as they were written)."""
    episodes_with_page_writes: int = Field(default=0, exclude_if=lambda value: not value)
    rejected_by_cause: dict[str, int]
    """Rejected actions summed over episodes by cause (rejections_by_cause), causes in name order."""
    stop_reasons: dict[str, int]
    """Episodes by stop reason: every reason of `STOP_REASONS`, 0 included."""
    taxonomy: dict[str, int]
    """Success claim (yes/no) x verifier (pass/fail), e.g. `claimed/pass`: every cell of `TAXONOMY`."""
    verified_success_rate: Proportion
    """Verified successes over attempted episodes."""
    false_completion_over_attempted: Proportion
    """False completions over attempted episodes: how often an episode ended in a rejected success claim."""
    false_completion_over_success_claims: Proportion
    """False completions over success claims: how often a success claim was rejected."""
    verified_success_bootstrap: BootstrapInterval
    pass_hat_k: PassHatK | None
    """None when some task has a single episode in the group, or the group mixes endpoints."""
    per_task: list[TaskRow]
    tokens: TokenStats
    latency: LatencyStats


def kinds_text(kinds: dict[str, int]) -> str:
    """False-completion kinds as `state / procedure-only / forbidden mutation` counts."""
    return " / ".join(str(kinds[kind]) for kind in FALSE_COMPLETION_KINDS)


def causes_text(causes: dict[str, int]) -> str:
    """Infrastructure causes as `HTTP 500 2, timeout 1`, or `none`."""
    return ", ".join(f"{cause} {count}" for cause, count in causes.items()) or "none"


NEVER_REACHED = "never_reached_the_model"
"""The word an episode that never reached the model is counted under, apart from every outcome."""


def counted_as(outcome: str, stop_reason: str | None, steps: int) -> str:
    """The word an episode is counted under, from its record's outcome, stop reason and steps: NEVER_REACHED for
    one that ended `context_exhausted` with no reply (every prompt was too long for the context or refused for its
    length, so the model never read one; an infrastructure failure is counted as that instead), else its outcome.
    The report, the run's progress lines and the operator server's episode index and progress all use it."""
    never = outcome != "infrastructure_failure" and stop_reason == "context_exhausted" and steps == 0
    return NEVER_REACHED if never else outcome


def never_reached_the_model(record: EpisodeRecord) -> bool:
    """An episode whose prompts never reached the model (`counted_as`)."""
    return counted_as(record.outcome, record.stop_reason, record.steps) == NEVER_REACHED


def outcome_words(record: EpisodeRecord) -> str:
    """What the report counts an episode as, in its words: `never_reached_the_model`, else its outcome with any
    false-completion kind (`false_completion (state)`). The progress line says the same of the same record."""
    if never_reached_the_model(record):
        return NEVER_REACHED
    return verdict_category(record.outcome, record.false_completion_kind)


def no_attempt(episodes: Sequence[EpisodeRecord]) -> str | None:
    """Why a run's figures say nothing of the model, or None: no admitted episode was attempted (each failed in the
    infrastructure or never reached the model), so every agent figure has no denominator."""
    if attempted_by_the_agent(episodes):
        return None
    infrastructure = sum(1 for r in episodes if r.outcome == "infrastructure_failure")
    never = sum(1 for r in episodes if never_reached_the_model(r))
    return (f"no episode was attempted: of {len(episodes)} admitted, {infrastructure} infrastructure failure(s) "
            f"({causes_text(infrastructure_causes(episodes))}) and {never} that never reached the model; the run "
            "says nothing of the model")


def attempted_by_the_agent(episodes: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """The episodes the agent's figures count: all but infrastructure failures (the endpoint or the browser failed)
    and episodes that never reached the model, which say nothing of the agent and are counted apart."""
    return [r for r in episodes if r.outcome != "infrastructure_failure" and not never_reached_the_model(r)]


def infrastructure_causes(episodes: Iterable[EpisodeRecord]) -> dict[str, int]:
    """Infrastructure failures by cause (`AgentTranscript.infrastructure_cause`), in name order; records written
    before causes were recorded count as `unrecorded`."""
    causes = Counter(r.infrastructure_cause or "unrecorded" for r in episodes if r.outcome == "infrastructure_failure")
    return dict(sorted(causes.items()))


def _counts(episodes: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """The outcome counts a task row and an outcome table share (TaskRow's fields but its id)."""
    agent = attempted_by_the_agent(episodes)
    outcomes = Counter(r.outcome for r in episodes if outcome_words(r) != NEVER_REACHED)
    kinds = Counter(str(r.false_completion_kind) for r in episodes if r.outcome == "false_completion")
    return {
        "episodes": len(episodes), "attempted": len(agent), "verified_success": outcomes["verified_success"],
        "self_reported_success": sum(1 for r in agent if r.claim.success is True),
        "false_completions": outcomes["false_completion"],
        "false_completion_kinds": {k: kinds[k] for k in FALSE_COMPLETION_KINDS},
        "no_finish": sum(1 for r in agent if r.claim.success is None),
        "unclaimed_success": outcomes["unclaimed_success"], "honest_failures": outcomes["honest_failure"],
        "damaging_failures": outcomes["damaging_failure"],
        "forbidden_mutations": kinds["forbidden_mutation"] + outcomes["damaging_failure"],
        "infrastructure_failures": outcomes["infrastructure_failure"],
        "never_reached_the_model": sum(1 for r in episodes if never_reached_the_model(r)),
        "infrastructure_causes": infrastructure_causes(episodes),
    }


def claimed_in_text(episodes: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """The attempted episodes whose model claimed success in plain text and not with done(success=true)."""
    return [r for r in attempted_by_the_agent(episodes) if r.text_claim is not None and r.claim.success is not True]


def _text_claims(episodes: Sequence[EpisodeRecord]) -> dict[str, int]:
    claimed = claimed_in_text(episodes)
    return {"claimed_in_text": len(claimed),
            "text_false_completions": sum(1 for r in claimed if r.outcome not in PASSED)}


def _tokens(episodes: Sequence[EpisodeRecord]) -> TokenStats:
    known = [r.prompt_tokens + r.completion_tokens for r in episodes
             if r.prompt_tokens is not None and r.completion_tokens is not None]
    return TokenStats(
        known=len(known), unknown=len(episodes) - len(known), no_usage=sum(1 for r in episodes if r.no_usage),
        total=sum(known) if known else None,
        mean=round(statistics.fmean(known), 4) if known else None,
        median=round(float(statistics.median(known)), 4) if known else None,
    )


def _latency(episodes: Sequence[EpisodeRecord]) -> LatencyStats:
    walls = [r.wall_s for r in episodes]
    return LatencyStats(
        episodes=len(walls), mean_s=round(statistics.fmean(walls), 4) if walls else None,
        median_s=round(statistics.median(walls), 4) if walls else None,
        max_s=round(max(walls), 4) if walls else None,
    )


LISTED_WHEN_SEEN = frozenset({"stream_cut"})
"""Stop reasons a report lists only where an episode stopped so (a serving study's cut stream): the summaries sealed
before they existed list every other reason, zeros included, and still compare as they were written."""


def _stop_reasons(episodes: Sequence[EpisodeRecord]) -> dict[str, int]:
    counts: Counter[str] = Counter(r.stop_reason for r in episodes)
    return {**{reason: counts[reason] for reason in STOP_REASONS if reason not in LISTED_WHEN_SEEN or counts[reason]},
            **dict(sorted((k, v) for k, v in counts.items() if k not in STOP_REASONS))}


def _protocol_switches(episodes: Sequence[EpisodeRecord]) -> dict[str, int]:
    return dict(sorted(Counter(switch_why(r.tool_mode_switch) for r in episodes if r.tool_mode_switch).items()))


def _rejected_by_cause(episodes: Sequence[EpisodeRecord]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for record in episodes:
        total.update(record.rejections_by_cause)
    return dict(sorted(total.items()))


def outcome_table(
    label: str, records: Iterable[EpisodeRecord], *, bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED,
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES, with_pass_hat_k: bool = True,
) -> OutcomeTable:
    """The table of one group of episodes. `with_pass_hat_k=False` for a group that mixes endpoints, where
    repeated episodes of a task are different agents, not repeated trials."""
    episodes = list(records)
    agent = attempted_by_the_agent(episodes)
    counts = _counts(episodes)
    claimed, false_completions = counts["self_reported_success"], counts["false_completions"]
    taxonomy = Counter(
        f"{'claimed' if r.claim.success is True else 'not-claimed'}/{'pass' if r.outcome in PASSED else 'fail'}"
        for r in agent
    )
    tasks = by_task(agent)
    bootstrap = clustered_bootstrap(
        {task: [r.outcome == "verified_success" for r in rs] for task, rs in tasks.items()},
        resamples=bootstrap_resamples, seed=bootstrap_seed,
    )
    return OutcomeTable(
        label=label, scripted=any(r.scripted for r in episodes), **counts,
        claimed_failure=sum(1 for r in agent if r.claim.success is False), **_text_claims(episodes),
        replay_pass=sum(1 for r in episodes if r.replay == "PASS"),
        rejected_actions=sum(r.rejected_actions for r in episodes),
        blocked_requests=sum(r.blocked_requests for r in episodes),
        episodes_with_blocked_requests=sum(1 for r in episodes if r.blocked_requests),
        page_writes=sum(r.page_writes for r in episodes),
        episodes_with_page_writes=sum(1 for r in episodes if r.page_writes),
        stop_reasons=_stop_reasons(episodes),
        protocol_switches=_protocol_switches(episodes),
        tool_results_switches=sum(1 for r in episodes if r.tool_results_switch),
        rejected_by_cause=_rejected_by_cause(episodes),
        taxonomy={k: taxonomy[k] for k in TAXONOMY},
        verified_success_rate=proportion(counts["verified_success"], len(agent), "attempted episodes"),
        false_completion_over_attempted=proportion(false_completions, len(agent), "attempted episodes"),
        false_completion_over_success_claims=proportion(false_completions, claimed,
                                                        "success claims (done(success=true))"),
        verified_success_bootstrap=BootstrapInterval(
            rate="verified success over attempted episodes", tasks=len(tasks), episodes=len(agent),
            interval=interval(bootstrap), resamples=bootstrap_resamples, seed=bootstrap_seed,
        ),
        pass_hat_k=pass_hat_k(tasks) if with_pass_hat_k else None,
        per_task=[TaskRow(task_id=task, **_counts(rs)) for task, rs in by_task(episodes).items()],
        tokens=_tokens(episodes), latency=_latency(episodes),
    )
