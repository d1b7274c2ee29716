"""The run's side of a long-running episode: the agent's harness runs in a child process (computerops/persistence/
agent.py) against the tenant this process serves; this process starts it, kills it where the arm says, resumes it
from its checkpoint in a new process, and logs each process's life (`persistence.json` in the episode's evidence).

The `interrupted` arm's kill is exact: the operation log calls the tenant's commit hook after a request's changes are
committed and logged and before its response goes out, and the hook SIGKILLs the harness's whole process group (the
harness, its Playwright driver and its Chromium) when that request inserted a row into one of the site's effect
tables. The agent never sees that result; a new process carries on from the checkpoint written before the action.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapter.actions import FinishSchema
from adapter.transcript import AgentTranscript, Bounds
from computerops.core.formats import Versioned
from computerops.core.lifeline import Lifeline
from computerops.persistence.agent import API_KEY_VARIABLE, CHECKPOINT_KEY_VARIABLE, REFUSED_EXIT, AgentLaunch
from computerops.persistence.arms import Persistence
from computerops.persistence.checkpoint import Constraints, ResumeManifest, latest_checkpoint
from computerops.runs.provenance import code_hashes, protocol_hashes
from computerops.studies.base import StudyFailed
from sites.kit.ledgers import effects_committed_by
from sites.kit.records import Operation
from sites.kit.tenancy import Tenant
from tasks import LoadedTask

PERSISTENCE_FORMAT: Literal["computerops.persistence/1"] = "computerops.persistence/1"
PERSISTENCE_LOG = "persistence.json"
CHECKPOINTS = "checkpoints"
"""The episode's checkpoint directory (episodes/<id>/checkpoints/NNN.json)."""
AGENT_LAUNCHES = 2
"""Harness processes an episode may use: the first, and one resume (each arm interrupts at most once)."""


PROCESS_SLACK_S = 120.0
"""How long past its episode's wall clock a harness process may run (start-up, browser launch, writing its
transcript) before the run kills it as hung."""
TIMED_OUT = -1000
"""The status `_run_process` gives a harness process it killed as hung."""


class HarnessProcess(BaseModel):
    """One harness process of an episode, as the run saw it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    resumed_from: int | None
    """The checkpoint it carried on from (None: it started the episode)."""
    exit_status: int | None
    """Its exit status; None when a signal ended it."""
    signal: str | None
    killed_by_run: bool
    """The run killed it, as its arm says (never counted as a failure)."""
    wall_s: float
    refusal: str | None = None
    """Why it refused to resume (a tampered checkpoint, another manifest)."""


class PersistenceLog(Versioned):
    """How a long-running episode's harness lived: its arm, its policies and each of its processes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.persistence/1"] = PERSISTENCE_FORMAT
    persistence: Persistence
    processes: list[HarnessProcess] = Field(default_factory=list)


def task_constraints(task: LoadedTask) -> Constraints:
    """The constraints ledger of a task: its grants and the only changes it allows."""
    return Constraints(grants=list(task.spec.grants), allowed_mutations=list(task.spec.allowed_mutations))


def resume_manifest(run_id: str, episode_id: str, task: LoadedTask, model: str,
                    persistence: Persistence) -> ResumeManifest:
    """The manifest every harness process of an episode runs under."""
    return ResumeManifest(run_id=run_id, episode_id=episode_id, task_sha256=task.sha256, model=model,
                          protocol_sha256=protocol_hashes(), code_sha256=code_hashes(),
                          policies={"recovery": persistence.recovery, "compaction": persistence.compaction,
                                    "checkpoint_every": str(persistence.checkpoint_every)})


def _kill_on_effect(tenant: Tenant, pid: Callable[[], int | None], killed: list[bool]) -> Callable[[Operation], None]:
    """The commit hook of the `interrupted` arm: SIGKILL the harness's process group once, when a request commits
    a row of an effect table (before its response goes out)."""
    source = tenant.definition.ledgers
    assert source is not None

    def hook(operation: Operation) -> None:
        target = pid()
        if killed[0] or target is None:
            return
        with tenant.engine.connect() as connection:
            if not effects_committed_by(connection, operation.seq, source):
                return
        killed[0] = True
        os.killpg(target, signal.SIGKILL)

    return hook


async def _run_process(launch: AgentLaunch, directory: Path, api_key: str, key: bytes,
                       started: Callable[[int], None]) -> tuple[int, str]:
    """Start one harness process in a session (process group) of its own, on this process's lifeline (it ends when
    this process ends, however), and wait for it: its return code (minus the signal's number when a signal ended it)
    and the tail of what it wrote to stderr."""
    path = directory / f"launch-{launch.process}.json"
    path.write_text(launch.model_dump_json(), encoding="utf-8")
    lifeline = Lifeline()  # a SIGKILL of this process ends the harness too: it never writes beside a resume
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "computerops.persistence.agent", str(path),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, start_new_session=True,
            pass_fds=lifeline.pass_fds,
            env={**os.environ, API_KEY_VARIABLE: api_key, CHECKPOINT_KEY_VARIABLE: key.hex(), **lifeline.env()})
    except BaseException:
        lifeline.release()
        raise
    lifeline.started()
    started(process.pid)
    limit = launch.bounds.wall_clock_s + PROCESS_SLACK_S
    try:
        _, err = await asyncio.wait_for(process.communicate(), timeout=limit)
    except TimeoutError:
        return TIMED_OUT, f"the harness process ran past its episode's wall clock and {PROCESS_SLACK_S:.0f} s more"
    finally:  # also when the run is cancelled: whatever the harness left behind (its browser) goes with it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        lifeline.release()
    return int(process.returncode or 0), err.decode("utf-8", errors="replace")[-2000:]


class HarnessFailed(StudyFailed):
    """A harness process ended in a way its arm does not explain (a crash, a refused resume)."""

    def __init__(self, cause: str, detail: str, log: PersistenceLog) -> None:
        super().__init__(cause, detail)
        self.log = log


async def drive_persistent(
    *, evidence: Path, run_id: str, episode_id: str, task: LoadedTask, tenant: Tenant, origin: str, base_url: str,
    api_key: str, model: str, bounds: Bounds, finish: FinishSchema, token_scale: float, start_path: str,
    persistence: Persistence,
) -> tuple[AgentTranscript, PersistenceLog]:
    """Run one episode's harness in child processes as its arm says; the transcript its last process wrote and the
    log of its processes (HarnessFailed when a process ended otherwise)."""
    checkpoints = evidence / CHECKPOINTS
    checkpoints.mkdir(parents=True, exist_ok=True)
    launch = AgentLaunch(
        manifest=resume_manifest(run_id, episode_id, task, model, persistence), process=1, origin=origin,
        token=tenant.token, site=task.spec.site, tenant_db=str(tenant.db_path), start_path=start_path,
        instruction=task.spec.instruction, base_url=base_url, bounds=bounds, budget=task.spec.budgets.actions,
        finish=finish, token_scale=token_scale, constraints=task_constraints(task), checkpoints=str(checkpoints),
        transcript_out=str(evidence / "transcript.json"), refusal_out=str(evidence / "refusal.txt"),
        recovery=persistence.recovery, checkpoint_every=persistence.checkpoint_every,
        stop_after_first_effect=persistence.arm == "restarted",
        compaction=persistence.compaction if persistence.arm == "compacted" else None)
    processes: list[HarnessProcess] = []
    key = secrets.token_bytes(32)  # the episode's checkpoint key: in this process's memory and its children's only
    current: list[int | None] = [None]
    killed = [False]
    if persistence.arm == "interrupted":
        tenant.on_commit = _kill_on_effect(tenant, lambda: current[0], killed)
    try:
        for number in range(1, AGENT_LAUNCHES + 1):
            began = time.monotonic()
            status, err = await _run_process(launch, evidence, api_key, key, lambda pid: current.__setitem__(0, pid))
            ended_by = signal.SIGKILL if status == TIMED_OUT else signal.Signals(-status) if status < 0 else None
            planned_kill = status == -signal.SIGKILL and number == 1 and (killed[0] or persistence.arm == "restarted")
            refusal = None
            if status == REFUSED_EXIT:
                refusal = Path(launch.refusal_out).read_text(encoding="utf-8")
            processes.append(HarnessProcess(
                number=number, resumed_from=None if launch.resume_from is None else int(Path(launch.resume_from).stem),
                exit_status=None if ended_by is not None else status,
                signal=None if ended_by is None else ended_by.name, killed_by_run=planned_kill,
                wall_s=round(time.monotonic() - began, 3), refusal=refusal))
            log = PersistenceLog(persistence=persistence, processes=processes)
            if status == 0:
                return AgentTranscript.model_validate_json(Path(launch.transcript_out).read_text(encoding="utf-8")), log
            if refusal is not None:
                raise HarnessFailed("resume refused", refusal, log)
            if status == TIMED_OUT:
                raise HarnessFailed("harness process", err, log)
            if not planned_kill:
                raise HarnessFailed("harness process", f"exit {status}: {err.strip()[-600:]}", log)
            resume_from = latest_checkpoint(checkpoints)
            if resume_from is None:
                raise HarnessFailed("harness process", "killed before its first checkpoint", log)
            launch = launch.model_copy(update={"process": number + 1, "resume_from": str(resume_from),
                                               "stop_after_first_effect": False})
        raise HarnessFailed("harness process", f"more than {AGENT_LAUNCHES} processes", log)
    finally:
        tenant.on_commit = None
