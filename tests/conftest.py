"""Shared fixtures: one headless Chromium for the whole test session."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from playwright.async_api import Browser, async_playwright

from adapter.browser import launch_browser


@pytest_asyncio.fixture(loop_scope="session", scope="session")
async def browser() -> AsyncIterator[Browser]:
    """A real Chromium. A missing Chromium is an error, not a skip: `scripts/setup.sh` installs one."""
    async with async_playwright() as playwright:
        chromium = await launch_browser(playwright)
        yield chromium
        await chromium.close()
