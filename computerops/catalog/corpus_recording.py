"""`computerops corpus record`: the reference episodes of the golden replay corpus, run through the browser.

Per task: the scripted control (`oracle`), the no-op policy and the task's first negative control,
run by `execute_run` against the scripted endpoint exactly as `tasks check` runs them; the evidence
each leaves becomes one `CorpusEntry` file (`replays/corpus.py`). Nothing is written until every
episode has run and replayed PASS, so a failed recording leaves the corpus as it was.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from computerops.catalog.checking import OBSERVING, control_config, control_plan
from computerops.core.execution import Progress
from computerops.runs.bundle import RunDirectory
from computerops.runs.runner import execute_run
from replays.corpus import CorpusEntry, CorpusError, entry_files, entry_path, write_entry
from tasks import LoadedTask


def corpus_policies(task: LoadedTask) -> list[str]:
    """The scripted control, the no-op policy, and the first negative control (a second failing reference), the latter
    with the broker observing where the task has grants, as `tasks check` runs it (an enforcing broker could block
    what the reference is there to show the verifier rejecting)."""
    policies = ["oracle", "noop"]
    if task.spec.negative_controls:
        policies.append(f"negative:{task.spec.negative_controls[0].id}" + (f"@{OBSERVING}" if task.spec.grants
                                                                           else ""))
    return policies


@dataclass(frozen=True)
class RecordedEntry:
    path: Path
    entry: CorpusEntry
    changed: bool
    """False when the file already held exactly these bytes."""


@dataclass(frozen=True)
class CorpusRecording:
    entries: list[RecordedEntry]
    removed: list[Path]
    """Entry files that were there before and are not any more (stale policies, pruned tasks)."""


async def record_corpus(
    tasks: list[LoadedTask], root: Path, progress: Progress = lambda _: None, *, concurrency: int = 1,
    prune: bool = False,
) -> CorpusRecording:
    """Run the reference episodes of `tasks`, then replace those tasks' entries under `root`.

    Stale entries of the recorded tasks (e.g. of a negative control that was renamed) are removed;
    with `prune`, so are the entries of tasks not among `tasks` (for a whole-catalog recording).
    Raises CorpusError, writing nothing, when an episode hit an infrastructure failure or did not
    replay PASS (a reference that is not reproducible).
    """
    by_id = {t.id: t for t in tasks}
    config = control_config("corpus-record", tasks, control_plan(tasks, corpus_policies))
    with tempfile.TemporaryDirectory(prefix="computerops-corpus-") as scratch:
        out = Path(scratch) / "run"
        records = await execute_run(config, tasks, out, progress, concurrency=concurrency)
        bundle = RunDirectory.open(out)
        entries = []
        for record in records:
            if record.outcome == "infrastructure_failure" or record.replay != "PASS":
                raise CorpusError(f"{record.episode_id}: {record.outcome}, replay {record.replay}; a reference "
                                  "episode must end normally and replay PASS, so nothing was written")
            task = by_id[record.task_id]
            episode = bundle.load_episode(record)
            entries.append(CorpusEntry.compact(
                task_id=task.id, task_sha256=task.sha256, site=task.spec.site, seed=task.spec.seed,
                policy=record.endpoint, outcome=episode.verdict.outcome, operations=episode.operations,
                journal=episode.journal, final_state=episode.final_state, verdict=episode.verdict,
            ))
    paths = [entry_path(root, e) for e in entries]
    if len(set(paths)) != len(paths):
        raise CorpusError("two policies of one task map to the same corpus file; nothing was written")
    before = {path: path.read_bytes() for path in entry_files(root)}
    doomed = [d for t in tasks for d in root.glob(f"*/{t.id}")]
    if prune:
        doomed += [d for d in root.glob("*/*") if d.is_dir() and d.name not in by_id]
    for directory in doomed:
        shutil.rmtree(directory)
    if prune:
        for site_dir in root.glob("*"):
            if site_dir.is_dir() and not any(site_dir.iterdir()):
                site_dir.rmdir()
    written = []
    for entry in entries:
        path = write_entry(root, entry)
        written.append(RecordedEntry(path=path, entry=entry, changed=before.get(path) != path.read_bytes()))
    return CorpusRecording(entries=written, removed=sorted(p for p in before if not p.is_file()))
