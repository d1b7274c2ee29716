"""One writer per run directory: while a process holds a run's writer lock, `run --resume` and `verify` refuse
with one line, nothing is written; once that process is killed (SIGKILL: no clean-up), the lock is free again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import WRITER_LOCK, RunLocked, writer_lock

HOLD = """
import sys, time
from pathlib import Path
from computerops.runs.bundle import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def hold_lock(root: Path) -> subprocess.Popen[str]:
    """Another process that takes the run's writer lock and keeps it until killed."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def kill(holder: subprocess.Popen[str]) -> None:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)


def test_the_lock_is_exclusive_across_processes_and_freed_when_its_holder_is_killed(tmp_path: Path) -> None:
    root = tmp_path / "run"
    holder = hold_lock(root)
    try:
        with pytest.raises(RunLocked, match=f"being written by process {holder.pid}"), writer_lock(root):
            pass
    finally:
        kill(holder)
    with writer_lock(root):
        assert (root / WRITER_LOCK).is_file()
    fresh = tmp_path / "fresh"
    with writer_lock(fresh):
        assert fresh.is_dir()
    assert not fresh.exists(), "a lock taken for a new run that wrote nothing leaves nothing behind"


@pytest.mark.browser
def test_resume_and_verify_refuse_a_run_another_process_writes(tmp_path: Path) -> None:
    cli = CliRunner()
    out = tmp_path / "run"
    made = cli.invoke(app, ["run", "--tasks", "helpdesk.solve-ticket@1", "--endpoint", "scripted:noop",
                            "--out", str(out)])
    assert made.exit_code == 0, made.output
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    holder = hold_lock(out)
    try:
        for command in (["run", "--resume", str(out)], ["verify", str(out)]):
            refused = cli.invoke(app, command)
            assert refused.exit_code != 0 and f"being written by process {holder.pid}" in refused.output, command
        assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before, "nothing was written"
    finally:
        kill(holder)
    verified = cli.invoke(app, ["verify", str(out)])
    assert verified.exit_code == 0 and "verify PASS" in verified.output, verified.output
