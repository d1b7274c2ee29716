"""The functions the driver evaluates in the isolated world of a page's top frame (adapter/world.py), where the
control ids live: find a control's element, read its state, probe and fill it, choose an option by its label, read a
field's value, find its visible part, and where a click on it lands (`ClickPoint`)."""

from __future__ import annotations

from dataclasses import dataclass

# In the isolated world of the top frame (adapter/world.py), where the ids live: the element of a control id of
# the latest observation, in whichever same-origin frame; null when the id no longer names a connected element.
LOOKUP = """([id, token]) => {
  const co = window.__computerops;
  const el = co && co.token === token ? co.byId.get(id) : null;
  return el && el.isConnected ? el : null;
}"""


# Whether a checkable control is checked now (native or ARIA); null when the id no longer resolves.
CHECKED = """([id, token]) => {
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
  if (!e) return "no longer on the page";
  const view = e.ownerDocument.defaultView;
  if (e.isContentEditable || e instanceof view.HTMLTextAreaElement) return null;
  const types = ["text", "email", "number", "password", "search", "tel", "url", "color", "date", "time",
                 "datetime-local", "month", "range", "week"];
  if (e instanceof view.HTMLInputElement) return types.includes(e.type) ? null : `an input of type ${e.type}`;
  return `a <${e.localName}>, not a text field`;
}"""
# For an <input> about to be filled: what a detached input of the same type and bounds makes of the value, so
# a value the browser would sanitise away is refused before anything is typed (the page sees nothing of the
# probe, made in the isolated world); null for other elements.
FILL_PROBE = """(e, text) => {
  const view = e && e.ownerDocument.defaultView;
  if (!e || !(e instanceof view.HTMLInputElement)) return null;
  const asked = text.trim();
  const probe = e.ownerDocument.createElement("input");
  for (const name of ["type", "min", "max", "step"]) {
    const value = e.getAttribute(name);
    if (value !== null) probe.setAttribute(name, value);
  }
  probe.value = asked;
  const bounds = ["min", "max", "step"].map((name) => e.getAttribute(name) || "");
  return { type: e.type, asked, kept: probe.value, colour: view.CSS.supports("color", asked), bounds };
}"""
# Both reads a fill makes before it acts, in one round trip: [FILL_PROBLEM, FILL_PROBE].
FILL_READS = f"(e, text) => [({FILL_PROBLEM})(e), ({FILL_PROBE})(e, text)]"
# Playwright's fill, in the isolated world on the control's element (no Playwright handle to find first): an input
# of a type whose value is set (date, colour, range, ...) gets it and the input and change events, "done"; a text
# field or editing host gets focus and its content selected, "needsinput" (the driver then types over the
# selection with the keyboard, as Playwright does); else why it cannot be filled now.
FILL_INTO = """(e, text) => {
  if (!e) return "gone";
  const view = e.ownerDocument.defaultView;
  if (e.disabled || e.readOnly) return "not editable now";
  if (e instanceof view.HTMLInputElement && ["color", "date", "time", "datetime-local", "month", "range",
                                             "week"].includes(e.type)) {
    e.focus();
    e.value = text.trim();
    e.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    e.dispatchEvent(new Event("change", { bubbles: true }));
    return "done";
  }
  if (e instanceof view.HTMLInputElement) {
    e.select();
    e.focus();
  } else if (e instanceof view.HTMLTextAreaElement) {
    e.selectionStart = 0;
    e.selectionEnd = e.value.length;
    e.focus();
  } else {
    let host = e;
    const editable = (n) => Boolean(n && n.isContentEditable);
    while (editable(host) && editable(host.parentElement)) host = host.parentElement;
    host.focus();
    const range = e.ownerDocument.createRange();
    range.selectNodeContents(e);
    const selection = view.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  return "needsinput";
}"""
# Playwright's selectOption by label, in the isolated world on the control's element: the option whose label is the
# one asked for (white space normalised) is selected, with the input and change events; the value selected, or
# {problem}.
SELECT_LABEL = r"""(e, label) => {
  if (!e) return { problem: "gone" };
  const view = e.ownerDocument.defaultView;
  if (!(e instanceof view.HTMLSelectElement)) return { problem: `a <${e.localName}>, not a drop-down list` };
  if (e.disabled) return { problem: "disabled now" };
  // as the observation shows a label (adapter/lines.py flat): control characters and line separators as spaces
  const normal = (t) => t.replace(/[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+/g, " ").trim();
  const option = [...e.options].find((o) => o.label === label || normal(o.label) === normal(label));
  if (!option) return { problem: `it has no option ${JSON.stringify(label)} now` };
  if (option.disabled || (option.parentElement && option.parentElement.localName === "optgroup"
                          && option.parentElement.disabled)) return { problem: "that option is disabled" };
  e.value = undefined;
  option.selected = true;
  e.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
  e.dispatchEvent(new Event("change", { bubbles: true }));
  return { value: option.value };
}"""
# The value a text field holds and its maxlength (-1 when none); null for an editing host.
FIELD_VALUE = """e => {
  const view = e && e.ownerDocument.defaultView;
  const field = Boolean(e) && (e instanceof view.HTMLInputElement || e instanceof view.HTMLTextAreaElement);
  return field ? [e.value, e.maxLength] : null;
}"""

# The part of an element's border box that shows (JS function expression, shared with adapter/fidelity.py): cut by
# every ancestor whose overflow clips it (along its containing-block chain, so a fixed or absolute box escapes
# the boxes that do not contain it), by its window, then by each same-origin frame it sits in and that frame's
# own clipping ancestors. Returns {rect: [left, top, right, bottom] in top-level viewport coordinates, ox, oy}
# (ox, oy: the element's frame origin in top-level coordinates), or {cutBy} when nothing shows: the element that
# clipped it away, null for a window.
VISIBLE_PART = """(el) => {
  const parentOf = (n) => n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const containsFixed = (s) => s.transform !== "none" || s.perspective !== "none" || s.filter !== "none"
    || /paint|layout|strict|content/.test(s.contain) || /transform|perspective|filter/.test(s.willChange);
  const cut = (r, box, x, y) => [x ? Math.max(r[0], box[0]) : r[0], y ? Math.max(r[1], box[1]) : r[1],
                                 x ? Math.min(r[2], box[2]) : r[2], y ? Math.min(r[3], box[3]) : r[3]];
  const empty = (r) => r[2] <= r[0] || r[3] <= r[1];
  const b = el.getBoundingClientRect();
  let rect = [b.left, b.top, b.right, b.bottom], ox = 0, oy = 0, node = el;
  for (let view = el.ownerDocument.defaultView; ; view = view.parent) {
    const doc = view.document, root = doc.documentElement;
    const rootStyle = view.getComputedStyle(root);
    const bodyClipsViewport = rootStyle.overflowX === "visible" && rootStyle.overflowY === "visible";
    let position = view.getComputedStyle(node).position;
    for (let n = parentOf(node); n && n !== root; n = parentOf(n)) {
      const s = view.getComputedStyle(n);
      const contains = position === "fixed" ? containsFixed(s)
        : position === "absolute" ? s.position !== "static" || containsFixed(s) : true;
      if (!contains) continue;
      position = s.position;
      const x = s.overflowX !== "visible", y = s.overflowY !== "visible";
      if (!(x || y) || (n === doc.body && bodyClipsViewport)) continue;  // a body's overflow is the window's
      const r = n.getBoundingClientRect(), left = r.left + n.clientLeft, top = r.top + n.clientTop;
      rect = cut(rect, [left, top, left + n.clientWidth, top + n.clientHeight], x, y);
      if (empty(rect)) return { cutBy: n };
    }
    const width = Math.min(view.innerWidth, root.clientWidth || view.innerWidth);
    const height = Math.min(view.innerHeight, root.clientHeight || view.innerHeight);
    rect = cut(rect, [0, 0, width, height], true, true);
    if (empty(rect)) return { cutBy: null };
    const frame = view.frameElement;  // null at the top, and below a cross-origin parent
    if (view === view.top || !frame) break;
    const f = frame.getBoundingClientRect(), fx = f.left + frame.clientLeft, fy = f.top + frame.clientTop;
    rect = [rect[0] + fx, rect[1] + fy, rect[2] + fx, rect[3] + fy];
    ox += fx;
    oy += fy;
    rect = cut(rect, [fx, fy, fx + frame.clientWidth, fy + frame.clientHeight], true, true);
    if (empty(rect)) return { cutBy: frame };
    node = frame;
  }
  return { rect, ox, oy };
}"""

# In the top frame, for a control id of the latest observation: where a click on it lands, in top-level viewport
# coordinates. The candidate points are the centre of each of the element's client rects (a link wrapping onto two
# lines has one a line: the centre of its whole box lies between them), then the centre of its box; with `at`
# ([x, y], fractions of its box from the top-left) the one point there. A target (the element, else one of its
# labels) is scrolled into view within every scrolling ancestor and frame when no candidate shows (VISIBLE_PART),
# unless `scroll` is false; the click point is the first candidate that shows and whose hit test (through open
# shadow roots, and at each enclosing frame) lands on the target, else the centre of the part that shows. Returns
# {x, y, label: null} for the element itself, {x, y, label: i} for its i-th label (a checkbox hidden under its
# label; never for a point given by `at`), else {problem} with the element's own reason: no size, clipped away by
# a container that scrolling does not move, outside the window, hidden by its own CSS clip, or covered by which
# element. The candidates besides those are the other points of its box that annotate.js tries when its middle is
# covered (co.coverPoints: a control half under a banner is clicked on the half that shows, as markCovered judges it).
# A target under a box fixed over the window (a cookie banner, a sticky header; for a target in a frame, a box over
# the frame) is first scrolled clear of it when a scroll of the box that scrolls it, or of the window, can
# (annotate.js co.clearScroll). {stale} when the id no longer names a connected element. One
# round trip, in the isolated world (adapter/world.py).
CLICK_POINT = """([id, token, at = null, scroll = true]) => {
  const co = window.__computerops;
  const e = co && co.token === token ? co.byId.get(id) : null;
  if (!e || !e.isConnected) return { stale: true };
  const visiblePart = """ + VISIBLE_PART + """;
  const describe = (n) => {
    const ident = n.id ? "#" + n.id : "";
    const cls = typeof n.className === "string" && n.className.trim()
      ? "." + n.className.trim().split(/\\s+/).join(".") : "";
    return `<${n.localName}${ident}${cls}>`;
  };
  const hitAt = co.hitAt;  // what a click at a point of a document lands on, through open shadow roots
  const within = (hit, target) => {
    for (let n = hit; n; n = n.parentNode || n.host) if (n === target) return true;
    return false;
  };
  const shows = (part, x, y) => Boolean(part.rect) && x + part.ox >= part.rect[0] && x + part.ox < part.rect[2]
    && y + part.oy >= part.rect[1] && y + part.oy < part.rect[3];
  const inset = (start, size, fraction) => {  // a fraction of a box, kept a pixel inside its edges (an event's
    const margin = Math.min(1, size / 2);  // position is a whole pixel: half a pixel in could land outside)
    return start + Math.min(Math.max(fraction * size, margin), size - margin);
  };
  const candidates = (target, point) => {
    const box = target.getBoundingClientRect();
    if (point) return [[inset(box.left, box.width, point[0]), inset(box.top, box.height, point[1])]];
    const rects = [...target.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    return [...rects.map((r) => [r.left + r.width / 2, r.top + r.height / 2]),
            [box.left + box.width / 2, box.top + box.height / 2],
            ...(co.coverPoints || []).map(([fx, fy]) => [inset(box.left, box.width, fx),
                                                         inset(box.top, box.height, fy)])];
  };
  const scrollClear = (clear) => {  // annotate.js co.clearScroll's answer, done; whether it moved anything
    if (!clear || (!clear.top && !clear.left)) return false;
    clear.scroller.scrollBy({ top: clear.top, left: clear.left, behavior: "instant" });
    return true;
  };
  const clickAt = (target, point, cleared = false) => {  // {x, y} in top-level coordinates, or {problem}
    const box = target.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) {
      return { problem: `it has no size on the page (${Math.round(box.width)} x ${Math.round(box.height)} px)` };
    }
    let part = visiblePart(target), points = candidates(target, point);
    if (scroll && !points.some(([x, y]) => shows(part, x, y))) {
      target.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
      part = visiblePart(target);
      points = candidates(target, point);
    }
    if (!part.rect) {
      const where = part.cutBy ? `outside the visible part of ${describe(part.cutBy)}` : "outside the window";
      return { problem: scroll ? `it lies ${where}, and scrolling does not bring it into view` : `it lies ${where}` };
    }
    let showing = points.filter(([x, y]) => shows(part, x, y));
    if (point && !showing.length) return { problem: "that point of it lies outside the window or the box it shows in" };
    if (!showing.length) {  // the middle of the part that shows, in the target's own frame
      showing = [[(part.rect[0] + part.rect[2]) / 2 - part.ox, (part.rect[1] + part.rect[3]) / 2 - part.oy]];
    }
    const hits = [];
    let framed = null;  // the first point on the target whose frame a page around it covers there
    for (const [px, py] of showing) {
      const hit = hitAt(target.ownerDocument, px, py);
      if (hit && within(hit, target)) {
        const up = inFrames(target, px, py);
        if (!up.problem) return up;
        framed = framed || up;
        continue;
      }
      hits.push(hit);
    }
    // Under a box fixed over the window (a cookie banner, a sticky header; in a frame, one over the frame): scrolled
    // clear of it, as a person would, in the box that scrolls it or the window (annotate.js co.clearScroll), once; a
    // box over the whole window, or a page too short to scroll, still refuses.
    const clearing = scroll && !point && !cleared && co.pinnedBox;
    if (framed) {
      const cover = clearing ? co.pinnedBox(framed.over) : null;
      if (cover && !within(framed.frame, cover)
          && scrollClear(co.clearScroll(framed.frame, undefined, framed.at, framed.over))) {
        return clickAt(target, point, true);
      }
      return { problem: framed.problem };
    }
    const first = hits[0];  // what a click at the first point would land on
    if (!first) return { problem: "it lies outside the window" };
    const cover = clearing ? co.pinnedBox(first) : null;
    if (cover && !within(target, cover) && scrollClear(co.clearScroll(target, undefined, null, first))) {
      return clickAt(target, point, true);
    }
    const style = target.ownerDocument.defaultView.getComputedStyle(target);
    const clipped = style.clip !== "auto" || style.clipPath !== "none";  // a visually hidden control
    return { problem: clipped ? `it is clipped out of sight by its CSS clip; a click there lands on ${describe(first)}`
      : `it is covered by ${describe(first)}` };
  };
  const inFrames = (target, x, y) => {  // a point of the target's frame in top-level coordinates, or {problem}
    for (let view = target.ownerDocument.defaultView; view !== view.top && view.frameElement; view = view.parent) {
      const frame = view.frameElement, f = frame.getBoundingClientRect();
      x += f.left + frame.clientLeft;
      y += f.top + frame.clientTop;
      const over = hitAt(view.parent.document, x, y);  // the frame itself may be covered in its parent
      if (!over || !within(over, frame)) {
        return { problem: `it is covered by ${over ? describe(over) : "nothing"}`, over, frame, at: [x, y] };
      }
    }
    return { x, y };
  };
  // A listening element offered beside the controls it holds is clicked at a point of its own (annotate.js ownPoint),
  // not on one of them; where no point of it is its own any more, it is not clicked at all.
  const ownAt = !at && co.ownPoint ? co.ownPoint(e) : null;
  if (!at && co.ownPoints && co.ownPoints.has(e) && !ownAt) {
    return { problem: "every point of it now lies on a control it holds" };
  }
  const own = clickAt(e, at || ownAt);
  if (!own.problem || at || ownAt) return own.problem ? own : { ...own, label: null };
  const labels = [...(e.labels || [])];
  for (let i = 0; i < labels.length; i++) {
    const through = clickAt(labels[i], null);
    if (!through.problem) return { ...through, label: i };
  }
  return { problem: own.problem };
}"""


# For `more` at the last part of a page that loads more of a list as its end scrolls into view (annotate.js
# loadsOnScroll, kept as co.sentinels by the latest annotation): each such element is scrolled into view in every
# scrolling box, then the page is watched until its DOM has changed and been quiet for `quietMs`, at most `waitMs`.
# Returns {sentinels, changed}. A MutationObserver of the isolated world sees the page's own changes.
LOAD_ON_SCROLL = """async ([token, waitMs, quietMs]) => {
  const co = window.__computerops;
  const sentinels = co && co.token === token ? (co.sentinels || []).filter((n) => n.isConnected) : [];
  if (!sentinels.length) return { sentinels: 0, changed: false };
  let changed = false, last = 0;
  const watch = new MutationObserver(() => { changed = true; last = performance.now(); });
  for (const n of sentinels) {
    watch.observe(n.ownerDocument, { childList: true, subtree: true, attributes: true, characterData: true });
  }
  for (const n of sentinels) n.scrollIntoView({ block: "end", inline: "nearest", behavior: "instant" });
  const began = performance.now();
  while (performance.now() - began < waitMs && !(changed && performance.now() - last >= quietMs)) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  watch.disconnect();
  return { sentinels: sentinels.length, changed };
}"""


@dataclass(frozen=True)
class ClickPoint:
    """Where a click on a control lands, in top-level viewport coordinates."""

    x: float
    y: float
    label: int | None
    """None: on the control itself; else the index of the label of it that takes the click."""
