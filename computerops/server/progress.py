"""A run's progress read from its directory while it executes: planned, started and admitted episodes, each admitted
one with its outcome. Read-only and lock-free (a run being written is read, never waited for), so any number of
clients may poll it; the same for a run the CLI launched as for one the server did."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from computerops.report.outcomes import counted_as
from computerops.runs.bundle import EPISODES, STARTED, SUMMARY, BundleError, RunDirectory, being_written


class AdmittedEpisode(BaseModel):
    """An admitted episode as progress shows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    episode_id: str
    task_id: str
    outcome: str
    """What the report counts it as (`computerops.report.outcomes.counted_as`)."""
    false_completion_kind: str | None


class RunProgress(BaseModel):
    """Where a run stands now."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    planned: int
    started: list[str]
    """Episodes started, in plan order (admitted ones included)."""
    admitted: list[AdmittedEpisode]
    """Admitted records in the order they were admitted (a rerun after an infrastructure failure appears again)."""
    being_written: bool
    sealed: bool
    """The run ended of itself: its summary is written."""


def run_progress(run_dir: Path) -> RunProgress:
    """The progress of the run at `run_dir` (BundleError when it is no run)."""
    bundle = RunDirectory.open(run_dir)
    # Whether it is sealed or written is asked before the records are read: the summary is written after the last
    # admission, so progress that says sealed (or not written) holds every record (asked after, a record admitted
    # between the two reads would be missing from a progress that says sealed).
    sealed, writing = (bundle.root / SUMMARY).is_file(), being_written(bundle.root)
    plan = [p.episode_id for p in bundle.manifest().config.episodes]
    started = [episode for episode in plan if (bundle.root / "episodes" / episode / STARTED).is_file()]
    return RunProgress(run_id=run_dir.name, planned=len(plan), started=started,
                       admitted=_admitted(bundle.root / EPISODES), being_written=writing, sealed=sealed)


def _admitted(path: Path) -> list[AdmittedEpisode]:
    """The records of episodes.jsonl as far as whole lines go (a line being appended is left for the next read)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise BundleError(f"cannot read {path}: {exc}") from exc
    admitted = []
    for line in text.split("\n")[:-1]:  # the last piece has no newline yet: not admitted
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            admitted.append(AdmittedEpisode(episode_id=record["episode_id"], task_id=record["task_id"],
                                            outcome=counted_as(record["outcome"], record.get("stop_reason"),
                                                               record.get("steps", 0)),
                                            false_completion_kind=record.get("false_completion_kind")))
        except (ValueError, KeyError, TypeError):
            continue  # a damaged line: `verify` names it; progress shows what it can read
    return admitted
