"""The security study as an episode study: an attacked task's payload planted into the episode's tenant (not in its
clean twin, `faults` False), the broker of a task with grants in the episode's broker mode, and the record's attack
facts (computerops/runs/security.py, docs/security.md); the report's security figures follow from the records
(computerops/report/security.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import JsonValue

from computerops.core.vocabulary import BrokerMode
from computerops.experiment.rows import Arm
from computerops.experiment.spec import ExperimentSpec, ExperimentTask
from computerops.report.security import security_blocks, security_report
from computerops.report.tables import Block
from computerops.runs.records import EpisodeRecord
from computerops.runs.security import attack_record
from computerops.studies.base import EpisodeFacts, EpisodeSetup, Study
from sites.kit.broker import BrokerSession
from sites.kit.plant import Plant
from sites.kit.tenancy import Tenant


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
