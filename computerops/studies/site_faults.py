"""The site-fault study as an episode study: the tenant injects the episode's planned faults (sites/kit/faults.py),
and the record says which were configured and which fired (docs/faults.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from computerops.studies.base import EpisodeFacts, EpisodeSetup, Study
from sites.kit.faults import FaultInjector
from sites.kit.injection import FaultSession
from sites.kit.tenancy import Tenant


class SiteFaults(Study):
    name: ClassVar[str] = "site_faults"
    owned_fields: ClassVar[tuple[str, ...]] = ("faults_enabled", "faults_configured", "faults_fired")

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
