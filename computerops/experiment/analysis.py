"""An experiment's analysis, from its run directory's raw evidence only: what its frozen plan asks for, nothing more.

Per cell and arm the counts with Wilson intervals; the paired estimates (treatment minus control per task, their
equally weighted mean and a task-cluster bootstrap interval); the grid's tests with verdicts assigned by their
frozen rules; the quality gate; the descriptive reports the plan names (security, persistence, serving), which decide
nothing; and what is missing. The run seals this as `experiment.json`; `computerops verify` recomputes it and
compares. Infrastructure failures are kept out of every rate and listed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from computerops.core.formats import Versioned
from computerops.experiment.collect import ExperimentRun
from computerops.experiment.estimates import CellSummary, PairedEstimate, paired_estimate, summarize_cells
from computerops.experiment.gate import Gate, evaluate_gate
from computerops.experiment.grid_tests import RecoveryCostResult, ToolEdgeResult, recovery_cost_test, tool_edge_test
from computerops.experiment.noise import IdenticalReruns, SeedReruns, identical_reruns, seed_reruns
from computerops.experiment.plan import NOISE_IDENTICAL, NOISE_SEEDS
from computerops.experiment.rows import ARMS, Arm, ExperimentEpisode
from computerops.experiment.spec import RecoveryCostTest, ToolEdgeTest
from computerops.report.persistence import PersistenceRow, persistence_report
from computerops.report.security import SecurityReport, security_report
from computerops.report.serving import ServingRow, serving_report
from computerops.runs.records import EpisodeRecord

ANALYSIS_FORMAT: Literal["computerops.experiment_analysis/1"] = "computerops.experiment_analysis/1"


class TestVerdict(BaseModel):
    """One pre-registered test for one model: its verdict by the frozen rule, with the rule quoted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: Literal["tool_edge", "recovery_cost"]
    model: str
    order: str | None
    """The tool order whose episodes decided it (None: all)."""
    tool_edge: ToolEdgeResult | None = None
    recovery_cost: RecoveryCostResult | None = None

    @property
    def verdict(self) -> str:
        result = self.tool_edge or self.recovery_cost
        assert result is not None
        return result.verdict


class Missing(BaseModel):
    """What the plan has that the run does not: nothing expands the sample; a gap is reported, not filled."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planned: int
    admitted: int
    """Episodes with an agent outcome."""
    not_run: list[str]
    """Planned episodes with no record (stopped early or interrupted)."""
    infrastructure_failures: list[str]
    """Episodes whose latest outcome is an infrastructure failure: out of every rate, listed here."""

    @property
    def complete(self) -> bool:
        return not self.not_run and not self.infrastructure_failures


class NoiseFloor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cell: str
    identical: IdenticalReruns
    new_seeds: SeedReruns


class PersistenceCell(BaseModel):
    """One cell and arm of a persistence experiment: its long-running episodes' figures (descriptive: no frozen rule
    decides on them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell: str
    arm: Arm
    rows: list[PersistenceRow]
    """`computerops.report.persistence`'s rows for the cell's episodes in this arm: one per endpoint, persistence arm
    and policy (the compaction policy of a compacted episode, else the recovery policy; one row, as the cell fixes
    all three); none when every episode was an infrastructure failure or has not run."""


class ServingCell(BaseModel):
    """One cell and arm of a serving experiment: its episodes' serving figures by path (descriptive: no frozen rule
    decides on them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell: str
    arm: Arm
    rows: list[ServingRow]
    """`computerops.report.serving`'s rows for the cell's episodes in this arm: one per policy path they took (the
    cell fixes the endpoint and the serving arm), never averaged across paths; none when every episode was an
    infrastructure failure."""


class ExperimentAnalysis(Versioned):
    """experiment.json: every number of an experiment's report."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.experiment_analysis/1"] = ANALYSIS_FORMAT

    experiment: str
    version: int
    question: str
    series: Literal["experiment", "noise_floor"]
    lock_sha256: str
    scripted: bool
    """Every reply came from a scripted policy, not a language model."""
    missing: Missing
    cells: list[CellSummary] = Field(default_factory=list)
    paired: list[PairedEstimate] = Field(default_factory=list)
    primary: str
    """The plan's primary estimate, in its words."""
    tests: list[TestVerdict] = Field(default_factory=list)
    gate: Gate | None = None
    noise_floor: NoiseFloor | None = None
    security: SecurityReport | None = Field(default=None, exclude_if=lambda value: value is None)
    """The attacked tasks' figures per model and broker mode, when the plan asks for them (`security`)."""
    persistence: list[PersistenceCell] | None = Field(default=None, exclude_if=lambda value: value is None)
    """The long-running episodes' figures per cell and arm, when the plan asks for them (`persistence`)."""
    serving: list[ServingCell] | None = Field(default=None, exclude_if=lambda value: value is None)
    """The serving episodes' figures by path per cell and arm, when the plan asks for them (`serving`)."""


def _tests(run: ExperimentRun, rows: list[ExperimentEpisode]) -> list[TestVerdict]:
    verdicts = []
    for test in run.lock.spec.analysis.tests:
        for model in sorted({r.model for r in rows}):
            decided = [r for r in rows if r.model == model and (test.order is None or r.order == test.order)]
            if isinstance(test, ToolEdgeTest):
                verdicts.append(TestVerdict(name=test.name, kind="tool_edge", model=model, order=test.order,
                                            tool_edge=tool_edge_test(decided, test.rule)))
            elif isinstance(test, RecoveryCostTest):
                verdicts.append(TestVerdict(name=test.name, kind="recovery_cost", model=model, order=test.order,
                                            recovery_cost=recovery_cost_test(decided, test.rule)))
    return verdicts


def _cell_records(run: ExperimentRun) -> dict[tuple[str, Arm], list[EpisodeRecord]]:
    """Each (cell, arm) of the plan, cells in plan order and arms control first, with its episodes' records."""
    planned = {p.episode_id: p for p in run.plan}
    groups: dict[tuple[str, Arm], list[EpisodeRecord]] = {}
    for p in run.plan:
        if p.cell is not None and p.arm is not None:
            groups.setdefault((p.cell, p.arm), [])
    for record in run.records:
        p = planned[record.episode_id]
        if p.cell is not None and p.arm is not None:
            groups[(p.cell, p.arm)].append(record)
    return {(cell, arm): groups[(cell, arm)] for cell in dict.fromkeys(cell for cell, _ in groups)
            for arm in ARMS if (cell, arm) in groups}


def persistence_cells(run: ExperimentRun) -> list[PersistenceCell]:
    """Per cell (in plan order) and arm (control first), the persistence figures of its episodes: retention of each
    ledger over the arm's boundaries (resumes and compactions), duplicate effects, unfinished work left, recovery
    turns. Every cell and arm of the plan has its entry, with no rows where no episode of it has figures."""
    cells = []
    for (cell, arm), records in _cell_records(run).items():
        report = persistence_report(records)
        cells.append(PersistenceCell(cell=cell, arm=arm, rows=[] if report is None else report.rows))
    return cells


def serving_cells(run: ExperimentRun) -> list[ServingCell]:
    """Per cell (in plan order) and arm (control first), the serving figures of its episodes by policy path:
    verified success, whether the serving contract held and what broke it, model time and tokens."""
    cells = []
    for (cell, arm), records in _cell_records(run).items():
        report = serving_report(records)
        cells.append(ServingCell(cell=cell, arm=arm, rows=[] if report is None else report.rows))
    return cells


def analyse(run: ExperimentRun) -> ExperimentAnalysis:
    """The experiment's analysis, as its frozen plan asks for it."""
    spec = run.lock.spec
    plan = spec.analysis
    manifest = run.bundle.manifest()
    experiment = manifest.config.experiment
    assert experiment is not None
    admitted = {r.episode_id for r in run.rows}
    missing = Missing(planned=len(run.plan), admitted=sum(1 for r in run.rows if not r.infrastructure),
                      not_run=[p.episode_id for p in run.plan if p.episode_id not in admitted],
                      infrastructure_failures=[r.episode_id for r in run.rows if r.infrastructure])
    common = {"experiment": spec.id, "version": spec.version, "question": spec.question, "series": experiment.series,
              "lock_sha256": run.lock.lock_sha256, "scripted": manifest.scripted, "missing": missing}
    if experiment.series == "noise_floor":
        same = [r for r in run.rows if r.pair == NOISE_IDENTICAL]
        seeds = [r for r in run.rows if r.pair == NOISE_SEEDS]
        cell = run.plan[0].cell or ""
        return ExperimentAnalysis(**common, primary="noise floor of one cell", cells=summarize_cells(run.rows),
                                  noise_floor=NoiseFloor(cell=cell, identical=identical_reruns(same),
                                                         new_seeds=seed_reruns(seeds)))
    intervals = plan.intervals
    paired: list[PairedEstimate] = []
    if "control" in spec.arms and "treatment" in spec.arms:
        for measure in ("false_completion", "verified_success"):
            paired.append(paired_estimate(run.rows, measure, resamples=intervals.resamples, seed=intervals.seed,
                                          confidence=intervals.confidence))
    primary = {"paired_false_completion": "treatment minus control false completion: the equally weighted "
                                          "task-level mean, with a task-cluster bootstrap interval",
               "paired_verified_success": "treatment minus control verified success: the equally weighted "
                                          "task-level mean, with a task-cluster bootstrap interval",
               "grid": "the grid's pre-registered tests, one verdict per model"}[plan.primary]
    return ExperimentAnalysis(**common, primary=primary, cells=summarize_cells(run.rows), paired=paired,
                              tests=_tests(run, run.rows), gate=evaluate_gate(run) if plan.gate == "e3" else None,
                              security=security_report(run.records) if "security" in plan.descriptive else None,
                              persistence=persistence_cells(run) if "persistence" in plan.descriptive else None,
                              serving=serving_cells(run) if "serving" in plan.descriptive else None)
