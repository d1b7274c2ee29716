"""The episode study seam: what one study adds to an episode, in the order `run_episode` meets it.

A study (the security study's attacks and broker, site faults, serving faults, long-running persistence; a new one
such as page noise) is a `Study`: it may plant into the episode's tenant and prepare it (`plant`, `prepare`), and
for an episode it takes part in it gives a `StudyEpisode` (`begin`) that may supply the model's clients
(`model_access`) or drive the whole episode itself (`drive`), and names the evidence files it wrote (`evidence`).
After the episode the study's record fields follow from the evidence alone (`record_fields`), so that `computerops
verify` recomputes them: it reads the study's files back (`read`) and asks the study what in them contradicts the
plan (`problems`). `run_episode`, `derived_fields` and `verify` go through the registry
(computerops/studies/registry.py) and name no study.

A study's record fields are either fields of `EpisodeRecord` it owns (`owned_fields`: the four studies that predate
the seam, whose records keep the fields they always had) or, for a study added later, one entry under its name in
the record's `studies` map (`record`), so that adding one changes no module but the registry (docs/extending.md).

The run's report mirrors this: `run_report` and `report_view` (computerops/report/run.py, layout.py) go through the
registry too. A pre-seam study fills the `RunReport` fields it always filled (`report_fields`, by
`report_figures`); a later study's figures go under its name in the report's `studies` map (`report`); and each
study lays out its own blocks (`report_blocks`), after the report's own. The experiment planner and the mutation
audit (`computerops tasks audit`) go through it as well: the last two blocks of `Study`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import openai
from pydantic import BaseModel, JsonValue

from adapter.actions import FinishSchema
from adapter.failover import Fallback, ServingProtocol
from adapter.modelclient import StreamWatch
from adapter.transcript import AgentTranscript, Bounds
from computerops.catalog.mutants import Fate, Mutant, MutantClass
from computerops.experiment.rows import Arm
from computerops.experiment.spec import ExperimentSpec, ExperimentTask
from computerops.report.tables import Block
from computerops.runs.config import PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from replays import RecordedEpisode
from sites.kit.plant import Plant
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from sites.kit.tenancy import Tenant
from tasks import LoadedTask
from verifier import Verdict


class StudyFailed(RuntimeError):
    """A study's harness ended in a way its design does not explain: the episode is an infrastructure failure with
    this `cause`, and the study's evidence so far (`StudyEpisode.evidence`) is still written."""

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause = cause


@dataclass(frozen=True)
class EpisodeSetup:
    """One planned episode of a run, as a study sees it before it runs."""

    config: RunConfig
    task: LoadedTask
    planned: PlannedEpisode


@dataclass(frozen=True)
class ModelAccess:
    """The clients an episode asks its model through, and how (adapter/loop.py `ModelLoop`)."""

    client: openai.AsyncOpenAI
    serving: ServingProtocol | None = None
    fallback: Fallback | None = None
    watch: StreamWatch | None = None


@dataclass(frozen=True)
class Endpoint:
    """The run's model endpoint for one episode: where a study that supplies clients or drives the episode asks."""

    base_url: str
    api_key: str
    model: str
    bounds: Bounds
    token_scale: float


@dataclass(frozen=True)
class DriveRequest:
    """What a study that drives a whole episode itself is given (computerops/persistence/study.py)."""

    setup: EpisodeSetup
    tenant: Tenant
    origin: str
    run_id: str
    evidence_dir: Path
    """The episode's evidence folder (episodes/<id>/), created."""
    endpoint: Endpoint
    finish: FinishSchema


@dataclass
class EvidenceFiles:
    """A study's evidence of one episode: files for the run to write (`written`, name to value, written as JSON in
    this order) and files the study wrote itself, to be hashed (`hashed`, paths relative to the episode's folder, in
    this order); `loaded` is what `record_fields` reads, as `Study.read` gives it back from the written files."""

    written: dict[str, BaseModel] = field(default_factory=dict)
    hashed: list[str] = field(default_factory=list)
    loaded: object | None = None


@dataclass(frozen=True)
class EpisodeEnd:
    """What an episode left, as the run holds it when the study's evidence is taken (the tenant is gone by then)."""

    transcript: AgentTranscript
    operations: Sequence[Operation]
    journal: Sequence[JournalEntry]
    final_state: StateSnapshot


class StudyEpisode:
    """One study's part in one episode. Each hook's default leaves the episode as it would be without the study."""

    def model_access(self, endpoint: Endpoint, setup: EpisodeSetup) -> AbstractAsyncContextManager[ModelAccess] | None:
        """The clients the episode's model is asked through (None: the run's own)."""
        return None

    async def drive(self, request: DriveRequest) -> AgentTranscript | None:
        """Run the whole episode in the study's own way and return its transcript (None: the run drives it); raise
        `StudyFailed` where the study's harness failed."""
        return None

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        """The study's evidence of the episode, however it ended (also after `StudyFailed`)."""
        return EvidenceFiles()


@dataclass(frozen=True)
class EpisodeFacts:
    """Everything an episode's record follows from: its plan, its transcript, the tenant's evidence and the verdict,
    and each study's loaded evidence by study name (absent: the study wrote none for this episode)."""

    setup: EpisodeSetup
    transcript: AgentTranscript
    operations: Sequence[Operation]
    journal: Sequence[JournalEntry]
    verdict: Verdict
    final_state: StateSnapshot | None
    evidence: Mapping[str, object] = field(default_factory=dict)


class Study:
    """One study of the benchmark. Subclasses override the hooks they need; `name` is unique in the registry."""

    name: ClassVar[str]
    owned_fields: ClassVar[tuple[str, ...]] = ()
    """The `EpisodeRecord` fields `record_fields` fills (the studies that predate the seam); empty for a study whose
    record goes under its name in the record's `studies` map. Never a field the run fills itself (`outcome`...)."""
    report_fields: ClassVar[tuple[str, ...]] = ()
    """The `RunReport` fields `report_figures` fills (the studies that predate the seam: `exposure`, `security`...);
    empty for a study whose figures go under its name in the report's `studies` map. Never a field the report fills
    itself (`total`, `loops`...)."""
    evidence_files: ClassVar[tuple[str, ...]] = ()
    """The files its evidence of an episode may name (`fnmatch` patterns relative to the episode's folder:
    `serving.json`, `checkpoints/*.json`). A file it writes or hashes outside them, or one the run or another study
    wrote, is refused when the evidence is taken; `verify` names a hashed file that neither the run nor a registered
    study claims (a run made with a study this installation does not register), and an episode that is the study's
    (`begin`) without any of its evidence, unless it ended in an infrastructure failure."""

    def plant(self, setup: EpisodeSetup) -> Plant | None:
        """What the episode's tenant is created with (the security study's payload); None: nothing."""
        return None

    def prepare(self, setup: EpisodeSetup, tenant: Tenant) -> None:
        """Set up the fresh tenant before the episode's first request (fault injection, the broker)."""

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        """The study's part in this episode, or None where the episode is not one of its. It must not act: `verify`
        asks it too, to know which episodes are the study's."""
        return None

    def read(self, episode_dir: Path) -> object | None:
        """For `verify`: the study's loaded evidence of an episode read back from its folder (None: it has none),
        equal to what `StudyEpisode.evidence` gave as `loaded` when the episode ran."""
        return None

    def problems(self, setup: EpisodeSetup, loaded: object) -> list[str]:
        """For `verify`: what in the study's evidence contradicts the episode's plan (e.g. a fault the plan did not
        inject), each a sentence prefixed with the file it is about."""
        return []

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        """The record fields the study owns (`owned_fields`), from the facts alone."""
        return {}

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        """A study without owned fields: its entry in the record's `studies` map (None: the episode is not its)."""
        return None

    def treatment_ended(self, fields: Mapping[str, Any], entry: JsonValue | None) -> bool:
        """Whether the study's own treatment ended the episode (given the record fields it filled, or its entry in
        the `studies` map): the episode's end is then the agent's outcome under the treatment, never an
        infrastructure failure."""
        return False


    def report_figures(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        """The report fields the study fills (`report_fields`), from the run's records alone (`computerops verify`
        recomputes the report from them)."""
        return {}

    def report(self, records: Sequence[EpisodeRecord]) -> JsonValue | None:
        """A study without report fields: its entry in the report's `studies` map (None: the run has no episode of
        it), from the run's records alone (its record entries are each record's `studies[name]`)."""
        return None

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        """The study's blocks of the report's view (console and HTML), given the report fields it filled or its
        entry in the report's `studies` map (None: it has none); empty where the run has nothing of it to show."""
        return []

    # --- experiment design hooks (computerops/experiment/plan.py) ---
    # An experiment's cells are the product of the model, the tool ladder and each registered study's levels; the
    # planner asks each study what its level of a cell means and names none. Each default leaves the experiment as it
    # would be without the study (one level, None, naming nothing). The experiment file's format stays the same: a
    # study reads its factors from `spec.factors` (computerops/experiment/spec.py, which also validates them).

    noise_factors: ClassVar[tuple[str, ...]] = ()
    """The factor names a noise floor's cell (`analysis.noise_floor.cell`) may name for this study, each read from a
    cell's level by `factor_levels`."""

    def design_levels(self, spec: ExperimentSpec) -> Sequence[Any]:
        """The study's levels of the experiment's cells, in the file's order of levels (the product of its factors'
        levels where it has several, the first factor outermost); (None,): the experiment does not vary the study."""
        return (None,)

    def cell_parts(self, spec: ExperimentSpec, level: Any) -> list[str]:
        """The parts of a cell's id that name the study's level (`fault_rate=0.2`), in order; none by default."""
        return []

    def arm_fields(self, spec: ExperimentSpec, level: Any, arm: Arm, task: ExperimentTask) -> dict[str, Any]:
        """The `PlannedEpisode` fields the study's level gives an arm's episodes of a task (each field given by one
        study alone, never one the planner fills: ids, `faults`, the seed, the tool ladder's `apps`)."""
        return {}

    def arm_entry(self, spec: ExperimentSpec, level: Any, arm: Arm, task: ExperimentTask) -> JsonValue | None:
        """A study that gives no `PlannedEpisode` fields (one added after the seam): what its level gives an arm's
        episodes of a task, under its name in the planned episode's `studies` map (None: nothing)."""
        return None

    def injects_control(self, spec: ExperimentSpec) -> bool:
        """Whether the experiment's control has injection enabled (`PlannedEpisode.faults`, which the treatment always
        has): True where the study's treatment is its own (an interruption, a serving failure), not the injection, so
        that whatever faults and attacks the tasks configure meet both arms alike."""
        return False

    def arms_meaning(self, spec: ExperimentSpec) -> str | None:
        """What the experiment's arms are, in words, where the study defines them (None: it does not; the planner's
        own meaning, control = injection disabled, stands)."""
        return None

    def factor_levels(self, level: Any) -> dict[str, float | int | str | None]:
        """The study's level of a cell by factor name, one entry for each of `noise_factors` (None where the
        experiment does not vary the study)."""
        return {}

    # --- audit hooks (computerops/catalog/audit.py, `computerops tasks audit`) ---
    # The mutation audit runs each task's scripted control, then every mutant of it; a study may bring mutants of its
    # own classes, made from extra scripted controls it has run first, planned with fields of its own and judged by
    # its own rule. The audit asks each registered study and names none. Each default brings nothing.

    audit_classes: ClassVar[frozenset[MutantClass]] = frozenset()
    """The mutant classes the study brings (`audit_mutants`) and judges (`audit_judge`); no class is two studies'."""
    audit_sampled_across: ClassVar[frozenset[MutantClass]] = frozenset()
    """Those of `audit_classes` a quicker audit (`--per-class`) samples across the whole audit rather than per task
    (long-running mutants, seconds each)."""

    def audit_controls(self, task: LoadedTask) -> list[str]:
        """The extra scripted controls of a task to run before its mutants (`control_plan` items such as
        `obedient@observing`), after its own `oracle`."""
        return []

    def audit_mutants(self, task: LoadedTask, controls: Mapping[str, EpisodeRecord],
                      load: Callable[[EpisodeRecord], tuple[RecordedEpisode, AgentTranscript]]) -> list[Mutant]:
        """The task's mutants of the study's classes (its scripted control verified and run to its end), given the
        records of the extra controls it asked for (`audit_controls`, by item) and how to load one's evidence."""
        return []

    def audit_fields(self, task: LoadedTask, mutant: Mutant) -> dict[str, Any]:
        """The `PlannedEpisode` fields a mutant's episode gets from the study (any mutant's, not only its classes'; a
        study added later gives `{"studies": {name: entry}}`); `policy` too, where the episode runs a policy other than
        the mutant's own steps (`mutant:<task>/<id>`)."""
        return {}

    def audit_judge(self, episode: MutantEpisode) -> MutantJudgement:
        """A browser mutant of the study's classes judged on its episode; by default as any mutant is: `not_run`
        short of its final done, else the task's declarations and the effects (`MutantEpisode.judged`)."""
        return episode.not_run() or episode.judged(*episode.default_fate())


@dataclass(frozen=True)
class MutantJudgement:
    """A browser mutant's fate, why, the checks its verdict failed and how many of its steps were skipped."""

    fate: Fate
    note: str = ""
    failed_checks: list[str] = field(default_factory=list)
    skipped: int = 0


@dataclass(frozen=True)
class MutantEpisode:
    """A browser mutant's episode as the audit hands it to the study whose class the mutant is (`audit_judge`)."""

    task: LoadedTask
    mutant: Mutant
    record: EpisodeRecord
    episode_dir: Path
    load: Callable[[], RecordedEpisode]
    """The episode's evidence (loaded once)."""
    covers: Callable[[RecordedEpisode], bool]
    """Whether the evidence has the scripted control's effects (`audit.Effect.covers`)."""
    default_fate: Callable[[], tuple[Fate, str]]
    """The fate the audit gives a mutant of no study's classes that ran to its final done."""

    def not_run(self) -> MutantJudgement | None:
        """`not_run` where it did not reach its final done (a bound ended it, or it claimed otherwise), else None."""
        steps = self.mutant.steps or []
        final = steps[-1]
        claim = self.record.claim
        claimed = claim.success == bool(final.success) and (claim.message or "") == (final.message or "")
        if self.record.stop_reason != "finish" or not claimed or self.record.steps != len(steps):
            return MutantJudgement(fate="not_run", note=f"did not reach its final done (stop "
                                                        f"{self.record.stop_reason}, {self.record.steps} of "
                                                        f"{len(steps)} steps)")
        return None

    def judged(self, fate: Fate, note: str) -> MutantJudgement:
        """A fate with the verdict's failed checks and the steps skipped (their controls were not offered)."""
        skipped = self.record.rejected_actions
        if skipped:
            note = "; ".join(filter(None, [note, f"{skipped} step(s) skipped: their controls were not offered"]))
        return MutantJudgement(fate=fate, note=note, skipped=skipped,
                               failed_checks=[c.name for c in self.load().verdict.checks if not c.passed])
