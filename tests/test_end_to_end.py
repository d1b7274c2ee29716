"""Real-browser tests of the full loop: Chromium, the helpdesk over HTTP, the scripted endpoint over
HTTP, verification, evidence on disk, replay and the report — the path `computerops run` takes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import pytest_asyncio
from typer.testing import CliRunner

from adapter.scripted import create_scripted_app
from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, RunConfig, parse_endpoint, plan_episodes
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from computerops.runs.serving import serve_app
from tasks import load_catalog

CATALOG = load_catalog()
# Three helpdesk tasks through the whole pipeline; every task of the catalog is proven by test_catalog_check.py.
TASKS = [CATALOG[task_id] for task_id in
         ("helpdesk.answer-latest-order@1", "helpdesk.refund-with-approval@1", "helpdesk.solve-ticket@1")]
pytestmark = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "e2e"
    endpoint = parse_endpoint("scripted:oracle,false-finish,malformed", base_url=None, model=None, api_key_env=None)
    ids = [t.id for t in TASKS]
    config = RunConfig(run_id="e2e", tasks=ids, endpoint=endpoint, episodes=plan_episodes(ids, endpoint))
    await execute_run(config, TASKS, out)
    return out


def records_by_policy(run: Path) -> dict[str, list[EpisodeRecord]]:
    grouped: dict[str, list[EpisodeRecord]] = {}
    for record in RunDirectory.open(run).records():
        grouped.setdefault(record.endpoint, []).append(record)
    return grouped


def test_the_oracle_reaches_verified_success_on_every_task_through_the_browser(scripted_run: Path) -> None:
    oracle = records_by_policy(scripted_run)["scripted:oracle"]
    assert [r.outcome for r in oracle] == ["verified_success"] * len(TASKS)
    assert all(r.scripted and r.replay == "PASS" and r.rejected_actions == 0 for r in oracle)
    # Which server answered each reply is kept as observed provenance (x-request-id, per reply, is left out).
    assert {tuple(r.reply_headers_seen) for r in oracle} == {("server: uvicorn", "x-computerops-scripted: oracle")}
    refund = next(r for r in oracle if r.task_id == "helpdesk.refund-with-approval@1")
    assert refund.journal_entries == 6 and refund.steps == 15


def test_a_false_finish_is_classified_as_a_false_completion(scripted_run: Path) -> None:
    false_finish = records_by_policy(scripted_run)["scripted:false-finish"]
    assert {r.outcome for r in false_finish} == {"false_completion"}
    assert all(r.claim.success is True for r in false_finish)
    assert {r.false_completion_kind for r in false_finish} == {"state"}


def test_an_off_site_navigation_is_rejected_and_counted(scripted_run: Path) -> None:
    for record in records_by_policy(scripted_run)["scripted:malformed"]:
        assert record.stop_reason == "budget_exhausted" and record.claim.success is None
        assert record.outcome == "honest_failure"
        assert record.steps == 32 and record.rejected_actions == 32
        assert record.rejections_by_cause["off_site"] >= 6
        assert record.operations == 1  # only the start page: nothing off-site or malformed reached the site
    transcript = json.loads(
        (RunDirectory.open(scripted_run).episode_dir("009-helpdesk.solve-ticket@1--malformed") / "transcript.json")
        .read_text())
    off_site = [s for s in transcript["steps"] if s["rejection"] and s["rejection"]["cause"] == "off_site"]
    assert "https://example.com/" in off_site[0]["rejection"]["reason"]


def test_the_evidence_on_disk_matches_its_recorded_hashes_and_the_manifest_says_scripted(scripted_run: Path) -> None:
    bundle = RunDirectory.open(scripted_run)
    manifest = bundle.manifest()
    assert manifest.scripted
    assert [t.id for t in manifest.tasks] == [t.id for t in TASKS]
    assert manifest.versions["playwright"]
    # The version and the build that ran it.
    assert re.fullmatch(r"\d+(\.\d+)+ \((/.+|Playwright's own)\)", str(manifest.versions["chromium"]))
    payload = manifest.endpoint_observed.models_payload
    assert payload is not None and payload["data"][0]["id"].startswith("scripted:")
    for record in bundle.records():
        assert bundle.integrity_problems(record) == []
        assert bundle.receipt(record.episode_id) is not None


def test_the_report_json_has_the_outcome_table(scripted_run: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(scripted_run), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    n, total = len(TASKS), report["total"]
    assert total["attempted"] == 3 * n
    assert total["verified_success"] == n
    assert total["self_reported_success"] == 2 * n
    assert total["false_completions"] == n
    assert total["false_completion_kinds"] == {"state": n, "procedure_only": 0, "forbidden_mutation": 0}
    assert total["no_finish"] == n
    assert total["replay_pass"] == 3 * n
    assert report["scripted"] is True
    policies = ("oracle", "false-finish", "malformed")
    assert report["provenance"]["observed"]["reply_headers_seen"] == [
        "server: uvicorn", *(f"x-computerops-scripted: {p}" for p in sorted(policies))]


def test_replaying_the_run_from_disk_passes_every_episode(scripted_run: Path) -> None:
    result = CliRunner().invoke(app, ["replay", str(scripted_run)])
    assert result.exit_code == 0, result.output
    assert f"All {3 * len(TASKS)} replays PASS." in result.output


def test_one_altered_byte_in_saved_operations_fails_replay_with_a_clear_reason(
    scripted_run: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "tampered"
    shutil.copytree(scripted_run, copy)
    path = copy / "episodes" / "001-helpdesk.answer-latest-order@1--oracle" / "operations.json"
    data = path.read_bytes()
    position = data.index(b'"status": 200') + len(b'"status": 20')
    path.write_bytes(data[:position] + b"1" + data[position + 1:])  # 200 -> 201
    result = CliRunner().invoke(app, ["replay", str(copy)])
    assert result.exit_code == 1
    assert "1 of 9 replays FAILED" in " ".join(result.output.split())
    as_json = CliRunner().invoke(app, ["replay", str(copy), "--json"])
    assert as_json.exit_code == 1
    receipts = json.loads(as_json.stdout)
    failed = [r for r in receipts if r["result"] == "FAIL"]
    assert [r["episode_id"] for r in failed] == ["001-helpdesk.answer-latest-order@1--oracle"]
    assert "operations.json: sha256" in failed[0]["mismatches"][0]
    assert any("status recorded 201, replayed 200" in m for m in failed[0]["mismatches"])


async def test_a_mock_llm_reached_by_base_url_is_still_labelled_scripted(tmp_path: Path) -> None:
    task = CATALOG["helpdesk.solve-ticket@1"]
    async with serve_app(create_scripted_app(TASKS, default_policy="oracle")) as origin:
        endpoint = EndpointConfig(kind="openai", base_url=f"{origin}/v1", model="local-model")
        config = RunConfig(run_id="mock", tasks=[task.id], endpoint=endpoint,
                           episodes=plan_episodes([task.id], endpoint))
        [record] = await execute_run(config, [task], tmp_path / "mock")
    assert record.endpoint == "local-model"
    assert record.models_seen == ["scripted:oracle"] and record.scripted
    assert record.outcome == "verified_success"
    manifest = RunDirectory.open(tmp_path / "mock").manifest()
    assert manifest.config.endpoint.model == "local-model"
    payload = manifest.endpoint_observed.models_payload
    assert payload is not None and payload["data"][0]["id"] == "scripted:oracle"


def test_every_request_names_the_action_that_caused_it(scripted_run: Path) -> None:
    bundle = RunDirectory.open(scripted_run)
    directory = bundle.episode_dir("004-helpdesk.refund-with-approval@1--oracle")
    transcript = json.loads((directory / "transcript.json").read_text())
    operations = json.loads((directory / "operations.json").read_text())
    assert operations[0]["action"] == 0  # the start page the harness opened
    assert all(isinstance(op["action"], int) for op in operations)
    submit = next(s["number"] for s in transcript["steps"] if 'button "Issue refund"' in s["note"])
    refund_posts = [op for op in operations if op["method"] == "POST" and op["path"].endswith("/refunds")]
    assert [op["action"] for op in refund_posts] == [submit]
    assert next(op for op in operations if op["seq"] == refund_posts[0]["seq"] + 1)["action"] == submit  # redirect


def test_every_file_of_the_run_directory_names_its_format(scripted_run: Path) -> None:
    # computerops/core/formats.py: each JSON object file and each JSON Lines line carries `format`; the raw witness
    # lists and checksums.sha256 are the layout the manifest's format versions.
    layout = {"operations.json", "journal.json", "final_state.json", "checksums.sha256"}
    seen: set[str] = set()
    for path in sorted(p for p in scripted_run.rglob("*") if p.is_file()):
        if path.name in layout or path.name.endswith(".zip") or path.name.startswith("."):
            continue
        lines = path.read_text(encoding="utf-8").splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        for line in filter(None, lines):
            value = json.loads(line)
            assert isinstance(value, dict) and re.fullmatch(r"computerops\.[a-z_]+/\d+", value.get("format", "")), \
                f"{path.relative_to(scripted_run)} names no format"
            seen.add(value["format"].split("/")[0])
    assert {"computerops.manifest", "computerops.episode", "computerops.transcript", "computerops.verdict",
            "computerops.started", "computerops.receipt"} <= seen
