"""`computerops verify`: a sealed run passes; any altered byte of any kind of evidence file fails it, and
forgeries that keep every hash consistent are caught by re-judging and recomputing from raw evidence."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import CHECKSUMS, EPISODES, SUMMARY, VERIFICATION, RunDirectory
from computerops.runs.verification import Verification, reviewer_verified, verify_run
from tasks import load_catalog

# Each runs the CLI in a subprocess with a real Chromium.
pytestmark = pytest.mark.browser
CLI = [sys.executable, "-c", "from computerops.cli.main import main; main()"]
TASKS = "helpdesk.solve-ticket@1,helpdesk.answer-latest-order@1"
EPISODE = "001-helpdesk.solve-ticket@1--oracle"
ORACLE_STEPS = len(load_catalog()["helpdesk.solve-ticket@1"].spec.scripted_control)
"""The steps the oracle episode takes: each of its scripted steps, the last one its done."""
FALSE_FINISH = "002-helpdesk.solve-ticket@1--false-finish"
EPISODE_FILES = ("started.json", "transcript.json", "operations.json", "journal.json", "final_state.json",
                 "verdict.json", "receipt.json", "trace.zip")
RUN_FILES = ("manifest.json", EPISODES, SUMMARY, CHECKSUMS)


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("verify") / "run"
    subprocess.run([*CLI, "run", "--tasks", TASKS, "--endpoint", "scripted:oracle,false-finish", "--trace",
                    "--out", str(run)], check=True, capture_output=True)
    return run


def copy_of(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def verify(run: Path) -> Verification:
    return asyncio.run(verify_run(RunDirectory.open(run)))


def flip_one_byte(path: Path) -> None:
    """Change one digit (or else one letter) in the second half of the file: a one-byte alteration."""
    data = bytearray(path.read_bytes())
    for index in range(len(data) // 2, len(data)):
        char = chr(data[index])
        if not char.isascii():  # a binary file (trace.zip) holds bytes like 0xb5, a letter whose swapcase is not a byte
            continue
        if char.isdigit():
            data[index] = ord(str((int(char) + 1) % 10))
            break
        if char.isalpha():
            data[index] = ord(char.swapcase())
            break
    else:
        raise AssertionError(f"nothing to alter in {path}")
    path.write_bytes(bytes(data))


def reseal_checksums(run: Path) -> None:
    """What a careful forger does after editing: recompute the checksum list over the altered files."""
    bundle = RunDirectory.open(run)
    lines = [f"{hashlib.sha256((run / name).read_bytes()).hexdigest()}  {name}\n" for name in bundle.files()]
    (run / CHECKSUMS).write_text("".join(lines))


def rewrite_record(run: Path, episode_id: str, **changes: object) -> None:
    lines = (run / EPISODES).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for record in records:
        if record["episode_id"] == episode_id:
            record.update(changes)
    (run / EPISODES).write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_sealed_run_verifies_and_reaches_evidence_level_e2_until_a_byte_changes(sealed: Path,
                                                                                   tmp_path: Path) -> None:
    run = copy_of(sealed, tmp_path)
    result = subprocess.run([*CLI, "verify", str(run)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "4 episodes re-judged and replayed PASS" in " ".join(result.stdout.split())
    assert (run / VERIFICATION).is_file() and reviewer_verified(RunDirectory.open(run))
    report = subprocess.run([*CLI, "report", str(run), "--json"], capture_output=True, text=True, check=True)
    assert json.loads(report.stdout)["evidence_level"] == "E2"
    flip_one_byte(run / "episodes" / EPISODE / "journal.json")
    assert not reviewer_verified(RunDirectory.open(run))
    report = subprocess.run([*CLI, "report", str(run), "--json"], capture_output=True, text=True, check=True)
    assert json.loads(report.stdout)["evidence_level"] == "E1"


@pytest.mark.parametrize("name", [*RUN_FILES, *(f"episodes/{EPISODE}/{name}" for name in EPISODE_FILES)])
def test_one_altered_byte_in_any_kind_of_evidence_file_fails_verify_naming_it(
    sealed: Path, tmp_path: Path, name: str
) -> None:
    run = copy_of(sealed, tmp_path)
    flip_one_byte(run / name)
    verification = verify(run)
    assert not verification.passed
    assert verification.first_mismatch is not None
    if name == CHECKSUMS:  # the list itself was altered: a line no longer matches its file, or names none
        assert "differs from the listed" in verification.first_mismatch or CHECKSUMS in verification.first_mismatch
    else:
        assert verification.first_mismatch.startswith(f"{name}: sha256"), verification.problems
    result = CliRunner().invoke(app, ["verify", str(run)])  # in-process: the exit and the words, not the start-up
    assert result.exit_code == 1 and result.stderr.startswith("FAIL: "), result.output
    assert not (run / VERIFICATION).exists()


def test_an_added_file_fails_verify(sealed: Path, tmp_path: Path) -> None:
    run = copy_of(sealed, tmp_path)
    (run / "episodes" / EPISODE / "notes.txt").write_text("added later")
    assert verify(run).problems == [f"episodes/{EPISODE}/notes.txt: present but not in {CHECKSUMS}"]


def test_a_forged_verdict_with_every_hash_updated_is_caught_by_re_judging(sealed: Path, tmp_path: Path) -> None:
    run = copy_of(sealed, tmp_path)
    path = run / "episodes" / FALSE_FINISH / "verdict.json"
    verdict = json.loads(path.read_text())
    assert verdict["outcome"] == "false_completion"
    verdict["outcome"] = "verified_success"
    path.write_text(json.dumps(verdict, indent=2))
    record = next(json.loads(line) for line in (run / EPISODES).read_text().splitlines()
                  if json.loads(line)["episode_id"] == FALSE_FINISH)
    hashes = {**record["evidence_sha256"], "verdict.json": hashlib.sha256(path.read_bytes()).hexdigest()}
    rewrite_record(run, FALSE_FINISH, evidence_sha256=hashes)
    reseal_checksums(run)
    first = verify(run).first_mismatch
    assert first is not None and first.startswith(
        f"{FALSE_FINISH}/verdict.json differs from the verdict re-judged from the evidence: outcome: "
        "'verified_success' recorded, 'false_completion' now"), first


def test_a_forged_record_is_caught_by_recomputing_it_from_the_evidence(sealed: Path, tmp_path: Path) -> None:
    run = copy_of(sealed, tmp_path)
    rewrite_record(run, EPISODE, steps=1)
    reseal_checksums(run)
    first = verify(run).first_mismatch
    expected = f"{EPISODE}: record in episodes.jsonl differs from its evidence: steps: 1 recorded, {ORACLE_STEPS} now"
    assert first == expected, first


def test_a_forged_summary_number_is_caught_by_recomputing_the_summary(sealed: Path, tmp_path: Path) -> None:
    run = copy_of(sealed, tmp_path)
    summary = json.loads((run / SUMMARY).read_text())
    summary["total"]["verified_success"] += 1
    (run / SUMMARY).write_text(json.dumps(summary, indent=2))
    reseal_checksums(run)
    first = verify(run).first_mismatch
    assert first is not None and first.startswith(f"{SUMMARY} differs from the summary recomputed from the evidence: "
                                                   "total.verified_success: 3 recorded, 2 now"), first


def test_verify_of_a_directory_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    result = subprocess.run([*CLI, "verify", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2 and "not a run directory" in result.stderr + result.stdout


def read_only(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Make `root` behave as a read-only file system does (EROFS, even for root): every call that would create,
    write, rename or remove something under it fails."""
    def refuse(path: object) -> None:
        if Path(os.fsdecode(path)).absolute().is_relative_to(root):  # type: ignore[arg-type]
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    real_open, real_os_open = io.open, os.open

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+"):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(io, "open", open_)
    monkeypatch.setattr(os, "open", os_open)
    for name in ("replace", "rename", "unlink", "mkdir", "rmdir"):
        real = getattr(os, name)

        def guarded(path: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            refuse(path)
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, guarded)


def test_verify_of_a_read_only_copy_passes_and_says_that_it_recorded_nothing(
    sealed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = copy_of(sealed, tmp_path)
    before = {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    read_only(monkeypatch, run)
    result = CliRunner().invoke(app, ["verify", str(run)])
    monkeypatch.undo()
    said = " ".join(result.output.split())
    assert result.exit_code == 0, said
    assert "verify PASS" in said and "Not recorded, so this copy's report stays at evidence level E1" in said
    assert f"{run / VERIFICATION} not written (Read-only file system)" in said
    assert {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
