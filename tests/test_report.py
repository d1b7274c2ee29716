"""The run report from episode records built in memory (no browser): every figure against hand computation,
the HTML file (self-contained, escaped) and `computerops report --json --html`."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from random import Random
from typing import Any, get_args

from bs4 import BeautifulSoup
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from computerops.cli import console as console_module
from computerops.cli.main import app
from computerops.core.vocabulary import StopReason
from computerops.report.faults import DIAGNOSIS_PATTERNS, names_fault
from computerops.report.figures import Interval
from computerops.report.html import render_html
from computerops.report.outcomes import LISTED_WHEN_SEEN, OutcomeTable, outcome_table
from computerops.report.provenance import ClaimedEndpoint, model_mismatch
from computerops.report.run import REPORT_FORMAT, RunReport, report_json, run_report
from computerops.report.tables import proportion_cells
from computerops.report.vocabulary import FAULT_CLASSES
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeOutcome, EpisodeRecord, ObservedEndpoint, RunManifest, TaskRef
from verifier import Claim
from verifier.looping import DETECTOR, LOOP_THRESHOLD, LoopStats

ODD_TASK = "odd<id>&"


def record(number: int, endpoint: str, task_id: str, outcome: EpisodeOutcome, claim: bool | None, *,
           kind: str | None = None, tokens: tuple[int | None, int | None] = (None, None), wall_s: float = 1.0,
           models: list[str] | None = None, fingerprints: list[str] | None = None, message: str | None = None,
           rejections: dict[str, int] | None = None, faults: dict[str, Any] | None = None,
           loop: tuple[int, int, int] | None = None) -> EpisodeRecord:
    """`faults`: faults_enabled / faults_configured / faults_fired; `loop`: (actions, state reads, largest repeat)."""
    data: dict[str, Any] = {
        "episode_id": f"{number:03d}-{task_id}", "task_id": task_id, "task_sha256": "0" * 64, "endpoint": endpoint,
        "scripted": endpoint.startswith("scripted:"), "outcome": outcome, "false_completion_kind": kind,
        "claim": Claim(success=claim, message=message),
        "stop_reason": "finish" if claim is not None else "budget_exhausted",
        "steps": 3, "rejected_actions": sum((rejections or {}).values()) or 1, "rejections_by_cause": rejections or {},
        "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1], "wall_s": wall_s, "operations": 2, "journal_entries": 1,
        "evidence_sha256": {}, "replay": "PASS", "models_seen": models or [], "fingerprints_seen": fingerprints or [],
        **(faults or {}),
    }
    if loop is not None:
        data["loop"] = LoopStats(detector=DETECTOR, actions=loop[0], state_reads=loop[1], largest_repeat=loop[2],
                                 loop=loop[2] >= LOOP_THRESHOLD)
    return EpisodeRecord.model_validate(data)


def records() -> list[EpisodeRecord]:
    """model-x: 3 tasks x 2 episodes (K = 2); scripted:oracle: one episode; scripted:give-up: one, no claim."""
    return [
        record(1, "model-x", "t1", "verified_success", True, tokens=(100, 20), wall_s=1.0, models=["model-x"],
               fingerprints=["fp_1"]),
        record(2, "model-x", "t1", "verified_success", True, tokens=(200, 30), wall_s=2.0, models=["model-x-2"]),
        record(3, "model-x", "t2", "verified_success", True, tokens=(50, 10), wall_s=3.0, models=["model-x"]),
        record(4, "model-x", "t2", "false_completion", True, kind="state", tokens=(None, None), wall_s=4.0),
        record(5, "model-x", "t3", "honest_failure", None, tokens=(10, None), wall_s=5.0),
        record(6, "model-x", "t3", "false_completion", True, kind="forbidden_mutation", tokens=(300, 40),
               wall_s=10.0, fingerprints=["fp_0", "fp_1"]),
        record(7, "scripted:oracle", "t1", "verified_success", True, tokens=(5, 5), wall_s=0.5),
        record(8, "scripted:give-up", ODD_TASK, "honest_failure", False, wall_s=0.25),
    ]


def manifest(recs: list[EpisodeRecord]) -> RunManifest:
    endpoint = EndpointConfig(kind="openai", base_url="http://127.0.0.1:1234/v1", model="model-x")
    tasks = sorted({r.task_id for r in recs})
    config = RunConfig(run_id="r1", tasks=tasks, endpoint=endpoint,
                       episodes=[PlannedEpisode(episode_id=r.episode_id, task_id=r.task_id) for r in recs])
    return RunManifest(
        config=config, created_at="2026-01-01T00:00:00Z", scripted=False,
        tasks=[TaskRef(id=t, sha256="0" * 64, path=f"{t}.yaml") for t in tasks], code_sha256={}, versions={},
        endpoint_observed=ObservedEndpoint(models_payload={"object": "list", "data": [{"id": "model-x"},
                                                                                      {"id": "other"}]},
                                           server_headers={"server": "uvicorn"}),
    )


def report() -> RunReport:
    recs = records()
    return run_report("r1", recs, declared_scripted=False, manifest=manifest(recs))


def row(result: RunReport, label: str) -> OutcomeTable:
    return next(r for r in result.by_endpoint if r.label == label)


def test_the_counts_and_rates_with_wilson_intervals() -> None:
    model = row(report(), "model-x")
    counts = (model.attempted, model.verified_success, model.self_reported_success, model.false_completions)
    assert counts == (6, 3, 5, 2)
    assert model.false_completion_kinds == {"state": 1, "procedure_only": 0, "forbidden_mutation": 1}
    assert model.taxonomy == {"claimed/pass": 3, "claimed/fail": 2, "not-claimed/pass": 0, "not-claimed/fail": 1}
    # Wilson 95%, z = 1.959964: 3/6 -> 0.5 -+ 0.3124; 2/6; 2/5 -> centre 0.4435 -+ 0.3258.
    rate = model.verified_success_rate
    assert (rate.numerator, rate.denominator, rate.rate) == (3, 6, 0.5)
    assert rate.wilson95 == Interval(low=0.1876, high=0.8124)
    over_attempted = model.false_completion_over_attempted
    assert (over_attempted.numerator, over_attempted.denominator, over_attempted.rate) == (2, 6, 0.3333)
    assert over_attempted.wilson95 == Interval(low=0.0968, high=0.7)
    over_claims = model.false_completion_over_success_claims
    assert (over_claims.numerator, over_claims.denominator, over_claims.rate) == (2, 5, 0.4)
    assert over_claims.wilson95 == Interval(low=0.1176, high=0.7693)
    assert over_claims.denominator_is.startswith("success claims")


def test_the_total_pools_every_endpoint() -> None:
    total = report().total
    assert (total.attempted, total.verified_success, total.self_reported_success) == (8, 4, 6)
    assert total.verified_success_rate.wilson95 == Interval(low=0.2152, high=0.7848)  # 4/8
    assert total.pass_hat_k is None  # repeated episodes of a task there are different agents, not trials
    assert [t.task_id for t in total.per_task] == ["odd<id>&", "t1", "t2", "t3"]
    t1 = total.per_task[1]
    assert (t1.attempted, t1.verified_success, t1.self_reported_success) == (3, 3, 3)


def test_zero_denominators_give_none_not_zero() -> None:
    give_up = row(report(), "scripted:give-up")
    claims = give_up.false_completion_over_success_claims
    assert (claims.numerator, claims.denominator, claims.rate, claims.wilson95) == (0, 0, None, None)
    assert proportion_cells(claims) == ("0/0", "n/a")
    empty = run_report("empty", [], declared_scripted=True)
    assert empty.scripted and empty.by_endpoint == []
    total = empty.total
    assert total.verified_success_rate.rate is None and total.verified_success_rate.wilson95 is None
    assert total.verified_success_bootstrap.interval is None and total.pass_hat_k is None
    assert total.tokens.model_dump() == {"known": 0, "unknown": 0, "total": None, "mean": None, "median": None}
    assert total.latency.model_dump() == {"episodes": 0, "mean_s": None, "median_s": None, "max_s": None}
    assert "NaN" not in json.dumps(report_json(empty))


def test_pass_hat_k_for_two_episodes_per_task() -> None:
    result = report()
    pass_k = row(result, "model-x").pass_hat_k
    assert pass_k is not None and (pass_k.max_k, pass_k.tasks) == (2, 3)
    # t1 2/2, t2 1/2, t3 0/2: pass^1 = (1 + 1/2 + 0) / 3; pass^2 = (C(2,2)/C(2,2) + 0 + 0) / 3.
    assert [(v.k, v.value) for v in pass_k.by_k] == [(1, 0.5), (2, 0.3333)]
    assert row(result, "scripted:oracle").pass_hat_k is None  # K = 1


def test_pass_hat_k_uses_the_fewest_episodes_any_task_has() -> None:
    recs = [record(i, "m", "a", "verified_success", True) for i in range(3)]
    recs += [record(3, "m", "b", "verified_success", True), record(4, "m", "b", "honest_failure", None)]
    only = run_report("r", recs, declared_scripted=False).total
    assert only.pass_hat_k is not None and only.pass_hat_k.max_k == 2
    # a: 3/3 -> 1, 1; b: 1/2 -> 1/2, 0.
    assert [(v.k, v.value) for v in only.pass_hat_k.by_k] == [(1, 0.75), (2, 0.5)]


def test_the_task_bootstrap_records_its_seed_and_resamples() -> None:
    result = report()
    model = row(result, "model-x").verified_success_bootstrap
    assert (result.bootstrap_seed, result.bootstrap_resamples, model.seed, model.resamples) == (0, 2000, 0, 2000)
    assert (model.tasks, model.episodes) == (3, 6)
    # Task rates 1, 1/2, 0 with two episodes each: a resample of three tasks all t3 (or all t1) has chance
    # 1/27 = 3.7% > 2.5%, so the percentile interval spans 0 to 1.
    assert model.interval == Interval(low=0.0, high=1.0)
    # A single task: every resample is that task, the interval is a point.
    assert row(result, "scripted:oracle").verified_success_bootstrap.interval == Interval(low=1.0, high=1.0)
    recs = records()
    other = run_report("r1", recs, declared_scripted=False, bootstrap_seed=5, bootstrap_resamples=100)
    assert (other.bootstrap_seed, other.bootstrap_resamples) == (5, 100)
    assert row(other, "model-x").verified_success_bootstrap.seed == 5
    again = run_report("r1", recs, declared_scripted=False, bootstrap_seed=5, bootstrap_resamples=100)
    assert other == again


def test_the_per_task_table() -> None:
    tasks = {t.task_id: t for t in row(report(), "model-x").per_task}
    assert list(tasks) == ["t1", "t2", "t3"]
    t3 = tasks["t3"]
    assert (t3.attempted, t3.verified_success, t3.self_reported_success, t3.false_completions, t3.no_finish) == (
        2, 0, 1, 1, 1)
    assert t3.false_completion_kinds == {"state": 0, "procedure_only": 0, "forbidden_mutation": 1}
    assert tasks["t2"].false_completion_kinds["state"] == 1 and tasks["t2"].verified_success == 1


def test_tokens_count_unknowns_apart_and_latency() -> None:
    model = row(report(), "model-x")
    # Known totals 120, 230, 60, 340; (None, None) and (10, None) are unknown.
    assert model.tokens.model_dump() == {"known": 4, "unknown": 2, "total": 750, "mean": 187.5, "median": 175.0}
    # wall_s 1, 2, 3, 4, 5, 10.
    assert model.latency.model_dump() == {"episodes": 6, "mean_s": 4.1667, "median_s": 3.5, "max_s": 10.0}
    assert row(report(), "scripted:give-up").tokens.model_dump() == {
        "known": 0, "unknown": 1, "total": None, "mean": None, "median": None}


def test_evidence_level_and_provenance() -> None:
    result = report()
    assert result.evidence_level == "E1" and "raw provenance" in result.evidence_level_meaning
    recs = records()
    assert run_report("r1", recs, declared_scripted=False, verified_by_reviewer=True).evidence_level == "E2"
    claimed = result.provenance.claimed
    assert claimed is not None
    assert (claimed.base_url, claimed.model, claimed.artifact_sha256) == ("http://127.0.0.1:1234/v1", "model-x", None)
    observed = result.provenance.observed
    assert observed.models_payload_ids == ["model-x", "other"]
    assert observed.models_seen == ["model-x", "model-x-2"] and observed.fingerprints_seen == ["fp_0", "fp_1"]
    assert observed.server_headers == {"server": "uvicorn"} and observed.models_error is None
    unknown = run_report("r1", recs, declared_scripted=False).provenance  # no manifest: unknown stays None
    assert unknown.claimed is None and unknown.observed.models_payload_ids is None
    assert unknown.observed.server_headers is None and unknown.observed.models_seen == ["model-x", "model-x-2"]


def test_the_json_names_its_format_and_holds_each_figure_once() -> None:
    result = report()
    data = report_json(result)
    assert data["format"] == REPORT_FORMAT
    # `security` is left out of a report of a run without attacked tasks (tests/test_attacks.py has the figures),
    # `by_upstream` of a run without a fallback (tests/test_dead_primary_runs.py), `studies` of a run without a later
    # study's figures (tests/test_study_seam.py)
    assert list(data) == [f for f in RunReport.model_fields
                          if f not in ("security", "persistence", "serving", "instances", "by_upstream", "studies")], \
        "the total's figures only under total"
    assert data["total"]["attempted"] == 8 and "attempted" not in data
    for table in (data["total"], *data["by_endpoint"]):
        assert not [key for key in table if key.startswith("false_completion_rate_")], "rates are in proportions"
        assert table["false_completion_over_attempted"]["rate"] is not None
    assert "rejected_by_cause" not in data and data["total"]["rejected_by_cause"] == {}
    assert data["scripted"] is True  # scripted episodes are in the run even though the manifest says otherwise
    assert RunReport.model_validate(data) == result


def html_rows(page: str, section: str) -> dict[str, list[str]]:
    """The rows of one table of the HTML page by their first cell."""
    table = BeautifulSoup(page, "html.parser").find("section", id=section)
    assert table is not None, section
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in table.find_all("tr")]
    return {row[0]: row[1:] for row in rows if row}


def test_the_html_shows_the_figures_is_self_contained_and_escaped() -> None:
    result = report()
    page = render_html(result)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "<svg" in page
    rates = html_rows(page, "rates")
    assert rates["model-x"] == ["3/6 = 0.5000", "0.1876-0.8124", "0.0000-1.0000", "^1 0.5000 ^2 0.3333",
                                "2/6 = 0.3333", "0.0968-0.7000", "2/5 = 0.4000", "0.1176-0.7693"]
    assert rates["scripted:give-up"][-2:] == ["0/0", "n/a"]  # no success claims: no rate
    assert html_rows(page, "usage")["model-x"] == ["4", "2", "187.5", "175.0", "4.1667", "3.5", "10.0"]
    assert html_rows(page, "usage")["scripted:give-up"][2] == "unknown"
    for figure in ("Evidence level E1", "SCRIPTED", "model-x-2", "fp_0, fp_1", "server: uvicorn",
                   "claimed: kind openai, base_url http://127.0.0.1:1234/v1", "observed: GET /models ids model-x"):
        assert figure in page, figure
    assert "odd&lt;id&gt;&amp;" in page and ODD_TASK not in page
    assert not re.search(r"<script|<link|<img|<iframe|src=|href=|@import|url\(", page, re.IGNORECASE)
    # The chart: one stacked bar per task, outcomes named in its titles.
    assert page.count("<title>t1: ") == 1 and "<title>t3: 1 false completion</title>" in page
    unscripted = run_report("r1", [r for r in records() if not r.scripted], declared_scripted=False)
    assert "SCRIPTED" not in render_html(unscripted)


def write_run(root: Path) -> list[EpisodeRecord]:
    recs = records()
    bundle = RunDirectory.create(root, manifest(recs))
    for rec in recs:
        bundle.admit(rec)
    return recs


def test_the_report_command_writes_html_and_prints_the_same_numbers_as_json(tmp_path: Path) -> None:
    recs = write_run(tmp_path / "run")
    html = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--json", "--html", str(html)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    completeness = RunDirectory.open(tmp_path / "run").completeness()
    assert completeness.complete and (completeness.planned, completeness.admitted) == (len(recs), len(recs))
    expected = report_json(run_report("r1", recs, declared_scripted=False, manifest=manifest(recs),
                                      completeness=completeness))
    assert data == expected
    assert html.read_text(encoding="utf-8") == render_html(RunReport.model_validate(data))


def test_the_report_command_prints_every_table(tmp_path: Path) -> None:
    write_run(tmp_path / "run")
    html = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--html", str(html)])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    for text in ("SCRIPTED", "Rates and 95% intervals",
                 "3/6 = 0.5000 │ 0.1876-0.8124 │ 0.0000-1.0000 │ ^1 0.5000 ^2 0.3333",
                 "Claim against verifier", "False completions by kind", "Per task: model-x", ODD_TASK,
                 "Tokens and latency", "Evidence level E1", "claimed: kind openai, base_url http://127.0.0.1:1234/v1",
                 "observed: GET /models ids model-x, other", f"HTML report written to {html}"):
        assert text in output, text
    assert html.is_file()


def faulted(enabled: bool, configured: list[str], fired: list[str]) -> dict[str, Any]:
    return {"faults_enabled": enabled, "faults_configured": configured, "faults_fired": fired}


def fault_records() -> list[EpisodeRecord]:
    """Five episodes with injection enabled (three exposed) and three matched controls.

    a (transient_5xx): 11 exposed, recovers and names it; 12 configured, never fired, succeeds anyway.
    odd (false_success, throttling): 13 false_success fired, false completion, a loop, does not name it; 14
    throttling fired, honest failure that names it; 15 throttling configured, not fired, false completion.
    Controls (injection disabled): 21 on a (succeeds), 22 on odd (fails), 23 on a task no exposed episode has.
    """
    return [
        record(11, "m", "a", "verified_success", True, message="Saved after the server was unavailable once.",
               rejections={"stale_id": 2}, faults=faulted(True, ["transient_5xx"], ["transient_5xx", "transient_5xx"]),
               loop=(10, 4, 1)),
        record(12, "m", "a", "verified_success", True, faults=faulted(True, ["transient_5xx"], [])),
        record(13, "m", ODD_TASK, "false_completion", True, kind="state", message="<b>All done.</b>",
               rejections={"stale_id": 1, "disabled": 1},
               faults=faulted(True, ["false_success", "throttling"], ["false_success"]), loop=(11, 5, 5)),
        record(14, "m", ODD_TASK, "honest_failure", None, message="The rate limit kept refusing the batch.",
               faults=faulted(True, ["throttling"], ["throttling"]), loop=(60, 1, 2)),
        record(15, "m", ODD_TASK, "false_completion", True, kind="procedure_only",
               faults=faulted(True, ["throttling"], [])),
        record(21, "m", "a", "verified_success", True, faults=faulted(False, ["transient_5xx"], [])),
        record(22, "m", ODD_TASK, "honest_failure", False, faults=faulted(False, [], [])),
        record(23, "m", "z", "verified_success", True, faults=faulted(False, [], []), loop=(3, 1, 0)),
    ]


def fault_report() -> RunReport:
    return run_report("rf", fault_records(), declared_scripted=False)


def test_exposure_keeps_configured_and_fired_apart() -> None:
    exposure = fault_report().exposure
    assert [r.fault_class for r in exposure.by_class] == list(FAULT_CLASSES)
    rows = {r.fault_class: r for r in exposure.by_class}
    # transient_5xx: configured in 11 and 12 (the control 21 has injection disabled); fired in 11, twice.
    assert (rows["transient_5xx"].configured, rows["transient_5xx"].fired, rows["transient_5xx"].firings) == (2, 1, 2)
    assert rows["transient_5xx"].fired_over_configured.rate == 0.5
    assert (rows["false_success"].configured, rows["false_success"].fired) == (1, 1)
    assert (rows["throttling"].configured, rows["throttling"].fired, rows["throttling"].firings) == (3, 1, 1)
    assert (rows["schema_drift"].configured, rows["schema_drift"].fired) == (0, 0)
    assert rows["schema_drift"].fired_over_configured.rate is None
    totals = (exposure.episodes, exposure.configured_any, exposure.fired_any, exposure.controls,
              exposure.fired_without_configured)
    assert totals == (8, 5, 3, 3, 0)
    over = exposure.fired_over_configured
    assert (over.numerator, over.denominator, over.rate) == (3, 5, 0.6)


def test_a_class_that_fired_without_being_configured_is_shown_and_counted() -> None:
    odd = record(1, "m", "a", "honest_failure", False, faults=faulted(True, ["throttling"], ["new_kind"]))
    exposure = run_report("r", [odd], declared_scripted=False).exposure
    assert exposure.by_class[-1].fault_class == "new_kind" and exposure.by_class[-1].fired == 1
    assert (exposure.configured_any, exposure.fired_any, exposure.fired_without_configured) == (1, 1, 1)
    assert exposure.fired_over_configured.numerator == 0  # what fired was not what was configured


def test_the_recovery_funnel_with_diagnosis_beside_it_and_matched_controls() -> None:
    funnel = fault_report().recovery_funnel
    total = funnel.total
    assert total.fault_class is None
    assert (total.attempted, total.exposed, total.verified_after_exposure) == (5, 3, 1)
    assert (total.exposed_over_attempted.rate, total.recovered_over_exposed.rate) == (0.6, 0.3333)
    assert total.recovered_over_exposed.denominator_is == "exposed episodes"
    # 11 names the 5xx ("unavailable"), 14 the throttling ("rate limit"); 13 says nothing of the false success.
    assert (total.explicit_diagnosis, total.diagnosis_over_exposed.rate) == (2, 0.6667)
    # Controls of the exposed episodes' tasks a and odd: 21 (verified) and 22; 23's task had no exposure.
    assert (total.control_tasks, total.controls, total.control_verified_success) == (2, 2, 1)
    assert total.control_verified_success_rate.rate == 0.5
    rows = {r.fault_class: r for r in funnel.by_class}
    assert [r.fault_class for r in funnel.by_class] == list(FAULT_CLASSES)
    five = rows["transient_5xx"]
    assert (five.attempted, five.exposed, five.verified_after_exposure, five.explicit_diagnosis) == (2, 1, 1, 1)
    assert (five.controls, five.control_verified_success, five.control_verified_success_rate.rate) == (1, 1, 1.0)
    false_success = rows["false_success"]
    assert (false_success.attempted, false_success.exposed, false_success.verified_after_exposure) == (1, 1, 0)
    assert (false_success.explicit_diagnosis, false_success.controls, false_success.control_verified_success) == (
        0, 1, 0)
    throttling = rows["throttling"]
    assert (throttling.attempted, throttling.exposed, throttling.verified_after_exposure) == (3, 1, 0)
    assert throttling.explicit_diagnosis == 1 and throttling.controls == 1
    idle = rows["moved_endpoint"]
    assert (idle.attempted, idle.exposed, idle.controls) == (0, 0, 0)
    for proportion in (idle.exposed_over_attempted, idle.recovered_over_exposed, idle.diagnosis_over_exposed,
                       idle.control_verified_success_rate):
        assert proportion.rate is None and proportion.wilson95 is None
    assert funnel.diagnosis_patterns == DIAGNOSIS_PATTERNS and set(DIAGNOSIS_PATTERNS) == set(FAULT_CLASSES)


def test_the_diagnosis_patterns_name_each_family() -> None:
    said = {
        "transient_5xx": "The server returned 503 twice", "throttling": "I was throttled",
        "ambiguous_after_commit": "the save timed out", "ambiguous_without_commit": "no answer came back",
        "version_conflict": "the record was changed by someone else", "stale_read": "the list was out of date",
        "session_expiry": "my session expired", "schema_drift": "the amount field was renamed",
        "moved_endpoint": "the form moved", "missing_resource": "event 7 was not found",
        "duplicate_delivery": "it was delivered twice", "out_of_order": "a dependency was not processed",
        "spurious_validation": "a validation error I could not fix", "false_success": "nothing was saved",
        "partial_success": "only partially applied", "recovery_loop_trap": "I was stuck in a loop",
    }
    for fault, message in said.items():
        assert names_fault(message, [fault]), fault
        assert names_fault(message.upper(), [fault]), fault
    assert not names_fault("All done.", FAULT_CLASSES)
    assert not names_fault(None, FAULT_CLASSES) and not names_fault("", FAULT_CLASSES)
    assert not names_fault("server error", ["throttling"])  # only the classes given count
    assert not names_fault("anything at all", ["no_such_class"])
    assert not names_fault("refund 1500 sent", ["transient_5xx"])  # a 5xx is a whole three-digit number


def test_the_loop_table() -> None:
    loops = fault_report().loops
    assert (loops.episodes_with_stats, loops.episodes_without_stats, loops.loop_episodes) == (4, 4, 1)
    assert loops.detectors == [DETECTOR]
    # 11 (largest 1) and 23 (0) are not rows; 13 loops; 14 repeated an intent twice.
    assert [r.episode_id for r in loops.rows] == [f"013-{ODD_TASK}", f"014-{ODD_TASK}"]
    first, second = loops.rows
    assert first.faults_configured == ["false_success", "throttling"] and first.faults_enabled
    assert (first.actions, first.state_reads, first.largest_repeat, first.loop) == (11, 5, 5, True)
    assert (first.stop_reason, first.outcome, first.claimed_success, first.detector) == (
        "finish", "false_completion", True, DETECTOR)
    assert (second.actions, second.state_reads, second.largest_repeat, second.loop) == (60, 1, 2, False)
    assert second.stop_reason == "budget_exhausted"


def test_rejections_by_cause_and_every_stop_reason() -> None:
    result = fault_report()
    assert result.total.rejected_by_cause == {"disabled": 1, "stale_id": 3}
    assert list(result.total.rejected_by_cause) == ["disabled", "stale_id"]
    assert result.by_endpoint[0].rejected_by_cause == {"disabled": 1, "stale_id": 3}
    # Every stop reason the transcript can name, in its definition's order, the ones no episode had at 0.
    listed = [reason for reason in get_args(StopReason) if reason not in LISTED_WHEN_SEEN]
    assert result.total.stop_reasons == {**dict.fromkeys(listed, 0), "finish": 7, "budget_exhausted": 1}
    assert list(result.total.stop_reasons) == listed
    odd = record(1, "m", "t", "honest_failure", None).model_copy(update={"stop_reason": "zz_new"})
    assert list(outcome_table("x", [odd]).stop_reasons)[-1] == "zz_new", "an unknown reason is shown after them"
    data = report_json(result)
    assert data["total"]["rejected_by_cause"] == {"disabled": 1, "stale_id": 3}


def test_false_completions_with_fault_context() -> None:
    items = fault_report().false_completions_with_fault_context
    # 13 fired false_success and claimed success; 15 is a false completion too, but nothing fired.
    assert [i.model_dump() for i in items] == [{
        "episode_id": f"013-{ODD_TASK}", "task_id": ODD_TASK, "kind": "state", "faults_fired": ["false_success"],
        "firings": 1, "claim_message": "<b>All done.</b>"}]
    repeated = record(1, "m", "t", "false_completion", True, kind="forbidden_mutation",
                      faults=faulted(True, ["throttling", "transient_5xx"],
                                     ["transient_5xx", "throttling", "transient_5xx"]))
    only = run_report("r", [repeated], declared_scripted=False).false_completions_with_fault_context
    assert (only[0].kind, only[0].faults_fired, only[0].firings) == ("forbidden_mutation",
                                                                     ["transient_5xx", "throttling"], 3)


def test_runs_without_faults_have_every_section_with_zeros() -> None:
    for result in (report(), run_report("empty", [], declared_scripted=False)):
        exposure = result.exposure
        assert (exposure.configured_any, exposure.fired_any, exposure.controls) == (0, 0, 0)
        assert len(exposure.by_class) == len(FAULT_CLASSES)
        assert all((r.configured, r.fired, r.firings) == (0, 0, 0) for r in exposure.by_class)
        total = result.recovery_funnel.total
        assert (total.attempted, total.exposed, total.verified_after_exposure, total.explicit_diagnosis) == (
            0, 0, 0, 0)
        assert total.recovered_over_exposed.rate is None and total.exposed_over_attempted.rate is None
        loops = result.loops
        assert (loops.episodes_with_stats, loops.loop_episodes, loops.rows, loops.detectors) == (0, 0, [], [])
        assert result.false_completions_with_fault_context == [] and result.total.rejected_by_cause == {}
        assert set(result.total.stop_reasons) == set(get_args(StopReason)) - LISTED_WHEN_SEEN
        data = report_json(result)
        for key in ("exposure", "recovery_funnel", "loops", "false_completions_with_fault_context"):
            assert key in data, key
        assert "NaN" not in json.dumps(data)
    assert report().loops.episodes_without_stats == 8  # records from before the detector


def test_the_fault_sections_do_not_depend_on_the_order_episodes_were_admitted() -> None:
    recs = fault_records()
    forward = run_report("rf", recs, declared_scripted=False)
    backward = run_report("rf", list(reversed(recs)), declared_scripted=False)
    for key in ("exposure", "recovery_funnel", "loops", "false_completions_with_fault_context"):
        assert getattr(forward, key) == getattr(backward, key), key
    assert forward.total.rejected_by_cause == backward.total.rejected_by_cause


def printed(result: RunReport) -> str:
    with console_module.console.capture() as captured:
        console_module.print_report(result)
    return " ".join(captured.get().split())


def test_the_terminal_shows_the_fault_tables_only_when_faults_were_configured() -> None:
    output = printed(fault_report())
    for text in ("Rejected actions by cause", "stale_id │ 3", "Fault exposure", "transient_5xx │ 2 │ 1 │ 1/2 = 0.5000",
                 "any fault │ 5 │ 3 │ 3/5 = 0.6000", "Recovery funnel", "any fault │ 5 │ 3 │ 1 │ 1/3 = 0.3333",
                 "│ 2/3 = 0.6667 │ 1/2 = 0.5000", "False completions after a fault fired", "false_success │ 1",
                 "Recovery loops", "1 loop episode(s) of 4 with loop stats (4 records without)",
                 "false_success, throttling │ 11 │ 5 │ 5 │ yes │ finish │ false_completion │ write-intent/1",
                 "Stop reasons: finish 7, budget_exhausted 1, context_exhausted 0, wall_clock 0, infrastructure 0"):
        assert text in output, text
    assert "schema_drift" not in output  # classes nobody configured are left out of the printed tables
    plain = printed(report())
    assert "Rejected actions by cause: none recorded (8 rejected)." in plain
    for text in ("Fault exposure", "Recovery funnel", "Recovery loops", "after a fault fired"):
        assert text not in plain, text


def test_the_html_shows_the_fault_sections_escaped() -> None:
    page = render_html(fault_report())
    for figure in ("<h2>Fault exposure</h2>", "<h2>Recovery funnel</h2>", "<h2>Recovery loops</h2>",
                   "<h2>False completions after a fault fired</h2>", "<h2>Rejected actions by cause</h2>",
                   "Matched controls (injection disabled): 3", "&lt;b&gt;All done.&lt;/b&gt;", "write-intent/1"):
        assert figure in page, figure
    assert html_rows(page, "exposure")["any fault"][:3] == ["5", "3", "3/5 = 0.6000"]
    assert html_rows(page, "recovery-funnel")["any fault"] == ["5", "3", "1", "1/3 = 0.3333", "0.0615-0.7923",
                                                               "2/3 = 0.6667", "1/2 = 0.5000"]
    assert html_rows(page, "diagnosis-patterns")["throttling"] == [DIAGNOSIS_PATTERNS["throttling"]]
    assert "schema_drift" not in html_rows(page, "diagnosis-patterns"), "only the classes the funnel shows"
    assert "<b>All done" not in page and ODD_TASK not in page and "odd&lt;id&gt;&amp;" in page
    assert not re.search(r"<script|<link|<img|<iframe|src=|href=|@import|url\(", page, re.IGNORECASE)
    plain = render_html(report())
    assert "Rejected actions by cause: none recorded (8 rejected)." in plain
    for section in ("Fault exposure", "Recovery funnel", "Recovery loops"):
        assert f"<h2>{section}</h2>" not in plain, section
    loops_only = run_report("r", [record(1, "m", "t", "honest_failure", False, loop=(4, 1, 3))],
                            declared_scripted=False)
    page = render_html(loops_only)
    assert "<h2>Recovery loops</h2>" in page and "<h2>Fault exposure</h2>" not in page
    assert "Recovery loops" in printed(loops_only) and "Fault exposure" not in printed(loops_only)


def test_a_claimed_model_the_endpoint_does_not_list_is_reported_as_a_mismatch() -> None:
    claimed = ClaimedEndpoint(kind="openai", base_url="http://127.0.0.1:8080/v1", model="gpt-4o", artifact_sha256=None)
    said = model_mismatch(claimed, ["qwen2.5-7b-instruct-q4_k_m.gguf"], ["gpt-4o"])
    assert said is not None and "'gpt-4o'" in said and "qwen2.5-7b-instruct-q4_k_m.gguf" in said
    assert "replies named gpt-4o" in said, "an echoed name is no evidence: it is shown as what it is"
    assert model_mismatch(claimed, ["gpt-4o", "other"], ["gpt-4o"]) is None
    assert model_mismatch(claimed, None, ["gpt-4o"]) is None, "no list: nothing to compare, nothing guessed"
    scripted = ClaimedEndpoint(kind="scripted", base_url=None, model=None, artifact_sha256=None)
    assert model_mismatch(scripted, ["scripted:oracle"], []) is None


INFRA_CAUSES = ("HTTP 500", "HTTP 503", "timeout", "endpoint reply not_json", "browser", None)


def infrastructure(number: int, task_id: str, cause: str | None) -> EpisodeRecord:
    failed = record(number, "model-x", task_id, "infrastructure_failure", None, wall_s=0.5)
    return failed.model_copy(update={"stop_reason": "infrastructure", "infrastructure_cause": cause})


AGENT_FIGURES = ("attempted", "verified_success", "self_reported_success", "false_completions", "no_finish",
                 "claimed_failure", "honest_failures", "taxonomy", "verified_success_rate",
                 "false_completion_over_attempted", "false_completion_over_success_claims",
                 "verified_success_bootstrap", "pass_hat_k")


@given(st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3", "t9"]), st.sampled_from(INFRA_CAUSES)), max_size=8),
       st.randoms(use_true_random=False))
def test_infrastructure_failures_never_move_an_agent_figure_and_are_counted_by_cause(
    failures: list[tuple[str, str | None]], rng: Random,
) -> None:
    agent = records()
    mixed = agent + [infrastructure(100 + i, task, cause) for i, (task, cause) in enumerate(failures)]
    rng.shuffle(mixed)
    alone, together = outcome_table("x", agent).model_dump(), outcome_table("x", mixed).model_dump()
    assert {k: together[k] for k in AGENT_FIGURES} == {k: alone[k] for k in AGENT_FIGURES}
    assert together["episodes"] == len(agent) + len(failures) and together["infrastructure_failures"] == len(failures)
    expected = Counter(cause or "unrecorded" for _, cause in failures)
    assert together["infrastructure_causes"] == dict(sorted(expected.items()))
    assert together["stop_reasons"]["infrastructure"] == len(failures)
    assert together["replay_pass"] == len(mixed), "replay is counted over every admitted episode"


def test_the_report_shows_infrastructure_causes_apart_from_the_agents_figures() -> None:
    recs = [*records(), infrastructure(100, "t1", "HTTP 500"), infrastructure(101, "t2", "HTTP 500"),
            infrastructure(102, "t2", "timeout")]
    report = run_report("r1", recs, declared_scripted=False, manifest=manifest(recs))
    assert report.total.attempted == len(recs) - 3 and report.total.infrastructure_causes == {"HTTP 500": 2,
                                                                                              "timeout": 1}
    payload = report_json(report)
    assert payload["total"]["infrastructure_causes"] == {"HTTP 500": 2, "timeout": 1}
    html = render_html(report)
    assert "Infrastructure failures (outside attempted and every rate" in html and "HTTP 500 2, timeout 1" in html
    with console_module.console.capture() as captured:
        console_module.print_report(report)
    printed = " ".join(captured.get().split())
    assert "Infrastructure failures (outside attempted and every rate" in printed
    assert "by cause: HTTP 500 2, timeout 1." in printed


def test_requests_blocked_by_containment_are_summed_and_shown() -> None:
    recs = [r.model_copy(update={"blocked_requests": n}) for r, n in zip(records(), [0, 3, 0, 1, 0, 0, 0, 0],
                                                                          strict=True)]
    report = run_report("r1", recs, declared_scripted=False, manifest=manifest(recs))
    assert (report.total.blocked_requests, report.total.episodes_with_blocked_requests) == (4, 2)
    assert "Requests blocked by containment: 4 in 2 episode(s)." in render_html(report)
    with console_module.console.capture() as captured:
        console_module.print_report(report)
    assert "Requests blocked by containment: 4 in 2 episode(s)." in " ".join(captured.get().split())
