"""Running a set of episodes into a run directory: servers up, browser up, episodes in order."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import openai
from playwright.async_api import async_playwright

from adapter.browser import launch_browser
from adapter.scripted import create_scripted_app
from computerops.bundle import RunDirectory
from computerops.config import EndpointConfig, RunConfig
from computerops.episode import EpisodeContext, run_episode
from computerops.provenance import code_hashes, observe_endpoint, versions
from computerops.records import EpisodeRecord, RunManifest, TaskRef
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


async def execute_run(
    config: RunConfig, tasks: list[LoadedTask], out: Path, progress: Progress = lambda _: None
) -> list[EpisodeRecord]:
    """Run every planned episode into a new run directory at `out`; returns the admitted records."""
    RunDirectory.ensure_new(out)  # before any server, browser or model call
    records: list[EpisodeRecord] = []
    async with AsyncExitStack() as stack:
        tenant_root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="computerops-tenants-")))
        registry = TenantRegistry(tenant_root / "run")
        replay_registry = TenantRegistry(tenant_root / "replay")
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
        )
        bundle = RunDirectory.create(out, manifest)
        client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=2, timeout=120.0)
        stack.push_async_callback(client.close)
        ctx = EpisodeContext(config=config, bundle=bundle, registry=registry, replay_registry=replay_registry,
                             browser=browser, origin=origin, client=client)
        by_id = {t.id: t for t in tasks}
        for index, planned in enumerate(config.episodes, start=1):
            record, _ = await run_episode(ctx, by_id[planned.task_id], planned)
            records.append(record)
            progress(f"[{index}/{len(config.episodes)}] {planned.task_id} ({record.endpoint}): {record.outcome}"
                     + (f" ({record.false_completion_kind})" if record.false_completion_kind else "")
                     + f", {record.steps} steps, stop {record.stop_reason}, replay {record.replay}")
        registry.close()
        replay_registry.close()
    return records
