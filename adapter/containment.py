"""Containment: nothing a page does leads the browser off the site under test, and whatever was stopped is recorded
and told to the model.

`contain(browser, scope)` makes the browser context of an episode (computerops/runs/serving.py `tenant_context`, the
test fixture driver). Its guard, a `Containment`, holds at three layers:

- Routing (`context.route`, `context.route_web_socket`): every request a page makes is checked against the site
  (adapter/scope.py: its origin, its path prefix); anything else is aborted before it leaves the browser, and
  recorded with what it was (a navigation, an iframe, a fetch, a beacon, a subresource...). WebSockets are
  closed: the sites use none.
- The network (adapter/egress.py): the context's only way out is a loopback proxy that forwards requests for the
  site and refuses the rest, which catches what routing does not see: the hops of a redirect, prefetches and
  prerenders, service worker scripts, WebSockets opened by workers.
- Pages: a page the project did not open (a popup from `window.open`, `target=_blank`, a form with a target, a
  Shift/Ctrl/middle click) is closed at once and its load aborted; downloads are refused; service workers are
  blocked; permissions are denied.

Each stopped attempt becomes a `BlockedRequest` (identical attempts in a row are counted in one); the driver shows
the model one short `Notice:` line per observation that names the first few (PageDriver.observe). A page's own
script can still change what its page shows and its address without a request (`history.pushState`, a `blob:`
document): that cannot be stopped from outside the page, and the model is told when the address leaves the site.

One module (over 400 lines) because it is one fence: routing, the proxy's refusals and the page-level guards
record into the same `Containment`.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import suppress
from typing import Any

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    ConsoleMessage,
    Download,
    Frame,
    Page,
    Request,
    Route,
    WebSocketRoute,
)
from playwright.async_api import Error as PlaywrightError

from adapter.egress import NAVIGATION_DESTINATIONS, WORKER_DESTINATIONS, EgressProxy, RefusedRequest
from adapter.initiative import Initiative, without_tags
from adapter.scope import WEB_SCHEMES, SiteScope
from adapter.transcript import BlockedRequest, Kind, Stage
from computerops.core import vocabulary
from computerops.core.numbers import whole_number

ACTION_HEADER = vocabulary.ACTION_HEADER.lower()
"""Request headers as Playwright reports them are lower-case."""
MAX_RECORDS = 200
"""Distinct blocked attempts kept per context; later ones are only counted (`Containment.total`)."""
URL_CHARS = 300
NOTICE_ITEMS = 2
NOTICE_TARGET_CHARS = 48
DENIED_PERMISSIONS = (
    "geolocation", "notifications", "clipboard-read", "clipboard-write", "camera", "microphone", "midi",
    "persistent-storage", "background-sync", "screen-wake-lock", "idle-detection", "local-fonts",
    "window-management", "storage-access", "accelerometer", "gyroscope", "magnetometer", "payment-handler",
    "display-capture",
)
"""Set to `denied` for every origin of a contained context (Chromium's `Browser.setPermission`): a page asking
gets a refusal, never a prompt that stays open."""

SERVICE_WORKER_BLOCKED = "Service Worker registration blocked by Playwright"
"""What Playwright's `service_workers="block"` has the page log when a page tries to register one."""

_ROUTED_KINDS: dict[str, Kind] = {"xhr": "fetch", "fetch": "fetch", "eventsource": "fetch", "ping": "beacon"}
"""Playwright resource types that are not plain subresources."""
_KIND_WORDS: dict[str, str] = {
    "navigation": "navigation to", "iframe": "frame of", "popup": "new window for", "subresource": "load of",
    "fetch": "fetch of", "beacon": "beacon to", "prefetch": "prefetch of", "websocket": "WebSocket to",
    "tunnel": "tunnel to", "download": "download of", "service_worker": "service worker",
    "tenant_binding": "tenant binding (taken out) on a request for",
    "oversized_request": "request too large (page script's cookies removed) for",
}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _action_of(value: str | None) -> int | None:
    """The action number a request's header names; None for a value that is not one (a page can send any text)."""
    return whole_number(value) if value is not None else None


def _page_of(request: Request) -> Page | None:
    """The page a request belongs to; None when Playwright has no frame for it (the first load of a popup)."""
    try:
        return request.frame.page
    except PlaywrightError:
        return None


def _routed_kind(request: Request) -> Kind:
    if request.is_navigation_request():
        try:
            return "navigation" if request.frame.parent_frame is None else "iframe"
        except PlaywrightError:
            return "navigation"
    if "prefetch" in request.headers.get("sec-purpose", "") or "prefetch" in request.headers.get("purpose", ""):
        return "prefetch"
    return _ROUTED_KINDS.get(request.resource_type, "subresource")


def _network_kind(refused: RefusedRequest) -> Kind:
    headers, destination = refused.headers, refused.destination
    if refused.binding:
        return "tenant_binding"
    if refused.oversized:
        return "oversized_request"
    if refused.method == "CONNECT":
        return "tunnel"
    if destination in WORKER_DESTINATIONS or "service-worker" in headers:
        return "service_worker"
    if "prefetch" in headers.get("sec-purpose", "") or "prefetch" in headers.get("purpose", ""):
        return "prefetch"
    if destination in NAVIGATION_DESTINATIONS:
        return "navigation" if destination == "document" else "iframe"
    if "ping-to" in headers:
        return "beacon"
    return "fetch" if destination == "empty" else "subresource"


def _chain(request: Request) -> Iterator[Request]:
    """A request and the requests it was redirected from."""
    hop: Request | None = request
    while hop is not None:
        yield hop
        hop = hop.redirected_from


class _ParseWatch:
    """Which pages' current document has not reached DOMContentLoaded yet.

    A navigation that page script starts while its document is still being parsed stops the parsing; if routing
    then cancels that navigation silently (`aborted`, which otherwise leaves a page as it was), Chromium never fires
    DOMContentLoaded for the document, and every wait for the page to load times out. Such a navigation is failed
    instead (Chromium's error page, which loads). A document counts as being parsed from the commit of a navigation
    that routing let through until its DOMContentLoaded; a navigation that ends without a document (it failed, it
    got 204 or 205, it became a download) leaves the page's document, and its state, as they were."""

    def __init__(self) -> None:
        self._pending: weakref.WeakKeyDictionary[Page, Request] = weakref.WeakKeyDictionary()
        self._unparsed: weakref.WeakSet[Page] = weakref.WeakSet()

    def watch(self, page: Page) -> None:
        page.on("framenavigated", lambda frame: self._committed(page, frame))
        page.on("domcontentloaded", lambda _page: self._unparsed.discard(page))
        page.on("download", lambda _download: self._ended(page, None))
        page.on("requestfailed", lambda request: self._ended(page, request))
        page.on("response", lambda response: self._ended(page, response.request) if response.status in (204, 205)
                else None)

    def started(self, page: Page, request: Request) -> None:
        """Routing let a navigation of the page's main frame through."""
        self._pending[page] = request

    def parsing(self, page: Page) -> bool:
        return page in self._unparsed

    def _committed(self, page: Page, frame: Frame) -> None:
        if frame == page.main_frame and self._pending.pop(page, None) is not None:
            self._unparsed.add(page)

    def _ended(self, page: Page, request: Request | None) -> None:
        """A navigation ended without a document (None: the page's, as a download)."""
        pending = self._pending.get(page)
        if pending is not None and (request is None or any(hop is pending for hop in _chain(request))):
            del self._pending[page]


HEADER_TRIES = 4
"""How many times the driver's action headers are set on the context before its failure stands: a popup closing at
that moment fails the context-wide call once or twice (seen in CI on a page that opens a tab on control+Enter)."""


class Containment:
    """The guard of one contained browser context: the record of what it stopped, and the notices for the model."""

    def __init__(self, scope: SiteScope) -> None:
        self.scope = scope
        self.records: list[BlockedRequest] = []
        self.total = 0
        """Every attempt stopped, also those past MAX_RECORDS and those counted into an earlier record."""
        self._noticed_total = 0
        self._noticed_records = 0
        self._address_notices: list[str] = []
        self._blocked_documents: deque[str] = deque(maxlen=8)
        """Addresses of navigations the proxy refused: the page shows its "Blocked" page there (no address notice)."""
        self._last_action: int | None = None
        """The action number the driver last tagged the context's requests with."""
        self._admitted: weakref.WeakSet[Page] = weakref.WeakSet()
        """Pages the project opened (through the context's `new_page`); any other page is a popup."""
        self._on_site: weakref.WeakSet[Page] = weakref.WeakSet()
        self._opening: set[asyncio.Future[None]] = set()
        self._popup_loads = 0
        """First loads of popups recorded by routing that no page event has reported yet."""
        self._recorded_popups: weakref.WeakSet[Page] = weakref.WeakSet()
        self._tasks: set[asyncio.Task[None]] = set()
        self._permissions_denied = False
        self._parse = _ParseWatch()
        self._permissions: CDPSession | None = None
        """The browser session that holds the permission denials (detached when the context closes)."""
        self._context: BrowserContext | None = None
        """The context guarded (`attach`)."""
        self.initiative = Initiative()
        """Whose a write is, the model's action's or the page's own (adapter/initiative.py); the driver ends each
        action's window."""

    # --- the record -------------------------------------------------------------------------------------------

    def record(self, kind: Kind, url: str, *, stage: Stage, reason: str, method: str | None = None,
               resource_type: str | None = None, action: int | None = None) -> None:
        """Add one stopped attempt (counted into the previous record when it is the same attempt again); `action`
        defaults to the action being carried out now."""
        entry = BlockedRequest(kind=kind, url=_cut(url, URL_CHARS), method=method, resource_type=resource_type,
                               stage=stage, reason=_cut(reason, URL_CHARS),
                               action=self._last_action if action is None else action)
        self.total += 1
        last = self.records[-1] if self.records else None
        if last is not None and last.model_copy(update={"count": 1}) == entry:
            self.records[-1] = last.model_copy(update={"count": last.count + 1})
        elif len(self.records) < MAX_RECORDS:
            self.records.append(entry)

    def refused(self, request: RefusedRequest) -> None:
        """The egress proxy's report of a request it refused."""
        kind = _network_kind(request)
        if kind in ("navigation", "iframe"):
            self._blocked_documents.append(request.url)  # the proxy's "Blocked" page loads at this address
        self.record(kind, request.url, stage="network", reason=request.reason, method=request.method,
                    action=_action_of(request.headers.get(ACTION_HEADER)))
        if request.oversized and self._context is not None:
            self.spawn(_remove_script_cookies(self._context))

    def take_notices(self) -> list[str]:
        """What the model has not been told yet: at most one line for the attempts stopped since the last call
        (how many, and the first few targets), and one for an address change off the site."""
        notices: list[str] = []
        attempts = self.total - self._noticed_total
        if attempts:
            fresh = self.records[self._noticed_records:] or self.records[-1:]
            notices.append(self._blocked_notice(attempts, fresh))
        if self._address_notices:
            where = _cut(self._address_notices[-1], NOTICE_TARGET_CHARS * 2)
            notices.append(f"The page's own script moved it to {where}, which is not a page of the site; nothing "
                           "was loaded from there. Use navigate or back to return to the site.")
        self._noticed_total, self._noticed_records = self.total, len(self.records)
        self._address_notices.clear()
        return notices

    def _blocked_notice(self, attempts: int, fresh: list[BlockedRequest]) -> str:
        described = [f"{_KIND_WORDS[r.kind]} {_cut(self.scope.path_of(r.url), NOTICE_TARGET_CHARS)}"
                     for r in fresh[:NOTICE_ITEMS]]
        rest = attempts - sum(r.count for r in fresh[:NOTICE_ITEMS])
        more = f"; {rest} more" if rest > 0 else ""
        noun = "attempt" if attempts == 1 else "attempts"
        return f"Blocked {attempts} {noun} of the page to leave the site: {'; '.join(described)}{more}."

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in the background, keeping a reference until it ends (event handlers cannot await)."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def release(self, proxy: EgressProxy) -> None:
        """What the closed context held: its proxy, and the session holding its permission denials."""
        await proxy.close()
        if self._permissions is not None:
            with suppress(PlaywrightError):
                await self._permissions.detach()

    # --- installing it on a context -------------------------------------------------------------------------

    async def attach(self, context: BrowserContext) -> None:
        """Guard a new context (before it has pages): route its requests and WebSockets, watch its pages."""
        self._context = context
        await context.route("**/*", self._route)
        await context.route_web_socket("**/*", self._websocket)
        context.on("page", self._on_page)
        open_page, set_headers = context.new_page, context.set_extra_http_headers

        async def new_page() -> Page:
            """The context's own `new_page`, admitting the page it opens (pages opened otherwise are popups)."""
            return await self._admit(open_page, context)

        async def set_extra_http_headers(headers: dict[str, str]) -> None:
            """The context's own, noting the action number the driver tags requests with (for the record)."""
            tagged = {name.lower(): value for name, value in headers.items()}.get(ACTION_HEADER)
            self._last_action = _action_of(tagged) if tagged is not None else self._last_action
            if tagged is not None and self._last_action is not None:
                self.initiative.begin(self._last_action)
            for attempt in range(HEADER_TRIES):
                try:
                    await set_headers(headers)
                    return
                except PlaywrightError:
                    # A popup the guard is closing can fail the context-wide call while it closes (its target gone
                    # mid-update); once it is gone the context's own pages take the headers. A closed context (no
                    # open page left) fails at once, and so does the last try.
                    if attempt == HEADER_TRIES - 1 or all(page.is_closed() for page in context.pages):
                        raise
                    await asyncio.sleep(0.05 * (attempt + 1))

        # Wrapped on this context alone: the project opens pages and tags actions through these two.
        context.new_page = new_page  # type: ignore[method-assign]
        context.set_extra_http_headers = set_extra_http_headers  # type: ignore[method-assign]

    async def _admit(self, open_page: Callable[[], Awaitable[Page]], context: BrowserContext) -> Page:
        opening: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._opening.add(opening)
        try:
            page = await open_page()
            self._admitted.add(page)
            page.on("download", self._on_download)
            self._parse.watch(page)
            page.on("console", lambda message: self._on_console(page, message))
            page.on("framenavigated", lambda frame: self._on_navigated(page, frame))
            if not self._permissions_denied:
                self._permissions_denied = True
                self._permissions = await _deny_permissions(context, page)
            return page
        finally:
            self._opening.discard(opening)
            opening.set_result(None)

    async def _settled(self, page: Page) -> bool:
        """Whether `page` is one the project opened, once every `new_page` in flight has returned."""
        if page in self._admitted:
            return True
        if self._opening:
            await asyncio.gather(*self._opening)
        return page in self._admitted

    # --- the handlers ---------------------------------------------------------------------------------------

    async def _route(self, route: Route) -> None:
        request = route.request
        action = _action_of(request.headers.get(ACTION_HEADER))
        page = _page_of(request)
        if page is None and request.is_navigation_request():
            # The first load of a window the page opened (Playwright reports the window, if ever, only later).
            self._popup_loads += 1
            self.record("popup", request.url, stage="routing", action=action,
                        reason="the page opened a new window or tab; its load was aborted")
            with suppress(PlaywrightError):
                await route.abort("aborted")
            return
        if page is not None and not await self._settled(page):
            self._record_popup(page, request.url)  # a window the page opened; its page event closes it
            with suppress(PlaywrightError):
                await route.abort("aborted")
            return
        problem = self.scope.problem(request.url)
        if page is None:
            problem = problem or "it comes from no page of the episode"
        kind = _routed_kind(request)
        if problem is None:
            if kind == "navigation" and page is not None:
                self._parse.started(page, request)
            if kind in ("navigation", "iframe"):
                with suppress(PlaywrightError):  # a frame detached meanwhile
                    self.initiative.navigating(request.frame, request)
            with suppress(PlaywrightError):  # the page may have gone meanwhile
                if self.initiative.the_models(request):
                    await route.continue_()
                else:  # the page's own write: logged with no action of the model's (adapter/initiative.py)
                    await route.continue_(headers=without_tags(await request.all_headers()))
            return
        self.record(kind, request.url, stage="routing", reason=problem, method=request.method,
                    resource_type=request.resource_type, action=action)
        # "aborted" leaves a page as it was (no error page), unless that would leave it loading for ever; a
        # subresource fails as blocked by the client.
        quiet = kind == "iframe" or (kind == "navigation" and page is not None and not self._parse.parsing(page))
        with suppress(PlaywrightError):
            await route.abort("aborted" if quiet else "blockedbyclient")

    async def _websocket(self, socket: WebSocketRoute) -> None:
        reason = self.scope.socket_problem(socket.url) or "WebSockets are not allowed; the site uses none"
        self.record("websocket", socket.url, stage="routing", reason=reason)
        with suppress(PlaywrightError):
            await socket.close(code=1008, reason="blocked")

    def _on_page(self, page: Page) -> None:
        if page in self._admitted:
            return
        if not self._opening:
            self._close_popup(page)
            return
        self.spawn(self._judge(page))

    async def _judge(self, page: Page) -> None:
        if not await self._settled(page):
            self._close_popup(page)

    def _close_popup(self, page: Page) -> None:
        if page not in self._recorded_popups and self._popup_loads:
            self._popup_loads -= 1  # its first load was recorded when routing aborted it
            self._recorded_popups.add(page)
        self._record_popup(page, page.url)
        self.spawn(_close(page))

    def _record_popup(self, page: Page, url: str) -> None:
        if page not in self._recorded_popups:
            self._recorded_popups.add(page)
            self.record("popup", url, stage="page", reason="the page opened a new window or tab; it was closed")

    async def _on_download(self, download: Download) -> None:
        self.record("download", download.url, stage="page", reason="downloads are refused")
        with suppress(PlaywrightError):
            await download.cancel()

    def _on_console(self, page: Page, message: ConsoleMessage) -> None:
        if message.text == SERVICE_WORKER_BLOCKED:
            self.record("service_worker", page.url, stage="page", reason="service workers are blocked")

    def _on_navigated(self, page: Page, frame: Frame) -> None:
        self.initiative.committed(frame)
        if frame != page.main_frame:
            return
        url = frame.url
        if self.scope.problem(url) is None:
            self._on_site.add(page)
            return
        scheme = url.split(":", 1)[0] + ":"
        if scheme == "chrome-error:" or url in self._blocked_documents or (
                url == "about:blank" and page not in self._on_site):
            return  # a blocked or failed load's page, or a page that has not been on the site yet
        if scheme in WEB_SCHEMES or url.startswith(("blob:", "data:", "about:", "filesystem:")):
            self._address_notices.append(url)


async def _close(page: Page) -> None:
    with suppress(PlaywrightError):
        await page.close()


async def _deny_permissions(context: BrowserContext, page: Page) -> CDPSession | None:
    """Set every permission in DENIED_PERMISSIONS to denied for the context. Chromium keys this by its browser
    context id, which only a page's target tells, and drops the settings when the session that made them detaches:
    the session returned must stay attached while the context lives."""
    browser = context.browser
    if browser is None:
        return None
    target = await context.new_cdp_session(page)
    try:
        info = await target.send("Target.getTargetInfo")
    finally:
        await target.detach()
    session = await browser.new_browser_cdp_session()
    for name in DENIED_PERMISSIONS:
        with suppress(PlaywrightError):  # a permission this Chromium does not know
            await session.send("Browser.setPermission", {
                "permission": {"name": name}, "setting": "denied",
                "browserContextId": info["targetInfo"]["browserContextId"],
            })
    return session


async def _remove_script_cookies(context: BrowserContext) -> None:
    """Remove every cookie page script could have set (those not HttpOnly), after a request too large for the site:
    a page that bloats its cookies would otherwise lock the agent out of the site for the rest of the episode."""
    with suppress(PlaywrightError):  # the context closed meanwhile
        names = {cookie.get("name", "") for cookie in await context.cookies() if not cookie.get("httpOnly")}
        if names:  # in one call, so the next request the agent makes finds them gone
            await context.clear_cookies(name=re.compile("^(?:" + "|".join(map(re.escape, sorted(names))) + ")$"))


_GUARDS: weakref.WeakKeyDictionary[BrowserContext, Containment] = weakref.WeakKeyDictionary()


def containment_of(context: BrowserContext) -> Containment | None:
    """The guard of a context made by `contain`; None for any other context."""
    return _GUARDS.get(context)


async def contain(browser: Browser, scope: SiteScope, *, base_url: str | None = None,
                  tenant: str | None = None) -> BrowserContext:
    """A new browser context that cannot leave `scope`: its requests go through the guard's routing and an egress
    proxy of its own (stopped when the context closes), service workers blocked, downloads refused, permissions
    denied, popups closed. With `tenant`, the proxy binds every request to that tenant token and takes out any
    binding page script set (recorded as a `tenant_binding` attempt). Open its pages with `context.new_page()`."""
    guard = Containment(scope)
    proxy = EgressProxy(scope, guard.refused, tenant=tenant)
    address = await proxy.start()
    try:
        context = await browser.new_context(base_url=base_url, proxy={"server": address}, service_workers="block",
                                            accept_downloads=False)
        await guard.attach(context)
    except BaseException:
        await proxy.close()
        raise

    context.on("close", lambda _context: guard.spawn(guard.release(proxy)))
    _GUARDS[context] = guard
    return context
