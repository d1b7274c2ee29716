"""Interval estimates for run reports: pure functions of counts, no I/O, deterministic for a seed.

- `wilson_interval`: the Wilson score interval of a binomial proportion (sensible at 0/n and n/n,
  unlike the normal approximation).
- `clustered_bootstrap`: a percentile interval of a pooled proportion when *tasks*, not episodes, are
  resampled with replacement; repeated episodes of one task are not independent evidence.
- `ratio_of_medians`: median(a) / median(b) of paired samples, with scipy's percentile bootstrap interval when
  pairs are resampled (the bench's figures against a floor).
- `pass_hat_k` / `mean_pass_hat_k`: tau-bench's pass^k, the unbiased estimate from n trials with c
  successes that all of k fresh trials succeed, C(c, k) / C(n, k), and its mean over tasks.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Z_95 = 1.959964
"""The two-sided 95% standard normal quantile."""


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval (low, high) for `successes` out of `n`; None when n == 0 (no rate exists)."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return None
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values by linear interpolation between order statistics (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def clustered_bootstrap(
    values_by_task: Mapping[str, Sequence[bool]], *, resamples: int, seed: int, confidence: float = 0.95
) -> tuple[float, float] | None:
    """A percentile interval of the pooled proportion (all successes / all episodes) when tasks are resampled.

    Each resample draws as many tasks as there are, with replacement, from `random.Random(seed)`; a drawn task
    brings all its episodes. Tasks are taken in sorted id order, so the result depends only on the data, the
    seed and the resample count. Tasks with no episodes are left out; None when no episode remains.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    clusters = [(sum(1 for v in values if v), len(values))
                for _, values in sorted(values_by_task.items()) if len(values) > 0]
    if not clusters:
        return None
    rng = random.Random(seed)
    count = len(clusters)
    estimates = []
    for _ in range(resamples):
        successes = episodes = 0
        for _ in range(count):
            drawn_successes, drawn_episodes = clusters[rng.randrange(count)]
            successes += drawn_successes
            episodes += drawn_episodes
        estimates.append(successes / episodes)
    estimates.sort()
    tail = (1 - confidence) / 2
    return _percentile(estimates, tail), _percentile(estimates, 1 - tail)


def bootstrap_mean(values: Sequence[float], *, resamples: int, seed: int, confidence: float = 0.95
                   ) -> tuple[float, float] | None:
    """Percentile interval of the mean of `values` when they are resampled with replacement from
    `random.Random(seed)`, in the order given; None for no value."""
    if not values:
        return None
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1, got {resamples}, {confidence}")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    return _percentile(means, tail), _percentile(means, 1 - tail)


@dataclass(frozen=True)
class RatioOfMedians:
    """median(a) / median(b) of paired samples and its percentile bootstrap interval (pairs resampled)."""

    ratio: float
    low: float
    high: float


def ratio_of_medians(a: Sequence[float], b: Sequence[float], *, resamples: int = 2000, seed: int = 0,
                     confidence: float = 0.95) -> RatioOfMedians:
    """median(a) / median(b), and the percentile interval of that ratio when the pairs (a[i], b[i]) are resampled
    with replacement (`scipy.stats.bootstrap`, paired, from `numpy.random.default_rng(seed)`): the samples stay paired,
    so load the two halves of a pair shared is resampled with them. Fewer than two pairs have no interval: ValueError.
    """
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"need two or more pairs of samples, got {len(a)} and {len(b)}")
    from scipy.stats import bootstrap  # imported here: scipy.stats takes a second, and only the bench needs it

    def statistic(x: NDArray[np.float64], y: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
        return np.asarray(np.median(x, axis=axis) / np.maximum(np.median(y, axis=axis), 1e-9))

    result = bootstrap((np.asarray(a, dtype=float), np.asarray(b, dtype=float)), statistic, paired=True,
                       vectorized=True, n_resamples=resamples, confidence_level=confidence, method="percentile",
                       rng=np.random.default_rng(seed))
    ratio = float(statistic(np.asarray(a, dtype=float), np.asarray(b, dtype=float)))
    return RatioOfMedians(ratio=ratio, low=float(result.confidence_interval.low),
                          high=float(result.confidence_interval.high))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k from n trials with c successes: C(c, k) / C(n, k), the chance that k trials drawn without
    replacement from the n all succeeded (an unbiased estimate that all of k fresh trials succeed)."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    return math.comb(c, k) / math.comb(n, k)


def mean_pass_hat_k(trials: Iterable[tuple[int, int]], k: int) -> float | None:
    """The mean over tasks of pass^k, each task given as (n trials, c successes); None when there is no task."""
    values = [pass_hat_k(n, c, k) for n, c in trials]
    return sum(values) / len(values) if values else None
