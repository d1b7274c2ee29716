"""Harness mutants of a long-running episode, for `computerops tasks audit`: judged by the persistence figures
(`EpisodeRecord.persistence`, docs/long-running.md), not by the verdict alone.

The task's scripted control runs unchanged, long-running, under a harness that breaks the invariant *a compaction or
restart must not weaken constraints, revive completed effects, erase unfinished work, or convert an ambiguous external
result into permission to retry* (computerops/persistence/arms.py):

- `persistence-recovery` (wrong): the `interrupted` arm under `retry-new-key` (a committed action done again under a
  new idempotency key) and under `forget` (the committed effect forgotten at the lost reply);
- `persistence-compaction` (wrong): the `compacted` arm under `ledgers/1:drop-currency` (every amount without its
  currency) and `ledgers/1:changed-amount` (each approval with another amount).

Only a task whose site declares ledgers (`SiteDefinition.ledgers`) can run long-running, so only such a task has
them. Their fate (`persistence_fate`):

- `not_run`: no persistence figures were recorded (the episode failed as infrastructure), or the episode has no
  boundary (`persistence.boundaries == []`): no effect committed, so nothing was interrupted or compacted and the
  mutant tested nothing;
- `equivalent`: a compaction mutant whose summary is `ledgers/1`'s own, line for line, because the ledgers at the
  compaction hold no amount (no limit, no approval): dropping a currency or changing an amount changes nothing, so it
  is equivalent by construction and no figure could tell it apart;
- `killed`: the verdict is not verified success, or a duplicate effect was committed, or a boundary lost something
  (a constraint, an approval, an effect, open work);
- `equivalent` too: verified success, no duplicate, every boundary retained everything, and the effects of the
  scripted control's own run (`audit.Effect.covers`): the site absorbed the broken harness (it refused the retry
  under a new key: an approval already used commits nothing twice), so no figure could tell it apart;
- `survived`: verified success, no duplicate, every boundary retained everything, yet other effects than the
  scripted control's — a defect of the figures (or of the verifier) to fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from computerops.catalog.mutants import Fate, Mutant, MutantClass
from computerops.persistence.arms import Persistence
from computerops.persistence.compaction import ledger_lines
from computerops.persistence.metrics import PersistenceRecord, read_checkpoints
from sites.registry import SITES
from tasks import LoadedTask

RECOVERY_MUTANTS: tuple[tuple[str, Persistence, str], ...] = (
    ("persistence:interrupted-retry-new-key", Persistence(arm="interrupted", recovery="retry-new-key"),
     "interrupted after its first committed effect; the resumed harness sends that action again under a new "
     "idempotency key"),
    ("persistence:interrupted-forget", Persistence(arm="interrupted", recovery="forget"),
     "interrupted after its first committed effect; the resumed harness tells the agent it was not done"),
)
COMPACTION_MUTANTS: tuple[tuple[str, Persistence, str], ...] = (
    ("persistence:compacted-drop-currency", Persistence(arm="compacted", compaction="ledgers/1:drop-currency"),
     "compacted after its first committed effect; the summary writes every amount without its currency"),
    ("persistence:compacted-changed-amount", Persistence(arm="compacted", compaction="ledgers/1:changed-amount"),
     "compacted after its first committed effect; the summary gives each approval another amount"),
)
HARNESS_CLASSES: frozenset[MutantClass] = frozenset({"persistence-recovery", "persistence-compaction"})
"""The classes whose mutants run long-running (5-15 s each): a quicker audit samples them across the whole audit."""
NO_AMOUNT = "no amount in the ledgers: the summary is ledgers/1's own, line for line"


def persistence_mutants(task: LoadedTask) -> Iterator[Mutant]:
    """The harness mutants of a task whose site declares ledgers (else none): the scripted control's steps
    unchanged, only the episode's persistence set."""
    site = SITES.get(task.spec.site)
    if site is None or site.ledgers is None:
        return
    steps = list(task.spec.scripted_control)
    for mutant_id, persistence, description in RECOVERY_MUTANTS:
        yield Mutant(id=mutant_id, mutant_class="persistence-recovery", description=description, steps=steps,
                     persistence=persistence)
    for mutant_id, persistence, description in COMPACTION_MUTANTS:
        yield Mutant(id=mutant_id, mutant_class="persistence-compaction", description=description, steps=steps,
                     persistence=persistence)


def compaction_is_sound(persistence: PersistenceRecord | None, checkpoints: Path) -> bool:
    """Every compaction of the episode summarised its ledgers as `ledgers/1` words them (its policy's mutation had
    nothing to change: no amount in them); False when it had no compaction or a checkpoint cannot be read."""
    if persistence is None or persistence.compaction is None:
        return False
    compactions = [b.carried_in for b in persistence.boundaries if b.kind == "compaction"]
    if not compactions or None in compactions:
        return False
    found, problems = read_checkpoints(checkpoints)
    by_number = {c.number: c for c in found}
    if problems or any(n not in by_number for n in compactions):
        return False
    policy = next(p.compaction for _, p, _ in COMPACTION_MUTANTS if p.compaction == persistence.compaction)
    return all(ledger_lines(by_number[n].ledgers, policy) == ledger_lines(by_number[n].ledgers)
               for n in compactions if n is not None)


def persistence_fate(outcome: str, persistence: PersistenceRecord | None,
                     same_summary: bool = False, same_effect: bool = False) -> tuple[Fate, str]:
    """A harness mutant's fate and note (the module's docstring says the rule): `outcome` is the verdict's outcome,
    `same_summary` whether its compaction wrote `ledgers/1`'s own summary (`compaction_is_sound`), `same_effect`
    whether it had the scripted control's effects (`audit.Effect.covers`)."""
    if persistence is None:
        return "not_run", f"no persistence figures recorded (outcome {outcome})"
    if not persistence.boundaries:
        return "not_run", "never reached its boundary: no effect committed, so nothing was interrupted or compacted"
    if same_summary:
        return "equivalent", NO_AMOUNT
    why: list[str] = []
    if outcome != "verified_success":
        why.append(f"verdict {outcome}")
    if persistence.duplicate_effects:
        why.append(f"{persistence.duplicate_effects} duplicate effect(s)")
    lost = [line for b in persistence.boundaries for line in b.lost]
    partial = [b for b in persistence.boundaries if not (b.constraints_retained and b.approvals_valid
                                                         and b.effects_retained and b.unfinished_retained)]
    if lost or partial:
        why.append("lost at a boundary: " + ("; ".join(lost) if lost else "a ledger not retained"))
    if why:
        return "killed", "; ".join(why)
    if same_effect:
        return "equivalent", "the site absorbed it: verified, no duplicate effect, the scripted control's effects"
    return "survived", "verified, no duplicate effect, every boundary retained everything"
