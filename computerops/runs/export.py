"""`computerops export DIR --format jsonl --out FILE`: a run's episodes for other tools, one JSON line per episode.

Each line is an `ExportedEpisode` (`computerops.exported_episode/1`): the run id, whether the run is scripted, the
episode's admitted record (outcome, claim, false-completion kind, tokens, faults, serving and persistence figures),
its verdict with every named check, and its replay receipt. `pandas.read_json(FILE, lines=True)` reads it; nested
fields stay nested (`pandas.json_normalize` flattens them).

Read from the run directory as it stands: every file of the run is checked against its sealed checksums first (an
unsealed run is refused: `run --resume` seals it), and each episode's evidence against its record's hashes; a file
that does not match is refused by its path (naming the episode), and nothing is exported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict

from computerops.core.durable import write_durably
from computerops.core.formats import Versioned
from computerops.runs.bundle import BundleError, RunDirectory
from computerops.runs.records import EpisodeRecord
from replays import Receipt
from verifier import Verdict

EXPORT_FORMAT: Literal["computerops.exported_episode/1"] = "computerops.exported_episode/1"
ExportFormat = Literal["jsonl", "inspect"]
"""The formats `export` writes: JSON lines (`export_run`), an Inspect AI log (computerops/runs/inspect_log.py)."""


class ExportedEpisode(Versioned):
    """One episode as `export --format jsonl` writes it: one line."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.exported_episode/1"] = EXPORT_FORMAT

    run_id: str
    scripted: bool
    """True when a scripted policy, not a model, produced the run's replies (label the figures so)."""
    record: EpisodeRecord
    verdict: Verdict
    receipt: Receipt | None
    """The replay receipt the run saved; None when it saved none."""


def exported_episodes(bundle: RunDirectory) -> list[ExportedEpisode]:
    """Every admitted episode of the run, in record order; BundleError naming an episode whose evidence does not
    match the run's checksums, or does not parse."""
    manifest = bundle.manifest()
    sealed = bundle.checksum_problems()  # every file of the run, the receipts and start markers included
    if sealed:
        raise BundleError(f"the run's files do not match its checksums, nothing is exported: {sealed[0]}")
    found = []
    for record in bundle.records():
        problems = bundle.integrity_problems(record)
        if problems:
            raise BundleError(f"episode {record.episode_id} is not exported: {problems[0]}")
        found.append(ExportedEpisode(run_id=manifest.config.run_id, scripted=manifest.scripted, record=record,
                                     verdict=bundle.load_episode(record).verdict,
                                     receipt=bundle.receipt(record.episode_id)))
    return found


def export_run(bundle: RunDirectory, out: Path) -> int:
    """Write the run's episodes to `out` as JSON lines; the number of episodes written."""
    episodes = exported_episodes(bundle)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_durably(out, "".join(episode.model_dump_json() + "\n" for episode in episodes))
    return len(episodes)
