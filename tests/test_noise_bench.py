"""`bench --only noise` (computerops/bench/noise.py) on one site's dashboard and ticket list, four kinds: the
figures are ratios against the same clean page, and they show what each kind does to the observation (a banner adds
tokens, a survey's modal dialog leaves out the page behind it, a load-more list hides the rows past its first ten until
clicked, an expired session hides every control but signing in again)."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import async_playwright

from adapter.browser import launch_browser
from computerops.bench.noise import NoiseBench, bench_noise
from tasks import load_catalog

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> NoiseBench:
    task = load_catalog()["helpdesk.solve-ticket@1"]

    async def measure() -> NoiseBench:
        async with async_playwright() as playwright:
            browser = await launch_browser(playwright)
            try:
                return await bench_noise(browser, [task], tmp_path_factory.mktemp("noise-bench"), lambda _: None,
                                         repeats=1, pages=2, kinds=["consent_banner", "interstitial", "load_more",
                                                                          "session_timeout"])
            finally:
                await browser.close()

    return asyncio.run(measure())


def test_each_kind_is_measured_against_the_same_clean_page(figures: NoiseBench) -> None:
    by = {(page.path, page.arm): page for page in figures.pages}
    assert {path for path, _ in by} == {"/helpdesk/", "/helpdesk/tickets"}
    for (path, arm), page in by.items():
        clean = by[(path, "clean")]
        if arm == "clean":
            assert page.tokens_ratio is None and page.observe_ratio is None and not page.hidden_controls
        else:
            assert page.tokens_ratio == round(page.estimated_tokens / clean.estimated_tokens, 3)


def test_the_figures_show_what_each_kind_does_to_the_observation(figures: NoiseBench) -> None:
    by = {(page.path, page.arm): page for page in figures.pages}
    banner = by[("/helpdesk/", "consent_banner")]
    assert banner.fired and banner.tokens_ratio is not None and banner.tokens_ratio > 1 and not banner.hidden_controls
    assert not by[("/helpdesk/", "load_more")].fired, "a dashboard has no long list"
    listed = by[("/helpdesk/tickets", "load_more")]
    assert listed.fired and listed.hidden_controls and all(c.startswith("link ") for c in listed.hidden_controls)
    assert listed.controls == by[("/helpdesk/tickets", "clean")].controls - len(listed.hidden_controls) + 1, \
        "the rows past the first ten hidden, one Load more button offered"
    for path in ("/helpdesk/", "/helpdesk/tickets"):  # the survey's modal dialog: only its two controls
        survey = by[(path, "interstitial")]
        assert survey.fired and survey.controls == 2 and len(survey.hidden_controls) == by[(path, "clean")].controls
        assert survey.tokens_ratio is not None and survey.tokens_ratio < 1, "the page behind it is left out"
    expired = by[("/helpdesk/tickets", "session_timeout")]
    assert expired.fired and expired.controls == 1 and len(expired.hidden_controls) == by[
        ("/helpdesk/tickets", "clean")].controls
