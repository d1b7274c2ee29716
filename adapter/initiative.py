"""Whose initiative a page's write was: the model's action, or the page's own script.

Every request of an episode's browser context carries the number of the action being carried out
(`X-ComputerOps-Action`, set on the context by the driver), and the site logs the operation under it. A page's own
script also writes: a `fetch` from a timer, a form its script submits as it loads, a beacon. Such a write is not the
model's, and must not be logged under one of its action numbers. `Initiative` says, for each request routing lets
through (adapter/containment.py), whether it is the model's:

- an action's window opens when the driver tags the context with its number (`begin`) and closes when the driver
  hands the page back to the model (`end`: the action's outcome returned, or the page observed);
- a write (any method but GET, HEAD and OPTIONS) is the model's when no frame of the page committed a new document
  since the action's window opened, and either the window is open or it closed less than `LINGER_S` ago after an
  action on a control (a click, key, fill, selection, hover or drag) or a dialog's answer: what the page does in
  answer to the model's input, at once or after a promise or a timer (a debounced autosave), is the model's. 5 s is
  what Chromium gives input as transient user activation. So the form the model's click submits and the `fetch` its
  handler makes are the model's; a write a document loaded by the action makes as it loads (a form submitted on
  load, a `fetch` in its script), and a write from the page's timer while the model reads after a `navigate`, a
  `back`, or more than 5 s after its last input, are the page's. Nothing of this is read from the page, so page
  script cannot forge it.

The page's writes go out without the action's number and idempotency key (and without any the page set itself),
so the site logs them with no action (`Operation.action` None); the record counts them (`page_writes`). Reads are
left as they are: what a page loads is shown under the action that loaded it.

What this cannot tell apart (not guaranteed): a timer of the page that fires while an action's window is open or
within 5 s after an action on a control, before any new document, is taken for the model's (a page writing every
second writes as the model for 5 s after each click); a write the page delays more than 5 s after the model's input
is the page's; a write a new document makes because of what the model did on the page before it (state its script
reads on load) is the page's; a frame's new document (an iframe loading) ends the model's part for every frame.
"""

from __future__ import annotations

import asyncio
import weakref

from playwright.async_api import Frame, Request

from computerops.core import vocabulary

READS = vocabulary.READ_METHODS
"""Methods that read: left under the action being carried out."""
STRIPPED = frozenset({vocabulary.ACTION_HEADER.lower(), vocabulary.IDEMPOTENCY_HEADER.lower()})
"""Headers a page's own write goes out without: the action's number and key, or any of the page's making."""
LINGER_S = 5.0
"""How long after an action on a control the page's writes are still the model's (Chromium's transient activation)."""


class Initiative:
    """One context's window of the model's action, and which frames committed a new document in it."""

    def __init__(self) -> None:
        self.acting: int | None = None
        """The action whose window is open; None while the page is the model's to read (between actions)."""
        self._pending: weakref.WeakKeyDictionary[Frame, Request] = weakref.WeakKeyDictionary()
        """A navigation routing let through, per frame, until the frame commits its document."""
        self._new_document = False
        """A frame committed a new document since the window opened: what the page sends from now is its own."""
        self._lingers_until = 0.0
        """Event-loop time until which the page's writes are still the closed window's (`end(lingers=True)`)."""

    def begin(self, number: int) -> None:
        """The driver is carrying out action `number` (the context's requests are tagged with it)."""
        self.acting, self._new_document, self._lingers_until = number, False, 0.0

    def end(self, *, lingers: bool = False) -> None:
        """The action is over: the page is the model's to read, and what it sends meanwhile is its own, except, with
        `lingers` (the action gave the page input), what it sends in the next LINGER_S in the same documents."""
        if self.acting is not None and lingers:
            self._lingers_until = asyncio.get_running_loop().time() + LINGER_S
        self.acting = None

    def navigating(self, frame: Frame, request: Request) -> None:
        """Routing let a navigation of `frame` through: the document it loads commits later."""
        self._pending[frame] = request

    def committed(self, frame: Frame) -> None:
        """`frame` navigated: a new document when a navigation routing let through was pending (a same-document
        navigation, `pushState` or a fragment, makes no request)."""
        if self._pending.pop(frame, None) is not None:
            self._new_document = True

    def the_models(self, request: Request) -> bool:
        """Whether `request` is the model's action's (reads always are, under the action tagged)."""
        if request.method.upper() in READS:
            return True
        if self._new_document:
            return False
        return self.acting is not None or asyncio.get_running_loop().time() < self._lingers_until


def without_tags(headers: dict[str, str]) -> dict[str, str]:
    """A request's headers without the action's number and idempotency key."""
    return {name: value for name, value in headers.items() if name.lower() not in STRIPPED}
