"""Running a set of episodes into a run directory: servers up, browser up, then the planned episodes,
serially or several at once over the one browser."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import openai
from playwright.async_api import async_playwright

from adapter.browser import launch_browser
from adapter.scripted import create_scripted_app
from computerops.bundle import RunDirectory
from computerops.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.episode import EpisodeContext, run_episode
from computerops.provenance import code_hashes, observe_endpoint, versions
from computerops.records import EpisodeRecord, RunExecution, RunManifest, TaskRef
from computerops.serving import serve_app
from sites.kit.app import create_app
from sites.kit.tenancy import TenantRegistry
from tasks import LoadedTask

Progress = Callable[[str], None]


class EndpointError(RuntimeError):
    """The model endpoint cannot be used (missing key, unreachable)."""


@asynccontextmanager
async def model_endpoint(endpoint: EndpointConfig, tasks: list[LoadedTask]) -> AsyncIterator[tuple[str, str]]:
    """(base URL, API key) of the endpoint; a scripted one is served over HTTP for the duration."""
    if endpoint.kind == "scripted":
        async with serve_app(create_scripted_app(tasks)) as origin:
            yield f"{origin}/v1", "scripted"
        return
    assert endpoint.base_url is not None
    key = "not-needed"
    if endpoint.api_key_env:
        key = os.environ.get(endpoint.api_key_env, "")
        if not key:
            raise EndpointError(f"--api-key-env {endpoint.api_key_env}: that environment variable is not set")
    yield endpoint.base_url, key


class RunAborted(RuntimeError):
    """An episode raised (a fault of the harness or its machine, not of the agent), so the run stopped.

    Episodes already admitted stay admitted; episodes in flight were finished and admitted; the rest
    were not started.
    """

    def __init__(self, message: str, *, admitted: list[EpisodeRecord], failed: list[tuple[str, BaseException]]):
        super().__init__(message)
        self.admitted = admitted
        self.failed = failed


def _progress_line(done: int, total: int, planned: PlannedEpisode, record: EpisodeRecord) -> str:
    return (f"[{done}/{total}] {planned.episode_id} ({record.endpoint}): {record.outcome}"
            + (f" ({record.false_completion_kind})" if record.false_completion_kind else "")
            + f", {record.steps} steps, stop {record.stop_reason}, replay {record.replay}")


async def _run_plan(
    ctx: EpisodeContext, tasks: list[LoadedTask], concurrency: int, progress: Progress
) -> list[EpisodeRecord]:
    """Every planned episode, at most `concurrency` at once; the admitted records in plan order.

    Workers take the next planned episode as they come free, so episodes finish (and are admitted
    and reported) in any order. When an episode raises, no further episode starts; those in flight
    finish and are admitted; then RunAborted names what failed.
    """
    plan = ctx.config.episodes
    by_id = {t.id: t for t in tasks}
    queue = iter(plan)  # shared by the workers: next() never awaits, so each episode is taken once
    records: dict[str, EpisodeRecord] = {}
    failed: list[tuple[str, BaseException]] = []

    async def worker() -> None:
        for planned in queue:
            if failed:
                return
            try:
                record, _ = await run_episode(ctx, by_id[planned.task_id], planned)
            except Exception as exc:  # reported after the episodes in flight have finished
                failed.append((planned.episode_id, exc))
                progress(f"[error] {planned.episode_id}: {type(exc).__name__}: {exc} (no further episode starts; "
                         "those in flight finish)")
                return
            records[planned.episode_id] = record
            progress(_progress_line(len(records), len(plan), planned, record))

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(plan))):
            group.create_task(worker())
    admitted = [records[p.episode_id] for p in plan if p.episode_id in records]
    if failed:
        episode_id, first = failed[0]
        others = f"; {len(failed) - 1} more episodes failed too" if len(failed) > 1 else ""
        raise RunAborted(
            f"episode {episode_id} failed: {type(first).__name__}: {first}{others}. The run stopped: "
            f"{len(admitted)} of {len(plan)} episodes admitted to {ctx.bundle.root}, "
            f"{len(plan) - len(admitted) - len(failed)} not started.",
            admitted=admitted, failed=failed,
        ) from first
    return admitted


async def execute_run(
    config: RunConfig,
    tasks: list[LoadedTask],
    out: Path,
    progress: Progress = lambda _: None,
    *,
    concurrency: int = 1,
    trace: bool = False,
) -> list[EpisodeRecord]:
    """Run every planned episode into a new run directory at `out`; returns the admitted records in plan order.

    `concurrency` episodes run at once over one browser, each in its own context on its own tenant; the
    evidence is the same at any concurrency. `trace` saves a Playwright trace per episode (never started
    otherwise). Raises RunAborted when an episode raised; what was admitted stays in the run directory.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    RunDirectory.ensure_new(out)  # before any server, browser or model call
    async with AsyncExitStack() as stack:
        tenant_root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="computerops-tenants-")))
        registry = TenantRegistry(tenant_root / "run")
        stack.callback(registry.close)
        replay_registry = TenantRegistry(tenant_root / "replay")
        stack.callback(replay_registry.close)
        base_url, api_key = await stack.enter_async_context(model_endpoint(config.endpoint, tasks))
        observed = await observe_endpoint(base_url, api_key)
        if config.endpoint.kind == "openai" and observed.models_error and observed.models_payload is None:
            raise EndpointError(f"endpoint {base_url} did not answer GET /models: {observed.models_error}")
        origin = await stack.enter_async_context(serve_app(create_app(registry)))
        playwright = await stack.enter_async_context(async_playwright())
        browser = await launch_browser(playwright)
        stack.push_async_callback(browser.close)
        manifest = RunManifest(
            config=config, created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            scripted=config.endpoint.scripted,
            tasks=[TaskRef(id=t.id, sha256=t.sha256, path=t.path.name) for t in tasks],
            code_sha256=code_hashes(), versions=versions(browser.version), endpoint_observed=observed,
            execution=RunExecution(concurrency=concurrency, trace=trace),
        )
        bundle = RunDirectory.create(out, manifest)
        client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=2, timeout=120.0)
        stack.push_async_callback(client.close)
        ctx = EpisodeContext(config=config, bundle=bundle, registry=registry, replay_registry=replay_registry,
                             browser=browser, origin=origin, client=client, trace=trace,
                             clock_zero=time.monotonic())
        return await _run_plan(ctx, tasks, concurrency, progress)
