"""`computerops run --trace`: a Playwright trace per episode, and no tracing at all without the flag."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adapter.loop import Environment, ModelLoop
from adapter.transcript import AgentTranscript
from computerops.cli.main import app
from computerops.core.hashing import file_sha256
from computerops.runs.bundle import TRACE, RunDirectory
from computerops.runs.config import RunConfig, parse_endpoint, plan_episodes
from computerops.runs.runner import execute_run
from tasks import load_catalog

TASK = "helpdesk.solve-ticket@1"
pytestmark = pytest.mark.browser


def run_cli(out: Path, *extra: str) -> RunDirectory:
    result = CliRunner().invoke(app, ["run", "--tasks", TASK, "--endpoint", "scripted:oracle", "--out", str(out),
                                      *extra])
    assert result.exit_code == 0, result.output
    return RunDirectory.open(out)


def trace_events(path: Path) -> list[dict[str, Any]]:
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None  # every member's CRC checks out
        names = archive.namelist()
        assert {"trace.trace", "trace.network"} <= set(names)
        assert any(n.startswith("resources/") for n in names)  # DOM snapshots' resources
        return [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]


def calls(events: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == "before" and e.get("method") == method]


def accepted(transcript: dict[str, Any], action: str) -> int:
    return sum(1 for s in transcript["steps"]
               if s["action"] and s["action"]["action"] == action and s["rejection"] is None)


def test_with_trace_each_episode_saves_a_playwright_trace_of_what_it_did(tmp_path: Path) -> None:
    bundle = run_cli(tmp_path / "traced", "--trace")
    assert bundle.manifest().execution.trace is True
    [record] = bundle.records()
    assert record.outcome == "verified_success"
    path = bundle.episode_dir(record.episode_id) / TRACE
    assert record.evidence_sha256[TRACE] == file_sha256(path)
    assert bundle.integrity_problems(record) == []
    events = trace_events(path)
    header = events[0]
    assert header["type"] == "context-options" and header["browserName"] == "chromium"
    assert header["title"] == record.episode_id
    transcript = json.loads((bundle.episode_dir(record.episode_id) / "transcript.json").read_text())
    clicks = accepted(transcript, "click")
    assert clicks >= 2
    assert len(calls(events, "mouseClick")) == clicks  # every click the episode made, and no other
    # a select is made in the isolated world (adapter/driver.py `_select`), so it is no Playwright call of its own
    assert accepted(transcript, "select") >= 1 and calls(events, "selectOption") == []
    assert calls(events, "goto")  # the start page the harness opened is in the trace too
    assert any(e.get("type") == "frame-snapshot" for e in events)
    assert any(e.get("type") == "screencast-frame" for e in events)


def test_without_trace_there_is_no_trace_and_no_tracing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    async def refuse(*_args: object, **_kwargs: object) -> None:
        started.append("tracing.start")
        raise AssertionError("tracing started without --trace")

    monkeypatch.setattr("playwright.async_api._generated.Tracing.start", refuse)
    bundle = run_cli(tmp_path / "plain")
    assert bundle.manifest().execution.trace is False
    [record] = bundle.records()
    assert record.outcome == "verified_success" and started == []
    assert TRACE not in record.evidence_sha256
    assert not list(bundle.root.rglob("*.zip"))


async def test_the_trace_is_saved_even_when_the_episode_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Crashing(ModelLoop):
        async def run(self, env: Environment, instruction: str) -> AgentTranscript:
            await super().run(env, instruction)
            raise RuntimeError("the harness broke after the episode")

    monkeypatch.setattr("computerops.runs.episode.ModelLoop", Crashing)
    task = load_catalog()[TASK]
    endpoint = parse_endpoint("scripted:oracle", base_url=None, model=None, api_key_env=None)
    config = RunConfig(run_id="crash", tasks=[TASK], endpoint=endpoint, episodes=plan_episodes([TASK], endpoint))
    await execute_run(config, [task], tmp_path / "run", trace=True)  # a harness defect ends that episode only
    bundle = RunDirectory.open(tmp_path / "run")
    (record,) = bundle.records()
    assert record.outcome == "infrastructure_failure"
    transcript = json.loads((bundle.episode_dir(record.episode_id) / "transcript.json").read_text())
    assert transcript["infrastructure_error"] == "harness: RuntimeError: the harness broke after the episode"
    path = bundle.episode_dir(config.episodes[0].episode_id) / TRACE
    assert TRACE in record.evidence_sha256
    assert calls(trace_events(path), "mouseClick")  # but its trace shows what it did
