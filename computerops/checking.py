"""`computerops tasks check`: the catalog proves each task solvable and each verifier strict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from computerops.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.records import EpisodeRecord
from computerops.runner import Progress, execute_run
from tasks import LoadedTask

REJECTED = {"false_completion", "honest_failure"}


class ControlResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    control: str
    """`scripted`, `no-op` or `negative:<id>`."""
    expected: str
    outcome: str
    replay: str
    ok: bool


class TaskCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    solvable: bool
    noop_rejected: bool
    negatives_rejected: int
    negatives_total: int
    results: list[ControlResult]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


def control_plan(tasks: list[LoadedTask], policies: Callable[[LoadedTask], list[str]]) -> list[PlannedEpisode]:
    """Per task, one scripted episode per policy of `policies(task)`, ids `NNN-<task>--<policy>`."""
    plan: list[PlannedEpisode] = []
    for task in tasks:
        for policy in policies(task):
            plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task.id}--{policy.replace(':', '-')}",
                                       task_id=task.id, policy=policy))
    return plan


def control_config(run_id: str, tasks: list[LoadedTask], plan: list[PlannedEpisode]) -> RunConfig:
    """The run of a control plan against the scripted endpoint."""
    return RunConfig(run_id=run_id, tasks=[t.id for t in tasks],
                     endpoint=EndpointConfig(kind="scripted", policies=sorted({p.policy or "" for p in plan})),
                     episodes=plan)


def check_plan(tasks: list[LoadedTask]) -> list[PlannedEpisode]:
    """Per task: the scripted control (oracle), the no-op control, then every negative control."""
    return control_plan(tasks, lambda task: ["oracle", "noop",
                                             *(f"negative:{n.id}" for n in task.spec.negative_controls)])


def _judge(task: LoadedTask, record: EpisodeRecord, policy: str) -> ControlResult:
    if policy == "oracle":
        control, expected = "scripted", "verified_success"
        ok = record.outcome == "verified_success"
    elif policy == "noop":
        control, expected = "no-op", "rejected"
        ok = record.outcome in REJECTED
    else:
        negative_id = policy.split(":", 1)[1]
        control = f"negative:{negative_id}"
        negative = next(n for n in task.spec.negative_controls if n.id == negative_id)
        if negative.equivalent_to_success:
            expected = "verified_success (marked equivalent)"
            ok = record.outcome == "verified_success"
        elif negative.rejected_as:
            expected = f"false_completion ({negative.rejected_as})"
            ok = record.outcome == "false_completion" and record.false_completion_kind == negative.rejected_as
        else:
            expected = "rejected"
            ok = record.outcome in REJECTED
    outcome = record.outcome + (f" ({record.false_completion_kind})" if record.false_completion_kind else "")
    return ControlResult(control=control, expected=expected, outcome=outcome, replay=record.replay,
                         ok=ok and record.replay == "PASS")


async def check_tasks(
    tasks: list[LoadedTask], out: Path, progress: Progress, *, concurrency: int = 1
) -> list[TaskCheck]:
    """Run every control of every task through the browser and the scripted endpoint (`concurrency` episodes at
    once; the evidence, and so every result, is the same at any concurrency)."""
    plan = check_plan(tasks)
    records = await execute_run(control_config("tasks-check", tasks, plan), tasks, out, progress,
                                concurrency=concurrency)
    by_episode = {r.episode_id: r for r in records}
    checks = []
    for task in tasks:
        results = [
            _judge(task, by_episode[p.episode_id], p.policy or "")
            for p in plan if p.task_id == task.id
        ]
        negatives = [r for r in results if r.control.startswith("negative:")]
        checks.append(TaskCheck(
            task_id=task.id, solvable=results[0].ok, noop_rejected=results[1].ok,
            negatives_rejected=sum(r.ok for r in negatives), negatives_total=len(negatives), results=results,
        ))
    return checks
