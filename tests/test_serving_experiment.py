"""Serving experiments: the plan pairs each serving arm (B to E) with a `reference` control (A) of the same task,
repetition and cell, both streamed under the same serving protocol with injection enabled; the schema and the freeze
refuse what they must, naming it; the fallback named at the freeze reaches the run's endpoint. The shipped
serving-v1 design is frozen, run (one small experiment, shared) and verified through the CLI, and its by-path report
shows each arm where the design puts it: the false-finishing fallback breaks the contract on the fallback path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_experiment_persistence import _pairs, _plan
from test_resume import finish, scratch, start
from typer.testing import CliRunner

from computerops.cli.experiment import _endpoint, experiment_app
from computerops.experiment.lock import ExperimentRefused, freeze
from computerops.experiment.plan import arms_meaning, cells, injects
from computerops.experiment.running import run_config
from computerops.experiment.spec import (
    SERVING_CONTROL,
    SERVING_TREATMENTS,
    ExperimentFileError,
    ExperimentSpec,
    load_experiment,
)
from computerops.runs.bundle import RunDirectory
from computerops.runs.verification import verify_run
from computerops.serving_faults.arms import SERVING_ARMS, serving_arm
from tasks import load_catalog

__all__ = ["scratch"]  # the module fixture that gives the child processes their own temporary directory
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "experiments" / "serving-v1.yaml"
CATALOG = load_catalog()
NOTIFY = "helpdesk.notify-and-close-follow-up@1"
REFUND = "helpdesk.refund-under-outdated-policy@1"
NO_EVIDENCE = "invoices.answer-invoice-total@1"  # the invoices site names no evidence page


def _base(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "probe-serving", "version": 1, "question": "Does a serving design plan what it says?",
        "tasks": [{"id": NOTIFY}, {"id": REFUND}],
        "endpoint": {"kind": "scripted", "policies": ["careful"], "fallback": {"policy": "false-finish"}},
        "factors": {"serving": ["throttle-fallback", "partial-stream"]}, "repetitions": 2,
        "analysis": {"primary": "paired_verified_success", "descriptive": ["cells", "paired", "serving"]},
    }
    data.update(changes)
    return data


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "serving.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_control_is_arm_a_and_the_treatments_are_the_rest_of_the_matrix() -> None:
    assert SERVING_CONTROL == "reference" == SERVING_ARMS[0]
    assert list(SERVING_TREATMENTS) == list(SERVING_ARMS[1:])


def test_every_cell_names_its_serving_arm_and_pairs_it_with_a_reference_control() -> None:
    spec = ExperimentSpec.model_validate(_base())
    grid = cells(spec)
    assert [c.factor("serving") for c in grid] == ["throttle-fallback", "partial-stream"]
    assert [c.key(spec) for c in grid] == ["fault_rate=0,serving=throttle-fallback,model=scripted:careful",
                                           "fault_rate=0,serving=partial-stream,model=scripted:careful"]
    plan = _plan(spec)
    pairs = _pairs(plan)
    assert len(plan) == 2 * 2 * 2 * 2 and len(pairs) == 8
    for pair in pairs.values():
        control, treatment = pair["control"], pair["treatment"]
        assert (control.task_id, control.repetition, control.cell) == (treatment.task_id, treatment.repetition,
                                                                       treatment.cell)
        arm = next(c.factor("serving") for c in grid if c.key(spec) == control.cell)
        assert arm is not None
        assert control.serving == serving_arm("reference")
        assert treatment.serving == serving_arm(arm)
        assert control.faults and treatment.faults, "the treatment is the serving failure: injection in both arms"
        assert control.serving.protocol.stream and treatment.serving.protocol.stream
        assert control.persistence is None and treatment.persistence is None
    assert injects(spec, "control")
    assert "control = the reference serving arm" in arms_meaning(spec)


def test_a_continuation_design_reaches_both_arms() -> None:
    spec = ExperimentSpec.model_validate(_base(continuation=True))
    for episode in _plan(spec):
        assert episode.serving is not None and episode.serving.protocol.continuation
    assert "continuation design" in arms_meaning(spec)
    plain = ExperimentSpec.model_validate(_base())
    assert "continuation" not in plain.model_dump(mode="json"), "left out when false: other locks read as before"


@pytest.mark.parametrize(("changes", "needle"), [
    ({"factors": {"serving": ["reference"]}}, "reference is the control arm of every pair"),
    ({"factors": {"serving": ["partial-stream", "partial-stream"]}}, "serving levels repeat"),
    ({"factors": {"serving": ["partial-stream"], "persistence": ["interrupted"]}}, "not both"),
    ({"endpoint": {"kind": "scripted", "policies": ["careful"]}}, "throttle-fallback needs a pinned fallback"),
    ({"factors": {}}, "the descriptive report `serving` needs the factor `serving`"),
    ({"factors": {}, "analysis": {"primary": "paired_verified_success"}, "continuation": True},
     "`continuation` needs the factor `serving`"),
    ({"factors": {}, "analysis": {"primary": "paired_verified_success"}}, "endpoint.fallback is asked only"),
    ({"analysis": {"primary": "paired_verified_success", "gate": "e3"}}, "plans no E3 gate"),
])
def test_the_schema_refuses_an_unsound_serving_design(tmp_path: Path, changes: dict[str, Any], needle: str) -> None:
    with pytest.raises(ExperimentFileError, match=r"serving\.yaml") as caught:
        load_experiment(_write(tmp_path, _base(**changes)))
    assert needle in str(caught.value)


def test_the_freeze_refuses_degraded_tool_on_a_site_with_no_evidence_page(tmp_path: Path) -> None:
    data = _base(tasks=[{"id": NOTIFY}, {"id": NO_EVIDENCE}], factors={"serving": ["degraded-tool"]})
    with pytest.raises(ExperimentRefused, match="degraded-tool: site invoices names no evidence page"):
        freeze(_write(tmp_path, data), CATALOG)


def test_the_fallback_named_at_the_freeze_reaches_the_runs_endpoint(tmp_path: Path) -> None:
    endpoint = _endpoint("http://127.0.0.1:1234/v1", "primary-model", None, None,
                         "http://127.0.0.1:1235/v1/", "fallback-model", "FALLBACK_KEY")
    assert endpoint is not None
    lock = freeze(SHIPPED, CATALOG, endpoint)
    fallback = run_config(lock, lock.plan, "run").endpoint.fallback
    assert fallback is not None
    assert (fallback.base_url, fallback.model, fallback.api_key_env) == ("http://127.0.0.1:1235/v1",
                                                                          "fallback-model", "FALLBACK_KEY")
    assert {c.key(lock.spec).rsplit("model=", 1)[1] for c in cells(lock.spec)} == {"primary-model"}
    # a real endpoint without its own fallback cannot run the throttle-fallback arm: the file's scripted one is gone
    with pytest.raises(ValueError, match="throttle-fallback needs a pinned fallback"):
        freeze(SHIPPED, CATALOG, _endpoint("http://127.0.0.1:1234/v1", "primary-model", None, None))
    with pytest.raises(ValueError, match="--fallback-base-url goes with --base-url"):
        _endpoint(None, None, None, None, "http://127.0.0.1:1235/v1", "fallback-model", None)
    # the CLI takes the flags and writes them into the lock
    out = tmp_path / "lock.json"
    result = CliRunner().invoke(experiment_app, [
        "freeze", str(SHIPPED), "--out", str(out), "--base-url", "http://127.0.0.1:1234/v1", "--model", "m",
        "--fallback-base-url", "http://127.0.0.1:1235/v1", "--fallback-model", "fb"])
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())["inputs"]["endpoint"]
    assert written["fallback"] == {"policy": None, "base_url": "http://127.0.0.1:1235/v1", "model": "fb",
                                   "api_key_env": None}


def test_the_shipped_design_is_the_matrix_b_to_e_on_two_helpdesk_tasks() -> None:
    spec = load_experiment(SHIPPED)
    assert spec.factors.serving == list(SERVING_TREATMENTS)
    assert spec.endpoint.fallback is not None and spec.endpoint.fallback.policy == "false-finish"
    assert spec.endpoint.policies == ["careful"] and spec.repetitions == 1
    assert "serving" in spec.analysis.descriptive
    assert len(_plan(spec)) == 4 * 2 * 2


@pytest.fixture(scope="module")
def shipped_run(tmp_path_factory: pytest.TempPathFactory, scratch: None) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The shipped design frozen, run and verified through the CLI; its run directory and `report --json`."""
    tmp = tmp_path_factory.mktemp("serving-v1")
    lock = tmp / "serving.lock.json"
    frozen = finish(start("experiment", "freeze", str(SHIPPED), "--out", str(lock)))
    assert "control = the reference serving arm" in " ".join(frozen.split())
    run = tmp / "run"
    finish(start("experiment", "run", str(lock), "--out", str(run), "--concurrency", "2"), timeout=600)
    verification = asyncio.run(verify_run(RunDirectory.open(run)))
    assert verification.passed, verification.problems
    yield run, json.loads(finish(start("experiment", "report", str(run), "--json")))


def _rows(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Each serving row by (serving arm of the cell, experiment arm, path)."""
    found = {}
    for entry in report["serving"]:
        levels = dict(part.split("=", 1) for part in entry["cell"].split(","))
        for row in entry["rows"]:
            assert row["arm"] == ("reference" if entry["arm"] == "control" else levels["serving"])
            found[(levels["serving"], entry["arm"], row["path"])] = row
    return found


def _paths(run: Path) -> dict[tuple[str, str], str]:
    """The serving path each (task, serving arm) of the treatment took."""
    return {(r.task_id, r.serving.arm): r.serving.path for r in RunDirectory.open(run).records()
            if r.serving is not None and r.serving.arm != "reference"}


@pytest.mark.browser
@pytest.mark.timeout(600)
def test_the_shipped_serving_experiment_runs_verifies_and_reports_by_path(
        shipped_run: tuple[Path, dict[str, Any]]) -> None:
    run, report = shipped_run
    assert len(RunDirectory.open(run).records()) == 16
    assert report["missing"]["not_run"] == [] and report["missing"]["infrastructure_failures"] == []
    assert report["scripted"] and report["tests"] == [] and report["gate"] is None
    rows = _rows(report)
    for arm in SERVING_TREATMENTS:
        control = rows[(arm, "control", "normal")]
        assert control["verified"]["rate"] == 1.0 and control["contract_held"]["rate"] == 1.0
    fallback = rows[("throttle-fallback", "treatment", "fallback")]
    assert fallback["false_success_claims"] > 0 and fallback["fallback_replies"] > 0, "the fallback false-finishes"
    assert fallback["contract_held"]["rate"] == 0.0
    blocked = rows[("partial-stream", "treatment", "blocked")]
    assert blocked["contract_held"]["rate"] == 1.0 and blocked["unresolved_explicit"]["rate"] == 1.0
    timeout = rows[("timeout-after-commit", "treatment", "after_commit_timeout")]
    assert timeout["duplicate_effects"] == 0 and timeout["contract_held"]["rate"] == 1.0
    degraded = rows[("degraded-tool", "treatment", "degraded_evidence")]
    assert degraded["contract_held"]["rate"] == 1.0 and degraded["invented_eligibility"] == 0
    paths = _paths(run)
    assert paths[(NOTIFY, "timeout-after-commit")] == "after_commit_timeout"
    assert paths[(REFUND, "degraded-tool")] == "degraded_evidence"
    verified = next(p for p in report["paired"] if p["measure"] == "verified_success")
    assert verified["differences"][NOTIFY] < 0


@pytest.mark.browser
def test_the_serving_experiments_report_labels_each_arm_with_its_serving_arm(
        shipped_run: tuple[Path, dict[str, Any]]) -> None:
    run, _ = shipped_run
    html = run.parent / "report.html"
    text = " ".join(finish(start("experiment", "report", str(run), "--html", str(html))).split())
    assert "Serving failures by path per cell and arm" in text and "Descriptive: no frozen rule" in text
    page = html.read_text()
    assert "treatment (throttle-fallback)" in page and "control (reference)" in page
