"""A shipped experiment end to end through the CLI, with a real Chromium: freeze, run, SIGKILL, resume, report,
verify; a changed input refused before any model call; the gate failing on a crafted run."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_resume import admitted_lines, finish, kill_when, scratch, start

from computerops.core.hashing import file_sha256
from computerops.experiment.analysis import analyse
from computerops.experiment.collect import ANALYSIS_FILE, LOCK_FILE, read_experiment_run
from computerops.experiment.gate import evaluate_gate, evidence_level
from computerops.experiment.layout import experiment_view
from computerops.report.tables import Table
from computerops.runs.bundle import CHECKSUMS, EPISODES, MANIFEST, RunDirectory

__all__ = ["scratch"]  # the module fixture that gives the child processes their own temporary directory
ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.browser


def _freeze(tmp_path: Path, name: str, change: tuple[bytes, bytes] | None = None) -> tuple[Path, Path]:
    """A copy of the shipped experiment `name` (with one `change` of its bytes, where given), frozen."""
    source = tmp_path / name
    shipped = (ROOT / "experiments" / name).read_bytes()
    if change is not None:
        assert shipped.count(change[0]) == 1, change
        shipped = shipped.replace(*change)
    source.write_bytes(shipped)
    lock = tmp_path / (name + ".lock.json")
    text = finish(start("experiment", "freeze", str(source), "--out", str(lock)))
    assert "episodes" in text and lock.is_file()
    return source, lock


REPETITIONS = 2
"""The E3 replication here at two repetitions a task and condition (it ships with three: 36 episodes, a third more of
this module's time): the same design, counterbalancing, faults and gate, 24 episodes."""


@pytest.fixture(scope="module")
def e3_frozen(tmp_path_factory: pytest.TempPathFactory, scratch: None) -> tuple[Path, Path]:
    """The shipped E3 replication's copy (at `REPETITIONS`) and its lock: one freeze for the run below and the
    changed-file test (each froze its own copy)."""
    return _freeze(tmp_path_factory.mktemp("e3-frozen"), "e3-replication.yaml",
                   (b"\nrepetitions: 3\n", f"\nrepetitions: {REPETITIONS}\n".encode()))


@pytest.fixture(scope="module")
def e3_run(tmp_path_factory: pytest.TempPathFactory, e3_frozen: tuple[Path, Path]) -> Path:
    """The E3 replication, frozen, run, killed with SIGKILL after seven admissions and resumed on Ray."""
    _, lock = e3_frozen
    run = tmp_path_factory.mktemp("e3") / "e3"
    # Two episodes at once, as the other experiment runs here: the same evidence as serial (tests/test_concurrency.py;
    # tests/test_resume.py kills and resumes serial runs).
    process = start("experiment", "run", str(lock), "--out", str(run), "--concurrency", "2")
    kill_when(process, lambda: admitted_lines(run) >= 7, "seven admitted episodes")
    assert admitted_lines(run) < 12 * REPETITIONS
    # The resume on Ray's executor (2 workers of a local Ray): an experiment run continued on the other executor
    # reaches the same verdicts, E3 and verify PASS (docs/scale.md; the evidence is the same on either).
    finish(start("experiment", "run", str(lock), "--resume", str(run), "--executor", "ray", "--workers", "2"),
           timeout=600)
    return run


@pytest.mark.timeout(900)
def test_the_e3_replication_resumed_after_sigkill_reports_and_verifies_as_e3(e3_run: Path, tmp_path: Path) -> None:
    run = e3_run
    assert (run / EPISODES).read_bytes().count(b"\n") == 12 * REPETITIONS  # six tasks, two arms
    analysis = json.loads(finish(start("experiment", "report", str(run), "--json")))
    assert analysis["missing"]["not_run"] == [] and analysis["scripted"]
    gate = {item["name"]: item for item in analysis["gate"]["items"]}
    assert all(item["passed"] for item in gate.values()), gate
    cells = {(c["arm"]): c for c in analysis["cells"]}
    assert cells["control"]["attempts"] == cells["treatment"]["attempts"] == 6 * REPETITIONS
    assert cells["treatment"]["exposed"] == 6 * REPETITIONS and cells["control"]["exposed"] == 0
    paired = {p["measure"]: p for p in analysis["paired"]}
    assert paired["false_completion"]["n_tasks"] == 6
    if analysis["evidence_level"] != "E3":  # the first report comes before verify
        assert analysis["evidence_level"] == "E1"
        assert "PASS" in finish(start("verify", str(run)), timeout=600)
    after = json.loads(finish(start("experiment", "report", str(run), "--json")))
    assert after["evidence_level"] == "E3"
    html = tmp_path / "e3.html"
    finish(start("experiment", "report", str(run), "--html", str(html)))
    assert "E3 quality gate" in html.read_text()


def _tamper_episodes(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    lines = (run / EPISODES).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    # the first admitted treatment episode (two run at once: admission order is completion order)
    change(next(r for r in records if r["episode_id"].endswith("treatment-r1")))
    (run / EPISODES).write_text("".join(json.dumps(r) + "\n" for r in records))


def _manifest(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((run / MANIFEST).read_text())
    change(data)
    (run / MANIFEST).write_text(json.dumps(data))


CRAFTED: dict[str, Callable[[Path], None]] = {
    "complete captures": lambda run: next((run / "episodes").glob("*/transcript.json")).unlink(),
    "fixed model and code hashes": lambda run: _manifest(run, lambda m: m["code_sha256"].update(sites="0" * 64)),
    "treatment exposure": lambda run: _tamper_episodes(
        run, lambda r: r.update(faults_fired=[]) if "treatment" in r["episode_id"] else None),
    "replay PASS": lambda run: _tamper_episodes(run, lambda r: r.update(replay="FAIL")),
    "lock unchanged": lambda run: _manifest(
        run, lambda m: m["tasks"][0].update(sha256="0" * 64)),
}


@pytest.mark.parametrize("item", sorted(CRAFTED))
def test_each_gate_item_fails_on_a_run_crafted_to_break_it(e3_run: Path, tmp_path: Path, item: str) -> None:
    run = tmp_path / "crafted"
    shutil.copytree(e3_run, run)
    CRAFTED[item](run)
    gate = evaluate_gate(read_experiment_run(run))
    failed = [i.name for i in gate.items if not i.passed]
    assert item in failed and not gate.passed
    assert evidence_level(gate, verified=True) == "E2"


def test_a_pair_with_different_first_prompts_fails_the_matched_pairs_item(e3_run: Path) -> None:
    run = read_experiment_run(e3_run)
    first = run.rows[0]
    partner = next(r for r in run.rows if r.pair == first.pair and r.episode_id != first.episode_id)
    transcript = run.transcripts[partner.episode_id]
    step = transcript.steps[0]
    changed = transcript.model_copy(update={"steps": [step.model_copy(update={"call": step.call.model_copy(
        update={"request_sha256": "0" * 64})}), *transcript.steps[1:]]})
    crafted = dataclasses.replace(run, transcripts={**run.transcripts, partner.episode_id: changed})
    items = {i.name: i for i in evaluate_gate(crafted).items}
    assert not items["matched pairs"].passed and "first prompts differ" in items["matched pairs"].detail
    seedless = dataclasses.replace(run, rows=[dataclasses.replace(r, seed=7) if r is partner else r for r in run.rows])
    assert "seed differs" in {i.name: i for i in evaluate_gate(seedless).items}["matched pairs"].detail


def test_verify_recomputes_the_sealed_analysis(e3_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "edited"
    shutil.copytree(e3_run, run)
    sealed = json.loads((run / ANALYSIS_FILE).read_text())
    sealed["paired"][0]["mean"] = 0.999
    (run / ANALYSIS_FILE).write_text(json.dumps(sealed))
    bundle = RunDirectory(run)  # sealed again, so that only the recomputation can find the edit
    (run / CHECKSUMS).write_text("".join(f"{file_sha256(run / name)}  {name}\n" for name in bundle.files()))
    assert bundle.checksum_problems() == []
    process = start("verify", str(run))
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 1
    assert f"{ANALYSIS_FILE} differs from the analysis recomputed from the evidence" in output.decode()


def test_a_changed_experiment_file_after_the_freeze_is_refused_naming_it(e3_frozen: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    source, lock = e3_frozen
    frozen = source.read_bytes()
    changed = frozen.replace(b"resamples: 6000", b"resamples: 6001")
    assert changed != frozen
    source.write_bytes(changed)
    try:
        process = start("experiment", "run", str(lock), "--out", str(tmp_path / "run"))
        output, _ = process.communicate(timeout=120)
    finally:
        source.write_bytes(frozen)  # as frozen again, for the run that shares the freeze
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
    finish(start("experiment", "noise-floor", str(lock), "--out", str(noise), "--concurrency", "2"), timeout=600)
    floor = json.loads(finish(start("experiment", "report", str(noise), "--json")))["noise_floor"]
    assert floor["identical"]["reproduced_share"] == 1.0
    # The experiment's report shows a noise floor of the same lock beside its intervals, and refuses anything else.
    both = json.loads(finish(start("experiment", "report", str(run), "--json", "--noise-floor", str(noise))))
    assert both["noise_floor"] == floor and both["tests"] == analysis["tests"]
    html = tmp_path / "grid.html"
    finish(start("experiment", "report", str(run), "--noise-floor", str(noise), "--html", str(html)))
    assert "Noise floor of cell" in html.read_text() and "Verified success" in html.read_text()
    wrong = start("experiment", "report", str(run), "--noise-floor", str(run))
    output, _ = wrong.communicate(timeout=240)
    assert wrong.returncode == 2 and "not a noise-floor run" in output.decode()


@pytest.mark.parametrize("descriptive", [[], ["cells"], ["paired"], ["cells", "exposure", "paired"]])
def test_the_report_shows_the_descriptive_reports_the_plan_committed_to(e3_run: Path, descriptive: list[str]) -> None:
    run = read_experiment_run(e3_run)
    plan = run.lock.spec.analysis.model_copy(update={"descriptive": descriptive})
    lock = run.lock.model_copy(update={"spec": run.lock.spec.model_copy(update={"analysis": plan})})
    view = experiment_view(analyse(run), lock, "E1")
    tables = {block.id: block for block in view.blocks if isinstance(block, Table)}
    assert ("cells" in tables) == ("cells" in descriptive)
    assert ("paired-tasks" in tables) == ("paired" in descriptive)
    assert "paired" in tables and "gate" in tables  # the primary estimate and the gate are always shown
    if "cells" in tables:
        assert ("exposed / configured" in [c.header for c in tables["cells"].columns]) == ("exposure" in descriptive)
