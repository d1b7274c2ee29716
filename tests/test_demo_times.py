"""`computerops demo` says how long each of its two phases took (the README's demo durations are read from it): the
CLI's demo with its run, verification and tasks check stood in for, on a clock the test moves."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

import computerops.catalog.checking
import computerops.cli.console
import computerops.runs.demo
import tasks
from computerops.cli import main
from computerops.runs.bundle import RunDirectory

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
RUN_S, CHECK_S = 125.0, 48.0
"""What the stood-in phases take on the test's clock."""


def test_the_demo_prints_each_phase_and_its_total_from_its_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    episodes = len(RunDirectory.open(FIXTURE_RUN).records())
    plan = SimpleNamespace(target=FIXTURE_RUN, check_dir=Path("unused"), config=None, tasks=[])

    def run_phase(*_: Any, **__: Any) -> None:
        now[0] += RUN_S

    async def check_phase(*_: Any) -> list[Any]:
        now[0] += CHECK_S
        return []

    monkeypatch.setattr(computerops.runs.demo, "demo_clock", lambda: now[0])
    monkeypatch.setattr(computerops.runs.demo, "plan_demo", lambda *_: plan)
    monkeypatch.setattr(tasks, "load_catalog", lambda: {})
    monkeypatch.setattr(computerops.cli.console, "print_demo_plan", lambda _: None)
    monkeypatch.setattr(main, "_execute", run_phase)
    monkeypatch.setattr(main, "_verify", lambda _: SimpleNamespace(
        receipts=[SimpleNamespace(result="PASS")] * episodes, passed=True))
    monkeypatch.setattr(main, "_report", lambda *_, **__: None)
    monkeypatch.setattr(computerops.cli.console, "print_demo_replays", lambda *_: None)
    monkeypatch.setattr(computerops.catalog.checking, "check_tasks", check_phase)
    result = CliRunner().invoke(main.app, ["demo"])
    assert result.exit_code == 0, result.output
    assert ("Demo phases (wall clock): the run, verified and replayed 125 s; tasks check of the subset 48 s; in all "
            "173 s") in " ".join(result.output.split()), result.output
    skipped = CliRunner().invoke(main.app, ["demo", "--no-tasks-check"])
    assert "Demo phases (wall clock): the run, verified and replayed 125 s; in all 125 s" in " ".join(
        skipped.output.split()), skipped.output
