"""Shared fixtures: one headless Chromium for the whole test session, and the fixture-page server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, serve_fixture_site
from hypothesis import HealthCheck, settings
from playwright.async_api import Browser, async_playwright

from adapter.browser import launch_browser

# Property tests run on a shared 2-core machine: wall-clock limits per example would fail by chance, not by
# defect. The examples themselves are the same with any timing.
settings.register_profile("computerops", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("computerops")


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
