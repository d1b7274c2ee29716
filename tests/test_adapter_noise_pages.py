"""The adapter on pages with the noise real back offices have (issue 49, docs/noise.md "The adapter under noise"),
each as a family of pages built by program in one driver's page: modal and non-modal dialogs (ARIA and native,
nested, closed, hidden), boxes fixed over the window at several coverages over pages that can and cannot scroll
them clear, lists that load more as their end scrolls into view (sentinels of several kinds, and lookalikes that are
not), and a banner that pushes the page down after it was observed.

One driver for the module (one browser context): every case builds its page's body (`build`), so no page loads
between cases.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser

from adapter.actions import Click, More
from adapter.driver import PageDriver
from adapter.fidelity import compare_with_accessibility_tree
from adapter.observation import Observation

pytestmark = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=100_000) as page_driver:
        await open_page(page_driver, "links.html")
        yield page_driver


async def build(driver: PageDriver, html: str, script: str = "") -> Observation:
    """Make `html` the page's whole body, scrolled to its top, run `script` in the page, observe (as after a load)."""
    await driver.page.evaluate("""([html, script]) => {
      for (const open of document.querySelectorAll("dialog")) open.close();
      document.body.innerHTML = html;
      window.record = [];
      window.scrollTo(0, 0);
      new Function(script)();
    }""", [html, script])
    await driver.settle()
    return await driver.observe()


async def record(driver: PageDriver) -> list[str]:
    return [str(entry) for entry in await driver.page.evaluate("() => window.record")]


def names(observation: Observation) -> list[str]:
    return [control.name for control in observation.controls]


# --- 1. A modal dialog makes the rest of the page inert ------------------------------------------------------------

PAGE_BEHIND = ('<h1>Tickets</h1><p>Text of the page behind.</p><button onclick="record.push(\'behind\')">Behind '
               'button</button><a href="/site/forms.html">Behind link</a><input aria-label="Behind field">')
DIALOG_BODY = ('<h2 id="title-{n}">Survey {n}</h2><p>Dialog text {n}.</p><button onclick="record.push(\'close {n}\'); '
               'this.closest(\'[data-box]\').remove()">Close {n}</button><input aria-label="Answer {n}">')
OPENINGS = {
    "aria dialog": ('<div role="dialog" aria-modal="true" aria-labelledby="title-{n}" data-box>{body}</div>', True),
    "aria alertdialog": ('<div role="alertdialog" aria-modal="TRUE" aria-label="Survey {n}" data-box>{body}</div>',
                         True),
    "native showModal": ('<dialog data-box data-modal>{body}</dialog>', True),
    "aria dialog, not modal": ('<div role="dialog" aria-labelledby="title-{n}" data-box>{body}</div>', False),
    "aria-modal false": ('<div role="dialog" aria-modal="false" data-box>{body}</div>', False),
    "native show()": ('<dialog data-box data-shown>{body}</dialog>', False),
    "closed aria dialog": ('<div role="dialog" aria-modal="true" style="display:none" data-box>{body}</div>', False),
    "hidden aria dialog": ('<div role="dialog" aria-modal="true" hidden data-box>{body}</div>', False),
    "aria dialog in an aria-hidden box": ('<div aria-hidden="true"><div role="dialog" aria-modal="true" data-box>'
                                          '{body}</div></div>', False),
}
BACKDROPS = {
    "no backdrop": "{dialog}",
    "a backdrop": ('<div style="position:fixed;inset:0;background:rgba(0,0,0,.5);display:flex;align-items:center;'
                   'justify-content:center;z-index:10">{dialog}</div>'),
}
OPEN_NATIVE = """for (const d of document.querySelectorAll("dialog[data-modal]")) d.showModal();
for (const d of document.querySelectorAll("dialog[data-shown]")) d.show();"""


def dialog(opening: str, n: int, inner: str = "") -> str:
    return OPENINGS[opening][0].format(n=n, body=DIALOG_BODY.format(n=n) + inner)


@pytest.mark.parametrize("opening", OPENINGS)
async def test_a_modal_dialog_offers_only_its_controls_and_a_non_modal_one_hides_nothing(
    driver: PageDriver, opening: str,
) -> None:
    modal = OPENINGS[opening][1]
    for backdrop in BACKDROPS.values():
        observation = await build(driver, PAGE_BEHIND + backdrop.format(dialog=dialog(opening, 1)), OPEN_NATIVE)
        case = (opening, backdrop, observation.text)
        if modal:
            assert names(observation) == ["Close 1", "Answer 1"], case
            assert observation.modal == "Survey 1" and "A modal dialog ('Survey 1') is open" in observation.text, case
            assert "Text of the page behind" not in observation.text, case
            assert (await driver.act(Click(id=named(observation, "Close 1").id), 1)).ok, case
            after = await driver.observe()
            assert after.modal is None and "Behind button" in names(after), (case, after.text)
        elif "hidden" in opening or "closed" in opening:
            assert names(observation) == ["Behind button", "Behind link", "Behind field"], case
            assert observation.modal is None and "modal" not in observation.text, case
        else:
            assert names(observation) == ["Behind button", "Behind link", "Behind field", "Close 1", "Answer 1"], case
            assert observation.modal is None and "modal" not in observation.text, case


async def test_the_page_behind_an_aria_modal_dialog_is_the_documented_difference_from_chromium(
    driver: PageDriver,
) -> None:
    """Chromium's accessibility tree keeps the page behind an aria-modal dialog (the focus inside it or not): the
    audit lists exactly those controls as missing, which annotate.js's opening comment documents."""
    for focus in ("", "document.querySelector('[data-box] input').focus();"):
        observation = await build(driver, PAGE_BEHIND + BACKDROPS["a backdrop"].format(dialog=dialog("aria dialog", 1)),
                                  focus)
        report = await compare_with_accessibility_tree(driver, observation)
        assert sorted(c.name for c in report.missing) == ["Behind button", "Behind field", "Behind link"], focus
        assert not report.extra


@pytest.mark.parametrize("outer, inner", list(itertools.product(("aria dialog", "native showModal"), repeat=2)))
async def test_of_nested_modal_dialogs_only_the_innermost_is_offered(
    driver: PageDriver, outer: str, inner: str,
) -> None:
    # native dialogs are opened in document order: the inner one after its outer one, over it
    observation = await build(driver, PAGE_BEHIND + dialog(outer, 1, inner=dialog(inner, 2)), OPEN_NATIVE)
    assert names(observation) == ["Close 2", "Answer 2"], (outer, inner, observation.text)
    assert observation.modal == "Survey 2", observation.text
    assert "Dialog text 1" not in observation.text and "Dialog text 2" in observation.text


async def test_of_two_modal_dialogs_side_by_side_the_one_on_top_is_offered(driver: PageDriver) -> None:
    stacked = ('<div role="dialog" aria-modal="true" aria-label="Survey 1" data-box style="position:fixed;left:20px;'
               'top:20px;width:300px;height:200px;background:#fff;z-index:5">' + DIALOG_BODY.format(n=1) + '</div>'
               '<div role="dialog" aria-modal="true" aria-label="Survey 2" data-box style="position:fixed;left:20px;'
               'top:20px;width:300px;height:200px;background:#eee;z-index:{z}">' + DIALOG_BODY.format(n=2) + '</div>')
    for z, on_top in ((9, 2), (1, 1)):
        observation = await build(driver, PAGE_BEHIND + stacked.format(z=z))
        assert names(observation) == [f"Close {on_top}", f"Answer {on_top}"], (z, observation.text)
    focused = await build(driver, PAGE_BEHIND + stacked.format(z=9),
                          "document.querySelector('[aria-label=\"Survey 1\"] input').focus();")
    assert names(focused) == ["Close 1", "Answer 1"], "the dialog holding the focus is the open one"


# --- 2. Boxes fixed over the window -----------------------------------------------------------------------------

def banner(height: str) -> str:
    return (f'<div role="region" aria-label="Cookie consent" style="position:fixed;left:0;right:0;bottom:0;'
            f'height:{height};background:#fff;border-top:2px solid #333;z-index:100"><p>We use cookies.</p>'
            '<button onclick="record.push(\'accept\'); this.parentNode.remove()">Accept all</button></div>')


def rows(count: int, gap: int) -> str:
    return "".join(f'<p style="margin:0;height:{gap}px"><button onclick="record.push(\'row {n}\')">Row {n}'
                   "</button></p>" for n in range(count))


COVERAGES = ("20vh", "45vh", "100vh")
"""How much of the window the banner covers, from its bottom."""
PAGES = {"short": 11, "long": 40}
"""Rows of 60 px: a short page (676 px with the body's margins) does not scroll in the 720 px window; a long one
does."""


@pytest.mark.parametrize("coverage, length", list(itertools.product(COVERAGES, PAGES)))
async def test_controls_under_a_fixed_banner_are_scrolled_clear_or_marked_covered(
    driver: PageDriver, coverage: str, length: str,
) -> None:
    height = await driver.page.evaluate("() => innerHeight")
    observation = await build(driver, rows(PAGES[length], 60) + banner(coverage))
    case = (coverage, length, observation.text)
    top = height * (1 - int(coverage.removesuffix("vh")) / 100)
    middles = await driver.page.evaluate("() => [...document.querySelectorAll('p > button')].map((b) => "
                                         "b.getBoundingClientRect()).map((r) => r.top + r.height / 2)")
    under = [n for n, middle in enumerate(middles) if top <= middle < height]  # their middles lie under the banner
    assert under, case
    can_clear = coverage != "100vh" and length == "long"
    # the last rows of a long page: with the window scrolled to its end their middles still lie under the banner
    end = max(0, await driver.page.evaluate("() => document.scrollingElement.scrollHeight - innerHeight"))
    always = [n for n, middle in enumerate(middles) if middle - end >= top]
    for n in range(PAGES[length]):
        control = named(observation, f"Row {n}")
        assert control.covered == (n in always or (not can_clear and (n in under or coverage == "100vh"))), (n, case)
    assert "'Cookie consent' is fixed over" in observation.text, case
    assert ("marked covered" in observation.text) == (not can_clear or bool(always)), case
    assert named(observation, "Accept all").covered is False
    outcome = await driver.act(Click(id=named(observation, f"Row {under[-1]}").id), 1)
    if can_clear:
        assert outcome.ok, (outcome, case)
        assert await record(driver) == [f"row {under[-1]}"], case
    else:
        assert outcome.rejection is not None and "covered by <" in outcome.rejection.reason, (outcome, case)
        assert await record(driver) == [], case


@pytest.mark.parametrize("length", PAGES)
async def test_a_clickable_under_a_fixed_banner_is_offered_where_it_can_be_scrolled_clear(
    driver: PageDriver, length: str,
) -> None:
    """A role-less target is offered only where a click would reach it: under the banner, when the window can be
    scrolled to clear it."""
    clickables = "".join(f'<div style="height:60px"><span onclick="record.push(\'item {n}\')">Item {n}</span></div>'
                         for n in range(PAGES[length]))
    observation = await build(driver, clickables + banner("45vh"))
    middles = await driver.page.evaluate("() => [...document.querySelectorAll('span')].map((b) => "
                                         "b.getBoundingClientRect()).map((r) => r.top + r.height / 2)")
    height = await driver.page.evaluate("() => innerHeight")
    under = [n for n, middle in enumerate(middles) if height * 0.55 <= middle < height]
    assert under
    offered = {control.name for control in observation.controls if control.role == "clickable"}
    assert all((f"Item {n}" in offered) == (length == "long" or n not in under) for n in range(PAGES[length])), (
        observation.text)
    if length == "long":
        assert (await driver.act(Click(id=named(observation, f"Item {under[-1]}").id), 1)).ok
        assert await record(driver) == [f"item {under[-1]}"]


async def test_a_sticky_header_and_a_toast_hide_nothing_reachable(driver: PageDriver) -> None:
    page = ('<header style="position:sticky;top:0;height:50px;background:#fff;z-index:5"><button>Menu</button>'
            '</header>' + rows(30, 60) +
            '<div role="status" style="position:fixed;right:10px;bottom:10px;width:150px;height:40px;'
            'background:#ffc;z-index:6">Saved</div>')
    observation = await build(driver, page, "window.scrollTo(0, 300)")
    assert not any(control.covered for control in observation.controls), observation.text
    middles = await driver.page.evaluate("() => [...document.querySelectorAll('p > button')].map((b) => "
                                         "b.getBoundingClientRect()).map((r) => r.top + r.height / 2)")
    under_header = [n for n, middle in enumerate(middles) if 0 <= middle < 50]  # scrolled under the sticky header
    assert under_header
    outcome = await driver.act(Click(id=named(observation, f"Row {under_header[0]}").id), 1)
    assert outcome.ok, outcome
    assert await record(driver) == [f"row {under_header[0]}"]


async def test_a_cover_that_is_not_fixed_still_refuses_the_click_as_before(driver: PageDriver) -> None:
    page = ('<div style="position:relative">' + rows(3, 60) + '<div style="position:absolute;inset:0;'
            'background:#ccc"></div></div>')
    observation = await build(driver, page)
    assert not any(control.covered for control in observation.controls) and "fixed over" not in observation.text
    outcome = await driver.act(Click(id=named(observation, "Row 1").id), 1)
    assert outcome.rejection is not None and "covered by" in outcome.rejection.reason


# --- 3. Lists that load more as their end scrolls into view -------------------------------------------------------

LAZY_SCRIPT = """
  const sentinel = document.querySelector("[data-sentinel]");
  const list = document.getElementById("list");
  let shown = 10;
  new IntersectionObserver((entries) => {
    if (!entries[0].isIntersecting || shown >= 30) return;
    setTimeout(() => {
      for (let i = 0; i < 10; i++, shown++) {
        const item = document.createElement(list.localName === "tbody" ? "tr" : "li");
        item.innerHTML = list.localName === "tbody" ? `<td>Item ${shown}</td>` : `Item ${shown}`;
        list.insertBefore(item, sentinel.parentNode === list ? sentinel : null);
      }
      if (shown >= 30) sentinel.remove();
    }, 300);
  }).observe(sentinel);
"""
TEN = "".join(f"<li>Item {n}</li>" for n in range(10))
TEN_ROWS = "".join(f"<tr><td>Item {n}</td></tr>" for n in range(10))
SENTINELS = {
    "a status line after a table": (f'<table><tbody id="list">{TEN_ROWS}</tbody></table>'
                                   '<p role="status" data-sentinel>Loading more rows…</p>'),
    "an empty sentinel div after a list": (f'<ul id="list">{TEN}</ul><div class="list-sentinel" data-sentinel '
                                          'style="height:1px"></div>'),
    "a loader last in the list's box": (f'<div><ul id="list">{TEN}</ul><div id="infinite-loader" data-sentinel>'
                                       '<span class="spinner"></span></div></div>'),
    "a Loading line last among the items": (f'<ul id="list">{TEN}<li data-sentinel class="item">Loading…</li></ul>'),
}
NOT_SENTINELS = {
    "a spinner beside a form's button": '<form><span role="status">Loading…</span><button>Save</button></form>',
    "a load-more button after a list": f'<ul>{TEN}</ul><p><button>Load more</button></p>',
    "a loading paragraph with no list": '<h1>Report</h1><p>Loading the report may take a minute.</p>',
    "a long paragraph after a table": (f"<table>{TEN_ROWS}</table><p>Loading and unloading of the trucks is "
                                       "recorded at the gate; ask the dock supervisor for the weekly sheets.</p>"),
}


@pytest.mark.parametrize("sentinel", SENTINELS)
async def test_a_list_that_loads_on_scroll_is_said_and_more_loads_it(driver: PageDriver, sentinel: str) -> None:
    spacer = '<div style="height:900px">Top of the page</div>'
    observation = await build(driver, spacer + SENTINELS[sentinel], LAZY_SCRIPT)
    assert observation.loads_more and "More of a list loads" in observation.text, observation.text
    assert "Item 9" in observation.text and "Item 10" not in observation.text
    outcome = await driver.act(More(), 1)
    assert outcome.ok and "loaded more" in outcome.note, outcome
    after = await driver.observe()
    assert "Item 19" in after.text and "Item 20" not in after.text, after.text
    assert (await driver.act(More(), 2)).ok
    done = await driver.observe()
    assert "Item 29" in done.text and not done.loads_more, done.text
    refused = await driver.act(More(), 3)
    assert refused.rejection is not None and "already shown" in refused.rejection.reason


async def test_what_a_list_fetches_as_more_scrolls_it_carries_the_more_action_s_number(
    driver: PageDriver, site: FixtureSite,
) -> None:
    fetching = LAZY_SCRIPT.replace("setTimeout(() => {", "fetch('/site/api/ping').then(() => {").replace(
        "}, 300);", "});")
    observation = await build(driver, '<div style="height:900px"></div>' + SENTINELS["a status line after a table"],
                              fetching)
    assert observation.loads_more
    assert (await driver.act(More(), 7)).ok
    assert "Item 19" in (await driver.observe()).text
    assert site.tagged("/site/api/ping")[-1:] == ["7"], site.tagged("/site/api/ping")


@pytest.mark.parametrize("lookalike", NOT_SENTINELS)
async def test_a_loading_text_that_is_no_list_end_is_not_taken_for_one(driver: PageDriver, lookalike: str) -> None:
    observation = await build(driver, NOT_SENTINELS[lookalike])
    assert not observation.loads_more and "More of a list loads" not in observation.text, observation.text
    outcome = await driver.act(More(), 1)
    assert outcome.rejection is not None and "already shown" in outcome.rejection.reason


# --- 4. A banner that pushes the page down after it was observed ----------------------------------------------------

async def test_a_control_a_late_banner_pushed_down_is_clicked_where_it_is_now(driver: PageDriver) -> None:
    observation = await build(driver, rows(5, 40))
    await driver.page.evaluate("""() => {
      const banner = document.createElement("div");
      banner.style.cssText = "height:120px;background:#fff3cd";
      banner.textContent = "Scheduled maintenance";
      document.body.insertBefore(banner, document.body.firstChild);
    }""")
    outcome = await driver.act(Click(id=named(observation, "Row 1").id), 1)
    assert outcome.ok, outcome
    assert await record(driver) == ["row 1"], "the click lands on the control offered, not on what took its place"
    assert "Scheduled maintenance" in (await driver.observe()).text
