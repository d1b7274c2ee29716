"""The golden replay corpus: saved reference episodes of every catalog task, replayed in CI.

`replays/corpus/<site>/<task-id>/<policy>.json` holds one `CorpusEntry` per (task, policy): the
operations, journal, final state and verdict of a reference episode (the scripted control and failing
policies), recorded through the browser by `computerops corpus record` (`computerops/catalog/corpus_recording.py`).
`check_corpus` replays every entry on a fresh tenant without a browser; a change to a site or a
verifier that alters behaviour shows as a mismatch naming the task, the policy and the first
difference, until the corpus is deliberately re-recorded.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from computerops.core.formats import Versioned
from computerops.core.hashing import canonical_sha256
from replays.replay import RecordedEpisode, replay_episode
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from sites.kit.tenancy import TenantRegistry
from sites.registry import tenant_registry
from tasks import LoadedTask
from verifier import Verdict

CORPUS_FORMAT: Literal["computerops.corpus/3"] = "computerops.corpus/3"
"""2: operations record what each response showed and which app served it (`Operation.shown`, `Operation.app`).
3: the final state is its hash and the final rows of the tables the episode changed (`final_state_sha256`): a site at
realistic volume seeds hundreds of rows per table that replay regenerates from the seed, so a whole snapshot per
entry only repeated them (29 MB for one site's entries)."""
CORPUS_ROOT = Path(__file__).parent / "corpus"
RECORD_COMMAND = "computerops corpus record"


class CorpusError(ValueError):
    """A corpus file that cannot be read, or a corpus that cannot be written; the message names the file."""


class CorpusEntry(Versioned):
    """One reference episode, as replay needs it. Nothing in it varies from run to run: no wall times,
    tenant tokens or paths (the transcript, which holds measured durations, is not kept)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.corpus/3", "computerops.corpus/2"] = CORPUS_FORMAT
    task_id: str
    task_sha256: str
    """sha256 of the task file when the entry was recorded."""
    site: str
    seed: int
    policy: str
    """The label of what acted, e.g. `scripted:oracle`, `scripted:noop`, `scripted:negative:<id>`."""
    outcome: str
    """The verdict's outcome when recorded (also inside `verdict`; here for people reading the file)."""
    verdict: Verdict
    operations: list[Operation]
    journal: list[JournalEntry]
    final_state: StateSnapshot
    """The final rows of the tables the episode changed (every table in a /2 entry)."""
    final_state_sha256: str | None = None
    """The canonical hash of the whole final state (None in a /2 entry, whose `final_state` is whole)."""

    def episode(self) -> RecordedEpisode:
        return RecordedEpisode(episode_id=f"{self.task_id}/{self.policy}", operations=self.operations,
                               journal=self.journal, final_state=self.final_state, verdict=self.verdict,
                               final_state_sha256=self.final_state_sha256)

    @classmethod
    def compact(cls, *, final_state: StateSnapshot, journal: list[JournalEntry], **fields: Any) -> CorpusEntry:
        """An entry keeping the final state's hash and only the tables the journal changed."""
        changed = {entry.table for entry in journal}
        return cls(final_state={table: rows for table, rows in final_state.items() if table in changed},
                   final_state_sha256=canonical_sha256(final_state), journal=journal, **fields)


def file_name(policy: str) -> str:
    """A filesystem-safe file name for a policy label: `scripted:negative:wrong-status` →
    `scripted-negative-wrong-status.json`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", policy).strip("-.") + ".json"


def entry_path(root: Path, entry: CorpusEntry) -> Path:
    return root / entry.site / entry.task_id / file_name(entry.policy)


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def dump_entry(entry: CorpusEntry) -> str:
    """The entry's file text, so the same evidence always gives the same bytes: the entry's own fields in
    model order (what it is first, the large final state last), every key below them sorted, two-space
    indent, trailing newline. The verdict is the entry's evidence, under the entry's own format: its file-format
    field is left out (an entry says its format once)."""
    dumped = entry.model_dump(mode="json", exclude={"verdict": {"format"}})
    data = {field: _sorted_keys(value) for field, value in dumped.items()}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_entry(root: Path, entry: CorpusEntry) -> Path:
    path = entry_path(root, entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_entry(entry), encoding="utf-8")
    return path


def load_entry(path: Path) -> CorpusEntry:
    try:
        return CorpusEntry.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise CorpusError(f"{path}: not a valid corpus entry: {exc}") from exc


def entry_files(root: Path) -> list[Path]:
    """Every entry file under `root`, in path order."""
    return sorted(root.glob("*/*/*.json"))


def load_corpus(root: Path) -> list[tuple[Path, CorpusEntry]]:
    """Every entry under `root` with its file, in path order; a malformed file raises CorpusError."""
    return [(path, load_entry(path)) for path in entry_files(root)]


class EntryResult(BaseModel):
    """The replay of one corpus entry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    policy: str
    file: str
    """The entry's path relative to the corpus root."""
    operations: int
    result: Literal["PASS", "FAIL"]
    message: str | None = None
    """For a FAIL: the task, the policy and the first difference (or why the entry cannot be replayed)."""
    mismatches: list[str] = []


class CorpusCheck(BaseModel):
    """Every entry replayed, and the catalog tasks the corpus does not cover."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    results: list[EntryResult]
    uncovered: list[str]
    """Catalog tasks with no entry at all."""

    @property
    def failures(self) -> list[EntryResult]:
        return [r for r in self.results if r.result != "PASS"]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.uncovered

    def messages(self) -> list[str]:
        """One line per problem: failed entries first, then uncovered tasks."""
        lines = [r.message or f"{r.task_id} [{r.policy}]: FAIL" for r in self.failures]
        lines += [f"{task_id}: no corpus entries; record them with `{RECORD_COMMAND} --tasks {task_id}`"
                  for task_id in self.uncovered]
        return lines


def _rerecord(task_id: str) -> str:
    return f"re-record it with `{RECORD_COMMAND} --tasks {task_id}`"


async def _check_entry(
    root: Path, path: Path, entry: CorpusEntry, catalog: Mapping[str, LoadedTask], registry: TenantRegistry
) -> EntryResult:
    name = f"{entry.task_id} [{entry.policy}]"
    file = path.relative_to(root).as_posix()

    def fail(message: str, mismatches: list[str] | None = None) -> EntryResult:
        return EntryResult(task_id=entry.task_id, policy=entry.policy, file=file, operations=len(entry.operations),
                           result="FAIL", message=f"{name}: {message}", mismatches=mismatches or [message])

    task = catalog.get(entry.task_id)
    if task is None:
        return fail(f"task {entry.task_id} is not in the catalog; delete {file} (or re-record with --tasks all)")
    expected = entry_path(root, entry)
    if expected != path:
        return fail(f"entry is filed as {file}, expected {expected.relative_to(root).as_posix()}")
    if entry.task_sha256 != task.sha256:
        return fail(f"task file {task.path.name} changed since the entry was recorded (sha256 "
                    f"{entry.task_sha256[:12]} recorded, {task.sha256[:12]} now); {_rerecord(entry.task_id)}")
    receipt = await replay_episode(task, entry.episode(), registry)
    if receipt.result == "PASS":
        return EntryResult(task_id=entry.task_id, policy=entry.policy, file=file, operations=receipt.operations,
                           result="PASS")
    first = receipt.mismatches[0]
    more = len(receipt.mismatches) - 1
    return fail(f"{first}" + (f" (and {more} more differences)" if more else "")
                + f"; if the change is intended, {_rerecord(entry.task_id)}", receipt.mismatches)


async def check_corpus(root: Path, catalog: Mapping[str, LoadedTask]) -> CorpusCheck:
    """Replay every entry under `root` on a fresh tenant (no browser) against the catalog as it is now."""
    entries = load_corpus(root)
    results = []
    with tempfile.TemporaryDirectory(prefix="computerops-corpus-") as scratch:
        registry = tenant_registry(Path(scratch))
        try:
            for path, entry in entries:
                results.append(await _check_entry(root, path, entry, catalog, registry))
        finally:
            registry.close()
    covered = {entry.task_id for _, entry in entries}
    return CorpusCheck(results=results, uncovered=[task_id for task_id in catalog if task_id not in covered])
