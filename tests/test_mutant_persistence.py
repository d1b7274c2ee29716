"""The harness mutants of `tasks audit`, pure: which tasks have them, and their fate rule on synthetic figures."""

from __future__ import annotations

from pathlib import Path

from computerops.catalog.audit import sampled
from computerops.catalog.mutant_persistence import (
    HARNESS_CLASSES,
    NO_AMOUNT,
    compaction_is_sound,
    persistence_fate,
    persistence_mutants,
)
from computerops.persistence.metrics import Boundary, PersistenceRecord
from tasks import load_catalog

CATALOG = load_catalog()


def boundary(*, lost: list[str] | None = None, kind: str = "resume") -> Boundary:
    return Boundary.model_validate({
        "kind": kind, "process": 2, "resumed_from": 3, "carried_in": 4, "constraints_retained": not lost,
        "approvals_valid": True, "effects_retained": True, "unfinished_retained": True, "recovery_turns": 0,
        "lost": lost or []})


def figures(boundaries: list[Boundary], duplicates: int = 0, arm: str = "interrupted",
            compaction: str | None = None) -> PersistenceRecord:
    return PersistenceRecord(arm=arm, recovery="retry-new-key", compaction=compaction, processes=2, checkpoints=6,
                             boundaries=boundaries, duplicate_effects=duplicates, unfinished_left=0)


def test_a_harness_mutant_is_killed_by_a_duplicate_a_loss_or_its_verdict_and_survives_only_keeping_everything() -> None:
    fate, note = persistence_fate("verified_success", figures([boundary()], duplicates=1))
    assert fate == "killed" and "1 duplicate effect" in note
    lost = "effect not kept: done, never to repeat: ticket_reply (id 9) committed by action 4"
    fate, note = persistence_fate("verified_success", figures([boundary(lost=[lost])]))
    assert fate == "killed" and lost in note
    assert persistence_fate("false_completion", figures([boundary()]))[0] == "killed"
    assert persistence_fate("verified_success", figures([boundary()]))[0] == "survived"
    # The site absorbed it (a retry under a new key refused: the approval was used): the control's own effects.
    assert persistence_fate("verified_success", figures([boundary()]), same_effect=True)[0] == "equivalent"
    assert persistence_fate("verified_success", figures([boundary()], duplicates=1), same_effect=True)[0] == "killed"


def test_a_harness_mutant_without_a_boundary_tests_nothing_and_a_compaction_without_money_is_equivalent() -> None:
    fate, note = persistence_fate("verified_success", figures([]))
    assert fate == "not_run" and "never reached its boundary" in note
    assert persistence_fate("false_completion", figures([]))[0] == "not_run"  # no boundary, whatever the verdict
    assert persistence_fate("infrastructure_failure", None)[0] == "not_run"
    compacted = figures([boundary(kind="compaction")], arm="compacted", compaction="ledgers/1:drop-currency")
    assert persistence_fate("verified_success", compacted, same_summary=True) == ("equivalent", NO_AMOUNT)
    # Without its compaction checkpoint nothing says the summary was ledgers/1's own: judged by the figures.
    assert not compaction_is_sound(compacted, Path("/nonexistent"))
    assert not compaction_is_sound(figures([boundary()]), Path("/nonexistent"))


def test_only_a_task_whose_site_declares_ledgers_has_harness_mutants_and_a_quick_audit_runs_one_of_each() -> None:
    helpdesk = list(persistence_mutants(CATALOG["helpdesk.refund-with-approval@1"]))
    assert {m.mutant_class for m in helpdesk} == HARNESS_CLASSES and len(helpdesk) == 4
    control = list(CATALOG["helpdesk.refund-with-approval@1"].spec.scripted_control)
    assert all(m.steps == control and m.persistence is not None for m in helpdesk)
    assert {(m.persistence.arm, m.persistence.recovery if m.persistence.arm == "interrupted"
             else m.persistence.compaction) for m in helpdesk if m.persistence} == {
        ("interrupted", "retry-new-key"), ("interrupted", "forget"), ("compacted", "ledgers/1:drop-currency"),
        ("compacted", "ledgers/1:changed-amount")}
    assert list(persistence_mutants(CATALOG["webmail.answer-invoice-amount@1"])) == []
    taken: dict[str, int] = {}
    first = sampled(helpdesk, 1, taken)
    assert [m.id for m in first] == ["persistence:interrupted-retry-new-key", "persistence:compacted-drop-currency"]
    ledger = list(persistence_mutants(CATALOG["ledger.post-bank-charge@1"]))
    assert sampled(ledger, 1, taken) == [] and sampled(ledger, None, taken) == ledger
