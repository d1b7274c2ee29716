"""The shipped persistence experiment through the CLI with a real Chromium and real harness processes: frozen (on a
sample in CI: one task, the interrupted arm x reconcile and retry-new-key and the compacted arm x
ledgers/1:changed-amount, one repetition; whole in the slow tier), run, verified and reported. The mutants are caught
where the design puts them: the retry under a new idempotency key does the notification twice and loses verified
success against its uninterrupted control, reconcile does nothing twice, and a compaction mutant's summary loses the
approvals it misstates. Every persistence arm the frozen design names is in the report with its own episodes' figures
(`_every_arm_has_its_figures`: the arm, the policy and the episodes counted come from the records, checked against
the lock's plan), so a report that drops an arm's figures fails here, whatever names it shows."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_resume import finish, scratch, start

from computerops.experiment.lock import read_lock
from computerops.persistence.arms import COMPACTED, MUTANT_COMPACTIONS, MUTANT_RECOVERIES, PERSISTENCE_ARMS
from computerops.runs.bundle import RunDirectory
from computerops.runs.verification import verify_run

__all__ = ["scratch"]  # the module fixture that gives the child processes their own temporary directory
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "experiments" / "persistence-v1.yaml"
NOTIFY = "helpdesk.notify-and-close-follow-up@1"
RETENTION = ("constraints_retained", "approvals_valid", "effects_retained", "unfinished_retained")
pytestmark = pytest.mark.browser


def _run(tmp_path: Path, data: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """Freeze, run and verify the design; its run directory and `experiment report --json`, checked to show every
    persistence arm of the design with its own episodes' figures."""
    source = tmp_path / "persistence.yaml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    lock = tmp_path / "persistence.lock.json"
    frozen = finish(start("experiment", "freeze", str(source), "--out", str(lock)))
    assert "control = the uninterrupted long-running episode" in " ".join(frozen.split())
    run = tmp_path / "run"
    finish(start("experiment", "run", str(lock), "--out", str(run), "--concurrency", "2"), timeout=1500)
    verification = asyncio.run(verify_run(RunDirectory.open(run)))
    assert verification.passed, verification.problems
    report = json.loads(finish(start("experiment", "report", str(run), "--json")))
    _every_arm_has_its_figures(lock, report)
    return run, report


def _every_arm_has_its_figures(lock_path: Path, report: dict[str, Any]) -> None:
    """Every cell and arm of the frozen plan has one persistence row in the report, made from its own episodes: the
    row's arm and policy are those its planned episodes ran (the compaction policy of a compacted one, else the
    recovery policy), it counts them all, and an arm other than the uninterrupted one has a boundary (a compaction or
    a resume) in each of its episodes, with every retention figure counted over them. The persistence arms the rows
    show are the design's, the control's included."""
    lock = read_lock(lock_path)
    planned: Counter[tuple[str, str, str, str]] = Counter()
    for p in lock.plan:
        assert p.cell is not None and p.arm is not None and p.persistence is not None
        ran: str = p.persistence.compaction if p.persistence.arm == COMPACTED else p.persistence.recovery
        planned[(p.cell, p.arm, p.persistence.arm, ran)] += 1
    entries = {(e["cell"], e["arm"]): e["rows"] for e in report["persistence"]}
    assert sorted(entries) == sorted({(cell, arm) for cell, arm, _, _ in planned})
    for (cell, arm, persistence_arm, policy), episodes in planned.items():
        [row] = entries[(cell, arm)]
        assert (row["arm"], row["policy"]) == (persistence_arm, policy), (cell, arm)
        assert row["verified"]["denominator"] == episodes, (cell, arm)
        boundaries = {row[name]["denominator"] for name in RETENTION}
        if persistence_arm == "uninterrupted":
            assert boundaries == {0}, (cell, arm)
        else:
            assert len(boundaries) == 1 and boundaries.pop() >= episodes, (cell, arm, row)
    assert lock.spec.factors.persistence is not None
    shown = {row["arm"] for rows in entries.values() for row in rows}
    assert shown == {"uninterrupted", *lock.spec.factors.persistence} <= set(PERSISTENCE_ARMS)


def _levels(cell: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in cell.split(","))


def _by_cell(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The persistence row of each (treatment arm, its policy, experiment arm) of the design's cells."""
    found = {}
    for entry in report["persistence"]:
        levels = _levels(entry["cell"])
        policy = levels["compaction"] if levels["persistence"] == COMPACTED else levels["recovery"]
        [row] = entry["rows"]
        assert row["arm"] == ("uninterrupted" if entry["arm"] == "control" else levels["persistence"])
        if entry["arm"] == "treatment":
            assert row["policy"] == policy
        found[(levels["persistence"], policy, entry["arm"])] = row
    return found


def _negative_cells_caught(report: dict[str, Any]) -> None:
    """Every mutant level where it can act (an interrupted cell's recovery mutant, a compacted cell's compaction
    mutant: a restarted harness has no action pending, so its recovery policy has nothing to recover) is caught: a
    duplicate effect, less verified success than its control, or a boundary that lost something."""
    rows = _by_cell(report)
    negative = [(arm, policy) for arm, policy, side in rows if side == "treatment"
                and ((arm == "interrupted" and policy in MUTANT_RECOVERIES)
                     or (arm == COMPACTED and policy in MUTANT_COMPACTIONS))]
    assert negative
    for arm, policy in negative:
        treatment, control = rows[(arm, policy, "treatment")], rows[(arm, policy, "control")]
        lost = [name for name in RETENTION if treatment[name]["denominator"] and treatment[name]["rate"] < 1.0]
        assert (treatment["duplicate_effects"] or lost
                or treatment["verified"]["rate"] < control["verified"]["rate"]), (arm, policy, treatment)


def _caught(report: dict[str, Any]) -> None:
    assert report["missing"]["not_run"] == [] and report["missing"]["infrastructure_failures"] == []
    assert report["scripted"] and report["tests"] == [] and report["gate"] is None
    rows = _by_cell(report)
    for recovery in ("reconcile", "retry-new-key"):
        control = rows[("interrupted", recovery, "control")]
        assert control["verified"]["rate"] == 1.0 and control["duplicate_effects"] == 0
        assert control["effects_retained"]["denominator"] == 0, "an uninterrupted episode has no boundary"
    reconcile = rows[("interrupted", "reconcile", "treatment")]
    assert reconcile["duplicate_effects"] == 0 and reconcile["verified"]["rate"] == 1.0
    assert reconcile["effects_retained"]["rate"] == 1.0 and reconcile["effects_retained"]["denominator"] >= 1
    new_key = rows[("interrupted", "retry-new-key", "treatment")]
    assert new_key["duplicate_effects"] >= 1 and new_key["with_duplicates"]["numerator"] >= 1
    assert new_key["verified"]["rate"] < rows[("interrupted", "retry-new-key", "control")]["verified"]["rate"]
    # the per-cell counts and the paired estimate read the same arms
    cells = {(c["cell"], c["arm"]): c for c in report["cells"]}
    new_key_cell = next(e["cell"] for e in report["persistence"] if "interrupted,recovery=retry-new-key" in e["cell"])
    assert cells[(new_key_cell, "treatment")]["verified"] < cells[(new_key_cell, "control")]["verified"]
    verified = next(p for p in report["paired"] if p["measure"] == "verified_success")
    assert verified["differences"][NOTIFY] < 0
    # a compaction that misstates each approval's amount loses them at its boundary, though the agent finishes
    changed = rows[(COMPACTED, "ledgers/1:changed-amount", "treatment")]
    assert changed["approvals_valid"]["rate"] == 0.0 and changed["approvals_valid"]["denominator"] >= 1
    assert changed["effects_retained"]["rate"] == 1.0 and changed["unfinished_retained"]["rate"] == 1.0
    assert changed["verified"]["rate"] == 1.0 and changed["duplicate_effects"] == 0
    _negative_cells_caught(report)


@pytest.mark.timeout(900)
def test_the_persistence_experiment_on_a_sample_catches_the_new_key_retry(tmp_path: Path, scratch: None) -> None:
    data = yaml.safe_load(SHIPPED.read_text())
    data["tasks"] = [{"id": NOTIFY}]
    data["factors"] = {**data["factors"], "persistence": ["interrupted", COMPACTED],
                       "recovery": ["reconcile", "retry-new-key"], "compaction": ["ledgers/1:changed-amount"]}
    assert data["factors"]["broker"] == ["observing"], "the shipped design's broker only observes (its grants count)"
    run, report = _run(tmp_path, data)
    assert len(RunDirectory.open(run).records()) == 6
    _caught(report)
    text = " ".join(finish(start("experiment", "report", str(run))).split())
    assert "Long-running episodes per cell and arm" in text and "Descriptive: no frozen rule" in text
    assert "persistence=compacted" in text and "No figures for" not in text


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_shipped_persistence_experiment_runs_verifies_and_catches_its_mutants(tmp_path: Path,
                                                                                  scratch: None) -> None:
    run, report = _run(tmp_path, yaml.safe_load(SHIPPED.read_text()))
    assert len(RunDirectory.open(run).records()) == 40
    _caught(report)
    rows = _by_cell(report)
    forgot = rows[("interrupted", "forget", "treatment")]
    assert forgot["effects_retained"]["rate"] == 0.0, "a forgotten commit is missing from the resumed ledger"
    assert forgot["recovery_turns"] >= 1
    sound = rows[(COMPACTED, "ledgers/1", "treatment")]
    assert all(sound[name]["rate"] == 1.0 for name in RETENTION) and sound["verified"]["rate"] == 1.0
    dropped = rows[(COMPACTED, "ledgers/1:drop-currency", "treatment")]
    assert dropped["approvals_valid"]["rate"] == 0.0 and dropped["constraints_retained"]["rate"] < 1.0
    # the scripted endpoint's own summary never saw the ledgers: every retention lost, the verdict still passed
    model = rows[(COMPACTED, "model/1", "treatment")]
    assert all(model[name]["rate"] == 0.0 for name in RETENTION) and model["verified"]["rate"] == 1.0
