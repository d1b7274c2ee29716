"""The shipped persistence experiment through the CLI with a real Chromium and real harness processes: frozen (on a
sample in CI: one task, the interrupted arm x reconcile and retry-new-key, one repetition; whole in the slow tier),
run, verified and reported. The mutant is caught where the design puts it: the retry under a new idempotency key does
the notification twice and loses verified success against its uninterrupted control, reconcile does nothing twice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_resume import finish, scratch, start

from computerops.runs.bundle import RunDirectory
from computerops.runs.verification import verify_run

__all__ = ["scratch"]  # the module fixture that gives the child processes their own temporary directory
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "experiments" / "persistence-v1.yaml"
NOTIFY = "helpdesk.notify-and-close-follow-up@1"
pytestmark = pytest.mark.browser


def _run(tmp_path: Path, data: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """Freeze, run and verify the design; its run directory and `experiment report --json`."""
    source = tmp_path / "persistence.yaml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    lock = tmp_path / "persistence.lock.json"
    frozen = finish(start("experiment", "freeze", str(source), "--out", str(lock)))
    assert "control = the uninterrupted long-running episode" in " ".join(frozen.split())
    run = tmp_path / "run"
    finish(start("experiment", "run", str(lock), "--out", str(run), "--concurrency", "2"), timeout=1500)
    verification = asyncio.run(verify_run(RunDirectory.open(run)))
    assert verification.passed, verification.problems
    return run, json.loads(finish(start("experiment", "report", str(run), "--json")))


def _by_cell(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The persistence row of each (recovery, experiment arm) of the interrupted cells."""
    found = {}
    for entry in report["persistence"]:
        levels = dict(part.split("=", 1) for part in entry["cell"].split(","))
        [row] = entry["rows"]
        assert row["arm"] == ("uninterrupted" if entry["arm"] == "control" else levels["persistence"])
        assert row["policy"] == levels["recovery"]
        if levels["persistence"] == "interrupted":
            found[(levels["recovery"], entry["arm"])] = row
    return found


def _caught(report: dict[str, Any]) -> None:
    assert report["missing"]["not_run"] == [] and report["missing"]["infrastructure_failures"] == []
    assert report["scripted"] and report["tests"] == [] and report["gate"] is None
    rows = _by_cell(report)
    for recovery in ("reconcile", "retry-new-key"):
        control = rows[(recovery, "control")]
        assert control["verified"]["rate"] == 1.0 and control["duplicate_effects"] == 0
        assert control["effects_retained"]["denominator"] == 0, "an uninterrupted episode has no boundary"
    reconcile = rows[("reconcile", "treatment")]
    assert reconcile["duplicate_effects"] == 0 and reconcile["verified"]["rate"] == 1.0
    assert reconcile["effects_retained"]["rate"] == 1.0 and reconcile["effects_retained"]["denominator"] >= 1
    new_key = rows[("retry-new-key", "treatment")]
    assert new_key["duplicate_effects"] >= 1 and new_key["with_duplicates"]["numerator"] >= 1
    assert new_key["verified"]["rate"] < rows[("retry-new-key", "control")]["verified"]["rate"]
    # the per-cell counts and the paired estimate read the same arms
    cells = {(c["cell"], c["arm"]): c for c in report["cells"]}
    new_key_cell = next(e["cell"] for e in report["persistence"] if "interrupted,recovery=retry-new-key" in e["cell"])
    assert cells[(new_key_cell, "treatment")]["verified"] < cells[(new_key_cell, "control")]["verified"]
    verified = next(p for p in report["paired"] if p["measure"] == "verified_success")
    assert verified["differences"][NOTIFY] < 0


@pytest.mark.timeout(900)
def test_the_persistence_experiment_on_a_sample_catches_the_new_key_retry(tmp_path: Path, scratch: None) -> None:
    data = yaml.safe_load(SHIPPED.read_text())
    data["tasks"] = [{"id": NOTIFY}]
    data["factors"] = {"persistence": ["interrupted"], "recovery": ["reconcile", "retry-new-key"]}
    run, report = _run(tmp_path, data)
    assert len(RunDirectory.open(run).records()) == 4
    _caught(report)
    text = finish(start("experiment", "report", str(run)))
    assert "Long-running episodes per cell and arm" in text and "Descriptive: no frozen rule" in " ".join(text.split())


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_shipped_persistence_experiment_runs_verifies_and_catches_its_mutants(tmp_path: Path,
                                                                                  scratch: None) -> None:
    run, report = _run(tmp_path, yaml.safe_load(SHIPPED.read_text()))
    assert len(RunDirectory.open(run).records()) == 24
    _caught(report)
    rows = _by_cell(report)
    forgot = rows[("forget", "treatment")]
    assert forgot["effects_retained"]["rate"] == 0.0, "a forgotten commit is missing from the resumed ledger"
    assert forgot["recovery_turns"] >= 1
