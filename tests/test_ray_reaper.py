"""The reaper of a driver's local Ray instance (computerops/runs/ray_reaper.py) ends the processes that name the
session, with their descendants, and nothing else, when the driver's lifeline is cut (issue 47: the runtime-env
agent outlived a driver's SIGKILL). Processes stand in for Ray's here (a program under a stand-in Ray package, or a
process renamed `ray::...`); tests/test_ray_executor.py kills a real driver."""

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
# A stand-in for a Ray process: a program of the Ray package whose command line names the session; it starts a child
# that does not (a Chromium).
RAY_LIKE = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print(child.pid, flush=True)
    time.sleep(300)
""")


def _ray_like(session: str, package: Path) -> tuple[subprocess.Popen[str], int]:
    package.mkdir(parents=True, exist_ok=True)
    program = package / "log_monitor.py"
    program.write_text(RAY_LIKE, encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(program), f"--session-name={session}"], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


# A process holding a file of the session's directory open: as Ray's renamed agent (`ray::RuntimeEnvAgent`: its
# command line names neither the session nor the package; its output goes to the session's logs), or as an
# operator's `tail -f` of that log (not Ray's).
HOLDING = textwrap.dedent("""
    import sys, time
    log = open(sys.argv[1], "a")
    print("ready", flush=True)
    time.sleep(300)
""")


def _holding(logs: Path, *, name: str) -> subprocess.Popen[str]:
    logs.mkdir(parents=True, exist_ok=True)
    # `exec -a`: the process's argv[0] is `name`, as Ray's setproctitle leaves `ray::RuntimeEnvAgent`.
    process = subprocess.Popen(["bash", "-c", 'exec -a "$0" "$@"', name, sys.executable, "-c", HOLDING,
                                str(logs / "runtime_env_agent.log")], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def _renamed(logs: Path) -> subprocess.Popen[str]:
    return _holding(logs, name="ray::RuntimeEnvAgent")


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


def test_reap_ends_the_sessions_ray_processes_and_their_descendants_only(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "ray"
    ours, child = _ray_like(SESSION, package)
    logs = tmp_path / "ray" / SESSION / "logs"
    agent = _renamed(logs)
    other, other_child = _ray_like(SESSION.replace("4242", "4243"), package)  # another session, another instance
    other_agent = _renamed(tmp_path / "ray" / SESSION.replace("4242", "4243") / "logs")
    # Not Ray's, though they name the session or hold its log open: an operator's `tail -f` of the agent's log, a
    # pager whose command line names the session's directory, a program of another package beside Ray's.
    tail = _holding(logs, name="tail")
    pager = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", str(logs / "raylet.out")])
    beside, beside_child = _ray_like(SESSION, tmp_path / "site-packages" / "ray_tools")
    bystanders = (tail, pager, beside)
    try:
        assert {p.pid for p in session_processes(SESSION, besides=set(), ray_package=package)} == {
            ours.pid, child, agent.pid}
        assert reap(SESSION, besides=set(), ray_package=package) == 3
        ours.wait(timeout=10)
        agent.wait(timeout=10)
        assert _gone([child], 10)
        assert other.poll() is None and other_agent.poll() is None and psutil.Process(other_child).is_running()
        assert all(process.poll() is None for process in bystanders), "a process that is not Ray's was ended"
        assert reap(SESSION, besides=set(), ray_package=package) == 0  # nothing left: a second reap ends nothing
    finally:
        for process in (ours, other, agent, other_agent, *bystanders):
            process.kill()
            process.wait()
        for pid in (child, other_child, beside_child):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def test_the_reaper_waits_for_its_lifeline_and_refuses_to_run_without_one(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "ray"
    package.mkdir(parents=True)
    assert main(["not-a-session", "1", str(package)]) == 2 and main([SESSION, "1"]) == 2
    assert main([SESSION, "1", str(tmp_path / "absent")]) == 2
    assert main([SESSION, "1", str(package)]) == 2  # no COMPUTEROPS_LIFELINE_FD: it would wait for nothing
    # A driver stand-in starts the reaper on a lifeline, then is SIGKILLed: the reaper ends the session and exits.
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess, sys, time
        from computerops.core.lifeline import Lifeline
        lifeline = Lifeline()
        reaper = subprocess.Popen([sys.executable, "-m", "computerops.runs.ray_reaper", {SESSION!r},
                                   str(os.getpid()), {str(package)!r}],
                                  start_new_session=True, pass_fds=lifeline.pass_fds, env={{**os.environ,
                                  **lifeline.env()}})
        lifeline.started()
        print(reaper.pid, flush=True)
        time.sleep(300)
    """)], stdout=subprocess.PIPE, text=True)
    ours, child = _ray_like(SESSION, package)
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
    ends the rest of the session but never its driver (a test's pytest process is a driver). The driver here runs a
    program of the stand-in Ray package, so only its exemption keeps it alive."""
    logs = tmp_path / "ray" / SESSION / "logs"
    logs.mkdir(parents=True)
    package = tmp_path / "site-packages" / "ray"
    package.mkdir(parents=True)
    program = package / "driver.py"
    program.write_text(textwrap.dedent(f"""
        import os, subprocess, sys
        from computerops.core.lifeline import Lifeline
        held = open({str(logs / "python-core-driver.log")!r}, "a")
        lifeline = Lifeline()
        reaper = subprocess.Popen([sys.executable, "-m", "computerops.runs.ray_reaper", {SESSION!r},
                                   str(os.getpid()), {str(package)!r}], start_new_session=True,
                                  pass_fds=lifeline.pass_fds, env={{**os.environ, **lifeline.env()}})
        lifeline.started()
        lifeline.release()
        print("reaper exit", reaper.wait(timeout=30), flush=True)
    """), encoding="utf-8")
    driver = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).parent.parent)
    assert driver.returncode == 0 and driver.stdout.strip() == "reaper exit 0", (driver.stdout, driver.stderr)
