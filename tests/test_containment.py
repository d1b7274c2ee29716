"""Containment: nothing a page does leads the browser off the site, and everything stopped is recorded and told.

The hostile suite (tests/hostile_site.py) serves one page per escape kind on the site's origin and records whatever
reaches a second loopback origin. For every page, in a contained context (adapter/containment.py), the page loads,
its scripts run, the model's action that sets it off is carried out through the driver, and then: nothing reached
the other origin, nothing reached the site outside `/site/`, the attempt is recorded with its kind and the number
of the action it came during, the model is told in a `Notice:` line, and the driver still works on the site. The
same pages in a plain context do reach the other origin, so the recorder is known to see them.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from hostile_site import HOSTILE_PAGES, Arena, HostilePage, serve_arena
from hypothesis import given, settings
from hypothesis import strategies as st
from playwright.async_api import Browser, BrowserContext
from playwright.async_api import Error as PlaywrightError
from tiers import examples

from adapter.actions import Click, Navigate, Press
from adapter.containment import HEADER_TRIES, MAX_RECORDS, Containment, contain, containment_of
from adapter.driver import PageDriver
from adapter.egress import EgressProxy, RefusedRequest
from adapter.observation import Observation
from adapter.render import ENTRY_CHARS
from adapter.scope import MAX_URL_CHARS, BadURL, SiteScope
from computerops.runs.serving import serve_app, tenant_context
from sites.kit.app import create_app
from sites.registry import tenant_registry

browser_test = pytest.mark.browser
SCOPE = SiteScope("http://127.0.0.1:8000", "/site/")
TRIGGER_ACTION = 7
"""The number of the model's action that sets an escape off (the start page is action 0, as in an episode)."""


# --- The URL check (no browser) -------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/site/", "http://127.0.0.1:8000/site", "http://127.0.0.1:8000/site/a/b?c=%2F#d",
    "HTTP://127.0.0.1:8000/site/x", "http://127.0.0.1:8000/site/a%20b", "http://127.0.0.1:8000/site/a.b",
])
def test_pages_of_the_site_pass_the_check(url: str) -> None:
    assert SCOPE.problem(url) is None


@pytest.mark.parametrize(("url", "words"), [
    ("http://127.0.0.1:8001/site/", "another origin"),
    ("https://127.0.0.1:8000/site/", "another origin"),
    ("http://localhost:8000/site/", "another origin"),
    ("http://127.0.0.1:8000/elsewhere/", "outside /site/"),
    ("http://127.0.0.1:8000/sitex/", "outside /site/"),
    ("http://127.0.0.1:8000/", "outside /site/"),
    ("http://127.0.0.1:8000/site/..%2Fledger/", "encoded separator"),
    ("http://127.0.0.1:8000/site/%2e%2e%2fledger", "encoded separator"),
    ("http://127.0.0.1:8000/site/..%5Cledger", "encoded separator"),
    ("http://u:p@127.0.0.1:8000/site/", "user name or password"),
    ("javascript:alert(1)", "javascript: URL"),
    ("data:text/html,x", "data: URL"),
    ("blob:http://127.0.0.1:8000/0b6c", "blob: URL"),
    ("http://[::1", "not a valid URL"),
])
def test_urls_off_the_site_fail_the_check_with_a_reason(url: str, words: str) -> None:
    problem = SCOPE.problem(url)
    assert problem is not None and words in problem, problem


@pytest.mark.parametrize(("raw", "expected"), [
    ("/site/../site/x", "http://127.0.0.1:8000/site/x"),
    ("/site/%2e/x", "http://127.0.0.1:8000/site/x"),
    ("\\site\\x", "http://127.0.0.1:8000/site/x"),
    (" \t/site/\nx\t", "http://127.0.0.1:8000/site/x"),
    ("HTTP://127.0.0.1:8000/site/x", "http://127.0.0.1:8000/site/x"),
    ("x?y=1", "http://127.0.0.1:8000/site/x?y=1"),
    ("/site/%2e%2e/elsewhere/", "http://127.0.0.1:8000/elsewhere/"),
    ("http://127.0.0.1:80/site/", "http://127.0.0.1/site/"),
])
def test_navigate_targets_are_normalised_as_the_browser_does(raw: str, expected: str) -> None:
    assert SCOPE.navigation_target(raw, "http://127.0.0.1:8000/site/page") == expected


def test_relative_targets_resolve_against_the_prefix_when_the_page_is_off_the_site() -> None:
    assert SCOPE.navigation_target("x", "about:blank") == "http://127.0.0.1:8000/site/x"
    assert SCOPE.navigation_target("x", "blob:http://127.0.0.1:8000/uuid") == "http://127.0.0.1:8000/site/x"


@pytest.mark.parametrize("raw", ["", "   ", "http://[::1", "http://127.0.0.1:99999/", "http://a b/",
                                 "x" * (MAX_URL_CHARS + 1)])
def test_malformed_navigate_targets_are_bad_urls(raw: str) -> None:
    with pytest.raises(BadURL):
        SCOPE.navigation_target(raw, "http://127.0.0.1:8000/site/")


@given(st.text(max_size=200))
def test_the_url_check_never_raises_on_any_text(text: str) -> None:
    SCOPE.problem(text)
    SCOPE.socket_problem(text)
    SCOPE.path_of(text)
    try:
        target = SCOPE.navigation_target(text, "http://127.0.0.1:8000/site/page")
    except BadURL:
        return
    assert SCOPE.problem(target) is None or SCOPE.problem(target)


# --- The record and the notices (no browser) ------------------------------------------------------------------


def test_repeated_attempts_are_counted_in_one_record_and_the_record_is_bounded() -> None:
    guard = Containment(SCOPE)
    for _ in range(500):
        guard.record("navigation", "http://127.0.0.1:9/loop", stage="routing", reason="another origin", action=3)
    assert len(guard.records) == 1 and guard.records[0].count == 500 and guard.total == 500
    for n in range(3 * MAX_RECORDS):
        guard.record("fetch", f"http://127.0.0.1:9/{n}", stage="routing", reason="another origin")
    assert len(guard.records) == MAX_RECORDS and guard.total == 500 + 3 * MAX_RECORDS


def test_the_notice_is_one_short_line_naming_the_first_attempts_and_the_count() -> None:
    guard = Containment(SCOPE)
    for n in range(40):
        guard.record("fetch", f"http://127.0.0.1:9/{'x' * 100}{n}", stage="routing", reason="another origin")
    guard.record("popup", "http://127.0.0.1:8000/site/never", stage="page", reason="a window")
    [notice] = guard.take_notices()
    assert notice.startswith("Blocked 41 attempts of the page to leave the site: fetch of http://127.0.0.1:9/x")
    assert notice.endswith("; 39 more.") and len(notice) <= ENTRY_CHARS
    assert guard.take_notices() == []  # told once
    guard.record("popup", "http://127.0.0.1:8000/site/never", stage="page", reason="a window")
    assert guard.take_notices() == ["Blocked 1 attempt of the page to leave the site: new window for /site/never."]


# --- The egress proxy (no browser) ----------------------------------------------------------------------------


async def _exchange(proxy_address: str, request: bytes) -> bytes:
    host, port = proxy_address.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return answer


async def test_the_proxy_forwards_site_requests_with_connection_close_and_refuses_the_rest() -> None:
    seen: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    origin = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    refused: list[RefusedRequest] = []
    proxy = EgressProxy(SiteScope(origin, "/site/"), refused.append)
    address = await proxy.start()
    try:
        answer = await _exchange(address, f"GET {origin}/site/x?q=1 HTTP/1.1\r\nHost: h\r\n"
                                          "Proxy-Connection: keep-alive\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in answer and b"keep-alive" not in answer
        assert seen[0].startswith(b"GET /site/x?q=1 HTTP/1.1\r\n") and b"Connection: close" in seen[0]
        assert b"Proxy-Connection" not in seen[0]
        navigation = await _exchange(address, b"GET http://127.0.0.1:9/x HTTP/1.1\r\nSec-Fetch-Dest: document\r\n\r\n")
        other_path = await _exchange(address, f"POST {origin}/elsewhere/ HTTP/1.1\r\n\r\n".encode())
        tunnel = await _exchange(address, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")
        worker = await _exchange(address, f"GET {origin}/site/w.js HTTP/1.1\r\nService-Worker: script\r\n\r\n".encode())
        assert navigation.startswith(b"HTTP/1.1 403") and b"<title>Blocked</title>" in navigation
        assert other_path.startswith(b"HTTP/1.1 403") and b"<title>" not in other_path
        assert tunnel.startswith(b"HTTP/1.1 403") and worker.startswith(b"HTTP/1.1 403")
        assert [r.method for r in refused] == ["GET", "POST", "CONNECT", "GET"] and len(seen) == 1
    finally:
        await proxy.close()
        server.close()


# --- The hostile suite ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arena() -> Iterator[Arena]:
    with serve_arena() as hostile:
        yield hostile


@asynccontextmanager
async def contained_driver(browser: Browser, arena: Arena) -> AsyncIterator[PageDriver]:
    """A driver in a contained context of the arena's site; action 0 (the start page) tags its first requests."""
    context = await contain(browser, SiteScope(arena.origin, "/site/"))
    try:
        await context.set_extra_http_headers({"X-ComputerOps-Action": "0"})
        page = await context.new_page()
        yield PageDriver(page, origin=arena.origin, site_prefix="/site/")
    finally:
        await context.close()


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> bool:
    """Wait (bounded) for a condition the page's own timers make true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def notices(observation: Observation) -> list[str]:
    return [line for line in observation.text.splitlines() if line.startswith("Notice:")]


async def trigger(driver: PageDriver, observation: Observation, page: HostilePage) -> None:
    assert page.trigger is not None
    control = named(observation, page.trigger.name)
    if page.trigger.action == "click":
        outcome = await driver.act(Click(id=control.id), TRIGGER_ACTION)
    else:
        outcome = await driver.act(Press(id=control.id, key=page.trigger.key), TRIGGER_ACTION)
    assert outcome.ok, outcome.rejection


@browser_test
@pytest.mark.parametrize("name", sorted(HOSTILE_PAGES))
async def test_a_hostile_page_cannot_leave_the_site_and_the_model_is_told(
    browser: Browser, arena: Arena, name: str
) -> None:
    page = HOSTILE_PAGES[name]
    hits, requests = len(arena.other_hits), len(arena.site_requests)
    async with contained_driver(browser, arena) as driver:
        guard = containment_of(driver.page.context)
        assert guard is not None
        # As the harness opens a start page: to DOMContentLoaded (a page whose frame navigates the top never loads).
        await driver.page.goto(f"{arena.origin}/site/hostile/{name}", wait_until="domcontentloaded", timeout=5_000)
        await driver.settle()
        seen = [await driver.observe()]
        if page.trigger is not None:
            await trigger(driver, seen[0], page)
        if page.kinds:
            assert await until(lambda: any(r.kind in page.kinds for r in guard.records)), guard.records
        elif page.moves_address:
            await until(lambda: driver.page.url.startswith(("blob:", "about:")) or "/elsewhere/" in driver.page.url)
        else:
            await asyncio.sleep(1.0)  # nothing to wait for: give the page time to try
        seen.append(await driver.observe())
        told = [line for observation in seen for line in notices(observation)]
        expected = [r for r in guard.records if r.kind in page.kinds]

        assert arena.other_hits[hits:] == [], f"{name} reached the other origin"
        assert arena.forbidden_site_requests(requests) == [], f"{name} reached the site outside /site/"
        if page.kinds:
            assert {r.action for r in expected} == {TRIGGER_ACTION if page.trigger else 0}, expected
            assert any("Blocked" in line for line in told), told
        elif page.moves_address:
            assert any("moved it to" in line for line in told), told
        else:
            assert guard.records == [] and told == []
        # The episode goes on: one window, and the driver still acts on the site.
        assert await until(lambda: len(driver.page.context.pages) == 1), driver.page.context.pages
        outcome = await driver.act(Navigate(url="/site/ok.html"), TRIGGER_ACTION + 1)
        assert outcome.ok, outcome.rejection
        after = await driver.observe()
        assert after.url == "/site/ok.html" and after.title == "OK"
        # Anything late: the episode's next actions above are the window (no fixed wait), checked once more here.
        assert arena.forbidden_site_requests(requests) == [], f"{name} reached the site outside /site/ late"
        if not page.kinds and not page.moves_address:
            assert guard.records == [], f"{name} tried something late"
    assert arena.other_hits[hits:] == [], f"{name} reached the other origin late"


async def reaches_other_origin(context: BrowserContext, arena: Arena, url: str) -> bool:
    """Whether the other origin hears from the browser within a moment of a fresh page of `context` opening `url`.
    Bounded as a whole: in a context without the fence a page may hang on the recorder, which answers nothing."""
    hits = len(arena.other_hits)
    page = await context.new_page()
    try:
        with suppress(PlaywrightError, TimeoutError):  # the page may well navigate away before it loads
            await asyncio.wait_for(page.goto(url, wait_until="domcontentloaded", timeout=5_000), timeout=10)
        return await until(lambda: len(arena.other_hits) > hits, timeout=1.5)
    finally:
        with suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(page.close(), timeout=10)


LOAD_TIME_ESCAPES = sorted(name for name, page in HOSTILE_PAGES.items()
                           if page.trigger is None and page.kinds and "@OTHER" in page.body)


@browser_test
async def test_without_containment_the_same_pages_do_reach_the_other_origin(browser: Browser, arena: Arena) -> None:
    """The control: in a plain context the recorder sees these pages' escapes, so the suite above can fail."""
    context = await browser.new_context()
    escaped = []
    try:
        for name in LOAD_TIME_ESCAPES:
            if await reaches_other_origin(context, arena, f"{arena.origin}/site/hostile/{name}"):
                escaped.append(name)
        assert await reaches_other_origin(context, arena, f"{arena.origin}/site/redirect-out"), "a redirect"
    finally:
        await context.close()
    assert len(escaped) >= 0.8 * len(LOAD_TIME_ESCAPES), sorted(set(LOAD_TIME_ESCAPES) - set(escaped))


@browser_test
async def test_a_page_asking_for_permissions_is_denied(browser: Browser, arena: Arena) -> None:
    async with contained_driver(browser, arena) as driver:
        await driver.page.goto(f"{arena.origin}/site/ok.html")
        states = await driver.page.evaluate("""async () => {
          const names = ["geolocation", "notifications", "clipboard-read", "camera", "microphone"];
          const states = await Promise.all(names.map(name => navigator.permissions.query({name})));
          const position = await new Promise(done => navigator.geolocation.getCurrentPosition(
            () => done("granted"), e => done(e.code === e.PERMISSION_DENIED ? "denied" : "error " + e.code)));
          return [...states.map(s => s.state), await Notification.requestPermission(), position];
        }""")
    assert states == ["denied"] * 7


# --- The tenant cookie ----------------------------------------------------------------------------------------


def _recorder() -> tuple[socket.socket, list[bytes]]:
    """A TCP listener on another loopback port that records the first bytes of every connection (answered 200)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    return listener, []


async def _record(listener: socket.socket, received: list[bytes]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        connection, _ = await loop.sock_accept(listener)
        with connection:
            received.append(await asyncio.wait_for(loop.sock_recv(connection, 4096), 2))
            await loop.sock_sendall(connection, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@browser_test
async def test_page_script_can_neither_read_nor_take_over_the_tenant_binding_nor_send_it_to_another_port(
    browser: Browser,
) -> None:
    """The episode's context holds no tenant cookie: its proxy binds each request by the tenant header. Page script
    that sets tenant cookies (a broader path, another tenant's token, a made-up one) and sends tenant headers with
    fetch() moves nothing to another tenant: the bindings are taken out and recorded, every request lands in the
    episode's own tenant, and nothing reaches another port."""
    listener, received = _recorder()
    other_port = f"http://127.0.0.1:{listener.getsockname()[1]}"
    recording = asyncio.create_task(_record(listener, received))
    with tempfile.TemporaryDirectory(prefix="computerops-containment-") as root:
        registry = tenant_registry(Path(root))
        try:
            async with serve_app(create_app(registry)) as origin:
                tenant, other = registry.create("helpdesk", 1), registry.create("helpdesk", 1)
                context = await tenant_context(browser, origin, tenant.token, site_prefix="/helpdesk/")
                try:
                    assert await context.cookies() == []
                    page = await context.new_page()
                    await page.goto(f"{origin}/helpdesk/")
                    assert "Helpdesk" in await page.title()
                    await page.evaluate("""([other, port, stolen]) => {
                      document.cookie = "computerops_tenant=" + stolen + "; path=/";
                      document.cookie = "computerops_tenant=made-up; path=/helpdesk/tickets";
                      fetch("/helpdesk/tickets?via=fetch", {headers: {"X-ComputerOps-Tenant": stolen}});
                      for (const url of [other + "/helpdesk/", "http://localhost:" + port + "/helpdesk/"]) {
                        fetch(url, {credentials: "include", mode: "no-cors"}).catch(() => 0);
                      }
                    }""", [other_port, origin.rsplit(":", 1)[1], other.token])
                    await page.goto(f"{origin}/helpdesk/tickets")  # the model's next action
                    assert "T-2001" in await page.content()
                    guard = containment_of(context)
                    assert guard is not None
                    assert await until(lambda: any(r.path == "/helpdesk/tickets" and r.query == "via=fetch"
                                                   for r in tenant.operations()))
                    assert other.operations() == []  # nothing landed in the other tenant
                    assert {r.kind for r in guard.records} >= {"tenant_binding", "fetch"}
                    assert all(r.path.startswith("/helpdesk") for r in tenant.operations())
                    await asyncio.sleep(0.2)
                    assert received == []
                finally:
                    await context.close()
        finally:
            registry.close()
            recording.cancel()
            listener.close()


# --- navigate -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site_scope(site: FixtureSite) -> SiteScope:
    return SiteScope(site.origin, "/site/")


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    """One contained driver for the property tests of this module (each example starts from forms.html)."""
    async with fixture_driver(browser, site) as page_driver:
        yield page_driver


_SEGMENTS = st.sampled_from(["site", "SITE", "Site", "..", ".", "%2e", "%2E%2e", ".%2e", "%2f", "%2F", "%5c",
                             "\\", "elsewhere", "forms.html", "%252e", "a\tb", "\n", "", "sitex", "%00", "%",
                             "ok?x=1", "#f", ";p", "site%2f..", "ü", "%EF%BC%8E"])
_HOSTS = st.sampled_from(["127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "localhost", "127.0.0.2", "[::1]",
                          "127.0.0.1.", "１２７.０.０.１", "LOCALHOST", "127.0.0.1%2f", "example.com"])


@st.composite
def _model_urls(draw: st.DrawFn, port: int) -> str:
    """What a model might write: relative paths, absolute URLs with every part varied, or junk."""
    path = draw(st.sampled_from(["/", "\\", "", "//", "/\\"])) + "/".join(draw(st.lists(_SEGMENTS, max_size=5)))
    if draw(st.booleans()):
        return path
    scheme = draw(st.sampled_from(["http:", "HTTP:", "hTtP:", "https:", "ws:", "javascript:", "data:", "file:", ""]))
    slashes = draw(st.sampled_from(["//", "\\\\", "/\\", "///", ""]))
    userinfo = draw(st.sampled_from(["", "u@", "u:p@", f"127.0.0.1:{port}@"]))
    host = draw(_HOSTS)
    ports = [f":{port}", f":{port + 1}", ":80", "", f":0{port}", ":99999", ":"]
    chosen = draw(st.sampled_from(ports))
    return f"{scheme}{slashes}{userinfo}{host}{chosen}{path}" + draw(st.sampled_from(["", "\t", " ", "\n"]))


@browser_test
@settings(max_examples=examples(15))
@given(data=st.data())
async def test_an_accepted_navigate_never_leaves_the_prefix_after_the_browsers_own_normalisation(
    driver: PageDriver, site: FixtureSite, site_scope: SiteScope, data: st.DataObject
) -> None:
    port = int(site.origin.rsplit(":", 1)[1])
    urls = data.draw(st.lists(_model_urls(port), min_size=1, max_size=4))
    await open_page(driver, "forms.html")
    for number, url in enumerate(urls, start=1):
        before = len(site.requests)
        outcome = await driver.act(Navigate(url=url), number)  # never raises
        reached = [path for _, path, _ in site.requests[before:]]
        if outcome.ok:
            # Where the browser went is where ada said the URL leads, and that is a page of the site.
            target = site_scope.navigation_target(url, f"{site.origin}/site/forms.html")
            assert driver.page.url.split("#")[0] == target.split("#")[0], (url, target, driver.page.url)
            assert site_scope.problem(driver.page.url) is None, (url, driver.page.url)
        else:
            assert outcome.rejection is not None
            assert outcome.rejection.cause in ("off_site", "malformed_arguments"), outcome.rejection
            assert reached == [], (url, reached)
        assert all(site_scope.problem(site.origin + path) is None for path in reached), (url, reached)
        await open_page(driver, "forms.html")


@browser_test
@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/", "", "   ", "http://", "x" * 10_000,
                                 "http://127.0.0.1:8000\x00/site/", "\ud800", "http://127.0.0.1:0x/"])
async def test_a_malformed_navigate_is_a_rejected_action_not_an_error(browser: Browser, site: FixtureSite,
                                                                      url: str) -> None:
    async with fixture_driver(browser, site) as driver:
        await open_page(driver, "forms.html")
        outcome = await driver.act(Navigate(url=url), 1)
        assert outcome.rejection is not None and outcome.rejection.cause in ("malformed_arguments", "off_site")
        assert len(outcome.rejection.reason) < 400
        assert (await driver.observe()).url == "/site/forms.html"


@browser_test
@settings(max_examples=examples(25))
@given(key=st.text(max_size=12), url=st.text(max_size=40))
async def test_no_key_or_url_from_the_model_makes_an_action_raise(driver: PageDriver, key: str, url: str) -> None:
    observation = await open_page(driver, "forms.html")
    control = observation.controls[0]
    for action in (Press(id=control.id, key=key), Navigate(url=url)):
        outcome = await driver.act(action, 1)
        assert outcome.ok or outcome.rejection is not None
    await driver.observe()


class _Page:
    def __init__(self, closed: bool) -> None:
        self.closed = closed

    def is_closed(self) -> bool:
        return self.closed


class _Context:
    """A context whose context-wide header call fails `failures` times (a popup closing under it), then works."""

    def __init__(self, failures: int, pages: list[_Page]) -> None:
        self.failures, self.pages, self.calls = failures, pages, 0

    async def route(self, *_: object) -> None:
        return None

    async def route_web_socket(self, *_: object) -> None:
        return None

    def on(self, *_: object) -> None:
        return None

    async def new_page(self) -> None:
        return None

    async def set_extra_http_headers(self, headers: dict[str, str]) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise PlaywrightError("BrowserContext.set_extra_http_headers: Target page, context or browser has been "
                                  "closed")


@pytest.mark.parametrize(("failures", "pages", "raised", "calls"), [
    (0, [True, False], False, 1),
    (2, [False, True], False, 3),  # a popup closing under the call: the driver's headers are set once it is gone
    (HEADER_TRIES, [False], True, HEADER_TRIES),  # it never stops failing: the failure stands after the last try
    (1, [True], True, 1),  # the context has no open page: it was closed, no retry
])
def test_action_headers_outlast_a_popup_closing_under_them(failures: int, pages: list[bool], raised: bool,
                                                           calls: int) -> None:
    context = _Context(failures, [_Page(closed) for closed in pages])
    guard = Containment(SiteScope("http://127.0.0.1:1", "/site/"))
    asyncio.run(guard.attach(context))  # type: ignore[arg-type]
    tagging = context.set_extra_http_headers({"X-Test": "1"})
    if raised:
        with pytest.raises(PlaywrightError):
            asyncio.run(tagging)
    else:
        asyncio.run(tagging)
    assert context.calls == calls
