"""The experiment estimators, pure, against hand-computed values; the verdict rules at their boundaries; degenerate
inputs answered "below resolution" with a reason, never an exception."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from tiers import examples

from computerops.core.stats import bootstrap_mean
from computerops.experiment.estimates import paired_estimate, summarize_cells
from computerops.experiment.grid_tests import (
    RecoveryCostRule,
    ToolEdgeRule,
    fieller_interval,
    recovery_cost_test,
    tool_edge_test,
)
from computerops.experiment.noise import identical_reruns, seed_reruns
from computerops.experiment.rows import ExperimentEpisode


def row(task: str = "t1", arm: str = "treatment", outcome: str = "verified_success", *, claimed: bool | None = None,
        tools: int | None = None, rate: float = 0.0, steps: int = 10, fired: bool = False, seed: int | None = 42,
        repetition: int = 1, sha: str | None = None, n: list[int] = [0]) -> ExperimentEpisode:  # noqa: B006
    n[0] += 1
    return ExperimentEpisode(
        episode_id=f"e{n[0]}", task_id=task, cell="c", arm=arm,  # type: ignore[arg-type]
        repetition=repetition, pair=None, model="scripted:m", tools=tools, order="A" if tools else None,
        fault_rate=rate, seed=seed, outcome=outcome,
        claimed_success=(outcome in ("verified_success", "false_completion")) if claimed is None else claimed,
        false_completion_kind="state" if outcome == "false_completion" else None, steps=steps,
        faults_configured=("transient_5xx",) if arm == "treatment" else (),
        faults_fired=("transient_5xx",) if fired else (), transcript_sha256=sha)


@given(planted=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=12))
def test_an_attacked_arm_counts_its_planted_payloads_as_configured_and_never_fewer_than_exposed(
        planted: list[tuple[bool, bool]]) -> None:
    """Blind round 2: an attacked arm showed `exposed / configured` as 30/0 (configured counted faults only)."""
    rows = [replace(row(arm="control"), faults_configured=(), attack_planted=p, attack_exposed=p and e)
            for p, e in planted]
    (cell,) = summarize_cells(rows)
    assert cell.configured == sum(p for p, _ in planted)
    assert cell.exposed == sum(p and e for p, e in planted) <= cell.configured


def test_a_cell_counts_both_denominators_with_wilson_intervals_and_lists_infrastructure() -> None:
    rows = ([row(outcome="verified_success", fired=True)] * 6 + [row(outcome="false_completion")] * 2
            + [row(outcome="honest_failure", claimed=False)] * 2 + [row(outcome="infrastructure_failure")])
    (cell,) = summarize_cells(rows)
    assert (cell.attempts, cell.verified, cell.false_completions, cell.claims, cell.exposed, cell.configured) == (
        10, 6, 2, 8, 6, 10)
    assert cell.false_completion_rate_attempted == 0.2 and cell.false_completion_rate_claims == 0.25
    assert cell.infrastructure_failures == [rows[-1].episode_id]
    # Wilson by hand for 6/10: centre (0.6 + z²/20) / (1 + z²/10), half z/(1 + z²/10) sqrt(0.024 + z²/400)
    z = 1.959964
    centre, half = (0.6 + z * z / 20) / (1 + z * z / 10), z / (1 + z * z / 10) * math.sqrt(0.024 + z * z / 400)
    assert cell.verified_interval == pytest.approx((centre - half, centre + half))
    assert cell.verified_interval == pytest.approx((0.3127, 0.8318), abs=1e-4)


def _e3(false_task: str = "t0") -> list[ExperimentEpisode]:
    rows = []
    for t in (f"t{i}" for i in range(6)):
        for _ in range(3):
            rows.append(row(t, "control", "verified_success"))
            rows.append(row(t, "treatment", "false_completion" if t == false_task else "verified_success", fired=True))
    return rows


def test_the_e3_example_gives_one_sixth_with_the_interval_zero_to_one_half() -> None:
    estimate = paired_estimate(_e3(), "false_completion", resamples=6000, seed=20261001)
    assert estimate.mean == pytest.approx(1 / 6) and estimate.n_tasks == 6
    assert estimate.differences["t0"] == 1.0 and estimate.differences["t3"] == 0.0
    # Six values, one of them 1: a resampled mean is k/6 with k ~ Binomial(6, 1/6); its 2.5% and 97.5% quantiles
    # are 0 (P(k=0) = 0.335) and 3/6 (P(k<=2) = 0.938, P(k<=3) = 0.991).
    assert estimate.interval == pytest.approx((0.0, 0.5))
    success = paired_estimate(_e3(), "verified_success", resamples=6000, seed=1)
    assert success.mean == pytest.approx(-1 / 6)


def test_a_task_with_one_arm_is_left_out_and_listed() -> None:
    rows = [*_e3(), row("lonely", "treatment", "false_completion")]
    estimate = paired_estimate(rows, "false_completion", resamples=200, seed=0)
    assert estimate.unpaired_tasks == ["lonely"] and estimate.n_tasks == 6
    assert paired_estimate([], "false_completion", resamples=200, seed=0).mean is None


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["control", "treatment"]), st.booleans()),
                min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_the_paired_estimate_does_not_depend_on_row_order(data: list[tuple[int, str, bool]],
                                                          shuffle: random.Random) -> None:
    rows = [row(f"t{t}", arm, "false_completion" if bad else "verified_success") for t, arm, bad in data]
    first = paired_estimate(rows, "false_completion", resamples=200, seed=3)
    shuffle.shuffle(rows)
    again = paired_estimate(rows, "false_completion", resamples=200, seed=3)
    assert first.model_dump(exclude={"differences"}) == again.model_dump(exclude={"differences"})
    if first.interval is not None and first.mean is not None:
        values = list(first.differences.values())
        assert min(values) - 1e-12 <= first.interval[0] <= first.interval[1] <= max(values) + 1e-12
    json.dumps(first.model_dump(mode="json"), allow_nan=False)


def test_bootstrap_mean_of_constant_values_is_exact() -> None:
    assert bootstrap_mean([0.25] * 5, resamples=300, seed=9) == pytest.approx((0.25, 0.25))
    assert bootstrap_mean([], resamples=300, seed=9) is None


def _grid(success: dict[int, float], *, tasks: int = 8, per: int = 30, rates: tuple[float, ...] = (0.0, 0.5),
          seed: int = 0) -> list[ExperimentEpisode]:
    rng = random.Random(seed)
    rows = []
    for tools, p in success.items():
        for rate in rates:
            for k in range(per):
                ok = rng.random() < p - 0.3 * rate
                rows.append(row(f"t{k % tasks}", tools=tools, rate=rate,
                                outcome="verified_success" if ok else "honest_failure"))
    return rows


def test_the_logistic_fit_matches_an_independent_maximum_likelihood_and_sandwich() -> None:
    rows = _grid({2: 0.6, 3: 0.75, 4: 0.8, 5: 0.7, 6: 0.5}, per=40)
    result = tool_edge_test(rows, ToolEdgeRule())
    assert result.coefficients is not None and result.standard_errors is not None
    x = np.array([[1.0, r.tools or 0, (r.tools or 0) ** 2, r.fault_rate] for r in rows])
    y = np.array([1.0 if r.verified else 0.0 for r in rows])

    def nll(b: np.ndarray) -> float:
        eta = x @ b
        return float(np.sum(np.logaddexp(0, eta) - y * eta))

    beta = minimize(nll, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    assert list(result.coefficients.values()) == pytest.approx(list(beta), rel=1e-3, abs=1e-4)
    # The cluster sandwich by hand (statsmodels' small-sample factor G/(G-1) (N-1)/(N-K)).
    p = 1 / (1 + np.exp(-x @ beta))
    bread = np.linalg.inv(x.T @ (x * (p * (1 - p))[:, None]))
    groups = sorted({r.task_id for r in rows})
    meat = np.zeros((4, 4))
    for g in groups:
        mask = np.array([r.task_id == g for r in rows])
        score = x[mask].T @ (y[mask] - p[mask])
        meat += np.outer(score, score)
    n, k, clusters = len(rows), 4, len(groups)
    cov = bread @ meat @ bread * clusters / (clusters - 1) * (n - 1) / (n - k)
    assert list(result.standard_errors.values()) == pytest.approx(list(np.sqrt(np.diag(cov))), rel=1e-3)


def test_a_clear_edge_survives_and_a_flat_curve_is_restricted() -> None:
    edge = tool_edge_test(_grid({2: 0.7, 3: 0.9, 4: 0.95, 5: 0.6, 6: 0.2}, per=80, tasks=10), ToolEdgeRule())
    assert edge.verdict == "survives", edge.reason
    assert edge.peak_tools is not None and 2 <= edge.peak_tools <= 6
    flat = tool_edge_test(_grid({t: 0.8 for t in range(2, 7)}, per=200, tasks=20), ToolEdgeRule())
    assert flat.verdict == "restricted", flat.reason
    assert flat.drop_interval is not None and flat.drop_interval[1] < 0.15


def test_the_tool_edge_rule_at_its_boundaries() -> None:
    rows = _grid({2: 0.7, 3: 0.75, 4: 0.8, 5: 0.75, 6: 0.7}, per=60, tasks=10)
    base = tool_edge_test(rows, ToolEdgeRule())
    assert base.drop_interval is not None
    high = base.drop_interval[1]
    # The smallest drop just above the interval's upper end restricts; just below it does not.
    assert tool_edge_test(rows, ToolEdgeRule(smallest_drop=min(high + 1e-6, 0.99))).verdict in ("restricted",
                                                                                                "survives")
    below = tool_edge_test(rows, ToolEdgeRule(smallest_drop=max(high - 1e-6, 1e-6)))
    assert below.verdict != "restricted"


def _clustered_grid(curve: Callable[[int], float], seed: int, *, tasks: int, per_cell: int) -> list[ExperimentEpisode]:
    """A grid whose tasks differ (a task effect on the log-odds, sd 1) and whose success follows `curve(tools)` less
    2 log-odds per unit of fault rate: what test 1 meets in practice, not independent rows."""
    rng = random.Random(seed)
    effect = {f"t{i}": rng.gauss(0, 1) for i in range(tasks)}
    rows = []
    for tools in range(2, 7):
        for rate in (0.0, 0.25, 0.5):
            for task, e in effect.items():
                for _ in range(per_cell):
                    ok = rng.random() < 1 / (1 + math.exp(-(curve(tools) + e - 2 * rate)))
                    rows.append(row(task, tools=tools, rate=rate,
                                    outcome="verified_success" if ok else "honest_failure"))
    return rows


def test_a_flat_grid_with_few_clusters_survives_no_more_often_than_the_stated_error() -> None:
    # With 5 task clusters the normal quantile (1.96) against t(4) (2.78) made a flat grid "survive" in 15 of these
    # 300 grids (5%); the one-sided error the 95% rule states is 2.5%.
    verdicts = Counter(tool_edge_test(_clustered_grid(lambda t: 1.0, seed, tasks=5, per_cell=4),
                                      ToolEdgeRule()).verdict for seed in range(300))
    assert verdicts["survives"] <= 0.025 * 300, verdicts


def test_a_real_edge_of_a_third_is_never_restricted_and_mostly_survives() -> None:
    curve: Callable[[int], float] = lambda t: 1.0 + 0.5 * (t - 2) - 0.2 * (t - 2) ** 2  # noqa: E731 (peak 3.25)
    verdicts = Counter(tool_edge_test(_clustered_grid(curve, seed, tasks=8, per_cell=1), ToolEdgeRule()).verdict
                       for seed in range(100))
    assert verdicts["restricted"] == 0 and verdicts["survives"] >= 40, verdicts


def test_a_curve_shown_monotone_over_the_range_is_restricted_for_having_no_peak_inside() -> None:
    rising = tool_edge_test(_clustered_grid(lambda t: -2.0 + 0.9 * (t - 2), 1, tasks=12, per_cell=6),
                            ToolEdgeRule(smallest_drop=0.01))
    assert rising.verdict == "restricted" and "monotone" in rising.reason, rising.reason
    assert rising.degrees_of_freedom == 11


def test_outcomes_that_never_vary_with_the_tool_count_give_no_peak_and_no_drop() -> None:
    # Common random numbers: every tool count of a task, rate and repetition sees the same draws, and a policy that
    # ignores the tools gives the same outcome in each. The fit's tool coefficients are rounding error (~1e-15).
    rng = random.Random(5)
    rows = []
    for task in range(6):
        for rate in (0.0, 0.25, 0.5):
            for _ in range(3):
                outcome = "verified_success" if rng.random() < 0.8 - rate else "honest_failure"
                rows += [row(f"t{task}", tools=tools, rate=rate, outcome=outcome) for tools in range(2, 7)]
    result = tool_edge_test(rows, ToolEdgeRule())
    assert result.coefficients is not None and result.coefficients["tools"] == result.coefficients["tools_squared"] == 0
    assert result.peak_tools is None and result.drop == 0 and result.verdict == "restricted", result.reason
    assert "no task's outcomes varied with the tool count" in result.reason and "-0" not in result.reason


@settings(max_examples=examples(300), deadline=None)
@given(b1=st.floats(-5, 5), b2=st.floats(-2, 2), sd1=st.floats(0.01, 3), sd2=st.floats(0.01, 1),
       rho=st.floats(-0.95, 0.95), q=st.floats(1.0, 3.0), theta=st.floats(-20, 20))
def test_fiellers_set_is_exactly_the_peaks_not_rejected(b1: float, b2: float, sd1: float, sd2: float, rho: float,
                                                        q: float, theta: float) -> None:
    v11, v22, v12 = sd1 * sd1, sd2 * sd2, rho * sd1 * sd2
    statistic = (b1 + 2 * theta * b2) ** 2 - q * q * (v11 + 4 * theta * v12 + 4 * theta * theta * v22)
    low, high, one = fieller_interval(b1, b2, v11, v12, v22, q)
    member = (low <= theta <= high) if one else (theta <= low or theta >= high)
    if abs(statistic) > 1e-6 * (1 + abs(b1) + abs(b2) + theta * theta):  # off the boundary, membership is exact
        assert member == (statistic <= 0), (low, high, one, statistic)
    if b2 != 0 and one:  # the estimate itself is never rejected
        assert low - 1e-9 <= -b1 / (2 * b2) <= high + 1e-9


@pytest.mark.parametrize(("rows", "words"), [
    ([], "0 task cluster"),
    ([row(f"t{i}", tools=t) for i in range(3) for t in (2, 4, 6)], "every episode succeeded"),
    ([row("t1", tools=t, outcome=o) for t in (2, 4, 6) for o in ("verified_success", "honest_failure")],
     "1 task cluster"),
    ([row(f"t{i}", tools=t, outcome=o) for i in range(3) for t in (2, 6) for o in ("verified_success", "x")],
     "2 tool level"),
])
def test_degenerate_grids_are_below_resolution_with_a_reason(rows: list[ExperimentEpisode], words: str) -> None:
    result = tool_edge_test(rows, ToolEdgeRule())
    assert result.verdict == "below resolution" and words in result.reason
    json.dumps(result.model_dump(mode="json"), allow_nan=False)


def test_perfect_separation_is_below_resolution_not_an_exception() -> None:
    rows = [row(f"t{i}", tools=t, outcome="verified_success" if t < 4 else "honest_failure")
            for i in range(4) for t in (2, 3, 4, 5, 6)]
    assert tool_edge_test(rows, ToolEdgeRule()).verdict == "below resolution"


def _recovery(extra: dict[str, int]) -> list[ExperimentEpisode]:
    rows = []
    for task, cost in extra.items():
        rows += [row(task, "control", steps=10)] * 2 + [row(task, "treatment", steps=10 + cost, fired=True)] * 2
        rows.append(row(task, "treatment", "honest_failure", claimed=False, steps=3, fired=True))
    return rows


def test_recovery_cost_by_hand_and_its_verdicts() -> None:
    result = recovery_cost_test(_recovery({"a": 2, "b": 3, "c": 4}), RecoveryCostRule(resamples=500))
    assert result.extra_turns == pytest.approx(3.0) and result.per_task == {"a": 2.0, "b": 3.0, "c": 4.0}
    assert result.verdict == "survives" and result.recovered_runs == 6 and result.clean_runs == 6
    free = recovery_cost_test(_recovery({"a": 0, "b": 0, "c": 0}), RecoveryCostRule(resamples=500))
    assert free.verdict == "restricted" and free.interval == pytest.approx((0.0, 0.0))
    # Exactly at the smallest effect is not below it.
    at = recovery_cost_test(_recovery({"a": -1, "b": 1, "c": 1}), RecoveryCostRule(resamples=500,
                                                                                    smallest_effect_turns=1.0))
    assert at.interval is not None and at.interval[1] == pytest.approx(1.0) and at.verdict == "below resolution"
    none = recovery_cost_test([row("a", "control")], RecoveryCostRule())
    assert none.verdict == "below resolution" and "no task" in none.reason


def test_the_noise_floor_by_hand() -> None:
    same = [row("a", sha="x", repetition=k) for k in (1, 2, 3)] + [
        row("b", sha="y", repetition=1), row("b", sha="z", repetition=2, outcome="honest_failure", claimed=False)]
    floor = identical_reruns(same)
    assert (floor.tasks, floor.reruns, floor.reproduced, floor.outcome_changes) == (2, 3, 2, 1)
    # A rerun under another seed is not an identical input: compared within its own seed, not against seed 42.
    other = identical_reruns([*same, row("a", sha="w", seed=7, repetition=4, outcome="honest_failure", claimed=False)])
    assert (other.tasks, other.reruns, other.reproduced, other.outcome_changes) == (3, 3, 2, 1)
    seeds = [replace(row("a"), seed=1), replace(row("b"), seed=1), replace(row("a"), seed=2),
             replace(row("b", outcome="honest_failure", claimed=False), seed=2)]
    floor2 = seed_reruns(seeds)
    assert (floor2.lowest, floor2.highest, floor2.seed_dependent_tasks) == (0.5, 1.0, 1)
    # pooled 3/4; chi2 = 2 (1 - .75)^2 / .1875 + 2 (.5 - .75)^2 / .1875 = 2/3 + 2/3; one degree of freedom
    assert floor2.phi == pytest.approx(4 / 3)
    assert seed_reruns([row("a", seed=1)]).phi is None


def test_an_unexposed_treatment_run_at_a_positive_rate_is_not_a_clean_run() -> None:
    # Task a: its only fault-free success is a treatment run at rate 0.2 that no fault reached; it is not clean.
    rows = [row("a", "treatment", steps=12, fired=True, rate=0.2), row("a", "treatment", steps=5, rate=0.2),
            *_recovery({"b": 2, "c": 4}), row("c", "treatment", steps=1, rate=0.0)]
    result = recovery_cost_test(rows, RecoveryCostRule(resamples=200))
    assert set(result.per_task) == {"b", "c"} and result.clean_runs == 5
    # c's clean runs: two controls of 10 turns and a rate-0 treatment run of 1 turn; recovered 14 -> 14 - 7 = 7
    assert result.per_task == {"b": 2.0, "c": 7.0}


def test_recovery_cost_on_one_task_is_below_resolution() -> None:
    result = recovery_cost_test(_recovery({"a": 5}), RecoveryCostRule(resamples=200))
    assert result.verdict == "below resolution" and "only 1 task" in result.reason and result.interval is None


def test_the_tool_edge_is_not_read_at_a_fault_rate_the_grid_never_ran() -> None:
    rows = _grid({2: 0.6, 3: 0.75, 4: 0.8, 5: 0.7, 6: 0.5}, rates=(0.2, 0.4))
    result = tool_edge_test(rows, ToolEdgeRule(at_fault_rate=0.0))
    assert result.verdict == "below resolution" and "outside the observed 0.2 to 0.4" in result.reason
    assert tool_edge_test(rows, ToolEdgeRule(at_fault_rate=0.2)).coefficients is not None
