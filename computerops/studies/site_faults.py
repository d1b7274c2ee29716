"""The site-fault study as an episode study: the tenant injects the episode's planned faults (sites/kit/faults.py),
and the record says which were configured and which fired (docs/faults.md); the report's exposure, recovery funnel and
false completions after a fault fired follow from the records (computerops/report/faults.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import JsonValue

from computerops.experiment.rows import Arm
from computerops.experiment.spec import ExperimentSpec, ExperimentTask
from computerops.report.faults import exposure, false_completions_with_fault_context, fault_blocks, recovery_funnel
from computerops.report.tables import Block
from computerops.runs.records import EpisodeRecord
from computerops.studies.base import EpisodeFacts, EpisodeSetup, Study
from sites.kit.faults import FaultClass, FaultInjector
from sites.kit.injection import FaultSession
from sites.kit.tenancy import Tenant


class SiteFaults(Study):
    name: ClassVar[str] = "site_faults"
    owned_fields: ClassVar[tuple[str, ...]] = ("faults_enabled", "faults_configured", "faults_fired")
    report_fields: ClassVar[tuple[str, ...]] = ("exposure", "recovery_funnel", "false_completions_with_fault_context")

    def prepare(self, setup: EpisodeSetup, tenant: Tenant) -> None:
        plan = setup.config.fault_plan(setup.task.spec, setup.planned)
        if plan is not None:
            tenant.faults = FaultSession(FaultInjector(plan))

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        setup = facts.setup
        plan = setup.config.fault_plan(setup.task.spec, setup.planned)
        return {
            "faults_enabled": setup.planned.faults,
            "faults_configured": [] if plan is None else plan.configured,
            "faults_fired": [op.fault.fault for op in facts.operations if op.fault is not None and op.fault.applied],
        }

    def report_figures(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        return {"exposure": exposure(records), "recovery_funnel": recovery_funnel(records),
                "false_completions_with_fault_context": false_completions_with_fault_context(records)}

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        """The fault sections, in a run where a fault was configured or fired."""
        exposed = figures["exposure"]
        if not (exposed.configured_any or exposed.fired_any):
            return []
        return fault_blocks(exposed, figures["recovery_funnel"], figures["false_completions_with_fault_context"])

    # --- experiment design hooks ---
    # The factors `fault_rate` and `fault_classes`: the treatment's per-operation fault rate and the classes it draws
    # for (an experiment task's own classes and fixed-place faults in place of, and besides, the level's).
    noise_factors: ClassVar[tuple[str, ...]] = ("fault_rate",)

    def design_levels(self, spec: ExperimentSpec) -> Sequence[tuple[float, tuple[FaultClass, ...]]]:
        return [(rate, tuple(classes)) for rate in spec.factors.fault_rate for classes in spec.factors.fault_classes]

    def cell_parts(self, spec: ExperimentSpec, level: tuple[float, tuple[FaultClass, ...]]) -> list[str]:
        """`fault_rate=R` always, `fault_classes=A+B` where the factor has more than one level."""
        rate, classes = level
        parts = [f"fault_rate={rate:g}"]
        if len(spec.factors.fault_classes) > 1:
            parts.append("fault_classes=" + "+".join(classes))
        return parts

    def arm_fields(self, spec: ExperimentSpec, level: tuple[float, tuple[FaultClass, ...]], arm: Arm,
                   task: ExperimentTask) -> dict[str, Any]:
        """Both arms carry the level (the control's injection is disabled by `faults`, not here)."""
        rate, classes = level
        return {"fault_rate": rate,
                "fault_classes": list(classes) if task.fault_classes is None else task.fault_classes,
                "fault_rules": task.faults}

    def factor_levels(self, level: tuple[float, tuple[FaultClass, ...]]) -> dict[str, float | int | str | None]:
        return {"fault_rate": level[0]}
