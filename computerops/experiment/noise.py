"""The noise floor: how much the instrument itself varies, from reruns of one cell. It is reported beside the
intervals, never folded into them.

- Identical reruns (the same seed, the same fault draws): the share of reruns whose transcript (timings aside)
  is byte for byte the first rerun's of the same task and seed, and the tasks whose outcome changed although
  nothing did. Reruns are compared only within one task and one seed: rows of different seeds are never
  "identical" inputs, so they are never counted as failing to reproduce.
- Reruns with new seeds: each seed's cell success over the tasks, their range, the overdispersion phi and the tasks
  whose outcome depends on the seed. phi is Pearson's chi-square of the per-seed successes against the pooled
  rate, divided by its k − 1 degrees of freedom (k seeds): about 1 when seeds vary as binomial chance alone would,
  below 1 when they vary less, above when more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from computerops.experiment.rows import ExperimentEpisode


class IdenticalReruns(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int
    """(task, seed) groups of identical inputs; one per task in a planned noise floor."""
    reruns: int
    """Reruns compared: each group's reruns after its first."""
    reproduced: int
    reproduced_share: float | None
    outcome_changes: int
    """Groups whose outcome differs between identical reruns."""

    def table_rows(self) -> list[tuple[str, str]]:
        share = "n/a" if self.reproduced_share is None else f"{100 * self.reproduced_share:.0f}%"
        return [("identical reruns reproduced byte for byte", f"{self.reproduced}/{self.reruns} ({share})"),
                ("outcome changes with fixed seeds", f"{self.outcome_changes} of {self.tasks} tasks")]


class SeedReruns(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seeds: int
    tasks: int
    success_by_seed: dict[str, float]
    """Seed -> verified share of that seed's attempts."""
    lowest: float | None
    highest: float | None
    phi: float | None
    """None with fewer than 2 seeds or a pooled rate of 0 or 1 (no binomial variance to compare with)."""
    seed_dependent_tasks: int
    """Tasks verified under some seeds and not under others."""

    def table_rows(self) -> list[tuple[str, str]]:
        spread = ("n/a" if self.lowest is None or self.highest is None
                  else f"{100 * self.lowest:.0f}-{100 * self.highest:.0f}%")
        return [(f"cell success across {self.seeds} seeds", spread),
                ("phi (overdispersion)", "n/a" if self.phi is None else f"{self.phi:.2f}"),
                ("tasks whose outcome depends on the seed", f"{self.seed_dependent_tasks} of {self.tasks}")]


def identical_reruns(rows: Sequence[ExperimentEpisode]) -> IdenticalReruns:
    by_task: dict[tuple[str, int | None], list[ExperimentEpisode]] = defaultdict(list)
    for row in sorted((r for r in rows if not r.infrastructure), key=lambda r: (r.task_id, r.repetition)):
        by_task[(row.task_id, row.seed)].append(row)
    reruns = reproduced = changes = 0
    for members in by_task.values():
        first = members[0]
        reruns += len(members) - 1
        reproduced += sum(1 for r in members[1:] if r.transcript_sha256 is not None
                          and r.transcript_sha256 == first.transcript_sha256)
        changes += len({r.outcome for r in members}) > 1
    return IdenticalReruns(tasks=len(by_task), reruns=reruns, reproduced=reproduced,
                           reproduced_share=reproduced / reruns if reruns else None, outcome_changes=changes)


def seed_reruns(rows: Sequence[ExperimentEpisode]) -> SeedReruns:
    agent = [r for r in rows if not r.infrastructure]
    by_seed: dict[int | None, list[bool]] = defaultdict(list)
    by_task: dict[str, set[bool]] = defaultdict(set)
    for row in agent:
        by_seed[row.seed].append(row.verified)
        by_task[row.task_id].add(row.verified)
    rates = {str(seed): sum(v) / len(v) for seed, v in sorted(by_seed.items(), key=lambda kv: str(kv[0]))}
    total = sum(len(v) for v in by_seed.values())
    pooled = sum(sum(v) for v in by_seed.values()) / total if total else None
    phi = None
    if pooled is not None and 0 < pooled < 1 and len(by_seed) >= 2:
        chi2 = sum(len(v) * (sum(v) / len(v) - pooled) ** 2 for v in by_seed.values()) / (pooled * (1 - pooled))
        phi = chi2 / (len(by_seed) - 1)
    return SeedReruns(seeds=len(by_seed), tasks=len(by_task), success_by_seed=rates,
                      lowest=min(rates.values()) if rates else None, highest=max(rates.values()) if rates else None,
                      phi=phi, seed_dependent_tasks=sum(1 for v in by_task.values() if len(v) > 1))
