"""An experiment run directory read back: its lock, its plan, and one `ExperimentEpisode` per admitted episode, from
the raw evidence only (the manifest's plan, episodes.jsonl and each episode's transcript)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapter.transcript import AgentTranscript
from computerops.core.hashing import canonical_sha256
from computerops.experiment.lock import ExperimentLock, ExperimentRefused, read_lock
from computerops.experiment.rows import ExperimentEpisode
from computerops.runs.bundle import BundleError, RunDirectory
from computerops.runs.config import PlannedEpisode
from computerops.runs.records import EpisodeRecord

LOCK_FILE = "experiment.lock.json"
"""The lock an experiment run was made from, copied into its run directory (sealed with it)."""
ANALYSIS_FILE = "experiment.json"
"""The experiment's analysis, recomputed from the raw evidence by `computerops verify`."""
TIMING_FIELDS = frozenset({"latency_s", "act_s", "observe_s"})
"""Transcript fields that measure time on this machine: left out of the reproduction hash (nothing else is)."""


def reproduction_sha256(transcript: dict[str, Any]) -> str:
    """sha256 of a transcript with its timings removed: two reruns with identical inputs must give the same one.
    Everything the model was sent and replied, every action and every observation is in it."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMING_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return canonical_sha256(strip(transcript))


def transcript_of(bundle: RunDirectory, episode_id: str) -> AgentTranscript | None:
    path = bundle.episode_dir(episode_id) / "transcript.json"
    if not path.is_file():
        return None
    return AgentTranscript.model_validate_json(path.read_bytes())


@dataclass(frozen=True)
class ExperimentRun:
    """An experiment's run directory, read."""

    bundle: RunDirectory
    lock: ExperimentLock
    plan: list[PlannedEpisode]
    records: list[EpisodeRecord]
    rows: list[ExperimentEpisode]
    transcripts: dict[str, AgentTranscript]


def row_of(planned: PlannedEpisode, record: EpisodeRecord, transcript_json: dict[str, Any] | None
           ) -> ExperimentEpisode:
    """One admitted episode as the analysis reads it."""
    assert planned.cell is not None and planned.arm is not None, f"{planned.episode_id} is not an experiment episode"
    claimed = bool(record.claim.success)
    return ExperimentEpisode(
        episode_id=record.episode_id, task_id=record.task_id, cell=planned.cell, arm=planned.arm,
        repetition=planned.repetition, pair=planned.pair, model=record.endpoint,
        tools=None if planned.apps is None else len(planned.apps), order=_order_of(planned.cell),
        fault_rate=planned.fault_rate or 0.0, seed=planned.seed, outcome=record.outcome, claimed_success=claimed,
        false_completion_kind=record.false_completion_kind, steps=record.steps,
        faults_configured=tuple(record.faults_configured), faults_fired=tuple(record.faults_fired),
        transcript_sha256=None if transcript_json is None else reproduction_sha256(transcript_json),
        attack_exposed=record.attack is not None and record.attack.planted and record.attack.exposed,
        attack_planted=record.attack is not None and record.attack.planted,
    )


def _order_of(cell: str) -> str | None:
    for part in cell.split(","):
        name, _, value = part.partition("=")
        if name == "order":
            return value
    return None


def read_experiment_run(root: Path) -> ExperimentRun:
    """The experiment run at `root`; ExperimentRefused when it is not one (no lock, a lock that is not the one the
    manifest names, a plan that is not the lock's)."""
    bundle = RunDirectory.open(root)
    manifest = bundle.manifest()
    lock_path = root / LOCK_FILE
    if not lock_path.is_file() or manifest.config.experiment is None:
        raise ExperimentRefused(f"{root} is not an experiment run (no {LOCK_FILE}); make one with "
                                "`computerops experiment run LOCK --out DIR`")
    lock = read_lock(lock_path)
    if lock.lock_sha256 != manifest.config.experiment.lock_sha256:
        named = manifest.config.experiment.lock_sha256[:12]
        raise ExperimentRefused(f"{lock_path} is not the lock the run was made from (lock_sha256 "
                                f"{lock.lock_sha256[:12]}, the manifest names {named})")
    plan = list(manifest.config.episodes)
    expected = lock.plan if manifest.config.experiment.series == "experiment" else None
    if expected is not None and [p.model_dump() for p in expected] != [p.model_dump() for p in plan]:
        raise ExperimentRefused(f"{root}: the manifest's plan is not the lock's")
    by_id = {p.episode_id: p for p in plan}
    records = bundle.records()
    rows, transcripts = [], {}
    for record in records:
        path = bundle.episode_dir(record.episode_id) / "transcript.json"
        try:
            raw = json.loads(path.read_bytes()) if path.is_file() else None
        except ValueError as exc:
            raise BundleError(f"{path}: does not parse: {exc}") from exc
        if raw is not None:
            transcripts[record.episode_id] = AgentTranscript.model_validate(raw)
        rows.append(row_of(by_id[record.episode_id], record, raw))
    return ExperimentRun(bundle=bundle, lock=lock, plan=plan, records=records, rows=rows, transcripts=transcripts)
