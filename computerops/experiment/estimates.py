"""Per-cell counts with Wilson intervals and paired treatment-minus-control estimates with task-cluster bootstrap
intervals: pure functions of `ExperimentEpisode` rows.

Denominators, defined once: *attempts* are the episodes with an agent outcome (infrastructure failures are kept out
of every rate and listed by id); *claims* are the attempts that said done(success=true); *configured* are the
episodes with any configured fault or a planted attack, and *exposed* those where one actually fired or the payload
reached the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from computerops.core.stats import bootstrap_mean, wilson_interval
from computerops.experiment.rows import ExperimentEpisode
from tasks.templates import parse_instance_id

Measure = Literal["verified_success", "false_completion"]
MEASURES: tuple[Measure, ...] = ("verified_success", "false_completion")


class CellSummary(BaseModel):
    """One cell and arm of an experiment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell: str
    arm: str
    model: str
    attempts: int
    verified: int
    verified_interval: tuple[float, float] | None
    false_completions: int
    false_completion_rate_attempted: float | None
    false_completion_rate_attempted_interval: tuple[float, float] | None
    claims: int
    false_completion_rate_claims: float | None
    false_completion_rate_claims_interval: tuple[float, float] | None
    configured: int
    exposed: int
    infrastructure_failures: list[str]


def _rate(count: int, total: int) -> float | None:
    return count / total if total else None


def summarize_cells(rows: Sequence[ExperimentEpisode]) -> list[CellSummary]:
    """One summary per (cell, arm), sorted by cell then arm (control before treatment)."""
    groups: dict[tuple[str, str], list[ExperimentEpisode]] = defaultdict(list)
    for row in rows:
        groups[(row.cell, row.arm)].append(row)
    summaries = []
    for (cell, arm), members in sorted(groups.items()):
        agent = [r for r in members if not r.infrastructure]
        verified = sum(r.verified for r in agent)
        false = sum(r.false_completion for r in agent)
        claims = sum(r.claimed_success for r in agent)
        summaries.append(CellSummary(
            cell=cell, arm=arm, model=members[0].model, attempts=len(agent), verified=verified,
            verified_interval=wilson_interval(verified, len(agent)), false_completions=false,
            false_completion_rate_attempted=_rate(false, len(agent)),
            false_completion_rate_attempted_interval=wilson_interval(false, len(agent)), claims=claims,
            false_completion_rate_claims=_rate(false, claims),
            false_completion_rate_claims_interval=wilson_interval(false, claims),
            configured=sum(r.configured for r in agent), exposed=sum(r.exposed for r in agent),
            infrastructure_failures=[r.episode_id for r in members if r.infrastructure],
        ))
    return summaries


class PairedEstimate(BaseModel):
    """Treatment minus control on one measure: per task, the equally weighted task-level mean and its interval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measure: Measure
    differences: dict[str, float]
    """Task id -> the treatment's rate minus the control's, each over that task's attempts in the arm."""
    unpaired_tasks: list[str]
    """Tasks left out because an arm has no attempt."""
    n_tasks: int
    mean: float | None
    """The mean over templates of the mean of their instances' differences, every template weighted equally (None
    with no task); with one instance a template, the mean of the per-task differences."""
    interval: tuple[float, float] | None
    """Percentile interval of the mean when templates (the clusters: a template's instances are not independent)
    are resampled with replacement (`resamples`, `seed`)."""
    n_templates: int | None = None
    """The clusters resampled (None in results written before templates)."""
    confidence: float
    resamples: int
    seed: int


def _value(row: ExperimentEpisode, measure: Measure) -> bool:
    return row.verified if measure == "verified_success" else row.false_completion


def task_differences(rows: Sequence[ExperimentEpisode], measure: Measure) -> tuple[dict[str, float], list[str]]:
    """Per task, treatment rate minus control rate of `measure`; and the tasks missing an arm."""
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: {"control": [0, 0], "treatment": [0, 0]})
    for row in rows:
        if row.infrastructure:
            continue
        cell = counts[row.task_id][row.arm]
        cell[0] += _value(row, measure)
        cell[1] += 1
    differences, unpaired = {}, []
    for task, arms in sorted(counts.items()):
        (tc, tn), (cc, cn) = arms["treatment"], arms["control"]
        if tn and cn:
            differences[task] = tc / tn - cc / cn
        else:
            unpaired.append(task)
    return differences, unpaired


def paired_estimate(rows: Sequence[ExperimentEpisode], measure: Measure, *, resamples: int, seed: int,
                    confidence: float = 0.95) -> PairedEstimate:
    """The paired estimate of `measure`; templates are the clusters the bootstrap resamples (in sorted id order),
    each the mean of its instances' differences."""
    differences, unpaired = task_differences(rows, measure)
    by_template: dict[str, list[float]] = defaultdict(list)
    for task in sorted(differences):
        parsed = parse_instance_id(task)
        by_template[task if parsed is None else parsed[0]].append(differences[task])
    values = [sum(found) / len(found) for _, found in sorted(by_template.items())]
    return PairedEstimate(
        measure=measure, differences=differences, unpaired_tasks=unpaired, n_tasks=len(differences),
        mean=sum(values) / len(values) if values else None,
        interval=bootstrap_mean(values, resamples=resamples, seed=seed, confidence=confidence),
        confidence=confidence, resamples=resamples, seed=seed, n_templates=len(values),
    )
