"""Running a set of episodes into a run directory: servers up, browser up, then the planned episodes,
serially or several at once over the one browser; or, with the Ray executor, on Ray actors that each hold their own
(computerops/runs/ray_executor.py), their evidence admitted here."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path

from playwright.async_api import async_playwright
from pydantic import BaseModel

from adapter.browser import describe_chromium, launch_browser
from adapter.modelclient import model_client
from adapter.serverinfo import (
    ObservedContext,
    ToolResultsProbe,
    ToolsProbe,
    discover_context,
    probe_tool_results,
    probe_tools,
)
from computerops.core.clock import utc_stamp
from computerops.core.difference import first_difference_of
from computerops.core.execution import LOCAL, ExecutorChoice, Progress
from computerops.report.outcomes import causes_text, infrastructure_causes, outcome_words
from computerops.report.run import summarize
from computerops.runs.bundle import EPISODES, NewRunDirectory, RunDirectory, writer_lock
from computerops.runs.config import PlannedEpisode, RunConfig
from computerops.runs.endpoint import EndpointError, ExtraSteps, model_endpoint
from computerops.runs.episode import EpisodeContext, run_episode
from computerops.runs.instances import INSTANCES_FILE, instances_text
from computerops.runs.limits import endpoint_lines, initial_token_scale, planned_bounds
from computerops.runs.provenance import code_hashes, models_refusal, observe_endpoint, protocol_hashes, versions
from computerops.runs.records import (
    EpisodeRecord,
    ObservedEndpoint,
    ResumeEntry,
    RunExecution,
    RunManifest,
    TaskRef,
)
from computerops.runs.serving import serve_app
from sites.kit.app import create_app
from sites.kit.scratch import ScratchDirectory
from sites.registry import tenant_registry
from tasks import LoadedTask

EpisodeRunner = Callable[[LoadedTask, PlannedEpisode], Awaitable[EpisodeRecord]]
"""Runs one planned episode and admits its record to the run directory (returned): the executor seam. The local
executor runs it in this process (`run_episode`); the Ray one on an actor (computerops/runs/ray_executor.py)."""

HALT_AFTER_INFRASTRUCTURE_FAILURES = 3
"""Consecutive infrastructure failures (endpoint unreachable, 5xx after the client's retries, browser
gone) after which the run halts instead of recording more of them."""

_RESUME_COMPARED = ("tasks", "config", "scripted", "code_sha256", "protocol_sha256", "versions")
"""The manifest inputs a resume must reproduce exactly, compared in this order: the tasks first, so a changed task
file is named as the task (it changes the `tasks` package's code hash too). Not compared: when the run was created,
how it executes (concurrency, traces) and what the endpoint said about itself (logged per resume)."""


async def observe_fallback(config: RunConfig, base_url: str, api_key: str,
                           observed: ObservedEndpoint) -> ObservedEndpoint | None:
    """What the run's pinned fallback endpoint says of itself (the manifest pins it); a scripted fallback is the run's
    scripted endpoint. EndpointError when a --fallback-base-url lists no models."""
    fallback = config.endpoint.fallback
    if fallback is None:
        return None
    if fallback.base_url is None:
        return observed
    key = fallback.api_key()
    if fallback.api_key_env and not key:
        raise EndpointError(f"--fallback-api-key-env {fallback.api_key_env}: that environment variable is not set")
    found = await observe_endpoint(fallback.base_url, key)
    if (refused := models_refusal(found, fallback.base_url)) is not None:
        raise EndpointError(f"fallback: {refused}")
    return found


class RunAborted(RuntimeError):
    """An episode raised (a fault of the harness or its machine, not of the agent), so the run stopped.

    Episodes already admitted stay admitted; episodes in flight were finished and admitted; the rest
    were not started.
    """

    def __init__(self, message: str, *, admitted: list[EpisodeRecord], failed: list[tuple[str, BaseException]]):
        super().__init__(message)
        self.admitted = admitted
        self.failed = failed


class ResumeRefused(RuntimeError):
    """`run --resume` found a manifest input that differs now: a resumed run would be a new condition."""


class RunHalted(RuntimeError):
    """Repeated infrastructure failures stopped the run; what was admitted stays, and it can be resumed."""


def manifest_difference(recorded: RunManifest, now: RunManifest) -> str | None:
    """The first manifest input that differs between a run's manifest and the one it would have now."""
    old, new = recorded.model_dump(mode="json"), now.model_dump(mode="json")
    for manifest in (old, new):  # tasks by id, so the difference names the task, not its position
        manifest["tasks"] = {task["id"]: task for task in manifest["tasks"]}
    return first_difference_of(old, new, _RESUME_COMPARED)


def _progress_line(done: int, total: int, planned: PlannedEpisode, record: EpisodeRecord) -> str:
    return (f"[{done}/{total}] {planned.episode_id} ({record.endpoint}): "
            f"{outcome_words(record)}"
            + (f" ({record.infrastructure_cause})" if record.infrastructure_cause else "")
            + f", {record.steps} steps, stop {record.stop_reason}, replay {record.replay}")


async def _run_plan(
    config: RunConfig, bundle: RunDirectory, run_one: EpisodeRunner, tasks: list[LoadedTask], concurrency: int,
    progress: Progress, admitted_before: list[EpisodeRecord] | None = None,
) -> list[EpisodeRecord]:
    """Every planned episode not yet admitted, at most `concurrency` at once, each through `run_one`; all admitted
    records (earlier ones included) in plan order.

    Workers take the next planned episode as they come free, so episodes finish (and are admitted
    and reported) in any order. When an episode raises, no further episode starts; those in flight
    finish and are admitted; then RunAborted names what failed. After HALT_AFTER_INFRASTRUCTURE_FAILURES
    infrastructure failures in a row the same happens and RunHalted says so.
    """
    plan = config.episodes
    by_id = {t.id: t for t in tasks}
    records: dict[str, EpisodeRecord] = {r.episode_id: r for r in admitted_before or []}
    queue = iter([p for p in plan if p.episode_id not in records])  # shared: next() never awaits
    failed: list[tuple[str, BaseException]] = []
    infrastructure_run: list[str] = []  # the latest consecutive infrastructure failures

    async def worker() -> None:
        for planned in queue:
            if failed or len(infrastructure_run) >= HALT_AFTER_INFRASTRUCTURE_FAILURES:
                return
            try:
                record = await run_one(by_id[planned.task_id], planned)
            except Exception as exc:  # reported after the episodes in flight have finished
                failed.append((planned.episode_id, exc))
                progress(f"[error] {planned.episode_id}: {type(exc).__name__}: {exc} (no further episode starts; "
                         "those in flight finish)")
                return
            records[planned.episode_id] = record
            progress(_progress_line(len(records), len(plan), planned, record))
            if record.outcome == "infrastructure_failure":
                infrastructure_run.append(planned.episode_id)
            else:
                infrastructure_run.clear()

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(plan))):
            group.create_task(worker())
    admitted = [records[p.episode_id] for p in plan if p.episode_id in records]
    if failed:
        episode_id, first = failed[0]
        others = f"; {len(failed) - 1} more episodes failed too" if len(failed) > 1 else ""
        raise RunAborted(
            f"episode {episode_id} failed: {type(first).__name__}: {first}{others}. The run stopped: "
            f"{len(admitted)} of {len(plan)} episodes admitted to {bundle.root}, "
            f"{len(plan) - len(admitted) - len(failed)} not started.",
            admitted=admitted, failed=failed,
        ) from first
    if len(infrastructure_run) >= HALT_AFTER_INFRASTRUCTURE_FAILURES:
        raise RunHalted(
            f"{len(infrastructure_run)} infrastructure failures in a row ({', '.join(infrastructure_run)}; "
            f"{causes_text(infrastructure_causes(records[e] for e in infrastructure_run))}); "
            f"the run halted with {len(admitted)} of {len(plan)} episodes admitted to {bundle.root}. "
            f"They count as infrastructure failures, apart from agent outcomes. Fix the endpoint or browser, "
            f"then continue with `computerops run --resume {bundle.root}`."
        )
    return admitted


def build_manifest(
    config: RunConfig, tasks: list[LoadedTask], *, chromium: str | None, observed: ObservedEndpoint,
    execution: RunExecution, fallback_observed: ObservedEndpoint | None = None,
) -> RunManifest:
    """The manifest a run has under the current code, catalog and versions."""
    return RunManifest(
        config=config, created_at=utc_stamp(),
        scripted=config.endpoint.scripted,
        tasks=[TaskRef(id=t.id, sha256=t.sha256, path=t.path.name) for t in tasks],
        code_sha256=code_hashes(), protocol_sha256=protocol_hashes(), versions=versions(chromium),
        endpoint_observed=observed, fallback_observed=fallback_observed, execution=execution,
    )


def refuse_lost_admissions(bundle: RunDirectory) -> None:
    """ResumeRefused when episodes.jsonl lost (or changed) records of admitted episodes after the fact: a resume would
    run finished episodes again as if they had never run."""
    lost = bundle.lost_admissions()
    if lost:
        raise ResumeRefused(f"cannot resume {bundle.root}: {EPISODES} no longer holds what was admitted to it "
                            f"({len(lost)} episodes; first: {lost[0]}). Restore {EPISODES} from a copy of the run; "
                            "a resume would run finished episodes again.")


def _resume(bundle: RunDirectory, now: RunManifest, progress: Progress) -> list[EpisodeRecord]:
    """Check that nothing the results depend on changed and no admitted record was lost, repair a torn last record,
    set interrupted episodes apart and log the resume; returns the records admitted before it."""
    difference = manifest_difference(bundle.manifest(), now)
    if difference is not None:
        raise ResumeRefused(f"cannot resume {bundle.root}: a manifest input differs: {difference}. "
                            "A run continued under other inputs would be a new condition; start a new run.")
    refuse_lost_admissions(bundle)  # again under the lock
    torn = bundle.repair_torn_tail()
    records = bundle.records()
    failed = [r.episode_id for r in records if r.outcome == "infrastructure_failure"]  # the endpoint's, not the agent's
    admitted = [r for r in records if r.outcome != "infrastructure_failure"]
    done = {r.episode_id for r in admitted}
    pending = [p for p in now.config.episodes if p.episode_id not in done]
    set_apart = {p.episode_id: str(bundle.set_apart(p.episode_id).relative_to(bundle.root))
                 for p in pending if bundle.episode_dir(p.episode_id).exists()}
    bundle.log_resume(ResumeEntry(
        resumed_at=now.created_at, admitted_before=len(admitted), torn_bytes_removed=torn, set_apart=set_apart,
        to_run=len(pending), endpoint_observed=now.endpoint_observed, rerun_infrastructure=failed,
        execution=now.execution,
    ))
    interrupted = len(set_apart) - len(failed)
    progress(f"resuming {bundle.root}: {len(admitted)} of {len(now.config.episodes)} episodes admitted, "
             f"{len(pending)} to run" + (f", {len(failed)} infrastructure failures run again" if failed else "")
             + (f", {interrupted} interrupted set apart under interrupted/" if interrupted else "")
             + (f", {torn} bytes of an unfinished record cut off" if torn else ""))
    return admitted


async def ask_about_limits(observed: ObservedEndpoint, base_url: str, api_key: str, config: RunConfig) -> None:
    """Record in `observed` the context the server says it serves, what it does with tool schemas and, where the
    schemas reach the prompt, with tool results (adapter/serverinfo.py); a server that says nothing leaves the
    context None. Each probe waits as long as one model reply may take (the run's request timeout); in a mode that
    sends tools, a tool-results probe that did not decide says why (`not_checked`), never a silent None."""
    model = config.endpoint.model or ""
    timeout_s = config.bounds.request_timeout_s
    observed.context = await discover_context(base_url, api_key, model, observed.models_payload)
    if config.bounds.tool_mode != "text":
        observed.tools = await probe_tools(base_url, api_key, model, timeout_s=timeout_s)
        if observed.context is None and observed.tools.refused_for_context is not None:
            observed.context = ObservedContext(tokens=observed.tools.refused_for_context,
                                               source="the server's refusal of the tools probe")
        if observed.tools.verdict == "in_prompt":
            observed.tool_results = await probe_tool_results(base_url, api_key, model, timeout_s=timeout_s)
        else:
            observed.tool_results = ToolResultsProbe(verdict="not_checked",
                                                     detail=unprobed_tool_results(observed.tools))


def unreachable_primary(config: RunConfig, observed: ObservedEndpoint, refused: str) -> str | None:
    """The run's warning when its primary endpoint could not be reached at all at the start (no connection for GET
    /models) and a `--fallback-base-url` is configured to answer for it; None when the run cannot go on (no such
    fallback, or the primary answered something that is not a model list: a wrong base URL is refused, not worked
    around). Each episode then asks the primary once, finds it unreachable and is answered by the fallback from there
    on (adapter/failover.py); `primary_not_probed` records why nothing about the primary was probed."""
    fallback = config.endpoint.fallback
    if not observed.models_unreachable or fallback is None or fallback.base_url is None:
        return None
    return (f"endpoint: WARNING {refused}; a fallback is configured ({fallback.base_url}), so the run goes on: each "
            "episode asks the primary once and the fallback answers for the rest of it")


def primary_not_probed(config: RunConfig, observed: ObservedEndpoint) -> ObservedEndpoint:
    """`observed` with the primary's probes `not_checked`, saying why: it could not be reached at the start."""
    if config.bounds.tool_mode == "text":
        return observed
    why = "the primary endpoint could not be reached at the start of the run"
    return observed.model_copy(update={"tools": ToolsProbe(verdict="not_checked", detail=why),
                                       "tool_results": ToolResultsProbe(verdict="not_checked", detail=why)})


def unprobed_tool_results(tools: ToolsProbe) -> str:
    """Why the tool results were not probed after the tools probe found `tools`."""
    if tools.verdict == "not_checked":
        return f"the tools probe before it got {tools.detail}" if tools.detail else "the tools probe decided nothing"
    if tools.verdict == "unknown":
        return f"the tools probe before it could not decide ({tools.detail})"
    return f"the tool schemas do not reach the prompt (tools {tools.verdict.replace('_', ' ')})"


async def execute_run(
    config: RunConfig,
    tasks: list[LoadedTask],
    out: Path,
    progress: Progress = lambda _: None,
    *,
    concurrency: int = 1,
    trace: bool = False,
    resume: bool = False,
    extra_steps: ExtraSteps | None = None,
    attachments: Mapping[str, str] | None = None,
    analyses: Callable[[RunDirectory], Mapping[str, BaseModel]] | None = None,
    executor: ExecutorChoice = LOCAL,
) -> list[EpisodeRecord]:
    """Run every planned episode into a new run directory at `out`; returns the admitted records in plan order.

    `concurrency` episodes run at once over one browser, each in its own context on its own tenant; the
    evidence is the same at any concurrency. `trace` saves a Playwright trace per episode (never started
    otherwise). With `resume`, `out` is an existing run of this `config`: episodes it admitted are kept,
    the rest run (ResumeRefused when any manifest input differs now). Raises RunAborted when an episode
    raised and RunHalted after repeated infrastructure failures; what was admitted stays in the run directory.
    `extra_steps` gives a scripted endpoint step lists by task id and name (`tasks audit`'s mutants).
    `attachments` (file name -> text) are written into a new run directory beside the manifest; `analyses` gives
    the files sealed beside the summary each time the run stops (an experiment's analysis).
    `executor` `ray` runs the episodes on Ray actors, one episode at a time each (a local Ray instance in-process, or
    the cluster at its `ray_address`); the driver admits what they return, and the evidence is the same.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if (problem := executor.problem(concurrency)) is not None:
        raise ValueError(problem)
    if resume:  # before any server, browser or model call
        refuse_lost_admissions(RunDirectory.open(out))
    else:
        RunDirectory.ensure_new(out)
    async with AsyncExitStack() as stack:
        # One writer per run directory (RunLocked otherwise); a new one is made whole or not at all.
        new = None if resume else stack.enter_context(NewRunDirectory(out))
        if resume:
            stack.enter_context(writer_lock(out))
        tenant_root = stack.enter_context(ScratchDirectory("tenants"))  # a killed run's is removed by the next
        registry = tenant_registry(tenant_root / "run")
        stack.callback(registry.close)
        replay_registry = tenant_registry(tenant_root / "replay")
        stack.callback(replay_registry.close)
        base_url, api_key = await stack.enter_async_context(model_endpoint(config.endpoint, tasks, extra_steps))
        observed = await observe_endpoint(base_url, api_key)
        if config.endpoint.kind == "openai" and (refused := models_refusal(observed, base_url)) is not None:
            if (going_on := unreachable_primary(config, observed, refused)) is None:
                raise EndpointError(refused)
            progress(going_on)
            observed = primary_not_probed(config, observed)
        elif config.endpoint.kind == "openai":
            await ask_about_limits(observed, base_url, api_key, config)
        fallback_observed = await observe_fallback(config, base_url, api_key, observed)
        bounds = planned_bounds(config.bounds, observed)
        for line in endpoint_lines(config.bounds, bounds, observed):
            progress(line)
        if executor.executor == "ray":
            from computerops.runs.ray_executor import RayExecutor, WorkerSetup
            setup = WorkerSetup(config=config, tasks=tasks, extra_steps=extra_steps, base_url=base_url,
                                api_key=api_key, bounds=bounds, token_scale=initial_token_scale(observed), trace=trace)
            pool = await stack.enter_async_context(RayExecutor(setup, workers=executor.workers,
                                                               address=executor.ray_address, progress=progress))
            chromium = pool.chromium
            execution = RunExecution(concurrency=len(pool.names), trace=trace, executor="ray",
                                     ray_address=executor.ray_address, workers=pool.names, nodes=pool.nodes)
        else:
            origin = await stack.enter_async_context(serve_app(create_app(registry)))
            playwright = await stack.enter_async_context(async_playwright())
            browser = await launch_browser(playwright)
            stack.push_async_callback(browser.close)
            chromium = describe_chromium(playwright, browser)
            execution = RunExecution(concurrency=concurrency, trace=trace)
        manifest = build_manifest(config, tasks, chromium=chromium, observed=observed, execution=execution,
                                  fallback_observed=fallback_observed)
        admitted: list[EpisodeRecord] = []
        if new is None:
            bundle = RunDirectory.open(out)
            admitted = _resume(bundle, manifest, progress)
        else:
            bundle = new.create(manifest, {INSTANCES_FILE: instances_text(tasks), **(attachments or {})})
        if executor.executor == "ray":
            async def run_one(task: LoadedTask, planned: PlannedEpisode) -> EpisodeRecord:
                return await pool.run(bundle, task, planned, wall_zero)
            slots = len(pool.names)
        else:
            # Every reply read within a bound: the client waits as long as the request timeout allows, no less.
            client = model_client(base_url, api_key, max_retries=2, timeout=bounds.request_timeout_s)
            stack.push_async_callback(client.close)
            ctx = EpisodeContext(config=config, bundle=bundle, registry=registry, replay_registry=replay_registry,
                                 browser=browser, origin=origin, client=client, trace=trace,
                                 clock_zero=time.monotonic(), bounds=bounds, token_scale=initial_token_scale(observed))

            async def run_one(task: LoadedTask, planned: PlannedEpisode) -> EpisodeRecord:
                return (await run_episode(ctx, task, planned))[0]
            slots = concurrency
        wall_zero = time.time()  # the Ray workers' clock zero (each places its records on the run's timeline)
        try:
            return await _run_plan(config, bundle, run_one, tasks, slots, progress, admitted)
        finally:  # also when the run stopped early: what was admitted is sealed as it stands
            if executor.executor == "ray":  # nothing of the run's is written after its seal
                await pool.stop_replacing()
            bundle.seal(summarize(bundle.manifest(), bundle.records()), analyses(bundle) if analyses else None)
