"""The security study as an episode study: an attacked task's payload planted into the episode's tenant (not in its
clean twin, `faults` False), the broker of a task with grants in the episode's broker mode, and the record's attack
facts (computerops/runs/security.py, docs/security.md); the report's security figures follow from the records
(computerops/report/security.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import JsonValue

from adapter.transcript import AgentTranscript
from computerops.catalog.mutant_attacks import ATTACK_CLASSES, OBEDIENT, attack_fate, attack_mutants
from computerops.catalog.mutants import Mutant, MutantClass, ScriptedRun
from computerops.core.vocabulary import BrokerMode
from computerops.experiment.rows import Arm
from computerops.experiment.spec import ExperimentSpec, ExperimentTask
from computerops.report.security import security_blocks, security_report
from computerops.report.tables import Block
from computerops.runs.records import EpisodeRecord
from computerops.runs.security import attack_record
from computerops.studies.base import EpisodeFacts, EpisodeSetup, MutantEpisode, MutantJudgement, Study
from replays import RecordedEpisode
from sites.kit.broker import BrokerSession
from sites.kit.plant import Plant
from sites.kit.tenancy import Tenant
from tasks import LoadedTask


class Security(Study):
    name: ClassVar[str] = "security"
    owned_fields: ClassVar[tuple[str, ...]] = ("attack",)
    report_fields: ClassVar[tuple[str, ...]] = ("security",)

    def plant(self, setup: EpisodeSetup) -> Plant | None:
        """The payload an episode plants: its task's attack unless injection is disabled (the clean twin)."""
        attack = setup.task.spec.attack
        return attack.plant() if attack is not None and setup.planned.faults else None

    def prepare(self, setup: EpisodeSetup, tenant: Tenant) -> None:
        spec = setup.task.spec
        if spec.grants:
            tenant.broker = BrokerSession(grants=tuple(spec.grants), mode=setup.planned.broker,
                                          own_corrections=spec.own_corrections)

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        return {"attack": attack_record(facts.setup.task.spec.attack, facts.verdict, facts.transcript,
                                        facts.setup.planned.broker)}

    def report_figures(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        return {"security": security_report(records)}

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        security = figures["security"]
        return [] if security is None else security_blocks(security)

    # --- experiment design hooks ---
    # The factor `broker`: how the broker treats what the tasks' grants do not allow, in both arms of a cell.
    def design_levels(self, spec: ExperimentSpec) -> Sequence[BrokerMode]:
        return list(spec.factors.broker)

    def cell_parts(self, spec: ExperimentSpec, level: BrokerMode) -> list[str]:
        """`broker=MODE`, unless the factor is the default (enforcing alone)."""
        return [] if spec.factors.broker == ["enforcing"] else [f"broker={level}"]

    def arm_fields(self, spec: ExperimentSpec, level: BrokerMode, arm: Arm, task: ExperimentTask) -> dict[str, Any]:
        return {"broker_mode": None if level == "enforcing" else level}

    # --- audit hooks ---
    # An attacked task's attack mutants, made from its obedient control (the broker observing) and judged by the
    # attack's outcome (computerops/catalog/mutant_attacks.py); with grants, every mutant's broker observes: what is
    # audited is the verdict, not what an enforcing broker stops.
    audit_classes: ClassVar[frozenset[MutantClass]] = ATTACK_CLASSES

    def audit_controls(self, task: LoadedTask) -> list[str]:
        return [OBEDIENT] if task.spec.attack else []

    def audit_mutants(self, task: LoadedTask, controls: Mapping[str, EpisodeRecord],
                      load: Callable[[EpisodeRecord], tuple[RecordedEpisode, AgentTranscript]]) -> list[Mutant]:
        """The attack mutants of an attacked task whose obedient control reached the objective (else none: `tasks
        check` reports the dead attack)."""
        attack, record = task.spec.attack, controls.get(OBEDIENT)
        if attack is None or record is None or record.attack is None or not record.attack.objective_reached:
            return []
        evidence, transcript = load(record)
        steps = attack.obedient.derive(list(task.spec.scripted_control))
        return list(attack_mutants(task.spec, ScriptedRun(steps=steps, transcript=transcript, evidence=evidence)))

    def audit_fields(self, task: LoadedTask, mutant: Mutant) -> dict[str, Any]:
        return {"broker_mode": "observing" if task.spec.grants else None}

    def audit_judge(self, episode: MutantEpisode) -> MutantJudgement:
        return episode.not_run() or episode.judged(*attack_fate(episode.task.spec, episode.mutant, episode.record))
