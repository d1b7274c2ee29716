"""How faithful an observation is: its controls against Chromium's own accessibility tree.

The observation should offer exactly the visible, actionable controls of a page. Chromium already
knows which nodes are interactive (its accessibility tree) and which have a box (its layout), so
the controls it reports are the yardstick. They are computed here through the DevTools protocol,
independently of annotate.js:

* `accessibility_controls` — the interactive nodes (`INTERACTIVE_ROLES`, plus editing hosts) of
  the accessibility tree of the page and its same-origin frames, one per element: the options of a
  select and the fields and picker button of a date input are parts of their control. A node
  counts only with a layout box of non-zero area (`DOM.getBoxModel`; for a control without one, a
  label of it that has one: a checkbox styled away behind its label) that overlaps the page's
  scrollable area (`Page.getLayoutMetrics`) or that scrolling its containers can reach (a control
  low inside a scrolling box, below the end of a short page): content far down a long page counts,
  a skip link parked at left:-9999px does not (no one can scroll to it, see it or click it). Nor
  does a control clipped to nothing with no label that shows (a "visually hidden" input whose own
  CSS clip leaves no area, a button in a collapsed overflow:hidden panel): a screen reader reads
  it, no one sees or clicks it. Those page-side questions are asked in an isolated world of the
  checker's own, where page script cannot override the DOM methods they use. A frame's nodes
  count when the frame element is shown in its parent's accessibility tree and has a box there;
  inside a frame, which scrolls on its own, a node counts unless it lies left of or above the
  frame document's origin.
* `offered_backend_ids` — which DOM node each offered control id stands for;
* `compare_with_accessibility_tree` — recall, what is missing, what is offered beyond it, and how
  often roles and names agree (information, not failures). A role-less click target offered as
  `clickable` has no interactive accessibility node; it is not extra when Chromium lists a click
  listener on it (`DOMDebugger.getEventListeners`), or it shows a pointer cursor, or has a page-given
  tabindex (a custom slider's handle), under an ancestor (or the window) that listens: a click reaches a
  handler. Elements with a click listener of their
  own that are not offered are listed too (information: a page may listen on a container for its
  rows' clicks);
* `check_offered_controls_work` — every offered id resolves to a live element that Playwright can
  act on (or, when disabled, that is disabled and refused);
* `audit_page` — all of it for the driver's current page.

Compare an observation in which every control fits (a long page over the observation budget is
shown in parts; controls of other parts count as missing). Nothing here changes the page: only
read-only protocol calls, and the driver's click points and Playwright's trial clicks, whose
scrolling (of windows and of scrolling boxes) is undone.

One module (over 400 lines) because it is one comparison: the protocol reads, the matching and the documented
exceptions (`DOCUMENTED_EXCEPTIONS`) must be read together to judge a difference.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from typing import Any, Literal

from playwright.async_api import CDPSession, ElementHandle, JSHandle, Page
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict, Field

from adapter.acting import CHECKABLE_ROLES, FILLABLE_ROLES, check_applicable
from adapter.actions import Action, Check, Click, Fill, Select
from adapter.driver import PageDriver
from adapter.lines import flat
from adapter.observation import Control, Observation
from adapter.page_functions import FILL_PROBLEM, VISIBLE_PART
from adapter.world import HOVER_EVENTS, offered_node_ids

# Roles of Chromium's accessibility tree (as `Accessibility.getFullAXTree` names them) that a user
# acts on. Found empirically with Chromium 156 on tests/fixtures/pages/: ARIA widget roles keep
# their ARIA names; native controls without an ARIA equivalent get Chromium's internal names.
INTERACTIVE_ROLES: frozenset[str] = frozenset({
    "button",  # <button>, <input type=button|submit|reset|image|file>, role=button
    "link",  # <a href>, role=link
    "checkbox", "radio", "switch",
    "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem",
    "option",  # role=option in an ARIA listbox (options of a native <select> are parts, see below)
    "textbox",  # text, password, email, tel, url, <textarea>, role=textbox
    "searchbox",  # <input type=search>, role=searchbox
    "spinbutton",  # <input type=number>, role=spinbutton
    "slider",  # <input type=range>, role=slider
    "combobox",  # <select>, <input list>, role=combobox
    "listbox",  # <select multiple> or <select size>1>, role=listbox
    "Date",  # <input type=date>
    "InputTime",  # <input type=time>
    "DateTime",  # <input type=datetime-local|month|week>
    "ColorWell",  # <input type=color>
    "DisclosureTriangle",  # <summary> of a <details>
})
# An element with contenteditable and no widget role is an editing host: Chromium keeps its own
# role (generic, paragraph, ...) and marks it editable and focusable. It counts as a text box.
EDITING_HOST_ROLE = "textbox"
# Role-less click targets (a div or span with a click handler) are offered with this role; the accessibility tree
# has no interactive node for them, so they are judged by the listeners Chromium reports instead.
CLICKABLE_ROLE = "clickable"
CLICK_EVENTS = frozenset({"click", "mousedown", "mouseup", "pointerdown", "pointerup", "dragstart"})
"""Events a click (or a drag's press) dispatches to the element under the pointer."""
# Chromium's names for native controls and the role the observation gives them (for agreement stats).
EQUIVALENT_ROLES: Mapping[str, str] = {
    "Date": "textbox", "InputTime": "textbox", "DateTime": "textbox", "ColorWell": "textbox",
    "DisclosureTriangle": "button",
}
OBJECT_GROUP = "computerops-fidelity"
WORLD_NAME = "computerops-fidelity"
"""The checker's own isolated world in each frame (apart from the driver's, adapter/world.py)."""
TRIAL_TIMEOUT_MS = 3_000
"""The least a trial click may take before the checker calls the control not actionable."""
TRIAL_STEPS = 30
"""A trial click's bound in steps of the page: on a loaded machine a page that took 400 ms to open gets 12 s."""


def trial_timeout_ms(step_ms: float | None) -> float:
    """The bound of the checker's trial clicks on a page whose opening (a step) took `step_ms`: `TRIAL_STEPS` such
    steps, never under `TRIAL_TIMEOUT_MS`. A fixed bound made the checker's own figures depend on the machine's load
    (the bench's fidelity row fell to 18 of 22 pages under load 50, every failure a trial click's 3 s timeout)."""
    if step_ms is None or step_ms <= 0:
        return TRIAL_TIMEOUT_MS
    return max(TRIAL_TIMEOUT_MS, TRIAL_STEPS * step_ms)


class AxControl(BaseModel):
    """One interactive node of Chromium's accessibility tree that has a box inside the page."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend_node_id: int
    frame_id: str
    role: str
    """Chromium's role (`EDITING_HOST_ROLE` for an editing host)."""
    name: str
    """Chromium's accessible name."""
    disabled: bool = False


class ControlMatch(BaseModel):
    """An offered control and the accessibility node of the same DOM element."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    role: str
    name: str
    ax_role: str
    ax_name: str
    role_agrees: bool
    name_agrees: bool


class ExtraControl(BaseModel):
    """An offered control without an interactive accessibility node (hidden, ignored or inert to Chromium), or
    a `clickable` one without a listener its click would reach."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    role: str
    name: str
    backend_node_id: int | None
    """None when the id did not resolve to an element of the page."""


ClickEvidence = Literal["click listener", "pointer cursor under a listener", "focusable under a listener",
                        "pointer-over listener", "item of a listening list"]


class ClickableControl(BaseModel):
    """An offered `clickable` control and why a click on it reaches a handler."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    evidence: ClickEvidence
    """A click listener on the element itself, or a pointer cursor on it with a listener on an ancestor
    (event delegation, as frameworks do), or a page-given tabindex on it with a listener on an ancestor (a custom
    slider's handle inside its listening track: the keys of `press` go to it); or a listener for the pointer passing
    over it (a target of `hover`), or its parent listens (for presses or the pointer passing) and it is one of its
    items or draggable (a sortable list's item, a drag source, a hover menu's item)."""


class ListenerTarget(BaseModel):
    """A shown element with a click listener of its own, neither offered nor part of an offered or accessible
    control."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend_node_id: int
    tag: str
    text: str
    """The start of its rendered text (or its aria-label/title), to recognise it by."""


class FidelityReport(BaseModel):
    """An observation's controls against the accessibility tree of the same page."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    expected: int
    """Interactive accessibility nodes with a box inside the page."""
    offered: int
    """Controls in the observation."""
    matched: int
    recall: float
    """matched / expected; 1.0 when nothing is expected."""
    missing: list[AxControl] = Field(default_factory=list)
    extra: list[ExtraControl] = Field(default_factory=list)
    matches: list[ControlMatch] = Field(default_factory=list)
    clickables: list[ClickableControl] = Field(default_factory=list)
    """Offered `clickable` controls with evidence that a click reaches a handler (not counted as extra)."""
    unoffered_listeners: list[ListenerTarget] = Field(default_factory=list)
    """Information, not a failure: shown elements with a click listener of their own that are not offered."""
    role_agreement: float
    """Share of matches whose roles agree (1.0 without matches); information, not a failure."""
    name_agreement: float
    """Share of matches whose names agree (1.0 without matches); information, not a failure."""

    @property
    def ok(self) -> bool:
        """Every expected control offered and nothing offered beyond them."""
        return self.recall == 1.0 and not self.extra

    @property
    def role_mismatches(self) -> list[ControlMatch]:
        return [m for m in self.matches if not m.role_agrees]

    @property
    def name_mismatches(self) -> list[ControlMatch]:
        return [m for m in self.matches if not m.name_agrees]

    def summary(self) -> str:
        """One line: recall, counts, and what is missing or extra."""
        parts = [f"recall {self.recall:.3f} ({self.matched}/{self.expected}), offered {self.offered}"]
        if self.missing:
            parts.append("missing " + ", ".join(f"{c.role} {c.name!r}" for c in self.missing))
        if self.extra:
            parts.append("extra " + ", ".join(f"[{c.id}] {c.role} {c.name!r}" for c in self.extra))
        if self.clickables:
            parts.append(f"{len(self.clickables)} clickable with a listener")
        if self.unoffered_listeners:
            parts.append("click listeners not offered: " + ", ".join(
                f"<{t.tag}> {t.text!r}" for t in self.unoffered_listeners))
        parts.append(f"roles agree {self.role_agreement:.0%}, names agree {self.name_agreement:.0%}")
        return "; ".join(parts)


def _same_name(offered: str, chromium: str) -> bool:
    return flat(offered).casefold() == flat(chromium).casefold()  # names are shown by the rule of page text


def _properties(node: Mapping[str, Any]) -> dict[str, Any]:
    return {p["name"]: p.get("value", {}).get("value") for p in node.get("properties", [])}


class _Dom:
    """What the DOM tree (frames and shadow roots included) tells about backend node ids."""

    def __init__(self, document: Mapping[str, Any], top_frame: str) -> None:
        self.order: dict[int, int] = {}
        """Document order (shadow trees where they attach, frame documents at their frame)."""
        self.parts: set[int] = set()
        """Parts of a native control, which the control stands for: everything in a user-agent shadow
        tree (the fields and picker button of a date input), and everything inside a select."""
        self.frame_roots: dict[str, int] = {}
        """Frame id -> its document element, whose box marks the frame document's origin."""
        self.parent: dict[int, int] = {}
        """Node -> the node an event bubbles to from it (a shadow root's host; none from a frame's document)."""
        self.names: dict[int, str] = {}
        """Node -> its lower-case node name (`div`, `#document`)."""
        self.frame_of: dict[int, str] = {}
        """Node -> the id of the frame whose document holds it."""
        self._walk(document, inside=False, parent=None, frame=top_frame)

    def _walk(self, node: Mapping[str, Any], inside: bool, parent: int | None, frame: str) -> None:
        backend = int(node["backendNodeId"])
        self.order.setdefault(backend, len(self.order))
        self.frame_of[backend] = frame
        if parent is not None:
            self.parent[backend] = parent
        if inside:
            self.parts.add(backend)
        name = node.get("nodeName", "")
        self.names[backend] = str(name).lower()
        for root in node.get("shadowRoots", []):
            self._walk(root, inside or root.get("shadowRootType") == "user-agent", backend, frame)
        content = node.get("contentDocument")
        if content is not None:
            element = next((c for c in content.get("children", []) if c.get("nodeType") == 1), None)
            if element is not None and "frameId" in node:
                self.frame_roots[str(node["frameId"])] = int(element["backendNodeId"])
            self._walk(content, inside=False, parent=None, frame=str(node.get("frameId", frame)))
        for child in node.get("children", []):
            self._walk(child, inside or name == "SELECT", backend, frame)

    def ancestors(self, backend: int) -> Iterator[int]:
        """The nodes an event on `backend` bubbles through after it, nearest first."""
        while (backend := self.parent.get(backend, -1)) != -1:
            yield backend


Box = tuple[float, float, float, float]


async def _box(cdp: CDPSession, backend_node_id: int) -> Box | None:
    """The border box (left, top, right, bottom) in top-viewport coordinates; None without a box or area."""
    try:
        model = (await cdp.send("DOM.getBoxModel", {"backendNodeId": backend_node_id}))["model"]
    except PlaywrightError:
        return None  # display:none, not rendered, or gone
    xs, ys = model["border"][0::2], model["border"][1::2]
    left, top, right, bottom = min(xs), min(ys), max(xs), max(ys)
    if right - left <= 0 or bottom - top <= 0:
        return None
    return left, top, right, bottom


async def _page_area(cdp: CDPSession) -> Box:
    """The top document's scrollable area in top-viewport coordinates (it moves as the page scrolls)."""
    metrics = await cdp.send("Page.getLayoutMetrics")
    viewport, content = metrics["cssLayoutViewport"], metrics["cssContentSize"]
    left = float(content["x"]) - float(viewport["pageX"])
    top = float(content["y"]) - float(viewport["pageY"])
    return left, top, left + float(content["width"]), top + float(content["height"])


def _inside(box: Box | None, area: Box | None) -> bool:
    """Whether a box (None: no box) overlaps an area (None: nothing is inside)."""
    if box is None or area is None:
        return False
    return box[2] > area[0] and box[3] > area[1] and box[0] < area[2] and box[1] < area[3]


# Called on an element (CDP Runtime.callFunctionOn): whether scrolling can bring it into view, i.e. it overlaps
# the scrollable area of every scrolling box it sits in, and the outermost of them overlaps the document's. For
# an element outside the page's scrollable area in Chromium's layout metrics: low inside a scrolling box, say.
_REACHABLE_BY_SCROLLING = """function () {
  const parentOf = (n) => n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const overlaps = (a, b) => a[2] > b[0] && a[3] > b[1] && a[0] < b[2] && a[1] < b[3];
  const doc = this.ownerDocument, view = doc.defaultView, root = doc.documentElement;
  const r = this.getBoundingClientRect();
  let box = [r.left, r.top, r.right, r.bottom];
  for (let n = parentOf(this); n && n !== root && n !== doc.body; n = parentOf(n)) {
    const s = view.getComputedStyle(n);
    if (!/(auto|scroll|hidden)/.test(s.overflowX + s.overflowY)) continue;  // visible and clip do not scroll
    const c = n.getBoundingClientRect();
    const left = c.left + n.clientLeft - n.scrollLeft, top = c.top + n.clientTop - n.scrollTop;
    if (!overlaps(box, [left, top, left + n.scrollWidth, top + n.scrollHeight])) return false;
    box = [c.left, c.top, c.right, c.bottom];
  }
  const left = -view.scrollX, top = -view.scrollY;
  return overlaps(box, [left, top, left + root.scrollWidth, top + root.scrollHeight]);
}"""


# Called on a control without a box of its own (a checkbox styled away to nothing behind a switch): whether one of
# its labels has a box that scrolling can reach. A click on that label is a click on the control, as for a person.
# Whether an element is clipped to nothing whatever the scroll: its own CSS clip or clip-path leaves no area (the
# "visually hidden" pattern), a box it sits in that clips overflow has no area (a collapsed panel), or it is a speck
# under opacity 0. A screen reader still reads such an element; nobody can see or click it.
_CLIPPED_AWAY = """(el) => {
  const parentOf = (n) => n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const view = el.ownerDocument.defaultView, s = view.getComputedStyle(el), r = el.getBoundingClientRect();
  if (s.clip.startsWith("rect(") && /^(absolute|fixed)$/.test(s.position)) {  // clip applies to these only
    const [top, right, bottom, left] = s.clip.slice(5, -1).split(/,?\\s+/)
      .map((v, i) => v === "auto" ? [0, r.width, r.height, 0][i] : parseFloat(v));
    if (right <= left || bottom <= top) return true;
  }
  const inset = /^inset\\((\\d+(?:\\.\\d+)?)%\\)$/.exec(s.clipPath);
  if (inset && parseFloat(inset[1]) >= 50) return true;
  // A box a few pixels across under opacity 0 (annotate.js transparentSpeck: a hidden 1x1 input with its padding).
  if (r.width <= 8 || r.height <= 8) {
    for (let n = el; n && n.nodeType === 1; n = parentOf(n)) if (view.getComputedStyle(n).opacity === "0") return true;
  }
  for (let n = parentOf(el); n && n !== el.ownerDocument.documentElement; n = parentOf(n)) {
    const style = view.getComputedStyle(n), box = n.getBoundingClientRect();
    if ((style.overflowX !== "visible" && box.width === 0) || (style.overflowY !== "visible" && box.height === 0)) {
      return true;
    }
  }
  return false;
}"""
# Called with elements of one frame as arguments: for each, whether it is clipped away (above) and no label of it
# shows (a label that is clicked stands for its control, as for a person).
_SEEN_BY_NO_ONE = """function (...elements) {
  const clippedAway = """ + _CLIPPED_AWAY + """;
  const labelShows = (el) => [...(el.labels || [])].some((label) => {
    const r = label.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !clippedAway(label);
  });
  return elements.map((el) => clippedAway(el) && !labelShows(el));
}"""
# Called on a control without a box of its own (a checkbox styled away to nothing behind a switch): whether one of
# its labels has a box that is not clipped away and that scrolling can reach. A click on that label is a click on
# the control, as for a person.
_A_LABEL_SHOWS = """function () {
  const reachable = """ + _REACHABLE_BY_SCROLLING + """;
  const clippedAway = """ + _CLIPPED_AWAY + """;
  return [...(this.labels || [])].some((label) => {
    const r = label.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !clippedAway(label) && reachable.call(label);
  });
}"""


class _Asker:
    """Asks the page about its nodes (`Runtime.callFunctionOn`) in an isolated world of each node's frame, where
    page script cannot override what the answers rely on (getComputedStyle, getBoundingClientRect, labels)."""

    def __init__(self, cdp: CDPSession, dom: _Dom) -> None:
        self.cdp, self.dom = cdp, dom
        self._contexts: dict[str, int | None] = {}

    async def _context(self, frame_id: str) -> int | None:
        if frame_id not in self._contexts:
            try:
                made = await self.cdp.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD_NAME})
                self._contexts[frame_id] = int(made["executionContextId"])
            except PlaywrightError:
                self._contexts[frame_id] = None  # a cross-origin frame, or one going away
        return self._contexts[frame_id]

    async def _object(self, backend_node_id: int) -> str | None:
        frame = self.dom.frame_of.get(backend_node_id)
        context = await self._context(frame) if frame is not None else None
        if context is None:
            return None
        try:
            node = await self.cdp.send("DOM.resolveNode", {"backendNodeId": backend_node_id,
                                                           "executionContextId": context, "objectGroup": OBJECT_GROUP})
        except PlaywrightError:
            return None  # gone
        return str(node["object"]["objectId"])

    async def call(self, backend_node_id: int, function: str) -> Any:
        """`function` called with the element as `this`; its JSON result, or None when the node is gone."""
        object_id = await self._object(backend_node_id)
        if object_id is None:
            return None
        try:
            result = await self.cdp.send("Runtime.callFunctionOn", {
                "objectId": object_id, "functionDeclaration": function, "returnByValue": True})
        except PlaywrightError:
            return None
        return result.get("result", {}).get("value")

    async def seen_by_no_one(self, backend_ids: Sequence[int]) -> set[int]:
        """Which of these nodes (of one frame) are clipped to nothing with no label that shows (_CLIPPED_AWAY)."""
        objects = await asyncio.gather(*(self._object(node) for node in backend_ids))
        found = [(node, object_id) for node, object_id in zip(backend_ids, objects, strict=True) if object_id]
        if not found:
            return set()
        try:
            answer = await self.cdp.send("Runtime.callFunctionOn", {
                "objectId": found[0][1], "functionDeclaration": _SEEN_BY_NO_ONE, "returnByValue": True,
                "arguments": [{"objectId": object_id} for _, object_id in found]})
        except PlaywrightError:
            return set()
        hidden = answer.get("result", {}).get("value") or []
        return {node for (node, _), gone in zip(found, hidden, strict=False) if gone}


class _AxView:
    """Chromium's side of one page: the interactive nodes that count, and what the comparison needs besides."""

    def __init__(self, controls: list[AxControl], dom: _Dom, shown: set[int], asker: _Asker) -> None:
        self.controls = controls
        self.dom = dom
        self.asker = asker
        self.shown = shown
        """Backend ids of every node the accessibility tree keeps (not ignored), interactive or not."""


async def _ax_view(cdp: CDPSession) -> _AxView:
    tree = (await cdp.send("Page.getFrameTree"))["frameTree"]
    dom = _Dom((await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True}))["root"], str(tree["frame"]["id"]))
    asker = _Asker(cdp, dom)
    candidates: list[tuple[int, str, str, str, bool]] = []  # backend id, frame, role, name, disabled
    areas: dict[str, Box | None] = {}
    seen: set[int] = set()
    shown_anywhere: set[int] = set()

    async def visit(frame: Mapping[str, Any], area: Box | None) -> None:
        frame_id = str(frame["frame"]["id"])
        areas[frame_id] = area
        try:
            nodes = (await cdp.send("Accessibility.getFullAXTree", {"frameId": frame_id}))["nodes"]
        except PlaywrightError:
            return  # a cross-origin frame lives in another process; the observation skips it too
        by_id = {str(node["nodeId"]): node for node in nodes}
        shown: set[int] = set()
        for node in nodes:
            backend = node.get("backendDOMNodeId")
            if node.get("ignored") or backend is None:
                continue
            shown.add(int(backend))
            if backend in seen or backend in dom.parts:
                continue
            role = str(node.get("role", {}).get("value", ""))
            props = _properties(node)
            if role not in INTERACTIVE_ROLES:
                parent = by_id.get(str(node.get("parentId", "")))
                parent_editable = parent is not None and bool(_properties(parent).get("editable"))
                if not (props.get("editable") and props.get("focusable") and not parent_editable):
                    continue
                role = EDITING_HOST_ROLE
            seen.add(int(backend))
            candidates.append((int(backend), frame_id, role, str(node.get("name", {}).get("value", "")),
                               bool(props.get("disabled"))))
        shown_anywhere.update(shown)
        for child in frame.get("childFrames", []):
            child_area = await _frame_area(asker, str(child["frame"]["id"]), shown, area)
            if child_area is not None:
                await visit(child, child_area)

    await visit(tree, await _page_area(cdp))
    boxes = await asyncio.gather(*(_box(cdp, backend) for backend, *_ in candidates))
    counted = [_inside(box, areas.get(frame_id)) for (_, frame_id, *_), box in zip(candidates, boxes, strict=True)]
    # A box outside the page's scrollable area may still be reachable: low inside a scrolling box; a control with
    # no box may have a label that shows. Rare, so asked one by one, and only in frames that count.
    for index, ((backend, frame_id, *_), box) in enumerate(zip(candidates, boxes, strict=True)):
        if not counted[index] and areas.get(frame_id) is not None:
            question = _REACHABLE_BY_SCROLLING if box is not None else _A_LABEL_SHOWS
            counted[index] = await asker.call(backend, question) is True
    # Counted nodes that no one can see: clipped to nothing, with no label that shows. One call per frame.
    by_frame: dict[str, list[int]] = {}
    for (backend, frame_id, *_), count in zip(candidates, counted, strict=True):
        if count:
            by_frame.setdefault(frame_id, []).append(backend)
    unseen: set[int] = set()
    for nodes in by_frame.values():
        unseen |= await asker.seen_by_no_one(nodes)
    counted = [count and backend not in unseen for (backend, *_), count in zip(candidates, counted, strict=True)]
    with suppress(PlaywrightError):
        await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP})
    found = [
        AxControl(backend_node_id=backend, frame_id=frame_id, role=role, name=name, disabled=disabled)
        for (backend, frame_id, role, name, disabled), count in zip(candidates, counted, strict=True) if count
    ]
    found.sort(key=lambda c: dom.order.get(c.backend_node_id, len(dom.order)))
    return _AxView(found, dom, shown_anywhere, asker)


async def _frame_area(asker: _Asker, frame_id: str, shown: set[int], outer: Box | None) -> Box | None:
    """A child frame's document area: from its document's origin, unbounded right and down (the frame
    scrolls on its own). None when the frame element is not shown in its parent's accessibility
    tree (hidden, invisible, inert) or has no box inside the parent's area that scrolling can reach."""
    cdp, dom = asker.cdp, asker.dom
    try:
        owner = int((await cdp.send("DOM.getFrameOwner", {"frameId": frame_id}))["backendNodeId"])
    except PlaywrightError:
        return None
    if owner not in shown:
        return None
    box = await _box(cdp, owner)
    if box is None or outer is None:
        return None
    if not _inside(box, outer) and await asker.call(owner, _REACHABLE_BY_SCROLLING) is not True:
        return None
    root = dom.frame_roots.get(frame_id)
    origin = await _box(cdp, root) if root is not None else None
    if origin is None:
        return None
    return origin[0], origin[1], math.inf, math.inf


async def accessibility_controls(page: Page) -> list[AxControl]:
    """Interactive nodes of Chromium's accessibility tree (same-origin frames included) with a box
    inside the page's scrollable area; parts of native controls (select options, date fields) excluded."""
    cdp = await page.context.new_cdp_session(page)
    try:
        return (await _ax_view(cdp)).controls
    finally:
        await cdp.detach()


def _page_of(target: PageDriver | Page) -> Page:
    return target.page if isinstance(target, PageDriver) else target


async def _backend_ids(page: Page, ids: Sequence[str]) -> dict[str, int | None]:
    return await offered_node_ids(page, ids)  # the ids live in the page's isolated world (adapter/world.py)


async def offered_backend_ids(target: PageDriver | Page, observation: Observation) -> dict[str, int | None]:
    """The backend DOM node id of each offered control id (None when the id no longer resolves).

    Reads the id map annotate.js keeps in the top window, so it holds for the latest observation.
    """
    return await _backend_ids(_page_of(target), [c.id for c in observation.controls])


async def _click_listeners(cdp: CDPSession) -> tuple[set[int], bool, set[int]]:
    """The nodes (in every frame and shadow root) with a click listener of their own, whether the top window
    has one, and the nodes with a listener for the pointer passing over them (`HOVER_EVENTS`)."""
    nodes: set[int] = set()
    hovered: set[int] = set()
    window_listens = False
    for expression, subtree in (("document", {"depth": -1, "pierce": True}), ("window", {})):
        target = await cdp.send("Runtime.evaluate", {"expression": expression, "objectGroup": OBJECT_GROUP})
        object_id = target.get("result", {}).get("objectId")
        if object_id is None:
            continue
        found = await cdp.send("DOMDebugger.getEventListeners", {"objectId": object_id, **subtree})
        for listener in found["listeners"]:
            if listener.get("type") in HOVER_EVENTS and "backendNodeId" in listener:
                hovered.add(int(listener["backendNodeId"]))
            if listener.get("type") not in CLICK_EVENTS:
                continue
            if "backendNodeId" in listener:
                nodes.add(int(listener["backendNodeId"]))
            else:
                window_listens = window_listens or expression == "window"
    return nodes, window_listens, hovered


_DRAG_ITEM = """function () {
  const parent = this.parentElement;
  return this.getAttribute("draggable") === "true" || (Boolean(parent) && parent.children.length >= 2
    && [...parent.children].every((n) => n.localName === this.localName));
}"""
_CURSOR = "function () { return this.ownerDocument.defaultView.getComputedStyle(this).cursor; }"
_FOCUSABLE = "function () { return this.hasAttribute('tabindex') && this.tabIndex >= 0; }"
_SHORT_TEXT = """function () {
  const text = this.innerText || this.getAttribute("aria-label") || this.getAttribute("title") || "";
  return text.replace(/\\s+/g, " ").trim().slice(0, 60);
}"""


class _Listeners:
    """Which nodes listen for clicks, and what that says about a `clickable` control."""

    def __init__(self, cdp: CDPSession, view: _AxView, nodes: set[int], window_listens: bool,
                 hovered: set[int]) -> None:
        self.cdp, self.view, self.nodes, self.window_listens = cdp, view, nodes, window_listens
        self.hovered = hovered

    async def evidence(self, backend: int) -> ClickEvidence | None:
        """Why a click on this element reaches a handler, or None when nothing shows that it does."""
        if backend in self.nodes:
            return "click listener"
        delegated = self.window_listens or any(n in self.nodes for n in self.view.dom.ancestors(backend))
        if delegated and await self.view.asker.call(backend, _CURSOR) == "pointer":
            return "pointer cursor under a listener"
        if delegated and await self.view.asker.call(backend, _FOCUSABLE) is True:
            return "focusable under a listener"
        if backend in self.hovered:
            return "pointer-over listener"
        above = delegated or any(n in self.hovered for n in self.view.dom.ancestors(backend))
        if above and await self.view.asker.call(backend, _DRAG_ITEM) is True:
            return "item of a listening list"
        return None

    async def unoffered(self, offered: set[int]) -> list[ListenerTarget]:
        """Shown elements with a click listener of their own, not offered, not inside or around an offered or
        accessible control (a control's parts, and containers that listen for their controls' clicks)."""
        dom = self.view.dom
        controls = offered | {c.backend_node_id for c in self.view.controls}
        around = {a for c in controls for a in dom.ancestors(c)}
        targets = []
        for node in sorted(self.nodes, key=lambda n: dom.order.get(n, len(dom.order))):
            name = dom.names.get(node, "#")
            if name.startswith("#") or name in ("html", "body") or node not in self.view.shown:
                continue
            inside_control = any(a in controls for a in dom.ancestors(node))
            if node in controls or node in around or node in dom.parts or inside_control:
                continue
            if await _box(self.cdp, node) is None:
                continue
            targets.append(ListenerTarget(backend_node_id=node, tag=name,
                                          text=str(await self.view.asker.call(node, _SHORT_TEXT) or "")))
        return targets


async def compare_with_accessibility_tree(target: PageDriver | Page, observation: Observation) -> FidelityReport:
    """Compare the observation's controls with the accessibility tree of the page it was made from."""
    page = _page_of(target)
    cdp = await page.context.new_cdp_session(page)
    try:
        view = await _ax_view(cdp)
        backend = await _backend_ids(page, [c.id for c in observation.controls])
        listeners = _Listeners(cdp, view, *await _click_listeners(cdp))
        by_backend = {c.backend_node_id: c for c in view.controls}
        matches: list[ControlMatch] = []
        extra: list[ExtraControl] = []
        clickables: list[ClickableControl] = []
        matched_backends: set[int] = set()
        for control in observation.controls:
            node_id = backend.get(control.id)
            ax = by_backend.get(node_id) if node_id is not None else None
            if ax is None and node_id is not None and control.role == CLICKABLE_ROLE:
                evidence = await listeners.evidence(node_id)
                if evidence is not None:
                    clickables.append(ClickableControl(id=control.id, name=control.name, evidence=evidence))
                    continue
            if ax is None or node_id in matched_backends:
                extra.append(ExtraControl(id=control.id, role=control.role, name=control.name, backend_node_id=node_id))
                continue
            matched_backends.add(ax.backend_node_id)
            matches.append(ControlMatch(
                id=control.id, role=control.role, name=control.name, ax_role=ax.role, ax_name=ax.name,
                role_agrees=EQUIVALENT_ROLES.get(ax.role, ax.role) == control.role,
                name_agrees=_same_name(control.name, ax.name),
            ))
        unoffered = await listeners.unoffered({n for n in backend.values() if n is not None})
        with suppress(PlaywrightError):
            await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP})
    finally:
        await cdp.detach()
    expected = view.controls
    missing = [c for c in expected if c.backend_node_id not in matched_backends]
    return FidelityReport(
        url=observation.url, expected=len(expected), offered=len(observation.controls), matched=len(matches),
        recall=len(matches) / len(expected) if expected else 1.0, missing=missing, extra=extra, matches=matches,
        clickables=clickables, unoffered_listeners=unoffered,
        role_agreement=sum(m.role_agrees for m in matches) / len(matches) if matches else 1.0,
        name_agreement=sum(m.name_agrees for m in matches) / len(matches) if matches else 1.0,
    )


def _probe_action(control: Control) -> Action:
    """The action that fits the control; a disabled control must be refused it."""
    if control.options:
        return Select(id=control.id, option=control.options[0])
    if control.role in CHECKABLE_ROLES:
        return Check(id=control.id, checked=True)
    if control.role in FILLABLE_ROLES:
        return Fill(id=control.id, text="x")
    return Click(id=control.id)


async def _actionable(driver: PageDriver, element: ElementHandle, control: Control, timeout_ms: float) -> str | None:
    """None when the driver's click would land on the control and Playwright's own actionability check
    agrees (a trial click, no event sent); else what stands in the way."""
    try:
        # A widget that is not a text field (a div with role=slider) is refused fill with a pointer to press;
        # it must still take the focus and the keys, which the trial click below checks.
        fillable = control.role in FILLABLE_ROLES and not control.options and not control.readonly
        if fillable and not await element.evaluate(FILL_PROBLEM) and not await element.is_editable():
            return "offered to fill, but Playwright finds it not editable"
        point = await driver.click_point(control.id)
        if point is None or isinstance(point, str):
            return f"the driver's click would not land on it: {point or 'the id does not resolve'}"
        target = element
        if point.label is not None:  # the driver clicks the label the control hides under
            label = (await element.evaluate_handle("(e, i) => e.labels[i]", point.label)).as_element()
            if label is None:
                return "the driver would click a label that is gone"
            target = label
        await target.click(trial=True, timeout=timeout_ms)
    except PlaywrightError as error:
        return str(error).strip().splitlines()[0][:200]
    return None


async def _control_problem(driver: PageDriver, control: Control, timeout_ms: float) -> str | None:
    element = await driver.element(control.id)
    if element is None:
        return "the id does not resolve to a live element"
    try:
        if not control.disabled:
            return await _actionable(driver, element, control, timeout_ms)
        refusal = check_applicable(_probe_action(control), control)
        if refusal is None or "disabled" not in refusal:
            return "disabled, but the driver would act on it"
        if not await element.is_disabled():
            return "offered as disabled, but Playwright finds it enabled"
        return None
    except PlaywrightError as error:
        return str(error).strip().splitlines()[0][:200]
    finally:
        with suppress(PlaywrightError):
            await element.dispose()


# Which ids stand for elements of the top document that show whole (inside the viewport and every box that
# clips them): acting on them scrolls nothing, so they can be checked all at once.
_IN_VIEW = """ids => {
  const co = window.__computerops;
  const visiblePart = """ + VISIBLE_PART + """;
  return ids.map((id) => {
    const e = co && co.byId.get(id);
    if (!e || !e.isConnected || e.ownerDocument !== document) return false;
    const r = e.getBoundingClientRect(), part = visiblePart(e);
    return Boolean(part.rect) && part.rect[0] === r.left && part.rect[1] === r.top
      && part.rect[2] === r.right && part.rect[3] === r.bottom;
  });
}"""
# Every box of a document (open shadow roots included) that can scroll, with its scroll position; the window's too.
_SCROLL_POSITIONS = """() => {
  const found = [[null, window.scrollX, window.scrollY]];
  const walk = (root) => {
    for (const n of root.querySelectorAll("*")) {
      if (n.scrollHeight > n.clientHeight || n.scrollWidth > n.clientWidth) found.push([n, n.scrollLeft, n.scrollTop]);
      if (n.shadowRoot) walk(n.shadowRoot);
    }
  };
  walk(document);
  return found;
}"""
_RESTORE_SCROLL_POSITIONS = """(found) => {
  for (const [n, x, y] of found.reverse()) {
    const to = { left: x, top: y, behavior: "instant" };  // not smooth, whatever the page's CSS asks
    if (n === null) window.scrollTo(to);
    else if (n.isConnected) n.scrollTo(to);
  }
}"""


async def _scroll_positions(page: Page) -> list[JSHandle]:
    """The scroll position of every scrolling box of every frame, as page-side lists to restore them from."""
    positions = []
    for frame in page.frames:
        with suppress(PlaywrightError):  # a cross-origin frame, or one going away
            positions.append(await frame.evaluate_handle(_SCROLL_POSITIONS))
    return positions


async def _restore_scroll_positions(positions: Sequence[JSHandle]) -> None:
    for position in positions:
        with suppress(PlaywrightError):
            await position.evaluate(_RESTORE_SCROLL_POSITIONS)
            await position.dispose()


async def check_offered_controls_work(driver: PageDriver, observation: Observation, *,
                                      step_ms: float | None = None) -> list[str]:
    """Problems with the offered controls, one line each; empty when every one works. `step_ms`, what opening the
    page took, scales the trial clicks' bound (`trial_timeout_ms`).

    Every id must resolve to a live element (`driver.element`). An enabled control must pass
    Playwright's actionability checks: a trial click (attached, visible, stable, enabled, and the
    element itself receives the pointer); a control the driver would fill (a text box, slider,
    spin button, or combobox without options) must also be an element Playwright's fill works on,
    and editable. A disabled control must
    be disabled in the page too, and the driver must refuse the action that fits it; the refusal is
    checked with `check_applicable`, the function `PageDriver.act` refuses with, because `act`
    itself would set the context's action header.

    The page is not changed: the driver's click point and trial clicks scroll controls into view, and the
    scroll position of every window and scrolling box is put back afterwards, and the pointer the trial clicks
    moved is taken off the page (a menu that opens on pointer over closes again). Controls of the top document
    that show whole (inside the viewport and every box that clips them) are checked all at once (nothing
    scrolls for them), the others one at a time.
    """
    timeout_ms = trial_timeout_ms(step_ms)
    scrolled = await _scroll_positions(driver.page)
    controls = observation.controls
    try:
        in_view = await driver.world.evaluate(_IN_VIEW, [c.id for c in controls])
        batch = [c for c, inside in zip(controls, in_view, strict=True) if inside]
        results = await asyncio.gather(*(_control_problem(driver, c, timeout_ms) for c in batch))
        found = dict(zip((c.id for c in batch), results, strict=True))
        for control in controls:
            if control.id not in found:
                found[control.id] = await _control_problem(driver, control, timeout_ms)
        return [f"[{c.id}] {c.role} {c.name!r}: {found[c.id]}" for c in controls if found[c.id] is not None]
    finally:
        await _restore_scroll_positions(scrolled)
        with suppress(PlaywrightError):  # each trial click moved the pointer over its control (a menu that opens
            await driver.page.mouse.move(-1, -1)  # on pointer over stays open): the pointer leaves the page


class PageAudit(BaseModel):
    """One page's observation against the accessibility tree, and which offered controls do not work."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    report: FidelityReport
    problems: list[str]
    """From `check_offered_controls_work`; empty when every offered control works."""

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.problems


async def audit_page(driver: PageDriver, observation: Observation | None = None) -> PageAudit:
    """Observe the driver's page (unless given its latest observation), compare it with the
    accessibility tree and check that its controls work. Does not change the page."""
    if observation is None:
        observation = await driver.observe()
    report = await compare_with_accessibility_tree(driver, observation)
    problems = await check_offered_controls_work(driver, observation)
    return PageAudit(url=observation.url, report=report, problems=problems)
