"""Real-browser test of a fault run through the CLI: a task-configured fault, two scripted policies and
`--matched-controls`, then the report's exposure and recovery funnel, and `verify` on the sealed run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory

pytestmark = pytest.mark.browser
TASK = "ledger.fault-partial-success-batch-b1@1"


def test_a_fault_run_with_matched_controls_reports_exposure_recovery_and_controls(tmp_path: Path) -> None:
    out = tmp_path / "faults"
    result = CliRunner().invoke(app, ["run", "--tasks", TASK, "--endpoint", "scripted:oracle,false-finish",
                                      "--matched-controls", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = {r.episode_id: r for r in RunDirectory.open(out).records()}
    assert sorted(records) == [  # each control right after its own episode
        f"001-{TASK}--oracle", f"002-{TASK}--oracle--control", f"003-{TASK}--false-finish",
        f"004-{TASK}--false-finish--control"]
    oracle, oracle_control, false_finish, false_finish_control = (records[key] for key in sorted(records))
    # The oracle meets the fault and recovers; false-finish claims success before reaching the batch action,
    # so its fault is configured but never fires (configured is not exposed).
    assert oracle.faults_fired == ["partial_success"] and oracle.outcome == "verified_success"
    assert false_finish.faults_configured == ["partial_success"] and false_finish.faults_fired == []
    assert false_finish.outcome == "false_completion"
    # A matched control is the same task and policy with injection disabled: nothing configured or fired.
    for control in (oracle_control, false_finish_control):
        assert not control.faults_enabled and control.faults_fired == []
    # The scripted oracle is a script for the faulted episode: without the fault every event is processed at once,
    # its recovery steps find no event left to select, and it gives up over a correct state (unclaimed success).
    assert oracle_control.outcome == "unclaimed_success" and oracle_control.claim.success is False
    assert "no checkbox named 'Select EV-503'" in str(oracle_control.claim.message)
    assert false_finish_control.outcome == "false_completion"

    report = json.loads(CliRunner().invoke(app, ["report", str(out), "--json"]).stdout)
    exposure = report["exposure"]
    assert (exposure["configured_any"], exposure["fired_any"], exposure["controls"]) == (2, 1, 2)
    assert exposure["fired_without_configured"] == 0
    [row] = [row for row in exposure["by_class"] if row["fault_class"] == "partial_success"]
    assert (row["configured"], row["fired"], row["firings"]) == (2, 1, 1)
    assert all(r["configured"] == r["fired"] == 0 for r in exposure["by_class"] if r is not row)
    funnel = report["recovery_funnel"]["total"]
    assert (funnel["attempted"], funnel["exposed"], funnel["verified_after_exposure"]) == (2, 1, 1)
    assert (funnel["controls"], funnel["control_verified_success"]) == (2, 0)
    assert funnel["explicit_diagnosis"] == 1, oracle.claim.message  # "only partly succeeded" names it

    verified = CliRunner().invoke(app, ["verify", str(out)])
    assert verified.exit_code == 0, verified.output
