"""The words of a long-running episode, defined once: its persistence arm and the harness's recovery policy."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

CompactionPolicy = Literal["ledgers/1", "ledgers/1:drop-currency", "ledgers/1:changed-amount", "model/1"]
"""The declared compaction policies: `ledgers/1` (the summary written from the typed ledgers) and its two mutants, which
must be caught (computerops/persistence/compaction.py), and `model/1` (the summary the model writes when asked,
`adapter.prompts.SUMMARY_REQUEST`; computerops/persistence/checkpointing.py)."""
MODEL_SUMMARY: CompactionPolicy = "model/1"
COMPACTION_POLICIES: tuple[CompactionPolicy, ...] = get_args(CompactionPolicy)
DEFAULT_COMPACTION: CompactionPolicy = "ledgers/1"
"""The compaction policy of an episode that names none: the summary written from the typed ledgers."""
MUTANT_COMPACTIONS: frozenset[CompactionPolicy] = frozenset({"ledgers/1:drop-currency", "ledgers/1:changed-amount"})
"""The compaction policies that break the invariant by construction: the mutants that must be caught."""

PersistenceArm = Literal["uninterrupted", "compacted", "restarted", "interrupted"]
"""How an episode's harness process lives: `uninterrupted` (one process from start to end), `compacted` (one process,
whose older context is replaced by a summary under the episode's compaction policy right after its first committed
effect), `restarted` (the process
is killed right after the checkpoint that follows its first committed effect, and a new one carries on from that
checkpoint), `interrupted` (the process is SIGKILLed after its first effectful request commits and before the agent
sees the result; a new one carries on from the checkpoint written before that action)."""
PERSISTENCE_ARMS: tuple[PersistenceArm, ...] = get_args(PersistenceArm)
COMPACTED: PersistenceArm = "compacted"
"""The arm whose compaction policy means something (its harness is never resumed: no recovery policy acts in it)."""
RESUMING_ARMS: tuple[PersistenceArm, ...] = ("restarted", "interrupted")
"""The arms whose harness is resumed from a checkpoint: their recovery policy means something (no compaction acts in
them)."""

RecoveryPolicy = Literal["reconcile", "retry-same-key", "retry-new-key", "forget"]
"""What a resumed harness does about the action its checkpoint was written before, whose result never arrived:
`reconcile` reads the site's authoritative log for a commit under the action's idempotency key and tells the agent
what it finds; `retry-same-key` sends the action's request again under the same key (the site answers a committed
key with the committed result); `retry-new-key` sends it again under a new key (a mutant: a committed action is done
twice); `forget` tells the agent the action was not done without reading anything (a mutant: a committed effect is
forgotten, and an ambiguous result becomes permission to retry)."""
RECOVERY_POLICIES: tuple[RecoveryPolicy, ...] = get_args(RecoveryPolicy)
SOUND_RECOVERY: frozenset[RecoveryPolicy] = frozenset({"reconcile", "retry-same-key"})
"""The policies that keep the invariant; the others are the mutants that must be caught."""
MUTANT_RECOVERIES: frozenset[RecoveryPolicy] = frozenset(RECOVERY_POLICIES) - SOUND_RECOVERY
"""The recovery policies that break the invariant: the mutants that must be caught."""

POSSIBLY_EFFECTFUL: frozenset[str] = frozenset({"click", "press", "dialog", "drag", "check"})
"""Actions that may send a request that changes something (a form's submit, a key that submits it, a dialog's OK, a
control whose script posts): a checkpoint is written right before each of them."""


class Persistence(BaseModel):
    """How one episode's harness persists (PlannedEpisode.persistence); None for an ordinary in-process episode."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: PersistenceArm = "uninterrupted"
    recovery: RecoveryPolicy = "reconcile"
    compaction: CompactionPolicy = DEFAULT_COMPACTION
    """The compaction policy of the `compacted` arm (computerops/persistence/compaction.py)."""
    checkpoint_every: int = Field(default=5, ge=1)
    """A checkpoint every this many model replies, besides those before and after effects."""
