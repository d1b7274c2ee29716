"""`computerops verify DIR`: a reviewer's check of a run from its raw evidence alone.

In order: the checksum list against every file; each record's evidence hashes; each verdict
re-judged from the saved state, journal, operations and transcript; each record's derived fields
recomputed; each episode replayed on a fresh tenant (its receipt must equal the saved one and
PASS); the summary recomputed from the verified records. The first mismatch is what a reviewer
reads first; every problem is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, PrivateAttr

from adapter.transcript import AgentTranscript
from computerops.core import formats
from computerops.core.clock import utc_stamp
from computerops.core.difference import first_difference
from computerops.core.formats import Versioned
from computerops.core.hashing import file_sha256
from computerops.experiment.analysis import analyse
from computerops.experiment.collect import ANALYSIS_FILE, read_experiment_run
from computerops.experiment.lock import ExperimentRefused
from computerops.report.run import report_json_as, summarize
from computerops.runs.bundle import (
    CHECKSUMS,
    EPISODES,
    INTERRUPTED,
    LOST_WORKER,
    SUMMARY,
    VERIFICATION,
    WORKER_EVENTS,
    BundleError,
    RunDirectory,
)
from computerops.runs.config import RunConfig
from computerops.runs.episode import claim_of, derived_fields
from computerops.runs.instances import changed_field
from computerops.runs.records import EpisodeRecord, LostWorker, RunManifest, WorkerEvent
from computerops.studies.base import EpisodeSetup
from computerops.studies.registry import registered
from computerops.studies.rules import unclaimed
from replays import Receipt, RecordedEpisode, replay_episode
from sites.kit.scratch import ScratchDirectory
from sites.kit.tenancy import TenantRegistry
from sites.registry import tenant_registry
from tasks import LoadedTask, load_catalog
from verifier import rejudge


class Verification(Versioned):
    """What `computerops verify` found; written as verification.json when it passed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.verification/1"] = formats.VERIFICATION

    run_id: str
    verified_at: str
    passed: bool
    files_checked: int
    episodes_replayed: int
    checksums_sha256: str | None
    """sha256 of the checksum list that was verified: the report shows E2 only while it is unchanged."""
    problems: list[str]
    _receipts: list[Receipt] = PrivateAttr(default_factory=list)

    @property
    def receipts(self) -> list[Receipt]:
        """The receipts of this verification's own replays, in record order (not written to disk)."""
        return self._receipts

    @property
    def first_mismatch(self) -> str | None:
        return self.problems[0] if self.problems else None


def _episode_problems(
    config: RunConfig, catalog: Mapping[str, LoadedTask], record: EpisodeRecord, transcript: AgentTranscript,
    episode: RecordedEpisode, evidence: Mapping[str, object] | None = None, root: Path | None = None,
) -> list[str]:
    """The verdict re-judged and the record's derived fields recomputed from the episode's evidence (`evidence`: each
    study's, read back by the study, by its name; `root`: the run directory, whose instances file names what changed
    in a regenerated instance)."""
    task = catalog.get(record.task_id)
    if task is None:
        return [f"{record.episode_id}: task {record.task_id} is not in the catalog"]
    if task.sha256 != record.task_sha256:
        field = None if root is None else changed_field(root, task)
        what = f"the regenerated instance differs in {field}" if field else f"task file {task.path.name} changed"
        return [f"{record.episode_id}: {what} since the run ({task.sha256[:12]} now, {record.task_sha256[:12]} "
                "recorded)"]
    planned = next((p for p in config.episodes if p.episode_id == record.episode_id), None)
    if planned is None:
        return [f"{record.episode_id}: not an episode of the run's plan"]
    verdict = rejudge(task.spec, task.sha256, episode.verdict, state=episode.final_state, journal=episode.journal,
                      operations=episode.operations, claim=claim_of(transcript))
    problems = []
    if (found := first_difference(episode.verdict.model_dump(mode="json"), verdict.model_dump(mode="json"))):
        problems.append(f"{record.episode_id}/verdict.json differs from the verdict re-judged from the "
                        f"evidence: {found}")
    loaded = evidence or {}
    setup = EpisodeSetup(config, task, planned)
    problems += [f"{record.episode_id}/{problem}" for study in registered() if study.name in loaded
                 for problem in study.problems(setup, loaded[study.name])]
    problems += _participation_problems(record, setup, loaded)
    fields = derived_fields(config, task, planned, transcript, episode.operations, episode.journal, verdict,
                            final_state=episode.final_state, evidence=loaded, record_format=record.format)
    recomputed = EpisodeRecord.model_validate({**record.model_dump(), **fields}).model_dump(mode="json")
    stored = record.model_dump(mode="json")
    # A field left out of a record when empty (`attack` of a task without one) reads as None on both sides.
    if (found := first_difference({k: stored.get(k) for k in fields}, {k: recomputed.get(k) for k in fields})):
        problems.append(f"{record.episode_id}: record in episodes.jsonl differs from its evidence: {found}")
    return problems


def _participation_problems(record: EpisodeRecord, setup: EpisodeSetup, loaded: Mapping[str, object]) -> list[str]:
    """Each study's evidence where its plan puts it: none for an episode that is not the study's (`begin`), and,
    for one that is, the evidence of a study that declares evidence files, unless the episode ended in an
    infrastructure failure (a harness that failed before it wrote any)."""
    problems = []
    for study in registered():
        takes_part = study.begin(setup) is not None
        if not takes_part and study.name in loaded:
            problems.append(f"{record.episode_id}: study {study.name} has evidence of an episode that is not its")
        elif (takes_part and study.evidence_files and study.name not in loaded
              and record.outcome != "infrastructure_failure"):
            problems.append(f"{record.episode_id}: study {study.name}'s evidence ({', '.join(study.evidence_files)}) "
                            "is missing from an episode that is the study's and did not fail in its harness")
    return problems


def _study_evidence(record: EpisodeRecord, directory: Path) -> tuple[dict[str, object], list[str]]:
    """Each registered study's evidence of the episode read back (by study name), and what a study could not read."""
    evidence: dict[str, object] = {}
    problems: list[str] = []
    for study in registered():
        try:
            loaded = study.read(directory)
        except (ValueError, OSError) as exc:
            files = ", ".join(study.evidence_files) or "its evidence"
            problems.append(f"{record.episode_id}/{files}: study {study.name} cannot read its evidence: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            continue
        if loaded is not None:
            evidence[study.name] = loaded
    return evidence, problems


async def verify_run(bundle: RunDirectory) -> Verification:
    """Check a sealed run from its raw evidence; see the module docstring for the order."""
    problems = bundle.checksum_problems()
    checksums = bundle.root / CHECKSUMS
    try:
        manifest = bundle.manifest()
        records = bundle.records()
    except (BundleError, ValueError) as exc:
        problems.append(f"the run cannot be read: {exc}")
        return Verification(run_id=bundle.root.name, verified_at=utc_stamp(), passed=False,
                            files_checked=len(bundle.files()), episodes_replayed=0, checksums_sha256=None,
                            problems=problems)
    lost: list[str] = []
    try:
        problems += _admission_problems(bundle)
        lost = bundle.lost_admissions()
        completeness = bundle.completeness()
    except (BundleError, ValueError) as exc:
        problems.append(f"the run's admissions cannot be read: {exc}")
    else:
        if not completeness.complete:
            remedy = (f"{EPISODES} lost admitted episodes" if lost else
                      f"continue it with `computerops run --resume {bundle.root}`")
            problems.append(completeness.incomplete(f"{remedy} (an incomplete run is never E2)"))
    receipts: list[Receipt] = []
    catalog = load_catalog()
    with ScratchDirectory("verify") as root:
        registry = tenant_registry(root)
        try:
            for record in records:
                try:
                    found, receipt = await _check_episode(bundle, manifest.config, catalog, registry, record)
                except (BundleError, ValueError) as exc:
                    found, receipt = [f"{record.episode_id}: {exc}"], None
                problems += found
                receipts += [receipt] if receipt is not None else []
        finally:
            registry.close()
    problems += lost  # after the episodes' own checks, which name what a changed record says
    problems += worker_problems(bundle, manifest)
    problems += _summary_problems(bundle, manifest, records)
    problems += _experiment_problems(bundle, manifest)
    verification = Verification(
        run_id=manifest.config.run_id, verified_at=utc_stamp(), passed=not problems, files_checked=len(bundle.files()),
        episodes_replayed=len(receipts), checksums_sha256=file_sha256(checksums) if checksums.is_file() else None,
        problems=problems,
    )
    verification._receipts = receipts
    return verification


def worker_problems(bundle: RunDirectory, manifest: RunManifest) -> list[str]:
    """A Ray run's workers.jsonl against its manifest, resumes and attempts set apart: each worker lost is one the
    manifest, a resume or an earlier replacement names; each loss's attempt (interrupted/<id>/attempt-N) holds its
    lost_worker.json, naming the same worker, episode and cause; each lost_worker.json under interrupted/ is a
    logged loss."""
    try:
        events = bundle.worker_events()
        resumed = [entry.execution.workers for entry in bundle.resumes() if entry.execution is not None]
    except (BundleError, ValueError) as exc:
        return [f"{WORKER_EVENTS} or a resume cannot be read: {exc}"]
    problems = []
    # The workers each start and resume began with, then each replacement as it joined.
    known = {*manifest.execution.workers, *(worker for workers in resumed for worker in workers)}
    lost: set[str] = set()
    logged: set[tuple[str, str, str]] = set()
    for number, event in enumerate(events, start=1):
        where = f"{WORKER_EVENTS}:{number}"
        if event.event == "lost":
            if event.worker not in known:
                problems.append(f"{where}: {event.worker} lost, but no start, resume or replacement names it")
            lost.add(event.worker)
            logged.add((event.episode_id or "", event.worker, event.cause or ""))
            if event.set_apart is not None:
                problems += _loss_problems(bundle, event.set_apart, event, where)
        else:
            if event.in_place_of not in lost:
                problems.append(f"{where}: {event.event} in place of {event.in_place_of}, which no earlier line lost")
            if event.event == "replaced":
                known.add(event.worker)
    for path in sorted(bundle.root.glob(f"{INTERRUPTED}/*/attempt-*/{LOST_WORKER}")):
        try:
            loss = LostWorker.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{path.relative_to(bundle.root).as_posix()}: not a worker loss: {exc}")
            continue
        if (loss.episode_id, loss.worker, loss.cause) not in logged:
            problems.append(f"{path.relative_to(bundle.root).as_posix()}: {loss.worker}'s loss on {loss.episode_id} "
                            f"is not in {WORKER_EVENTS}")
    return problems


def _loss_problems(bundle: RunDirectory, attempt: str, event: WorkerEvent, where: str) -> list[str]:
    """A `lost` event against the attempt it names: there, its lost_worker.json says the same."""
    parts = attempt.split("/")
    if len(parts) != 3 or parts[0] != INTERRUPTED or parts[1] != event.episode_id or not parts[2].startswith(
            "attempt-"):
        return [f"{where}: set apart at {attempt}, not interrupted/{event.episode_id}/attempt-N"]
    try:
        loss = bundle.lost_worker(attempt)
    except (OSError, ValueError) as exc:
        return [f"{attempt}/{LOST_WORKER}: not a worker loss: {exc}"]
    if loss is None:
        return [f"{where}: {event.worker} lost on {event.episode_id}, but {attempt} holds no {LOST_WORKER}"]
    if (loss.episode_id, loss.worker, loss.cause) != (event.episode_id, event.worker, event.cause):
        return [f"{attempt}/{LOST_WORKER} names {loss.worker} on {loss.episode_id} ({loss.cause}), {where} "
                f"{event.worker} on {event.episode_id} ({event.cause})"]
    return []


def _admission_problems(bundle: RunDirectory) -> list[str]:
    """An episode may have several records only when each earlier one was an infrastructure failure that a resume
    listed as run again."""
    rerun = {episode for entry in bundle.resumes() for episode in entry.rerun_infrastructure}
    problems: list[str] = []
    latest: dict[str, EpisodeRecord] = {}
    for record in bundle.all_records():
        earlier = latest.get(record.episode_id)
        if earlier is not None and not (earlier.outcome == "infrastructure_failure" and record.episode_id in rerun):
            problems.append(f"{record.episode_id}: admitted twice in episodes.jsonl")
        latest[record.episode_id] = record
    return problems


async def _check_episode(
    bundle: RunDirectory, config: RunConfig, catalog: Mapping[str, LoadedTask], registry: TenantRegistry,
    record: EpisodeRecord,
) -> tuple[list[str], Receipt | None]:
    """Problems of one admitted episode, and the receipt of its replay (None when it was not replayed)."""
    integrity = bundle.integrity_problems(record)
    if integrity:
        return integrity, None  # altered files are named; judging them again would only repeat that
    transcript = AgentTranscript.model_validate_json(
        (bundle.episode_dir(record.episode_id) / "transcript.json").read_text(encoding="utf-8"))
    episode = bundle.load_episode(record)
    directory = bundle.episode_dir(record.episode_id)
    evidence, problems = _study_evidence(record, directory)
    if problems:
        return problems, None
    # A file no registered study claims: the run was made with a study this installation does not register.
    problems = [f"{record.episode_id}/{name}: hashed evidence that neither the run nor a registered study claims"
                for name in unclaimed(list(record.evidence_sha256), registered())]
    problems += _episode_problems(config, catalog, record, transcript, episode, evidence, bundle.root)
    if problems:
        return problems, None
    receipt = await replay_episode(catalog[record.task_id], episode, registry)
    saved = bundle.receipt(record.episode_id)
    if saved is None or saved != receipt:
        found = "missing" if saved is None else first_difference(
            saved.model_dump(mode="json"), receipt.model_dump(mode="json"))
        problems.append(f"{record.episode_id}/receipt.json differs from a new replay: {found}")
    if receipt.result != "PASS":
        problems.append(f"{record.episode_id}: replay FAIL: {receipt.first_mismatch}")
    if record.replay != receipt.result:
        problems.append(f"{record.episode_id}: record says replay {record.replay}, replay gives {receipt.result}")
    return problems, receipt


def _summary_problems(bundle: RunDirectory, manifest: RunManifest, records: list[EpisodeRecord]) -> list[str]:
    path = bundle.root / SUMMARY
    if not path.is_file():
        return [f"{SUMMARY} is missing"]
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        return [f"{SUMMARY} does not parse: {exc}"]
    found = first_difference(stored, report_json_as(summarize(manifest, records), stored))
    return [f"{SUMMARY} differs from the summary recomputed from the evidence: {found}"] if found else []


def _experiment_problems(bundle: RunDirectory, manifest: RunManifest) -> list[str]:
    """An experiment's run: its sealed analysis against the one recomputed from the raw evidence."""
    if manifest.config.experiment is None:
        return []
    path = bundle.root / ANALYSIS_FILE
    if not path.is_file():
        return [f"{ANALYSIS_FILE} is missing (an experiment's run seals its analysis)"]
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        recomputed = analyse(read_experiment_run(bundle.root)).model_dump(mode="json")
    except (ValueError, ExperimentRefused, BundleError) as exc:
        return [f"the experiment's analysis cannot be recomputed: {exc}"]
    found = first_difference(stored, recomputed)
    return [f"{ANALYSIS_FILE} differs from the analysis recomputed from the evidence: {found}"] if found else []


def record_verification(bundle: RunDirectory, verification: Verification) -> None:
    """Keep a passing verification beside the evidence (outside the checksum list): evidence level E2. BundleError,
    saying so, where the run cannot be written (a read-only copy): the verification passed all the same."""
    if not verification.passed:
        raise BundleError("only a passing verification is recorded")
    path, partial = bundle.root / VERIFICATION, bundle.root / f".{VERIFICATION}.{os.getpid()}.tmp"
    try:
        partial.write_text(verification.model_dump_json(indent=2) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise BundleError(f"{path} not written ({exc.strerror or exc}): the run verified, but a copy that cannot "
                          "be written keeps no record of it, so its report shows E1; verify a writable copy to "
                          "record E2") from exc


def reviewer_verified(bundle: RunDirectory) -> bool:
    """True when a passing verification is recorded and the checksum list it verified is unchanged."""
    path, checksums = bundle.root / VERIFICATION, bundle.root / CHECKSUMS
    if not (path.is_file() and checksums.is_file()):
        return False
    try:
        verification = Verification.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    unchanged = verification.checksums_sha256 == file_sha256(checksums) and not bundle.checksum_problems()
    return verification.passed and unchanged
