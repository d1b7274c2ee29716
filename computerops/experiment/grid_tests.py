"""The map study's two pre-registered grid tests, with verdicts assigned by frozen rules: **survives** (the
prediction held), **restricted** (it failed by more than the smallest effect worth reporting) or **below
resolution** (the data cannot tell). A test that cannot be computed is below resolution with its reason; none
raises. Results carry the rule in words with its numbers filled in, as reports quote it.

Test 1, upper tool edge: one logistic regression of verified success on tools, tools² and fault rate (statsmodels
GLM, binomial family, cluster-robust covariance by task, with statsmodels' small-sample factor). Intervals use
Student's t with (task clusters − 1) degrees of freedom, not the normal: with ten clusters the normal's intervals
are too short and a flat grid "survives" more often than the stated confidence allows. With p(t) the fitted success
at `at_fault_rate`, the *drop* is p(t*) − p(hi), t* the rung in [lo, hi) with the highest fitted success, with a
delta-method interval (t* held at its estimate). The peak −b1/(2 b2) gets Fieller's interval: the tool counts t
whose slope b1 + 2 b2 t is not distinguishable from 0 (it may be unbounded, e.g. [4.5, ∞] for a curve still rising
at `hi`).
- Survives: the curve bends down (b2 < 0), its peak lies inside [lo, hi], and the drop's interval lies above 0.
- Restricted, otherwise, when the data rule the edge out: the curve is shown not to bend down (b2's interval above
  0), or the peak is shown outside [lo, hi] (Fieller's interval misses the range: the curve is monotone there), or
  a drop of `smallest_drop` at hi tools is ruled out (the drop's interval below it).
- Below resolution, otherwise.

Test 2, recovery cost: *recovered* runs are treatment episodes where a fault fired and the outcome is verified
success; *clean* runs are verified successes of the same task where no fault fired, in the control arm or a
fault-rate-0 cell (an unexposed treatment run at a positive rate is not clean: the runs no fault reached are the
shorter ones). Per task with both, the mean turns of its recovered runs minus those of its clean runs; the
estimate is the equally weighted mean over tasks, with a task-cluster bootstrap interval. Survives: the
interval's lower end is above 0 (recovering costs turns, by more than chance). Restricted: otherwise, when its upper
end is below `smallest_effect_turns`. Below resolution: otherwise, or when fewer than 2 tasks have both kinds of run.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from computerops.core.stats import bootstrap_mean
from computerops.experiment.rows import ExperimentEpisode

Verdict = Literal["survives", "restricted", "below resolution"]


def _t(confidence: float, df: int) -> float:
    """The two-sided `confidence` quantile of Student's t with `df` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, df))


def fieller_interval(b1: float, b2: float, v11: float, v12: float, v22: float,
                     q: float) -> tuple[float, float, bool]:
    """Fieller's confidence set for the stationary point θ = −b1/(2 b2) of b1 t + b2 t²: the θ where
    (b1 + 2θ b2)² ≤ q² Var(b1 + 2θ b2). Returns (low, high, inside): the set is [low, high] when `inside`, else
    (−∞, low] ∪ [high, ∞); (−∞, ∞) is returned as (−inf, inf, True). Bounds may be infinite."""
    a = 4 * (b2 * b2 - q * q * v22)
    b = 4 * (b1 * b2 - q * q * v12)
    c = b1 * b1 - q * q * v11
    disc = b * b - 4 * a * c
    if a > 0 and disc >= 0:  # b2 is distinguishable from 0: a bounded interval
        root = math.sqrt(disc)
        return (-b - root) / (2 * a), (-b + root) / (2 * a), True
    if a < 0 and disc > 0:  # two rays: the peak is not located on one side
        root = math.sqrt(disc)
        low, high = sorted(((-b + root) / (2 * a), (-b - root) / (2 * a)))
        return low, high, False
    if a == 0 and b != 0:  # the boundary case: one ray
        root = -c / b
        return (root, math.inf, True) if b < 0 else (-math.inf, root, True)
    return -math.inf, math.inf, True


def _slope_nonzero_on(b1: float, b2: float, v11: float, v12: float, v22: float, q: float, lo: float,
                      hi: float) -> bool:
    """Whether the slope b1 + 2 b2 t is distinguishable from 0 at every t in [lo, hi], i.e. Fieller's set for the
    stationary point misses the range: the quadratic f(t) = (b1 + 2 b2 t)² − q² Var(b1 + 2 b2 t) is > 0 on it."""
    a = 4 * (b2 * b2 - q * q * v22)
    b = 4 * (b1 * b2 - q * q * v12)
    c = b1 * b1 - q * q * v11

    def f(t: float) -> float:
        return a * t * t + b * t + c

    points = [lo, hi] + ([-b / (2 * a)] if a > 0 and lo < -b / (2 * a) < hi else [])
    return min(f(t) for t in points) > 0


_NUMERICAL_ZERO = 1e-9
"""Log-odds coefficients below this are rounding error (a real tool effect is orders of magnitude larger)."""


def _points(value: float) -> str:
    """A proportion in whole percentage points, never "-0"."""
    return f"{round(100 * value) + 0:d}"


def _bound(value: float) -> str:
    return "∞" if value == math.inf else "-∞" if value == -math.inf else f"{value:.1f}"


class ToolEdgeRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    smallest_drop: float = Field(default=0.15, gt=0.0, lt=1.0)
    """The smallest drop in success (a proportion) from the peak to `hi` tools worth reporting."""
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    at_fault_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    lo: int = Field(default=2, ge=1)
    hi: int = Field(default=6, ge=2)

    def text(self) -> str:
        points = f"{100 * self.smallest_drop:g} points"
        return (f"one logistic regression of verified success on tools, tools squared and fault rate, errors "
                f"clustered by task; at fault rate {self.at_fault_rate:g}: survives when the curve bends down, its "
                f"peak lies inside {self.lo} to {self.hi} tools and success at the best rung below {self.hi} is above "
                f"success at {self.hi} tools by more than chance ({100 * self.confidence:g}% interval above 0); "
                f"restricted, otherwise, when a drop of {points} or more at {self.hi} tools is ruled out (the "
                f"interval's upper end below {points}), or the curve is shown not to bend down or to have no peak "
                f"inside {self.lo} to {self.hi} tools; below resolution otherwise; intervals use Student's t with "
                f"task clusters minus 1 degrees of freedom")


class RecoveryCostRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    smallest_effect_turns: float = Field(default=1.0, gt=0.0)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    resamples: int = Field(default=2000, ge=100)
    seed: int = 0

    def text(self) -> str:
        return (f"runs that recovered from an injected failure against the same task's verified runs with no "
                f"fault fired in the control arm or at fault rate 0 (turns, "
                f"the task-level mean, a {self.resamples}-resample task bootstrap with seed {self.seed}): survives "
                f"when they took more turns by more than chance ({100 * self.confidence:g}% interval above 0); "
                f"restricted, otherwise, when any extra cost is shown below {self.smallest_effect_turns:g} turn(s) "
                f"(the interval's upper end below it); below resolution otherwise, or with fewer than 2 such tasks")


class ToolEdgeResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    reason: str
    rule_text: str
    episodes: int
    clusters: int
    coefficients: dict[str, float] | None = None
    """intercept, tools, tools_squared, fault_rate (log-odds)."""
    standard_errors: dict[str, float] | None = None
    """Cluster-robust, by task."""
    peak_tools: float | None = None
    """−b1/(2 b2) when the curve bends down (b2 < 0), else None."""
    peak_interval: tuple[float | None, float | None] | None = None
    """Fieller's interval for the peak when it is one interval; None for an end is unbounded (JSON has no ∞). None
    when the set is two rays or the curve does not bend down."""
    degrees_of_freedom: int | None = None
    """Of the t quantile: task clusters − 1."""
    best_rung: int | None = None
    success_at_best: float | None = None
    success_at_hi: float | None = None
    drop: float | None = None
    drop_interval: tuple[float, float] | None = None


class RecoveryCostResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    reason: str
    rule_text: str
    tasks: int
    """Tasks with both recovered and clean runs."""
    recovered_runs: int
    clean_runs: int
    extra_turns: float | None = None
    interval: tuple[float, float] | None = None
    per_task: dict[str, float] = Field(default_factory=dict)


def _below(rule_text: str, reason: str, episodes: int, clusters: int) -> ToolEdgeResult:
    return ToolEdgeResult(verdict="below resolution", reason=reason, rule_text=rule_text, episodes=episodes,
                          clusters=clusters)


def tool_edge_test(rows: Sequence[ExperimentEpisode], rule: ToolEdgeRule) -> ToolEdgeResult:
    """Test 1 on `rows` (one model's, one tool order's); infrastructure failures left out."""
    import numpy as np
    import statsmodels.api as sm

    text = rule.text()
    data = [r for r in rows if not r.infrastructure and r.tools is not None]
    tasks = sorted({r.task_id for r in data})
    n, k = len(data), len(tasks)
    if k < 2:
        return _below(text, f"{k} task cluster(s): clustered errors need at least 2", n, k)
    levels = sorted({r.tools for r in data if r.tools is not None})
    if len(levels) < 3:
        return _below(text, f"{len(levels)} tool level(s): a curve with a bend needs at least 3", n, k)
    y = np.array([1.0 if r.verified else 0.0 for r in data])
    if y.min() == y.max():
        return _below(text, f"every episode {'succeeded' if y[0] else 'failed'}: the regression has nothing to fit",
                      n, k)
    tools = np.array([float(r.tools or 0) for r in data])
    design = np.column_stack([np.ones(n), tools, tools ** 2, np.array([r.fault_rate for r in data])])
    rates = sorted({r.fault_rate for r in data})
    if not rates[0] <= rule.at_fault_rate <= rates[-1]:
        return _below(text, f"the rule reads the curve at fault rate {rule.at_fault_rate:g}, outside the observed "
                            f"{rates[0]:g} to {rates[-1]:g}", n, k)
    if len(rates) < 2:
        design = design[:, :3]  # one fault rate: its coefficient is not identified (it is the intercept's)
    cluster = {task: index for index, task in enumerate(tasks)}
    groups = np.array([cluster[r.task_id] for r in data])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = sm.GLM(y, design, family=sm.families.Binomial()).fit(cov_type="cluster",
                                                                      cov_kwds={"groups": groups})
        beta = np.asarray(fit.params, dtype=float)
        cov = np.asarray(fit.cov_params(), dtype=float)
    except Exception as exc:  # perfect separation, a singular design: the data cannot tell
        return _below(text, f"the regression could not be fitted ({type(exc).__name__}: {exc})", n, k)
    if not (np.all(np.isfinite(beta)) and np.all(np.isfinite(cov))) or np.any(np.abs(beta) > 50):
        return _below(text, "the regression did not converge to finite coefficients (separated data)", n, k)
    # Coefficients and covariances at rounding-error size are zeros: a grid whose outcomes never vary with the tool
    # count fits b1 = b2 = 0 up to 1e-15, and a "peak" of two such numbers is noise, not a finding.
    beta = np.where(np.abs(beta) < _NUMERICAL_ZERO, 0.0, beta)
    cov = np.where(np.abs(cov) < _NUMERICAL_ZERO, 0.0, cov)
    names = ["intercept", "tools", "tools_squared", "fault_rate"][:len(beta)]
    coefficients = {name: float(b) for name, b in zip(names, beta, strict=True)}
    errors = {name: float(math.sqrt(max(cov[i, i], 0.0))) for i, name in enumerate(names)}
    b1, b2 = beta[1], beta[2]

    def features(t: float) -> np.ndarray:
        row = [1.0, t, t * t] + ([rule.at_fault_rate] if len(beta) == 4 else [])
        return np.array(row)

    def success(t: float) -> float:
        return float(1 / (1 + math.exp(-float(features(t) @ beta))))

    rungs = [t for t in levels if rule.lo <= t < rule.hi]
    if not rungs or rule.hi not in levels:
        return _below(text, f"the grid does not hold rungs below {rule.hi} and at {rule.hi} tools", n, k)
    best = max(rungs, key=success)
    p_best, p_hi = success(best), success(rule.hi)
    gradient = p_best * (1 - p_best) * features(best) - p_hi * (1 - p_hi) * features(rule.hi)
    q = _t(rule.confidence, k - 1)
    half = q * math.sqrt(max(float(gradient @ cov @ gradient), 0.0))
    drop = p_best - p_hi
    low, high = drop - half, drop + half
    v11, v12, v22 = float(cov[1, 1]), float(cov[1, 2]), float(cov[2, 2])
    peak = float(-b1 / (2 * b2)) if b2 < 0 else None
    peak_interval: tuple[float | None, float | None] | None = None
    peak_words = ", no downward bend"
    if peak is not None:
        p_low, p_high, one = fieller_interval(float(b1), float(b2), v11, v12, v22, q)
        if one:
            peak_interval = (p_low if math.isfinite(p_low) else None, p_high if math.isfinite(p_high) else None)
            peak_words = f", peak {peak:.1f} tools [{_bound(p_low)}, {_bound(p_high)}]"
        else:
            peak_words = f", peak {peak:.1f} tools [-∞, {_bound(p_low)}] ∪ [{_bound(p_high)}, ∞]"
    common = {"rule_text": text, "episodes": n, "clusters": k, "coefficients": coefficients,
              "standard_errors": errors, "peak_tools": peak, "peak_interval": peak_interval,
              "degrees_of_freedom": k - 1, "best_rung": best, "success_at_best": p_best, "success_at_hi": p_hi,
              "drop": drop, "drop_interval": (low, high)}
    rounded = round(100 * drop) + 0
    numbers = (f"drop {rounded:+d} points [{_points(low)}, {_points(high)}] from {best} to {rule.hi} tools"
               + peak_words)
    if errors["tools"] == 0 and errors["tools_squared"] == 0:
        numbers += " (no task's outcomes varied with the tool count)"
    if peak is not None and rule.lo <= peak <= rule.hi and low > 0:
        return ToolEdgeResult(verdict="survives", reason=f"{numbers}: an upper tool edge", **common)
    ruled_out = []
    if b2 - q * errors["tools_squared"] > 0:
        ruled_out.append("the curve bends up, by more than chance")
    if _slope_nonzero_on(float(b1), float(b2), v11, v12, v22, q, rule.lo, rule.hi):
        ruled_out.append(f"the curve is monotone from {rule.lo} to {rule.hi} tools, by more than chance (no peak "
                         "inside)")
    if high < rule.smallest_drop:
        ruled_out.append(f"a drop of {100 * rule.smallest_drop:g} points or more is ruled out")
    if ruled_out:
        return ToolEdgeResult(verdict="restricted", reason=f"{numbers}: {'; '.join(ruled_out)}", **common)
    return ToolEdgeResult(verdict="below resolution", reason=f"{numbers}: the data cannot tell", **common)


def recovery_cost_test(rows: Sequence[ExperimentEpisode], rule: RecoveryCostRule) -> RecoveryCostResult:
    """Test 2 on `rows` (one model's); infrastructure failures left out."""
    text = rule.text()
    recovered: dict[str, list[int]] = defaultdict(list)
    clean: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        if not row.verified:
            continue
        if row.arm == "treatment" and row.exposed:
            recovered[row.task_id].append(row.steps)
        elif not row.exposed and (row.arm == "control" or row.fault_rate == 0):
            clean[row.task_id].append(row.steps)
    both = sorted(set(recovered) & set(clean))
    per_task = {t: sum(recovered[t]) / len(recovered[t]) - sum(clean[t]) / len(clean[t]) for t in both}
    counts = {"rule_text": text, "tasks": len(both), "recovered_runs": sum(len(v) for v in recovered.values()),
              "clean_runs": sum(len(v) for v in clean.values()), "per_task": per_task}
    if len(both) < 2:
        # one task's difference resamples to itself: a zero-width interval would decide on a single task
        which = "no task has" if not both else "only 1 task has"
        return RecoveryCostResult(verdict="below resolution", reason=f"{which} both a run that recovered from an "
                                  "injected failure and a clean run", **counts)
    values = [per_task[t] for t in both]
    estimate = sum(values) / len(values)
    interval = bootstrap_mean(values, resamples=rule.resamples, seed=rule.seed, confidence=rule.confidence)
    assert interval is not None
    low, high = interval
    numbers = f"{estimate:+.1f} turns [{low:.1f}, {high:.1f}] over {len(both)} tasks"
    if low > 0:
        verdict: Verdict = "survives"
        reason = f"{numbers}: recovering costs turns, by more than chance"
    elif high < rule.smallest_effect_turns:
        verdict, reason = "restricted", f"{numbers}: any extra cost is below {rule.smallest_effect_turns:g} turn(s)"
    else:
        verdict, reason = "below resolution", f"{numbers}: the data cannot tell"
    return RecoveryCostResult(verdict=verdict, reason=reason, extra_turns=estimate, interval=interval, **counts)
