"""The observation's tokens against browser-use's view of the same pages (issue 48, item 2): the median page at least
TOKEN_TARGET times smaller, on the fixture pages of the set and on its 60 catalog pages (both in the slow tier),
with every offered control on its line. The peer's views are kept in tests/fixtures/peers/browser-use.json
(scripts/peer_views.py makes them again)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest
from playwright.async_api import Browser

from adapter.observation import controls_in_text
from computerops.bench.peer_tokens import (
    CATALOG_PAGES_PER_SITE,
    FIXTURE_PAGES,
    TOKEN_TARGET,
    PeerView,
    PeerViews,
    compare,
    line_parts,
    observe_set,
    page_set,
    read_peer_views,
    stale_views,
)

needs_tokenizer = pytest.mark.skipif(find_spec("bpe_openai") is None,
                                     reason="tokens are counted with bpe-openai (the bench's extra)")

FRESH_SHARE = 0.75
"""A fixture page whose file changed since its view was made is left out; most must still be compared."""


def test_an_observation_s_characters_are_told_apart_by_what_they_say() -> None:
    text = ("Page: Tickets\nURL: /t\n\n# Tickets\nOpen tickets\n|Number|Subject|\n|[3]|Jammed|\n"
            '[3] link "T-1"\n[4] textbox "Note" value="" required')
    parts = line_parts(text)
    assert parts == {"header": 22, "heading": 10, "text": 14, "row": 30, "control id": 8, "control role": 13,
                     "control name": 11, "control rest": 20}
    assert sum(parts.values()) == len(text) + 1


def words(count: int) -> str:
    return " ".join(["word"] * count)


def test_the_ratio_is_the_median_page_s_and_a_page_without_a_view_is_an_error() -> None:
    views = PeerViews(peer="peer 1", how="by hand", pages=[
        PeerView(page="a", text=words(60)), PeerView(page="b", text=words(10)), PeerView(page="c", text=words(20))])
    def count(text: str) -> int:
        return len(text.split())

    comparison = compare({"a": words(10), "b": words(10), "c": words(10)}, views, count, "words")
    assert (comparison.ratio, comparison.lowest, comparison.lowest_page) == (2.0, 1.0, "b")
    assert (comparison.pooled, comparison.adapter_tokens, comparison.peer_tokens) == (3.0, 30, 90)
    with pytest.raises(KeyError):
        compare({"d": "word"}, views, count)


def test_the_peer_s_views_cover_the_page_set() -> None:
    views = read_peer_views()
    pages = [view.page for view in views.pages]
    assert sum(page.startswith("catalog ") for page in pages) >= CATALOG_PAGES_PER_SITE * 5
    assert [page.removeprefix("fixture ") for page in pages if page.startswith("fixture ")] == list(FIXTURE_PAGES)
    assert views.peer.startswith("browser-use ")


@needs_tokenizer
@pytest.mark.slow  # o200k's vocabulary takes seconds to load: with the catalog pages, in the slow tier
async def test_the_fixture_pages_take_fewer_tokens_than_browser_use_s_view(browser: Browser) -> None:
    views = read_peer_views()
    stale = set(stale_views(views))
    async with page_set(browser, catalog=False) as pages:
        fresh = [page for page in pages if page.page not in stale]
        assert len(fresh) >= FRESH_SHARE * len(FIXTURE_PAGES), f"stale views, run scripts/peer_views.py: {stale}"
        seen = await observe_set(fresh)
    comparison = compare({page: observation.text for page, observation in seen.items()}, views)
    assert comparison.ratio >= TOKEN_TARGET, comparison
    for observation in seen.values():  # every offered control has its line
        assert [c[0] for c in controls_in_text(observation.text)] == [c.id for c in observation.controls] != []


@needs_tokenizer
@pytest.mark.slow
async def test_the_catalog_pages_take_fewer_tokens_than_browser_use_s_view(browser: Browser) -> None:
    views = read_peer_views()
    async with page_set(browser, fixtures=False) as pages:
        seen = await observe_set(pages)
    assert set(seen) == {view.page for view in views.pages if view.page.startswith("catalog ")}
    comparison = compare({page: observation.text for page, observation in seen.items()}, views)
    assert comparison.ratio >= TOKEN_TARGET, comparison
