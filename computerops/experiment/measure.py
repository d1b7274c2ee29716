"""What the analysis costs at scale: the estimators timed on synthetic episode rows (`computerops experiment
measure`). The rows are drawn from a seeded model of a tool-ladder grid (success falling with the fault rate,
recovery costing turns), so every estimator has real work to do; no figure here is a result about any agent."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from computerops.experiment.estimates import paired_estimate, summarize_cells
from computerops.experiment.grid_tests import RecoveryCostRule, ToolEdgeRule, recovery_cost_test, tool_edge_test
from computerops.experiment.noise import identical_reruns, seed_reruns
from computerops.experiment.rows import Arm, ExperimentEpisode


def synthetic_rows(count: int, *, seed: int = 0, tasks: int = 100) -> list[ExperimentEpisode]:
    """`count` episodes over a 5-tools x 6-rates grid, `tasks` documents, both arms (control: no fault fires)."""
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        tools, rate = 2 + n % 5, (n // 5) % 6 / 10
        arm: Arm = "control" if n % 2 else "treatment"
        task = f"task-{rng.randrange(tasks):03d}"
        fired = arm == "treatment" and rng.random() < rate * 2
        success = rng.random() < 0.9 - rate - (0.1 if fired else 0.0)
        claimed = success or rng.random() < 0.3
        outcome = ("verified_success" if success else "false_completion" if claimed else "honest_failure")
        if rng.random() < 0.002:
            outcome = "infrastructure_failure"
        rows.append(ExperimentEpisode(
            episode_id=f"{n:06d}", task_id=task, cell=f"tools={tools},order=A,fault_rate={rate:g},model=m",
            arm=arm, repetition=1 + n // 60, pair=f"{task}:{n // 2}", model="scripted:synthetic", tools=tools,
            order="A", fault_rate=rate, seed=n % 7, outcome=outcome, claimed_success=claimed,
            false_completion_kind="state" if outcome == "false_completion" else None,
            steps=10 + rng.randrange(4) + (2 if fired else 0),
            faults_configured=("transient_5xx",) if arm == "treatment" and rate > 0 else (),
            faults_fired=("transient_5xx",) if fired else (), transcript_sha256=f"{rng.randrange(3)}",
        ))
    return rows


@dataclass(frozen=True)
class Timing:
    step: str
    seconds: float


def measure(count: int, *, resamples: int = 2000, seed: int = 0) -> list[Timing]:
    """Each analysis step on `count` synthetic rows, timed once (wall clock; a shared machine is noisy)."""
    rows = synthetic_rows(count, seed=seed)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("loading statsmodels (once per process)", lambda: __import__("statsmodels.api")),
        ("per-cell counts and Wilson intervals", lambda: summarize_cells(rows)),
        (f"paired estimates, {resamples} task-cluster resamples",
         lambda: [paired_estimate(rows, m, resamples=resamples, seed=seed)
                  for m in ("false_completion", "verified_success")]),
        ("test 1: clustered logistic regression", lambda: tool_edge_test(rows, ToolEdgeRule())),
        (f"test 2: recovery cost, {resamples} resamples",
         lambda: recovery_cost_test(rows, RecoveryCostRule(resamples=resamples, seed=seed))),
        ("noise floor", lambda: (identical_reruns(rows), seed_reruns(rows))),
    ]
    timings = []
    for name, step in steps:
        started = time.perf_counter()
        step()
        timings.append(Timing(step=name, seconds=time.perf_counter() - started))
    return timings
