"""The report of a run, recomputed from its episode records (and, for provenance, its manifest).

Every figure names its numerator and denominator; a rate with a zero denominator is None, never 0 or NaN.
Intervals are 95%: Wilson score intervals over episodes, and a bootstrap that resamples tasks (episodes of one
task are not independent). Unknown values (tokens an endpoint did not report, provenance nobody recorded) stay
None and are counted apart; nothing is guessed.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from computerops.records import EpisodeRecord, RunManifest
from computerops.stats import clustered_bootstrap, mean_pass_hat_k, wilson_interval

FALSE_COMPLETION_KINDS = ("state", "procedure_only", "forbidden_mutation")
OUTCOMES = ("verified_success", "unclaimed_success", "false_completion", "honest_failure", "infrastructure_failure")
"""Every outcome an episode can have, in the order reports show them."""
DEFAULT_BOOTSTRAP_SEED = 0
DEFAULT_BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_METHOD = ("percentile interval of the pooled rate; tasks resampled with replacement, each bringing all "
                    "its episodes; random.Random(seed), tasks in sorted id order")
EvidenceLevel = Literal["E1", "E2"]
EVIDENCE_LEVELS: dict[str, str] = {
    "E1": "observed executions with raw provenance, without a fresh-generation reproducibility claim",
    "E2": "E1, plus `computerops verify` passed: recorded-action replay and raw-to-aggregate re-derivation",
}

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class Interval(BaseModel):
    """A 95% interval, rounded to 4 decimals."""

    model_config = _FROZEN

    low: float
    high: float


class Proportion(BaseModel):
    """numerator / denominator with its Wilson 95% interval; rate and interval are None when the denominator is 0."""

    model_config = _FROZEN

    numerator: int
    denominator: int
    denominator_is: str
    """What is counted below the line, in words (e.g. `attempted episodes`)."""
    rate: float | None
    wilson95: Interval | None

    def summary(self) -> str:
        """Plain text: `3/10 = 0.3 (Wilson 95% 0.1078-0.6032)`, or `0/0: no <denominator>, no rate`."""
        if self.rate is None or self.wilson95 is None:
            return f"{self.numerator}/{self.denominator}: no {self.denominator_is}, no rate"
        return (f"{self.numerator}/{self.denominator} = {self.rate:.4f} "
                f"(Wilson 95% {self.wilson95.low:.4f}-{self.wilson95.high:.4f})")


class BootstrapInterval(BaseModel):
    """A task-clustered bootstrap interval of a rate; `interval` is None when there are no episodes."""

    model_config = _FROZEN

    rate: str
    tasks: int
    episodes: int
    interval: Interval | None
    resamples: int
    seed: int
    confidence: float = 0.95
    method: str = BOOTSTRAP_METHOD

    def summary(self) -> str:
        """Plain text: the interval, over how many tasks, with its seed and resample count."""
        if self.interval is None:
            return "no episodes, no interval"
        tasks = f"{self.tasks} task" + ("" if self.tasks == 1 else "s")
        return (f"{self.interval.low:.4f}-{self.interval.high:.4f} over {tasks} "
                f"({self.resamples} resamples, seed {self.seed})")


class PassHatKValue(BaseModel):
    model_config = _FROZEN

    k: int
    value: float


class PassHatK(BaseModel):
    """tau-bench's pass^k of verified success for k = 1..K, the mean over tasks of C(c, k) / C(n, k)."""

    model_config = _FROZEN

    max_k: int
    """K: the fewest episodes any task of the group has (at least 2, or there is no pass^k)."""
    tasks: int
    by_k: list[PassHatKValue]

    def summary(self) -> str:
        return ", ".join(f"pass^{v.k} {v.value:.4f}" for v in self.by_k) + f" over {self.tasks} tasks"


class TaskRow(BaseModel):
    """One task's episodes within a group."""

    model_config = _FROZEN

    task_id: str
    attempted: int
    verified_success: int
    self_reported_success: int
    false_completions: int
    false_completion_kinds: dict[str, int]
    no_finish: int
    unclaimed_success: int
    honest_failures: int
    infrastructure_failures: int


class TokenStats(BaseModel):
    """prompt_tokens + completion_tokens per episode, over the episodes where the endpoint reported both."""

    model_config = _FROZEN

    known: int
    unknown: int
    """Episodes whose endpoint did not report prompt or completion tokens: left out, never guessed."""
    total: int | None
    mean: float | None
    median: float | None


class LatencyStats(BaseModel):
    """wall_s per episode: seconds from creating the tenant to the end of the browser session."""

    model_config = _FROZEN

    episodes: int
    mean_s: float | None
    median_s: float | None
    max_s: float | None


class OutcomeTable(BaseModel):
    """Counts for one group of episodes (a run, or one endpoint/policy within it)."""

    model_config = _FROZEN

    label: str
    scripted: bool
    """True when any episode's replies came from the scripted endpoint."""
    attempted: int
    verified_success: int
    self_reported_success: int
    """Episodes that ended with done(success=true), whatever the verifier says."""
    false_completions: int
    false_completion_kinds: dict[str, int]
    honest_failures: int
    claimed_failure: int
    """Episodes that ended with done(success=false)."""
    no_finish: int
    """Episodes that ended without any done: budget, context, wall clock or infrastructure."""
    unclaimed_success: int
    infrastructure_failures: int
    replay_pass: int
    rejected_actions: int
    stop_reasons: dict[str, int]
    taxonomy: dict[str, int]
    """Success claim (yes/no) x verifier (pass/fail), e.g. `claimed/pass`."""
    false_completion_rate_over_attempted: float | None
    false_completion_rate_over_success_claims: float | None
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


class ClaimedEndpoint(BaseModel):
    """What the operator said the endpoint is (the run's config); None where nothing was given."""

    model_config = _FROZEN

    kind: str
    base_url: str | None
    model: str | None
    artifact_sha256: str | None


class ObservedEndpointSummary(BaseModel):
    """What the endpoint and its replies said about themselves; None where nothing was recorded."""

    model_config = _FROZEN

    models_payload_ids: list[str] | None
    """The ids in the endpoint's GET /models answer, when it answered in the OpenAI shape."""
    models_error: str | None
    models_seen: list[str]
    """Every `model` the replies named, over all episodes."""
    fingerprints_seen: list[str]
    """Every `system_fingerprint` the replies carried, over all episodes."""
    server_headers: dict[str, str] | None


class Provenance(BaseModel):
    """Claimed and observed kept apart: a claim is not checked by being recorded."""

    model_config = _FROZEN

    claimed: ClaimedEndpoint | None
    observed: ObservedEndpointSummary


class RunReport(BaseModel):
    """The report of one run: the total and one row per endpoint label (scripted policy or model)."""

    model_config = _FROZEN

    run_id: str
    scripted: bool
    total: OutcomeTable
    by_endpoint: list[OutcomeTable]
    evidence_level: EvidenceLevel = "E1"
    evidence_level_meaning: str = EVIDENCE_LEVELS["E1"]
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES
    provenance: Provenance


def _rate(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else round(numerator / denominator, 4)


def _proportion(numerator: int, denominator: int, denominator_is: str) -> Proportion:
    interval = wilson_interval(numerator, denominator)
    return Proportion(
        numerator=numerator, denominator=denominator, denominator_is=denominator_is,
        rate=_rate(numerator, denominator),
        wilson95=None if interval is None else Interval(low=round(interval[0], 4), high=round(interval[1], 4)),
    )


def _by_task(episodes: Sequence[EpisodeRecord]) -> dict[str, list[EpisodeRecord]]:
    grouped: dict[str, list[EpisodeRecord]] = {}
    for record in episodes:
        grouped.setdefault(record.task_id, []).append(record)
    return dict(sorted(grouped.items()))


def _task_row(task_id: str, episodes: Sequence[EpisodeRecord]) -> TaskRow:
    outcomes = Counter(r.outcome for r in episodes)
    kinds = Counter(str(r.false_completion_kind) for r in episodes if r.outcome == "false_completion")
    return TaskRow(
        task_id=task_id, attempted=len(episodes), verified_success=outcomes["verified_success"],
        self_reported_success=sum(1 for r in episodes if r.claim.success is True),
        false_completions=outcomes["false_completion"],
        false_completion_kinds={k: kinds[k] for k in FALSE_COMPLETION_KINDS},
        no_finish=sum(1 for r in episodes if r.claim.success is None),
        unclaimed_success=outcomes["unclaimed_success"], honest_failures=outcomes["honest_failure"],
        infrastructure_failures=outcomes["infrastructure_failure"],
    )


def _pass_hat_k(by_task: dict[str, list[EpisodeRecord]]) -> PassHatK | None:
    if not by_task:
        return None
    trials = [(len(rs), sum(1 for r in rs if r.outcome == "verified_success")) for rs in by_task.values()]
    max_k = min(n for n, _ in trials)
    if max_k < 2:
        return None
    values = []
    for k in range(1, max_k + 1):
        value = mean_pass_hat_k(trials, k)
        assert value is not None  # there is at least one task
        values.append(PassHatKValue(k=k, value=round(value, 4)))
    return PassHatK(max_k=max_k, tasks=len(trials), by_k=values)


def _tokens(episodes: Sequence[EpisodeRecord]) -> TokenStats:
    known = [r.prompt_tokens + r.completion_tokens for r in episodes
             if r.prompt_tokens is not None and r.completion_tokens is not None]
    return TokenStats(
        known=len(known), unknown=len(episodes) - len(known), total=sum(known) if known else None,
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


def outcome_table(
    label: str, records: Iterable[EpisodeRecord], *, bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED,
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES, with_pass_hat_k: bool = True,
) -> OutcomeTable:
    """The table of one group of episodes. `with_pass_hat_k=False` for a group that mixes endpoints, where
    repeated episodes of a task are different agents, not repeated trials."""
    episodes = list(records)
    outcomes = Counter(r.outcome for r in episodes)
    kinds = Counter(str(r.false_completion_kind) for r in episodes if r.outcome == "false_completion")
    claimed = sum(1 for r in episodes if r.claim.success is True)
    passed = {"verified_success", "unclaimed_success"}
    taxonomy = Counter(
        f"{'claimed' if r.claim.success is True else 'not-claimed'}/{'pass' if r.outcome in passed else 'fail'}"
        for r in episodes if r.outcome != "infrastructure_failure"
    )
    by_task = _by_task(episodes)
    interval = clustered_bootstrap(
        {task: [r.outcome == "verified_success" for r in rs] for task, rs in by_task.items()},
        resamples=bootstrap_resamples, seed=bootstrap_seed,
    )
    return OutcomeTable(
        label=label, scripted=any(r.scripted for r in episodes),
        attempted=len(episodes), verified_success=outcomes["verified_success"],
        self_reported_success=claimed, false_completions=outcomes["false_completion"],
        false_completion_kinds={k: kinds[k] for k in FALSE_COMPLETION_KINDS},
        honest_failures=outcomes["honest_failure"],
        claimed_failure=sum(1 for r in episodes if r.claim.success is False),
        no_finish=sum(1 for r in episodes if r.claim.success is None),
        unclaimed_success=outcomes["unclaimed_success"],
        infrastructure_failures=outcomes["infrastructure_failure"],
        replay_pass=sum(1 for r in episodes if r.replay == "PASS"),
        rejected_actions=sum(r.rejected_actions for r in episodes),
        stop_reasons=dict(sorted(Counter(r.stop_reason for r in episodes).items())),
        taxonomy={k: taxonomy[k] for k in ("claimed/pass", "claimed/fail", "not-claimed/pass", "not-claimed/fail")},
        false_completion_rate_over_attempted=_rate(outcomes["false_completion"], len(episodes)),
        false_completion_rate_over_success_claims=_rate(outcomes["false_completion"], claimed),
        verified_success_rate=_proportion(outcomes["verified_success"], len(episodes), "attempted episodes"),
        false_completion_over_attempted=_proportion(outcomes["false_completion"], len(episodes),
                                                    "attempted episodes"),
        false_completion_over_success_claims=_proportion(outcomes["false_completion"], claimed,
                                                         "success claims (done(success=true))"),
        verified_success_bootstrap=BootstrapInterval(
            rate="verified success over attempted episodes", tasks=len(by_task), episodes=len(episodes),
            interval=None if interval is None else Interval(low=round(interval[0], 4), high=round(interval[1], 4)),
            resamples=bootstrap_resamples, seed=bootstrap_seed,
        ),
        pass_hat_k=_pass_hat_k(by_task) if with_pass_hat_k else None,
        per_task=[_task_row(task, rs) for task, rs in by_task.items()],
        tokens=_tokens(episodes), latency=_latency(episodes),
    )


def _payload_ids(payload: Any) -> list[str] | None:
    """The model ids of an OpenAI-shaped GET /models answer ({"data": [{"id": ...}]}); None for any other shape."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    ids = [item.get("id") for item in payload["data"] if isinstance(item, dict)]
    return [i for i in ids if isinstance(i, str)] if all(isinstance(i, str) for i in ids) else None


def provenance(records: Sequence[EpisodeRecord], manifest: RunManifest | None) -> Provenance:
    """Claimed (the run config's endpoint) beside observed (what the endpoint and its replies said); what the
    manifest would say is None without it."""
    claimed = None
    observed_endpoint = manifest.endpoint_observed if manifest is not None else None
    if manifest is not None:
        endpoint = manifest.config.endpoint
        claimed = ClaimedEndpoint(kind=endpoint.kind, base_url=endpoint.base_url, model=endpoint.model,
                                  artifact_sha256=endpoint.artifact_sha256)
    return Provenance(
        claimed=claimed,
        observed=ObservedEndpointSummary(
            models_payload_ids=_payload_ids(observed_endpoint.models_payload) if observed_endpoint else None,
            models_error=observed_endpoint.models_error if observed_endpoint else None,
            models_seen=sorted({m for r in records for m in r.models_seen}),
            fingerprints_seen=sorted({f for r in records for f in r.fingerprints_seen}),
            server_headers=dict(observed_endpoint.server_headers) if observed_endpoint else None,
        ),
    )


def run_report(
    run_id: str, records: list[EpisodeRecord], *, declared_scripted: bool, manifest: RunManifest | None = None,
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED, bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    verified_by_reviewer: bool = False,
) -> RunReport:
    """The report of a run. It is scripted when the manifest declares it or any episode's replies came
    from the scripted endpoint (e.g. `computerops mock-llm` reached through --base-url).

    The evidence level is E1 (observed, with raw provenance) unless `verified_by_reviewer` says that
    `computerops verify` passed on this run directory (E2). Without `manifest` the claimed provenance and the
    endpoint's own answers are unknown (None); what the replies said is still taken from the records.
    """
    labels = sorted({r.endpoint for r in records})
    total = outcome_table("all", records, bootstrap_seed=bootstrap_seed, bootstrap_resamples=bootstrap_resamples,
                          with_pass_hat_k=len(labels) <= 1)
    level: EvidenceLevel = "E2" if verified_by_reviewer else "E1"
    return RunReport(
        run_id=run_id, scripted=declared_scripted or total.scripted, total=total,
        by_endpoint=[outcome_table(label, [r for r in records if r.endpoint == label], bootstrap_seed=bootstrap_seed,
                                   bootstrap_resamples=bootstrap_resamples) for label in labels],
        evidence_level=level, evidence_level_meaning=EVIDENCE_LEVELS[level],
        bootstrap_seed=bootstrap_seed, bootstrap_resamples=bootstrap_resamples,
        provenance=provenance(records, manifest),
    )


def summarize(manifest: RunManifest, records: list[EpisodeRecord]) -> RunReport:
    """The report of a run directory's manifest and records with the default bootstrap settings, at E1: the
    summary a run seals beside its evidence, which `computerops verify` recomputes from the records."""
    return run_report(manifest.config.run_id, records, declared_scripted=manifest.scripted, manifest=manifest)


def report_json(report: RunReport) -> dict[str, Any]:
    """The report as JSON data: the whole model, with the total's keys also at the top level (as `report --json`
    has always printed them); the report's own `scripted` (declared or observed) wins over the total's."""
    return {**report.total.model_dump(mode="json"), **report.model_dump(mode="json")}
