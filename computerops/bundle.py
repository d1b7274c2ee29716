"""The run directory: manifest, append-only episode records, per-episode evidence files."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, TypeAdapter

from computerops.records import EpisodeRecord, RunManifest
from replays import Receipt, RecordedEpisode, file_sha256
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from verifier import Verdict

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
EVIDENCE_FILES = ("transcript.json", "operations.json", "journal.json", "final_state.json", "verdict.json")
RECEIPT = "receipt.json"
TRACE = "trace.zip"
"""The Playwright trace of an episode, saved only when the run was asked for traces."""

M = TypeVar("M", bound=BaseModel)
_OPERATIONS = TypeAdapter(list[Operation])
_JOURNAL = TypeAdapter(list[JournalEntry])
_STATE: TypeAdapter[StateSnapshot] = TypeAdapter(StateSnapshot)


class BundleError(ValueError):
    """A run directory that is missing, malformed or not what the command expects."""


def _write_json(path: Path, data: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


def _dump(value: object) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2)
    return json.dumps(TypeAdapter(type(value)).dump_python(value, mode="json"), indent=2, ensure_ascii=False)


class RunDirectory:
    """One run's evidence bundle on disk."""

    def __init__(self, root: Path):
        self.root = root
        self._admit_lock = threading.Lock()

    @staticmethod
    def ensure_new(root: Path) -> None:
        """Refuse a target that holds anything, so no earlier evidence is ever overwritten."""
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise BundleError(f"{root} already exists and is not empty; choose a new --out directory")

    @classmethod
    def create(cls, root: Path, manifest: RunManifest) -> RunDirectory:
        """A new run directory; refuses to write into a non-empty one so nothing is overwritten."""
        cls.ensure_new(root)
        (root / "episodes").mkdir(parents=True, exist_ok=True)
        bundle = cls(root)
        _write_json(root / MANIFEST, manifest.model_dump_json(indent=2))
        (root / EPISODES).touch()
        return bundle

    @classmethod
    def open(cls, root: Path) -> RunDirectory:
        if not (root / MANIFEST).is_file():
            raise BundleError(f"{root} is not a run directory (no {MANIFEST})")
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
        """Where an evidence file of the episode goes (its directory created); for files written by others."""
        directory = self.episode_dir(episode_id)
        directory.mkdir(parents=True, exist_ok=True)
        return directory / name

    def write_evidence(self, episode_id: str, name: str, value: object) -> str:
        """Write one evidence file; returns its sha256."""
        path = self.evidence_path(episode_id, name)
        _write_json(path, _dump(value))
        return file_sha256(path)

    def admit(self, record: EpisodeRecord) -> None:
        """Append one episode record and fsync it before returning.

        Episodes of a concurrent run finish in any order; the lock keeps each record one whole line
        even if admissions ever come from several threads (in the event loop they cannot interleave).
        """
        line = record.model_dump_json() + "\n"
        with self._admit_lock, (self.root / EPISODES).open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def records(self) -> list[EpisodeRecord]:
        """The admitted records in plan order (episodes.jsonl holds them in the order they finished)."""
        path = self.root / EPISODES
        records = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    records.append(EpisodeRecord.model_validate_json(line))
                except ValueError as exc:
                    raise BundleError(f"{path}:{number}: not a valid episode record: {exc}") from exc
        plan = {p.episode_id: index for index, p in enumerate(self.manifest().config.episodes)}
        # Stable: a record outside the plan (none is written so) keeps its file position, after the plan's.
        return sorted(records, key=lambda r: plan.get(r.episode_id, len(plan)))

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
