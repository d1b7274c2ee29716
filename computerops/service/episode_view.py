"""One episode step by step, as the operator server's episode page shows it, computed from the run directory alone.

Each transcript step is shown with the model's reply as recorded, the action it was read as (or the rejection), the
page the model saw next, and the HTTP operations the action caused: an operation belongs to the step whose number
its `X-ComputerOps-Action` header carried, since the adapter numbers its actions by step. Operations no step caused
(the start page, action 0) are listed apart. The evidence is checked against the run's hashes before it is read, so
the page never shows a file that was altered after the run.
"""

from __future__ import annotations

import shlex
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from adapter.actions import Rejection
from adapter.failover import ServingEvent
from adapter.reply import ToolCall
from adapter.transcript import AgentTranscript
from computerops.core.vocabulary import StopReason
from computerops.persistence.metrics import PersistenceRecord
from computerops.persistence.running import PERSISTENCE_LOG
from computerops.runs import bundle as layout
from computerops.runs.bundle import BundleError, RunDirectory
from computerops.runs.records import EpisodeOutcome, EpisodeRecord
from computerops.service.errors import ServiceError
from computerops.serving_faults.log import SERVING_LOG
from computerops.serving_faults.record import ServingRecord
from sites.kit.faults import FaultDecision
from sites.kit.records import ChangeKind, JournalEntry, Operation, Row, Shown
from verifier import Claim, FalseCompletionKind, Outcome
from verifier.verdict import CheckResult

DOWNLOADS = (*layout.EVIDENCE_FILES, layout.RECEIPT, layout.TRACE, SERVING_LOG, PERSISTENCE_LOG, layout.STARTED,
             layout.ADMITTED)
"""The per-episode files the page may offer for download, by name; nothing outside this list is ever named."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class JournalRowView(BaseModel):
    """One row change an operation caused, as the journal holds it."""

    model_config = _FROZEN
    seq: int
    table: str
    key: Row
    change: ChangeKind
    before: Row | None
    after: Row | None
    changed_fields: list[str]


class OperationView(BaseModel):
    """One HTTP request the site served: what was asked, how it was answered, what it changed and what it showed."""

    model_config = _FROZEN
    seq: int
    action: int | None
    """The action number the request carried (None: none was sent)."""
    method: str
    path: str
    query: str
    status: int
    location: str | None
    mutated: bool
    """The request changed rows (its journal rows are below)."""
    journal: list[JournalRowView]
    shown: Shown | None
    """What the response displayed: rows with their columns, whole lists, documents (None in older evidence)."""
    fault: FaultDecision | None
    repeat_of: int | None


class ActionView(BaseModel):
    """The action a reply was read as: its name and arguments."""

    model_config = _FROZEN
    name: str
    arguments: dict[str, Any]


class StepView(BaseModel):
    """One model reply and what became of it."""

    model_config = _FROZEN
    number: int
    content: str | None
    """The reply's text exactly as recorded."""
    tool_calls: list[ToolCall]
    """The reply's tool calls as the endpoint sent them."""
    action: ActionView | None
    rejection: Rejection | None
    note: str
    observation: str | None
    """What the model saw after the step (None after done)."""
    operations: list[OperationView]


class FiredFault(BaseModel):
    """A fault decided on one operation, and whether it fired."""

    model_config = _FROZEN
    fault: str
    source: str
    operation: int
    action: int | None
    applied: bool


class FaultsView(BaseModel):
    """The episode's faults: what was configured and what fired (from the record), and on which operations."""

    model_config = _FROZEN
    enabled: bool
    configured: list[str]
    fired: list[str]
    decided: list[FiredFault]


class VerdictView(BaseModel):
    """The verifier's named checks, in its order, and its outcome."""

    model_config = _FROZEN
    checks: list[CheckResult]
    outcome: Outcome
    false_completion_kind: FalseCompletionKind | None


class ReceiptView(BaseModel):
    """The replay's result."""

    model_config = _FROZEN
    result: Literal["PASS", "FAIL"]
    first_mismatch: str | None
    mismatches: list[str]
    operations: int


class DownloadsView(BaseModel):
    """The episode's evidence files present on disk, and how to open its trace when it has one."""

    model_config = _FROZEN
    files: list[str]
    trace: bool
    show_trace_command: str | None


class EpisodeView(BaseModel):
    """One episode as its page shows it."""

    model_config = _FROZEN
    episode_id: str
    task_id: str
    instruction: str
    site: str | None
    """The task's site, from the replay receipt (None when the episode has none)."""
    endpoint: str
    scripted: bool
    outcome: EpisodeOutcome
    claim: Claim
    false_completion_kind: FalseCompletionKind | None
    stop_reason: StopReason
    steps_count: int
    wall_s: float
    first_observation: str
    steps: list[StepView]
    unattributed_operations: list[OperationView]
    """Operations no step's action caused: the start page (action 0), requests without an action number."""
    faults: FaultsView
    verdict: VerdictView
    receipt: ReceiptView | None
    downloads: DownloadsView
    serving: ServingRecord | None = None
    """A serving-study episode's policy path, what was injected and the contract (computerops/serving_faults/)."""
    serving_events: list[ServingEvent] = []
    """Every serving event of the episode in order: waits, resends, fallbacks, cut streams."""
    persistence: PersistenceRecord | None = None
    """A long-running episode's processes, checkpoints, resumes and duplicates (computerops/persistence/)."""


def episode_view(bundle: RunDirectory, episode_id: str) -> EpisodeView:
    """The episode `episode_id` of the run, step by step; ServiceError not_found for an episode the run did not
    admit, conflict when its evidence does not match the run's hashes or does not parse."""
    try:
        records = bundle.records()
    except BundleError as exc:
        raise ServiceError(str(exc), "conflict") from exc
    record = next((r for r in records if r.episode_id == episode_id), None)
    if record is None:
        raise ServiceError(f"the run has no episode {episode_id!r}", "not_found")
    problems = bundle.integrity_problems(record) + _sealed_problems(bundle, record)
    if problems:
        raise ServiceError(f"episode {episode_id} does not match the run's checksums: {problems[0]}", "conflict")
    directory = bundle.episode_dir(episode_id)
    try:
        recorded = bundle.load_episode(record)
        if record.outcome not in ("infrastructure_failure", recorded.verdict.outcome):
            raise ServiceError(f"episode {episode_id}: its record says {record.outcome} but its verdict says "
                               f"{recorded.verdict.outcome} (run `computerops verify` on the run)", "conflict")
        transcript = AgentTranscript.model_validate_json((directory / "transcript.json").read_bytes())
        receipt = bundle.receipt(episode_id)
    except (BundleError, ValueError, OSError) as exc:
        raise ServiceError(f"episode {episode_id}: its evidence cannot be read: {exc}", "conflict") from exc
    by_action: dict[int | None, list[OperationView]] = {}
    for operation in recorded.operations:
        by_action.setdefault(operation.action, []).append(_operation(operation, recorded.journal))
    numbers = {step.number for step in transcript.steps}
    steps = [StepView(number=s.number, content=s.call.content, tool_calls=s.call.tool_calls,
                      action=None if s.action is None else _action(s.action), rejection=s.rejection, note=s.note,
                      observation=s.observation, operations=by_action.get(s.number, []))
             for s in transcript.steps]
    unattributed = sorted((o for number, ops in by_action.items() if number not in numbers for o in ops),
                          key=lambda o: o.seq)
    verdict = recorded.verdict
    return EpisodeView(
        episode_id=episode_id, task_id=record.task_id, instruction=transcript.instruction,
        site=receipt.site if receipt else None, endpoint=record.endpoint, scripted=record.scripted,
        outcome=record.outcome, claim=record.claim, false_completion_kind=record.false_completion_kind,
        stop_reason=record.stop_reason, steps_count=record.steps, wall_s=record.wall_s,
        first_observation=transcript.first_observation, steps=steps, unattributed_operations=unattributed,
        faults=_faults(record, recorded.operations),
        verdict=VerdictView(checks=verdict.checks, outcome=verdict.outcome,
                            false_completion_kind=verdict.false_completion_kind),
        receipt=None if receipt is None else ReceiptView(
            result=receipt.result, first_mismatch=receipt.first_mismatch, mismatches=receipt.mismatches,
            operations=receipt.operations),
        downloads=_downloads(bundle, episode_id),
        serving=record.serving, serving_events=transcript.serving, persistence=record.persistence,
    )


def _sealed_problems(bundle: RunDirectory, record: EpisodeRecord) -> list[str]:
    """The episode's files against the run's sealed checksum list, which also covers what the record's hashes do not
    (the receipt, the started marker) and files added since, and its record against its admission marker (a line of
    episodes.jsonl changed after the episode was admitted). Nothing of the first for an episode not sealed yet (a run
    still going, or resumed since its last seal)."""
    episode_id = record.episode_id
    prefix = f"episodes/{episode_id}/"
    try:
        listed = {name: digest for name, digest in bundle.listed_checksums().items() if name.startswith(prefix)}
    except BundleError as exc:
        return [str(exc)]
    problems = bundle.admission_problems(record) + bundle.sealed_record_problems()
    if not listed:
        return problems
    present = (p.relative_to(bundle.root).as_posix() for p in bundle.episode_dir(episode_id).rglob("*") if p.is_file())
    return problems + bundle.sealed_problems(listed) + [
        f"{name}: present but not in {layout.CHECKSUMS}" for name in sorted(present)
        if name not in listed and not name.endswith(".tmp")]


def _operation(operation: Operation, journal: list[JournalEntry]) -> OperationView:
    rows = [JournalRowView(seq=e.seq, table=e.table, key=e.key, change=e.change, before=e.before, after=e.after,
                           changed_fields=e.changed_fields()) for e in journal if e.operation == operation.seq]
    return OperationView(seq=operation.seq, action=operation.action, method=operation.method, path=operation.path,
                         query=operation.query, status=operation.status, location=operation.location,
                         mutated=operation.journal_rows > 0, journal=rows, shown=operation.shown,
                         fault=operation.fault, repeat_of=operation.repeat_of)


def _action(action: dict[str, Any]) -> ActionView:
    """The recorded action (`{"action": name, **arguments}`) split into its name and arguments."""
    arguments = {key: value for key, value in action.items() if key != "action"}
    return ActionView(name=str(action.get("action", "")), arguments=arguments)


def _faults(record: EpisodeRecord, operations: list[Operation]) -> FaultsView:
    decided = [FiredFault(fault=o.fault.fault, source=o.fault.source, operation=o.seq, action=o.action,
                          applied=o.fault.applied) for o in operations if o.fault is not None]
    return FaultsView(enabled=record.faults_enabled, configured=record.faults_configured, fired=record.faults_fired,
                      decided=decided)


def _downloads(bundle: RunDirectory, episode_id: str) -> DownloadsView:
    """The allowed evidence files present for the episode, and `playwright show-trace` for its trace if any."""
    directory = bundle.episode_dir(episode_id)
    files = [name for name in DOWNLOADS if (directory / name).is_file()]
    trace = layout.TRACE in files
    command = f"playwright show-trace {shlex.quote(str((directory / layout.TRACE).absolute()))}" if trace else None
    return DownloadsView(files=files, trace=trace, show_trace_command=command)
