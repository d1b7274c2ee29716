"""Resumable runs: a runner killed with SIGKILL at any point and resumed admits exactly the episodes of
an uninterrupted run, with the same evidence; a resume under changed inputs is refused."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.core.difference import first_difference
from computerops.runs.bundle import EPISODES, INTERRUPTED, MANIFEST, RESUMES, STARTED, RunDirectory
from computerops.runs.config import parse_endpoint, plan_episodes
from computerops.runs.records import RunManifest
from computerops.runs.runner import manifest_difference
from computerops.runs.verification import verify_run
from computerops.server.jobs import interruptible

TASKS = "helpdesk.solve-ticket@1,helpdesk.answer-latest-order@1,helpdesk.answer-valid-approval@1"
POLICIES = "scripted:oracle,noop"
PLANNED = 6  # three tasks, two policies
IDENTICAL = ("operations.json", "journal.json", "final_state.json", "verdict.json", "receipt.json")
# Each runs the CLI in a subprocess with a real Chromium.
pytestmark = pytest.mark.browser
CLI = [sys.executable, "-c", "from computerops.cli.main import main; main()"]


CHILD_ENV: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def scratch() -> Iterator[None]:
    """The runs' temporary directory (tenants, Chromium profiles), removed afterwards: a process killed with
    SIGKILL cannot remove its own. A short path of its own, not under pytest's (which a pytest-xdist worker makes
    longer still): Ray puts its sockets below it, and a Unix socket's path has at most 107 bytes."""
    directory = Path(tempfile.mkdtemp(prefix="co-scratch-"))
    CHILD_ENV.update(os.environ, TMPDIR=str(directory))
    yield
    shutil.rmtree(directory, ignore_errors=True)


def start(*args: str) -> subprocess.Popen[bytes]:
    """The CLI in a session of its own, so SIGKILL takes its browser and servers down with it."""
    env = CHILD_ENV or None
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            env=env, preexec_fn=interruptible)  # SIGINT as a terminal's foreground job has it


def finish(process: subprocess.Popen[bytes], timeout: float = 240) -> str:
    output, _ = process.communicate(timeout=timeout)
    text = output.decode(errors="replace")
    assert process.returncode == 0, text
    return text


def admitted_lines(run: Path) -> int:
    path = run / EPISODES
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def kill_when(process: subprocess.Popen[bytes], condition: Callable[[], bool], what: str) -> None:
    """SIGKILL the runner's whole session as soon as `condition` holds (polled every 10 ms)."""
    deadline = time.monotonic() + 240
    while not condition():
        if process.poll() is not None:
            output = process.stdout.read().decode(errors="replace") if process.stdout else ""
            pytest.fail(f"the run ended before {what}:\n{output}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def planned_ids() -> list[str]:
    endpoint = parse_endpoint(POLICIES, base_url=None, model=None, api_key_env=None)
    return [p.episode_id for p in plan_episodes(TASKS.split(","), endpoint)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("resume") / "whole"
    finish(start("run", "--tasks", TASKS, "--endpoint", POLICIES, "--out", str(run)))
    return run


def test_sigkill_at_several_points_then_resume_admits_the_same_episodes_as_an_uninterrupted_run(
    uninterrupted: Path, tmp_path: Path
) -> None:
    run = tmp_path / "killed"
    ids = planned_ids()
    # 1. Killed during the very first episode: nothing admitted yet.
    kill_when(start("run", "--tasks", TASKS, "--endpoint", POLICIES, "--out", str(run)),
              lambda: (run / "episodes" / ids[0] / STARTED).is_file(), "the first episode started")
    assert admitted_lines(run) == 0
    # 2. Killed by the first resume between admissions.
    kill_when(start("run", "--resume", str(run)), lambda: admitted_lines(run) >= 2, "two admissions")
    # 3. Killed by the second resume in the middle of a later episode.
    def mid_episode() -> bool:
        done = admitted_lines(run)
        return done >= 3 and done < PLANNED and (run / "episodes" / ids[done] / STARTED).is_file()

    kill_when(start("run", "--resume", str(run), "--concurrency", "2"), mid_episode, "a later episode started")
    # 4. Killed while writing a record: an unfinished last line (what a write cut short leaves).
    admitted_now = admitted_lines(run)
    pending = next(i for i in ids if i not in {json.loads(line)["episode_id"] for line in
                                               (run / EPISODES).read_text().splitlines()})
    whole_line = (uninterrupted / EPISODES).read_text().splitlines()
    torn = next(line for line in whole_line if json.loads(line)["episode_id"] == pending)[:150]
    with (run / EPISODES).open("a") as handle:
        handle.write(torn)
    assert len(RunDirectory.open(run).records()) == admitted_now, "an unfinished line is not an admitted record"

    output = " ".join(finish(start("run", "--resume", str(run))).split())
    assert "150 bytes of an unfinished record cut off" in output, output
    # The tenant databases of the three killed processes went when the next one started; the last removed its own.
    assert not list(Path(CHILD_ENV["TMPDIR"]).glob("computerops-*")), "a killed run's tenants are not left for good"

    lines = (run / EPISODES).read_text().splitlines()
    admitted = [json.loads(line)["episode_id"] for line in lines]
    assert sorted(admitted) == sorted(ids), "no gap, no duplicate"
    assert len(admitted) == len(set(admitted)) == PLANNED
    for episode_id in ids:
        for name in IDENTICAL:
            killed_bytes = (run / "episodes" / episode_id / name).read_bytes()
            assert killed_bytes == (uninterrupted / "episodes" / episode_id / name).read_bytes(), (episode_id, name)
    resumes = RunDirectory.open(run).resumes()
    assert len(resumes) == 3
    assert resumes[0].admitted_before == 0 and ids[0] in resumes[0].set_apart
    assert resumes[-1].torn_bytes_removed == 150
    set_apart = [path for entry in resumes for path in entry.set_apart.values()]
    # Partial evidence is kept as it was left (a kill can land before even started.json is complete).
    assert set_apart and all((run / path).is_dir() for path in set_apart)
    assert not any((run / "episodes" / i / f"{STARTED}.tmp").exists() for i in ids)
    assert all(path.startswith(f"{INTERRUPTED}/") for path in set_apart)
    report = subprocess.run([*CLI, "report", str(run), "--json"], capture_output=True, text=True, check=True)
    assert json.loads(report.stdout)["total"]["attempted"] == PLANNED, "set-apart attempts are never counted"
    # The resumed run is sealed and verifies; its resume log and set-apart evidence are covered too.
    assert subprocess.run([*CLI, "verify", str(run)], capture_output=True).returncode == 0
    # The first kill waited for started.json, so the first set-apart attempt holds at least that file.
    kept = next(path for apart in set_apart for path in sorted((run / apart).rglob("*")) if path.is_file())
    for altered in (run / RESUMES, kept):
        original = altered.read_bytes()
        altered.write_bytes(original[:-2] + bytes([original[-2] ^ 1]) + original[-1:])
        result = subprocess.run([*CLI, "verify", str(run)], capture_output=True, text=True)
        assert result.returncode == 1, altered
        assert altered.relative_to(run).as_posix() in " ".join(result.stderr.split())
        altered.write_bytes(original)


def test_ctrl_c_mid_episode_admits_nothing_the_interruption_changed_and_a_resume_finishes_the_run(
    uninterrupted: Path, tmp_path: Path
) -> None:
    """SIGINT to the runner alone (Ctrl-C; the operator server's cancel) with episodes in flight at concurrency 2: the
    run stops (exit 130) and what it admitted is what an uninterrupted run admits, byte for byte. Before, uvicorn's
    own SIGINT handler stopped the sites server and scripted endpoint first, and an oracle episode in flight was
    admitted as an honest failure of a vanished site (computerops/runs/serving.py `EmbeddedServer`)."""
    ids = planned_ids()
    # Episodes take a fraction of a second: a signal sent while one is in flight can still land after the run's last
    # admission (the run then ends whole, exit 0), the more so on a loaded machine (CI, with a real model beside it,
    # ended whole three times in a row). Such a try interrupted nothing and is made again, at most six times, each
    # signalled with two episodes still to start; a runner that ignored SIGINT would end whole every time and fail here.
    for attempt in range(6):
        run = tmp_path / f"ctrl-c-{attempt}"
        process = start("run", "--tasks", TASKS, "--endpoint", POLICIES, "--out", str(run), "--concurrency", "2")

        def in_flight(run: Path = run) -> list[str]:
            admitted = {json.loads(line)["episode_id"] for line in (run / EPISODES).read_text().splitlines()} \
                if (run / EPISODES).is_file() else set()
            return [i for i in ids if (run / "episodes" / i / STARTED).is_file() and i not in admitted]

        deadline = time.monotonic() + 240
        # An admission made, an episode in flight and another not yet started: a signal then has work to stop
        # (sent at the last episodes, the runner could finish them all before it acted: exit 0, retried below).
        while not (admitted_lines(run) >= 1 and in_flight() and admitted_lines(run) + len(in_flight()) <= PLANNED - 2):
            assert process.poll() is None and time.monotonic() < deadline, "no episode in flight after an admission"
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=120)
        if process.returncode == 0 and admitted_lines(run) == PLANNED:
            continue
        break
    assert process.returncode == 130, output.decode(errors="replace")
    stopped = RunDirectory.open(run)
    admitted = [r.episode_id for r in stopped.all_records()]
    assert 1 <= len(admitted) < PLANNED
    for episode_id in admitted:
        for name in IDENTICAL:
            assert (run / "episodes" / episode_id / name).read_bytes() == (
                uninterrupted / "episodes" / episode_id / name).read_bytes(), (episode_id, name)
    finish(start("run", "--resume", str(run)))
    assert sorted(r.episode_id for r in RunDirectory.open(run).all_records()) == sorted(ids)
    for episode_id in ids:
        assert (run / "episodes" / episode_id / "verdict.json").read_bytes() == (
            uninterrupted / "episodes" / episode_id / "verdict.json").read_bytes(), episode_id


@pytest.mark.parametrize("loss", ["emptied", "last record cut"])
def test_a_resume_of_a_run_whose_episodes_file_lost_admitted_records_is_refused_and_verify_names_them(
    uninterrupted: Path, tmp_path: Path, loss: str
) -> None:
    run = tmp_path / "lost"
    shutil.copytree(uninterrupted, run)
    whole = (run / EPISODES).read_bytes()
    last = whole.splitlines(keepends=True)[-1]
    # Emptied, or cut inside the last line: what a kill while writing that record would leave, but after the fact.
    (run / EPISODES).write_bytes(b"" if loss == "emptied" else whole[:len(whole) - len(last) // 2])
    lost = sorted(json.loads(line)["episode_id"] for line in (whole.splitlines() if loss == "emptied" else [last]))
    before = {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    result = CliRunner().invoke(app, ["run", "--resume", str(run)])
    said = " ".join(result.output.split())
    assert result.exit_code == 2, said
    assert f"episodes.jsonl no longer holds what was admitted to it ({len(lost)} episodes; first: {lost[0]}" in said
    after = {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert after == before, "nothing was run again, set apart or logged"
    problems = asyncio.run(verify_run(RunDirectory.open(run))).problems
    for episode_id in lost:
        assert (f"{episode_id}: admitted (episodes/{episode_id}/admitted.json), but episodes.jsonl holds no record of "
                "it: the file lost a finished episode after the run") in problems, problems


def test_a_resume_under_a_changed_input_is_refused_naming_the_first_difference(
    uninterrupted: Path, tmp_path: Path
) -> None:
    run = tmp_path / "changed"
    run.mkdir()
    for item in (MANIFEST, EPISODES):
        (run / item).write_bytes((uninterrupted / item).read_bytes())
    manifest = json.loads((run / MANIFEST).read_text())
    manifest["tasks"][1]["sha256"] = "0" * 64
    manifest["versions"]["playwright"] = "0.0.1"
    (run / MANIFEST).write_text(json.dumps(manifest))
    result = subprocess.run([*CLI, "run", "--resume", str(run)], capture_output=True, text=True)
    assert result.returncode == 2
    message = " ".join((result.stderr + result.stdout).split())
    named = f"a manifest input differs: tasks.{manifest['tasks'][1]['id']}.sha256: '{'0' * 64}' recorded"
    assert named in message, message
    assert not (run / RESUMES).exists(), "a refused resume writes nothing"


def test_resume_refuses_other_settings_and_run_needs_out_or_resume(tmp_path: Path) -> None:
    both = subprocess.run([*CLI, "run", "--resume", str(tmp_path), "--endpoint", "scripted:oracle"],
                          capture_output=True, text=True)
    assert both.returncode == 2 and "drop --endpoint" in " ".join((both.stderr + both.stdout).split())
    neither = subprocess.run([*CLI, "run", "--endpoint", "scripted:oracle"], capture_output=True, text=True)
    assert neither.returncode == 2 and "--out DIR" in " ".join((neither.stderr + neither.stdout).split())
    missing = subprocess.run([*CLI, "run", "--resume", str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and "not a run directory" in " ".join((missing.stderr + missing.stdout).split())


def test_first_difference_walks_keys_and_lists_in_order() -> None:
    assert first_difference({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}) is None
    assert first_difference({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 3]}) == "b[1]: 2 recorded, 3 now"
    assert first_difference({"a": {"x": 1}}, {"a": {}}) == "a.x: 1 recorded, '(absent)' now"
    assert first_difference({"a": [1]}, {"a": [1, 2]}) == "a: 1 items recorded, 2 now"


def test_only_the_inputs_of_the_results_are_compared_on_resume(uninterrupted: Path) -> None:
    recorded = RunManifest.model_validate_json((uninterrupted / MANIFEST).read_text())
    later = recorded.model_copy(update={"created_at": "2030-01-01T00:00:00+00:00"})
    assert manifest_difference(recorded, later) is None
    changed = recorded.model_copy(update={"protocol_sha256": {**recorded.protocol_sha256, "tool_schemas": "x"}})
    assert manifest_difference(recorded, changed) == (
        f"protocol_sha256.tool_schemas: {recorded.protocol_sha256['tool_schemas']!r} recorded, 'x' now"
    )
    # A changed task file changes the `tasks` package's code hash too: the task is named, by its id.
    first = recorded.tasks[0]
    edited = recorded.model_copy(update={
        "tasks": [first.model_copy(update={"sha256": "e" * 64}), *recorded.tasks[1:]],
        "code_sha256": {**recorded.code_sha256, "tasks": "f" * 64}})
    named = f"tasks.{first.id}.sha256: {first.sha256!r} recorded, {'e' * 64!r} now"
    assert manifest_difference(recorded, edited) == named


def test_repeat_gives_stable_episode_ids_per_repetition() -> None:
    endpoint = parse_endpoint("scripted:oracle", base_url=None, model=None, api_key_env=None)
    plan = plan_episodes(["helpdesk.solve-ticket@1", "helpdesk.answer-latest-order@1"], endpoint, repeat=2)
    assert [(p.episode_id, p.repetition) for p in plan] == [
        ("001-helpdesk.solve-ticket@1--r1", 1),
        ("002-helpdesk.solve-ticket@1--r2", 2),
        ("003-helpdesk.answer-latest-order@1--r1", 1),
        ("004-helpdesk.answer-latest-order@1--r2", 2),
    ]
    assert plan == plan_episodes(["helpdesk.solve-ticket@1", "helpdesk.answer-latest-order@1"], endpoint, repeat=2)
    assert [p.episode_id for p in plan_episodes(["helpdesk.solve-ticket@1"], endpoint)] == [
        "001-helpdesk.solve-ticket@1"]
    with pytest.raises(ValueError, match="--repeat must be at least 1"):
        plan_episodes(["helpdesk.solve-ticket@1"], endpoint, repeat=0)
