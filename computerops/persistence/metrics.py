"""A long-running episode's persistence figures, from its evidence alone (so `verify` recomputes them): for each
boundary (a resumed process), what the ledgers it carried on with kept of the authoritative ledgers at that moment;
over the whole episode, the effects done twice and the unfinished work left open.

The authoritative ledgers at a checkpoint's moment are the site's records as of its `as_of_operation`: the final state
with the journal's later entries undone (`verifier.attack.states_over_time`), read by the site's own ledger readers,
and the effect-table inserts the journal holds up to that operation. What a process carried is its `resume`
checkpoint (written once it recovered the interrupted action and showed the page again).

- constraints retained: the carried constraints are the task's, exactly (a resume never loosens one).
- approvals valid: every carried approval is the site's record as it then stood (amount, currency, status, expiry,
  policy), and none is missing.
- completed effects retained: every effect committed up to that moment is carried (a committed refund is never
  forgotten because its reply was lost).
- unfinished work retained: every open work item is carried.
- recovery turns: the resumed process's replies rejected before its first accepted action (the recovered action's
  answer included): turns the restart cost the agent.
- duplicate effects: effect-table inserts made by a request that repeats, under another idempotency key, a request
  that already committed (same method, path and body); a repeat the site answered from its committed result (same
  key) commits nothing and is no duplicate.
- unfinished work left: work items the episode opened that are still open at its end.

A compaction is a boundary too, judged on its summary's text (`compaction.kept`): an entry is kept when its line, as
`ledgers/1` words it, is in the summary. A model's summary (`model/1`) is judged the same way, line by line: a
paraphrase that keeps a fact in other words is counted as losing it (see docs/long-running.md for why). A `model/1`
compaction whose reply was no summary replaced nothing: it is no boundary, and `failed_compactions` names it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapter.transcript import AgentTranscript
from computerops.persistence.arms import Persistence
from computerops.persistence.checkpoint import Checkpoint, CheckpointRefused, Constraints, read_checkpoint
from computerops.persistence.compaction import kept
from sites.kit.ledgers import CompletedEffect, LedgerSource
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from verifier.attack import states_over_time


class Boundary(BaseModel):
    """One resume or compaction: what the agent carried on with, against the site's records at that moment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["resume", "compaction"] = "resume"
    process: int
    resumed_from: int
    """The checkpoint it carried on from (a compaction: its own)."""
    carried_in: int | None
    """Its `resume` or `compaction` checkpoint (None: a resumed process that ended before writing one)."""
    constraints_retained: bool
    approvals_valid: bool
    effects_retained: bool
    unfinished_retained: bool
    recovery_turns: int
    lost: list[str] = Field(default_factory=list)
    """What the carried ledgers left out or got wrong, in words."""


class PersistenceRecord(BaseModel):
    """An episode record's persistence figures (`EpisodeRecord.persistence`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def policy(self) -> str:
        """The policy the arm puts to the test: the compaction policy of a compacted episode, else the recovery."""
        return self.compaction or self.recovery

    arm: str
    recovery: str
    compaction: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The compaction policy of a `compacted` episode; None for the other arms."""
    processes: int
    checkpoints: int
    boundaries: list[Boundary] = Field(default_factory=list)
    duplicate_effects: int
    unfinished_left: int
    failed_compactions: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    """`model/1` compactions whose reply was no summary (checkpoint number and why): the context stayed as it was,
    so they are no boundary."""
    problems: list[str] = Field(default_factory=list)
    """Evidence that could not be read (an altered checkpoint): the figures it would have given are missing."""


def read_checkpoints(directory: Path) -> tuple[list[Checkpoint], list[str]]:
    """Every checkpoint of an episode, checked, by number; and what could not be read."""
    found, problems = [], []
    for path in sorted(directory.glob("[0-9][0-9][0-9].json")):
        try:
            found.append(read_checkpoint(path))
        except CheckpointRefused as refused:
            problems.append(str(refused))
    return found, problems


def _effect_rule(effects: LedgerSource | frozenset[str]) -> Callable[[JournalEntry], bool]:
    """Which journal entries are effects: the source's rule, or every insert into the tables given."""
    if isinstance(effects, LedgerSource):
        return lambda e: e.change == "insert" and effects.is_effect(e.table, e.after)
    return lambda e: e.change == "insert" and e.table in effects


def duplicate_effects(operations: Sequence[Operation], journal: Sequence[JournalEntry],
                      effects: LedgerSource | frozenset[str]) -> int:
    """Effects committed by a request that repeats an earlier committed one under another key (`effects`: the site's
    ledger source, or the effect tables whose every insert is one)."""
    effect = _effect_rule(effects)
    inserting = {e.operation for e in journal if effect(e)}
    seen: set[tuple[str, str, str, str]] = set()
    duplicates = 0
    for op in operations:
        if op.seq not in inserting:
            continue
        request = (op.method, op.path, op.query, op.body)
        if request in seen:
            duplicates += sum(1 for e in journal if e.operation == op.seq and effect(e))
        seen.add(request)
    return duplicates


def _effects_until(operations: Sequence[Operation], journal: Sequence[JournalEntry], source: LedgerSource,
                   as_of: int) -> list[CompletedEffect]:
    by_seq = {op.seq: op for op in operations}
    return [CompletedEffect(table=e.table, key=e.key, operation=e.operation, action=by_seq[e.operation].action,
                            idempotency_key=by_seq[e.operation].idempotency_key)
            for e in journal if e.change == "insert" and source.is_effect(e.table, e.after) and e.operation <= as_of]


def _state_as_of(states: list[tuple[int, StateSnapshot]], as_of: int) -> StateSnapshot:
    """The state after the latest change at or before operation `as_of` (`states` latest first)."""
    return next(state for moment, state in states if moment <= as_of)


def _recovery_turns(transcript: AgentTranscript, resumed_after: int) -> int:
    turns = 0
    for step in transcript.steps:
        if step.number <= resumed_after:
            continue
        if step.rejection is None:
            break
        turns += 1
    return turns


def _boundary(process: int, resumed_from: Checkpoint, carried: Checkpoint | None, constraints: Constraints,
              source: LedgerSource, states: list[tuple[int, StateSnapshot]], operations: Sequence[Operation],
              journal: Sequence[JournalEntry], transcript: AgentTranscript) -> Boundary:
    resumed_after = resumed_from.conversation.next_number - 1
    turns = _recovery_turns(transcript, resumed_after)
    if carried is None:
        return Boundary(process=process, resumed_from=resumed_from.number, carried_in=None,
                        constraints_retained=False, approvals_valid=False, effects_retained=False,
                        unfinished_retained=False, recovery_turns=turns,
                        lost=["the resumed process wrote no checkpoint: nothing it carried is on record"])
    state = _state_as_of(states, carried.as_of_operation)
    ledgers = carried.ledgers
    lost: list[str] = []
    constraints_ok = ledgers.constraints == constraints
    if not constraints_ok:
        lost.append("the constraints differ from the task's")
    approvals = source.approvals(state, carried.as_of_operation)
    approvals_ok = sorted(ledgers.approvals, key=lambda a: a.id) == sorted(approvals, key=lambda a: a.id)
    if not approvals_ok:
        wrong = sorted({a.id for a in ledgers.approvals} ^ {a.id for a in approvals}
                       | {a.id for a in ledgers.approvals if a not in approvals})
        lost.append(f"approvals not as the site holds them: {', '.join(wrong)}")
    effects = _effects_until(operations, journal, source, carried.as_of_operation)
    missing = [e for e in effects if e not in ledgers.completed_effects]
    if missing:
        lost.append("committed effects not carried: " + ", ".join(f"{e.table} {e.key} (operation {e.operation})"
                                                                   for e in missing))
    open_work = source.unfinished(state)
    dropped = [w for w in open_work if w not in ledgers.unfinished_work]
    if dropped:
        lost.append("open work not carried: " + ", ".join(w.id for w in dropped))
    return Boundary(process=process, resumed_from=resumed_from.number, carried_in=carried.number,
                    constraints_retained=constraints_ok, approvals_valid=approvals_ok, effects_retained=not missing,
                    unfinished_retained=not dropped, recovery_turns=turns, lost=lost)


def _compaction(checkpoint: Checkpoint, constraints: Constraints, source: LedgerSource,
                states: list[tuple[int, StateSnapshot]], operations: Sequence[Operation],
                journal: Sequence[JournalEntry], transcript: AgentTranscript) -> Boundary:
    """A compaction: what its summary kept of the ledgers as the site's records then stood (every entry's line)."""
    assert checkpoint.compaction is not None
    state = _state_as_of(states, checkpoint.as_of_operation)
    effects = _effects_until(operations, journal, source, checkpoint.as_of_operation)
    constraints_ok, approvals_ok, effects_ok, work_ok, lost = kept(
        checkpoint.compaction.summary, constraints, source.approvals(state, checkpoint.as_of_operation), effects,
        source.unfinished(state))
    return Boundary(kind="compaction", process=checkpoint.process, resumed_from=checkpoint.number,
                    carried_in=checkpoint.number, constraints_retained=constraints_ok, approvals_valid=approvals_ok,
                    effects_retained=effects_ok, unfinished_retained=work_ok,
                    recovery_turns=_recovery_turns(transcript, checkpoint.conversation.next_number - 1), lost=lost)


def persistence_record(
    persistence: Persistence, processes: Sequence[tuple[int, int | None]], checkpoints_dir: Path,
    constraints: Constraints, source: LedgerSource, transcript: AgentTranscript, operations: Sequence[Operation],
    journal: Sequence[JournalEntry], final_state: StateSnapshot,
) -> PersistenceRecord:
    """The figures of one long-running episode; `processes`: (number, the checkpoint it resumed from) of each."""
    checkpoints, problems = read_checkpoints(checkpoints_dir)
    by_number = {c.number: c for c in checkpoints}
    states = states_over_time(final_state, journal)
    boundaries = []
    for process, resumed_from in processes:
        if resumed_from is None:
            continue
        origin = by_number.get(resumed_from)
        if origin is None:
            problems.append(f"process {process} resumed from checkpoint {resumed_from:03d}, which is not on record")
            continue
        carried = next((c for c in checkpoints if c.process == process and c.trigger == "resume"), None)
        boundaries.append(_boundary(process, origin, carried, constraints, source, states, operations, journal,
                                    transcript))
    failed = [f"checkpoint {c.number:03d}: {c.compaction.failed}" for c in checkpoints
              if c.compaction is not None and c.compaction.failed is not None]
    for compacted in (c for c in checkpoints if c.compaction is not None and c.compaction.failed is None):
        boundaries.append(_compaction(compacted, constraints, source, states, operations, journal, transcript))
    start = states[-1][1]
    opened = [w for w in source.unfinished(final_state) if w not in source.unfinished(start)]
    return PersistenceRecord(
        arm=persistence.arm, recovery=persistence.recovery,
        compaction=persistence.compaction if persistence.arm == "compacted" else None, processes=len(processes),
        checkpoints=len(checkpoints),
        boundaries=boundaries, duplicate_effects=duplicate_effects(operations, journal, source),
        unfinished_left=len(opened), failed_compactions=failed, problems=problems)
