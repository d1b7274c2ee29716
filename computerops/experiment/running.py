"""Running a frozen experiment: the lock checked against its inputs now, then its plan through the ordinary resumable
runner (`computerops.runs.runner.execute_run`), the lock copied into the run directory and the analysis sealed beside
the run's summary whenever the run stops."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from computerops.core.execution import LOCAL, ExecutorChoice, Progress
from computerops.experiment.analysis import analyse
from computerops.experiment.collect import ANALYSIS_FILE, LOCK_FILE, read_experiment_run
from computerops.experiment.lock import ExperimentLock, ExperimentRefused, lock_difference, read_lock
from computerops.experiment.plan import plan_noise_floor
from computerops.experiment.spec import ExperimentTask
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import ExperimentRef, PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from tasks import LoadedTask


def checked_lock(path: Path, catalog: Mapping[str, LoadedTask]) -> ExperimentLock:
    """The lock at `path`, refused (naming the input) when any fixed input changed since the freeze."""
    lock = read_lock(path)
    difference = lock_difference(lock, catalog)
    if difference is not None:
        raise ExperimentRefused(f"{path}: an input changed since the freeze: {difference}. The lock holds the "
                                "experiment as pre-registered; freeze it again as a new version to run the change.")
    return lock


def run_config(lock: ExperimentLock, episodes: list[PlannedEpisode], run_id: str, series: str = "experiment"
               ) -> RunConfig:
    spec = lock.spec
    return RunConfig(
        run_id=run_id, tasks=lock.task_ids, endpoint=lock.inputs.endpoint, episodes=episodes, bounds=spec.bounds,
        fault_seed=spec.fault_seed, repeat=1,
        experiment=ExperimentRef(id=spec.id, version=spec.version, lock_sha256=lock.lock_sha256,
                                 series="noise_floor" if series == "noise_floor" else "experiment"),
    )


def _sealed_analysis(bundle: RunDirectory) -> Mapping[str, BaseModel]:
    return {ANALYSIS_FILE: analyse(read_experiment_run(bundle.root))}


def _same_lock(out: Path, lock: ExperimentLock) -> None:
    attached = out / LOCK_FILE
    if not attached.is_file() or read_lock(attached).lock_sha256 != lock.lock_sha256:
        raise ExperimentRefused(f"cannot resume {out}: it is not a run of this lock ({LOCK_FILE} differs or is "
                                "missing)")


async def run_experiment(
    lock_path: Path, out: Path, catalog: Mapping[str, LoadedTask], progress: Progress, *, resume: bool = False,
    concurrency: int = 1, noise_floor: bool = False, executor: ExecutorChoice = LOCAL,
) -> list[EpisodeRecord]:
    """Run (or, with `resume`, continue) the experiment of a lock into `out`; with `noise_floor`, its noise floor's
    reruns instead of its plan. Raises ExperimentRefused before any model call when an input changed."""
    lock = checked_lock(lock_path, catalog)
    if noise_floor:
        entries = list(lock.spec.tasks or [ExperimentTask(id=i) for i in lock.task_ids])
        try:
            episodes = plan_noise_floor(lock.spec, entries)
        except ValueError as exc:
            raise ExperimentRefused(f"{lock_path}: {exc}") from exc
    else:
        episodes = lock.plan
    series = "noise_floor" if noise_floor else "experiment"
    config = run_config(lock, episodes, out.name, series)
    if resume:
        _same_lock(out, lock)
    tasks = [catalog[task_id] for task_id in lock.task_ids]
    return await execute_run(config, tasks, out, progress, concurrency=concurrency, resume=resume, executor=executor,
                             attachments={LOCK_FILE: lock.model_dump_json(indent=2)}, analyses=_sealed_analysis)
