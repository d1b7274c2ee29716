"""The serving study as an episode study: a serving episode asks its model through the serving-fault layer under its
arm's serving protocol, writes `serving.json`, and its record's `serving` figures follow from that log
(computerops/serving_faults/record.py); an injected fault that ended the episode is the study's treatment. The
report's serving figures by path follow from the records (computerops/report/serving.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from pydantic import JsonValue

from adapter.modelclient import StreamWatch
from computerops.experiment.rows import Arm
from computerops.experiment.spec import SERVING_CONTROL, ExperimentSpec, ExperimentTask
from computerops.report.serving import serving_report, serving_table
from computerops.report.tables import Block
from computerops.runs.records import EpisodeRecord
from computerops.serving_faults.arms import ServingArm, serving_arm
from computerops.serving_faults.clients import serving_clients
from computerops.serving_faults.layer import EpisodeServingFaults
from computerops.serving_faults.log import SERVING_LOG, ServingLog, log_problems
from computerops.serving_faults.record import ServingRecord, serving_record
from computerops.studies.base import (
    Endpoint,
    EpisodeEnd,
    EpisodeFacts,
    EpisodeSetup,
    EvidenceFiles,
    ModelAccess,
    Study,
    StudyEpisode,
)
from sites.registry import SITES


class _ServingEpisode(StudyEpisode):
    def __init__(self, faults: EpisodeServingFaults) -> None:
        self.faults = faults

    def model_access(self, endpoint: Endpoint, setup: EpisodeSetup) -> AbstractAsyncContextManager[ModelAccess]:
        return self._access(endpoint, setup)

    @asynccontextmanager
    async def _access(self, endpoint: Endpoint, setup: EpisodeSetup) -> AsyncIterator[ModelAccess]:
        serving = setup.planned.serving
        assert serving is not None
        watch = StreamWatch()
        async with serving_clients(endpoint.base_url, endpoint.api_key, setup.config.endpoint.fallback, self.faults,
                                   watch, timeout_s=endpoint.bounds.request_timeout_s) as (client, fallback):
            yield ModelAccess(client=client, serving=serving.protocol, fallback=fallback, watch=watch)

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        return EvidenceFiles(written={SERVING_LOG: self.faults.log}, loaded=self.faults.log)


class ServingFaults(Study):
    name: ClassVar[str] = "serving"
    owned_fields: ClassVar[tuple[str, ...]] = ("serving",)
    report_fields: ClassVar[tuple[str, ...]] = ("serving",)
    evidence_files: ClassVar[tuple[str, ...]] = (SERVING_LOG,)

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        serving = setup.planned.serving
        if serving is None:
            return None
        return _ServingEpisode(EpisodeServingFaults(
            serving.plan(setup.config.fault_seed, setup.task.id, setup.planned.repetition)))

    def read(self, episode_dir: Path) -> ServingLog | None:
        path = episode_dir / SERVING_LOG
        return ServingLog.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def problems(self, setup: EpisodeSetup, loaded: object) -> list[str]:
        serving = setup.planned.serving
        if serving is None or not isinstance(loaded, ServingLog):
            return []
        planned = serving.plan(setup.config.fault_seed, setup.task.id, setup.planned.repetition)
        return [f"{SERVING_LOG}: {problem}" for problem in log_problems(loaded, planned)]

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        log = facts.evidence.get(self.name)
        return {"serving": serving_of(facts, log if isinstance(log, ServingLog) else None)}

    def treatment_ended(self, fields: Mapping[str, Any], entry: JsonValue | None) -> bool:
        served = fields.get("serving")
        return isinstance(served, ServingRecord) and served.ended_by_injection is not None

    def report_figures(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        return {"serving": serving_report(records)}

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        serving = figures["serving"]
        return [] if serving is None else [serving_table(serving)]

    # --- experiment design hooks ---
    # The factor `serving`: the serving arms tested, each against the `reference` arm (A) of the same task, repetition
    # and cell, both streamed under the same serving protocol; the treatment is the serving failure, so injection
    # meets both arms.
    noise_factors: ClassVar[tuple[str, ...]] = ("serving",)

    def design_levels(self, spec: ExperimentSpec) -> Sequence[ServingArm | None]:
        return [None] if spec.factors.serving is None else list(spec.factors.serving)

    def cell_parts(self, spec: ExperimentSpec, level: ServingArm | None) -> list[str]:
        return [] if level is None else [f"serving={level}"]

    def arm_fields(self, spec: ExperimentSpec, level: ServingArm | None, arm: Arm, task: ExperimentTask
                   ) -> dict[str, Any]:
        """In a serving experiment, streamed under the same serving protocol in both arms (a continuation design in
        both when the experiment declares one), the control the `reference` arm and the treatment the cell's serving
        arm; None (the endpoint asked as ever) otherwise."""
        if level is None:
            return {"serving": None}
        return {"serving": serving_arm(SERVING_CONTROL if arm == "control" else level,
                                       continuation=spec.continuation)}

    def injects_control(self, spec: ExperimentSpec) -> bool:
        return spec.factors.serving is not None

    def arms_meaning(self, spec: ExperimentSpec) -> str | None:
        if spec.factors.serving is None:
            return None
        return (f"control = the {SERVING_CONTROL} serving arm (A: no serving failure); treatment = the cell's serving "
                f"arm ({', '.join(spec.factors.serving)}); both streamed under the same serving protocol"
                + (" with a continuation design" if spec.continuation else "")
                + "; injection (faults, attacks) as configured in both arms")

    def factor_levels(self, level: ServingArm | None) -> dict[str, float | int | str | None]:
        return {"serving": level}


def serving_of(facts: EpisodeFacts, log: ServingLog | None) -> ServingRecord | None:
    """A serving episode's figures from its evidence (computerops/serving_faults/record.py); None for another."""
    task, serving = facts.setup.task, facts.setup.planned.serving
    if serving is None or log is None:
        return None
    return serving_record(serving.arm, task.spec, log, facts.transcript, facts.operations, facts.journal,
                          facts.verdict, SITES[task.spec.site].ledgers)
