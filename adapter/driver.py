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

from playwright.async_api import Dialog, ElementHandle, Frame, Page, Request
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict

from adapter.actions import Action, Back, Check, Click, Done, Fill, More, Navigate, Rejection, Select
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


_NEXT_TASK = "() => new Promise(resolve => setTimeout(resolve, 0))"

# In the element's frame: scroll it into view if it is outside, then hit-test its centre (through open
# shadow roots). "self" when the click lands on it; the index of a label of it that is hit at its own
# centre when the element itself is hidden under that label; else what covers it.
_HIT_TEST = """e => {
  const view = e.ownerDocument.defaultView;
  const box = e.getBoundingClientRect();
  if (box.bottom <= 0 || box.top >= view.innerHeight || box.right <= 0 || box.left >= view.innerWidth) {
    e.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  }
  const hitAt = (target) => {
    const r = target.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    let hit = e.ownerDocument.elementFromPoint(x, y);
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
  const hit = hitAt(e);
  if (hit && within(hit, e)) return "self";
  const labels = [...(e.labels || [])];
  for (let i = 0; i < labels.length; i++) {
    if ((hit && within(hit, labels[i])) || within(hitAt(labels[i]) || e, labels[i])) return i;
  }
  if (!hit) return "its centre is outside the page";
  const id = hit.id ? "#" + hit.id : "";
  const cls = typeof hit.className === "string" && hit.className.trim()
    ? "." + hit.className.trim().split(/\\s+/).join(".") : "";
  return `it is covered by <${hit.localName}${id}${cls}>`;
}"""


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
        self._part: PagePart | None = None
        """The part of a long page the next observation shows (set by `more`, cleared by any other action)."""
        self._token: str | None = None
        self._inflight: set[Request] = set()
        self._quiet = asyncio.Event()
        """Set when the last request in flight ended."""
        self._navigations = 0
        page.on("dialog", self._on_dialog)
        page.on("framenavigated", self._frame_navigated)
        page.on("request", self._request_started)
        page.on("requestfinished", self._request_ended)
        page.on("requestfailed", self._request_ended)

    def _frame_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self._navigations += 1

    def _request_started(self, request: Request) -> None:
        self._inflight.add(request)

    def _request_ended(self, request: Request) -> None:
        self._inflight.discard(request)
        if not self._inflight:
            self._quiet.set()

    async def _on_dialog(self, dialog: Dialog) -> None:
        self.dialog_log.append(DialogEvent(kind=dialog.type, message=dialog.message))
        self._pending_dialogs.append(dialog.message)
        with suppress(PlaywrightError):  # the page may go away with its dialog
            await dialog.accept()

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
        here = site_path(self.page.url, self.origin)
        if self._part is not None and self.latest is not None and here != self.latest.url:
            self._part = None  # the page went elsewhere on its own: start at its top
        self._token = str(token)
        self.latest = render_observation(
            str(html), url=here, title=str(title),
            max_chars=self.max_chars, dialogs=dialogs, part=self._part,
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
        try:
            if isinstance(action, Navigate):
                return await self._navigate(action)
            if isinstance(action, Back):
                return await self._back()
            return await self._on_control(action)
        except PlaywrightError as error:
            return _reject("execution_error", f"The browser could not do it: {_short(error)}")

    def _more(self) -> ActionOutcome:
        following = self.latest.next_part if self.latest else None
        if following is None:
            return _reject("not_applicable", "The whole page is already shown; there is no further part.")
        self._part = following
        return ActionOutcome(ok=True, note="showing the next part of the page")

    async def _on_control(self, action: Click | Fill | Select | Check) -> ActionOutcome:
        control = self.latest.control(action.id) if self.latest else None
        if control is None:
            return _reject(
                "unknown_control",
                f"There is no control [{action.id}] on this page. Use an id from the latest observation.",
            )
        problem = check_applicable(action, control)
        if problem:
            return _reject("not_applicable", problem)
        navigations_before = self._navigations
        element = await self.element(action.id)
        if element is None:
            return _reject(
                "stale_control",
                f"Control [{action.id}] is no longer on the page; the page changed. "
                "Use an id from the latest observation.",
            )
        if isinstance(action, Fill):
            await element.fill(action.text, timeout=ACTION_TIMEOUT_MS)
            note = f"filled {_describe(control)}"
        elif isinstance(action, Select):
            await element.select_option(label=action.option, timeout=ACTION_TIMEOUT_MS)
            note = f"selected {action.option!r} in {_describe(control)}"
        else:
            target, problem = await self.click_target(element)
            if target is None:
                return _reject("not_applicable", f"Control [{action.id}] cannot be clicked now: {problem}.")
            if isinstance(action, Click):
                await target.click(force=True, timeout=ACTION_TIMEOUT_MS)
                note = f"clicked {_describe(control)}"
            else:
                if await element.is_checked() != action.checked:
                    await target.click(force=True, timeout=ACTION_TIMEOUT_MS)
                if await element.is_checked() != action.checked:
                    return _reject("execution_error", f"Clicking [{action.id}] did not change its state.")
                note = f"{'checked' if action.checked else 'unchecked'} {_describe(control)}"
        navigated = self._navigations != navigations_before
        await self._settle()
        navigated = navigated or self._navigations != navigations_before
        return ActionOutcome(ok=True, note=note, navigated=navigated)

    async def click_target(self, element: ElementHandle) -> tuple[ElementHandle | None, str]:
        """What a click on the control lands on: the element itself, else one of its labels (a styled
        checkbox often hides its input behind the label); None and why when something else covers it.

        One hit test at the centre, after scrolling the element into view if needed; the click itself
        then goes through real mouse events at that point.
        """
        found = await element.evaluate(_HIT_TEST)
        if found == "self":
            return element, ""
        if isinstance(found, int):
            labels = await element.evaluate_handle("(e, i) => e.labels[i]", found)
            label = labels.as_element()
            if label is not None:
                return label, ""
            return None, "its label is gone"
        return None, str(found)

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
            if not self._inflight:
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._quiet.clear()
            if self._inflight:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._quiet.wait(), timeout=remaining)
