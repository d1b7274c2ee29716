"""`computerops compare A B`: two runs task by task — which episodes changed outcome, and why (the first named check
whose result differs, else what the agent claimed).

Episodes are matched by task and by their order among the run's episodes of that task (the first episode of a task
in A with the first in B, and so on), so two runs of one reserved subset against two endpoints, or one endpoint
twice, line up. A task whose file hash differs between the runs is not compared (its checks may not be the same
checks): it is listed as changed. Episodes without a partner are listed as only in A or only in B. Read from the
records and verdicts as the runs sealed them; evidence that does not match its run's checksums is refused
(`export.exported_episodes`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from computerops.core.formats import Versioned
from computerops.report.tables import Table, columns
from computerops.runs.bundle import RunDirectory
from computerops.runs.export import ExportedEpisode, exported_episodes

COMPARISON_FORMAT: Literal["computerops.comparison/1"] = "computerops.comparison/1"
Change = Literal["same", "changed", "task_changed", "only_in_a", "only_in_b"]


class ComparedEpisode(BaseModel):
    """One task's n-th episode in each run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    occurrence: int
    """Which of the run's episodes of this task (from 1, in record order)."""
    a: str | None
    """The episode id in A (None: A has no such episode)."""
    b: str | None
    outcome_a: str | None
    outcome_b: str | None
    change: Change
    why: str | None = None
    """For a changed outcome: the first named check whose result differs (`name: passed in A, failed in B`), else
    the claims; for a changed task: its two hashes."""


class RunComparison(Versioned):
    """Two runs compared task by task (`compare --json`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.comparison/1"] = COMPARISON_FORMAT

    run_a: str
    run_b: str
    episodes: list[ComparedEpisode] = Field(default_factory=list)

    def count(self, change: Change) -> int:
        return sum(e.change == change for e in self.episodes)


def _why(a: ExportedEpisode, b: ExportedEpisode) -> str:
    results_b = {check.name: check.passed for check in b.verdict.checks}
    for check in a.verdict.checks:
        other = results_b.get(check.name)
        if other is not None and other != check.passed:
            said = {True: "passed", False: "failed"}
            return f"{check.name}: {said[check.passed]} in A, {said[other]} in B"
    only = sorted({c.name for c in a.verdict.checks} ^ set(results_b))
    if only:
        return f"checks in one run only: {', '.join(only)}"
    claims = {True: "claimed success", False: "claimed failure", None: "did not finish"}
    return f"A {claims[a.record.claim.success]}, B {claims[b.record.claim.success]}"


def _by_task(episodes: list[ExportedEpisode]) -> dict[str, list[ExportedEpisode]]:
    found: dict[str, list[ExportedEpisode]] = defaultdict(list)
    for episode in episodes:
        found[episode.record.task_id].append(episode)
    return found


def compare_runs(run_a: RunDirectory, run_b: RunDirectory) -> RunComparison:
    """The two runs' episodes matched task by task (BundleError for evidence that does not match its checksums)."""
    return compare_episodes(run_a.manifest().config.run_id, exported_episodes(run_a),
                            run_b.manifest().config.run_id, exported_episodes(run_b))


def compare_episodes(run_a: str, episodes_a: list[ExportedEpisode], run_b: str,
                     episodes_b: list[ExportedEpisode]) -> RunComparison:
    """Two runs' episodes (in record order) matched task by task."""
    in_a, in_b = _by_task(episodes_a), _by_task(episodes_b)
    rows: list[ComparedEpisode] = []
    for task_id in sorted(set(in_a) | set(in_b)):
        left, right = in_a.get(task_id, []), in_b.get(task_id, [])
        for n in range(max(len(left), len(right))):
            a = left[n] if n < len(left) else None
            b = right[n] if n < len(right) else None
            change: Change
            why = None
            if a is None or b is None:
                change = "only_in_a" if b is None else "only_in_b"
            elif a.record.task_sha256 != b.record.task_sha256:
                change = "task_changed"
                why = f"task file {a.record.task_sha256[:12]} in A, {b.record.task_sha256[:12]} in B"
            elif a.record.outcome == b.record.outcome:
                change = "same"
            else:
                change, why = "changed", _why(a, b)
            rows.append(ComparedEpisode(
                task_id=task_id, occurrence=n + 1, a=None if a is None else a.record.episode_id,
                b=None if b is None else b.record.episode_id,
                outcome_a=None if a is None else a.record.outcome, outcome_b=None if b is None else b.record.outcome,
                change=change, why=why))
    return RunComparison(run_a=run_a, run_b=run_b, episodes=rows)


def comparison_table(comparison: RunComparison) -> Table:
    """The episodes whose outcome or task changed, or that one run lacks (the same ones are counted in the caption)."""
    shown = [e for e in comparison.episodes if e.change != "same"]
    return Table(
        id="comparison", title=f"{comparison.run_a} (A) against {comparison.run_b} (B): what changed",
        columns=columns("task", "#", "A", "B", "change", "why", labels=2),
        rows=tuple((e.task_id, str(e.occurrence), e.outcome_a or "-", e.outcome_b or "-", e.change, e.why or "")
                   for e in shown),
        caption=(f"{comparison.count('same')} episodes with the same outcome, {comparison.count('changed')} changed, "
                 f"{comparison.count('task_changed')} of a changed task (not compared), "
                 f"{comparison.count('only_in_a')} only in A, {comparison.count('only_in_b')} only in B. Episodes "
                 "are matched by task and their order among the run's episodes of that task."))
