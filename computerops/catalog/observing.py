"""`computerops observe`: any page exactly as the model would see it, optionally beside Playwright's ai snapshot.

A target is a catalog page (`/helpdesk/tickets`, served in-process on a fresh tenant), a local HTML
file, or an http(s) URL. The same `PageDriver.observe` the episodes use renders it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Collection
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from playwright.async_api import Browser, Page, async_playwright
from pydantic import BaseModel, ConfigDict

from adapter.browser import launch_browser
from adapter.context import text_tokens
from adapter.driver import PageDriver
from adapter.fidelity import FidelityReport, compare_with_accessibility_tree
from adapter.observation import Control, Observation
from computerops.core import defaults
from computerops.runs.serving import serve_app, tenant_context
from sites.kit.app import create_app
from sites.registry import SITES, tenant_registry

TargetKind = Literal["catalog", "file", "url"]


class TargetError(ValueError):
    """A target that is neither a catalog page, an existing file nor an http(s) URL."""


@dataclass(frozen=True)
class Target:
    kind: TargetKind
    location: str
    """The catalog path (`/helpdesk/tickets`), the absolute file path, or the URL."""
    site: str | None = None


def parse_target(text: str, sites: Collection[str] = tuple(SITES)) -> Target:
    """What `observe` was asked to show: an http(s) URL, an existing file, or a catalog path `/<site>/...`."""
    value = text.strip()
    if not value:
        raise TargetError("no target: give a catalog path like /helpdesk/tickets, an HTML file or a URL")
    scheme = urlsplit(value).scheme
    if scheme in ("http", "https"):
        return Target(kind="url", location=value)
    if scheme == "file":
        value = urlsplit(value).path
    path = Path(value).expanduser()
    if path.is_file():
        return Target(kind="file", location=str(path.resolve()))
    catalog_path = "/" + value.lstrip("/")
    site = catalog_path.split("/")[1]
    if site in sites:
        return Target(kind="catalog", location=catalog_path if "/" in catalog_path[1:] else catalog_path + "/",
                      site=site)
    known = ", ".join(f"/{name}/" for name in sorted(sites))
    raise TargetError(f"{text!r} is not an existing file, an http(s) URL or a catalog page "
                      f"(catalog pages start with one of: {known})")


class AiSnapshot(BaseModel):
    """Playwright's `page.aria_snapshot(mode="ai")` of the same page, for comparison."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    chars: int
    estimated_tokens: int
    ms: float


class ObservedPage(BaseModel):
    """One page as the model sees it, with sizes; written by `observe --json`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    kind: TargetKind
    status: int | None
    """HTTP status of the page load (None for files)."""
    url: str
    title: str
    text: str
    controls: list[Control]
    truncated: bool
    chars: int
    estimated_tokens: int
    """Characters / 4, rounded up: the same estimate the adapter's context budget uses."""
    observe_ms: float
    ai_snapshot: AiSnapshot | None = None
    chars_ratio: float | None = None
    """Observation characters / ai snapshot characters (below 1: the observation is smaller)."""
    accessibility: FidelityReport | None = None
    """The offered controls against Chromium's accessibility tree (with --compare)."""


WHOLE_PAGE = 10**9
"""An observation bound no page reaches: every control in one part."""


async def accessibility_of(driver: PageDriver, observation: Observation) -> FidelityReport:
    """The controls against Chromium's accessibility tree for the whole page, also when `observation` is one
    part of a long page (the controls of other parts would otherwise count as missing)."""
    if observation.truncated:
        limit, driver.max_chars = driver.max_chars, WHOLE_PAGE
        try:
            observation = await driver.observe()
        finally:
            driver.max_chars = limit
    return await compare_with_accessibility_tree(driver, observation)


async def ai_snapshot(page: Page) -> AiSnapshot:
    began = time.perf_counter()
    text = await page.aria_snapshot(mode="ai")
    return AiSnapshot(text=text, chars=len(text), estimated_tokens=text_tokens(text),
                      ms=round((time.perf_counter() - began) * 1000, 2))


@asynccontextmanager
async def _opened(browser: Browser, target: Target, seed: int) -> AsyncIterator[tuple[Page, str, str, int | None]]:
    """The target loaded in a fresh page: (page, origin, site prefix, HTTP status)."""
    async with AsyncExitStack() as stack:
        if target.kind == "catalog":
            assert target.site is not None
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="computerops-observe-")))
            registry = tenant_registry(root)
            stack.callback(registry.close)
            origin = await stack.enter_async_context(serve_app(create_app(registry)))
            context = await tenant_context(browser, origin, registry.create(target.site, seed).token,
                                           site_prefix=f"/{target.site}/")
            url, prefix = origin + target.location, f"/{target.site}/"
        elif target.kind == "file":
            context = await browser.new_context()
            url, origin, prefix = Path(target.location).as_uri(), "file://", "/"
        else:
            context = await browser.new_context()
            parts = urlsplit(target.location)
            url, origin, prefix = target.location, f"{parts.scheme}://{parts.netloc}", "/"
        stack.push_async_callback(context.close)
        page = await context.new_page()
        response = await page.goto(url, wait_until="domcontentloaded")
        yield page, origin, prefix, response.status if response and target.kind != "file" else None


async def observe_in(
    browser: Browser, target: Target, *, seed: int = 1, max_chars: int = defaults.OBSERVATION_CHARS,
    compare: bool = False,
) -> ObservedPage:
    """Render one target with a browser that is already running."""
    async with _opened(browser, target, seed) as (page, origin, prefix, status):
        driver = PageDriver(page, origin=origin, site_prefix=prefix, max_chars=max_chars)
        began = time.perf_counter()
        observation = await driver.observe()
        observe_ms = round((time.perf_counter() - began) * 1000, 2)
        snapshot = await ai_snapshot(page) if compare else None
        accessibility = await accessibility_of(driver, observation) if compare else None
    return ObservedPage(
        target=target.location, kind=target.kind, status=status, url=observation.url, title=observation.title,
        text=observation.text, controls=observation.controls, truncated=observation.truncated,
        chars=observation.chars, estimated_tokens=text_tokens(observation.text), observe_ms=observe_ms,
        ai_snapshot=snapshot,
        chars_ratio=round(observation.chars / snapshot.chars, 3) if snapshot and snapshot.chars else None,
        accessibility=accessibility,
    )


async def observe_target(
    target: Target, *, seed: int = 1, max_chars: int = defaults.OBSERVATION_CHARS, compare: bool = False
) -> ObservedPage:
    """Start a browser, render one target, stop the browser."""
    async with async_playwright() as playwright:
        browser = await launch_browser(playwright)
        try:
            return await observe_in(browser, target, seed=seed, max_chars=max_chars, compare=compare)
        finally:
            await browser.close()
