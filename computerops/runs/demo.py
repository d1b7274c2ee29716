"""`computerops demo`: what it runs, planned once (the CLI carries it out and console.py prints it).

A hash-locked subset of the catalog (DEMO_SUBSET_SIZE tasks, seed DEMO_SUBSET_SEED, written beside the run), each
task under the SCRIPTED policies DEMO_POLICIES, plus the first negative control of each kind in DEMO_NEGATIVE_KINDS
among the subset's feasible tasks, so the outcome table shows every kind of false completion.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from computerops.catalog.subsets import ReservedSubset, load_subset, reserve_subset, subset_tasks, write_subset
from computerops.core.vocabulary import SCRIPTED_PREFIX
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, RunConfig, SubsetRef, parse_endpoint, plan_episodes
from tasks import LoadedTask
from tasks.catalog import Catalog

DEMO_POLICIES = ("oracle", "false-finish", "give-up", "loop", "malformed")
DEMO_SUBSET_SIZE = 10
DEMO_SUBSET_SEED = 2026
DEMO_NEGATIVE_KINDS = ("bypass-procedure", "unrelated-write")
"""One negative control of each kind runs too, so the demo table shows procedure-only and forbidden-mutation false
completions beside the policies' state ones."""


@dataclass(frozen=True)
class DemoPlan:
    """Everything the demo will run and where it writes, fixed before the first episode."""

    target: Path
    check_dir: Path
    subset_file: Path
    subset: ReservedSubset
    tasks: list[LoadedTask]
    negatives: list[tuple[str, str]]
    """(task id, policy) of the negative controls that run besides the policies."""
    config: RunConfig


def default_target(now: dt.datetime | None = None) -> Path:
    return Path("runs") / f"demo-{(now or dt.datetime.now(dt.UTC)).strftime('%Y%m%dT%H%M%S')}"


def plan_demo(target: Path, catalog: Catalog) -> DemoPlan:
    """Reserve and write the subset (refusing a target or check directory that holds anything: BundleError) and
    plan the run; a subset whose tasks cannot be read is a SubsetError."""
    check_dir = target.with_name(f"{target.name}-tasks-check")
    subset_file = target.with_name(f"{target.name}-subset.json")
    RunDirectory.ensure_new(target)
    RunDirectory.ensure_new(check_dir)
    subset = reserve_subset(catalog, min(DEMO_SUBSET_SIZE, len(catalog)), DEMO_SUBSET_SEED)
    write_subset(subset_file, subset)
    written = load_subset(subset_file)  # the run is planned from the file, as `run --tasks FILE` would be
    selected = subset_tasks(written, catalog, subset_file)
    ref = SubsetRef(file=str(subset_file), lock_sha256=written.lock_sha256, seed=written.seed, count=written.count)
    negatives = demo_negatives(selected)
    endpoint = parse_endpoint(SCRIPTED_PREFIX + ",".join([*DEMO_POLICIES, *(p for _, p in negatives)]),
                              base_url=None, model=None, api_key_env=None)
    task_ids = [t.id for t in selected]
    base = EndpointConfig(kind="scripted", policies=list(DEMO_POLICIES))
    config = RunConfig(run_id=target.name, tasks=task_ids, subset=ref, endpoint=endpoint,
                       episodes=plan_episodes(task_ids, base, extra=negatives))
    return DemoPlan(target=target, check_dir=check_dir, subset_file=subset_file, subset=written, tasks=selected,
                    negatives=negatives, config=config)


def demo_negatives(tasks: list[LoadedTask]) -> list[tuple[str, str]]:
    """(task id, policy) for the first negative control of each kind in DEMO_NEGATIVE_KINDS among the feasible
    tasks, in id order: the demo table then also shows procedure-only and forbidden-mutation false completions
    (a negative of an infeasible task ends in an honest refusal, not a false completion)."""
    chosen = []
    # Read-and-answer tasks first: their procedure bypass (answering without looking) changes nothing, so it
    # shows a procedure-only false completion rather than a forbidden mutation.
    feasible = sorted((t for t in tasks if t.spec.feasible), key=lambda t: (t.spec.family != "read-and-answer", t.id))
    for kind in DEMO_NEGATIVE_KINDS:
        found = next(((t.id, f"negative:{n.id}") for t in feasible for n in t.spec.negative_controls
                      if n.kind == kind), None)
        if found:
            chosen.append(found)
    return chosen


DEMO_PHASES = ("the run, verified and replayed", "tasks check of the subset")
"""The demo's two phases as it prints their durations (README.md gives them as measured)."""


def demo_clock() -> float:
    """The clock the demo's phases are timed on (wall time, monotonic)."""
    return time.monotonic()


@dataclass
class PhaseTimes:
    """How long each phase of the demo took, in seconds, in the order they ran."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase `name` (recorded also when it raises: the demo stops, and says how long it ran)."""
        began = demo_clock()
        try:
            yield
        finally:
            self.seconds[name] = demo_clock() - began

    @property
    def total(self) -> float:
        return sum(self.seconds.values())
