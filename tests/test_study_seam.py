"""The episode study seam (computerops/studies/): a toy study added only to the registry takes part in a real run
(real Chromium, the SCRIPTED endpoint), writes evidence the run hashes, gets its record entry, and `verify`
recomputes the entry and asks the study about its own evidence; the registry's rules refuse what two studies cannot
both do to one episode. The report goes through the registry too: the toy's figures are its entry in the report's
`studies` map and its block in the report's view, and a study may not fill a report field that is not its own.

The toy ("visits") touches no module of the project but the registry's list: it keeps, for each helpdesk episode, the
pages the episode's tenant served, in a file of its own (`visits.json`); its record entry is the count of pages and
whether the episode was planned with faults; its report entry the episodes and pages over the run, laid out as one
paragraph.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, JsonValue
from test_verify import reseal_checksums, rewrite_record
from typer.testing import CliRunner

from adapter.transcript import AgentTranscript
from computerops.catalog import audit
from computerops.catalog.mutants import Mutant, MutantClass
from computerops.cli.main import app
from computerops.report.layout import report_view
from computerops.report.run import RunReport, run_report
from computerops.report.tables import Block, Paragraph
from computerops.runs.bundle import EPISODES, RunDirectory
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.runs.episode import derived_fields, planted
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from computerops.runs.verification import verify_run
from computerops.studies import registry
from computerops.studies.base import (
    EpisodeEnd,
    EpisodeFacts,
    EpisodeSetup,
    EvidenceFiles,
    MutantEpisode,
    MutantJudgement,
    Study,
    StudyEpisode,
)
from computerops.studies.rules import RUN_REPORT_FIELDS, evidence_problem, unclaimed
from replays import RecordedEpisode
from sites.kit.plant import Plant
from tasks import LoadedTask, load_catalog
from verifier import Claim, judge

CATALOG = load_catalog()
HELPDESK = "helpdesk.solve-ticket@1"
WEBMAIL = next(t.id for t in CATALOG.values() if t.spec.site == "webmail")
VISITS = "visits.json"


class VisitsLog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = 1
    episode_id: str
    pages: list[str]


class _Visits(StudyEpisode):
    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id

    def evidence(self, episode_dir: Path, ended: EpisodeEnd) -> EvidenceFiles:
        pages = [op.path for op in ended.operations if op.method == "GET"]
        log = VisitsLog(episode_id=self.episode_id, pages=pages)
        return EvidenceFiles(written={VISITS: log}, loaded=log)


class Visits(Study):
    name: ClassVar[str] = "visits"
    evidence_files: ClassVar[tuple[str, ...]] = (VISITS,)

    def begin(self, setup: EpisodeSetup) -> StudyEpisode | None:
        return _Visits(setup.planned.episode_id) if setup.task.spec.site == "helpdesk" else None

    def read(self, episode_dir: Path) -> VisitsLog | None:
        path = episode_dir / VISITS
        return VisitsLog.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def problems(self, setup: EpisodeSetup, loaded: object) -> list[str]:
        assert isinstance(loaded, VisitsLog)
        if loaded.episode_id != setup.planned.episode_id:
            return [f"{VISITS}: written for episode {loaded.episode_id}"]
        return []

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        log = facts.evidence.get(self.name)
        if not isinstance(log, VisitsLog):
            return None
        return {"pages": len(log.pages), "faults": facts.setup.planned.faults}

    def report(self, records: Sequence[EpisodeRecord]) -> JsonValue | None:
        pages: list[int] = []
        for record in records:
            entry = (record.studies or {}).get(self.name)
            if isinstance(entry, dict) and isinstance(count := entry.get("pages"), int):
                pages.append(count)
        return {"episodes": len(pages), "pages": sum(pages)} if pages else None

    def report_blocks(self, figures: Mapping[str, Any], entry: JsonValue | None) -> list[Block]:
        if not isinstance(entry, dict):
            return []
        return [Paragraph(text=f"Visits: {entry['pages']} pages over {entry['episodes']} helpdesk episode(s).")]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "STUDIES", [*registry.STUDIES, Visits()])
        plan = [PlannedEpisode(episode_id="001-helpdesk", task_id=HELPDESK, policy="oracle"),
                PlannedEpisode(episode_id="002-webmail", task_id=WEBMAIL, policy="oracle")]
        config = RunConfig(run_id="toy", tasks=[HELPDESK, WEBMAIL], endpoint=EndpointConfig(
            kind="scripted", policies=["oracle"]), episodes=plan)
        out = tmp_path_factory.mktemp("toy") / "run"
        asyncio.run(execute_run(config, [CATALOG[HELPDESK], CATALOG[WEBMAIL]], out, lambda _: None))
    return out


def problems(run: Path) -> list[str]:
    return asyncio.run(verify_run(RunDirectory.open(run))).problems


@pytest.mark.browser
def test_a_study_added_only_to_the_registry_writes_evidence_gets_its_entry_and_is_verified(
        toy_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = RunDirectory.open(toy_run)
    helpdesk, webmail = bundle.records()
    log = VisitsLog.model_validate_json((bundle.episode_dir(helpdesk.episode_id) / VISITS).read_text())
    assert log.pages and log.pages[0].startswith("/helpdesk/"), log
    assert helpdesk.studies == {"visits": {"pages": len(log.pages), "faults": True}}
    assert VISITS in helpdesk.evidence_sha256 and helpdesk.outcome == "verified_success"
    assert webmail.studies is None and VISITS not in webmail.evidence_sha256, "not one of its episodes"
    assert not (bundle.episode_dir(webmail.episode_id) / VISITS).exists()
    assert "studies" not in json.loads((toy_run / EPISODES).read_text().splitlines()[1])

    monkeypatch.setattr(registry, "STUDIES", [*registry.STUDIES, Visits()])
    assert problems(toy_run) == []

    altered = tmp_path / "altered"
    shutil.copytree(toy_run, altered)
    path = altered / "episodes" / helpdesk.episode_id / VISITS
    path.write_text(log.model_copy(update={"episode_id": "002-webmail"}).model_dump_json())
    # A careful forger: the record's hash of the file and the checksum list recomputed over it.
    rewrite_record(altered, helpdesk.episode_id, evidence_sha256={
        **helpdesk.evidence_sha256, VISITS: hashlib.sha256(path.read_bytes()).hexdigest()})
    reseal_checksums(altered)
    found = problems(altered)
    assert any(f"{helpdesk.episode_id}/{VISITS}: written for episode 002-webmail" in p for p in found), found

    forged = tmp_path / "forged"
    shutil.copytree(toy_run, forged)
    rewrite_record(forged, helpdesk.episode_id, studies={"visits": {"pages": 99, "faults": True}})
    reseal_checksums(forged)
    found = problems(forged)
    assert any("differs from its evidence" in p and "studies" in p for p in found), found


@pytest.mark.browser
def test_without_the_study_in_the_registry_its_entry_is_not_taken_on_trust(
        toy_run: Path, tmp_path: Path) -> None:
    found = problems(toy_run)
    assert any("001-helpdesk" in p and "studies" in p for p in found), found


# --- The registry's rules (pure) -------------------------------------------------------------------------------


def _setup() -> EpisodeSetup:
    planned = PlannedEpisode(episode_id="001", task_id=HELPDESK, policy="oracle")
    config = RunConfig(run_id="r", tasks=[HELPDESK], endpoint=EndpointConfig(kind="scripted", policies=["oracle"]),
                       episodes=[planned])
    return EpisodeSetup(config, CATALOG[HELPDESK], planned)


class _Planting(Study):
    name: ClassVar[str] = "planting"

    def plant(self, setup: EpisodeSetup) -> Plant | None:
        return Plant(table="tickets", column="body", text="planted")


def report_of(run: Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["report", str(run), "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


@pytest.mark.browser
def test_a_study_added_only_to_the_registry_has_its_report_entry_and_block(
        toy_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without = report_of(toy_run)
    assert "studies" not in without, "a run's report without the study has no studies map"
    bundle = RunDirectory.open(toy_run)
    entry = (bundle.records()[0].studies or {}).get("visits")
    assert isinstance(entry, dict)
    pages = entry["pages"]

    monkeypatch.setattr(registry, "STUDIES", [*registry.STUDIES, Visits()])
    found = report_of(toy_run)
    assert found["studies"] == {"visits": {"episodes": 1, "pages": pages}}
    assert list(found)[-1] == "studies", "after every field reports made before the map have"
    assert {key: value for key, value in found.items() if key != "studies"} == without
    sealed = json.loads((toy_run / "summary.json").read_text())
    assert sealed["studies"] == found["studies"], "the run made with the study sealed its entry"

    blocks = report_view(RunReport.model_validate(found)).blocks
    said = [b for b in blocks if isinstance(b, Paragraph) and b.text.startswith("Visits:")]
    assert said == [Paragraph(text=f"Visits: {pages} pages over 1 helpdesk episode(s).")]
    assert blocks[-1] == said[0], "a study added later lays out its blocks after the others'"
    result = CliRunner().invoke(app, ["report", str(toy_run)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and f"Visits: {pages} pages over 1 helpdesk episode(s)." in result.output


def test_two_studies_planting_into_one_episode_are_refused() -> None:
    first, second = _Planting(), _Planting()
    assert planted(_setup(), (first,)) is not None
    with pytest.raises(ValueError, match="more than one study plants"):
        planted(_setup(), (first, second))


REGISTERED = list(registry.STUDIES)


def _fields(monkeypatch: pytest.MonkeyPatch, *extra: Study) -> dict[str, Any]:
    monkeypatch.setattr(registry, "STUDIES", [*REGISTERED, *extra])
    setup = _setup()
    verdict = judge(setup.task.spec, setup.task.sha256, state={}, journal=[], operations=[], claim=Claim(success=None))
    transcript = AgentTranscript(system_prompt="", instruction="", tool_mode="text", first_observation="",
                                 stop_reason="budget_exhausted")
    return derived_fields(setup.config, setup.task, setup.planned, transcript, [], [], verdict)


class _Squatter(Study):
    name: ClassVar[str] = "squatter"
    owned_fields: ClassVar[tuple[str, ...]] = ("attack",)

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        return {"attack": None}


class _Overreaching(Study):
    name: ClassVar[str] = "overreaching"

    def record_fields(self, facts: EpisodeFacts) -> dict[str, Any]:
        return {"outcome": "verified_success"}


class _Entry(Study):
    name: ClassVar[str] = "entry"

    def record(self, facts: EpisodeFacts) -> JsonValue | None:
        return {"steps": len(facts.transcript.steps)}


def test_a_study_fills_only_its_own_fields_and_no_two_own_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fields(monkeypatch)["studies"] is None
    assert _fields(monkeypatch, _Entry())["studies"] == {"entry": {"steps": 0}}
    with pytest.raises(ValueError, match="security and squatter both own the record field 'attack'"):
        _fields(monkeypatch, _Squatter())
    with pytest.raises(ValueError, match=r"overreaching filled the record fields \['outcome'\], not its own \[\]"):
        _fields(monkeypatch, _Overreaching())
    with pytest.raises(ValueError, match=r"two studies share the name .entry."):
        _fields(monkeypatch, _Entry(), _Entry())


def test_the_registered_studies_own_the_record_fields_they_always_filled() -> None:
    owned = {study.name: study.owned_fields for study in registry.registered()}
    assert owned == {"site_faults": ("faults_enabled", "faults_configured", "faults_fired"),
                     "security": ("attack",), "serving": ("serving",), "persistence": ("persistence",),
                     "page_noise": ()}


def test_the_registered_studies_fill_the_report_fields_they_always_filled() -> None:
    filled = {study.name: study.report_fields for study in registry.registered()}
    assert filled == {"site_faults": ("exposure", "recovery_funnel", "false_completions_with_fault_context"),
                      "security": ("security",), "serving": ("serving",), "persistence": ("persistence",),
                      "page_noise": ()}
    every = [field for fields in filled.values() for field in fields]
    assert sorted(RUN_REPORT_FIELDS | set(every)) == sorted(RunReport.model_fields), "each field filled by one side"


class _ReportSquatter(Study):
    name: ClassVar[str] = "squatter"
    report_fields: ClassVar[tuple[str, ...]] = ("security",)


class _ReportOverreaching(Study):
    name: ClassVar[str] = "overreaching"
    report_fields: ClassVar[tuple[str, ...]] = ("loops",)


class _ReportStray(Study):
    name: ClassVar[str] = "stray"

    def report_figures(self, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
        return {"serving": None}


def test_a_study_fills_only_its_own_report_fields_and_no_two_fill_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def report(*extra: Study) -> RunReport:
        monkeypatch.setattr(registry, "STUDIES", [*REGISTERED, *extra])
        return run_report("r", [], declared_scripted=True)

    assert report().studies is None
    with pytest.raises(ValueError, match="security and squatter both fill the report field 'security'"):
        report(_ReportSquatter())
    with pytest.raises(ValueError, match="study overreaching fills the report field 'loops', which the report fills"):
        report(_ReportOverreaching())
    with pytest.raises(ValueError, match=r"study stray filled the report fields \['serving'\], not its own \[\]"):
        report(_ReportStray())


class _Claims(Study):
    name: ClassVar[str] = "claims"
    evidence_files: ClassVar[tuple[str, ...]] = ("claims.json", "claims/*.json")


@pytest.mark.parametrize(("name", "said"), [
    ("claims.json", None), ("claims/1.json", None),
    ("verdict.json", "the run's own"), ("receipt.json", "the run's own"), ("admitted.json", "the run's own"),
    ("../claims.json", "leaves the episode's folder"), ("/tmp/claims.json", "leaves the episode's folder"),
    ("claims/../../x.json", "leaves the episode's folder"), ("claims\\1.json", "leaves the episode's folder"),
    ("", "leaves the episode's folder"), ("other.json", "not among its evidence files"),
    ("claims/1.txt", "not among its evidence files"), ("taken.json", "studies visits and claims both name"),
])
def test_a_studys_evidence_file_is_its_own_inside_the_episode_and_no_one_elses(name: str, said: str | None) -> None:
    found = evidence_problem(_Claims(), name, {"transcript.json": "the run", "taken.json": "visits"})
    assert (found is None) if said is None else (found is not None and said in found and "claims" in found), found


@pytest.mark.parametrize(("pattern", "said"), [
    ("verdict.json", "names the run's own"), ("*.json", "names the run's own"), ("../x.json", "leaves"),
    ("/x.json", "leaves"),
])
def test_an_evidence_pattern_that_could_name_the_runs_files_or_leave_the_folder_is_refused(
        monkeypatch: pytest.MonkeyPatch, pattern: str, said: str) -> None:
    class Wide(Study):
        name: ClassVar[str] = "wide"
        evidence_files: ClassVar[tuple[str, ...]] = (pattern,)

    monkeypatch.setattr(registry, "STUDIES", [*REGISTERED, Wide()])
    with pytest.raises(ValueError, match=f"study wide: evidence pattern .* {said}"):
        registry.registered()


def test_hashed_files_no_registered_study_claims_are_named() -> None:
    names = ["transcript.json", "trace.zip", "serving.json", "checkpoints/3.json", "visits.json", "notes/1.txt"]
    assert unclaimed(names, registry.registered()) == ["visits.json", "notes/1.txt"]
    assert unclaimed(names, (*registry.registered(), Visits())) == ["notes/1.txt"]


class _Probe(Study):
    """A toy study's audit hooks: an extra control, a class of its own sampled across the audit, an entry in the
    mutant's planned episode, its own fate."""

    name: ClassVar[str] = "probe"
    audit_classes: ClassVar[frozenset[MutantClass]] = frozenset({"other-page"})
    audit_sampled_across: ClassVar[frozenset[MutantClass]] = frozenset({"other-page"})

    def audit_controls(self, task: LoadedTask) -> list[str]:
        return ["noop"]

    def audit_mutants(self, task: LoadedTask, controls: Mapping[str, EpisodeRecord],
                      load: Callable[[EpisodeRecord], tuple[RecordedEpisode, AgentTranscript]]) -> list[Mutant]:
        assert set(controls) == {"oracle", "noop"}
        return [Mutant(id=f"probe:{k}", mutant_class="other-page", description="the probe's",
                       steps=list(task.spec.scripted_control)) for k in range(2)]

    def audit_fields(self, task: LoadedTask, mutant: Mutant) -> dict[str, Any]:
        return {"studies": {self.name: {"probed": True}}} if mutant.mutant_class in self.audit_classes else {}

    def audit_judge(self, episode: MutantEpisode) -> MutantJudgement:
        return MutantJudgement(fate="killed", note="the probe's rule")


def test_a_study_added_only_to_the_registry_brings_its_audit_class(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "STUDIES", [*REGISTERED, _Probe()])
    studies = registry.registered()
    helpdesk, webmail = CATALOG[HELPDESK], CATALOG[WEBMAIL]
    items = audit.control_items(studies, helpdesk)
    assert items[0] == "oracle" and items[-1] == "noop"
    record: Any = object()  # the probe reads no control
    controls = {"oracle": record, "noop": record}
    taken: dict[str, int] = {}

    def load(_: EpisodeRecord) -> tuple[RecordedEpisode, AgentTranscript]:
        raise AssertionError("the probe loads no control")

    first = [m for m in audit.study_mutants(studies, helpdesk, controls, load, 1, taken) if m.id.startswith("probe:")]
    second = [m for m in audit.study_mutants(studies, webmail, controls, load, 1, taken) if m.id.startswith("probe:")]
    assert [m.id for m in first] == ["probe:0"] and second == []  # one of the class in the whole quicker audit
    everything = audit.study_mutants(studies, webmail, controls, load, None, {})
    assert [m.id for m in everything if m.mutant_class == "other-page"] == ["probe:0", "probe:1"]
    fields = audit.episode_fields(studies, helpdesk, first[0])
    assert fields["studies"] == {"probe": {"probed": True}} and "policy" not in fields
    PlannedEpisode(episode_id="0001-x", task_id=helpdesk.id, policy="mutant:x/probe:0", **fields)  # a valid plan
    assert isinstance(audit.judged_by(studies, "other-page"), _Probe)
    assert type(audit.judged_by(studies, "drop-step")) is Study  # any other class: the audit's own judgement
    assert audit.judged_by(studies, "attack-start").name == "security"
    assert audit.judged_by(studies, "persistence-recovery").name == "persistence"


def test_two_studies_bringing_one_audit_class_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class _Twin(_Probe):
        name: ClassVar[str] = "twin"

    monkeypatch.setattr(registry, "STUDIES", [*REGISTERED, _Probe(), _Twin()])
    with pytest.raises(ValueError, match="both bring the audit's mutant class 'other-page'"):
        registry.registered()


def test_the_audit_names_no_study() -> None:
    source = Path(audit.__file__).read_text(encoding="utf-8")
    code = source[source.index('"""', 3) + 3:]  # the module's docstring may tell of them
    for name in ("mutant_attacks", "mutant_persistence", "computerops.persistence", "attack_", "OBEDIENT", "obedient",
                 "HARNESS_CLASSES", ".persistence", "persistence=", "CHECKPOINTS", "broker_mode"):
        assert name not in code, name
