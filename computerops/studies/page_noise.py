"""The page-noise study (docs/noise.md): an episode planned with a noise arm has its tenant's pages dressed with that
kind (sites/kit/noise.py, served by sites/kit/noise_layer.py) or, as the clean control, left as they are; its evidence
is every page it served (`noise.json`), its record entry the pages the noise fired on and those the agent saw (from
its observations), and the report's table is by arm, never averaged across kinds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, get_args

from pydantic import JsonValue

from adapter.transcript import AgentTranscript
from computerops.experiment.rows import Arm
from computerops.experiment.spec import ExperimentSpec, ExperimentTask
from computerops.report.page_noise import NOISE_STUDY, NoiseEntry, NoiseReport, noise_blocks, noise_report
from computerops.report.tables import Block
from computerops.runs.records import EpisodeRecord
from computerops.studies.base import EpisodeEnd, EpisodeFacts, EpisodeSetup, EvidenceFiles, Study, StudyEpisode
from sites.kit.noise import CLEAN, NOISE_KINDS, NoiseArm, NoiseKind, drawn
from sites.kit.noise_log import NoiseLog, NoiseSession
from sites.kit.tenancy import Tenant

NOISE_FILE = "noise.json"


def planned_arm(setup: EpisodeSetup) -> NoiseArm | None:
    """The episode's noise arm (`PlannedEpisode.studies["page_noise"]`); None: not an episode of the study."""
    arm = (setup.planned.studies or {}).get(NOISE_STUDY)
    return next((known for known in get_args(NoiseArm) if known == arm), None)


def pair_of(setup: EpisodeSetup) -> str:
    planned = setup.planned
    return planned.pair or f"{planned.task_id}#{planned.policy or ''}#r{planned.repetition}"


def observations_by_action(transcript: AgentTranscript) -> dict[int, str]:
    """What the agent was shown after each action: 0 the start page, N the observation after action N."""
    shown = {0: transcript.first_observation}
    shown.update({step.number: step.observation for step in transcript.steps if step.observation is not None})
    return shown


def seen_pages(log: NoiseLog, transcript: AgentTranscript) -> list[int]:
    """The fired pages whose noise an observation showed: one taken after the action that asked for the page and
    before the next action that asked for another."""
    shown = observations_by_action(transcript)
    actions = [page.action for page in log.pages]
    seen: list[int] = []
    for index, page in enumerate(log.pages):
        if not page.fired or page.action is None:
            continue
        later = [a for a in actions[index + 1:] if a is not None and a > page.action]
        end = min(later) if later else max(shown, default=0) + 1
        window = [text for number, text in shown.items() if page.action <= number < end]
        if any(mark and mark in text for mark in page.shows for text in window):
            seen.append(page.ordinal)
    return seen


def _kind(arm: NoiseArm | None) -> NoiseKind | None:
    """The noise kind an arm serves; None for the clean control (or no arm)."""
    return next((kind for kind in NOISE_KINDS if kind == arm), None)


class _NoiseEpisode(StudyEpisode):
    def __init__(self, arm: NoiseArm, setup: EpisodeSetup, session: NoiseSession | None) -> None:
        self.arm, self.setup, self.session = arm, setup, session

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        planned = self.setup.planned
        log = (self.session.log() if self.session is not None else
               NoiseLog(arm=CLEAN, run_seed=self.setup.config.fault_seed, task_id=self.setup.task.id,
                        repetition=planned.repetition))
        return EvidenceFiles(written={NOISE_FILE: log}, loaded=log)


class PageNoise(Study):
    name: ClassVar[str] = NOISE_STUDY
    evidence_files: ClassVar[tuple[str, ...]] = (NOISE_FILE,)

    def __init__(self) -> None:
        self._sessions: dict[str, NoiseSession] = {}  # prepared, until `begin` takes it (one per running episode)

    def prepare(self, setup: EpisodeSetup, tenant: Tenant) -> None:
        kind = _kind(planned_arm(setup))
        if kind is None:  # not the study's, or its clean control
            return
        tenant.noise = NoiseSession(kind=kind, run_seed=setup.config.fault_seed, task_id=setup.task.id,
                                    repetition=setup.planned.repetition)
        self._sessions[setup.planned.episode_id] = tenant.noise

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        arm = planned_arm(setup)
        if arm is None:
            return None
        return _NoiseEpisode(arm, setup, self._sessions.pop(setup.planned.episode_id, None))

    def read(self, episode_dir: Path) -> NoiseLog | None:
        path = episode_dir / NOISE_FILE
        return NoiseLog.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def problems(self, setup: EpisodeSetup, loaded: object) -> list[str]:
        """The log against the plan: its arm, task and repetition, pages numbered in order, the draw recomputed for
        each page, and noise fired only where it was drawn (a clean episode serves no noise at all)."""
        assert isinstance(loaded, NoiseLog)
        found: list[str] = []
        arm = planned_arm(setup)
        if loaded.arm != arm:
            found.append(f"{NOISE_FILE}: arm {loaded.arm}, planned {arm}")
        if (loaded.task_id, loaded.repetition, loaded.run_seed) != (
                setup.task.id, setup.planned.repetition, setup.config.fault_seed):
            found.append(f"{NOISE_FILE}: written for {loaded.task_id} repetition {loaded.repetition} seed "
                         f"{loaded.run_seed}, not this episode's")
        for index, page in enumerate(loaded.pages, start=1):
            if page.ordinal != index:
                found.append(f"{NOISE_FILE}: page {index} numbered {page.ordinal}")
            kind = _kind(loaded.arm)
            expected = kind is not None and drawn(kind, loaded.run_seed, loaded.task_id, loaded.repetition, index)
            if page.drawn != expected:
                found.append(f"{NOISE_FILE}: page {index} recorded drawn={page.drawn}, the draw says {expected}")
            if page.fired and not page.drawn:
                found.append(f"{NOISE_FILE}: page {index} fired without being drawn")
        return found

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        log = facts.evidence.get(self.name)
        if not isinstance(log, NoiseLog):
            return None
        entry = NoiseEntry(arm=log.arm, pair=pair_of(facts.setup), pages=len(log.pages),
                           fired=[page.ordinal for page in log.pages if page.fired],
                           seen=seen_pages(log, facts.transcript))
        dumped: JsonValue = entry.model_dump(mode="json")
        return dumped

    def report(self, records: Sequence[EpisodeRecord]) -> JsonValue | None:
        report = noise_report(records)
        if report is None:
            return None
        dumped: JsonValue = report.model_dump(mode="json")
        return dumped

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        return [] if entry is None else noise_blocks(NoiseReport.model_validate(entry))

    # --- experiment design hooks ---
    # The factor `noise`: each level a kind; the control the clean pages, the treatment the cell's kind, paired by
    # task instance and repetition (the planner's pairs and arm order), injection as configured in both arms.
    noise_factors: ClassVar[tuple[str, ...]] = ("noise",)

    def design_levels(self, spec: ExperimentSpec) -> Sequence[NoiseKind | None]:
        return [None] if spec.factors.noise is None else list(spec.factors.noise)

    def cell_parts(self, spec: ExperimentSpec, level: NoiseKind | None) -> list[str]:
        return [] if level is None else [f"noise={level}"]

    def arm_entry(self, spec: ExperimentSpec, level: NoiseKind | None, arm: Arm, task: ExperimentTask
                  ) -> JsonValue | None:
        if level is None:
            return None
        return CLEAN if arm == "control" else level

    def injects_control(self, spec: ExperimentSpec) -> bool:
        return spec.factors.noise is not None

    def arms_meaning(self, spec: ExperimentSpec) -> str | None:
        if spec.factors.noise is None:
            return None
        return (f"control = the clean pages; treatment = the cell's page noise ({', '.join(spec.factors.noise)}); "
                "injection (faults, attacks) as configured in both arms")

    def factor_levels(self, level: NoiseKind | None) -> dict[str, float | int | str | None]:
        return {"noise": level}


__all__ = ["NOISE_FILE", "NOISE_KINDS", "PageNoise", "planned_arm", "seen_pages"]
