"""Shared fixtures: one headless Chromium for the whole test session, and the fixture-page server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, serve_fixture_site
from playwright.async_api import Browser, async_playwright

from adapter.browser import launch_browser


@pytest_asyncio.fixture(loop_scope="session", scope="session")
async def browser() -> AsyncIterator[Browser]:
    """A real Chromium. A missing Chromium is an error, not a skip: `scripts/setup.sh` installs one."""
    async with async_playwright() as playwright:
        chromium = await launch_browser(playwright)
        yield chromium
        await chromium.close()


@pytest.fixture(scope="module")
def site() -> Iterator[FixtureSite]:
    """The fixture pages on a loopback port, recording every request (tests/fixture_site.py)."""
    with serve_fixture_site() as fixture_site:
        yield fixture_site
