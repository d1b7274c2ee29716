"""Visiting every page of a site that GET links reach, for checks that must cover the whole catalog.

The crawl follows links only (`<a href>`, `<area href>`, in frames and open shadow roots too); it
never submits a form, not even a GET one, so the tenant's data stays as it was: the only trace it
leaves is GET operations in the tenant's log.

A site holds hundreds of records, each with its own page, and its lists paginate: the crawl follows at most
`PAGES_PER_KIND` links to pages of one kind (`page_kind`: the same path but for record ids, the same query
parameters), so it reaches every kind of page within its budget instead of spending it on one kind's rows.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from urllib.parse import urljoin, urlsplit

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict

from adapter.driver import site_path
from sites.kit.paging import PAGE_SIZE
from sites.kit.site import SiteDefinition
from tasks import LoadedTask

DEFAULT_PAGE_LIMIT = 200
NAVIGATION_TIMEOUT_MS = 15_000
DEFAULT_SEED = 1
"""The seed a site is crawled with when no catalog task names one (TaskSpec's default)."""
PAGES_PER_KIND = PAGE_SIZE
"""Links to pages of one kind a crawl follows: as many as one list page links (its rows' pages); the rest are the
same page over other rows."""

PageKind = tuple[str, tuple[str, ...]]

OnPage = Callable[[Page, str], Awaitable[None]]
"""Called on each visited page, once it has loaded and its links are read, with its site path."""

# Every link target of the document, its same-origin frames and open shadow roots, in document order.
_LINKS = """() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if ((el.localName === "a" || el.localName === "area") && el.hasAttribute("href")) found.push(el.href);
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.localName === "iframe" || el.localName === "frame") {
        let doc = null;
        try { doc = el.contentDocument; } catch (e) { /* cross-origin */ }
        if (doc) walk(doc);
      }
    }
  };
  walk(document);
  return found;
}"""


class CrawlTarget(BaseModel):
    """One site to crawl: with which seed, from which paths (the site's root first)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    site: str
    seed: int
    start_paths: list[str]


def page_kind(path: str) -> PageKind:
    """What kind of page a site path (path and query) is: its path with every segment that holds a digit (a
    record's id or number: `INV-1003`, `P-301`, `12`) as `*`, and the sorted names of its query parameters
    (`/invoices/viewer?vendor=X&page=2`: the vendor-filtered list's later pages)."""
    parts = urlsplit(path)
    segments = ["*" if any(c.isdigit() for c in segment) else segment for segment in parts.path.split("/")]
    names = sorted({pair.split("=", 1)[0] for pair in parts.query.split("&") if pair})
    return "/".join(segments), tuple(names)


def crawl_targets(tasks: Iterable[LoadedTask], sites: Mapping[str, SiteDefinition]) -> list[CrawlTarget]:
    """For each site (name order) and each seed its catalog tasks use (or `DEFAULT_SEED`): the site's
    root, then the start paths of those tasks in id order, without repeats."""
    by_site: dict[str, list[LoadedTask]] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        by_site.setdefault(task.spec.site, []).append(task)
    targets = []
    for name in sorted(sites):
        site_tasks = by_site.get(name, [])
        for seed in sorted({t.spec.seed for t in site_tasks} or {DEFAULT_SEED}):
            paths = [sites[name].start_path] + [t.spec.start_path for t in site_tasks if t.spec.seed == seed]
            targets.append(CrawlTarget(site=name, seed=seed, start_paths=list(dict.fromkeys(paths))))
    return targets


def _site_path(url: str, origin: str, site_prefix: str) -> str | None:
    """Path and query of a URL on the site (fragment dropped), or None for anything off the site."""
    path = site_path(url, origin)
    if path == url or urlsplit(url).scheme not in ("http", "https"):
        return None  # site_path keeps URLs of other origins whole
    if not (path.startswith(site_prefix) or urlsplit(path).path == site_prefix.rstrip("/")):
        return None
    return path


async def crawl_site_pages(
    context: BrowserContext | Page,
    origin: str,
    start_paths: Sequence[str],
    *,
    site_prefix: str,
    limit: int = DEFAULT_PAGE_LIMIT,
    per_kind: int = PAGES_PER_KIND,
    on_page: OnPage | None = None,
) -> list[str]:
    """Visit, breadth first, every page of the site that GET links reach from `start_paths`.

    `context` must already be bound to a tenant of the site (`computerops.runs.serving.tenant_context`); the crawl
    opens a page of its own there and closes it at the end. Given a page of such a context instead, it
    navigates that page and leaves it open, so that `on_page` can use a driver made for that page
    (a `PageDriver`). Only links whose URL is on `origin` and under `site_prefix` (`/helpdesk/`)
    are followed, fragments ignored; links are taken in document order, so the same site gives the
    same crawl. At most `limit` pages are visited, and links to at most `per_kind` pages of one kind (`page_kind`)
    are followed (start paths are always visited). Returns the site path (path and query) of each
    page visited, in visit order; a link that redirects counts as the page it lands on. No form is
    ever submitted, so a site whose GET handlers are safe (as HTTP requires) keeps its state.
    """
    origin = origin.rstrip("/")
    queue: deque[str] = deque()
    seen: set[str] = set()
    for path in start_paths:
        start = _site_path(urljoin(origin + "/", path), origin, site_prefix)
        if start is not None and start not in seen:
            seen.add(start)
            queue.append(start)
    visited: list[str] = []
    done: set[str] = set()
    kinds: Counter[PageKind] = Counter()
    page = await context.new_page() if isinstance(context, BrowserContext) else context
    try:
        while queue and len(visited) < limit:
            path = queue.popleft()
            try:
                await page.goto(origin + path, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)
            except PlaywrightError:
                continue  # not a page (a download, a failed load): nothing to visit
            landed = _site_path(page.url, origin, site_prefix)
            if landed is None or landed in done:
                continue  # redirected off the site, or to a page already visited
            seen.add(landed)
            done.add(landed)
            visited.append(landed)
            for url in await page.evaluate(_LINKS):
                target = _site_path(urljoin(page.url, str(url)), origin, site_prefix)
                if target is not None and target not in seen and kinds[page_kind(target)] < per_kind:
                    seen.add(target)
                    kinds[page_kind(target)] += 1
                    queue.append(target)
            if on_page is not None:
                await on_page(page, landed)
    finally:
        if page is not context:
            await page.close()
    return visited

