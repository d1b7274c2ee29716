"""How faithful an observation is: its controls against Chromium's own accessibility tree.

The observation should offer exactly the visible, actionable controls of a page. Chromium already
knows which nodes are interactive (its accessibility tree) and which have a box (its layout), so
the controls it reports are the yardstick. They are computed here through the DevTools protocol,
independently of annotate.js:

* `accessibility_controls` — the interactive nodes (`INTERACTIVE_ROLES`, plus editing hosts) of
  the accessibility tree of the page and its same-origin frames, one per element: the options of a
  select and the fields and picker button of a date input are parts of their control. A node
  counts only with a layout box of non-zero area (`DOM.getBoxModel`) that overlaps the page's
  scrollable area (`Page.getLayoutMetrics`): content far down a long page counts, a skip link
  parked at left:-9999px does not (no one can scroll to it, see it or click it). A frame's nodes
  count when the frame element is shown in its parent's accessibility tree and has a box there;
  inside a frame, which scrolls on its own, a node counts unless it lies left of or above the
  frame document's origin.
* `offered_backend_ids` — which DOM node each offered control id stands for;
* `compare_with_accessibility_tree` — recall, what is missing, what is offered beyond it, and how
  often roles and names agree (information, not failures);
* `check_offered_controls_work` — every offered id resolves to a live element that Playwright can
  act on (or, when disabled, that is disabled and refused);
* `audit_page` — all of it for the driver's current page.

Compare an observation in which every control fits (a long page over the observation budget is
shown in parts; controls of other parts count as missing). Nothing here changes the page: only
read-only protocol calls, and Playwright's trial clicks, whose scrolling is undone.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

from playwright.async_api import CDPSession, ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ConfigDict, Field

from adapter.actions import Action, Check, Click, Fill, Select
from adapter.driver import CHECKABLE_ROLES, FILL_PROBLEM, FILLABLE_ROLES, PageDriver, check_applicable
from adapter.observation import Control, Observation

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
# Chromium's names for native controls and the role the observation gives them (for agreement stats).
EQUIVALENT_ROLES: Mapping[str, str] = {
    "Date": "textbox", "InputTime": "textbox", "DateTime": "textbox", "ColorWell": "textbox",
    "DisclosureTriangle": "button",
}
OBJECT_GROUP = "computerops-fidelity"
TRIAL_TIMEOUT_MS = 3_000


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
    """An offered control without an interactive accessibility node (hidden, ignored or inert to Chromium)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    role: str
    name: str
    backend_node_id: int | None
    """None when the id did not resolve to an element of the page."""


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
        parts.append(f"roles agree {self.role_agreement:.0%}, names agree {self.name_agreement:.0%}")
        return "; ".join(parts)


def _same_name(offered: str, chromium: str) -> bool:
    return " ".join(offered.split()).casefold() == " ".join(chromium.split()).casefold()


def _properties(node: Mapping[str, Any]) -> dict[str, Any]:
    return {p["name"]: p.get("value", {}).get("value") for p in node.get("properties", [])}


class _Dom:
    """What the DOM tree (frames and shadow roots included) tells about backend node ids."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.order: dict[int, int] = {}
        """Document order (shadow trees where they attach, frame documents at their frame)."""
        self.parts: set[int] = set()
        """Parts of a native control, which the control stands for: everything in a user-agent shadow
        tree (the fields and picker button of a date input), and everything inside a select."""
        self.frame_roots: dict[str, int] = {}
        """Frame id -> its document element, whose box marks the frame document's origin."""
        self._walk(document, inside=False)

    def _walk(self, node: Mapping[str, Any], inside: bool) -> None:
        backend = int(node["backendNodeId"])
        self.order.setdefault(backend, len(self.order))
        if inside:
            self.parts.add(backend)
        name = node.get("nodeName", "")
        for root in node.get("shadowRoots", []):
            self._walk(root, inside or root.get("shadowRootType") == "user-agent")
        content = node.get("contentDocument")
        if content is not None:
            element = next((c for c in content.get("children", []) if c.get("nodeType") == 1), None)
            if element is not None and "frameId" in node:
                self.frame_roots[str(node["frameId"])] = int(element["backendNodeId"])
            self._walk(content, inside=False)
        for child in node.get("children", []):
            self._walk(child, inside or name == "SELECT")


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


async def _ax_controls(cdp: CDPSession) -> list[AxControl]:
    tree = (await cdp.send("Page.getFrameTree"))["frameTree"]
    dom = _Dom((await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True}))["root"])
    candidates: list[tuple[int, str, str, str, bool]] = []  # backend id, frame, role, name, disabled
    areas: dict[str, Box | None] = {}
    seen: set[int] = set()

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
        for child in frame.get("childFrames", []):
            child_area = await _frame_area(cdp, str(child["frame"]["id"]), dom, shown, area)
            if child_area is not None:
                await visit(child, child_area)

    await visit(tree, await _page_area(cdp))
    boxes = await asyncio.gather(*(_box(cdp, backend) for backend, *_ in candidates))
    found = [
        AxControl(backend_node_id=backend, frame_id=frame_id, role=role, name=name, disabled=disabled)
        for (backend, frame_id, role, name, disabled), box in zip(candidates, boxes, strict=True)
        if _inside(box, areas.get(frame_id))
    ]
    return sorted(found, key=lambda c: dom.order.get(c.backend_node_id, len(dom.order)))


async def _frame_area(cdp: CDPSession, frame_id: str, dom: _Dom, shown: set[int], outer: Box | None) -> Box | None:
    """A child frame's document area: from its document's origin, unbounded right and down (the frame
    scrolls on its own). None when the frame element is not shown in its parent's accessibility
    tree (hidden, invisible, inert) or has no box inside the parent's area."""
    try:
        owner = int((await cdp.send("DOM.getFrameOwner", {"frameId": frame_id}))["backendNodeId"])
    except PlaywrightError:
        return None
    if owner not in shown or not _inside(await _box(cdp, owner), outer):
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
        return await _ax_controls(cdp)
    finally:
        await cdp.detach()


def _page_of(target: PageDriver | Page) -> Page:
    return target.page if isinstance(target, PageDriver) else target


async def _backend_id(cdp: CDPSession, control_id: str) -> int | None:
    expression = f"(window.__computerops && window.__computerops.byId.get({json.dumps(control_id)})) || null"
    result = await cdp.send("Runtime.evaluate", {"expression": expression, "objectGroup": OBJECT_GROUP})
    object_id = result.get("result", {}).get("objectId")
    if object_id is None:
        return None
    try:
        return int((await cdp.send("DOM.describeNode", {"objectId": object_id}))["node"]["backendNodeId"])
    except PlaywrightError:
        return None


async def _backend_ids(cdp: CDPSession, ids: Sequence[str]) -> dict[str, int | None]:
    try:
        found = await asyncio.gather(*(_backend_id(cdp, control_id) for control_id in ids))
    finally:
        await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP})
    return dict(zip(ids, found, strict=True))


async def offered_backend_ids(target: PageDriver | Page, observation: Observation) -> dict[str, int | None]:
    """The backend DOM node id of each offered control id (None when the id no longer resolves).

    Reads the id map annotate.js keeps in the top window, so it holds for the latest observation.
    """
    page = _page_of(target)
    cdp = await page.context.new_cdp_session(page)
    try:
        return await _backend_ids(cdp, [c.id for c in observation.controls])
    finally:
        await cdp.detach()


async def compare_with_accessibility_tree(target: PageDriver | Page, observation: Observation) -> FidelityReport:
    """Compare the observation's controls with the accessibility tree of the page it was made from."""
    page = _page_of(target)
    cdp = await page.context.new_cdp_session(page)
    try:
        expected = await _ax_controls(cdp)
        backend = await _backend_ids(cdp, [c.id for c in observation.controls])
    finally:
        await cdp.detach()
    by_backend = {c.backend_node_id: c for c in expected}
    matches: list[ControlMatch] = []
    extra: list[ExtraControl] = []
    matched_backends: set[int] = set()
    for control in observation.controls:
        node_id = backend.get(control.id)
        ax = by_backend.get(node_id) if node_id is not None else None
        if ax is None or node_id in matched_backends:
            extra.append(ExtraControl(id=control.id, role=control.role, name=control.name, backend_node_id=node_id))
            continue
        matched_backends.add(ax.backend_node_id)
        matches.append(ControlMatch(
            id=control.id, role=control.role, name=control.name, ax_role=ax.role, ax_name=ax.name,
            role_agrees=EQUIVALENT_ROLES.get(ax.role, ax.role) == control.role,
            name_agrees=_same_name(control.name, ax.name),
        ))
    missing = [c for c in expected if c.backend_node_id not in matched_backends]
    return FidelityReport(
        url=observation.url, expected=len(expected), offered=len(observation.controls), matched=len(matches),
        recall=len(matches) / len(expected) if expected else 1.0, missing=missing, extra=extra, matches=matches,
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


async def _actionable(driver: PageDriver, element: ElementHandle, control: Control) -> str | None:
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
        await target.click(trial=True, timeout=TRIAL_TIMEOUT_MS)
    except PlaywrightError as error:
        return str(error).strip().splitlines()[0][:200]
    return None


async def _control_problem(driver: PageDriver, control: Control) -> str | None:
    element = await driver.element(control.id)
    if element is None:
        return "the id does not resolve to a live element"
    try:
        if not control.disabled:
            return await _actionable(driver, element, control)
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


# Which ids stand for elements of the top document that lie wholly inside the viewport: acting on
# them scrolls nothing, so they can be checked all at once.
_IN_VIEWPORT = """ids => {
  const co = window.__computerops;
  const root = document.documentElement;
  return ids.map((id) => {
    const e = co && co.byId.get(id);
    if (!e || !e.isConnected || e.ownerDocument !== document) return false;
    const r = e.getBoundingClientRect();
    return r.left >= 0 && r.top >= 0 && r.right <= root.clientWidth && r.bottom <= root.clientHeight;
  });
}"""


async def _scroll_positions(page: Page) -> list[tuple[Frame, Any]]:
    positions = []
    for frame in page.frames:
        with suppress(PlaywrightError):  # a cross-origin frame, or one going away
            positions.append((frame, await frame.evaluate("() => [window.scrollX, window.scrollY]")))
    return positions


async def _restore_scroll_positions(positions: Sequence[tuple[Frame, Any]]) -> None:
    for frame, position in positions:
        with suppress(PlaywrightError):
            await frame.evaluate("([x, y]) => window.scrollTo(x, y)", position)


async def check_offered_controls_work(driver: PageDriver, observation: Observation) -> list[str]:
    """Problems with the offered controls, one line each; empty when every one works.

    Every id must resolve to a live element (`driver.element`). An enabled control must pass
    Playwright's actionability checks: a trial click (attached, visible, stable, enabled, and the
    element itself receives the pointer); a control the driver would fill (a text box, slider,
    spin button, or combobox without options) must also be an element Playwright's fill works on,
    and editable. A disabled control must
    be disabled in the page too, and the driver must refuse the action that fits it; the refusal is
    checked with `check_applicable`, the function `PageDriver.act` refuses with, because `act`
    itself would set the context's action header.

    The page is not changed: trial clicks scroll controls into view, and every frame's scroll
    position is put back afterwards. Controls of the top document wholly inside the viewport are
    checked all at once (nothing scrolls for them), the others one at a time.
    """
    scrolled = await _scroll_positions(driver.page)
    controls = observation.controls
    try:
        in_view = await driver.page.evaluate(_IN_VIEWPORT, [c.id for c in controls])
        batch = [c for c, inside in zip(controls, in_view, strict=True) if inside]
        results = await asyncio.gather(*(_control_problem(driver, c) for c in batch))
        found = dict(zip((c.id for c in batch), results, strict=True))
        for control in controls:
            if control.id not in found:
                found[control.id] = await _control_problem(driver, control)
        return [f"[{c.id}] {c.role} {c.name!r}: {found[c.id]}" for c in controls if found[c.id] is not None]
    finally:
        await _restore_scroll_positions(scrolled)


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
