"""A shipped experiment end to end through the CLI, with a real Chromium: freeze, run, SIGKILL, resume, report,
verify; a changed input refused before any model call; the gate failing on a crafted run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from computerops.bundle import EPISODES
from computerops.experiment.collect import ANALYSIS_FILE, LOCK_FILE
from test_resume import admitted_lines, finish, kill_when, scratch, start

__all__ = ["scratch"]  # the module fixture that gives the child processes their own temporary directory
ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.browser


def _freeze(tmp_path: Path, name: str) -> tuple[Path, Path]:
    source = tmp_path / name
    shutil.copy(ROOT / "experiments" / name, source)
    lock = tmp_path / (name + ".lock.json")
    text = finish(start("experiment", "freeze", str(source), "--out", str(lock)))
    assert "episodes" in text and lock.is_file()
    return source, lock


@pytest.mark.timeout(900)
def test_the_e3_replication_freezes_runs_resumes_after_sigkill_reports_and_verifies(tmp_path: Path) -> None:
    _, lock = _freeze(tmp_path, "e3-replication.yaml")
    run = tmp_path / "e3"
    process = start("experiment", "run", str(lock), "--out", str(run))
    kill_when(process, lambda: admitted_lines(run) >= 7, "seven admitted episodes")
    assert not (run / ANALYSIS_FILE).exists() or admitted_lines(run) < 36
    finish(start("experiment", "run", str(lock), "--resume", str(run)), timeout=600)
    assert (run / EPISODES).read_bytes().count(b"\n") == 36
    analysis = json.loads(finish(start("experiment", "report", str(run), "--json")))
    assert analysis["missing"]["not_run"] == [] and analysis["scripted"]
    assert analysis["evidence_level"] == "E1"  # not verified yet
    gate = {item["name"]: item for item in analysis["gate"]["items"]}
    assert all(item["passed"] for item in gate.values()), gate
    cells = {(c["arm"]): c for c in analysis["cells"]}
    assert cells["control"]["attempts"] == cells["treatment"]["attempts"] == 18
    assert cells["treatment"]["exposed"] == 18 and cells["control"]["exposed"] == 0
    paired = {p["measure"]: p for p in analysis["paired"]}
    assert paired["false_completion"]["n_tasks"] == 6
    verified = finish(start("verify", str(run)), timeout=600)
    assert "PASS" in verified
    after = json.loads(finish(start("experiment", "report", str(run), "--json")))
    assert after["evidence_level"] == "E3"
    html = tmp_path / "e3.html"
    finish(start("experiment", "report", str(run), "--html", str(html)))
    assert "E3 quality gate" in html.read_text()

    # The sealed analysis is recomputed by verify: an edited figure is caught.
    sealed = json.loads((run / ANALYSIS_FILE).read_text())
    sealed["paired"][0]["mean"] = 0.999
    (run / ANALYSIS_FILE).write_text(json.dumps(sealed))
    process = start("verify", str(run))
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 1 and ANALYSIS_FILE in output.decode()


def test_a_changed_experiment_file_after_the_freeze_is_refused_naming_it(tmp_path: Path) -> None:
    source, lock = _freeze(tmp_path, "e3-replication.yaml")
    source.write_bytes(source.read_bytes().replace(b"resamples: 6000", b"resamples: 6001"))
    process = start("experiment", "run", str(lock), "--out", str(tmp_path / "run"))
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 2
    assert "experiment_sha256" in output.decode() and not (tmp_path / "run").exists()


@pytest.mark.timeout(900)
def test_the_ci_grid_runs_its_tests_and_noise_floor(tmp_path: Path) -> None:
    _, lock = _freeze(tmp_path, "tool-ladder-map-ci.yaml")
    run = tmp_path / "grid"
    finish(start("experiment", "run", str(lock), "--out", str(run), "--concurrency", "2"), timeout=800)
    analysis = json.loads(finish(start("experiment", "report", str(run), "--json")))
    verdicts = {t["kind"]: t for t in analysis["tests"]}
    assert set(verdicts) == {"tool_edge", "recovery_cost"}
    for test in verdicts.values():
        result = test["tool_edge"] or test["recovery_cost"]
        assert result["verdict"] in ("survives", "restricted", "below resolution")
        assert result["rule_text"]
    rates = [c["verified"] / c["attempts"] for c in analysis["cells"] if c["attempts"]]
    assert 0 < min(rates) < 1 or max(rates) > min(rates), "a stochastic policy gives cells that differ"
    assert (run / LOCK_FILE).is_file()
    noise = tmp_path / "noise"
    finish(start("experiment", "noise-floor", str(lock), "--out", str(noise)), timeout=600)
    floor = json.loads(finish(start("experiment", "report", str(noise), "--json")))["noise_floor"]
    assert floor["identical"]["reproduced_share"] == 1.0
