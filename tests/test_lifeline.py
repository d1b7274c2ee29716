"""A child on a lifeline ends with its parent, however the parent ends, and takes the process group it leads along
(computerops/core/lifeline.py; issue 47: a long-running episode's harness outlived a SIGKILL of its run)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from computerops.core.lifeline import LIFELINE_VARIABLE, Lifeline, hold_lifeline

# The child: holds the lifeline where told to, starts a grandchild in its group, says both pids, then waits.
CHILD = textwrap.dedent("""
    import subprocess, sys, time
    from computerops.core.lifeline import hold_lifeline
    if sys.argv[1] == "hold":
        hold_lifeline()
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print(grandchild.pid, flush=True)
    time.sleep(300)
""")
# The parent: starts the child in a session of its own on a lifeline (or none), says the child's pid, then waits
# (or lets the child go, then waits).
PARENT = textwrap.dedent("""
    import subprocess, sys, time
    from computerops.core.lifeline import Lifeline
    lifeline = Lifeline()
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, text=True,
                             start_new_session=True, pass_fds=lifeline.pass_fds, env={**__import__("os").environ,
                             **(lifeline.env() if sys.argv[2] == "hold" else {})})
    lifeline.started()
    grandchild = child.stdout.readline().strip()
    print(child.pid, grandchild, flush=True)
    if sys.argv[3] == "release":
        lifeline.release()
    time.sleep(300)
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; its parent has not reaped it yet


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _family(hold: str, then: str) -> tuple[subprocess.Popen[str], int, int]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, hold, then], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    assert parent.stdout is not None
    child, grandchild = (int(pid) for pid in parent.stdout.readline().split())
    return parent, child, grandchild


def _reap(*pids: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_a_child_on_a_lifeline_and_its_group_end_when_the_parent_is_sigkilled() -> None:
    parent, child, grandchild = _family("hold", "wait")
    try:
        assert _alive(child) and _alive(grandchild)
        parent.kill()  # SIGKILL: no cleanup of the parent's runs
        parent.wait()
        assert _gone_within([child, grandchild], 10), "the child or its grandchild outlived the parent"
    finally:
        _reap(child)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_a_released_lifeline_ends_the_child_while_the_parent_lives_on() -> None:
    parent, child, grandchild = _family("hold", "release")
    try:
        assert _gone_within([child, grandchild], 10)
        assert parent.poll() is None
    finally:
        parent.kill()
        parent.wait()
        _reap(child)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_without_the_lifeline_the_child_outlives_its_parent() -> None:
    """The control: a child in a session of its own, not holding the lifeline, survives the SIGKILL (what the
    harness did before), so the first test's ending is the lifeline's doing."""
    parent, child, grandchild = _family("ignore", "wait")
    try:
        parent.kill()
        parent.wait()
        assert not _gone_within([child, grandchild], 1.5)
    finally:
        _reap(child)


def test_no_lifeline_passed_is_nothing_to_hold_and_a_closed_descriptor_is_refused() -> None:
    assert hold_lifeline({}) is False
    lifeline = Lifeline()
    [fd] = lifeline.pass_fds
    lifeline.release()
    lifeline.release()  # twice is once
    with pytest.raises(OSError):
        hold_lifeline({LIFELINE_VARIABLE: str(fd)})


def test_releasing_a_lifeline_never_closes_a_descriptor_its_number_now_names() -> None:
    """`started()` closes this process's read end; a file opened after may get that number; `release()` must not
    close it (it closed another episode's lifeline or a socket of the run, and a long-running run hung)."""
    lifeline = Lifeline()
    [handed] = lifeline.pass_fds
    lifeline.started()
    other_read, other_write = os.pipe()  # the lowest free numbers: the read end's number among them
    try:
        assert handed in (other_read, other_write)
        lifeline.release()
        os.fstat(other_read)
        os.fstat(other_write)  # both still open
    finally:
        os.close(other_read)
        os.close(other_write)
    with pytest.raises(RuntimeError, match="handed over"):
        _ = lifeline.pass_fds
