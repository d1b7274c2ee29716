"""Runs the server launched: each in a worker process of its own (computerops/server/worker.py) through the same
service functions as the CLI, so a run launched here leaves the same evidence as `computerops run`.

A job is its spec (jobs/<run>.json: what to run), its log (jobs/<run>.log: the worker's progress lines) and its
process (jobs/processes/<run>.json: the worker's pid and start time). The run directory stays the record of what
happened: a job's status is its process's (running, or its exit code), a run's is the run directory's.

Workers run in sessions of their own, so a server that stops without ending them (killed, or crashed) leaves them
running: the next server started on the same runs folder adopts every worker still alive (the same pid AND start
time: a pid the kernel has since given to another process is not adopted), so it shows that job as running, refuses
a second job of the run, and cancels it as its own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from computerops.core import formats
from computerops.core.durable import write_durably
from computerops.core.execution import LOCAL, ExecutorChoice
from computerops.core.formats import Versioned
from computerops.server.settings import TOKEN_VARIABLE
from computerops.service.errors import ServiceError
from computerops.service.launch import RunRequest

JobKind = Literal["run", "resume", "experiment", "verify"]


def worker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a job's worker starts with: the server's, less the server's own token (a worker never needs
    it, so no run a worker carries out, planned from a request, a manifest or a lock, can send it anywhere)."""
    return {name: value for name, value in environ.items() if name != TOKEN_VARIABLE}


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


class JobProcess(Versioned):
    """Which process is a job's worker: written when it starts (jobs/processes/<run>.json), read by a server started
    later on the same runs folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.job_process/1"] = formats.JOB_PROCESS
    run_id: str
    pid: int
    created: float
    """The process's start time (seconds since the epoch, as the kernel keeps it): with the pid, one process ever."""
    started: float
    """When the server started the job (its wall clock)."""


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

class _Adopted:
    """A worker a server before this one started: not this process's child, so signalled and waited on through
    psutil (which checks the start time too), its exit code unknown (only a parent learns it)."""

    def __init__(self, process: psutil.Process) -> None:
        self._process = process
        self.pid = process.pid

    def poll(self) -> int | None:
        """None while it runs; once it has ended, -1 (its code went to its parent, the server before this one)."""
        with contextlib.suppress(psutil.Error):
            if self._process.is_running() and self._process.status() != psutil.STATUS_ZOMBIE:
                return None
        return -1

    def send_signal(self, sig: int) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            self._process.send_signal(sig)

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            self._process.wait(timeout)
        except psutil.TimeoutExpired:
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0) from None
        except psutil.NoSuchProcess:
            pass
        return self.poll()


@dataclass
class _Job:
    spec: JobSpec
    process: subprocess.Popen[bytes] | _Adopted
    log: Path
    started: float = field(default_factory=time.time)
    cancelled: bool = False

    def exit_code(self) -> int | None:
        """Its worker's exit code once ended (None while it runs, and for an adopted worker: unknown)."""
        code = self.process.poll()
        return None if isinstance(self.process, _Adopted) else code


class Jobs:
    """The worker processes of this server, by run id; at most one live job per run."""

    worker: tuple[str, ...] = (sys.executable, "-m", "computerops.server.worker")
    """The worker's command; the spec's path is its last argument."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()

    @property
    def processes(self) -> Path:
        return self.folder / "processes"

    def adopt(self) -> list[str]:
        """Take on the workers a server before this one started and left running (its process files whose process
        is alive: the same pid and start time); the run ids adopted. A process file of a worker that has ended is
        removed."""
        adopted: list[str] = []
        for path in sorted(self.processes.glob("*.json")):
            try:
                known = JobProcess.model_validate_json(path.read_text(encoding="utf-8"))
                spec = JobSpec.model_validate_json((self.folder / f"{known.run_id}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError, ValidationError):
                continue  # not a job this server can read: left as it is
            process = _alive(known)
            if process is None:
                path.unlink(missing_ok=True)
                continue
            with self._lock:
                if known.run_id not in self._jobs:
                    self._jobs[known.run_id] = _Job(spec=spec, process=_Adopted(process),
                                                    log=self.folder / f"{known.run_id}.log", started=known.started)
                    adopted.append(known.run_id)
        return adopted

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
                    [*self.worker, str(spec_path)], stdout=handle,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    env={**worker_environment(os.environ), "PYTHONUNBUFFERED": "1"}, preexec_fn=interruptible)
            job = self._jobs[spec.run_id] = _Job(spec=spec, process=process, log=log)
            self._write_process(job)
            return self._state(job)

    def _write_process(self, job: _Job) -> None:
        """The worker's process file; a worker already gone has none (nothing to adopt)."""
        try:
            created = psutil.Process(job.process.pid).create_time()
        except psutil.Error:
            return
        self.processes.mkdir(parents=True, exist_ok=True)
        known = JobProcess(run_id=job.spec.run_id, pid=job.process.pid, created=created, started=job.started)
        write_durably(self.processes / f"{job.spec.run_id}.json", known.model_dump_json(indent=2))

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
        running = job.process.poll() is None
        state: Literal["running", "exited", "cancelled"] = (
            "running" if running else "cancelled" if job.cancelled else "exited")
        return JobState(run_id=job.spec.run_id, kind=job.spec.kind, state=state, exit_code=job.exit_code(),
                        started=job.started, log_tail=_tail(job.log))


def _alive(known: JobProcess) -> psutil.Process | None:
    """The process `known` names if it still runs: the same pid and the same start time."""
    try:
        process = psutil.Process(known.pid)
        if abs(process.create_time() - known.created) > 0.01 or process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return process


def _tail(path: Path, lines: int = 20) -> list[str]:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]
