"""ComputerOps' own JavaScript world in a page: the annotation and every id lookup run there, out of page reach.

Page script shares the DOM with us but not its JavaScript: a page can replace `Element.prototype.getAttribute`,
`getComputedStyle`, `Array.prototype.map`, `JSON.stringify`, `Map.prototype.get` or define `window.__computerops`,
and none of it is seen from an isolated world (Chromium gives each world its own globals, prototypes and DOM
wrappers). So annotate.js and the driver's lookups run in one isolated world per document of the top frame,
created through the DevTools protocol (`Page.createIsolatedWorld`; Playwright has no public isolated-world
evaluate), called with `Runtime.callFunctionOn` and answered by value (V8's serialiser, not page code). The
annotation walks same-origin frames and open shadow roots from the top frame's world: Chromium extends that world
into each frame the script reaches. `window.__computerops` there holds the id maps, so ids stay stable across the
observations of a document and start afresh with a new one (a new document has a new world).

What page script can still do is change the DOM itself, and that is what a person sees too. Two things cross from
this world into the page, and each is bounded:

* `element` hands Playwright an `ElementHandle` for press (fill and select are carried out in this world and need
  none) (Playwright's selector engines and actions
  run in its own utility world, also out of page reach). It puts a one-time random attribute on the element,
  has Playwright find the one element carrying it in any frame, then checks here that the element still carries
  it and removes it. A page that watches mutations can see the attribute; to redirect the action it must move it
  to another element and back between two protocol round trips it cannot observe. That race is the residual risk;
  a page that wins it gets the effect it could have produced anyway with its own input handlers.
* `annotate` asks Chromium (`DOMDebugger.getEventListeners`, by protocol, reading no page JavaScript) which nodes
  have click, mouse or pointer listeners; a page can add listeners, which only makes elements it really listens
  on offered as clickable.

Kept fast, since every observation comes here: the world of a new document is made when the top frame commits it
(`Page.frameNavigated` on this module's own protocol session), not at the first observation; a long function (the
annotation) is sent once per world and then called by a key; a document found quiet (no listener, no script, no
inline handler) is not asked for listeners again until it shows a script. Replies on this session are not ordered
with Playwright's own events: a caller that needs Playwright to have seen what a task in the page started (a
request) must make a round trip on Playwright's session afterwards (PageDriver._settle does). A navigation of the
top frame is the exception such a round trip cannot cover (its request is made by the browser process, on its own
time): the renderer says it asked for one (`Page.frameRequestedNavigation`, sent before the task that asked ends, so
before any reply of a later call on this session) and the session says when the frame has stopped loading; between
the two, `top_frame_loading` is true (`until_top_frame_loaded` waits for the end).

One module (just over 400 lines): the world's creation, its per-document bookkeeping and the calls into it.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import suppress
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary, ref

from playwright.async_api import CDPSession, ElementHandle, Page
from playwright.async_api import Error as PlaywrightError

WORLD_NAME = "computerops"
OBJECT_GROUP = "computerops-world"
ACTIVATION_EVENTS = frozenset({"click", "mousedown", "mouseup"})
"""Listeners that make Chromium treat an `<a>` without href as a link (and any element as clickable)."""
POINTER_EVENTS = frozenset({"pointerdown", "pointerup"})
"""Listeners that make an element clickable for a mouse, though Chromium does not call it a link."""
HOVER_EVENTS = frozenset({"mouseover", "mouseenter", "pointerover", "pointerenter"})
"""Listeners that make an element react to the pointer passing over it (kind "hover": a target of `hover`)."""
PRESS_EVENTS = frozenset({"mousedown", "pointerdown", "touchstart", "dragstart"})
"""Listeners that begin a drag (a sortable list's): marked " press" after the kind, so annotate.js can tell a list
that drags its items from one that only takes clicks."""
PLAYWRIGHT_MARKER = "__playwright"
"""How the listeners Playwright's injected script adds to the window are recognised (not the page's)."""
INSTALL_OVER = 1_000
"""A function whose source is longer is sent once per world and kept there, then called by a short key: the
annotation is ~25 kB, and sending it with every observation costs more than a protocol round trip."""
LISTENER_LIMIT = 2_000
"""Most listening elements passed to one annotation; a page with more offers the first ones in document order."""
_CONTEXT_GONE = ("Cannot find context with specified id", "Execution context was destroyed",
                 "Cannot find default execution context")
"""How the protocol says a world (or the main world) went with its document."""
_OBJECT_GONE = "Could not find object with given id"

ArgumentsFor = Callable[[int], Awaitable[list[dict[str, Any]]]]
"""Makes the call arguments for an execution context (object ids belong to one context)."""
_WORLDS: WeakKeyDictionary[Page, IsolatedWorld] = WeakKeyDictionary()


def listener_kind(types: set[str]) -> str | None:
    """What a node's listeners (event types) make it to annotate.js: "activation" (click, mousedown, mouseup),
    "pointer" (pointerdown, pointerup only, or dragstart) or "hover" (only pointer-over events: a target of `hover`,
    not of a click), with " press" after it when it also begins drags (`PRESS_EVENTS`); None when none counts."""
    if types & ACTIVATION_EVENTS:
        kind = "activation"
    elif types & POINTER_EVENTS:
        kind = "pointer"
    elif types & HOVER_EVENTS:
        kind = "hover"
    elif "dragstart" in types:
        kind = "pointer"  # an HTML5 drag source: a press there begins its drag
    else:
        return None
    return kind + " press" if types & PRESS_EVENTS else kind


class WorldError(PlaywrightError):
    """A script in the isolated world threw, or the world could not be reached."""


class ScriptError(WorldError):
    """A script in the isolated world threw (the page's content made it fail: too deep a stack, say)."""


def world_of(page: Page) -> IsolatedWorld:
    """The one isolated world of a page: the driver, the fidelity checks and tests must share it, because the ids
    live in it."""
    world = _WORLDS.get(page)
    if world is None:
        world = _WORLDS[page] = IsolatedWorld(page)
    return world


def _gone(error: Exception) -> bool:
    return any(text in str(error) for text in _CONTEXT_GONE)


def _object_gone(error: Exception) -> bool:
    return _gone(error) or _OBJECT_GONE in str(error)


def _argument(value: Any) -> dict[str, Any]:
    return {"value": value}


@lru_cache(maxsize=64)
def _key(function: str) -> str:
    """The name a long function is kept under in the world (the same few are sent on every observation)."""
    return hashlib.sha256(function.encode()).hexdigest()[:24]


def _group() -> str:
    """A protocol object group of one's own, released when done (calls may overlap)."""
    return f"{OBJECT_GROUP}-{secrets.token_hex(6)}"


class IsolatedWorld:
    """An isolated JavaScript world in the top frame of a page, recreated for each new document."""

    def __init__(self, page: Page) -> None:
        self._page = ref(page)  # weakly: the registry of worlds must not keep closed pages alive
        self._cdp: CDPSession | None = None
        self._context: int | None = None
        self._frame_id: str | None = None
        self._main_objects: dict[str, str] = {}
        """`document` and `window` of the main world, as protocol object ids (for reading their listeners)."""
        self._lock = asyncio.Lock()
        self._session_lock = asyncio.Lock()
        self._installed: set[tuple[int, str]] = set()
        """(context, key) of the long functions already kept in a world (see INSTALL_OVER)."""
        self._quiet: int | None = None
        """The context of a document found quiet by its latest annotation (see `annotate`); forgotten when the top
        frame loads a new document, so that a new document is always asked for its listeners first."""
        self._preparing: asyncio.Future[Any] | None = None
        self._listened: tuple[int, tuple[list[tuple[int, str]], bool, bool]] | None = None
        """(context, what `_listening` found) for the document of that context, kept while a watch in the world
        (_UNCHANGED) sees no change to its DOM (see `annotate`)."""
        self._pending: set[asyncio.Future[None]] = set()
        """Work started and not waited for (object groups being released)."""
        self._world_at_busy: int | None = None
        """The world's context when the top frame last began loading (see `_on_new_document`)."""
        self._top_loaded = asyncio.Event()
        """Clear from the moment the top frame asks for a navigation or starts loading until it stops loading."""
        self._top_loaded.set()

    @property
    def top_frame_loading(self) -> bool:
        """The top frame has asked for a navigation, or is loading, and has not stopped loading since."""
        return not self._top_loaded.is_set()

    @property
    def top_frame_loaded(self) -> bool:
        """The world has watched the top frame's loading (its protocol session is open) and it is not loading now:
        the current document has passed DOMContentLoaded (a wait for it would return at once)."""
        return self._cdp is not None and self._top_loaded.is_set()

    async def until_top_frame_loaded(self, timeout: float) -> None:
        """Wait, at most `timeout` seconds, until the top frame has stopped loading."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._top_loaded.wait(), timeout)

    def _is_top_frame(self, event: dict[str, Any]) -> bool:
        return self._frame_id is None or event.get("frameId") == self._frame_id

    def _on_top_frame_busy(self, event: dict[str, Any]) -> None:
        """`Page.frameRequestedNavigation` or `Page.frameStartedLoading`: the top frame's loading begins. Not for a
        navigation the frame asked to open in another window (Shift+Enter or Control+Enter on a link): this frame
        does not load for it, so no `frameStoppedLoading` would end the wait, which ran to the settle bound."""
        if event.get("disposition") in ("newTab", "newWindow"):
            return
        if self._is_top_frame(event):
            self._top_loaded.clear()
            self._world_at_busy = self._context

    def _on_top_frame_stopped(self, event: dict[str, Any]) -> None:
        """`Page.frameStoppedLoading`: it ends, whether the navigation committed, was refused or was a download."""
        if self._is_top_frame(event):
            self._top_loaded.set()

    def _on_new_document(self, event: dict[str, Any]) -> None:
        """The top frame committed a new document (`Page.frameNavigated`; not sent for same-document navigations):
        its world and main-world objects are made now, while it loads, so the first observation need not wait."""
        frame = event.get("frame", {})
        if frame.get("parentId"):
            return
        self._frame_id = str(frame.get("id", self._frame_id))
        if self._context is not None and self._context == self._world_at_busy:
            # made before this load began: the old document's, gone with it (no round trip to find that out)
            self._context = None
        self._quiet = None
        self._listened = None
        self._main_objects.clear()
        self._preparing = asyncio.ensure_future(self._prepare())

    async def _prepare(self) -> None:
        with suppress(PlaywrightError):  # the page may already be navigating again, or closing
            await self._renewed()  # first: a world made in place of one found gone clears the main-world objects
            await asyncio.gather(self._main_world_object("document"), self._main_world_object("window"))

    async def _renewed(self) -> None:
        """A world for the current document: the known one when it still answers (a world made for the new
        document before this event was read must be kept, or its ids would be lost), else a new one."""
        context = self._context
        if context is not None:
            try:
                await (await self._session()).send("Runtime.callFunctionOn", {
                    "functionDeclaration": "() => 0", "executionContextId": context, "returnByValue": True})
                return
            except PlaywrightError as error:
                if not _gone(error):
                    raise
        await self._context_id(stale=context)

    @property
    def page(self) -> Page:
        page = self._page()
        if page is None:
            raise WorldError("The page of this isolated world is gone.")
        return page

    async def _session(self) -> CDPSession:
        if self._cdp is None:
            async with self._session_lock:
                if self._cdp is None:
                    cdp = await self.page.context.new_cdp_session(self.page)
                    cdp.on("Page.frameNavigated", self._on_new_document)
                    cdp.on("Page.frameRequestedNavigation", self._on_top_frame_busy)
                    cdp.on("Page.frameStartedLoading", self._on_top_frame_busy)
                    cdp.on("Page.frameStoppedLoading", self._on_top_frame_stopped)
                    await cdp.send("Page.enable")
                    self._cdp = cdp
        return self._cdp

    async def _context_id(self, stale: int | None = None) -> int:
        """The world's execution context for the current document; a new world when `stale` (a context found
        gone) is still the current one. One at a time, so a document never gets two worlds."""
        async with self._lock:
            if self._context is not None and self._context != stale:
                return self._context
            cdp = await self._session()
            if self._frame_id is None:  # the top frame keeps its id for the page's life
                self._frame_id = str((await cdp.send("Page.getFrameTree"))["frameTree"]["frame"]["id"])
            created = await cdp.send("Page.createIsolatedWorld", {"frameId": self._frame_id, "worldName": WORLD_NAME})
            self._context = int(created["executionContextId"])
            if stale is not None:  # a world found gone: its document may be gone too (a new document's
                self._main_objects.clear()  # objects were cleared when it committed, and may be made already)
            self._installed.clear()  # kept in worlds that are gone
            return self._context

    async def _call(self, function: str, arguments: Sequence[Mapping[str, Any]] | ArgumentsFor, *,
                    by_value: bool = True, await_promise: bool = False, group: str = OBJECT_GROUP) -> dict[str, Any]:
        """`Runtime.callFunctionOn` in the world, with arguments (or a coroutine making them for a context); retried
        once in a new world when the document was replaced meanwhile."""
        return (await self._call_in(function, arguments, by_value=by_value, await_promise=await_promise,
                                    group=group))[0]

    async def _call_in(self, function: str, arguments: Sequence[Mapping[str, Any]] | ArgumentsFor, *,
                       by_value: bool, await_promise: bool, group: str) -> tuple[dict[str, Any], int]:
        """`_call`, and the execution context that answered."""
        stale: int | None = None
        for attempt in range(2):
            context = await self._context_id(stale)
            try:
                made = list(arguments) if isinstance(arguments, Sequence) else await arguments(context)
                declaration, key = self._declaration(function, context)
                reply = await (await self._session()).send("Runtime.callFunctionOn", {
                    "functionDeclaration": declaration, "executionContextId": context, "arguments": made,
                    "returnByValue": by_value, "awaitPromise": await_promise, "objectGroup": group,
                })
            except PlaywrightError as error:
                if attempt == 0 and _gone(error):
                    stale = context
                    continue
                raise
            if "exceptionDetails" in reply:
                await self._release(group)  # the exception's objects
                details = reply["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text", "")
                raise ScriptError(f"Script error in the isolated world: {str(text).splitlines()[0][:200]}")
            if key is not None:
                self._installed.add((context, key))
            result: dict[str, Any] = reply["result"]
            return result, context
        raise AssertionError("unreachable")  # pragma: no cover

    def _declaration(self, function: str, context: int) -> tuple[str, str | None]:
        """What to send for a function: itself, or for a long one, a call of the copy kept in the world (sent along
        with the first call, which keeps it). The key, for a long function, once its first call succeeds."""
        if len(function) <= INSTALL_OVER:
            return function, None
        key = _key(function)
        if (context, key) in self._installed:
            return f"function (...args) {{ return globalThis.__computeropsKept.get({key!r}).apply(this, args); }}", None
        return (f"function (...args) {{ const kept = (globalThis.__computeropsKept ||= new Map()); "
                f"const f = ({function}); kept.set({key!r}, f); return f.apply(this, args); }}"), key

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` without waiting for it (kept referenced until done; it suppresses its own errors)."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _release(self, group: str) -> None:
        if self._cdp is not None:
            with suppress(PlaywrightError):  # the page went away, and its objects with it
                await self._cdp.send("Runtime.releaseObjectGroup", {"objectGroup": group})

    async def interrupt(self, *, timeout: float) -> None:
        """End the JavaScript holding the page's renderer thread now (a busy loop of the page's own, or a call of this
        world's) by `Runtime.terminateExecution`, which Chromium carries out without waiting for that thread; waits
        at most `timeout`. Nothing when this world has no protocol session yet: one attached now would itself wait
        for the thread."""
        if self._cdp is None:
            return
        with suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(self._cdp.send("Runtime.terminateExecution"), timeout)

    async def evaluate(self, function: str, arg: Any = None, *, await_promise: bool = False) -> Any:
        """Call a JavaScript function (source text) with one JSON argument in the world; its result by value."""
        result = await self._call(function, [_argument(arg)], await_promise=await_promise)
        return result.get("value")

    async def backend_node_id(self, find: str, arg: Any = None) -> int | None:
        """The DOM backend node id of the element `find(arg)` returns in the world; None when it returns none."""
        group = _group()
        try:
            result = await self._call(find, [_argument(arg)], by_value=False, group=group)
            object_id = result.get("objectId")
            if object_id is None or result.get("subtype") != "node":
                return None
            node = (await (await self._session()).send("DOM.describeNode", {"objectId": object_id}))["node"]
            return int(node["backendNodeId"])
        finally:
            await self._release(group)

    async def _main_world_object(self, expression: str) -> str:
        """A protocol object id for `document` or `window` of the page's main world, read by the protocol (the two
        names are unforgeable: page script cannot redefine them), kept while the document lives."""
        found = self._main_objects.get(expression)
        if found is None:
            reply = await (await self._session()).send(
                "Runtime.evaluate", {"expression": expression, "objectGroup": WORLD_NAME})
            found = self._main_objects[expression] = str(reply["result"]["objectId"])
        return found

    async def _listening(self) -> tuple[list[tuple[int, str]], bool, bool]:
        """(backend node id, kind) of the nodes with their own click, mouse or pointer listeners, in the page and
        its same-origin frames and open shadow roots (documents included), kind as `listener_kind` names it;
        whether the top window has one; and whether page script added any listener at all."""
        cdp = await self._session()
        for attempt in range(2):
            try:
                document, window_object = await asyncio.gather(self._main_world_object("document"),
                                                               self._main_world_object("window"))
                found, window = await asyncio.gather(
                    cdp.send("DOMDebugger.getEventListeners", {"objectId": document, "depth": -1, "pierce": True}),
                    cdp.send("DOMDebugger.getEventListeners", {"objectId": window_object}))
                break
            except PlaywrightError as error:
                self._main_objects.clear()  # a new document: its objects are new too
                if attempt == 1 or not _object_gone(error):
                    raise
        # Playwright's own script in the main world (made for element handles) listens on the window for every
        # mouse event; its listeners are known by the marker listener it adds beside them.
        playwright = {listener.get("scriptId") for listener in window["listeners"]
                      if str(listener.get("type", "")).startswith(PLAYWRIGHT_MARKER)}
        types: dict[int, set[str]] = {}
        for listener in found["listeners"]:
            node, kind = listener.get("backendNodeId"), str(listener.get("type", ""))
            if node is None or listener.get("scriptId") in playwright:
                continue
            if kind in ACTIVATION_EVENTS | POINTER_EVENTS | HOVER_EVENTS | PRESS_EVENTS:
                types.setdefault(int(node), set()).add(kind)
        kinds = {node: named for node, heard in types.items() if (named := listener_kind(heard))}
        pages = [listener for listener in [*found["listeners"], *window["listeners"]]
                 if listener.get("scriptId") not in playwright]
        window_listens = any(listener.get("type") in ACTIVATION_EVENTS | POINTER_EVENTS
                             and listener.get("scriptId") not in playwright for listener in window["listeners"])
        return list(kinds.items())[:LISTENER_LIMIT], window_listens, bool(pages)

    async def annotate(self, annotate: str) -> Any:
        """Run the annotation (`annotate(listening)`, listening: Map node -> kind, the top window included when it
        listens) in the world, by value.

        A document found quiet (no listener, and nothing that runs page script: see _QUIET) is annotated again
        without asking for listeners, one protocol round trip less; each annotation checks it is still quiet, and
        is made again with the listeners when it is not. A document whose listeners were read is annotated again
        with the Map the world kept from that read, in one round trip, while the watch on its DOM (_UNCHANGED, asked
        in the same call) sees no change; on a change the call answers null and the listeners are read again."""
        skip = self._context is not None and self._context == self._quiet
        cached = self._listened
        if not skip and cached is not None and cached[0] == self._context:
            with suppress(PlaywrightError):  # the document went: read it again below
                result, context = await self._call_in(self._annotation(annotate), [_argument(True)], by_value=True,
                                                      await_promise=False, group=OBJECT_GROUP)
                if context == cached[0] and result.get("value") is not None:
                    return await self._found(result["value"], context, any_listener=cached[1][2], skipped=False,
                                       annotate=annotate)
            self._listened = None
        listening: list[tuple[int, str]] = []
        window_listens = any_listener = False
        if not skip:
            listening, window_listens, any_listener = await self._listeners_now()
        cdp = await self._session()
        group = _group()

        async def nodes_in(context: int) -> list[dict[str, Any]]:
            resolved = await asyncio.gather(*(
                cdp.send("DOM.resolveNode", {"backendNodeId": node, "executionContextId": context,
                                             "objectGroup": group})
                for node, _ in listening), return_exceptions=True)
            for outcome in resolved:
                if isinstance(outcome, PlaywrightError) and _gone(outcome):
                    raise outcome  # the world went with its document: _call retries in a new one
            kept = [(kind, outcome["object"]["objectId"])
                    for (_, kind), outcome in zip(listening, resolved, strict=True)
                    if isinstance(outcome, dict) and "objectId" in outcome.get("object", {})]
            return [_argument(False), _argument(window_listens), _argument([kind for kind, _ in kept]),
                    *({"objectId": handle} for _, handle in kept)]

        try:
            result, context = await self._call_in(self._annotation(annotate), nodes_in, by_value=True,
                                                  await_promise=False, group=group)
        finally:
            if listening:  # objects were made for them (a result by value makes none); released meanwhile
                self._later(self._release(group))
        if self._listened is not None and self._listened[0] != context:
            self._listened = None  # the read was of another document than the one annotated
        return await self._found(result.get("value"), context, any_listener=any_listener, skipped=skip,
                                 annotate=annotate)

    @staticmethod
    def _annotation(annotate: str) -> str:
        """The function the world runs: with `kept`, on the listening Map kept from the last read while the DOM
        watch sees no change (else null); without, on the nodes given, whose Map it keeps."""
        return ("function (kept, windowListens, kinds, ...nodes) { let listening = globalThis.__computeropsListening; "
                f"if (kept) {{ if (!listening || !({_UNCHANGED})(false)) return null; }} "
                "else { listening = new Map(); "
                "for (let i = 0; i < nodes.length; i++) listening.set(nodes[i], kinds[i]); "
                "if (windowListens) listening.set(window, 'activation'); "
                "globalThis.__computeropsListening = listening; } "
                f"const found = [({annotate})(listening), ({_QUIET})()]; ({MOTION_WATCH})(); return found; }}")

    async def _found(self, found: Any, context: int, *, any_listener: bool, skipped: bool, annotate: str) -> Any:
        value, quiet = found or [None, False]
        if quiet and not any_listener:
            self._quiet = context
            return value
        self._quiet = None
        if skipped:
            return await self.annotate(annotate)  # no longer quiet: the listeners were not asked for
        return value

    async def _listeners_now(self) -> tuple[list[tuple[int, str]], bool, bool]:
        """What `_listening` finds, read once per document and again only after its DOM changed.

        Chromium's listener table is read (4-14 ms on a real page) for a document's first observation and whenever
        the watch kept in the world (_UNCHANGED: a MutationObserver on the document, its same-origin frames'
        documents and its open shadow roots, for added or removed nodes, attributes and text) saw a change since
        the last read; else the last read is used, by the Map of nodes the world kept from it (`annotate` asks the watch
        in the same call). The watch is
        armed before each read, so a change made while Chromium is read makes the next observation read again.
        What it cannot see: a listener that page script adds to a node already there, or removes, without changing
        anything in the DOM, nor the set of frames (a same-origin frame that loads another document counts as a
        change). Such a node is offered (or not) as clickable as at the last change; the next change of the DOM
        puts that right."""
        self._listened = None
        context = await self._context_id()
        # The watch is armed before Chromium is read: its call is sent first, and a session's commands run in the
        # renderer in the order sent, so the read need not wait for its answer (one round trip less).
        arming = asyncio.ensure_future(self._call_in(_UNCHANGED, [_argument(True)], by_value=True,
                                                     await_promise=False, group=OBJECT_GROUP))
        await asyncio.sleep(0)  # the arming call runs up to its answer: its message is written
        try:
            found = await self._listening()
        finally:
            with suppress(PlaywrightError):  # a document going away: read it anyway, and do not keep the read
                context = (await arming)[1]
        if context == self._context:
            self._listened = (context, found)
        return found

    async def element(self, find: str, arg: Any = None) -> ElementHandle | None:
        """A Playwright handle on the element `find(arg)` returns in the world (None when it returns none, or when
        the page moved the one-time marker, so that the handle might stand for another element)."""
        attribute = f"data-computerops-{secrets.token_hex(8)}"
        tag = (f"(arg) => {{ const e = ({find})(arg); if (!e || !e.isConnected) return false; "
               f"e.setAttribute({attribute!r}, ''); return true; }}")
        untag = (f"(arg) => {{ const e = ({find})(arg); const had = Boolean(e && e.hasAttribute({attribute!r})); "
                 f"if (e) e.removeAttribute({attribute!r}); return had; }}")
        if not await self.evaluate(tag, arg):
            return None
        found: list[ElementHandle] = []
        try:
            for frame in self.page.frames:
                try:
                    found.extend(await frame.locator(f"[{attribute}]").element_handles())
                except PlaywrightError:
                    continue  # a cross-origin frame, or a document being replaced
        finally:
            still_there = await self.evaluate(untag, arg)
        if len(found) == 1 and still_there:
            return found[0]
        for handle in found:
            await handle.dispose()
        return None


# Whether no page script can have added listeners since: no <script> in the document or its same-origin frames,
# no inline event handler attribute (on...), no javascript: URL, no shadow root (a declarative one can hold
# handlers out of XPath's reach). Together with "Chromium reports no listener", it lets the next annotation of the
# document skip asking for listeners.
_QUIET = """() => {
  const documents = [document];
  const scripted = "script, [href^='javascript:' i], [src^='javascript:' i], [action^='javascript:' i]";
  const handlers = "count(//@*[starts-with(name(), 'on') and name() != 'open'])";
  for (let i = 0; i < documents.length; i++) {
    const doc = documents[i];
    if (doc.querySelector(scripted)) return false;
    if (doc.evaluate(handlers, doc, null, XPathResult.NUMBER_TYPE, null).numberValue > 0) return false;
    for (const el of doc.querySelectorAll("*")) {
      if (el.shadowRoot) return false;
      if (el.localName === "iframe" || el.localName === "frame") {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { /* cross-origin: it cannot reach this document */ }
        if (inner) documents.push(inner);
      }
    }
  }
  return true;
}"""


# The watch for script-driven motion (adapter/stability.py), armed again at the end of every annotation: from then
# on it keeps when the DOM of the document or its same-origin frames last changed at all (`changedAt`), and when an
# inline style, class or hidden state last did (`styledAt`), as performance.now() times; `armedAt` is when it was
# armed. Two numbers per mutation callback, no records kept.
MOTION_WATCH = """() => {
  const w = (globalThis.__computeropsMotion ||= { armedAt: 0, changedAt: -1, styledAt: -1, observer: null, docs: [] });
  const docs = [document];
  for (let i = 0; i < docs.length; i++) {
    for (const frame of docs[i].querySelectorAll("iframe, frame")) {
      let inner = null;
      try { inner = frame.contentDocument; } catch (e) { /* cross-origin */ }
      if (inner) docs.push(inner);
    }
  }
  if (!w.observer) {
    w.observer = new MutationObserver((records) => {
      const now = performance.now();
      w.changedAt = now;
      if (records.some((r) => r.type === "attributes" && ["style", "class", "hidden"].includes(r.attributeName))) {
        w.styledAt = now;
      }
    });
  }
  if (docs.length !== w.docs.length || docs.some((d, i) => d !== w.docs[i])) {
    w.observer.disconnect();
    const what = { subtree: true, childList: true, attributes: true, characterData: true };
    for (const d of docs) w.observer.observe(d, what);
    w.docs = docs;
  }
  w.armedAt = performance.now();
}"""


# The watch on a document's DOM that lets the listener read be kept (IsolatedWorld._listeners_now): with `arm`,
# (re)starts watching the document, its same-origin frames' documents and every open shadow root in them, and says
# nothing changed is known; without, says whether nothing changed since it was armed (true) and stops watching on the
# first change (one flag set, no records kept).
_UNCHANGED = """(arm) => {
  const w = (globalThis.__computeropsWatch ||= { changed: true, roots: [], observer: null });
  const roots = [];
  const walk = (root) => {
    roots.push(root);
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.localName === "iframe" || el.localName === "frame") {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { /* cross-origin */ }
        if (inner) walk(inner);
      }
    }
  };
  if (!arm) {
    if (w.changed) return false;
    const docs = [document];  // a same-origin frame that loaded another document is a change
    for (let i = 0; i < docs.length; i++) {
      for (const frame of docs[i].querySelectorAll("iframe, frame")) {
        let inner = null;
        try { inner = frame.contentDocument; } catch (e) { /* cross-origin */ }
        if (inner) docs.push(inner);
      }
    }
    return docs.every((d) => w.roots.includes(d));
  }
  if (w.observer) w.observer.disconnect();
  walk(document);
  w.roots = roots;
  w.changed = false;
  w.observer = new MutationObserver(() => { w.changed = true; w.observer.disconnect(); });
  for (const root of roots) {
    w.observer.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
  }
  return true;
}"""


# The element of a control id in the world's id map, whatever observation it came from (for checks of a page
# whose driver is not at hand); null when the id names no connected element.
_BY_ID = """(id) => {
  const co = window.__computerops;
  const el = co ? co.byId.get(id) : null;
  return el && el.isConnected ? el : null;
}"""


async def offered_node_ids(page: Page, ids: Sequence[str]) -> dict[str, int | None]:
    """The DOM backend node id of each control id of the page's latest observation (None when it no longer
    resolves), read from the id map in the page's isolated world."""
    world = world_of(page)
    found = await asyncio.gather(*(world.backend_node_id(_BY_ID, control_id) for control_id in ids))
    return dict(zip(ids, found, strict=True))
