"""Acting on the control the model chose, and no other: the role and name it was offered with are checked again when
the driver acts, and while a click's own events reach the page.

Between the observation and the action a page can rename a control ("Cancel order" becomes "Pay"), change its role,
replace it, or cover it; it can also wait for the pointer to arrive (pointerover, mousedown) and do it then. So:

* before any action on a control, the role and name an annotation would give its element now (`co.identify`,
  defined by annotate.js with the very functions the observation used) must be the ones the observation showed;
* a click is guarded: listeners of the isolated world (adapter/world.py), capturing on the control's window, check
  each trusted pointerdown, mousedown, pointerup, mouseup and click as it is dispatched. The event must land on the
  control (or the label the driver clicks), and the control must still have the role and name it had when the click
  began. Listeners on each window holding the control's frame stop any of these events there: a click into the
  frame dispatches nothing in them, so one there landed on something put over the frame. The first event that
  fails stops: it and every later event of that click are kept from the page (`stopImmediatePropagation`,
  `preventDefault`), so no activation (a submit, a link, a toggle) happens, and the driver refuses the action with
  what changed. Page script cannot see or replace these listeners; a page listener capturing on the window that was
  added earlier still runs first, as it would for any click. A click the guard did not see reach the control (such
  a listener stopped it) is reported as not seen, never as done.

A control the page changes in its own click handler (a "Follow" button that becomes "Unfollow") is clicked as it was
offered: the check is over once the click event has passed it. A click is judged by what the page did (issue 50):
once its press (pointerdown or mousedown) reached the control and the page moved the focus or changed its DOM, a later
event landing on a cover the page put there is held back with the rest of the click, but the control was acted on
(`GuardReport.reaction`). While the events come, a guessed name is not compared with the guess it becomes (a hover
style swaps an icon's image under the pointer); `changed`, before the action, compares it like any name.

The other pointer actions are guarded the same way for the events that must reach the control: a `hover`'s arrival
(pointerover, mouseover, pointermove, mousemove: a cover put there as the pointer comes is refused, its events held
back), a `drag`'s press (pointerdown, mousedown: the drag begins on the control or not at all; where it is released is
hit-tested before it starts, and what the page then does under the moving pointer is the drag itself). A `press`
first gives the control the keyboard focus and watches, from the isolated world, for the trusted keydown to reach
it: a control that cannot take the focus (a key would go to `<body>`) is refused, and a key not seen to reach it is
reported as not seen, never as pressed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from adapter.lines import flat
from adapter.observation import Control
from adapter.reply import clean_text
from adapter.world import IsolatedWorld

GUARDED_EVENTS = ("pointerdown", "mousedown", "pointerup", "mouseup", "click")
"""The events of a click that can activate something; hover events carry no activation and are not held back."""
HOVER_EVENTS = ("pointerover", "mouseover", "pointermove", "mousemove")
"""The events of a `hover` checked to land on the control (the pointer's arrival there; enter and leave events
are dispatched to every element on the way and are not checked)."""

# The role and name of a control id's element now ([role, name]); null when the id no longer resolves.
_IDENTITY = """([id, token]) => {
  const co = window.__computerops;
  const e = co && co.token === token ? co.byId.get(id) : null;
  return e && e.isConnected && co.identify ? co.identify(e) : null;
}"""

# Arms the guard for a click on a control id (through its label-th label when label is not null): returns the
# element's [role, name] when the guard is armed, null when the id no longer resolves. Any earlier guard is removed.
_ARM = """([id, token, label, events]) => {
  const co = window.__computerops;
  if (co && co.guard) co.guard.disarm();
  const e = co && co.token === token ? co.byId.get(id) : null;
  if (!e || !e.isConnected || !co.identify) return null;
  const identity = co.identify(e);
  const through = label === null ? e : (e.labels || [])[label] || e;
  // Where the click's events may land: in the control's window on the control (or its label); in each window that
  // holds its frame, nowhere (a real click into a frame dispatches nothing there: an event there hit something else).
  const windows = [[e.ownerDocument.defaultView, null]];
  for (let view = e.ownerDocument.defaultView; view !== view.top && view.frameElement; view = view.parent) {
    windows.push([view.parent, view.frameElement]);
  }
  const within = (n, target) => {
    for (; n; n = n.parentNode || n.host) if (n === target) return true;
    return false;
  };
  const describe = (n) => {
    if (!n || !n.localName) return "nothing";
    const ident = n.id ? "#" + n.id : "";
    const cls = typeof n.className === "string" && n.className.trim()
      ? "." + n.className.trim().split(/\\s+/).join(".") : "";
    return `<${n.localName}${ident}${cls}>`;
  };
  // The same control while the click's events come: its role, and its name unless both names are guesses (an icon's
  // file, class or id name, which a hover style swaps under the pointer: the page still names it nothing). Before the
  // action, a guess is compared like any name (`changed`): a page that changed its icon since the observation is
  // refused.
  const same = (a, b) => a[0] === b[0] && (a[1] === b[1] || (Boolean(a[2]) && Boolean(b[2])));
  // What the page did once the press reached the control: the focus moved, or its DOM changed.
  const doc = e.ownerDocument;
  const focusBefore = doc.activeElement;
  let changed = false;  // the observer's records go to its callback at the end of each event's dispatch
  const changes = new MutationObserver(() => { changed = true; });
  changes.observe(doc, { subtree: true, childList: true, attributes: true, characterData: true });
  const guard = { identity, seen: [], reached: [], stopped: null };
  const check = (frame) => (event) => {
    if (!event.isTrusted) return;  // the page's own synthetic events are its own business
    if (!frame) guard.seen.push(event.type);
    if (!guard.stopped) {
      const hit = event.composedPath()[0];
      if (frame) {
        guard.stopped = { event: event.type, hit: describe(hit) };
      } else if (!e.isConnected) {
        guard.stopped = { event: event.type, gone: true };
      } else {
        const now = co.identify(e);
        if (!same(now, identity)) {
          guard.stopped = { event: event.type, now };
        } else if (!within(hit, e) && !within(hit, through)) {
          guard.stopped = { event: event.type, hit: describe(hit) };
        } else {
          guard.reached.push(event.type);
        }
      }
      const pressed = guard.reached.includes("mousedown") || guard.reached.includes("pointerdown");
      if (guard.stopped && guard.stopped.hit && pressed) {
        // Covered after the press reached it: judged by what the page did then, not by where the cover landed.
        const focus = doc.activeElement !== focusBefore;
        guard.stopped.pressed = { focus, changed: changed || changes.takeRecords().length > 0 };
      }
    }
    if (guard.stopped) {
      event.stopImmediatePropagation();
      event.preventDefault();
    }
  };
  const listeners = windows.map(([view, frame]) => [view, check(frame)]);
  for (const [view, listener] of listeners) for (const type of events) view.addEventListener(type, listener, true);
  guard.disarm = () => {
    changes.disconnect();
    for (const [view, listener] of listeners) {
      for (const type of events) view.removeEventListener(type, listener, true);
    }
    if (co.guard === guard) co.guard = null;
  };
  co.guard = guard;
  return identity;
}"""

# Removes the guard and says what it saw: {seen, stopped}; null when there is none (a new document).
_DISARM = """() => {
  const co = window.__computerops;
  const guard = co && co.guard;
  if (!guard) return null;
  guard.disarm();
  return { seen: guard.seen, stopped: guard.stopped };
}"""


# What the guard saw so far, leaving it armed: {seen, stopped}; null when there is none.
_PEEK = """() => {
  const guard = window.__computerops && window.__computerops.guard;
  return guard ? { seen: guard.seen, stopped: guard.stopped } : null;
}"""

# Focuses a control's element for a key press and watches for the press: returns {focused: true} when the focus in
# its document is on it (or inside it) and a listener of the isolated world, capturing on its window, records each
# trusted keydown whose path holds the element; {focused: false, holder} (what has the focus instead) when it
# cannot take the focus; null when the id no longer resolves. Any earlier key watch is removed.
_FOCUS_FOR_KEYS = """([id, token]) => {
  const co = window.__computerops;
  if (co && co.keys) co.keys.disarm();
  const e = co && co.token === token ? co.byId.get(id) : null;
  if (!e || !e.isConnected) return null;
  const doc = e.ownerDocument, view = doc.defaultView;
  const focused = () => {
    let active = doc.activeElement;
    while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
    for (let n = active; n; n = n.parentNode || n.host) if (n === e) return null;
    return active || doc.body;
  };
  if (focused() && typeof e.focus === "function") e.focus();
  const holder = focused();
  if (holder) {
    return { focused: false, holder: holder === doc.body ? "the page itself (<body>)" : `<${holder.localName}>` };
  }
  const keys = { seen: [] };
  const listener = (event) => {
    if (event.isTrusted && event.composedPath().includes(e)) keys.seen.push(event.key);
  };
  view.addEventListener("keydown", listener, true);
  keys.disarm = () => {
    view.removeEventListener("keydown", listener, true);
    if (co.keys === keys) co.keys = null;
  };
  co.keys = keys;
  return { focused: true };
}"""

# Removes the key watch and gives the keys it saw reach the element; null when there is none (a new document).
_KEYS_SEEN = """() => {
  const keys = window.__computerops && window.__computerops.keys;
  if (!keys) return null;
  keys.disarm();
  return keys.seen;
}"""


def offered_name(name: str) -> str:
    """A name as the observation shows it: by the rule of page text (`lines.flat`, which adapter/render.py applies to
    names), control characters as spaces and white space collapsed, and lone surrogates as U+FFFD."""
    return flat(clean_text(name)[0])


def changed(control: Control, identity: list[str]) -> str | None:
    """How the element of a control differs now from what the observation offered, or None when it does not. A name
    the reading's character bound cut (on a page over it) is compared as far as it was read."""
    role, name = identity[0], offered_name(identity[1])
    if role == control.role and (name == control.name or (control.name_cut and name.startswith(control.name))):
        return None
    return f"it was offered as {control.role} {_quoted(control.name)} and is now {role} {_quoted(name)}"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


async def identity_now(world: IsolatedWorld, control_id: str, token: str | None) -> list[str] | None:
    """The [role, name] the control's element would be offered with now; None when the id no longer resolves."""
    found = await world.evaluate(_IDENTITY, [control_id, token])
    return [str(part) for part in found] if isinstance(found, list) else None


async def identity_and(world: IsolatedWorld, control_id: str, token: str | None, read: str,
                       arg: object = None) -> tuple[list[str], object] | None:
    """`identity_now` and `read(element, arg)` (JavaScript source that changes nothing) on the control's element,
    in one round trip; None when the id no longer resolves (nothing is read then)."""
    found = await world.evaluate(f"([id, token, arg]) => {{ const identity = ({_IDENTITY})([id, token]); "
                                 "const co = window.__computerops; "
                                 f"return identity && [identity, ({read})(co.byId.get(id), arg)]; }}",
                                 [control_id, token, arg])
    return ([str(part) for part in found[0]], found[1]) if isinstance(found, list) else None


async def arm(world: IsolatedWorld, control_id: str, token: str | None, label: int | None,
              events: tuple[str, ...] = GUARDED_EVENTS) -> list[str] | None:
    """Guard the next click on the control (see the module's comment), or the pointer events `events` of another
    pointer action (a hover's arrival, a drag's press); its [role, name] now, or None when the id no longer resolves
    (nothing is armed then)."""
    found = await world.evaluate(_ARM, [control_id, token, label, list(events)])
    return [str(part) for part in found] if isinstance(found, list) else None


@dataclass(frozen=True)
class GuardReport:
    """What the guard of one click saw."""

    seen: tuple[str, ...]
    """The trusted events of the click it checked, in order."""
    stopped: str | None
    """Why it stopped the click (and which event it stopped at), or None when every event passed."""
    reaction: str | None = None
    """When the press (pointerdown, mousedown) had reached the control before a later event landed on something the
    page put over it: what the page did in answer (it moved the focus, it changed), so the control was acted on; None
    otherwise (nothing reached it, or it was renamed or removed, or the page did nothing)."""


async def disarm(world: IsolatedWorld, control: Control, what: str = "click") -> GuardReport | None:
    """Remove the guard; what it saw, or None when the document it was armed in is gone (the click navigated).
    `what` names the action in the reason ("click", "hover", "drag")."""
    return _report(await world.evaluate(_DISARM), control, what)


async def peek(world: IsolatedWorld, control: Control, what: str) -> GuardReport | None:
    """What the guard saw so far, leaving it armed (a drag reads it after the press, before it moves)."""
    return _report(await world.evaluate(_PEEK), control, what)


def _report(found: object, control: Control, what: str) -> GuardReport | None:
    if not isinstance(found, dict):
        return None
    stopped = found.get("stopped")
    reason = reaction = None
    if isinstance(stopped, dict) and isinstance(stopped.get("pressed"), dict):
        pressed = stopped["pressed"]
        did = [what for what, key in (("moved the focus", "focus"), ("changed", "changed")) if pressed.get(key)]
        reaction = "the page " + " and ".join(did) if did else None
    if isinstance(stopped, dict):
        at = f"when the {stopped.get('event')} event of the {what} reached it"
        if stopped.get("gone"):
            reason = f"the page removed it {at}"
        elif isinstance(stopped.get("now"), list):
            now = [str(part) for part in stopped["now"]]
            reason = f"{changed(control, now) or 'its name changed'}: the page changed it {at}"
        else:
            reason = f"the page put {stopped.get('hit')} over it {at}, and the {what} would have landed there"
    return GuardReport(seen=tuple(str(event) for event in found.get("seen", [])), stopped=reason, reaction=reaction)


async def focus_for_keys(world: IsolatedWorld, control_id: str, token: str | None) -> str | bool | None:
    """Give the control the keyboard focus and watch for the keys that reach it: True when it has the focus (in its
    document, itself or an element inside it); else what has the focus instead (it cannot take it: a key pressed now
    would go there); None when the id no longer resolves."""
    found = await world.evaluate(_FOCUS_FOR_KEYS, [control_id, token])
    if not isinstance(found, dict):
        return None
    return True if found.get("focused") else str(found.get("holder"))


async def keys_seen(world: IsolatedWorld) -> list[str] | None:
    """End the key watch: the keys whose keydown reached the control, or None when its document is gone."""
    found = await world.evaluate(_KEYS_SEEN)
    return [str(key) for key in found] if isinstance(found, list) else None
