"""`computerops compare A B`: episodes matched task by task, a changed outcome explained by the first named check
whose result differs, a changed task never compared, unmatched episodes listed. On the stored fixture run (no
browser) and on its episodes altered in memory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.report.compare import compare_episodes
from computerops.runs.bundle import RunDirectory
from computerops.runs.export import ExportedEpisode, exported_episodes

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"


def episodes() -> list[ExportedEpisode]:
    return exported_episodes(RunDirectory.open(FIXTURE_RUN))


def test_a_run_against_itself_changes_nothing() -> None:
    found = episodes()
    comparison = compare_episodes("a", found, "b", found)
    assert len(comparison.episodes) == len(found) and comparison.count("same") == len(found)


def test_a_changed_outcome_names_the_first_check_whose_result_differs() -> None:
    found = episodes()
    first = found[0]
    failing = 0  # the first check of the verdict
    check = first.verdict.checks[failing]
    flipped = first.verdict.model_copy(update={"checks": [
        c.model_copy(update={"passed": not c.passed}) if i == failing else c
        for i, c in enumerate(first.verdict.checks)]})
    other = "honest_failure" if first.record.outcome != "honest_failure" else "verified_success"
    changed = first.model_copy(update={"verdict": flipped,
                                       "record": first.record.model_copy(update={"outcome": other})})
    comparison = compare_episodes("a", found, "b", [changed, *found[1:]])
    row = next(e for e in comparison.episodes if e.a == first.record.episode_id)
    said = {True: "passed", False: "failed"}
    assert row.change == "changed" and row.outcome_b == other
    assert row.why == f"{check.name}: {said[check.passed]} in A, {said[not check.passed]} in B"
    assert comparison.count("changed") == 1


def test_a_changed_outcome_with_the_same_checks_is_explained_by_the_claims() -> None:
    found = episodes()
    first = found[0]
    other = "honest_failure" if first.record.outcome != "honest_failure" else "verified_success"
    claimed = first.record.claim.model_copy(update={"success": None})
    changed = first.model_copy(update={"record": first.record.model_copy(update={"outcome": other, "claim": claimed})})
    row = compare_episodes("a", found, "b", [changed, *found[1:]]).episodes[0]
    assert row.change == "changed" and row.why is not None and row.why.endswith("B did not finish")


def test_a_changed_task_is_not_compared_and_unmatched_episodes_are_listed() -> None:
    found = episodes()
    first = found[0]
    rehashed = first.model_copy(update={"record": first.record.model_copy(update={"task_sha256": "0" * 64})})
    comparison = compare_episodes("a", found, "b", [rehashed, *found[1:]])
    assert comparison.count("task_changed") == 1
    shorter = compare_episodes("a", found, "b", found[1:])
    task = first.record.task_id
    rows = [e for e in shorter.episodes if e.task_id == task]
    assert rows[-1].change == "only_in_a" and rows[-1].b is None  # matched by order: the last of the task is unmatched
    assert compare_episodes("a", found[1:], "b", found).count("only_in_b") == 1


def test_compare_from_the_command_line(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(FIXTURE_RUN, copy)
    result = CliRunner().invoke(app, ["compare", str(FIXTURE_RUN), str(copy), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["format"] == "computerops.comparison/1" and all(e["change"] == "same" for e in data["episodes"])
    printed = CliRunner().invoke(app, ["compare", str(FIXTURE_RUN), str(copy)])
    assert printed.exit_code == 0 and "0 changed" in " ".join(printed.output.split())
    record = RunDirectory.open(copy).records()[0]
    verdict = copy / "episodes" / record.episode_id / "verdict.json"
    verdict.write_text(verdict.read_text().replace('"passed": true', '"passed": false', 1))
    refused = CliRunner().invoke(app, ["compare", str(FIXTURE_RUN), str(copy)])
    assert refused.exit_code == 2 and record.episode_id in refused.output
