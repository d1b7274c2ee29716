"""The episode view (computerops/service/episode_view.py) against a real run directory: the committed scripted run
tests/fixtures/runs/before-formats (an oracle and a false-finish episode of helpdesk.solve-ticket@1), read as it is or
copied, changed and sealed again where a case needs evidence it lacks (a rejection, a fault, a trace)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from computerops.core.hashing import file_sha256
from computerops.runs.bundle import CHECKSUMS, EPISODES, RunDirectory
from computerops.service.episode_view import EpisodeView, OperationView, episode_view
from computerops.service.errors import ServiceError

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
ORACLE = "001-helpdesk.solve-ticket@1--oracle"
FALSE_FINISH = "002-helpdesk.solve-ticket@1--false-finish"
EPISODE_IDS = (ORACLE, FALSE_FINISH)


def _raw(run: Path, episode_id: str, name: str) -> Any:
    return json.loads((run / "episodes" / episode_id / name).read_text(encoding="utf-8"))


def _operations(view: EpisodeView) -> list[OperationView]:
    return [*view.unattributed_operations, *(o for step in view.steps for o in step.operations)]


def _reseal(run: Path) -> None:
    """Record hashes and the checksum list recomputed after a test changed evidence on purpose."""
    lines = []
    for line in (run / EPISODES).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        directory = run / "episodes" / record["episode_id"]
        record["evidence_sha256"] = {name: file_sha256(directory / name) for name in record["evidence_sha256"]}
        lines.append(json.dumps(record) + "\n")
    (run / EPISODES).write_text("".join(lines), encoding="utf-8")
    bundle = RunDirectory.open(run)
    (run / CHECKSUMS).write_text("".join(f"{file_sha256(run / name)}  {name}\n" for name in bundle.files()))


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture(scope="module")
def views() -> dict[str, EpisodeView]:
    bundle = RunDirectory.open(FIXTURE)
    return {episode_id: episode_view(bundle, episode_id) for episode_id in EPISODE_IDS}


@pytest.mark.parametrize("episode_id", EPISODE_IDS)
def test_the_header_is_the_record_and_the_transcript(views: dict[str, EpisodeView], episode_id: str) -> None:
    view = views[episode_id]
    record = next(json.loads(line) for line in (FIXTURE / EPISODES).read_text().splitlines()
                  if json.loads(line)["episode_id"] == episode_id)
    transcript = _raw(FIXTURE, episode_id, "transcript.json")
    assert (view.task_id, view.endpoint, view.scripted, view.outcome) == (
        record["task_id"], record["endpoint"], record["scripted"], record["outcome"])
    assert view.claim.model_dump() == record["claim"]
    assert (view.stop_reason, view.steps_count, view.wall_s) == (record["stop_reason"], record["steps"],
                                                               record["wall_s"])
    assert view.false_completion_kind == record["false_completion_kind"]
    assert view.instruction == transcript["instruction"] and view.first_observation == transcript["first_observation"]
    assert view.site == "helpdesk"


def test_the_two_episodes_are_told_apart(views: dict[str, EpisodeView]) -> None:
    assert views[ORACLE].outcome == "verified_success" and views[ORACLE].claim.success is True
    assert views[FALSE_FINISH].outcome == "false_completion" and views[FALSE_FINISH].false_completion_kind == "state"


@pytest.mark.parametrize("episode_id", EPISODE_IDS)
def test_every_step_in_order_with_the_reply_exactly_as_recorded(views: dict[str, EpisodeView], episode_id: str) -> None:
    steps = _raw(FIXTURE, episode_id, "transcript.json")["steps"]
    view = views[episode_id]
    assert [s.number for s in view.steps] == [s["number"] for s in steps] and len(steps) >= 3
    for shown, raw in zip(view.steps, steps, strict=True):
        assert shown.content == raw["call"]["content"]
        assert [c.model_dump() for c in shown.tool_calls] == raw["call"]["tool_calls"]
        assert shown.action is not None and raw["action"] is not None
        assert {"action": shown.action.name, **shown.action.arguments} == raw["action"]
        assert shown.rejection is None and raw["rejection"] is None
        assert (shown.note, shown.observation) == (raw["note"], raw["observation"])
    assert view.steps[-1].action is not None and view.steps[-1].action.name == "done"


@pytest.mark.parametrize("episode_id", EPISODE_IDS)
def test_every_operation_once_under_the_step_whose_action_number_it_carried(views: dict[str, EpisodeView],
                                                                             episode_id: str) -> None:
    raw = {o["seq"]: o for o in _raw(FIXTURE, episode_id, "operations.json")}
    view = views[episode_id]
    seqs = [o.seq for o in _operations(view)]
    assert sorted(seqs) == sorted(raw) and len(seqs) == len(set(seqs))
    for step in view.steps:
        assert [o.seq for o in step.operations] == sorted(s for s, o in raw.items() if o["action"] == step.number)
    numbers = {s.number for s in view.steps}
    assert [o.seq for o in view.unattributed_operations] == sorted(
        s for s, o in raw.items() if o["action"] not in numbers)
    for operation in _operations(view):
        original = raw[operation.seq]
        assert (operation.action, operation.method, operation.path, operation.status) == (
            original["action"], original["method"], original["path"], original["status"])
        assert operation.shown is not None and operation.shown.model_dump(mode="json", exclude_defaults=True) == {
            k: v for k, v in original["shown"].items()}


def test_the_start_page_is_unattributed_and_a_step_without_requests_has_none(views: dict[str, EpisodeView]) -> None:
    view = views[ORACLE]
    assert [(o.action, o.path) for o in view.unattributed_operations] == [(0, "/helpdesk/")]
    by_number = {s.number: s for s in view.steps}
    chosen = next(s.number for s in view.steps if s.action is not None and s.action.name == "select")
    assert by_number[chosen].operations == []  # choosing a status sends nothing
    assert [(o.method, o.status) for o in by_number[chosen + 1].operations] == [("POST", 303), ("GET", 200)]


def test_the_oracles_mutation_carries_its_journal_rows(views: dict[str, EpisodeView]) -> None:
    journal = _raw(FIXTURE, ORACLE, "journal.json")
    operations = _operations(views[ORACLE])
    mutating = [o for o in operations if o.mutated]
    assert [o.method for o in mutating] == ["POST"] and journal
    for operation in operations:
        expected = [e for e in journal if e["operation"] == operation.seq]
        assert [r.model_dump(mode="json", exclude={"changed_fields"}) for r in operation.journal] == [
            {k: e[k] for k in ("seq", "table", "key", "change", "before", "after")} for e in expected]
        assert operation.mutated == bool(expected)
    row = mutating[0].journal[0]
    assert row.table == "ticket" and row.change == "update" and "status" in row.changed_fields
    assert row.before is not None and row.after is not None and row.after["status"] == "solved"
    assert not any(o.mutated or o.journal for o in _operations(views[FALSE_FINISH]))


@pytest.mark.parametrize("episode_id", EPISODE_IDS)
def test_the_verdict_and_receipt_are_the_files(views: dict[str, EpisodeView], episode_id: str) -> None:
    view = views[episode_id]
    verdict = _raw(FIXTURE, episode_id, "verdict.json")
    assert [c.model_dump() for c in view.verdict.checks] == verdict["checks"] and verdict["checks"]
    assert (view.verdict.outcome, view.verdict.false_completion_kind) == (verdict["outcome"],
                                                                         verdict["false_completion_kind"])
    receipt = _raw(FIXTURE, episode_id, "receipt.json")
    assert view.receipt is not None
    assert (view.receipt.result, view.receipt.mismatches, view.receipt.operations) == (
        receipt["result"], receipt["mismatches"], receipt["operations"])
    assert view.receipt.first_mismatch == (receipt["mismatches"][0] if receipt["mismatches"] else None)


@pytest.mark.parametrize("episode_id", EPISODE_IDS)
def test_downloads_of_a_traceless_episode(views: dict[str, EpisodeView], episode_id: str) -> None:
    downloads = views[episode_id].downloads
    assert sorted(downloads.files) == sorted(p.name for p in (FIXTURE / "episodes" / episode_id).iterdir())
    assert not downloads.trace and downloads.show_trace_command is None
    faults = views[episode_id].faults
    assert (faults.configured, faults.fired, faults.decided) == ([], [], [])


def test_a_trace_is_offered_with_its_command_and_unlisted_files_are_not(run_copy: Path) -> None:
    directory = run_copy / "episodes" / ORACLE
    (directory / "trace.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (directory / "notes.txt").write_text("not evidence")
    _reseal(run_copy)
    downloads = episode_view(RunDirectory.open(run_copy), ORACLE).downloads
    assert downloads.trace and "trace.zip" in downloads.files and "notes.txt" not in downloads.files
    assert downloads.show_trace_command == f"playwright show-trace {(directory / 'trace.zip').absolute()}"


def test_a_rejection_and_a_fault_are_shown_where_they_happened(run_copy: Path) -> None:
    directory = run_copy / "episodes" / ORACLE
    transcript = json.loads((directory / "transcript.json").read_text())
    transcript["steps"][2].update(action=None, rejection={"cause": "unknown_control", "reason": "no control [99]"})
    (directory / "transcript.json").write_text(json.dumps(transcript))
    operations = json.loads((directory / "operations.json").read_text())
    operations[3]["fault"] = {"fault": "transient_5xx", "source": "rule:0", "params": {}, "applied": True}
    operations[2]["action"] = 9  # a number no step has: unattributed, never guessed onto a step
    (directory / "operations.json").write_text(json.dumps(operations))
    _reseal(run_copy)
    view = episode_view(RunDirectory.open(run_copy), ORACLE)
    step = view.steps[2]
    assert step.action is None and step.rejection is not None and step.rejection.cause == "unknown_control"
    assert [o.seq for o in view.unattributed_operations] == [1, 3]
    assert view.steps[1].operations == []
    assert [(f.fault, f.operation, f.action, f.applied) for f in view.faults.decided] == [("transient_5xx", 4, 4, True)]
    assert view.steps[3].operations[0].fault is not None


def test_an_unknown_episode_is_not_found() -> None:
    bundle = RunDirectory.open(FIXTURE)
    for episode_id in ("003-nothing", "../manifest", ""):
        with pytest.raises(ServiceError) as caught:
            episode_view(bundle, episode_id)
        assert caught.value.kind == "not_found"


@pytest.mark.parametrize("name", ["operations.json", "journal.json", "transcript.json", "verdict.json",
                                  "receipt.json", "started.json"])
def test_altered_evidence_is_a_conflict(run_copy: Path, name: str) -> None:
    path = run_copy / "episodes" / ORACLE / name
    path.write_bytes(path.read_bytes() + b" ")
    bundle = RunDirectory.open(run_copy)
    with pytest.raises(ServiceError) as caught:
        episode_view(bundle, ORACLE)
    assert caught.value.kind == "conflict" and name in caught.value.message
    assert episode_view(bundle, FALSE_FINISH).episode_id == FALSE_FINISH  # the other episode is still shown


def test_a_file_added_to_a_sealed_episode_is_a_conflict(run_copy: Path) -> None:
    (run_copy / "episodes" / ORACLE / "trace.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    with pytest.raises(ServiceError) as caught:
        episode_view(RunDirectory.open(run_copy), ORACLE)
    assert caught.value.kind == "conflict" and "trace.zip" in caught.value.message


def test_an_unsealed_run_is_checked_against_its_records(run_copy: Path) -> None:
    (run_copy / CHECKSUMS).unlink()
    assert episode_view(RunDirectory.open(run_copy), ORACLE).steps
    path = run_copy / "episodes" / ORACLE / "operations.json"
    path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(ServiceError) as caught:
        episode_view(RunDirectory.open(run_copy), ORACLE)
    assert caught.value.kind == "conflict"
