"""A server that stops without ending its workers (killed, crashed) leaves them running in their own sessions: the
next server on the same runs folder adopts the live ones and recalls the runs launched before their manifest
(computerops/server/jobs.py, computerops/server/state.py). Stand-in workers here (a process that waits for SIGINT);
tests/test_server_api.py launches real ones."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from fastapi.testclient import TestClient

from computerops.server.api import _placeholder
from computerops.server.app import create_server_app
from computerops.server.jobs import JobProcess, JobSpec
from computerops.server.settings import ServerSettings
from computerops.server.state import ServerState

STAND_IN = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    print("worker ready", flush=True)
    time.sleep(300)
""")
"""A worker that has not written its run's manifest yet (it never will): it ends on SIGINT, as a run does."""


@pytest.fixture
def settings(tmp_path: Path) -> ServerSettings:
    return ServerSettings(runs=tmp_path / "runs")


def _launch(state: ServerState, run_id: str) -> int:
    """As the launch route does: the worker started on its spec, the run remembered as launched; the worker's pid."""
    state.jobs.worker = (sys.executable, "-c", STAND_IN)
    job = state.jobs.start(JobSpec(kind="verify", run_id=run_id, runs=str(state.settings.runs.resolve())))
    state.launched(_placeholder(run_id, 3, None))
    log = state.settings.jobs / f"{run_id}.log"
    deadline = time.monotonic() + 30
    while "worker ready" not in (log.read_text() if log.is_file() else ""):
        assert time.monotonic() < deadline, "the stand-in worker did not start"
        time.sleep(0.05)
    assert job.state == "running"
    pid = JobProcess.model_validate_json((state.settings.jobs / "processes" / f"{run_id}.json").read_text()).pid
    return pid


def _crash(state: ServerState) -> None:
    """The server ends without ending its jobs (as a SIGKILL would leave them): only its index is closed."""
    state.index.close()


@contextlib.contextmanager
def _killed_after(pid: int) -> Iterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def _restarted(settings: ServerSettings) -> Iterator[ServerState]:
    """The next server started on the same runs folder, closed afterwards."""
    second = ServerState.start(settings)
    try:
        yield second
    finally:
        second.close()


def _ended(pid: int, within: float = 20) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_restarted_server_adopts_a_live_worker_refuses_a_second_job_of_its_run_and_cancels_it(
        settings: ServerSettings) -> None:
    first = ServerState.start(settings)
    pid = _launch(first, "launched")
    with _killed_after(pid):
        _crash(first)
        with _restarted(settings) as second, TestClient(create_server_app(settings, second)) as client:
            detail = client.get("/api/runs/launched")
            assert detail.status_code == 200, detail.text  # not a 404: the launch is recalled
            assert detail.json()["run"]["status"] in ("starting", "running")  # its manifest may be written by now
            assert detail.json()["run"]["planned"] == 3
            assert detail.json()["job"]["state"] == "running"
            assert [r["run_id"] for r in client.get("/api/runs").json()] == ["launched"]
            again = client.post("/api/runs", json={"run_id": "launched", "tasks": "helpdesk.solve-ticket@1",
                                                   "endpoint": "scripted:oracle"})
            assert again.status_code == 409, again.text  # never two workers writing one run
            cancelled = client.post("/api/runs/launched/cancel")
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json()["state"] == "cancelled" and _ended(pid)
            after = client.get("/api/runs/launched").json()["run"]
            assert after["status"] == "incomplete" and "was cancelled" in after["problem"]


def test_a_worker_that_ended_while_no_server_ran_is_not_adopted_and_its_run_says_so(
        settings: ServerSettings) -> None:
    first = ServerState.start(settings)
    pid = _launch(first, "gone")
    os.killpg(pid, signal.SIGKILL)
    assert _ended(pid)
    _crash(first)
    with _restarted(settings) as second:
        assert not second.jobs.running("gone") and second.jobs.state("gone") is None
        run = second.indexed("gone")
        assert run.status == "incomplete" and run.problem is not None and "is gone" in run.problem
        assert not (settings.jobs / "processes" / "gone.json").exists()  # nothing left to adopt


def test_a_pid_given_to_another_process_since_is_not_adopted(settings: ServerSettings) -> None:
    first = ServerState.start(settings)
    pid = _launch(first, "reused")
    with _killed_after(pid):
        _crash(first)
        record = settings.jobs / "processes" / "reused.json"
        known = JobProcess.model_validate_json(record.read_text())
        # The same pid, another start time: the process the file names is not this one.
        record.write_text(known.model_copy(update={"created": known.created - 3600}).model_dump_json())
        with _restarted(settings) as second:
            assert not second.jobs.running("reused")
            assert psutil.Process(pid).is_running()  # and never signalled


def test_a_recalled_launch_whose_run_was_written_since_is_forgotten(settings: ServerSettings) -> None:
    first = ServerState.start(settings)
    pid = _launch(first, "written")
    with _killed_after(pid):
        _crash(first)
        (settings.runs / "written").mkdir(parents=True)
        (settings.runs / "written" / "manifest.json").write_text("{}")  # the worker wrote it meanwhile
        with _restarted(settings) as second:
            assert "written" not in second._launched
            assert not (settings.jobs / "launched" / "written.json").exists()
