"""The interval estimates of run reports, against values computed by hand."""

from __future__ import annotations

import math

import pytest

from computerops.core.stats import (
    clustered_bootstrap,
    mean_pass_hat_k,
    pass_hat_k,
    ratio_of_medians,
    wilson_interval,
)


def rounded(interval: tuple[float, float] | None) -> tuple[float, float] | None:
    return None if interval is None else (round(interval[0], 4), round(interval[1], 4))


def test_wilson_matches_the_known_values_at_the_edges_and_the_middle() -> None:
    # 0/10: low 0, high z^2 / (n + z^2) = 3.84146 / 13.84146; n/n mirrors it.
    assert rounded(wilson_interval(0, 10)) == (0.0, 0.2775)
    assert rounded(wilson_interval(5, 10)) == (0.2366, 0.7634)
    assert rounded(wilson_interval(10, 10)) == (0.7225, 1.0)
    assert rounded(wilson_interval(1, 1)) == (0.2065, 1.0)
    low, high = wilson_interval(0, 10) or (math.nan, math.nan)
    assert low == 0.0 and high == pytest.approx(1.959964**2 / (10 + 1.959964**2))


def test_wilson_has_no_interval_without_episodes_and_refuses_impossible_counts() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)


def test_wilson_takes_another_z() -> None:
    # z = 1: 5/10 gives centre 0.5 and half-width sqrt(0.025 + 0.0025) / 1.1.
    low, high = wilson_interval(5, 10, z=1.0) or (math.nan, math.nan)
    assert high - 0.5 == pytest.approx(math.sqrt(0.0275) / 1.1) and low == pytest.approx(1 - high)


def test_the_bootstrap_is_deterministic_for_a_seed_and_varies_with_it() -> None:
    data = {f"t{i:02d}": [i % 3 == 0, i % 2 == 0, i % 5 == 0] for i in range(12)}
    first = clustered_bootstrap(data, resamples=500, seed=7)
    assert first == clustered_bootstrap(data, resamples=500, seed=7)
    assert first == clustered_bootstrap(dict(reversed(list(data.items()))), resamples=500, seed=7)  # order-free
    assert first != clustered_bootstrap(data, resamples=500, seed=8)
    assert first is not None and 0 <= first[0] < first[1] <= 1


def test_the_bootstrap_collapses_to_a_point_when_every_task_has_the_same_rate() -> None:
    # Every resample pools tasks whose rate is 1/2, so the pooled rate is always 1/2.
    data = {"a": [True, False], "b": [True, False, True, False], "c": [False, True]}
    assert clustered_bootstrap(data, resamples=200, seed=1) == (0.5, 0.5)
    assert clustered_bootstrap({"only": [True, True, False]}, resamples=50, seed=3) == (2 / 3, 2 / 3)


def test_the_bootstrap_resamples_tasks_not_episodes() -> None:
    # Two tasks, one always passing, one always failing: a resample draws both tasks alike with chance 1/4 each
    # way, so the 2.5% and 97.5% points are 0 and 1, however many episodes each task has.
    data = {"pass": [True] * 50, "fail": [False] * 50}
    assert clustered_bootstrap(data, resamples=2000, seed=0) == (0.0, 1.0)


def test_the_bootstrap_has_no_interval_without_episodes() -> None:
    assert clustered_bootstrap({}, resamples=10, seed=0) is None
    assert clustered_bootstrap({"a": []}, resamples=10, seed=0) is None
    with pytest.raises(ValueError):
        clustered_bootstrap({"a": [True]}, resamples=0, seed=0)


def test_pass_hat_k_is_the_ratio_of_binomial_coefficients() -> None:
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2) / C(4,2)
    assert pass_hat_k(5, 3, 1) == pytest.approx(3 / 5)  # pass^1 is the success rate
    assert pass_hat_k(5, 4, 3) == pytest.approx(4 / 10)  # C(4,3) / C(5,3)
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(3, 2, 3) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)
    with pytest.raises(ValueError):
        pass_hat_k(2, 3, 1)


def test_the_mean_pass_hat_k_averages_tasks() -> None:
    tasks = [(2, 1), (2, 2), (2, 0)]
    assert mean_pass_hat_k(tasks, 1) == pytest.approx((0.5 + 1 + 0) / 3)
    assert mean_pass_hat_k(tasks, 2) == pytest.approx((0 + 1 + 0) / 3)
    assert mean_pass_hat_k([], 1) is None


def test_a_ratio_of_medians_resamples_the_pairs_together() -> None:
    # Every adapter time is twice its floor's, the floors spread widely: resampled as pairs the ratio is always 2;
    # resampled apart it would wander far from it.
    floor = [1.0, 5.0, 9.0, 20.0, 40.0, 80.0, 3.0, 60.0]
    found = ratio_of_medians([2 * f for f in floor], floor)
    assert found.ratio == pytest.approx(2.0) and found.low == pytest.approx(2.0) and found.high == pytest.approx(2.0)


def test_a_ratio_of_medians_is_the_medians_ratio_inside_its_interval_and_repeats_for_a_seed() -> None:
    a, b = [12.0, 15.0, 11.0, 30.0, 14.0, 13.0], [10.0, 9.0, 12.0, 11.0, 10.0, 25.0]
    found = ratio_of_medians(a, b)
    assert found.ratio == pytest.approx(13.5 / 10.5)
    assert found.low < found.ratio < found.high
    assert ratio_of_medians(a, b) == found  # the same seed, the same interval
    with pytest.raises(ValueError, match="two or more pairs"):
        ratio_of_medians([1.0], [1.0])
