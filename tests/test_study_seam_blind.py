"""Blind checks of the episode study seam (computerops/studies/base.py, registry.py): toy studies added only to the
registry's `STUDIES` (never to a shipped module) run real helpdesk episodes on the scripted endpoint, and the seam's
contract is asserted from the outside: the registry's refusals, what `verify` must catch about a study's evidence
and record, how a study that raises is recorded, and that a study leaves the episodes it does not take part in as
they would be without it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import openai
import pytest
from pydantic import BaseModel, ConfigDict, JsonValue

from adapter.transcript import AgentTranscript
from computerops.core.hashing import canonical_sha256
from computerops.report.run import summarize
from computerops.runs.bundle import ADMITTED, EPISODES, RunDirectory
from computerops.runs.config import PlannedEpisode, RunConfig, parse_endpoint, plan_episodes
from computerops.runs.episode import derived_fields, planted
from computerops.runs.records import AdmittedEpisode, EpisodeRecord
from computerops.runs.runner import RunAborted, execute_run
from computerops.runs.verification import Verification, verify_run
from computerops.studies import registry
from computerops.studies.base import (
    DriveRequest,
    Endpoint,
    EpisodeEnd,
    EpisodeFacts,
    EpisodeSetup,
    EvidenceFiles,
    ModelAccess,
    Study,
    StudyEpisode,
    StudyFailed,
)
from sites.kit.plant import Plant
from sites.kit.tenancy import Tenant
from tasks import LoadedTask, load_catalog

TASK_ID = "helpdesk.solve-ticket@1"
TASK = load_catalog()[TASK_ID]
ORACLE = f"001-{TASK_ID}--oracle"
FALSE_FINISH = f"002-{TASK_ID}--false-finish"
GIVE_UP = f"003-{TASK_ID}--give-up"
TALLY = "toy.json"
NOTES = "toy-notes.txt"
MARK = "mark.json"
TIMING_FIELDS = ("wall_s", "started_s", "evidence_sha256")
"""Record fields that hold times or hashes (the transcript's hash changes with its measured durations)."""


# --- toy studies -------------------------------------------------------------------------------------------------


class Tally(BaseModel):
    """The toy study's evidence of one episode."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["blind.tally/1"] = "blind.tally/1"
    episode_id: str
    steps: int
    operations: int


class _TallyEpisode(StudyEpisode):
    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        (episode_dir / NOTES).write_text(f"noted {self.episode_id}\n", encoding="utf-8")
        tally = Tally(episode_id=self.episode_id, steps=len(ended.transcript.steps), operations=len(ended.operations))
        return EvidenceFiles(written={TALLY: tally}, hashed=[NOTES], loaded=tally)


class TallyStudy(Study):
    """Takes part in the oracle and false-finish episodes only: writes toy.json (and toy-notes.txt itself), and its
    record entry (under `studies`) follows from toy.json."""

    name: ClassVar[str] = "toy"
    evidence_files: ClassVar[tuple[str, ...]] = (TALLY, NOTES)
    policies: ClassVar[tuple[str, ...]] = ("oracle", "false-finish")

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        return _TallyEpisode(setup.planned.episode_id) if setup.planned.policy in self.policies else None

    def read(self, episode_dir: Path) -> object | None:
        path = episode_dir / TALLY
        return Tally.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def problems(self, setup: EpisodeSetup, loaded: object) -> list[str]:
        if isinstance(loaded, Tally) and loaded.episode_id != setup.planned.episode_id:
            return [f"{TALLY}: written for episode {loaded.episode_id}"]
        return []

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        tally = facts.evidence.get(self.name)
        if not isinstance(tally, Tally):
            return None
        return {"steps": tally.steps, "operations": tally.operations}


class MisreadingTally(TallyStudy):
    """The toy study as a verifier might hold it with a `read` that disagrees with what the run wrote."""

    def read(self, episode_dir: Path) -> object | None:
        tally = super().read(episode_dir)
        return tally.model_copy(update={"steps": tally.steps + 1}) if isinstance(tally, Tally) else None


class NothingReadTally(TallyStudy):
    """The toy study with a `read` that finds nothing of what the run wrote."""

    def read(self, episode_dir: Path) -> object | None:
        return None


class Marked(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["blind.mark/1"] = "blind.mark/1"
    episode_id: str


class _MarkEpisode(StudyEpisode):
    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        mark = Marked(episode_id=self.episode_id)
        return EvidenceFiles(written={MARK: mark}, loaded=mark)


class MarkStudy(Study):
    """An evidence-only study of the oracle episode: it writes mark.json, whose only check is `problems` (it keeps no
    record entry)."""

    name: ClassVar[str] = "mark"
    evidence_files: ClassVar[tuple[str, ...]] = (MARK,)

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        return _MarkEpisode(setup.planned.episode_id) if setup.planned.policy == "oracle" else None

    def read(self, episode_dir: Path) -> object | None:
        path = episode_dir / MARK
        return Marked.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def problems(self, setup: EpisodeSetup, loaded: object) -> list[str]:
        if isinstance(loaded, Marked) and loaded.episode_id != setup.planned.episode_id:
            return [f"{MARK}: written for episode {loaded.episode_id}"]
        return []


# Studies for the failure runs: each keyed on the episode's repetition.

FAILURE = "blind-failure.json"
STUDY_CAUSE = "toy harness"


class FailureNote(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["blind.failure/1"] = "blind.failure/1"
    episode_id: str
    raised: str


class _FailingDrive(StudyEpisode):
    def __init__(self, episode_id: str, kind: str) -> None:
        self.episode_id, self.kind = episode_id, kind

    async def drive(self, request: DriveRequest) -> AgentTranscript | None:
        if self.kind == "study":
            raise StudyFailed(STUDY_CAUSE, "the toy harness's child died")
        raise RuntimeError("toy drive defect")

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        note = FailureNote(episode_id=self.episode_id, raised=self.kind)
        return EvidenceFiles(written={FAILURE: note}, loaded=note)


class FailingDrive(Study):
    """Drives repetition 1 and raises StudyFailed; drives repetition 3 and raises RuntimeError."""

    name: ClassVar[str] = "failing_drive"
    evidence_files: ClassVar[tuple[str, ...]] = (FAILURE,)

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        kind = {1: "study", 3: "other"}.get(setup.planned.repetition)
        return None if kind is None else _FailingDrive(setup.planned.episode_id, kind)

    def read(self, episode_dir: Path) -> object | None:
        path = episode_dir / FAILURE
        return FailureNote.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        note = facts.evidence.get(self.name)
        return {"raised": note.raised} if isinstance(note, FailureNote) else None


class _Access(StudyEpisode):
    def model_access(self, endpoint: Endpoint, setup: EpisodeSetup) -> AbstractAsyncContextManager[ModelAccess] | None:
        return contextlib.nullcontext(ModelAccess(client=openai.AsyncOpenAI(base_url=endpoint.base_url,
                                                                            api_key=endpoint.api_key)))


class AccessAlpha(Study):
    """Supplies the model's clients for repetition 4."""

    name: ClassVar[str] = "access_alpha"

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        return _Access() if setup.planned.repetition == 4 else None


class AccessBeta(AccessAlpha):
    name: ClassVar[str] = "access_beta"


class FailingPrepare(Study):
    """Its `prepare` raises StudyFailed for repetition 1 and RuntimeError for repetition 2."""

    name: ClassVar[str] = "failing_prepare"

    def prepare(self, setup: EpisodeSetup, tenant: Tenant) -> None:
        if setup.planned.repetition == 1:
            raise StudyFailed(STUDY_CAUSE, "the toy broker did not start")
        if setup.planned.repetition == 2:
            raise RuntimeError("toy prepare defect")


# --- helpers -----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def in_force(*studies: Study) -> Iterator[None]:
    """The shipped studies and `studies` after them, as the registry's `STUDIES`, for the block only."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "STUDIES", [*registry.STUDIES, *studies])
        yield


def config_for(policies: str, run_id: str, *, repeat: int = 1, only: tuple[str, ...] | None = None) -> RunConfig:
    endpoint = parse_endpoint(f"scripted:{policies}", base_url=None, model=None, api_key_env=None)
    episodes = plan_episodes([TASK_ID], endpoint, repeat=repeat)
    if only is not None:
        episodes = [p for p in episodes if p.episode_id in only]
    return RunConfig(run_id=run_id, tasks=[TASK_ID], endpoint=endpoint, episodes=episodes)


def run(config: RunConfig, out: Path, *studies: Study) -> None:
    with in_force(*studies):
        asyncio.run(execute_run(config, [TASK], out))


def verify(root: Path, *studies: Study) -> Verification:
    with in_force(*studies):
        return asyncio.run(verify_run(RunDirectory.open(root)))


def copy_of(root: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(root, target)
    return target


def records_of(root: Path) -> dict[str, EpisodeRecord]:
    return {r.episode_id: r for r in RunDirectory.open(root).records()}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite_records(root: Path, change: Mapping[str, Any]) -> None:
    """A careful forger's edit of episodes.jsonl: each episode's record updated by `change[episode_id]` (a dict of
    fields, a None value removing the field), then its admission marker rewritten to match."""
    lines = (root / EPISODES).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    for record in records:
        for key, value in change.get(record["episode_id"], {}).items():
            if value is None:
                record.pop(key, None)
            else:
                record[key] = value
    (root / EPISODES).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for record in RunDirectory.open(root).records():
        marker = AdmittedEpisode(episode_id=record.episode_id,
                                 record_sha256=canonical_sha256(record.model_dump(mode="json")))
        (root / "episodes" / record.episode_id / ADMITTED).write_text(marker.model_dump_json(indent=2),
                                                                      encoding="utf-8")


def rehash(root: Path, episode_id: str, *, dropped: tuple[str, ...] = (),
           extra: Mapping[str, Any] | None = None) -> None:
    """Every hash a forger can recompute: the record's evidence hashes of the episode's files as they are now
    (`dropped` names removed), its admission marker, the summary and the checksum list."""
    record = records_of(root)[episode_id]
    directory = root / "episodes" / episode_id
    hashes = {name: sha256(directory / name) for name in record.evidence_sha256 if name not in dropped}
    rewrite_records(root, {episode_id: {"evidence_sha256": hashes, **(extra or {})}})
    bundle = RunDirectory.open(root)
    bundle.seal(summarize(bundle.manifest(), bundle.records()))


def failed_naming(verification: Verification, *words: str) -> str:
    """The problem naming all of `words` (the verification must have failed)."""
    assert not verification.passed, "verify passed"
    found = [p for p in verification.problems if all(w in p for w in words)]
    assert found, f"no problem names {words}: {verification.problems}"
    return found[0]


def without_timings(value: Any) -> Any:
    """The transcript without its measured durations (keys ending in `_s`)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@dataclass(frozen=True)
class Derivation:
    """What `derived_fields` is given for one saved episode."""

    config: RunConfig
    task: LoadedTask
    planned: PlannedEpisode
    transcript: AgentTranscript
    root: Path
    record: EpisodeRecord

    def fields(self, evidence: Mapping[str, object] | None = None) -> dict[str, Any]:
        episode = RunDirectory.open(self.root).load_episode(self.record)
        return derived_fields(self.config, self.task, self.planned, self.transcript, episode.operations,
                              episode.journal, episode.verdict, final_state=episode.final_state,
                              evidence=evidence or {}, record_format=self.record.format)


def derivation(root: Path, episode_id: str) -> Derivation:
    bundle = RunDirectory.open(root)
    config = bundle.manifest().config
    record = records_of(root)[episode_id]
    transcript = AgentTranscript.model_validate_json(
        (bundle.episode_dir(episode_id) / "transcript.json").read_text(encoding="utf-8"))
    planned = next(p for p in config.episodes if p.episode_id == episode_id)
    return Derivation(config, load_catalog()[record.task_id], planned, transcript, root, record)


# --- runs (module-scoped) ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def studied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Oracle, false-finish and give-up episodes under the toy study (oracle and false-finish) and the mark study
    (oracle)."""
    out = tmp_path_factory.mktemp("studied") / "run"
    run(config_for("oracle,false-finish,give-up", "blind-seam"), out, TallyStudy(), MarkStudy())
    return out


@pytest.fixture(scope="module")
def unstudied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The oracle and give-up episodes of the same plan with no toy study registered."""
    out = tmp_path_factory.mktemp("unstudied") / "run"
    run(config_for("oracle,false-finish,give-up", "blind-seam", only=(ORACLE, GIVE_UP)), out)
    return out


FAILING_STUDIES: tuple[Study, ...] = (FailingDrive(), AccessAlpha(), AccessBeta())
DRIVE_STUDY_FAILED, DRIVE_NORMAL, DRIVE_OTHER, DOUBLE_ACCESS = (f"00{k}-{TASK_ID}--r{k}" for k in range(1, 5))


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four oracle episodes: r1 driven by a study that raises StudyFailed, r2 untouched, r3 driven by a study that
    raises RuntimeError, r4 with two studies supplying the model's clients."""
    out = tmp_path_factory.mktemp("failing") / "run"
    run(config_for("oracle", "blind-failing", repeat=4), out, *FAILING_STUDIES)
    return out


PREPARE_STUDY_FAILED, PREPARE_OTHER, PREPARE_NORMAL = (f"00{k}-{TASK_ID}--r{k}" for k in range(1, 4))


@dataclass(frozen=True)
class Aborted:
    root: Path
    aborted: RunAborted | None


@pytest.fixture(scope="module")
def failing_prepare(tmp_path_factory: pytest.TempPathFactory) -> Aborted:
    """Three oracle episodes: r1's study prepare raises StudyFailed, r2's RuntimeError, r3 untouched."""
    out = tmp_path_factory.mktemp("prepare") / "run"
    try:
        run(config_for("oracle", "blind-prepare", repeat=3), out, FailingPrepare())
    except RunAborted as exc:
        return Aborted(out, exc)
    return Aborted(out, None)


# --- the registry's rules (no browser) -----------------------------------------------------------------------------


class Planter(Study):
    name: ClassVar[str] = "planter_one"

    def plant(self, setup: EpisodeSetup) -> Plant | None:
        return Plant(table="tickets", column="body", text=f"planted by {self.name}")


class OtherPlanter(Planter):
    name: ClassVar[str] = "planter_two"


def test_two_studies_with_one_name_are_refused_naming_it() -> None:
    class Twin(TallyStudy):
        pass

    with in_force(TallyStudy(), Twin()), pytest.raises(ValueError, match="toy"):
        registry.registered()


def test_two_studies_planting_into_one_episode_are_refused_naming_both() -> None:
    planned = PlannedEpisode(episode_id=ORACLE, task_id=TASK_ID, policy="oracle")
    setup = EpisodeSetup(config_for("oracle", "blind-plant"), TASK, planned)
    with pytest.raises(ValueError) as refused:
        planted(setup, (Planter(), OtherPlanter()))
    assert "planter_one" in str(refused.value) and "planter_two" in str(refused.value), str(refused.value)


def test_one_study_planting_is_the_episodes_plant() -> None:
    planned = PlannedEpisode(episode_id=ORACLE, task_id=TASK_ID, policy="oracle")
    setup = EpisodeSetup(config_for("oracle", "blind-plant"), TASK, planned)
    assert planted(setup, (TallyStudy(), Planter(), MarkStudy())) == Planter().plant(setup)
    assert planted(setup, (TallyStudy(), MarkStudy())) is None


# --- an honest study's run -----------------------------------------------------------------------------------------


@pytest.mark.browser
def test_the_honest_studied_run_verifies_with_its_entries_recomputed(studied: Path) -> None:
    records = records_of(studied)
    assert list(records) == [ORACLE, FALSE_FINISH, GIVE_UP]
    for episode_id in (ORACLE, FALSE_FINISH):
        record, directory = records[episode_id], studied / "episodes" / episode_id
        tally = Tally.model_validate_json((directory / TALLY).read_text(encoding="utf-8"))
        assert tally.episode_id == episode_id and tally.steps == record.steps
        assert record.studies == {"toy": {"steps": record.steps, "operations": record.operations}}
        assert record.evidence_sha256[TALLY] == sha256(directory / TALLY)
        assert record.evidence_sha256[NOTES] == sha256(directory / NOTES)
    assert records[ORACLE].evidence_sha256[MARK] == sha256(studied / "episodes" / ORACLE / MARK)
    assert records[GIVE_UP].studies is None
    assert not any((studied / "episodes" / GIVE_UP / name).exists() for name in (TALLY, NOTES, MARK))
    listed = RunDirectory.open(studied).listed_checksums()
    assert f"episodes/{ORACLE}/{TALLY}" in listed and f"episodes/{ORACLE}/{NOTES}" in listed
    verification = verify(studied, TallyStudy(), MarkStudy())
    assert verification.passed, verification.problems
    assert verification.episodes_replayed == 3


@pytest.mark.browser
def test_a_study_leaves_the_episodes_it_is_not_part_of_as_without_it(studied: Path, unstudied: Path) -> None:
    with_study, without = records_of(studied), records_of(unstudied)
    for episode_id in (GIVE_UP, ORACLE):
        left, right = studied / "episodes" / episode_id, unstudied / "episodes" / episode_id
        ours = {TALLY, NOTES, MARK} if episode_id == ORACLE else set()
        assert {p.name for p in left.iterdir()} - ours == {p.name for p in right.iterdir()}, episode_id
        for name in ("operations.json", "journal.json", "final_state.json", "verdict.json", "receipt.json"):
            assert (left / name).read_bytes() == (right / name).read_bytes(), f"{episode_id}/{name}"
            if name in with_study[episode_id].evidence_sha256:
                assert with_study[episode_id].evidence_sha256[name] == without[episode_id].evidence_sha256[name]
        transcripts = [json.loads((d / "transcript.json").read_text(encoding="utf-8")) for d in (left, right)]
        assert without_timings(transcripts[0]) == without_timings(transcripts[1]), episode_id
        a = with_study[episode_id].model_dump(mode="json", exclude=set(TIMING_FIELDS))
        b = without[episode_id].model_dump(mode="json", exclude=set(TIMING_FIELDS))
        if episode_id == ORACLE:
            a.pop("studies")
        assert a == b, episode_id
    assert with_study[GIVE_UP].evidence_sha256.keys() == without[GIVE_UP].evidence_sha256.keys()
    assert "studies" not in (studied / EPISODES).read_text(encoding="utf-8").splitlines()[2]


# --- verify against a study's altered evidence ---------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("name", [TALLY, NOTES, MARK])
def test_a_deleted_study_evidence_file_fails_verify_naming_it(studied: Path, tmp_path: Path, name: str) -> None:
    root = copy_of(studied, tmp_path)
    (root / "episodes" / ORACLE / name).unlink()
    failed_naming(verify(root, TallyStudy(), MarkStudy()), f"{ORACLE}/{name}")


@pytest.mark.browser
@pytest.mark.parametrize("name", [TALLY, NOTES])
def test_a_truncated_study_evidence_file_fails_verify_naming_it(studied: Path, tmp_path: Path, name: str) -> None:
    root = copy_of(studied, tmp_path)
    path = root / "episodes" / ORACLE / name
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    failed_naming(verify(root, TallyStudy(), MarkStudy()), f"{ORACLE}/{name}")


@pytest.mark.browser
def test_a_truncated_study_evidence_file_with_every_hash_recomputed_fails_verify_naming_it(
    studied: Path, tmp_path: Path
) -> None:
    root = copy_of(studied, tmp_path)
    path = root / "episodes" / ORACLE / TALLY
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    rehash(root, ORACLE)
    failed_naming(verify(root, TallyStudy(), MarkStudy()), ORACLE, TALLY)


@pytest.mark.browser
def test_a_study_file_swapped_with_another_episodes_copy_fails_verify(studied: Path, tmp_path: Path) -> None:
    root = copy_of(studied, tmp_path)
    shutil.copyfile(root / "episodes" / FALSE_FINISH / TALLY, root / "episodes" / ORACLE / TALLY)
    failed_naming(verify(root, TallyStudy(), MarkStudy()), f"{ORACLE}/{TALLY}")


@pytest.mark.browser
def test_a_swapped_study_file_with_every_hash_recomputed_is_named_by_the_studys_problems(
    studied: Path, tmp_path: Path
) -> None:
    root = copy_of(studied, tmp_path)
    shutil.copyfile(root / "episodes" / FALSE_FINISH / TALLY, root / "episodes" / ORACLE / TALLY)
    rehash(root, ORACLE)
    failed_naming(verify(root, TallyStudy(), MarkStudy()), f"{ORACLE}/{TALLY}: written for episode {FALSE_FINISH}")


@pytest.mark.browser
def test_an_evidence_only_studys_swapped_file_with_every_hash_recomputed_is_named(
    studied: Path, tmp_path: Path
) -> None:
    root = copy_of(studied, tmp_path)
    (root / "episodes" / ORACLE / MARK).write_text(Marked(episode_id=GIVE_UP).model_dump_json(indent=2),
                                                   encoding="utf-8")
    rehash(root, ORACLE)
    failed_naming(verify(root, TallyStudy(), MarkStudy()), f"{ORACLE}/{MARK}: written for episode {GIVE_UP}")


@pytest.mark.browser
def test_a_rewritten_study_file_with_every_hash_recomputed_fails_on_the_recomputed_entry(
    studied: Path, tmp_path: Path
) -> None:
    root = copy_of(studied, tmp_path)
    path = root / "episodes" / ORACLE / TALLY
    tally = Tally.model_validate_json(path.read_text(encoding="utf-8"))
    path.write_text(tally.model_copy(update={"steps": tally.steps + 5}).model_dump_json(indent=2), encoding="utf-8")
    rehash(root, ORACLE)
    failed_naming(verify(root, TallyStudy(), MarkStudy()), ORACLE, "studies")


@pytest.mark.browser
def test_a_forged_study_entry_in_the_record_fails_verify(studied: Path, tmp_path: Path) -> None:
    root = copy_of(studied, tmp_path)
    record = records_of(root)[ORACLE]
    rehash(root, ORACLE, extra={"studies": {"toy": {"steps": record.steps + 1, "operations": record.operations}}})
    failed_naming(verify(root, TallyStudy(), MarkStudy()), ORACLE, "studies")


@pytest.mark.browser
def test_a_study_entry_forged_into_an_episode_not_the_studys_fails_verify(studied: Path, tmp_path: Path) -> None:
    root = copy_of(studied, tmp_path)
    rehash(root, GIVE_UP, extra={"studies": {"toy": {"steps": 1, "operations": 0}}})
    failed_naming(verify(root, TallyStudy(), MarkStudy()), GIVE_UP, "studies")


@pytest.mark.browser
def test_a_study_episodes_evidence_and_entry_removed_together_fail_verify(studied: Path, tmp_path: Path) -> None:
    """The plan says the oracle episode is the toy study's (its `begin` takes part): a forger who deletes its
    evidence and drops its entry and hashes leaves an episode of the study with no evidence of it."""
    root = copy_of(studied, tmp_path)
    for name in (TALLY, NOTES):
        (root / "episodes" / ORACLE / name).unlink()
    rehash(root, ORACLE, dropped=(TALLY, NOTES), extra={"studies": None})
    failed_naming(verify(root, TallyStudy(), MarkStudy()), ORACLE, "toy")


@pytest.mark.browser
def test_a_study_read_that_disagrees_with_what_was_written_fails_verify(studied: Path) -> None:
    failed_naming(verify(studied, MisreadingTally(), MarkStudy()), ORACLE, "studies")
    failed_naming(verify(studied, NothingReadTally(), MarkStudy()), ORACLE, "studies")


@pytest.mark.browser
def test_a_run_verified_without_its_study_registered_fails_naming_the_study(studied: Path) -> None:
    failed_naming(verify(studied, MarkStudy()), ORACLE, "toy")


@pytest.mark.browser
def test_a_run_verified_without_its_evidence_only_study_registered_fails_naming_it(studied: Path) -> None:
    failed_naming(verify(studied, TallyStudy()), ORACLE, "mark")


# --- the record fields a study may fill ----------------------------------------------------------------------------


class FillsUnowned(Study):
    name: ClassVar[str] = "fills_unowned"

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        return {"attack": None}


class ClaimsAttack(Study):
    name: ClassVar[str] = "claims_attack"
    owned_fields: ClassVar[tuple[str, ...]] = ("attack",)

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        return {"attack": None}


class ClaimsOutcome(Study):
    name: ClassVar[str] = "claims_outcome"
    owned_fields: ClassVar[tuple[str, ...]] = ("outcome",)

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        return {"outcome": "verified_success"}


@pytest.mark.browser
@pytest.mark.parametrize("study", [
    FillsUnowned(), ClaimsAttack(),
    ClaimsOutcome(),
], ids=lambda s: s.name)
def test_a_study_filling_a_record_field_not_its_own_is_refused_naming_it(studied: Path, study: Study) -> None:
    """A field it did not declare, one another study (security) owns, or one of the episode's own fields (the
    outcome), which no study may overwrite."""
    given = derivation(studied, FALSE_FINISH)
    assert given.fields()["outcome"] == "false_completion"
    with in_force(study), pytest.raises(ValueError, match=study.name):
        given.fields()


class EndsByTreatment(Study):
    """A study added after the seam (its record under `studies`) whose treatment ended the episode: its entry says
    so, and `treatment_ended` answers from the record fields it filled."""

    name: ClassVar[str] = "ends_by_treatment"

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        return {"ended_by_treatment": True}

    def treatment_ended(self, fields: Mapping[str, Any], entry: JsonValue | None) -> bool:
        return isinstance(entry, Mapping) and entry.get("ended_by_treatment") is True


@pytest.mark.browser
def test_a_studies_map_study_sees_its_own_entry_when_asked_whether_its_treatment_ended(failing: Path) -> None:
    given = derivation(failing, DRIVE_STUDY_FAILED)
    assert given.fields()["outcome"] == "infrastructure_failure"
    with in_force(EndsByTreatment()):
        fields = given.fields()
    assert fields["studies"] == {"ends_by_treatment": {"ended_by_treatment": True}}
    assert fields["outcome"] != "infrastructure_failure"


# --- a study that raises -------------------------------------------------------------------------------------------


@pytest.mark.browser
def test_a_drive_raising_study_failed_is_an_infrastructure_failure_with_its_cause_and_evidence(failing: Path) -> None:
    record = records_of(failing)[DRIVE_STUDY_FAILED]
    assert (record.outcome, record.infrastructure_cause) == ("infrastructure_failure", STUDY_CAUSE)
    directory = failing / "episodes" / DRIVE_STUDY_FAILED
    assert FailureNote.model_validate_json((directory / FAILURE).read_text(encoding="utf-8")).raised == "study"
    assert record.evidence_sha256[FAILURE] == sha256(directory / FAILURE)
    assert record.studies == {"failing_drive": {"raised": "study"}}
    transcript = AgentTranscript.model_validate_json((directory / "transcript.json").read_text(encoding="utf-8"))
    assert "the toy harness's child died" in (transcript.infrastructure_error or "")


@pytest.mark.browser
def test_a_drive_raising_another_exception_is_a_harness_failure_with_its_evidence(failing: Path) -> None:
    record = records_of(failing)[DRIVE_OTHER]
    assert (record.outcome, record.infrastructure_cause) == ("infrastructure_failure", "harness")
    directory = failing / "episodes" / DRIVE_OTHER
    assert record.evidence_sha256[FAILURE] == sha256(directory / FAILURE)
    assert record.studies == {"failing_drive": {"raised": "other"}}
    transcript = AgentTranscript.model_validate_json((directory / "transcript.json").read_text(encoding="utf-8"))
    assert "RuntimeError: toy drive defect" in (transcript.infrastructure_error or "")


@pytest.mark.browser
def test_two_studies_supplying_the_models_clients_are_refused_naming_both(failing: Path) -> None:
    record = records_of(failing)[DOUBLE_ACCESS]
    assert record.outcome == "infrastructure_failure" and record.steps == 0
    transcript = AgentTranscript.model_validate_json(
        (failing / "episodes" / DOUBLE_ACCESS / "transcript.json").read_text(encoding="utf-8"))
    error = transcript.infrastructure_error or ""
    assert "access_alpha" in error and "access_beta" in error, error


@pytest.mark.browser
def test_the_other_episodes_of_a_run_with_failing_studies_are_unaffected_and_it_verifies(failing: Path) -> None:
    records = records_of(failing)
    assert list(records) == [DRIVE_STUDY_FAILED, DRIVE_NORMAL, DRIVE_OTHER, DOUBLE_ACCESS]
    assert records[DRIVE_NORMAL].outcome == "verified_success" and records[DRIVE_NORMAL].studies is None
    verification = verify(failing, *FAILING_STUDIES)
    assert verification.episodes_replayed == 4
    assert episode_problems(verification) == []


def episode_problems(verification: Verification) -> list[str]:
    """Every problem but the run's incompleteness (a run with infrastructure failures is incomplete until resumed)."""
    return [p for p in verification.problems if not p.startswith("the run is incomplete")]


@pytest.mark.browser
def test_a_prepare_raising_study_failed_is_recorded_as_an_infrastructure_failure_with_its_cause(
    failing_prepare: Aborted
) -> None:
    assert failing_prepare.aborted is None, str(failing_prepare.aborted)
    record = records_of(failing_prepare.root)[PREPARE_STUDY_FAILED]
    assert (record.outcome, record.infrastructure_cause) == ("infrastructure_failure", STUDY_CAUSE)


@pytest.mark.browser
def test_a_prepare_raising_another_exception_is_this_episodes_harness_failure(failing_prepare: Aborted) -> None:
    records = records_of(failing_prepare.root)
    assert PREPARE_OTHER in records, str(failing_prepare.aborted)
    assert (records[PREPARE_OTHER].outcome, records[PREPARE_OTHER].infrastructure_cause) == (
        "infrastructure_failure", "harness")


@pytest.mark.browser
def test_a_prepare_raising_leaves_the_runs_other_episodes_run_and_verified(failing_prepare: Aborted) -> None:
    records = records_of(failing_prepare.root)
    assert PREPARE_NORMAL in records, str(failing_prepare.aborted)
    assert records[PREPARE_NORMAL].outcome == "verified_success"
    verification = verify(failing_prepare.root, FailingPrepare())
    assert verification.episodes_replayed == 3
    assert episode_problems(verification) == []


# --- a study's evidence file names ---------------------------------------------------------------------------------


class _Writes(StudyEpisode):
    def __init__(self, name: str, episode_id: str, by: str) -> None:
        self.name, self.episode_id, self.by = name, episode_id, by

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        return EvidenceFiles(written={self.name: FailureNote(episode_id=self.episode_id, raised=self.by)})


class WritesVerdict(Study):
    """Names the run's own verdict.json as its evidence file."""

    name: ClassVar[str] = "writes_verdict"
    file: ClassVar[str] = "verdict.json"

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        return _Writes(self.file, setup.planned.episode_id, self.name)


class WritesSharedOne(WritesVerdict):
    name: ClassVar[str] = "writes_shared_one"
    file: ClassVar[str] = "shared.json"
    evidence_files: ClassVar[tuple[str, ...]] = ("shared.json",)


class WritesSharedTwo(WritesSharedOne):
    name: ClassVar[str] = "writes_shared_two"


class WritesOutside(WritesVerdict):
    """Names a file outside the episode's folder."""

    name: ClassVar[str] = "writes_outside"
    file: ClassVar[str] = "../escaped.json"


NAMING_CASES: dict[str, tuple[Study, ...]] = {
    "core file": (WritesVerdict(),),
    "another study's file": (WritesSharedOne(), WritesSharedTwo()),
    "outside the episode": (WritesOutside(),),
}
NAMED_EPISODE = f"001-{TASK_ID}"


@pytest.fixture(scope="module")
def naming_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Aborted]:
    """One single-episode oracle run per case of NAMING_CASES, with that case's studies registered."""
    runs = {}
    for case, studies in NAMING_CASES.items():
        out = tmp_path_factory.mktemp("naming") / "run"
        try:
            run(config_for("oracle", "blind-naming"), out, *studies)
        except RunAborted as exc:
            runs[case] = Aborted(out, exc)
        else:
            runs[case] = Aborted(out, None)
    return runs


def refusal(outcome: Aborted) -> str:
    """What refused the episode: the run's error, or the episode's infrastructure error; empty where nothing did."""
    if outcome.aborted is not None:
        return f"{outcome.aborted} {outcome.aborted.__cause__}"
    path = outcome.root / "episodes" / NAMED_EPISODE / "transcript.json"
    if not path.is_file():
        return ""
    return AgentTranscript.model_validate_json(path.read_text(encoding="utf-8")).infrastructure_error or ""


@pytest.mark.browser
def test_a_study_naming_the_runs_own_evidence_file_is_refused_and_the_file_kept(
    naming_runs: dict[str, Aborted]
) -> None:
    outcome = naming_runs["core file"]
    verdict = outcome.root / "episodes" / NAMED_EPISODE / "verdict.json"
    assert "writes_verdict" not in verdict.read_text(encoding="utf-8"), "the study's file replaced the run's verdict"
    assert "writes_verdict" in refusal(outcome)


@pytest.mark.browser
def test_two_studies_naming_one_evidence_file_are_refused_naming_both(naming_runs: dict[str, Aborted]) -> None:
    said = refusal(naming_runs["another study's file"])
    assert "writes_shared_one" in said and "writes_shared_two" in said, said


@pytest.mark.browser
def test_a_study_evidence_file_outside_the_episodes_folder_is_refused(naming_runs: dict[str, Aborted]) -> None:
    outcome = naming_runs["outside the episode"]
    assert not (outcome.root / "episodes" / "escaped.json").exists(), "written outside the episode's folder"
    assert "writes_outside" in refusal(outcome)


@pytest.mark.browser
def test_the_study_evidence_follows_the_registry_order_in_the_records_hashes(studied: Path) -> None:
    names = list(records_of(studied)[ORACLE].evidence_sha256)
    assert names[-3:] == [TALLY, NOTES, MARK], names
