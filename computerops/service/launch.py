"""Planning, launching and resuming runs: everything `computerops run` does beyond parsing its options, and what
the server's launch form and worker processes call (computerops/server/worker.py).

`RunRequest` holds a run's settings as a person gives them (the CLI's options, the launch form's fields);
`plan_run` checks them against the catalog and turns them into a `RunConfig`, refusing with `ServiceError` before
anything is written; `launch` executes a plan through `runs.runner.execute_run`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from computerops.core import defaults
from computerops.core.execution import LOCAL, ExecutorChoice
from computerops.core.problems import said
from computerops.core.vocabulary import BrokerMode, ToolMode
from computerops.service.errors import ServiceError

if TYPE_CHECKING:
    from computerops.core.execution import Progress
    from computerops.persistence.arms import Persistence
    from computerops.runs.config import RunConfig, SubsetRef
    from tasks import LoadedTask


class RunRequest(BaseModel):
    """A new run's settings, as `computerops run` takes them (each field is the option of the same name)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str = "all"
    """`all`, comma-separated task ids, or a reserved subset file."""
    endpoint: str | None = None
    """scripted:POLICY[,POLICY...]; or None with `base_url` and `model`."""
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    artifact_sha256: str | None = None
    repeat: int = Field(default=1, ge=1)
    action_budget: int = defaults.ACTION_BUDGET
    max_response_tokens: int = defaults.MAX_RESPONSE_TOKENS
    context_tokens: int = defaults.CONTEXT_TOKENS
    temperature: float = Field(default=defaults.TEMPERATURE, ge=0, le=2)
    """Sampling temperature, 0 to 2 (the OpenAI API's range)."""
    seed: int = Field(default=defaults.SEED, ge=0)
    """Requested sampling seed, 0 or more (llama.cpp reads -1 as "a random seed": no run repeats)."""
    tool_mode: ToolMode = "auto"
    request_timeout: float = Field(default=defaults.REQUEST_TIMEOUT_S, gt=0)
    """Seconds one model reply may take (`Bounds.request_timeout_s`): a model served on a CPU may need more."""
    wall_clock: float = Field(default=defaults.WALL_CLOCK_S, gt=0)
    """Seconds one episode may take in all (`Bounds.wall_clock_s`); at least the request timeout."""
    fault_rate: float = 0.0
    fault_classes: str = ""
    fault_seed: int = 0
    matched_controls: bool = False
    broker: BrokerMode = "enforcing"
    persistence: str = ""
    recovery: str = "reconcile"
    checkpoint_every: int = Field(default=5, ge=1)
    compaction: str = "ledgers/1"
    serving: str = ""
    fallback_policy: str | None = None
    fallback_base_url: str | None = None
    fallback_model: str | None = None
    fallback_api_key_env: str | None = None
    continuation: bool = False
    noise: str = ""


@dataclass(frozen=True)
class PlannedRun:
    """A run checked and planned: its config and the tasks as loaded now, and where it will be written."""

    config: RunConfig
    tasks: list[LoadedTask]
    out: Path


def select_tasks_or_subset(selection: str) -> tuple[list[LoadedTask], SubsetRef | None]:
    """`all`, comma-separated ids, or a reserved subset file (refused when its tasks changed since)."""
    from computerops.catalog.subsets import SubsetError, load_subset, subset_tasks
    from computerops.runs.config import SubsetRef
    from tasks import TaskFileError, load_catalog, select_tasks
    try:
        catalog = load_catalog()
        path = Path(selection)
        if selection.endswith(".json") or _names_a_file(path):
            if not path.is_file():
                raise ServiceError(f"{path}: no such subset file (reserve one with `computerops subset reserve`)",
                                   "not_found")
            subset = load_subset(path)
            ref = SubsetRef(file=str(path), lock_sha256=subset.lock_sha256, seed=subset.seed, count=subset.count)
            return subset_tasks(subset, catalog, path), ref
        return select_tasks(catalog, selection), None
    except (SubsetError, TaskFileError) as exc:
        raise ServiceError(str(exc)) from exc


def _names_a_file(path: Path) -> bool:
    """Whether `path` is a file; False for text no file can be named by (a long list of task ids: the OS refuses to
    look such a name up, ENAMETOOLONG)."""
    try:
        return path.is_file()
    except OSError:
        return False


def plan_run(request: RunRequest, out: Path) -> PlannedRun:
    """Check a new run's settings and plan its episodes; ServiceError (nothing written) naming what is wrong."""
    from adapter.transcript import Bounds
    from computerops.runs.bundle import BundleError, RunDirectory
    from computerops.runs.config import (
        EndpointConfig,
        RunConfig,
        fallback_endpoint,
        parse_endpoint,
        plan_episodes,
        time_bounds,
    )
    from computerops.serving_faults.arms import parse_serving_arms
    from sites.kit.noise import parse_noise_kinds
    selected, subset = select_tasks_or_subset(request.tasks)
    try:
        endpoint_config = parse_endpoint(request.endpoint, base_url=request.base_url, model=request.model,
                                         api_key_env=request.api_key_env, artifact_sha256=request.artifact_sha256)
        fallback = fallback_endpoint(request.fallback_policy, request.fallback_base_url, request.fallback_model,
                                     request.fallback_api_key_env)
        if fallback is not None:
            endpoint_config = EndpointConfig.model_validate({**endpoint_config.model_dump(), "fallback": fallback})
        bounds = Bounds(action_budget=request.action_budget, max_response_tokens=request.max_response_tokens,
                        context_tokens=request.context_tokens, temperature=request.temperature, seed=request.seed,
                        tool_mode=request.tool_mode, **time_bounds(request.request_timeout, request.wall_clock))
        task_ids = [t.id for t in selected]
        arms = _persistence(request, selected)
        servings = parse_serving_arms(request.serving, sorted({t.spec.site for t in selected}),
                                      has_fallback=endpoint_config.fallback is not None,
                                      continuation=request.continuation)
        if arms and servings:
            raise ValueError("give --persistence or --serving, not both (each is one study's arms)")
        noise = parse_noise_kinds(request.noise)
        if noise and (arms or servings):
            raise ValueError("give --noise alone, not with --persistence or --serving (each is one study's arms)")
        if arms and endpoint_config.fallback is not None:
            raise ValueError("a long-running episode's harness asks only the primary endpoint: give --persistence or "
                             "a fallback endpoint, not both")
        controls = ([t.id for t in selected if t.spec.faults or t.spec.attack is not None or request.fault_rate > 0]
                    if request.matched_controls else [])
        plan = plan_episodes(task_ids, endpoint_config, repeat=request.repeat, matched_controls=controls,
                             broker_mode=None if request.broker == "enforcing" else request.broker, persistence=arms,
                             serving=servings, noise=noise)
        config = RunConfig(run_id=out.name, tasks=task_ids, subset=subset, endpoint=endpoint_config, bounds=bounds,
                           episodes=plan, repeat=request.repeat, fault_seed=request.fault_seed,
                           fault_rate=request.fault_rate,
                           fault_classes=[c.strip() for c in request.fault_classes.split(",") if c.strip()])
    except ValueError as exc:  # pydantic's ValidationError is a ValueError: a bad rate or class is named by its option
        raise ServiceError(said(exc, as_option=True)) from exc
    if config.fault_rate > 0 and not config.fault_classes:
        raise ServiceError("--fault-rate needs --fault-classes (which classes the rate draws for)")
    try:
        RunDirectory.ensure_new(out)
    except BundleError as exc:
        raise ServiceError(str(exc), "conflict") from exc
    return PlannedRun(config=config, tasks=selected, out=out)


def _persistence(request: RunRequest, selected: list[LoadedTask]) -> list[Persistence]:
    """The persistences `run --persistence` asks for (ValueError naming what is wrong)."""
    from computerops.persistence.arms import COMPACTION_POLICIES, PERSISTENCE_ARMS, RECOVERY_POLICIES, Persistence
    from sites.registry import SITES
    names = [a.strip() for a in request.persistence.split(",") if a.strip()]
    if not names:
        return []
    unknown = [a for a in names if a not in PERSISTENCE_ARMS]
    if unknown or request.recovery not in RECOVERY_POLICIES:
        wrong = f"arm {unknown[0]!r}" if unknown else f"recovery {request.recovery!r}"
        raise ValueError(f"--persistence: unknown {wrong}; arms: {', '.join(PERSISTENCE_ARMS)}; recoveries: "
                         f"{', '.join(RECOVERY_POLICIES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"--persistence names an arm twice: {request.persistence}")
    if request.compaction not in COMPACTION_POLICIES:
        raise ValueError(f"--compaction: unknown policy {request.compaction!r}; policies: "
                         f"{', '.join(COMPACTION_POLICIES)}")
    unfit = [t.id for t in selected if SITES[t.spec.site].ledgers is None]
    if unfit:
        raise ValueError(f"--persistence: the sites of {', '.join(unfit[:5])} keep no ledgers (sites/kit/ledgers.py)")
    return [Persistence.model_validate({"arm": a, "recovery": request.recovery, "checkpoint_every":
                                        request.checkpoint_every, "compaction": request.compaction}) for a in names]


def plan_resume(run_dir: Path) -> PlannedRun:
    """An interrupted run's plan from its manifest: the same config, the tasks as they are in the catalog now."""
    from computerops.runs.bundle import BundleError, RunDirectory
    from tasks import TaskFileError, load_catalog, select_tasks
    try:
        config = RunDirectory.open(run_dir).manifest().config
        selected = select_tasks(load_catalog(), ",".join(config.tasks))
    except (BundleError, TaskFileError) as exc:
        raise ServiceError(f"cannot resume {run_dir}: {exc}") from exc
    return PlannedRun(config=config, tasks=selected, out=run_dir)


def launch(planned: PlannedRun, progress: Progress, *, concurrency: int = 1, trace: bool = False,
           resume: bool = False, executor: ExecutorChoice = LOCAL) -> None:
    """Execute a planned run (or continue it) through the runner; ServiceError when it cannot start or stopped.

    How it executes (`concurrency`, `trace`, the `executor`) is no part of the run's config: the evidence is the same
    either way; the manifest's `execution` records it."""
    from computerops.runs.runner import execute_run
    with _refusals(executor, concurrency):
        asyncio.run(execute_run(planned.config, planned.tasks, planned.out, progress, concurrency=concurrency,
                                trace=trace, resume=resume, executor=executor))


@contextlib.contextmanager
def _refusals(executor: ExecutorChoice, concurrency: int) -> Iterator[None]:
    """The runner's refusals and failures as ServiceErrors (after the executor settings are checked)."""
    from computerops.experiment.lock import ExperimentRefused
    from computerops.experiment.spec import ExperimentFileError
    from computerops.runs.bundle import BundleError
    from computerops.runs.endpoint import EndpointError
    from computerops.runs.runner import ResumeRefused, RunAborted, RunHalted
    from tasks import TaskFileError
    if (problem := executor.problem(concurrency)) is not None:
        raise ServiceError(problem)
    refused: tuple[type[Exception], ...] = (EndpointError, BundleError, ResumeRefused, ExperimentRefused,
                                            ExperimentFileError, TaskFileError)
    if executor.executor == "ray":
        from computerops.runs.ray_executor import WorkerRefused
        refused = (*refused, WorkerRefused)
    try:
        yield
    except refused as exc:
        raise ServiceError(str(exc), "conflict" if isinstance(exc, BundleError) else "bad_input") from exc
    except (RunAborted, RunHalted) as exc:
        raise ServiceError(str(exc), "failed") from exc


def check_experiment(lock: Path, out: Path, *, resume: bool = False) -> None:
    """Refuse (ServiceError, nothing written) an experiment run whose lock is missing or changed since the freeze,
    or whose target is taken (a new run) or is no run (a resume)."""
    from computerops.experiment.lock import ExperimentRefused
    from computerops.experiment.running import checked_lock
    from computerops.experiment.spec import ExperimentFileError
    from computerops.runs.bundle import BundleError, RunDirectory
    from tasks import TaskFileError, load_catalog
    if not lock.is_file():
        raise ServiceError(f"{lock}: no such lock file (freeze one with `computerops experiment freeze`)", "not_found")
    try:
        checked_lock(lock, load_catalog())
        if resume:
            RunDirectory.open(out)
        else:
            RunDirectory.ensure_new(out)
    except (ExperimentRefused, ExperimentFileError, TaskFileError, ValueError) as exc:
        raise ServiceError(str(exc), "conflict" if isinstance(exc, BundleError) else "bad_input") from exc


def launch_experiment(lock: Path, out: Path, progress: Progress, *, resume: bool = False, concurrency: int = 1,
                      noise_floor: bool = False, executor: ExecutorChoice = LOCAL) -> None:
    """Run (or continue) a frozen experiment into `out` through the runner (computerops/experiment/running.py), on
    the `executor` given (the lock fixes what runs, not how)."""
    from computerops.experiment.running import run_experiment
    from tasks import load_catalog
    with _refusals(executor, concurrency):
        asyncio.run(run_experiment(lock, out, load_catalog(), progress, resume=resume, concurrency=concurrency,
                                   noise_floor=noise_floor, executor=executor))
