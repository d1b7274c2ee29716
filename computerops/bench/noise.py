"""`bench --only noise`: the adapter under each page-noise kind (docs/noise.md) against the same clean page, as
ratios: observation tokens and observation time, and the controls the clean page offers that the noisy one does not
(what a kind hides from the model, for now or for good)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Final, Literal

from playwright.async_api import Browser, async_playwright
from pydantic import BaseModel, ConfigDict

from adapter.browser import launch_browser
from adapter.context import text_tokens
from adapter.driver import PageDriver
from adapter.observation import Observation
from computerops.core.execution import Progress
from computerops.core.formats import Versioned
from computerops.runs.serving import serve_app, tenant_context
from sites.kit.app import create_app
from sites.kit.noise import CLEAN, NOISE_KINDS, NoiseArm, NoiseKind
from sites.kit.noise_log import NoiseSession
from sites.kit.tenancy import TenantRegistry
from sites.registry import tenant_registry
from tasks import LoadedTask

NOISE_BENCH_FORMAT: Final = "computerops.noise_bench/1"
MOST_LOADS = 12
"""How many times a page is loaded, at most, for its kind to be drawn (a kind for the n-th page, or half the pages)."""


class NoisePageFigures(BaseModel):
    """One start page under one arm."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    site: str
    path: str
    arm: NoiseArm
    fired: bool
    """The kind changed the page that was observed (always False for the clean arm)."""
    estimated_tokens: int
    observe_ms: float
    """The median of the timed observations."""
    controls: int
    tokens_ratio: float | None
    """Tokens here / tokens of the clean page (None for the clean arm)."""
    observe_ratio: float | None
    """Observation time here / on the clean page (None for the clean arm)."""
    hidden_controls: list[str]
    """`role "name"` of the clean page's controls not offered here (a label the kind varied counts as hidden)."""


class NoiseBench(Versioned):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.noise_bench/1"] = NOISE_BENCH_FORMAT
    repeats: int
    pages: list[NoisePageFigures]


def _key(observation: Observation) -> list[str]:
    return [f'{control.role} "{control.name}"' for control in observation.controls]


async def _paths(browser: Browser, origin: str, registry: TenantRegistry, task: LoadedTask, limit: int) -> list[str]:
    """The task's start page and the first pages its navigation links to, `limit` in all (the lists a kind such as
    `load_more` acts on are a link away from a site's dashboard)."""
    site = task.spec.site
    tenant = registry.create(site, task.spec.seed)
    context = await tenant_context(browser, origin, tenant.token, site_prefix=f"/{site}/")
    try:
        page = await context.new_page()
        await page.goto(origin + task.spec.start_path, wait_until="domcontentloaded")
        hrefs: list[str] = await page.eval_on_selector_all(
            "nav a[href]", "links => links.map(link => link.getAttribute('href'))")
    finally:
        await context.close()
        registry.drop(tenant)
    paths = [task.spec.start_path]
    for href in hrefs:
        if href.startswith(f"/{site}/") and href.rstrip("/") not in {p.split("?")[0].rstrip("/") for p in paths}:
            paths.append(href)
    return paths[:limit]


async def _observed(browser: Browser, origin: str, registry: TenantRegistry, task: LoadedTask, path: str,
                    arm: NoiseArm, repeats: int) -> tuple[Observation, list[float], bool]:
    """`path` of the task's site under `arm`, loaded until its kind is drawn for it, observed once untimed, then
    `repeats` times timed (ms); with whether the kind fired on the page observed."""
    site = task.spec.site
    tenant = registry.create(site, task.spec.seed)
    kind = next((k for k in NOISE_KINDS if k == arm), None)
    session = None if kind is None else NoiseSession(kind=kind, run_seed=0, task_id=task.id, repetition=1)
    tenant.noise = session
    context = await tenant_context(browser, origin, tenant.token, site_prefix=f"/{site}/")
    try:
        page = await context.new_page()
        driver = PageDriver(page, origin=origin, site_prefix=f"/{site}/")
        for _ in range(MOST_LOADS):
            await page.goto(origin + path, wait_until="domcontentloaded")
            if session is None or (session.pages and session.pages[-1].drawn):
                break
        await driver.observe()
        times: list[float] = []
        for _ in range(repeats):
            began = time.perf_counter()
            observation = await driver.observe()
            times.append((time.perf_counter() - began) * 1000)
        fired = session is not None and bool(session.pages) and session.pages[-1].fired
        return observation, times, fired
    finally:
        await context.close()
        registry.drop(tenant)


async def run_noise_bench(tasks: Sequence[LoadedTask], root: Path, progress: Progress, repeats: int = 3,
                          pages: int = 3) -> NoiseBench:
    """`bench_noise` of every kind in a browser of its own."""
    async with async_playwright() as playwright:
        browser = await launch_browser(playwright)
        try:
            return await bench_noise(browser, tasks, root, progress, repeats, pages)
        finally:
            await browser.close()


async def bench_noise(browser: Browser, tasks: Sequence[LoadedTask], root: Path, progress: Progress,
                      repeats: int = 3, pages: int = 3, kinds: Sequence[NoiseKind] = NOISE_KINDS) -> NoiseBench:
    """The first task of each site: its start page and the pages its navigation links to first (`pages` in all),
    each clean and under each of `kinds`."""
    firsts = list({task.spec.site: task for task in reversed(tasks)}.values())[::-1]
    registry = tenant_registry(root)
    figures: list[NoisePageFigures] = []
    async with AsyncExitStack() as stack:
        stack.callback(registry.close)
        origin = await stack.enter_async_context(serve_app(create_app(registry)))
        for task in firsts:
            for path in await _paths(browser, origin, registry, task, pages):
                figures += await _page_arms(browser, origin, registry, task, path, repeats, kinds, progress)
    return NoiseBench(repeats=repeats, pages=figures)


async def _page_arms(browser: Browser, origin: str, registry: TenantRegistry, task: LoadedTask, path: str,
                     repeats: int, kinds: Sequence[NoiseKind], progress: Progress) -> list[NoisePageFigures]:
    """One page clean, then under each kind, each against the clean."""
    site = task.spec.site
    clean, clean_times, _ = await _observed(browser, origin, registry, task, path, CLEAN, repeats)
    clean_tokens, clean_ms = text_tokens(clean.text), statistics.median(clean_times)
    figures = [NoisePageFigures(site=site, path=path, arm=CLEAN, fired=False, estimated_tokens=clean_tokens,
                                observe_ms=round(clean_ms, 2), controls=len(clean.controls), tokens_ratio=None,
                                observe_ratio=None, hidden_controls=[])]
    for kind in kinds:
        noisy, times, fired = await _observed(browser, origin, registry, task, path, kind, repeats)
        tokens, ms = text_tokens(noisy.text), statistics.median(times)
        offered = set(_key(noisy))
        figure = NoisePageFigures(
            site=site, path=path, arm=kind, fired=fired, estimated_tokens=tokens, observe_ms=round(ms, 2),
            controls=len(noisy.controls), tokens_ratio=round(tokens / max(clean_tokens, 1), 3),
            observe_ratio=round(ms / max(clean_ms, 1e-6), 3),
            hidden_controls=[key for key in _key(clean) if key not in offered])
        figures.append(figure)
        progress(f"noise: {path} {kind}: fired {fired}, tokens x{figure.tokens_ratio}, observe "
                 f"x{figure.observe_ratio}, {len(figure.hidden_controls)} of {len(clean.controls)} controls hidden")
    return figures
