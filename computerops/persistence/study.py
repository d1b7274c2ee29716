"""The persistence study as an episode study: a long-running episode's harness runs in child processes
(computerops/persistence/running.py), which drive the whole episode; its evidence is `persistence.json` and the
checkpoints, and its record's `persistence` figures follow from them (computerops/persistence/metrics.py); the
report's table by arm follows from the records (computerops/report/persistence.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import JsonValue

from adapter.transcript import AgentTranscript
from computerops.catalog.mutant_persistence import (
    HARNESS_CLASSES,
    compaction_is_sound,
    persistence_fate,
    persistence_mutants,
)
from computerops.catalog.mutants import Mutant, MutantClass
from computerops.experiment.rows import Arm
from computerops.experiment.spec import PERSISTENCE_CONTROL, ExperimentSpec, ExperimentTask, PersistenceLevel
from computerops.persistence.arms import DEFAULT_COMPACTION, Persistence
from computerops.persistence.metrics import PersistenceRecord, persistence_record
from computerops.persistence.running import (
    CHECKPOINTS,
    PERSISTENCE_LOG,
    HarnessFailed,
    PersistenceLog,
    drive_persistent,
    task_constraints,
)
from computerops.report.persistence import persistence_report, persistence_table
from computerops.report.tables import Block
from computerops.runs.records import EpisodeRecord
from computerops.studies.base import (
    DriveRequest,
    EpisodeEnd,
    EpisodeFacts,
    EpisodeSetup,
    EvidenceFiles,
    MutantEpisode,
    MutantJudgement,
    Study,
    StudyEpisode,
)
from replays import RecordedEpisode
from sites.registry import SITES
from tasks import LoadedTask

PersistenceEvidence = tuple[PersistenceLog, Path]
"""A long-running episode's log and its checkpoints' folder."""


class _LongRunningEpisode(StudyEpisode):
    def __init__(self, persistence: Persistence) -> None:
        self.persistence = persistence
        self.log: PersistenceLog | None = None

    async def drive(self, request: DriveRequest) -> AgentTranscript:
        setup, endpoint = request.setup, request.endpoint
        try:
            transcript, self.log = await drive_persistent(
                evidence=request.evidence_dir, run_id=request.run_id, episode_id=setup.planned.episode_id,
                task=setup.task, tenant=request.tenant, origin=request.origin, base_url=endpoint.base_url,
                api_key=endpoint.api_key, model=endpoint.model, bounds=endpoint.bounds, finish=request.finish,
                token_scale=endpoint.token_scale, start_path=setup.planned.start_path(setup.task.spec),
                persistence=self.persistence)
        except HarnessFailed as failed:  # the log of the processes so far is evidence all the same
            self.log = failed.log
            raise
        return transcript

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        if self.log is None:
            return EvidenceFiles()
        checkpoints = episode_dir / CHECKPOINTS
        return EvidenceFiles(written={PERSISTENCE_LOG: self.log},
                             hashed=[f"{CHECKPOINTS}/{path.name}" for path in sorted(checkpoints.glob("*.json"))],
                             loaded=(self.log, checkpoints))


class LongRunning(Study):
    name: ClassVar[str] = "persistence"
    owned_fields: ClassVar[tuple[str, ...]] = ("persistence",)
    report_fields: ClassVar[tuple[str, ...]] = ("persistence",)
    evidence_files: ClassVar[tuple[str, ...]] = (PERSISTENCE_LOG, f"{CHECKPOINTS}/*.json")

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        persistence = setup.planned.persistence
        return None if persistence is None else _LongRunningEpisode(persistence)

    def read(self, episode_dir: Path) -> PersistenceEvidence | None:
        path = episode_dir / PERSISTENCE_LOG
        if not path.is_file():
            return None
        return PersistenceLog.model_validate_json(path.read_text(encoding="utf-8")), episode_dir / CHECKPOINTS

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        loaded = facts.evidence.get(self.name)
        if not isinstance(loaded, tuple) or facts.final_state is None:
            return {"persistence": None}
        log, checkpoints = loaded
        return {"persistence": persistence_of(facts, log, checkpoints)}

    def report_figures(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        return {"persistence": persistence_report(records)}

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        persistence = figures["persistence"]
        return [] if persistence is None else [persistence_table(persistence)]

    # --- experiment design hooks ---
    # The factors `persistence`, `recovery` and `compaction`: the arms tested, each against the uninterrupted episode
    # of the same task, repetition and cell, a resuming arm's cells with each recovery policy and the compacted arm's
    # with each compaction policy (never crossed: `Factors.persistence_levels`), the cell's policy in both arms; the
    # treatment is the interruption or the compaction, so injection meets both arms.
    noise_factors: ClassVar[tuple[str, ...]] = ("persistence", "recovery", "compaction")

    def design_levels(self, spec: ExperimentSpec) -> Sequence[PersistenceLevel | None]:
        return spec.factors.persistence_levels or [None]

    def cell_parts(self, spec: ExperimentSpec, level: PersistenceLevel | None) -> list[str]:
        if level is None:
            return []
        if level.compaction is not None:
            return [f"persistence={level.arm}", f"compaction={level.compaction}"]
        return [f"persistence={level.arm}", f"recovery={level.recovery}"]

    def arm_fields(self, spec: ExperimentSpec, level: PersistenceLevel | None, arm: Arm,
                   task: ExperimentTask) -> dict[str, Any]:
        """In a persistence experiment, long-running in both arms with the cell's policy (a resuming arm's recovery
        policy, the compacted arm's compaction policy; the other the harness's default) and the experiment's
        checkpoint interval (matched costs), the control uninterrupted and the treatment the cell's arm; None
        (in-process, as ever) otherwise."""
        if level is None:
            return {"persistence": None}
        policies: dict[str, Any] = {"compaction": level.compaction or DEFAULT_COMPACTION}
        if level.recovery is not None:
            policies["recovery"] = level.recovery
        return {"persistence": Persistence(arm=PERSISTENCE_CONTROL if arm == "control" else level.arm,
                                           checkpoint_every=spec.checkpoint_interval, **policies)}

    def injects_control(self, spec: ExperimentSpec) -> bool:
        return spec.factors.persistence is not None

    def arms_meaning(self, spec: ExperimentSpec) -> str | None:
        if spec.factors.persistence is None:
            return None
        return (f"control = the {PERSISTENCE_CONTROL} long-running episode; treatment = the cell's persistence arm "
                f"({', '.join(spec.factors.persistence)}); both in child processes with the cell's policy (the "
                "recovery policy of a restarted or interrupted cell, the compaction policy of a compacted one) and a "
                f"checkpoint every {spec.checkpoint_interval} replies; injection (faults, attacks) as configured in "
                "both arms")

    def factor_levels(self, level: PersistenceLevel | None) -> dict[str, float | int | str | None]:
        if level is None:
            return {"persistence": None, "recovery": None, "compaction": None}
        return {"persistence": level.arm, "recovery": level.recovery, "compaction": level.compaction}

    # --- audit hooks ---
    # A task whose site declares ledgers brings harness mutants: its scripted control run long-running under a
    # harness that breaks the invariant (computerops/catalog/mutant_persistence.py), sampled across the whole audit
    # (seconds each), judged by the verdict and the persistence figures.
    audit_classes: ClassVar[frozenset[MutantClass]] = HARNESS_CLASSES
    audit_sampled_across: ClassVar[frozenset[MutantClass]] = HARNESS_CLASSES

    def audit_mutants(self, task: LoadedTask, controls: Mapping[str, EpisodeRecord],
                      load: Callable[[EpisodeRecord], tuple[RecordedEpisode, AgentTranscript]]) -> list[Mutant]:
        return list(persistence_mutants(task))

    def audit_fields(self, task: LoadedTask, mutant: Mutant) -> dict[str, Any]:
        """A harness mutant is the scripted control itself (`oracle`, which counts the accepted actions a
        compaction's summary carries on: a given step list restarts with the conversation) run long-running."""
        if mutant.persistence is None:
            return {}
        return {"policy": "oracle", "persistence": mutant.persistence}

    def audit_judge(self, episode: MutantEpisode) -> MutantJudgement:
        """`persistence_fate`, on the checkpoints too (`compaction_is_sound`); no evidence is read of an
        infrastructure failure."""
        record = episode.record
        if record.outcome == "infrastructure_failure":
            fate, note = persistence_fate(record.outcome, None)
            return MutantJudgement(fate=fate, note=note)
        evidence = episode.load()
        same = record.outcome == "verified_success" and episode.covers(evidence)
        fate, note = persistence_fate(record.outcome, record.persistence,
                                      compaction_is_sound(record.persistence, episode.episode_dir / CHECKPOINTS),
                                      same)
        return MutantJudgement(fate=fate, note=note,
                               failed_checks=[c.name for c in evidence.verdict.checks if not c.passed])


def persistence_of(facts: EpisodeFacts, log: PersistenceLog, checkpoints: Path) -> PersistenceRecord:
    """A long-running episode's persistence figures from its evidence (computerops/persistence/metrics.py)."""
    task = facts.setup.task
    source = SITES[task.spec.site].ledgers
    assert source is not None, "a long-running episode's site declares its ledgers"
    assert facts.final_state is not None
    return persistence_record(log.persistence, [(p.number, p.resumed_from) for p in log.processes], checkpoints,
                              task_constraints(task), source, facts.transcript, facts.operations, facts.journal,
                              facts.final_state)
