"""`computerops bench`'s executor part: the local executor at concurrency W against the Ray executor at W workers
(computerops/runs/ray_executor.py) on the same scripted plan, and a simulated N-node scaling figure computed from
costs measured in that same run.

What is measured (both runs go through `execute_run`, the same plan, the same run name in two folders):

- **Throughput including start-up**: episodes / the whole `execute_run` call (the endpoint, for Ray `ray.init`, the
  actors, their sites servers and Chromiums; for the local executor its one Chromium; sealing and stopping included).
- **Start-up**: from the call to the first episode's start. **Steady state**: from the first episode's start to the
  last episode's admission. Both ends are read from the run directory the driver wrote (the mtime of the first
  `episodes/<id>/started.json` and of the last `episodes/<id>/admitted.json`, on the driver's clock), so nothing in
  the executors is instrumented. The target ("Ray no more than 10% slower than local at 2 workers", one-sided: a faster
  Ray passes) compares the **steady-state** throughputs: start-up is paid once per run (a few seconds for a local Ray,
  more on a cluster) and a real run has hundreds of episodes, while the bench's few episodes would let it dominate;
  the ratio with start-up included is reported beside it.
- **Evidence**: every episode's operations, journal, final state and verdict, byte for byte, local against Ray.

The model (a model, not a measurement). With N nodes of W Ray workers each,

    throughput(N) = min(N * W / (t_episode + t_dispatch), 1 / t_admit)      episodes per second

- `t_episode`: the mean of the Ray run's records' `wall_s` (an episode's time on a worker, tenant to browser closed);
- `t_dispatch`: the workers' idle share per episode in the steady state, (W * steady_s - sum of wall_s) / episodes:
  everything a worker spends on an episode beyond `wall_s` (judging, replay, returning the files, Ray's scheduling
  and the wait for the driver). At N = 1 the model therefore gives back the measured steady-state throughput exactly;
- `t_admit`: the driver's serial cost per episode, measured by admitting the Ray run's own episodes again into a
  scratch run directory as the driver does (record parsed, `start_episode`, every returned file written with
  `RunDirectory.write_evidence_bytes`, `integrity_problems`, `admit`; fsync'd), the mean over `ADMIT_PASSES` passes.

Assumptions: every node is like this one (the same t_episode and t_dispatch with W workers; on this machine the
workers share its cores with the driver, so a dedicated node may do better); the endpoint is not the bottleneck (the
bench's scripted endpoint runs on each worker; a real model endpoint adds its latency to t_episode and its rate
limit as one more cap); the driver admits one episode at a time on one disk, and nothing else on it grows with N
(Ray's own per-call cost on the driver, deserialising the returned files and carrying them over a network are not
in t_admit: on a cluster the driver's cap is lower than this); t_dispatch does not grow with N; start-up is left
out (steady state). The driver becomes the bottleneck from N = (t_episode + t_dispatch) / (W * t_admit) nodes.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from computerops.bench.memory import peak_memory
from computerops.core.execution import LOCAL, ExecutorChoice
from computerops.runs.bundle import ADMITTED, EPISODES, STARTED, RunDirectory
from computerops.runs.config import PlannedEpisode
from computerops.runs.ray_executor import returned_files
from computerops.runs.records import EpisodeRecord

if TYPE_CHECKING:
    from tasks import LoadedTask

SCALING_NODES = (1, 2, 4, 8, 16, 32, 64)
"""The node counts the model predicts for."""
RAY_TARGET_RATIO = 0.9
"""Ray's steady-state throughput at least this share of the local executor's at the same W ("no more than 10%
slower"; a faster Ray passes)."""
ADMIT_PASSES = 3
"""Times the run's episodes are admitted again into a scratch run directory to time the driver's admission."""
IDENTICAL = ("operations.json", "journal.json", "final_state.json", "verdict.json")
"""Evidence compared byte for byte between the two executors (the transcript holds measured latencies)."""
FORMULA = "throughput(N) = min(N * W / (t_episode + t_dispatch), 1 / t_admit)"
Progress = Callable[[str], None]


class ExecutorRun(BaseModel):
    """One executor's run of the plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: Literal["local", "ray"]
    workers: int
    """Episodes in flight: the local executor's concurrency, or the Ray workers."""
    episodes: int
    verified_success: int
    wall_s: float
    """The whole `execute_run` call, start-up and sealing included."""
    startup_s: float
    """From the call to the first episode's start (the first started.json the driver wrote)."""
    steady_s: float
    """From the first episode's start to the last admission (the last admitted.json the driver wrote)."""
    episodes_per_minute: float
    """Episodes / wall_s: start-up included."""
    steady_episodes_per_minute: float
    """Episodes / steady_s: start-up excluded."""
    episode_busy_s: float
    """Sum of the records' wall_s."""
    peak_rss_mib: float
    """Peak resident memory of this process and all its children (Ray's processes, workers and browsers included)."""


class ScalingPoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int
    workers: int
    episodes_per_minute: float
    bound: Literal["workers", "driver"]
    """Which term of the model's minimum gives the figure."""


class ScalingModel(BaseModel):
    """The simulated N-node figure: a model computed from costs measured in the run, not a measurement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    formula: str = FORMULA
    workers_per_node: int
    episode_s: float
    """t_episode: mean wall_s of the Ray run's episodes."""
    dispatch_s: float
    """t_dispatch: the workers' idle share per episode, (W * steady_s - sum of wall_s) / episodes."""
    admit_s: float
    """t_admit: the driver's mean serial cost per episode (parse, start, write the returned files, check, admit)."""
    admit_samples: int
    admit_median_ms: float
    admit_p95_ms: float
    driver_cap_per_minute: float
    """60 / t_admit: what one driver admits at most, whatever the workers."""
    crossover_nodes: float
    """(t_episode + t_dispatch) / (W * t_admit): from this many nodes the driver is the bottleneck."""
    driver_bound_from: int
    """The fewest whole nodes at which the driver is the bottleneck: crossover_nodes rounded up."""
    points: list[ScalingPoint]


class ExecutorFigures(BaseModel):
    """The local executor at concurrency W against the Ray executor at W workers, and the scaling model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workers: int
    local: ExecutorRun
    ray: ExecutorRun
    ratio: float
    """Ray's steady-state throughput / the local executor's: the figure compared with the target."""
    ratio_including_startup: float
    """Ray's throughput / the local executor's, start-up included."""
    identical_evidence: bool
    """Every episode's operations, journal, final state and verdict have the same bytes under both executors."""
    differing: list[str]
    """`episode/file` of every compared file that differs (empty when identical)."""
    scaling: ScalingModel

    @property
    def target_met(self) -> bool:
        return self.ratio >= RAY_TARGET_RATIO


def per_second(nodes: int, workers: int, episode_s: float, dispatch_s: float, admit_s: float) -> float:
    """The model's episodes per second at `nodes` nodes of `workers` workers (module docstring)."""
    if nodes < 1 or workers < 1:
        raise ValueError(f"nodes and workers must be at least 1, got {nodes} and {workers}")
    if episode_s + dispatch_s <= 0 or admit_s <= 0:
        raise ValueError("the episode and admission times must be positive")
    return min(nodes * workers / (episode_s + dispatch_s), 1 / admit_s)


def scaling_model(workers: int, episode_s: float, dispatch_s: float, admit_samples_s: Sequence[float],
                  nodes: Sequence[int] = SCALING_NODES) -> ScalingModel:
    """The model's figures from the measured costs; `admit_samples_s` are the per-episode admission times."""
    if not admit_samples_s:
        raise ValueError("no admission samples")
    admit_s = statistics.fmean(admit_samples_s)
    cap = 1 / admit_s
    points = []
    for n in nodes:
        rate = per_second(n, workers, episode_s, dispatch_s, admit_s)
        points.append(ScalingPoint(nodes=n, workers=n * workers, episodes_per_minute=round(rate * 60, 1),
                                   bound="driver" if n * workers / (episode_s + dispatch_s) >= cap else "workers"))
    ordered = sorted(admit_samples_s)
    crossover = (episode_s + dispatch_s) / (workers * admit_s)
    return ScalingModel(
        workers_per_node=workers, episode_s=round(episode_s, 4), dispatch_s=round(dispatch_s, 4),
        admit_s=round(admit_s, 6), admit_samples=len(ordered),
        admit_median_ms=round(statistics.median(ordered) * 1000, 3),
        admit_p95_ms=round(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)] * 1000, 3),
        driver_cap_per_minute=round(cap * 60, 1),
        crossover_nodes=round(crossover, 1), driver_bound_from=max(1, math.ceil(crossover)), points=points,
    )


def _marker_times(bundle: RunDirectory, records: Sequence[EpisodeRecord], name: str) -> list[float]:
    return [(bundle.episode_dir(r.episode_id) / name).stat().st_mtime for r in records]


def executor_run(executor: Literal["local", "ray"], workers: int, bundle: RunDirectory,
                 records: Sequence[EpisodeRecord], called: float, returned: float, peak_mib: float) -> ExecutorRun:
    """One executor's figures from its run directory; `called` and `returned` bracket `execute_run` (time.time)."""
    if not records:
        raise ValueError("no episodes admitted")
    first_start = min(_marker_times(bundle, records, STARTED))
    last_admit = max(_marker_times(bundle, records, ADMITTED))
    wall, steady = returned - called, last_admit - first_start
    return ExecutorRun(
        executor=executor, workers=workers, episodes=len(records),
        verified_success=sum(r.outcome == "verified_success" for r in records), wall_s=round(wall, 3),
        startup_s=round(first_start - called, 3), steady_s=round(steady, 3),
        episodes_per_minute=round(len(records) / wall * 60, 1),
        steady_episodes_per_minute=round(len(records) / steady * 60, 1),
        episode_busy_s=round(sum(r.wall_s for r in records), 3), peak_rss_mib=peak_mib,
    )


def admission_samples(bundle: RunDirectory, records: Sequence[EpisodeRecord], plan: Sequence[PlannedEpisode],
                      scratch: Path, passes: int = ADMIT_PASSES) -> list[float]:
    """Seconds the driver spends per episode on what it does serially with a returned episode, timed on the run's
    own episodes admitted again into fresh scratch run directories: the record parsed, the episode marked started,
    every file written (`write_evidence_bytes`), checked (`integrity_problems`) and the record admitted."""
    planned = {p.episode_id: p for p in plan}
    returned = [(r.model_dump_json(), returned_files(bundle, r.episode_id)) for r in records]
    samples = []
    for number in range(passes):
        root = scratch / f"admit-{number}" / bundle.root.name
        (root / "episodes").mkdir(parents=True)
        (root / EPISODES).write_text("", encoding="utf-8")
        target = RunDirectory(root)
        for text, files in returned:
            began = time.perf_counter()
            record = EpisodeRecord.model_validate_json(text)
            target.start_episode(planned[record.episode_id])
            for name, data in sorted(files.items()):
                target.write_evidence_bytes(record.episode_id, name, data)
            problems = target.integrity_problems(record)
            if problems:
                raise RuntimeError("; ".join(problems))
            target.admit(record)
            samples.append(time.perf_counter() - began)
    return samples


def differing_evidence(local: RunDirectory, ray: RunDirectory, records: Sequence[EpisodeRecord]) -> list[str]:
    """`episode/file` of every compared evidence file whose bytes differ between the two runs (or is missing)."""
    differ = []
    for record in records:
        for name in IDENTICAL:
            a, b = local.episode_dir(record.episode_id) / name, ray.episode_dir(record.episode_id) / name
            if not (a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()):
                differ.append(f"{record.episode_id}/{name}")
    return differ


async def bench_executors(tasks: Sequence[LoadedTask], plan: Sequence[PlannedEpisode], policy: str, workers: int,
                          root: Path, progress: Progress, ray_address: str | None = None) -> ExecutorFigures:
    """The plan run by the local executor at concurrency `workers`, then by the Ray executor at `workers` workers,
    compared; the scaling model from the Ray run's costs."""
    from computerops.runs.config import EndpointConfig, RunConfig
    from computerops.runs.runner import execute_run
    config = RunConfig(run_id="executors", tasks=sorted({t.id for t in tasks}),
                       endpoint=EndpointConfig(kind="scripted", policies=[policy]), episodes=list(plan))
    runs: dict[str, tuple[ExecutorRun, RunDirectory, list[EpisodeRecord]]] = {}
    executors: tuple[Literal["local", "ray"], ...] = ("local", "ray")
    for executor in executors:
        out = root / executor / config.run_id
        if executor == "ray":
            progress(f"executors: ray, {workers} workers ("
                     + (f"the cluster at {ray_address}" if ray_address else "no --ray-address: a local Ray")
                     + "): starting the workers")
        else:
            progress(f"executors: local, concurrency {workers}")
        with peak_memory() as peak:
            called = time.time()
            on_ray = executor == "ray"
            choice = ExecutorChoice(executor="ray", workers=workers, ray_address=ray_address) if on_ray else LOCAL
            records = await execute_run(config, list(tasks), out, lambda line: progress(f"  {line}"),
                                        concurrency=1 if on_ray else workers, executor=choice)
            returned = time.time()
        bundle = RunDirectory(out)
        figures = executor_run(executor, workers, bundle, records, called, returned, peak())
        progress(f"executors: {executor} at {workers}: {figures.episodes} episodes in {figures.wall_s:.1f} s "
                 f"({figures.episodes_per_minute}/min; start-up {figures.startup_s:.1f} s, steady state "
                 f"{figures.steady_episodes_per_minute}/min)")
        runs[executor] = (figures, bundle, records)
    local, local_bundle, _ = runs["local"]
    ray, ray_bundle, ray_records = runs["ray"]
    differing = differing_evidence(local_bundle, ray_bundle, ray_records)
    if len(ray_records) != len(runs["local"][2]):
        differing.append(f"episodes: {len(runs['local'][2])} local, {len(ray_records)} ray")
    with tempfile.TemporaryDirectory(dir=root, prefix="admit-") as scratch:
        admits = admission_samples(ray_bundle, ray_records, plan, Path(scratch))
    episode_s = ray.episode_busy_s / ray.episodes
    dispatch_s = max(0.0, (workers * ray.steady_s - ray.episode_busy_s) / ray.episodes)
    model = scaling_model(workers, episode_s, dispatch_s, admits)
    result = ExecutorFigures(
        workers=workers, local=local, ray=ray,
        ratio=round(ray.steady_episodes_per_minute / local.steady_episodes_per_minute, 3),
        ratio_including_startup=round(ray.episodes_per_minute / local.episodes_per_minute, 3),
        identical_evidence=not differing, differing=differing, scaling=model,
    )
    progress(f"executors: Ray / local steady state {result.ratio:.2f} x (start-up included "
             f"{result.ratio_including_startup:.2f} x), evidence identical: {result.identical_evidence}; driver "
             f"admission {model.admit_s * 1000:.2f} ms per episode")
    return result
