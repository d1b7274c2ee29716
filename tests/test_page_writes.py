"""Writes the page's own script makes are the page's, not the model's (adapter/initiative.py; issue 46, item 4).
Also: dialogs the start page raises as it loads reach the first observation (`PageDriver.start`).

Generated over the ways a page writes (`fetch`, XMLHttpRequest, a form its script submits; each also sending the
driver's action header and key itself, as a page can) and when it writes:

- the model's: in the handler of the model's click, after a promise, after a short timer, after a `pushState`
  (a same-document navigation is no new document) — the site gets the action's number and key;
- the page's: as it loads (a page the model navigated to, a page the model's click on a link loaded, the start page
  the harness opened as action 0), and from a timer 2 s after load while the model reads — the site gets no number
  and no key (none of the page's either), so the operation log records no action of the model's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser
from test_report import manifest, records

from adapter import initiative
from adapter.actions import AnswerDialog, Click, Navigate
from adapter.driver import PageDriver
from computerops.core.vocabulary import idempotency_key
from computerops.report.html import render_html
from computerops.report.outcomes import outcome_table
from computerops.report.run import run_report
from computerops.runs.episode import page_writes
from sites.kit.records import Operation

browser_test = pytest.mark.browser
HOWS = ("fetch", "xhr", "form")
MODELS = ("click", "click-promise", "click-timeout", "click-pushstate")
"""Writes the model's click sets off."""


@pytest_asyncio.fixture(loop_scope="session")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    site.requests.clear()  # each case's writes alone (the site is the module's)
    site.keys.clear()
    async with fixture_driver(browser, site) as page_driver:
        yield page_driver


async def _written(site: FixtureSite, how: str, when: str, seconds: float = 6.0) -> tuple[str | None, str | None]:
    """The action header and idempotency key of the one write of (how, when) that reached the site."""
    path = f"/site/api/write?how={how}&when={when}"
    for _ in range(int(seconds / 0.05)):
        found = [(tag, key) for (method, at, tag), (_, key) in zip(site.requests, site.keys, strict=True)
                 if method == "POST" and at == path]
        if found:
            assert len(found) == 1, found
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"the page never wrote {path}")


@browser_test
@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("when", MODELS)
async def test_a_write_the_models_click_sets_off_is_the_models(driver: PageDriver, site: FixtureSite, how: str,
                                                              when: str) -> None:
    observation = await open_page(driver, f"page-writes.html?how={how}&when={when}")
    outcome = await driver.act(Click(id=named(observation, "Go").id), 12)
    assert outcome.ok, outcome.rejection
    assert await _written(site, how, when) == ("12", idempotency_key(12))


@browser_test
@pytest.mark.parametrize("linger", [5.0, 0.5])
async def test_a_write_the_page_delays_after_the_models_click_is_the_models_only_within_the_linger(
        driver: PageDriver, site: FixtureSite, monkeypatch: pytest.MonkeyPatch, linger: float) -> None:
    """The click handler's timer fires 1.5 s later, after the action's settle: the model's within LINGER_S (5 s, as
    Chromium's input activation), the page's past it (LINGER_S made 0.5 s here)."""
    monkeypatch.setattr(initiative, "LINGER_S", linger)
    observation = await open_page(driver, "page-writes.html?how=fetch&when=click-late")
    outcome = await driver.act(Click(id=named(observation, "Go").id), 12)
    assert outcome.ok, outcome.rejection
    await driver.observe()  # the model reads meanwhile
    expected = ("12", idempotency_key(12)) if linger > 1.5 else (None, None)
    assert await _written(site, "fetch", "click-late") == expected


@browser_test
@pytest.mark.parametrize("how", HOWS)
async def test_a_write_a_page_makes_as_it_loads_is_the_pages(driver: PageDriver, site: FixtureSite, how: str) -> None:
    outcome = await driver.act(Navigate(url=f"/site/page-writes.html?how={how}&when=load"), 5)
    assert outcome.ok, outcome.rejection
    assert await _written(site, how, "load") == (None, None)
    assert site.tagged(f"/site/page-writes.html?how={how}&when=load")[-1] == "5", "the page itself is the model's"


@browser_test
@pytest.mark.parametrize("how", HOWS)
async def test_a_write_the_page_loaded_by_a_models_click_makes_as_it_loads_is_the_pages(
        driver: PageDriver, site: FixtureSite, how: str) -> None:
    observation = await open_page(driver, f"page-writes.html?how={how}&when=none")
    outcome = await driver.act(Click(id=named(observation, "Next page").id), 8)
    assert outcome.ok, outcome.rejection
    assert site.tagged(f"/site/page-writes.html?how={how}&when=load")[-1] == "8", "the click's navigation is its"
    assert await _written(site, how, "load") == (None, None)


@browser_test
@pytest.mark.parametrize("how", HOWS)
async def test_a_write_from_a_timer_while_the_model_reads_is_the_pages(driver: PageDriver, site: FixtureSite,
                                                                      how: str) -> None:
    outcome = await driver.act(Navigate(url=f"/site/page-writes.html?how={how}&when=timer"), 3)
    assert outcome.ok, outcome.rejection
    await driver.observe()  # the model reads; the page's timer fires 2 s after its load
    assert await _written(site, how, "timer") == (None, None)


@browser_test
async def test_a_write_the_start_page_makes_as_it_loads_is_the_pages(driver: PageDriver, site: FixtureSite) -> None:
    await driver.start(f"{site.origin}/site/page-writes.html?how=xhr&when=load")  # as computerops/runs/episode.py
    assert await _written(site, "xhr", "load") == (None, None)
    assert site.tagged("/site/page-writes.html?how=xhr&when=load")[-1] == "0"


def _operation(seq: int, action: int | None, method: str) -> Operation:
    return Operation(seq=seq, action=action, method=method, path="/site/x", query="", content_type=None, body="",
                     status=200, location=None, response_digest="0" * 64, journal_rows=1)


def test_the_record_counts_the_pages_writes_apart() -> None:
    operations = [_operation(1, 0, "GET"), _operation(2, None, "POST"), _operation(3, 1, "POST"),
                  _operation(4, None, "GET"), _operation(5, None, "delete"), _operation(6, None, "HEAD")]
    assert page_writes(operations) == 2, "writes with no action: the page's; reads and the model's writes are not"
    assert page_writes([op for op in operations if op.action is not None]) == 0


def test_the_report_sums_the_pages_writes_and_leaves_them_out_when_none() -> None:
    plain = records()
    written = [r.model_copy(update={"page_writes": n}) for r, n in zip(plain, [0, 2, 0, 1], strict=False)]
    table = outcome_table("all", [*written, *plain[4:]])
    assert (table.page_writes, table.episodes_with_page_writes) == (3, 2)
    assert "page_writes" not in outcome_table("all", plain).model_dump(mode="json")
    assert "page_writes" not in plain[0].model_dump(mode="json"), "a record without any reads as before"
    shown = render_html(run_report("r1", written, declared_scripted=False, manifest=manifest(written)))
    assert "Writes the pages" in shown and "own script made (no action of the model" in shown
    assert "): 3 in 2 episode(s)." in shown


@browser_test
async def test_dialogs_the_start_page_raises_as_it_loads_are_the_first_observations(driver: PageDriver,
                                                                                   site: FixtureSite) -> None:
    await driver.start(f"{site.origin}/site/start-dialogs.html")  # as computerops/runs/episode.py opens it
    first = await driver.observe()
    assert first.dialogs == ["Welcome A", "Welcome B"], first.text
    assert "Accept the terms?" in first.text and driver.dialogs.open is not None, "the confirm waits for the model"
    assert (await driver.act(Navigate(url="/site/links.html"), 1)).rejection is not None, "only its answer is taken"
    answered = await driver.act(AnswerDialog(accept=False), 1)
    assert answered.ok, answered
    assert "Terms refused" in (await driver.observe()).text, "the model's answer, not one given for it"
    assert site.tagged("/site/start-dialogs.html") == ["0"]
