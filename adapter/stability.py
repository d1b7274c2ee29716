"""Visual stability: wait, bounded, until a page's animations and transitions that move, size, show or hide
boxes have ended, so an observation never shows a panel half slid in or a row half collapsed.

It asks the page (`document.getAnimations()`, which covers CSS animations, CSS transitions and Web Animations,
in the document and its same-origin frames) and awaits the animations' `finished` promises, in ComputerOps'
isolated world (adapter/world.py). On a page with nothing running it returns after one round trip, without
waiting for a frame; the driver makes it the round trip through the page's task queue it makes after every
action anyway, so there it costs nothing more. Left out on purpose:
- animations that never end (a spinner): the wait could only time out;
- animations of paint-only properties (colour, background, shadow, filter): a hover fade changes no text,
  box or hit target, and must not slow every click;
- colour-only script changes are not told apart from fades (both are inline style changes).
The bound also caps a long finite animation: the observation then shows it unfinished.

Animations driven by script (requestAnimationFrame, setTimeout or setInterval loops stepping an inline style, as
jQuery's fades do) are invisible to getAnimations. For them the world keeps a watch on the DOM, armed at the end of
every observation (adapter/world.py MOTION_WATCH). After an action that changed nothing in the DOM the wait returns
at once (a still page pays nothing). After one that did, it watches the next animation frame (two frames, or
SCRIPT_PROBE_MS, when the action itself changed an inline style, class or hidden state, as a fade-in that shows its
element first does): a style change there means script is animating, and the wait goes on until no style has changed
for SCRIPT_QUIET_MS and two frames, within the same bound. Not seen: a fade that starts later than that probe after an
action that changed nothing in the DOM in the meantime, and motion after a page load (no observation of the new
document has armed the watch yet).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from adapter.world import world_of

VISUAL_SETTLE_S = 1.0
"""The longest wait for animations to end, after which the page is observed as it is."""
SCRIPT_PROBE_MS = 34
"""After an action that changed an inline style, class or hidden state: how long (at least two frames) the wait
looks for script stepping styles further (a setInterval fade of 13-20 ms steps shows its next step by then)."""
SCRIPT_QUIET_MS = 45
"""Script motion has ended when no inline style, class or hidden state changed for this long (and two frames)."""

_WAIT_FOR_STILLNESS = """async ([boundMs, afterTask, probeMs, quietMs]) => {
  if (afterTask) await new Promise((resolve) => setTimeout(resolve, 0));  // what the page scheduled has begun
  const LAYOUT = new RegExp("^(" + [
    "opacity", "visibility", "display", "content-visibility", "transform", "translate", "scale", "rotate", "offset",
    "width", "height", "min-", "max-", "inset", "top", "left", "right", "bottom", "margin", "padding",
    "border(-[a-z]+)?-width", "flex", "grid", "gap", "font", "line-height", "letter-spacing", "clip", "overflow",
    "zoom", "columns",
  ].join("|") + ")");
  const NOT_PROPERTIES = new Set(["offset", "computedOffset", "easing", "composite"]);
  const hyphenated = (name) => name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
  const moves = (a) => {
    if (typeof a.transitionProperty === "string") return LAYOUT.test(a.transitionProperty);
    const frames = a.effect && typeof a.effect.getKeyframes === "function" ? a.effect.getKeyframes() : [];
    return frames.some((f) => Object.keys(f).some((k) => !NOT_PROPERTIES.has(k) && LAYOUT.test(hyphenated(k))));
  };
  const ends = (a) => Boolean(a.effect) && Number.isFinite(a.effect.getComputedTiming().endTime);
  const documents = (doc, into) => {
    into.push(doc);
    for (const frame of doc.querySelectorAll("iframe, frame")) {
      let inner = null;
      try { inner = frame.contentDocument; } catch (e) { /* cross-origin */ }
      if (inner) documents(inner, into);
    }
    return into;
  };
  const running = () => documents(document, []).flatMap((d) => d.getAnimations())
    .filter((a) => a.playState === "running" && ends(a) && moves(a));
  const began = performance.now();
  let waited = 0;
  for (let pending = running(); pending.length; pending = running()) {
    const left = boundMs - (performance.now() - began);
    if (left <= 0) return { waited, unfinished: pending.length };
    await Promise.race([
      Promise.all(pending.map((a) => a.finished.catch(() => null))),  // a cancelled transition rejects
      new Promise((resolve) => setTimeout(resolve, left)),
    ]);
    waited = performance.now() - began;
  }
  // Script-driven motion (see the module's docstring): only after an action that changed the DOM.
  const w = globalThis.__computeropsMotion;
  if (!afterTask || !w || w.changedAt < w.armedAt) return { waited, unfinished: 0 };
  const frame = () => new Promise((resolve) => {
    let done = false;
    const end = () => { if (!done) { done = true; resolve(); } };
    requestAnimationFrame(() => setTimeout(end, 0));  // after the page's own callbacks of that frame
    setTimeout(end, 50);  // a page in the background gets no frames
  });
  const probeFrom = performance.now();
  const styledInAction = w.styledAt >= w.armedAt;
  await frame();
  if (styledInAction) {
    await frame();
    const rest = probeMs - (performance.now() - probeFrom);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
  if (w.styledAt < probeFrom) return { waited: performance.now() - began, unfinished: 0 };
  while (true) {  // script is stepping styles: until it has stopped for quietMs and two frames
    const left = boundMs - (performance.now() - began);
    if (left <= 0) return { waited: performance.now() - began, unfinished: 1 };
    const from = performance.now();
    await frame();
    await frame();
    const quiet = quietMs - (performance.now() - w.styledAt);
    if (quiet > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(quiet, Math.max(0, left))));
    if (w.styledAt < from && performance.now() - w.styledAt >= quietMs) {
      return { waited: performance.now() - began, unfinished: 0 };
    }
  }
}"""


@dataclass(frozen=True)
class Stillness:
    """How a wait for visual stability went."""

    waited_ms: float
    """Time spent waiting for animations in the page; 0 when none was running."""
    unfinished: int
    """Animations still running when the bound ran out (0: the page is still); -1 when the page could not be
    asked (it was navigating away, or did not answer in time)."""


async def wait_for_visual_stability(page: Page, bound_s: float = VISUAL_SETTLE_S, *,
                                    after_a_task: bool = False) -> Stillness:
    """Wait until the page's finite animations of layout and visibility have ended, at most `bound_s`; with
    `after_a_task`, first let one task of the page's queue run (a navigation or fetch the last action
    scheduled has begun by then)."""
    try:
        # In the isolated world (adapter/world.py): page script cannot forge the animations or stall the wait.
        asked = world_of(page).evaluate(_WAIT_FOR_STILLNESS, [bound_s * 1000, after_a_task, SCRIPT_PROBE_MS,
                                                              SCRIPT_QUIET_MS], await_promise=True)
        found = await asyncio.wait_for(asked, timeout=bound_s + 1.0)
    except (PlaywrightError, TimeoutError):
        return Stillness(waited_ms=0.0, unfinished=-1)
    return Stillness(waited_ms=round(float(found["waited"]), 2), unfinished=int(found["unfinished"]))
