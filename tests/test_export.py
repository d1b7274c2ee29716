"""`computerops export DIR --format jsonl`: one line per episode (record, verdict, receipt), read back exactly, from
evidence that matches the run's checksums only. The run is the stored fixture run (no browser)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory
from computerops.runs.export import ExportedEpisode

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, copy)
    return copy


def test_every_episode_is_one_line_with_its_record_verdict_and_receipt(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "episodes.jsonl"
    result = CliRunner().invoke(app, ["export", str(run), "--format", "jsonl", "--out", str(out)])
    assert result.exit_code == 0, result.output
    bundle = RunDirectory.open(run)
    records = bundle.records()
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(records) > 0 and f"Exported {len(records)} episodes" in result.output
    for line, record in zip(lines, records, strict=True):
        exported = ExportedEpisode.model_validate_json(line)
        assert exported.record == record and exported.run_id == bundle.manifest().config.run_id
        assert exported.verdict == bundle.load_episode(record).verdict
        assert exported.receipt == bundle.receipt(record.episode_id)
        assert exported.scripted == bundle.manifest().scripted
    frame = pd.json_normalize([json.loads(line) for line in lines])
    assert list(frame["record.episode_id"]) == [r.episode_id for r in records]
    assert list(pd.read_json(out, lines=True)["run_id"].unique()) == [bundle.manifest().config.run_id]


def test_an_episode_whose_evidence_was_altered_is_refused_by_name_and_nothing_is_written(run: Path,
                                                                                         tmp_path: Path) -> None:
    record = RunDirectory.open(run).records()[0]
    verdict = run / "episodes" / record.episode_id / "verdict.json"
    before = verdict.read_text()
    verdict.write_text(before.replace('"passed": true', '"passed": false', 1))
    assert verdict.read_text() != before
    out = tmp_path / "episodes.jsonl"
    result = CliRunner().invoke(app, ["export", str(run), "--out", str(out)])
    assert result.exit_code == 2 and record.episode_id in result.output and not out.exists()


@pytest.mark.parametrize(("options", "said"), [(["--format", "parquet"], "the formats are jsonl"),
                                               (["--out", "{existing}"], "exists")])
def test_bad_requests_are_refused_before_anything_is_written(run: Path, tmp_path: Path, options: list[str],
                                                             said: str) -> None:
    existing = tmp_path / "there.jsonl"
    existing.write_text("keep")
    given = [o.replace("{existing}", str(existing)) for o in options]
    if "--out" not in given:
        given += ["--out", str(tmp_path / "new.jsonl")]
    result = CliRunner().invoke(app, ["export", str(run), *given])
    assert result.exit_code == 2 and said in result.output
    assert existing.read_text() == "keep" and not (tmp_path / "new.jsonl").exists()


def test_a_directory_that_is_no_run_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(tmp_path), "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and not (tmp_path / "x.jsonl").exists()


def test_an_inspect_log_holds_every_episode_with_its_verdict_as_the_main_score(run: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    out = tmp_path / "run.eval"
    result = CliRunner().invoke(app, ["export", str(run), "--format", "inspect", "--out", str(out)])
    assert result.exit_code == 0, result.output
    bundle = RunDirectory.open(run)
    records = bundle.records()
    log = read_eval_log(str(out))
    assert log.status == "success" and log.samples is not None and log.results is not None
    assert [s.id for s in log.samples] == [r.episode_id for r in records]
    for sample, record in zip(log.samples, records, strict=True):
        verdict = bundle.load_episode(record).verdict
        assert sample.scores is not None
        main = sample.scores["verified"]
        assert main.value == ("C" if record.outcome == "verified_success" else "I") and main.answer == record.outcome
        assert all(check.name in (main.explanation or "") for check in verdict.checks)
        assert sample.scores["claim"].value == {True: "success", False: "failure", None: "no finish"}[
            record.claim.success]
        assert sample.scores["false_completion"].value == (record.false_completion_kind or "none")
        assert sample.metadata["task_sha256"] == record.task_sha256
        assert sample.metadata["receipt"] == record.replay
        assert sample.messages[0].role == "system" and sample.messages[1].role == "user"
        assert sum(m.role == "assistant" for m in sample.messages) == record.steps
        assert sample.total_time == record.wall_s
        if record.prompt_tokens is not None:
            assert sample.model_usage[record.endpoint].input_tokens == record.prompt_tokens
        if record.started_s is not None:
            assert sample.started_at and sample.completed_at and sample.started_at <= sample.completed_at
    assert log.stats.started_at and log.stats.completed_at and log.stats.started_at <= log.stats.completed_at
    tokens = sum(r.prompt_tokens or 0 for r in records)
    assert sum(used.input_tokens for used in log.stats.model_usage.values()) == tokens
    verified = sum(r.outcome == "verified_success" for r in records) / len(records)
    assert log.results.scores[0].name == "verified" and log.results.scores[0].metrics["share"].value == verified


def test_an_inspect_log_needs_an_eval_or_json_file(run: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(run), "--format", "inspect", "--out", str(tmp_path / "x.txt")])
    assert result.exit_code == 2 and "FILE.eval" in result.output
