"""The run directory: manifest, append-only episode records, per-episode evidence files."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, TypeVar

from pydantic import BaseModel, TypeAdapter

from computerops.core.durable import sync, write_durably
from computerops.core.hashing import canonical_sha256, file_sha256
from computerops.runs.config import PlannedEpisode
from computerops.runs.records import (
    AdmittedEpisode,
    Completeness,
    EpisodeRecord,
    LostWorker,
    ResumeEntry,
    RunManifest,
    StartedEpisode,
    WorkerEvent,
)
from replays import Receipt, RecordedEpisode
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from sites.kit.scratch import directory_lock
from verifier import Verdict

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
EVIDENCE_FILES = ("transcript.json", "operations.json", "journal.json", "final_state.json", "verdict.json")
RECEIPT = "receipt.json"
TRACE = "trace.zip"
"""The Playwright trace of an episode, saved only when the run was asked for traces."""
STARTED = "started.json"
"""Written when an episode starts: an episode directory without an admitted record was interrupted."""
ADMITTED = "admitted.json"
"""Written into episodes/<id>/ once the episode's record line is on disk (`AdmittedEpisode`): a marker whose record
episodes.jsonl no longer holds means the file lost a finished episode after the fact, which no kill can cause."""
LOST_WORKER = "lost_worker.json"
"""Written into episodes/<id>/ when a Ray worker is lost mid-episode (`LostWorker`), before the attempt is set apart."""
RUN_EPISODE_FILES = (*EVIDENCE_FILES, RECEIPT, TRACE, STARTED, ADMITTED, LOST_WORKER)
"""The files of episodes/<id>/ the run itself writes: no study's evidence may name one."""
INTERRUPTED = "interrupted"
"""Partial evidence of interrupted episodes, kept apart and never counted: interrupted/<id>/attempt-N/."""
RESUMES = "resumes.jsonl"
WORKER_EVENTS = "workers.jsonl"
"""A Ray run's workers lost and replaced after its start (`WorkerEvent`), appended and fsync'd as they happen."""
SUMMARY = "summary.json"
"""The run's report as computed when the run ended; `computerops verify` recomputes it from raw evidence."""
CHECKSUMS = "checksums.sha256"
"""sha256 of every file of the bundle (but itself and verification.json), `sha256sum` format."""
VERIFICATION = "verification.json"
"""Written by a passing `computerops verify`: the checksum list it verified (evidence level E2)."""
WRITER_LOCK = ".writer.lock"
"""Held (flock, exclusive) by the one process that writes a run directory: `run`, `run --resume`, `verify`. The OS
drops it when that process ends, however it ends, so a killed run can be resumed at once."""
CREATING = ".creating"
"""The suffix of the hidden staging directory beside a new run directory, where it is put together before it is
renamed into place (`NewRunDirectory`)."""
_UNSEALED = {CHECKSUMS, VERIFICATION, WRITER_LOCK}

M = TypeVar("M", bound=BaseModel)
_OPERATIONS = TypeAdapter(list[Operation])
_JOURNAL = TypeAdapter(list[JournalEntry])
_STATE: TypeAdapter[StateSnapshot] = TypeAdapter(StateSnapshot)


class BundleError(ValueError):
    """A run directory that is missing, malformed or not what the command expects."""


class RunLocked(BundleError):
    """Another process is writing this run directory."""


@contextmanager
def writer_lock(root: Path) -> Iterator[None]:
    """Hold the run directory's writer lock for the block; RunLocked at once if another process holds it.

    Creates `root` if it does not exist yet (a new run) and removes it again if nothing but the lock was written."""
    created = not root.exists()
    path = root / WRITER_LOCK
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle = path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise BundleError(f"cannot write the run directory {root}: {exc.strerror or exc}") from exc
    _take(handle, root, fcntl.LOCK_EX)
    try:
        _name_holder(handle)
        yield
    finally:
        if created and [p.name for p in root.iterdir()] == [WRITER_LOCK]:
            path.unlink()
            root.rmdir()
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


def _take(handle: IO[str], root: Path, kind: int) -> None:
    """flock `handle` (LOCK_EX or LOCK_SH) at once, or close it and raise RunLocked naming the holder."""
    try:
        fcntl.flock(handle.fileno(), kind | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunLocked(f"{root} is being written by {holder}; wait for it to end (or stop it) and try again, "
                        "or choose another --out directory") from None


def _name_holder(handle: IO[str]) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()}\n")
    handle.flush()


@contextmanager
def verifier_lock(root: Path) -> Iterator[None]:
    """`verify`'s lock on an existing run: the writer lock where the run can be written (nothing writes while it
    checks); on a read-only copy, which needs no write access, a shared lock on the copy's lock file (still refused,
    RunLocked, while a writer holds it), or none where the copy has no lock file to open."""
    path = root / WRITER_LOCK
    try:
        handle = path.open("a+", encoding="utf-8")
    except OSError:  # read-only: nothing can write here, neither verify nor a run
        try:
            handle = path.open("r", encoding="utf-8")
        except OSError:
            yield
            return
        _take(handle, root, fcntl.LOCK_SH)
        with handle:
            yield
        return
    _take(handle, root, fcntl.LOCK_EX)
    with handle:
        _name_holder(handle)
        yield


def being_written(root: Path) -> bool:
    """Whether a process holds the run directory's writer lock now (a run executing, or a verify), asked without
    touching the lock: Linux lists every flock in /proc/locks by device and inode. (Probing with a lock of our own
    would, for that instant, make a run starting then refuse to start.) Where /proc/locks cannot be read, a probe
    it is: a shared lock taken and dropped at once."""
    path = root / WRITER_LOCK
    try:
        status = path.stat()
    except OSError:
        return False
    key = f" {os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino} "
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            return any(" FLOCK " in line and key in line for line in locks)
    except OSError:
        pass
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:  # a file system without flock cannot show a writer
            return False
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


def staging_dir(root: Path) -> Path:
    """Where a new run directory at `root` is put together: beside it, hidden, named after it (length bounded)."""
    root = root.absolute()
    digest = hashlib.sha256(root.name.encode()).hexdigest()[:12]
    return root.parent / f".{root.name[:100]}.{digest}{CREATING}"


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class NewRunDirectory:
    """A run directory being created, entered before anything of the run starts.

    It makes a staging directory beside the target (`staging_dir`) and takes the writer lock there, both under a lock
    of the parent directory, so another process creating the same target is refused (RunLocked) and what a killed
    creation left (a staging directory whose lock is free, or that never got one) is removed. `create` writes the
    whole run directory there and renames it into place in one step: a kill at any point leaves either no run
    directory (the target is new again) or a whole one, with no episode yet, that `run --resume` continues. The lock
    file moves with it and stays the run's writer lock until exit; a staging directory never renamed is removed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.staging = staging_dir(root)
        self._lock: IO[str] | None = None
        self._placed = False

    def __enter__(self) -> NewRunDirectory:
        try:
            self.staging.parent.mkdir(parents=True, exist_ok=True)
            with directory_lock(self.staging.parent):
                self._remove_abandoned()
                self.staging.mkdir()
                handle = (self.staging / WRITER_LOCK).open("a+", encoding="utf-8")
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # a new file: nobody else holds it
        except OSError as exc:
            raise BundleError(f"cannot write the run directory {self.root}: {exc.strerror or exc}") from exc
        _name_holder(handle)
        self._lock = handle
        return self

    def _remove_abandoned(self) -> None:
        """The staging directory a killed creation of the same target left, removed; RunLocked while its creator
        lives. Under the parent directory's lock."""
        try:
            handle = (self.staging / WRITER_LOCK).open("r", encoding="utf-8")
        except FileNotFoundError:  # none, or one killed before its lock existed
            shutil.rmtree(self.staging, ignore_errors=True)
            return
        _take(handle, self.root, fcntl.LOCK_EX)
        with handle:
            shutil.rmtree(self.staging, ignore_errors=True)

    def create(self, manifest: RunManifest, attachments: Mapping[str, str] | None = None) -> RunDirectory:
        """Write the run directory (episodes/, `attachments` (file name -> text) beside the manifest, an empty
        episodes.jsonl, the manifest) in the staging directory, then rename it to the target."""
        RunDirectory.ensure_new(self.root)
        (self.staging / "episodes").mkdir()
        for name, text in (attachments or {}).items():
            _write_json(self.staging / name, text)
        _write_json(self.staging / EPISODES, "")
        _write_json(self.staging / MANIFEST, manifest.model_dump_json(indent=2))
        if self.root.is_dir():  # empty, or holding only the lock file of an older version's interrupted run
            (self.root / WRITER_LOCK).unlink(missing_ok=True)
        try:
            self.staging.rename(self.root)  # atomic; replaces only an empty directory
        except OSError as exc:
            raise BundleError(f"{self.root} appeared while the run was being set up and is not empty; choose a "
                              f"new --out directory ({exc.strerror or exc})") from exc
        self._placed = True
        _fsync_directory(self.staging.parent)
        return RunDirectory(self.root)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if not self._placed and self._lock is not None:
            with directory_lock(self.staging.parent):
                shutil.rmtree(self.staging, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()  # releases the lock
            self._lock = None


def _write_json(path: Path, data: str) -> None:
    write_durably(path, data)


def _dump(value: object) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2)
    return json.dumps(TypeAdapter(type(value)).dump_python(value, mode="json"), indent=2, ensure_ascii=False)


def _append_line(path: Path, line: str, lock: threading.Lock) -> None:
    with lock, path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        sync(handle.fileno())


def _read_lines(path: Path, model: type[M], what: str) -> list[M]:
    """Each line of an append-only JSON-lines log as `model` (none where the file is absent)."""
    if not path.is_file():
        return []
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            entries += [model.model_validate_json(line)] if line else []
        except ValueError as exc:
            raise BundleError(f"{path}:{number}: not a valid {what}: {exc}") from exc
    return entries


class RunDirectory:
    """One run's evidence bundle on disk."""

    def __init__(self, root: Path):
        self.root = root
        self._admit_lock = threading.Lock()

    @staticmethod
    def ensure_new(root: Path) -> None:
        """Refuse a target that holds anything, so no earlier evidence is ever overwritten."""
        if root.exists() and (not root.is_dir() or any(p.name != WRITER_LOCK for p in root.iterdir())):
            raise BundleError(f"{root} already exists and is not empty; choose a new --out directory")

    @classmethod
    def create(cls, root: Path, manifest: RunManifest, attachments: Mapping[str, str] | None = None) -> RunDirectory:
        """A new run directory, whole or not at all (`NewRunDirectory`); refuses to write into a non-empty one so
        nothing is overwritten. `attachments` (file name -> text) are written beside the manifest and sealed with it
        (an experiment's lock)."""
        with NewRunDirectory(root) as new:
            return new.create(manifest, attachments)

    @classmethod
    def open(cls, root: Path) -> RunDirectory:
        if not (root / MANIFEST).is_file():
            raise BundleError(f"{root} is not a run directory (no {MANIFEST})")
        if not (root / EPISODES).is_file():
            raise BundleError(f"{root} is a damaged run directory: {EPISODES} is missing (every run has one, empty "
                              "until an episode is admitted)")
        return cls(root)

    def manifest(self) -> RunManifest:
        path = self.root / MANIFEST
        try:
            return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BundleError(f"{path}: not a valid run manifest: {exc}") from exc

    def episode_dir(self, episode_id: str) -> Path:
        return self.root / "episodes" / episode_id

    def evidence_path(self, episode_id: str, name: str) -> Path:
        """Where an evidence file of the episode goes (its directory created); for files written by others. `name`
        may name a subfolder (checkpoints/1.json); BundleError where it leaves the episode's folder."""
        directory = self.episode_dir(episode_id)
        path = directory / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not path.resolve().is_relative_to(
                directory.resolve()):
            raise BundleError(f"{episode_id}: evidence name {name!r} leaves the episode's folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write_evidence(self, episode_id: str, name: str, value: object) -> str:
        """Write one evidence file; returns its sha256."""
        path = self.evidence_path(episode_id, name)
        _write_json(path, _dump(value))
        return file_sha256(path)

    def write_evidence_bytes(self, episode_id: str, name: str, data: bytes) -> str:
        """Write one evidence file as the bytes another process wrote it (an episode run on a Ray worker,
        computerops/runs/ray_executor.py); `name` may name a subfolder (checkpoints/1.json). Returns its sha256."""
        path = self.evidence_path(episode_id, name)
        write_durably(path, data)
        return file_sha256(path)

    def start_episode(self, planned: PlannedEpisode) -> None:
        """Mark the episode as started (episodes/<id>/started.json) before anything else of it is written."""
        _write_json(self.evidence_path(planned.episode_id, STARTED),
                    StartedEpisode(episode=planned).model_dump_json(indent=2))

    def admit(self, record: EpisodeRecord) -> None:
        """Append one episode record and fsync it before returning: the episode is admitted once its
        whole line, newline included, is on disk.

        Episodes of a concurrent run finish in any order; the lock keeps each record one whole line
        even if admissions ever come from several threads (in the event loop they cannot interleave).
        """
        _append_line(self.root / EPISODES, record.model_dump_json(), self._admit_lock)
        marker = AdmittedEpisode(episode_id=record.episode_id, record_sha256=canonical_sha256(record.model_dump(
            mode="json")))
        _write_json(self.evidence_path(record.episode_id, ADMITTED), marker.model_dump_json(indent=2))

    def lost_admissions(self) -> list[str]:
        """Admitted episodes whose record episodes.jsonl no longer holds, one problem each: their admission markers
        (in episodes/<id>/, or with an attempt set apart under interrupted/) name a record the file lost or changed
        after the fact. Empty for any run a kill interrupted: a marker is written only after its record is on disk."""
        records = self.all_records()
        ids = {r.episode_id for r in records}
        held = {canonical_sha256(r.model_dump(mode="json")) for r in records}
        markers = [*self.root.glob(f"episodes/*/{ADMITTED}"), *self.root.glob(f"{INTERRUPTED}/*/attempt-*/{ADMITTED}")]
        problems = []
        for path in sorted(markers):
            name = path.relative_to(self.root).as_posix()
            try:
                marker = AdmittedEpisode.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                problems.append(f"{name}: not a valid admission marker: {exc}")
                continue
            if marker.episode_id not in ids:
                problems.append(f"{marker.episode_id}: admitted ({name}), but {EPISODES} holds no record of it: the "
                                "file lost a finished episode after the run")
            elif marker.record_sha256 not in held:
                problems.append(f"{marker.episode_id}: the record admitted ({name}) is no longer in {EPISODES}: "
                                "its line was changed after the run")
        return problems

    def admission_problems(self, record: EpisodeRecord) -> list[str]:
        """The record read for an episode against its admission marker (episodes/<id>/admitted.json): a problem when
        the line of episodes.jsonl was changed after the episode was admitted. None for a run from before markers."""
        path = self.evidence_path(record.episode_id, ADMITTED)
        if not path.is_file():
            return []
        try:
            marker = AdmittedEpisode.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return [f"{record.episode_id}: not a valid admission marker: {exc}"]
        if marker.record_sha256 != canonical_sha256(record.model_dump(mode="json")):
            return [f"{record.episode_id}: its record in {EPISODES} is not the one admitted: the line was changed "
                    "after the run"]
        return []

    def repair_torn_tail(self) -> int:
        """Cut an unfinished last line (a write the process did not live to end) off episodes.jsonl;
        returns how many bytes were removed. Complete lines are never touched."""
        path = self.root / EPISODES
        data = path.read_bytes()
        keep = data.rfind(b"\n") + 1
        if keep == len(data):
            return 0
        with path.open("r+b") as handle:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
        return len(data) - keep

    def set_apart(self, episode_id: str) -> Path:
        """Move an interrupted episode's partial evidence to interrupted/<id>/attempt-N/ (kept, never
        counted) so the episode can run again in a clean directory; returns where it went."""
        attempts = self.root / INTERRUPTED / episode_id
        attempts.mkdir(parents=True, exist_ok=True)
        target = attempts / f"attempt-{sum(1 for _ in attempts.iterdir()) + 1}"
        self.episode_dir(episode_id).rename(target)
        return target

    def log_resume(self, entry: ResumeEntry) -> None:
        """Append one resume to resumes.jsonl, fsync'd."""
        _append_line(self.root / RESUMES, entry.model_dump_json(), self._admit_lock)

    def record_lost_worker(self, loss: LostWorker) -> None:
        """Write why an episode's attempt stopped (episodes/<id>/lost_worker.json), fsync'd, before it is set apart."""
        _write_json(self.evidence_path(loss.episode_id, LOST_WORKER), loss.model_dump_json(indent=2))

    def lost_worker(self, attempt: str) -> LostWorker | None:
        """The worker loss recorded in an attempt set apart (`interrupted/<id>/attempt-N`, as workers.jsonl names
        it); None when it holds none."""
        path = self.root / attempt / LOST_WORKER
        return LostWorker.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def log_worker_event(self, event: WorkerEvent) -> None:
        """Append one worker event to workers.jsonl, fsync'd."""
        _append_line(self.root / WORKER_EVENTS, event.model_dump_json(), self._admit_lock)

    def worker_events(self) -> list[WorkerEvent]:
        return _read_lines(self.root / WORKER_EVENTS, WorkerEvent, "worker event")

    def resumes(self) -> list[ResumeEntry]:
        return _read_lines(self.root / RESUMES, ResumeEntry, "resume entry")

    def files(self) -> list[str]:
        """Every file of the bundle that the checksum list covers, as sorted relative paths."""
        paths = (p for p in self.root.rglob("*") if p.is_file())
        relative = (p.relative_to(self.root).as_posix() for p in paths)
        return sorted(r for r in relative if r not in _UNSEALED and not r.endswith(".tmp"))

    def seal(self, summary: BaseModel, analyses: Mapping[str, BaseModel] | None = None) -> None:
        """Write the summary (and any `analyses`, file name -> model: an experiment's), then the checksum list over
        every file (summary included). A run seals itself whenever it stops, and again after each resume."""
        _write_json(self.root / SUMMARY, summary.model_dump_json(indent=2))
        for name, analysis in (analyses or {}).items():
            _write_json(self.root / name, analysis.model_dump_json(indent=2))
        lines = [f"{file_sha256(self.root / name)}  {name}\n" for name in self.files()]
        _write_json(self.root / CHECKSUMS, "".join(lines))

    def checksum_problems(self) -> list[str]:
        """Files missing, altered or added since the bundle was sealed; a problem if it never was."""
        if not (self.root / CHECKSUMS).is_file():
            return [f"{CHECKSUMS} is missing: the run was never sealed (an interrupted run is sealed by "
                    f"`computerops run --resume`)"]
        try:
            listed = self.listed_checksums()
        except BundleError as exc:
            return [str(exc)]
        present = set(self.files())
        return (self.sealed_problems(listed)
                + [f"{name}: present but not in {CHECKSUMS}" for name in sorted(present - set(listed))])

    def listed_checksums(self) -> dict[str, str]:
        """The sealed list (file → sha256) of checksums.sha256; empty for a run never sealed; BundleError for a list
        that is not one."""
        path = self.root / CHECKSUMS
        if not path.is_file():
            return {}
        listed: dict[str, str] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            digest, sep, name = line.partition("  ")
            if not sep or len(digest) != 64:
                raise BundleError(f"{CHECKSUMS}:{number}: not a `sha256  path` line")
            listed[name] = digest
        return listed

    def sealed_record_problems(self) -> list[str]:
        """For a sealed run no process writes: its manifest, records and summary against their sealed sha256 (what
        every count of the run is read from). A run being written, or resumed since its seal (a resume appends to
        resumes.jsonl before anything else), is not held to the seal; its next seal covers it."""
        if being_written(self.root) or not (self.root / SUMMARY).is_file():
            return []
        try:
            listed = self.listed_checksums()
        except BundleError as exc:
            return [str(exc)]
        resumed_since = (self.sealed_problems({RESUMES: listed[RESUMES]}) if RESUMES in listed
                         else (self.root / RESUMES).is_file())
        if not listed or resumed_since:
            return []
        return self.sealed_problems({name: digest for name, digest in listed.items()
                                     if name in (MANIFEST, EPISODES, SUMMARY)})

    def sealed_problems(self, listed: Mapping[str, str]) -> list[str]:
        """Each of the `listed` files (from `listed_checksums`, or a part of it) missing or not of its sealed sha256."""
        problems = []
        for name, digest in sorted(listed.items()):
            path = self.root / name
            if not path.is_file():
                problems.append(f"{name}: listed in {CHECKSUMS} but missing")
            elif (actual := file_sha256(path)) != digest:
                problems.append(f"{name}: sha256 {actual[:12]} differs from the listed {digest[:12]}")
        return problems

    def all_records(self) -> list[EpisodeRecord]:
        """Every complete line of episodes.jsonl, in file order (superseded records included).

        An unfinished last line (no newline: the runner died while writing it) is not an admitted
        record and is skipped; `run --resume` cuts it off and re-runs that episode.
        """
        path = self.root / EPISODES
        records = []
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BundleError(f"{path} cannot be read ({exc.strerror or exc}): the run directory is damaged") from exc
        complete = text[: text.rfind("\n") + 1]
        for number, line in enumerate(complete.splitlines(), start=1):
            if line.strip():
                try:
                    records.append(EpisodeRecord.model_validate_json(line))
                except ValueError as exc:
                    raise BundleError(f"{path}:{number}: not a valid episode record: {exc}") from exc
        return records

    def records(self) -> list[EpisodeRecord]:
        """The admitted records in plan order (episodes.jsonl holds them in the order they finished): for an episode
        re-run after an infrastructure failure (`run --resume`), its latest record; the earlier ones are
        `superseded()`."""
        return self._split()[0]

    def completeness(self) -> Completeness:
        """Planned against admitted, from the manifest, episodes.jsonl, resumes.jsonl and interrupted/."""
        records, superseded = self._split()
        admitted = {r.episode_id for r in records}
        attempts = self.root / INTERRUPTED
        return Completeness(
            planned=len(self.manifest().config.episodes), admitted=len(admitted),
            missing=[p.episode_id for p in self.manifest().config.episodes if p.episode_id not in admitted],
            infrastructure_failures=[r.episode_id for r in records if r.outcome == "infrastructure_failure"],
            interrupted_attempts=sum(1 for _ in attempts.glob("*/attempt-*")) if attempts.is_dir() else 0,
            resumes=len(self.resumes()), rerun_after_infrastructure=len(superseded),
        )

    def superseded(self) -> list[EpisodeRecord]:
        """Infrastructure-failure records of episodes that `run --resume` ran again (their evidence is under
        interrupted/<id>/): kept and listed, never counted."""
        return self._split()[1]

    def _split(self) -> tuple[list[EpisodeRecord], list[EpisodeRecord]]:
        latest: dict[str, EpisodeRecord] = {}
        extra: list[EpisodeRecord] = []  # a second record of an episode that had not failed: verify names it
        superseded: list[EpisodeRecord] = []
        for record in self.all_records():
            earlier = latest.get(record.episode_id)
            if earlier is not None and earlier.outcome != "infrastructure_failure":
                extra.append(record)
                continue
            if earlier is not None:
                superseded.append(earlier)
            latest[record.episode_id] = record
        plan = {p.episode_id: index for index, p in enumerate(self.manifest().config.episodes)}
        # Stable: a record outside the plan (none is written so) keeps its file position, after the plan's.
        return sorted([*latest.values(), *extra], key=lambda r: plan.get(r.episode_id, len(plan))), superseded

    def receipt(self, episode_id: str) -> Receipt | None:
        path = self.episode_dir(episode_id) / RECEIPT
        return Receipt.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def integrity_problems(self, record: EpisodeRecord) -> list[str]:
        """Evidence files whose bytes no longer match the sha256 in the episode record."""
        problems = []
        for name, expected in sorted(record.evidence_sha256.items()):
            path = self.episode_dir(record.episode_id) / name
            if not path.is_file():
                problems.append(f"{record.episode_id}/{name}: missing")
            elif (actual := file_sha256(path)) != expected:
                problems.append(f"{record.episode_id}/{name}: sha256 {actual[:12]} differs from the recorded "
                                f"{expected[:12]} (evidence altered after the run)")
        return problems

    def load_episode(self, record: EpisodeRecord) -> RecordedEpisode:
        """The evidence replay needs; malformed files raise BundleError naming the file."""
        directory = self.episode_dir(record.episode_id)

        def read(name: str) -> bytes:
            path = directory / name
            if not path.is_file():
                raise BundleError(f"{path}: missing")
            return path.read_bytes()

        try:
            return RecordedEpisode(
                episode_id=record.episode_id,
                operations=_OPERATIONS.validate_json(read("operations.json")),
                journal=_JOURNAL.validate_json(read("journal.json")),
                final_state=_STATE.validate_json(read("final_state.json")),
                verdict=Verdict.model_validate_json(read("verdict.json")),
            )
        except ValueError as exc:
            if isinstance(exc, BundleError):
                raise
            raise BundleError(f"{directory}: evidence does not parse: {exc}") from exc
