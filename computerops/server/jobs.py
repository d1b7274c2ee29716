"""Runs the server launched: each in a worker process of its own (computerops/server/worker.py) through the same
service functions as the CLI, so a run launched here leaves the same evidence as `computerops run`.

A job is its spec (jobs/<run>.json: what to run), its log (jobs/<run>.log: the worker's progress lines) and, while
this server lives, its process. The run directory stays the record of what happened: a job's status is its
process's (running, or its exit code), a run's is the run directory's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from computerops.core import formats
from computerops.core.execution import LOCAL, ExecutorChoice
from computerops.core.formats import Versioned
from computerops.service.errors import ServiceError
from computerops.service.launch import RunRequest

JobKind = Literal["run", "resume", "experiment", "verify"]


class JobSpec(Versioned):
    """What a worker process runs: read by the worker from jobs/<run>.json."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.job/1"] = formats.JOB
    kind: JobKind
    run_id: str
    runs: str
    """The runs folder (absolute): the run is written to runs/run_id."""
    request: RunRequest | None = None
    """A new run's settings (kind run)."""
    lock: str | None = None
    """The experiment lock's path (kind experiment)."""
    concurrency: int = Field(default=1, ge=1, le=16)
    trace: bool = False
    executor: ExecutorChoice = LOCAL
    """How the worker carries the run out (kinds run, resume, experiment)."""


class JobState(BaseModel):
    """A job as the API shows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    kind: JobKind
    state: Literal["running", "exited", "cancelled"]
    exit_code: int | None
    started: float
    log_tail: list[str]



def interruptible() -> None:
    """In a child before it runs (`preexec_fn`): SIGINT at its default and unblocked, as a terminal's foreground job
    has it. Python turns SIGINT into an interruption (`asyncio.run` into a cancellation) only when the process starts
    with SIGINT at its default, and a process started where SIGINT is ignored (a script's `&` job, a test worker)
    hands that on: a job's `cancel` (SIGINT first) and a Ctrl-C test's signal would then be ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

@dataclass
class _Job:
    spec: JobSpec
    process: subprocess.Popen[bytes]
    log: Path
    started: float = field(default_factory=time.time)
    cancelled: bool = False


class Jobs:
    """The worker processes of this server, by run id; at most one live job per run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()

    def start(self, spec: JobSpec) -> JobState:
        """Write the spec and start its worker; ServiceError (conflict) while a job of that run is alive."""
        with self._lock:
            current = self._jobs.get(spec.run_id)
            if current is not None and current.process.poll() is None:
                raise ServiceError(f"run {spec.run_id} is already running (job started "
                                   f"{time.strftime('%H:%M:%S', time.localtime(current.started))})", "conflict")
            self.folder.mkdir(parents=True, exist_ok=True)
            spec_path = self.folder / f"{spec.run_id}.json"
            spec_path.write_text(spec.model_dump_json(indent=2), encoding="utf-8")
            log = self.folder / f"{spec.run_id}.log"
            with log.open("ab") as handle:
                process = subprocess.Popen(
                    [sys.executable, "-m", "computerops.server.worker", str(spec_path)], stdout=handle,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=interruptible)
            self._jobs[spec.run_id] = _Job(spec=spec, process=process, log=log)
            return self._state(self._jobs[spec.run_id])

    def state(self, run_id: str) -> JobState | None:
        with self._lock:
            job = self._jobs.get(run_id)
            return None if job is None else self._state(job)

    def running(self, run_id: str) -> bool:
        with self._lock:
            job = self._jobs.get(run_id)
            return job is not None and job.process.poll() is None

    def cancel(self, run_id: str, grace_s: float = 20.0) -> JobState:
        """Interrupt a live job as Ctrl-C would (its run stays resumable), killing its process group after
        `grace_s`."""
        with self._lock:
            job = self._jobs.get(run_id)
            if job is None or job.process.poll() is not None:
                raise ServiceError(f"run {run_id} has no live job of this server to cancel", "conflict")
            job.cancelled = True
            # The worker alone, as Ctrl-C would reach a Python process: its browser and endpoint children are its to
            # close (signalled too, Chromium would die under episodes in flight and they would end as
            # infrastructure failures).
            job.process.send_signal(signal.SIGINT)
        try:
            job.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(job.process.pid, signal.SIGKILL)
            job.process.wait()
        with self._lock:
            return self._state(job)

    def close(self) -> None:
        """Interrupt every live job (the server is stopping); each run stays resumable."""
        with self._lock:
            live = [job for job in self._jobs.values() if job.process.poll() is None]
        for job in live:
            self.cancel(job.spec.run_id, grace_s=10.0)

    def _state(self, job: _Job) -> JobState:
        code = job.process.poll()
        state: Literal["running", "exited", "cancelled"] = (
            "running" if code is None else "cancelled" if job.cancelled else "exited")
        return JobState(run_id=job.spec.run_id, kind=job.spec.kind, state=state, exit_code=code, started=job.started,
                        log_tail=_tail(job.log))


def _tail(path: Path, lines: int = 20) -> list[str]:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]
