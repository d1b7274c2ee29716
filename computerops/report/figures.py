"""Rates with their intervals: a proportion with its Wilson interval, a task-clustered bootstrap, pass^k.

A rate with a zero denominator is None, never 0 or NaN. Every figure is rounded to 4 decimals.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from computerops.core.stats import mean_pass_hat_k, wilson_interval
from computerops.runs.records import EpisodeRecord

DEFAULT_BOOTSTRAP_SEED = 0
DEFAULT_BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_METHOD = ("percentile interval of the pooled rate; tasks resampled with replacement, each bringing all "
                    "its episodes; random.Random(seed), tasks in sorted id order")

FROZEN = ConfigDict(extra="forbid", frozen=True)
"""Every report model is frozen and refuses unknown fields."""


class Interval(BaseModel):
    """A 95% interval, rounded to 4 decimals."""

    model_config = FROZEN

    low: float
    high: float


class Proportion(BaseModel):
    """numerator / denominator with its Wilson 95% interval; rate and interval are None when the denominator is 0."""

    model_config = FROZEN

    numerator: int
    denominator: int
    denominator_is: str
    """What is counted below the line, in words (e.g. `attempted episodes`)."""
    rate: float | None
    wilson95: Interval | None


class BootstrapInterval(BaseModel):
    """A task-clustered bootstrap interval of a rate; `interval` is None when there are no episodes."""

    model_config = FROZEN

    rate: str
    tasks: int
    episodes: int
    interval: Interval | None
    resamples: int
    seed: int
    confidence: float = 0.95
    method: str = BOOTSTRAP_METHOD


class PassHatKValue(BaseModel):
    model_config = FROZEN

    k: int
    value: float


class PassHatK(BaseModel):
    """tau-bench's pass^k of verified success for k = 1..K, the mean over tasks of C(c, k) / C(n, k)."""

    model_config = FROZEN

    max_k: int
    """K: the fewest episodes any task of the group has (at least 2, or there is no pass^k)."""
    tasks: int
    by_k: list[PassHatKValue]


def rate(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else round(numerator / denominator, 4)


def interval(bounds: tuple[float, float] | None) -> Interval | None:
    return None if bounds is None else Interval(low=round(bounds[0], 4), high=round(bounds[1], 4))


def proportion(numerator: int, denominator: int, denominator_is: str) -> Proportion:
    return Proportion(
        numerator=numerator, denominator=denominator, denominator_is=denominator_is,
        rate=rate(numerator, denominator), wilson95=interval(wilson_interval(numerator, denominator)),
    )


def pass_hat_k(by_task: dict[str, list[EpisodeRecord]]) -> PassHatK | None:
    """pass^k over the tasks' episodes, or None when there are none or some task has a single episode."""
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


def by_task(episodes: Sequence[EpisodeRecord]) -> dict[str, list[EpisodeRecord]]:
    """The episodes grouped by task, tasks in id order."""
    grouped: dict[str, list[EpisodeRecord]] = {}
    for record in episodes:
        grouped.setdefault(record.task_id, []).append(record)
    return dict(sorted(grouped.items()))
