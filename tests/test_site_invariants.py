"""What every registered site keeps, checked on each site of `sites.registry` in-process (no browser).

Each site is crawled on a fresh tenant from its start page and the start pages of its catalog tasks: every link
that stays on the site, and every GET form submitted with each combination of its choices (text fields as shown
and with sample texts). On every page reached: the site's navigation, the operation's logical time, no tenant
token, no favicon fetch, a label for every form control; page loads change nothing, and no link is broken. The
same episode (that crawl, then every POST form submitted as a browser would) on two fresh tenants of one seed
gives identical operations (response bytes included), journal and final state. A site added to the registry gets
all of these with no test of its own; so do the test folder's own sites (`TEST_SITES`), registered for this module.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup
from bs4.element import Tag
from fastapi.testclient import TestClient
from toy_site import TASKS as TOY_TASKS
from toy_site import TOY

from computerops.catalog.crawl import PAGES_PER_KIND, PageKind, page_kind
from sites.kit import (
    TENANT_HEADER,
    JournalEntry,
    Operation,
    SiteDefinition,
    StateSnapshot,
    Tenant,
    TenantRegistry,
    create_app,
    now_text,
)
from sites.registry import registered, site_definitions
from tasks import load_catalog

TEST_SITES = ((TOY, TOY_TASKS),)
"""The test folder's own sites, each with its folder of task files (tests/toy_site: the site docs/extending.md's
checklist builds). Registered while this module loads, they get every invariant here as the registry's sites do."""
with registered(*(site for site, _ in TEST_SITES)):
    SITES = site_definitions()
    CATALOG = {**load_catalog(), **{task.id: task for _, root in TEST_SITES for task in load_catalog(root).values()}}

ORIGIN = "http://testserver"
MAX_PAGES = 500
MAX_QUERIES_PER_FORM = 64
SAMPLE_TEXTS = ("1 2", "policy")
"""What a GET form's text fields are also submitted with: numbers (a calculator) and a word (a search)."""
FILLER = "1"
"""What an empty text field of a POST form is submitted with when no form of the site shows a value for its name."""
TEXT_KINDS = frozenset({"text", "search", "email", "tel", "url", "number", "password", "textarea"})
UNLABELLED_KINDS = frozenset({"hidden", "submit", "button", "image", "reset"})
FAVICON = '<link rel="icon" href="data:,">'
EPISODE_SEED = 5
SHOWN = 5


FormField = tuple[str, str, str]
"""(name, value, kind): kind is the input type, `select` or `textarea`."""


@dataclass(frozen=True)
class SitePage:
    """A page the crawl reached: its site path, the operation that served it (its logical time) and its HTML."""

    path: str
    seq: int
    html: str


@dataclass(frozen=True)
class PostForm:
    """A POST form as a page shows it: where it posts and what a browser would send unchanged."""

    action: str
    fields: tuple[FormField, ...]


@dataclass
class Crawl:
    pages: list[SitePage] = field(default_factory=list)
    forms: list[PostForm] = field(default_factory=list)
    broken: list[tuple[str, int]] = field(default_factory=list)
    """Links (and GET form submissions) that answered neither a page nor a redirect on the site."""


Evidence = tuple[list[Operation], list[JournalEntry], StateSnapshot]


@dataclass(frozen=True)
class Answer:
    """What the site answered one request."""

    status: int
    location: str | None
    text: str

    @property
    def is_redirect(self) -> bool:
        return 300 <= self.status < 400


class Visitor:
    """One tenant's requests; every request is one operation of the tenant, so `seq` is the last one's number."""

    def __init__(self, client: TestClient, site: SiteDefinition, tenant: Tenant) -> None:
        self.client, self.site, self.tenant = client, site, tenant
        self.seq = 0

    def get(self, path: str) -> Answer:
        self.seq += 1
        response = self.client.get(path, headers={TENANT_HEADER: self.tenant.token})
        return Answer(response.status_code, response.headers.get("location"), response.text)

    def post(self, path: str, pairs: list[tuple[str, str]]) -> Answer:
        self.seq += 1
        headers = {TENANT_HEADER: self.tenant.token, "content-type": "application/x-www-form-urlencoded"}
        response = self.client.post(path, content=urlencode(pairs), headers=headers)
        return Answer(response.status_code, response.headers.get("location"), response.text)

    def on_site(self, url: str, base: str) -> str | None:
        """The site path (path and query, no fragment) of a URL read on page `base`, or None off the site."""
        parts = urlsplit(urljoin(ORIGIN + base, url))
        if f"{parts.scheme}://{parts.netloc}" != ORIGIN or not self.site.owns_path(parts.path):
            return None
        return parts.path + (f"?{parts.query}" if parts.query else "")


def _attr(tag: Tag, name: str) -> str | None:
    value = tag.get(name)
    return value if isinstance(value, str) or value is None else " ".join(value)


def _controls(form: Tag | BeautifulSoup) -> Iterator[Tag]:
    yield from (tag for tag in form.find_all(["input", "select", "textarea"]) if isinstance(tag, Tag))


def _kind(control: Tag) -> str:
    return (_attr(control, "type") or "text").lower() if control.name == "input" else control.name


def form_fields(form: Tag) -> tuple[FormField, ...]:
    """What a browser sends for the form unchanged: named fields as shown, then the first submit button's name."""
    fields: list[FormField] = []
    for control in _controls(form):
        name, kind = _attr(control, "name"), _kind(control)
        if not name or kind in {"submit", "button", "image", "reset", "file"}:
            continue
        if control.name == "select":
            options = [o for o in control.find_all("option") if isinstance(o, Tag)]
            chosen = next((o for o in options if o.has_attr("selected")), options[0] if options else None)
            if chosen is not None:
                fields.append((name, _attr(chosen, "value") or chosen.get_text(), kind))
        elif control.name == "textarea":
            fields.append((name, control.get_text(), kind))
        elif kind not in ("checkbox", "radio") or control.has_attr("checked"):
            fields.append((name, _attr(control, "value") or ("on" if kind in ("checkbox", "radio") else ""), kind))
    buttons = [b for b in form.find_all(["button", "input"]) if isinstance(b, Tag) and _kind(b) == "submit"]
    if buttons and _attr(buttons[0], "name"):
        fields.append((_attr(buttons[0], "name") or "", _attr(buttons[0], "value") or "", "submit"))
    return tuple(fields)


def get_queries(form: Tag) -> list[str]:
    """A GET form's submissions: every combination of its selects' options, text fields as shown or a sample."""
    choices: list[list[tuple[str, str]]] = []
    for name, value, kind in form_fields(form):
        if kind == "select":
            select = form.find("select", attrs={"name": name})
            options = [o for o in select.find_all("option") if isinstance(o, Tag)] if isinstance(select, Tag) else []
            choices.append([(name, _attr(o, "value") or o.get_text()) for o in options] or [(name, value)])
        elif kind in TEXT_KINDS:
            choices.append([(name, text) for text in dict.fromkeys((value, *SAMPLE_TEXTS))])
        else:
            choices.append([(name, value)])
    combinations = itertools.islice(itertools.product(*choices), MAX_QUERIES_PER_FORM)
    return [urlencode(list(combination)) for combination in combinations]


def start_paths(site: SiteDefinition) -> list[str]:
    """The site's start page, then the start pages of its catalog tasks, each once."""
    tasks = sorted(task.spec.start_path for task in CATALOG.values() if task.spec.site == site.name)
    return list(dict.fromkeys([site.start_path, *tasks]))


def crawl(visitor: Visitor) -> Crawl:
    """Every kind of page that links and GET forms reach from the site's start paths, breadth first, in document
    order: at most `PAGES_PER_KIND` of one kind (`page_kind`), as the catalog's crawl, so a site's hundreds of
    records and list pages do not spend the crawl's bound."""
    result = Crawl()
    queue: deque[str] = deque(start_paths(visitor.site))
    seen = set(queue)
    kinds: Counter[PageKind] = Counter()

    def follow(url: str | None, base: str) -> None:
        target = None if url is None else visitor.on_site(url, base)
        if target is not None and target not in seen and kinds[page_kind(target)] < PAGES_PER_KIND:
            seen.add(target)
            kinds[page_kind(target)] += 1
            queue.append(target)

    while queue and len(result.pages) < MAX_PAGES:
        path = queue.popleft()
        response = visitor.get(path)
        if response.is_redirect:
            follow(response.location, path)
            continue
        if response.status != 200:
            result.broken.append((path, response.status))
            continue
        result.pages.append(SitePage(path, visitor.seq, response.text))
        soup = BeautifulSoup(response.text, "lxml")
        for link in soup.find_all(["a", "area"]):
            if isinstance(link, Tag):
                follow(_attr(link, "href"), path)
        for form in soup.find_all("form"):
            if not isinstance(form, Tag):
                continue
            action = visitor.on_site(_attr(form, "action") or path, path)
            if action is None:
                continue
            if (_attr(form, "method") or "get").lower() == "post":
                result.forms.append(PostForm(action, form_fields(form)))
            else:
                for query in get_queries(form):
                    follow(f"{action.split('?')[0]}?{query}", path)
    return result


def submit_every_form(visitor: Visitor, forms: list[PostForm]) -> None:
    """Each POST form once, in crawl order, as shown; an empty text field gets the value another form of the site
    shows for that name (else `FILLER`), so that submissions get past "required"; a redirect is followed once."""
    shown: dict[str, str] = {}
    for form in forms:
        for name, value, kind in form.fields:
            if kind in TEXT_KINDS and value.strip():
                shown.setdefault(name, value)
    for form in forms:
        pairs = [(name, shown.get(name, FILLER) if kind in TEXT_KINDS and not value.strip() else value)
                 for name, value, kind in form.fields]
        response = visitor.post(form.action, pairs)
        location = None if response.location is None else visitor.on_site(response.location, form.action)
        if location is not None:
            visitor.get(location)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantRegistry]:
    registry = TenantRegistry(Path(tmp_path_factory.mktemp("invariants")), sites=SITES)
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def client(registry: TenantRegistry) -> Iterator[TestClient]:
    with TestClient(create_app(registry), follow_redirects=False) as client:
        yield client


@dataclass(frozen=True)
class CrawledSite:
    """A site crawled on a fresh tenant of `EPISODE_SEED`: what the crawl found and the tenant's evidence when the
    crawl ended (page loads only); then the same tenant's whole episode (every POST form submitted), the first of the
    two episodes the replay invariant compares."""

    site: SiteDefinition
    tenant: Tenant
    crawl: Crawl
    crawled: Evidence
    episode: Evidence


@pytest.fixture(scope="module", params=sorted(SITES))
def crawled(request: pytest.FixtureRequest, registry: TenantRegistry, client: TestClient) -> Iterator[CrawledSite]:
    """One site crawled on a fresh tenant in a fresh browser, shared by the tests of that site; the crawl is also the
    first episode's (its forms then submitted), so each site is crawled twice in all, not three times."""
    site = SITES[request.param]
    client.cookies.clear()
    tenant = registry.create(site.name, EPISODE_SEED)
    visitor = Visitor(client, site, tenant)
    found = crawl(visitor)
    assert len(tenant.operations()) == visitor.seq, "every request of the crawl is one operation"
    pages_only = tenant.operations(), tenant.journal(), tenant.snapshot()
    submit_every_form(visitor, found.forms)
    yield CrawledSite(site, tenant, found, pages_only, (tenant.operations(), tenant.journal(), tenant.snapshot()))
    registry.drop(tenant)


def _failures(problems: list[str]) -> str:
    return f"{len(problems)} problem(s): " + "; ".join(problems[:SHOWN])


def navigation(html: str) -> list[tuple[str | None, str]]:
    """The links of the page header's navigation: (href, text) in order."""
    header = BeautifulSoup(html, "lxml").find("header")
    nav = header.find("nav") if isinstance(header, Tag) else None
    links = nav.find_all("a") if isinstance(nav, Tag) else []
    return [(_attr(link, "href"), link.get_text(strip=True)) for link in links if isinstance(link, Tag)]


def test_the_crawl_reaches_every_start_page_and_no_link_is_broken(crawled: CrawledSite) -> None:
    reached = {page.path for page in crawled.crawl.pages}
    assert crawled.site.start_path in reached
    assert len(reached) > len(start_paths(crawled.site)), "the crawl went past the start pages"
    assert len(crawled.crawl.pages) < MAX_PAGES, "the crawl stopped at its bound: raise MAX_PAGES"
    assert crawled.crawl.broken == []


def test_every_page_shows_the_sites_navigation_the_logical_time_and_no_token_or_favicon_fetch(
    crawled: CrawledSite,
) -> None:
    nav = navigation(next(page.html for page in crawled.crawl.pages if page.path == crawled.site.start_path))
    assert nav, "the start page has a navigation in its header"
    problems = []
    for page in crawled.crawl.pages:
        if navigation(page.html) != nav:
            problems.append(f"{page.path}: navigation {navigation(page.html)} is not the site's {nav}")
        if f"Now: {now_text(page.seq)}" not in page.html:
            problems.append(f"{page.path}: no 'Now: {now_text(page.seq)}' (operation {page.seq})")
        if crawled.tenant.token in page.html:
            problems.append(f"{page.path}: shows the tenant token")
        if FAVICON not in page.html:
            problems.append(f"{page.path}: no {FAVICON} (the browser would fetch /favicon.ico)")
    assert not problems, _failures(problems)


def unlabelled_controls(html: str) -> tuple[int, list[str]]:
    """How many controls the page has, and those without a label that names them (for=id, an enclosing label or
    aria-label), each as `<tag name=...>`."""
    soup = BeautifulSoup(html, "lxml")
    labelled_ids = {_attr(label, "for") for label in soup.find_all("label")
                    if isinstance(label, Tag) and label.get_text(strip=True)}
    controls = [control for control in _controls(soup) if _kind(control) not in UNLABELLED_KINDS]
    missing = []
    for control in controls:
        enclosing = control.find_parent("label")
        if (_attr(control, "id") in labelled_ids - {None}
                or (enclosing is not None and enclosing.get_text(strip=True))
                or (_attr(control, "aria-label") or "").strip()):
            continue
        missing.append(f"<{control.name} name={_attr(control, 'name')!r} id={_attr(control, 'id')!r}>")
    return len(controls), missing


def test_every_form_control_has_a_label(crawled: CrawledSite) -> None:
    problems, counted = [], 0
    for page in crawled.crawl.pages:
        count, missing = unlabelled_controls(page.html)
        counted += count
        problems += [f"{page.path}: {control} has no label" for control in missing]
    assert counted > 0, "the site shows no form control at all"
    assert not problems, _failures(problems)


def test_page_loads_change_nothing(crawled: CrawledSite, registry: TenantRegistry) -> None:
    operations, journal, snapshot = crawled.crawled
    assert {op.method for op in operations} == {"GET"}
    assert journal == [] and all(op.journal_rows == 0 for op in operations)
    fresh = registry.create(crawled.site.name, EPISODE_SEED)
    try:
        assert snapshot == fresh.snapshot()
    finally:
        registry.drop(fresh)


def episode(registry: TenantRegistry, client: TestClient, site: SiteDefinition, seed: int) -> Evidence:
    """The crawl, then every POST form submitted, on a fresh tenant in a fresh browser (no cookie of an earlier
    episode: the invoices portal remembers the apps it was asked to show in one): what replay compares."""
    client.cookies.clear()
    tenant = registry.create(site.name, seed)
    visitor = Visitor(client, site, tenant)
    submit_every_form(visitor, crawl(visitor).forms)
    evidence = tenant.operations(), tenant.journal(), tenant.snapshot()
    registry.drop(tenant)
    return evidence


def _first_record_difference(
    what: str, ours: Sequence[Operation | JournalEntry], theirs: Sequence[Operation | JournalEntry]
) -> str | None:
    for one, other in zip(ours, theirs, strict=False):
        if one != other:
            fields = [name for name in type(one).model_fields if getattr(one, name) != getattr(other, name)]
            return f"{what} {one.seq} differs in {fields}: {one!r} != {other!r}"
    return None if len(ours) == len(theirs) else f"{len(ours)} != {len(theirs)} {what}s"


def difference(first: Evidence, second: Evidence) -> str:
    """Where two episodes' evidence first differs: which operation or journal entry and its fields, or the tables."""
    found = (_first_record_difference("operation", first[0], second[0])
             or _first_record_difference("journal entry", first[1], second[1]))
    if found is not None:
        return found
    tables = sorted(table for table in {*first[2], *second[2]} if first[2].get(table) != second[2].get(table))
    return f"final state differs in tables {tables}"


def test_the_same_episode_on_two_fresh_tenants_of_one_seed_gives_identical_evidence(
    crawled: CrawledSite, registry: TenantRegistry, client: TestClient
) -> None:
    first = crawled.episode
    second = episode(registry, client, crawled.site, EPISODE_SEED)
    operations, journal, _ = first
    assert any(op.method == "POST" and op.status < 400 for op in operations), "the episode submitted forms"
    assert journal, "the episode changed something"
    assert first == second, difference(first, second)


@pytest.mark.parametrize("name", sorted(SITES))
def test_the_bare_mount_point_redirects_to_the_start_page_and_is_logged(
    name: str, registry: TenantRegistry, client: TestClient
) -> None:
    site = SITES[name]
    tenant = registry.create(name, 1)
    response = client.get(site.prefix, headers={TENANT_HEADER: tenant.token})
    assert (response.status_code, response.headers["location"]) == (303, site.start_path)
    assert [(op.path, op.status, op.location) for op in tenant.operations()] == [(site.prefix, 303, site.start_path)]


@pytest.mark.parametrize("name", sorted(SITES))
def test_an_unknown_path_under_the_site_gets_an_html_404_that_is_logged(
    name: str, registry: TenantRegistry, client: TestClient
) -> None:
    site = SITES[name]
    tenant = registry.create(name, 1)
    response = client.get(f"{site.prefix}/nowhere", headers={TENANT_HEADER: tenant.token})
    assert response.status_code == 404 and response.headers["content-type"].startswith("text/html")
    assert FAVICON in response.text and tenant.token not in response.text
    assert [(op.path, op.status) for op in tenant.operations()] == [(f"{site.prefix}/nowhere", 404)]
