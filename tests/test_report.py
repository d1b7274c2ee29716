"""The run report from episode records built in memory (no browser): every figure against hand computation,
the HTML file (self-contained, escaped) and `computerops report --json --html`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from computerops.bundle import RunDirectory
from computerops.cli import app
from computerops.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.html_report import render_html
from computerops.records import EpisodeOutcome, EpisodeRecord, ObservedEndpoint, RunManifest, TaskRef
from computerops.report import Interval, OutcomeTable, RunReport, report_json, run_report
from verifier import Claim

ODD_TASK = "odd<id>&"


def record(number: int, endpoint: str, task_id: str, outcome: EpisodeOutcome, claim: bool | None, *,
           kind: str | None = None, tokens: tuple[int | None, int | None] = (None, None), wall_s: float = 1.0,
           models: list[str] | None = None, fingerprints: list[str] | None = None) -> EpisodeRecord:
    data: dict[str, Any] = {
        "episode_id": f"{number:03d}-{task_id}", "task_id": task_id, "task_sha256": "0" * 64, "endpoint": endpoint,
        "scripted": endpoint.startswith("scripted:"), "outcome": outcome, "false_completion_kind": kind,
        "claim": Claim(success=claim), "stop_reason": "finish" if claim is not None else "budget_exhausted",
        "steps": 3, "rejected_actions": 1, "rejections_by_cause": {}, "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1], "wall_s": wall_s, "operations": 2, "journal_entries": 1,
        "evidence_sha256": {}, "replay": "PASS", "models_seen": models or [], "fingerprints_seen": fingerprints or [],
    }
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
    assert model.false_completion_rate_over_attempted == 0.3333  # the older keys keep their values
    assert model.false_completion_rate_over_success_claims == 0.4


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
    assert give_up.false_completion_rate_over_success_claims is None
    assert "no success claims" in claims.summary()
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


def test_the_json_keeps_the_totals_keys_at_the_top_level() -> None:
    data = report_json(report())
    for key in ("attempted", "verified_success", "false_completion_kinds", "rejected_actions", "by_endpoint",
                "run_id", "scripted", "total", "evidence_level", "provenance", "bootstrap_seed"):
        assert key in data, key
    assert data["attempted"] == 8 and data["total"]["attempted"] == 8
    assert data["scripted"] is True  # scripted episodes are in the run even though the manifest says otherwise


def test_the_html_shows_the_figures_is_self_contained_and_escaped() -> None:
    result = report()
    page = render_html(result)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "<svg" in page
    for figure in ("3/6 = 0.5000 (Wilson 95% 0.1876-0.8124)", "2/5 = 0.4000 (Wilson 95% 0.1176-0.7693)",
                   "pass^1 0.5000, pass^2 0.3333", "0.0000-1.0000 over 3 tasks (2000 resamples, seed 0)",
                   "187.5", "4.1667", "E1", "SCRIPTED", "model-x-2", "fp_0, fp_1", "server: uvicorn",
                   "http://127.0.0.1:1234/v1", "no success claims"):
        assert figure in page, figure
    assert "<h3>claimed</h3>" in page and "<h3>observed</h3>" in page
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
    expected = report_json(run_report("r1", recs, declared_scripted=False, manifest=manifest(recs)))
    assert data == expected
    assert html.read_text(encoding="utf-8") == render_html(RunReport.model_validate(
        {k: v for k, v in data.items() if k in RunReport.model_fields}))


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
