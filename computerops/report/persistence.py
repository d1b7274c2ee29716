"""The persistence figures of long-running episodes (docs/long-running.md), one row per endpoint, arm and the policy
it tests (the compaction policy of the compacted arm, the recovery policy of the others): verified success, each
ledger's retention over the boundaries (resumes and compactions), duplicate effects, unfinished work left, recovery
turns, latency and tokens. Reported by arm, never averaged across arms: a strong
uninterrupted figure says nothing of an arm that loses a commit.

Counted over the episodes the agent attempted (infrastructure failures apart, as everywhere); retention over the
boundaries of those episodes (an uninterrupted episode has none, and its retention reads "no boundaries").
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel

from computerops.report.figures import FROZEN, Proportion, proportion
from computerops.report.outcomes import attempted_by_the_agent
from computerops.report.tables import Mark, Table, columns, proportion_cells
from computerops.runs.records import EpisodeRecord

NO_BOUNDARIES = "no boundaries"
"""How a retention figure reads for episodes that were never resumed."""


class PersistenceRow(BaseModel):
    """One endpoint label under one persistence arm and the policy it tests."""

    model_config = FROZEN

    endpoint: str
    arm: str
    policy: str
    """The compaction policy of the compacted arm, the recovery policy of the others."""
    verified: Proportion
    """Verified successes over the arm's episodes."""
    constraints_retained: Proportion
    approvals_valid: Proportion
    effects_retained: Proportion
    unfinished_retained: Proportion
    """Each over the arm's boundaries: resumes whose carried ledger kept what the site's records held then."""
    with_duplicates: Proportion
    """Episodes with at least one effect done twice, over the arm's episodes."""
    duplicate_effects: int
    unfinished_left: int
    """Work items the arm's episodes opened and left open."""
    recovery_turns: float | None
    """Mean rejected replies after a resume before the first accepted one (None: no boundaries)."""
    median_wall_s: float | None
    mean_tokens: float | None
    """Mean prompt plus completion tokens per episode (None when an episode's counts are unknown)."""


class PersistenceReport(BaseModel):
    model_config = FROZEN

    rows: list[PersistenceRow]


def _row(endpoint: str, arm: str, policy: str, records: Sequence[EpisodeRecord]) -> PersistenceRow:
    facts = [r.persistence for r in records if r.persistence is not None]
    boundaries = [b for f in facts for b in f.boundaries]
    over = "boundaries (resumes)"

    def kept(name: str) -> Proportion:
        return proportion(sum(bool(getattr(b, name)) for b in boundaries), len(boundaries), over)

    tokens = [r.prompt_tokens + r.completion_tokens for r in records
              if r.prompt_tokens is not None and r.completion_tokens is not None]
    return PersistenceRow(
        endpoint=endpoint, arm=arm, policy=policy,
        verified=proportion(sum(r.outcome == "verified_success" for r in records), len(records), "episodes"),
        constraints_retained=kept("constraints_retained"), approvals_valid=kept("approvals_valid"),
        effects_retained=kept("effects_retained"), unfinished_retained=kept("unfinished_retained"),
        with_duplicates=proportion(sum(f.duplicate_effects > 0 for f in facts), len(facts), "episodes"),
        duplicate_effects=sum(f.duplicate_effects for f in facts),
        unfinished_left=sum(f.unfinished_left for f in facts),
        recovery_turns=round(statistics.fmean(b.recovery_turns for b in boundaries), 2) if boundaries else None,
        median_wall_s=round(statistics.median(r.wall_s for r in records), 2) if records else None,
        mean_tokens=round(statistics.fmean(tokens), 1) if tokens and len(tokens) == len(records) else None,
    )


def persistence_report(records: Sequence[EpisodeRecord]) -> PersistenceReport | None:
    """The persistence figures of a run's long-running episodes; None when it has none."""
    counted = [r for r in attempted_by_the_agent(records) if r.persistence is not None]
    if not counted:
        return None
    groups = sorted({(r.endpoint, r.persistence.arm, r.persistence.policy) for r in counted
                     if r.persistence is not None})
    return PersistenceReport(rows=[
        _row(endpoint, arm, policy, [r for r in counted if r.endpoint == endpoint and r.persistence is not None
                                     and (r.persistence.arm, r.persistence.policy) == (arm, policy)])
        for endpoint, arm, policy in groups])


def _kept(proportion: Proportion) -> str:
    return NO_BOUNDARIES if proportion.denominator == 0 else proportion_cells(proportion)[0]


def persistence_table(persistence: PersistenceReport) -> Table:
    """The long-running episodes' figures: one row per endpoint, arm and recovery policy, never averaged across."""
    return Table(
        id="persistence", title="Long-running episodes by arm",
        columns=columns("endpoint", "arm", "policy", "verified", "Wilson", "constraints kept", "approvals valid",
                        "effects kept", "open work kept", "with duplicates", "duplicate effects", "open work left",
                        "recovery turns", "median wall s", "mean tokens", labels=3),
        rows=tuple((r.endpoint, r.arm, r.policy, proportion_cells(r.verified)[0], proportion_cells(r.verified)[1],
                    _kept(r.constraints_retained), _kept(r.approvals_valid), _kept(r.effects_retained),
                    _kept(r.unfinished_retained),
                    Mark(text=proportion_cells(r.with_duplicates)[0], tone="alert") if r.duplicate_effects
                    else proportion_cells(r.with_duplicates)[0],
                    r.duplicate_effects, r.unfinished_left,
                    NO_BOUNDARIES if r.recovery_turns is None else r.recovery_turns, r.median_wall_s, r.mean_tokens)
                   for r in persistence.rows),
        caption=("Each arm on its own row, never averaged: uninterrupted = one harness process; restarted = killed "
                 "after its first effect's checkpoint and carried on from it in a new process; interrupted = "
                 "SIGKILLed between its first effect's commit and the agent seeing it, carried on from the checkpoint "
                 "written before that action; compacted = its older context replaced after its first effect by the "
                 "summary of its compaction policy (policy: the compaction policy for compacted, else the recovery "
                 "policy). Retention over the arm's boundaries (resumes and compactions): what the agent carried on "
                 "with (a resumed process's ledgers, a summary's lines) against the site's records at that moment. "
                 "A duplicate effect is an effect committed again "
                 "by a repeat of a committed request under another idempotency key. Recovery turns: replies "
                 "rejected after a boundary before the first accepted one. The policies retry-new-key, forget, "
                 "ledgers/1:drop-currency and ledgers/1:changed-amount are the mutants that must be caught "
                 "(docs/long-running.md)."))
