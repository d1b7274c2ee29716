"""A lost worker's replacement (RayExecutor._replacement in computerops/runs/ray_executor.py), without a cluster: one
lost before it starts (Ray may place it on the very node that was lost) is started again, a bounded number of times;
one that finds no free CPU (Ray keeps it pending for ever) fails the episode after REPLACEMENT_START_S, naming the
loss it followed. tests/test_ray_node_loss.py does both on a real multi-node cluster (slow tier)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from computerops.runs import ray_executor
from computerops.runs.ray_executor import MAX_WORKER_LOSSES, RayExecutor, WorkerHello, WorkerSetup, _Worker, identity
from computerops.service.launch import RunRequest, plan_run

TASKS = "helpdesk.solve-ticket@1"
ENDPOINT = "scripted:oracle"
CHROMIUM = "chromium 1.0"


class Call:
    """`actor.method` as a stand-in: `.remote(...)` awaits `answer()`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def remote(self, *arguments: Any) -> Any:
        return await self.answer(*arguments)


class Actor:
    """A stand-in for a worker actor: its hello dies (`dies`), never comes (`pending`) or says who it is."""

    def __init__(self, index: int, fate: str) -> None:
        self.index = index
        self.hello = Call(self._hello)
        self.start = Call(self._start)
        self.fate = fate

    async def _hello(self, files: dict[str, str]) -> WorkerHello:
        from ray.exceptions import ActorDiedError
        if self.fate == "dies":
            raise ActorDiedError()
        if self.fate == "pending":
            await asyncio.Event().wait()
        return WorkerHello(index=self.index, host="h", node=f"{self.index:040x}", pid=100 + self.index,
                           identity=identity(files))

    async def _start(self, *_: Any) -> str:
        return CHROMIUM


class ActorClass:
    """What `ray.remote(EpisodeWorker)` returns, as a stand-in: each `.remote(index)` is the next of `fates`."""

    def __init__(self, fates: list[str]) -> None:
        self.fates = fates
        self.made: list[Actor] = []

    def remote(self, index: int) -> Actor:
        self.made.append(Actor(index, self.fates[len(self.made)]))
        return self.made[-1]


def executor_with(tmp_path: Path, fates: list[str], lines: list[str]) -> RayExecutor:
    """An executor as after its start with one worker (worker 0), whose next actors meet `fates`."""
    planned = plan_run(RunRequest(tasks=TASKS, endpoint=ENDPOINT), tmp_path / "run")
    setup = WorkerSetup(config=planned.config, tasks=planned.tasks, extra_steps=None, base_url="", api_key="",
                        bounds=None, token_scale=1.0, trace=False)
    executor = RayExecutor(setup, workers=1, progress=lines.append)
    executor._actor_class = ActorClass(fates)
    first = object()
    executor._started = [_Worker(first, WorkerHello(index=0, host="h", node="0" * 40, pid=1, identity=identity({})))]
    executor._actors = [first]
    executor.chromium = CHROMIUM
    return executor


async def test_a_replacement_lost_before_it_starts_is_started_again_a_bounded_number_of_times(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    lines: list[str] = []
    executor = executor_with(tmp_path, ["dies", "started"], lines)
    worker = await executor._replacement()
    assert (worker.hello.index, executor.replaced, len(executor._started)) == (2, 1, 2)  # each actor its own index
    assert lines == ["ray: worker 1, in place of a lost one, lost before it started (ActorDiedError): starting another"]
    dying = executor_with(tmp_path, ["dies"] * (MAX_WORKER_LOSSES + 2), [])
    with pytest.raises(RuntimeError, match=f"was lost before it started {MAX_WORKER_LOSSES + 1} times"):
        await dying._replacement()
    assert len(dying._actor_class.made) == MAX_WORKER_LOSSES + 1 and dying.replaced == 0


async def test_a_replacement_that_finds_no_free_cpu_fails_after_the_bound_instead_of_waiting_for_ever(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    monkeypatch.setattr(ray_executor, "REPLACEMENT_START_S", 0.3)
    executor = executor_with(tmp_path, ["pending"], [])
    with pytest.raises(RuntimeError, match=r"worker 1, in place of a lost one, did not start within 0\.3 s: no node"):
        await asyncio.wait_for(executor._replacement(), 10)
    assert executor.replaced == 0 and len(executor._started) == 1
