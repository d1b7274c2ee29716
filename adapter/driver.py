"""Drives one Playwright page of one episode: observe it as text, and carry out typed actions.

Every action is checked against the latest observation before it touches the page; anything the
driver cannot or may not do comes back as a `Rejection` with a reason the model can read, never as
an exception.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Dialog, ElementHandle, Frame, Page, Request, Response
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict

from adapter.actions import Action, Back, Check, Click, Done, Fill, More, Navigate, Press, Rejection, Select
from adapter.observation import Control, Observation, PagePart, format_control
from adapter.render import render_observation

ACTION_HEADER = "X-ComputerOps-Action"
ACTION_TIMEOUT_MS = 5_000
NAVIGATION_TIMEOUT_MS = 15_000
SETTLE_TIMEOUT_S = 5.0
FILLABLE_ROLES = frozenset({"textbox", "searchbox", "spinbutton", "slider", "combobox"})
SELECTABLE_ROLES = frozenset({"combobox", "listbox"})
CHECKABLE_ROLES = frozenset({"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"})

# Runs in each frame: the ids live in the top window; a handle must come from the element's own frame.
_LOOKUP = """([id, token]) => {
  const co = window.top.__computerops;
  if (!co || co.token !== token) return null;
  const el = co.byId.get(id);
  return el && el.isConnected && el.ownerDocument === document ? el : null;
}"""


# Whether a checkable control is checked now (native or ARIA); null when the id no longer resolves.
_CHECKED = """([id, token]) => {
  const co = window.__computerops;
  const e = co && co.token === token ? co.byId.get(id) : null;
  if (!e || !e.isConnected) return null;
  if (e instanceof e.ownerDocument.defaultView.HTMLInputElement && (e.type === "checkbox" || e.type === "radio")) {
    return e.checked;
  }
  return ["true", "mixed"].includes(e.getAttribute("aria-checked"));
}"""
# Why Playwright's fill cannot work on an element (null when it can): fill types into an <input> of a
# text-like type, sets the value of the other fillable input types, and types into a <textarea> or an
# editing host; anything else (a div with role=slider, say) it cannot fill.
FILL_PROBLEM = """e => {
  const view = e.ownerDocument.defaultView;
  if (e.isContentEditable || e instanceof view.HTMLTextAreaElement) return null;
  const types = ["text", "email", "number", "password", "search", "tel", "url", "color", "date", "time",
                 "datetime-local", "month", "range", "week"];
  if (e instanceof view.HTMLInputElement) return types.includes(e.type) ? null : `an input of type ${e.type}`;
  return `a <${e.localName}>, not a text field`;
}"""
_NEXT_TASK = "() => new Promise(resolve => setTimeout(resolve, 0))"

# In the top frame, for a control id of the latest observation: scroll the element into view if its centre
# is outside the viewport, hit-test its centre (through open shadow roots), and return where a click lands in top-level
# viewport coordinates. The click lands on the element itself ({x, y, label: null}), else on one of its
# labels when the element is hidden under that label ({x, y, label: i}); otherwise {problem}. {stale}
# when the id no longer names a connected element. One round trip, in the page's own world.
_CLICK_POINT = """([id, token]) => {
  const co = window.__computerops;
  const e = co && co.token === token ? co.byId.get(id) : null;
  if (!e || !e.isConnected) return { stale: true };
  const doc = e.ownerDocument, view = doc.defaultView;
  const box = e.getBoundingClientRect();
  const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
  if (cx < 0 || cy < 0 || cx >= view.innerWidth || cy >= view.innerHeight) {  // its centre is not in view
    e.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  }
  const centre = (target) => {
    const r = target.getBoundingClientRect();
    return [r.left + r.width / 2, r.top + r.height / 2];
  };
  const hitAt = ([x, y]) => {
    let hit = doc.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  };
  const within = (hit, target) => {
    for (let n = hit; n; n = n.parentNode || n.host) if (n === target) return true;
    return false;
  };
  const topLevel = ([x, y]) => {  // add the offsets of the same-origin frames the document sits in
    for (let w = view; w !== w.top && w.frameElement; w = w.parent) {
      const frame = w.frameElement.getBoundingClientRect();
      x += frame.left + w.frameElement.clientLeft;
      y += frame.top + w.frameElement.clientTop;
    }
    return { x, y };
  };
  const own = centre(e);
  const hit = hitAt(own);
  if (hit && within(hit, e)) return { ...topLevel(own), label: null };
  const labels = [...(e.labels || [])];
  for (let i = 0; i < labels.length; i++) {
    const at = centre(labels[i]);
    const labelHit = hitAt(at);
    if (labelHit && within(labelHit, labels[i])) return { ...topLevel(at), label: i };
  }
  if (!hit) return { problem: "its centre is outside the page" };
  const hitId = hit.id ? "#" + hit.id : "";
  const cls = typeof hit.className === "string" && hit.className.trim()
    ? "." + hit.className.trim().split(/\\s+/).join(".") : "";
  return { problem: `it is covered by <${hit.localName}${hitId}${cls}>` };
}"""


@dataclass(frozen=True)
class ClickPoint:
    """Where a click on a control lands, in top-level viewport coordinates."""

    x: float
    y: float
    label: int | None
    """None: on the control itself; else the index of the label of it that takes the click."""


class ActionOutcome(BaseModel):
    """What happened to one action: carried out, or rejected with a reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    rejection: Rejection | None = None
    note: str = ""
    navigated: bool = False
    """The action loaded a new document in the page (a link, a form submission, a navigation)."""


@dataclass(frozen=True)
class DialogEvent:
    """An alert/confirm/prompt the page raised; the driver accepts them all."""

    kind: str
    message: str


@cache
def annotate_script() -> str:
    """The page-side annotation function (adapter/annotate.js)."""
    return files("adapter").joinpath("annotate.js").read_text(encoding="utf-8")


def _reject(cause: str, reason: str) -> ActionOutcome:
    return ActionOutcome(ok=False, rejection=Rejection.model_validate({"cause": cause, "reason": reason}))


def _state(checked: bool) -> str:
    return "checked" if checked else "unchecked"


def _stale(control_id: str) -> ActionOutcome:
    return _reject(
        "stale_control",
        f"Control [{control_id}] is no longer on the page; the page changed. Use an id from the latest observation.",
    )


def _short(error: Exception) -> str:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return first[:200]


def _describe(control: Control) -> str:
    return format_control(control).split(" value=")[0].split(" options=")[0]


def check_applicable(action: Action, control: Control) -> str | None:
    """Why this action does not fit this control, or None when it does."""
    if control.disabled:
        return f"Control [{control.id}] is disabled."
    if isinstance(action, Fill):
        if control.role not in FILLABLE_ROLES or control.options:
            return f"Cannot fill [{control.id}], a {control.role}; fill works on text boxes."
        if control.readonly:
            return f"Control [{control.id}] is read-only."
    if isinstance(action, Select):
        if control.role not in SELECTABLE_ROLES or not control.options:
            return f"Cannot select on [{control.id}], a {control.role}; select works on drop-down lists."
        if action.option not in control.options:
            listed = json.dumps(control.options, ensure_ascii=False)
            return f"[{control.id}] has no option {action.option!r}. Its options are {listed}."
    if isinstance(action, Check):
        if control.role not in CHECKABLE_ROLES:
            return f"Cannot check [{control.id}], a {control.role}; check works on checkboxes and radio buttons."
        if control.role == "radio" and not action.checked:
            return f"Radio button [{control.id}] cannot be unchecked; check another option of its group."
    return None


def site_path(url: str, origin: str) -> str:
    """Path and query of a URL on the site's origin; other URLs stay whole."""
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != origin:
        return url
    return parts.path + (f"?{parts.query}" if parts.query else "")


class PageDriver:
    """One episode's page: `observe` renders it, `act` carries out one checked action."""

    def __init__(self, page: Page, *, origin: str, site_prefix: str, max_chars: int = 6000) -> None:
        self.page = page
        self.origin = origin.rstrip("/")
        self.site_prefix = site_prefix
        self.max_chars = max_chars
        self.latest: Observation | None = None
        self.dialog_log: list[DialogEvent] = []
        self._pending_dialogs: list[str] = []
        self._pending_notices: list[str] = []
        self._part: PagePart | None = None
        """The part of a long page the next observation shows (set by `more`, cleared by any other action)."""
        self._token: str | None = None
        self._inflight: set[Request] = set()
        self._committing: Request | None = None
        """A navigation of the page whose new document has not committed yet."""
        self._quiet = asyncio.Event()
        """Set while no request is in flight and no navigation waits to commit."""
        self._navigations = 0
        page.on("dialog", self._on_dialog)
        page.on("framenavigated", self._frame_navigated)
        page.on("request", self._request_started)
        page.on("response", self._response)
        page.on("requestfinished", self._request_ended)
        page.on("requestfailed", self._request_failed)
        self._check_quiet()

    def _check_quiet(self) -> None:
        if not self._inflight and self._committing is None:
            self._quiet.set()
        else:
            self._quiet.clear()

    def _frame_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self._navigations += 1
            self._committing = None
            self._check_quiet()

    def _request_started(self, request: Request) -> None:
        self._inflight.add(request)
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            self._committing = request
        self._check_quiet()

    def _response(self, response: Response) -> None:
        if response.request is self._committing and response.status in (204, 205):
            self._committing = None  # no content: the page stays as it is, nothing will commit

    def _request_ended(self, request: Request) -> None:
        self._inflight.discard(request)
        self._check_quiet()

    def _request_failed(self, request: Request) -> None:
        if request is self._committing and "ERR_ABORTED" in (request.failure or ""):
            self._committing = None  # became a download, or was cancelled: nothing will commit
        # Any other failed navigation commits Chromium's error page, which clears _committing.
        self._request_ended(request)

    async def _on_dialog(self, dialog: Dialog) -> None:
        self.dialog_log.append(DialogEvent(kind=dialog.type, message=dialog.message))
        self._pending_dialogs.append(dialog.message)
        with suppress(PlaywrightError):  # the page may go away with its dialog
            await dialog.accept()

    def notify(self, notice: str) -> None:
        """Tell the model something in the next observation's header (`Notice:` lines), e.g. that a request
        the page made was blocked; notices are shown once."""
        self._pending_notices.append(notice)

    async def observe(self) -> Observation:
        """Render the current page; dialogs raised since the last observation are included."""
        script = (f"() => {{ const html = ({annotate_script()})(); "
                  "return [html, window.__computerops.token, document.title]; }")
        for attempt in range(3):
            try:
                await self.page.wait_for_load_state("domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
                html, token, title = await self.page.evaluate(script)
                break
            except PlaywrightError:
                if attempt == 2:
                    raise
                await asyncio.sleep(0.2)  # a navigation replaced the document mid-evaluation
        dialogs, self._pending_dialogs = self._pending_dialogs, []
        notices, self._pending_notices = self._pending_notices, []
        here = site_path(self.page.url, self.origin)
        if self._part is not None and self.latest is not None and here != self.latest.url:
            self._part = None  # the page went elsewhere on its own: start at its top
        self._token = str(token)
        self.latest = render_observation(
            str(html), url=here, title=str(title),
            max_chars=self.max_chars, dialogs=dialogs, notices=notices, part=self._part,
        )
        return self.latest

    async def act(self, action: Action, number: int) -> ActionOutcome:
        """Check and carry out one action; requests it causes carry `X-ComputerOps-Action: number`."""
        if isinstance(action, Done):
            return _reject("not_applicable", "done is handled by the episode loop, not the page.")
        if isinstance(action, More):
            return self._more()
        self._part = None
        await self.page.context.set_extra_http_headers({ACTION_HEADER: str(number)})
        navigations_before = self._navigations
        try:
            if isinstance(action, Navigate):
                outcome = await self._navigate(action)
            elif isinstance(action, Back):
                outcome = await self._back()
            else:
                outcome = await self._on_control(action)
        except PlaywrightError as error:
            return _reject("execution_error", f"The browser could not do it: {_short(error)}")
        if outcome.ok and self._navigations != navigations_before:
            outcome = outcome.model_copy(update={"navigated": True})
        return outcome

    def _more(self) -> ActionOutcome:
        following = self.latest.next_part if self.latest else None
        if following is None:
            return _reject("not_applicable", "The whole page is already shown; there is no further part.")
        self._part = following
        return ActionOutcome(ok=True, note="showing the next part of the page")

    async def _on_control(self, action: Click | Fill | Select | Check | Press) -> ActionOutcome:
        control = self.latest.control(action.id) if self.latest else None
        if control is None:
            return _reject(
                "unknown_control",
                f"There is no control [{action.id}] on this page. Use an id from the latest observation.",
            )
        problem = check_applicable(action, control)
        if problem:
            return _reject("not_applicable", problem)
        if isinstance(action, Click | Check):
            return await self._click(action, control)
        element = await self.element(action.id)
        if element is None:
            return _stale(action.id)
        if isinstance(action, Fill):
            unfillable = await element.evaluate(FILL_PROBLEM)
            if unfillable:
                return _reject("not_applicable", f"Cannot fill [{action.id}]: it is {unfillable}. Use press with "
                                                 "keys (ArrowUp, ArrowDown, Enter, letters) or click it.")
            await element.fill(action.text, timeout=ACTION_TIMEOUT_MS)
            note = f"filled {_describe(control)}"
        elif isinstance(action, Press):
            await element.press(action.key, timeout=ACTION_TIMEOUT_MS)
            note = f"pressed {action.key} on {_describe(control)}"
        else:
            await element.select_option(label=action.option, timeout=ACTION_TIMEOUT_MS)
            note = f"selected {action.option!r} in {_describe(control)}"
        await self._settle()
        return ActionOutcome(ok=True, note=note)

    async def _click(self, action: Click | Check, control: Control) -> ActionOutcome:
        """A click with real mouse events where the control (or the label it hides under) is hit;
        `check` clicks only when the state differs, then verifies the state it asked for."""
        if isinstance(action, Check) and await self._checked(action.id) == action.checked:
            return ActionOutcome(ok=True, note=f"{_describe(control)} was already {_state(action.checked)}")
        point = await self.click_point(action.id)
        if point is None:
            return _stale(action.id)
        if isinstance(point, str):
            return _reject("not_applicable", f"Control [{action.id}] cannot be clicked now: {point}.")
        await self.page.mouse.click(point.x, point.y)
        await self._settle()
        if isinstance(action, Click):
            return ActionOutcome(ok=True, note=f"clicked {_describe(control)}")
        if await self._checked(action.id) != action.checked:
            return _reject("execution_error", f"Clicking [{action.id}] did not make it {_state(action.checked)}.")
        return ActionOutcome(ok=True, note=f"{_state(action.checked)} {_describe(control)}")

    async def click_point(self, control_id: str) -> ClickPoint | str | None:
        """Where a click on the control lands (see _CLICK_POINT); a reason when nothing of it can be clicked;
        None when the id no longer names an element on the page.

        The click itself then goes through real mouse events at that point: what a person's click does,
        without Playwright's extra actionability round trips.
        """
        if self._token is None:
            return None
        found = await self.page.evaluate(_CLICK_POINT, [control_id, self._token])
        if found.get("stale"):
            return None
        if "problem" in found:
            return str(found["problem"])
        return ClickPoint(x=float(found["x"]), y=float(found["y"]), label=found["label"])

    async def _checked(self, control_id: str) -> bool | None:
        return await self.page.evaluate(_CHECKED, [control_id, self._token])  # type: ignore[no-any-return]

    async def element(self, control_id: str) -> ElementHandle | None:
        """The live element of a control id, from whichever same-origin frame holds it."""
        if self._token is None:
            return None
        for frame in self.page.frames:
            try:
                handle = await frame.evaluate_handle(_LOOKUP, [control_id, self._token])
            except PlaywrightError:
                continue  # a cross-origin frame, or a document being replaced
            element = handle.as_element()
            if element is not None:
                return element
            await handle.dispose()
        return None

    async def _navigate(self, action: Navigate) -> ActionOutcome:
        target = urljoin(self.page.url, action.url.strip())
        parts = urlsplit(target)
        same_origin = f"{parts.scheme}://{parts.netloc}" == self.origin
        on_site = parts.path.startswith(self.site_prefix) or parts.path == self.site_prefix.rstrip("/")
        if not (same_origin and on_site):
            return _reject(
                "off_site",
                f"{action.url} is not a page of this site; only paths under {self.site_prefix} "
                "are allowed.",
            )
        await self.page.goto(target, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        await self._settle()
        return ActionOutcome(ok=True, note=f"navigated to {site_path(self.page.url, self.origin)}")

    async def _back(self) -> ActionOutcome:
        can_go_back = await self.page.evaluate("() => Boolean(window.navigation?.canGoBack)")
        if not can_go_back:
            return _reject("not_applicable", "There is no previous page to go back to.")
        await self.page.go_back(wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        await self._settle()
        return ActionOutcome(ok=True, note=f"went back to {site_path(self.page.url, self.origin)}")

    async def _settle(self) -> None:
        """Wait until what the action started is over: a navigation it began has reached DOMContentLoaded
        and the requests it started have finished. Event-driven and bounded by SETTLE_TIMEOUT_S."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_TIMEOUT_S
        while True:
            # A round trip through the page's task queue: a navigation or fetch the action scheduled has
            # begun (its request is in flight) by the time this returns, or the old document is gone.
            with suppress(PlaywrightError):
                await self.page.evaluate(_NEXT_TASK)
            try:
                await self.page.wait_for_load_state("domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
            except PlaywrightError:
                return
            if self._quiet.is_set():
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            with suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), timeout=remaining)
