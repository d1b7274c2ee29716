"""The reaper of a driver's local Ray instance (computerops/runs/ray_reaper.py) ends the processes that name the
session, with their descendants, and nothing else, when the driver's lifeline is cut (issue 47: the runtime-env
agent outlived a driver's SIGKILL). Processes stand in for Ray's here; tests/test_ray_executor.py kills a real
driver."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from computerops.runs.ray_reaper import main, reap, session_processes

SESSION = "session_2026-12-06_00-00-00_000000_4242"
# A stand-in for a Ray process: its command line names the session; it starts a child that does not (a Chromium).
RAY_LIKE = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print(child.pid, flush=True)
    time.sleep(300)
""")


def _ray_like(session: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, "-c", RAY_LIKE, f"--session-name={session}"], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


# A stand-in for a renamed Ray process (`ray::RuntimeEnvAgent`): its command line does not name the session; its
# output goes to a log file under the session's directory.
RENAMED = textwrap.dedent("""
    import sys, time
    log = open(sys.argv[1], "a")
    print("ready", flush=True)
    time.sleep(300)
""")


def _renamed(logs: Path) -> subprocess.Popen[str]:
    logs.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-c", RENAMED, str(logs / "runtime_env_agent.log")],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def _gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_reap_ends_the_sessions_processes_and_their_descendants_only(tmp_path: Path) -> None:
    ours, child = _ray_like(SESSION)
    agent = _renamed(tmp_path / "ray" / SESSION / "logs")
    other, other_child = _ray_like(SESSION.replace("4242", "4243"))  # another session, another instance
    other_agent = _renamed(tmp_path / "ray" / SESSION.replace("4242", "4243") / "logs")
    try:
        assert {p.pid for p in session_processes(SESSION, besides=set())} == {ours.pid, child, agent.pid}
        assert reap(SESSION, besides=set()) == 3
        ours.wait(timeout=10)
        agent.wait(timeout=10)
        assert _gone([child], 10)
        assert other.poll() is None and other_agent.poll() is None and psutil.Process(other_child).is_running()
        assert reap(SESSION, besides=set()) == 0  # nothing left: a second reap ends nothing
    finally:
        for process in (ours, other, agent, other_agent):
            process.kill()
            process.wait()
        for pid in (child, other_child):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def test_the_reaper_waits_for_its_lifeline_and_refuses_to_run_without_one() -> None:
    assert main(["not-a-session", "1"]) == 2 and main([SESSION]) == 2
    assert main([SESSION, "1"]) == 2  # no COMPUTEROPS_LIFELINE_FD: it would wait for nothing
    # A driver stand-in starts the reaper on a lifeline, then is SIGKILLed: the reaper ends the session and exits.
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess, sys, time
        from computerops.core.lifeline import Lifeline
        lifeline = Lifeline()
        reaper = subprocess.Popen([sys.executable, "-m", "computerops.runs.ray_reaper", {SESSION!r},
                                   str(os.getpid())],
                                  start_new_session=True, pass_fds=lifeline.pass_fds, env={{**os.environ,
                                  **lifeline.env()}})
        lifeline.started()
        print(reaper.pid, flush=True)
        time.sleep(300)
    """)], stdout=subprocess.PIPE, text=True)
    ours, child = _ray_like(SESSION)
    try:
        assert driver.stdout is not None
        reaper = int(driver.stdout.readline())
        time.sleep(0.5)
        assert ours.poll() is None  # the lifeline holds: nothing ended yet
        driver.kill()
        driver.wait()
        ours.wait(timeout=15)
        assert _gone([child, reaper], 15)
    finally:
        ours.kill()
        ours.wait()
        with contextlib.suppress(psutil.Error):
            psutil.Process(child).kill()


def test_a_driver_that_lets_its_reaper_go_is_never_ended_by_it(tmp_path: Path) -> None:
    """After a clean `ray.shutdown()` the driver still holds the session's driver log open: the reaper, let go,
    ends the rest of the session but never its driver (a test's pytest process is a driver)."""
    logs = tmp_path / "ray" / SESSION / "logs"
    logs.mkdir(parents=True)
    driver = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess, sys
        from computerops.core.lifeline import Lifeline
        held = open({str(logs / "python-core-driver.log")!r}, "a")
        lifeline = Lifeline()
        reaper = subprocess.Popen([sys.executable, "-m", "computerops.runs.ray_reaper", {SESSION!r},
                                   str(os.getpid())], start_new_session=True, pass_fds=lifeline.pass_fds,
                                  env={{**os.environ, **lifeline.env()}})
        lifeline.started()
        lifeline.release()
        print("reaper exit", reaper.wait(timeout=30), flush=True)
    """)], capture_output=True, text=True, timeout=60)
    assert driver.returncode == 0 and driver.stdout.strip() == "reaper exit 0", (driver.stdout, driver.stderr)
