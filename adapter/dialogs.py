"""The page's JavaScript dialogs (alert, confirm, prompt, beforeunload): shown to the model, answered by the model.

A dialog stops the page: until it is answered, no script of the page runs and nothing of it can be read. So:

* A confirm, a prompt or a leave-page question (beforeunload) is never answered for the model. It stays open; the
  action that raised it returns at once saying so, and the next observation is the dialog itself: its kind, its
  whole question, its buttons (`dialog_page`). The model answers it with the `dialog` action (adapter/actions.py);
  any other action is refused until then.
* An alert, which asks nothing, is accepted and its text shown in the next observation's `Dialog:` lines, for at
  most as many alerts per observation as the header shows (adapter/render.py HEADER_ENTRIES): the next one stays
  open like a confirm, so the model sees a flood begin. Once the model has answered that alert, the page's further
  alerts until the next observation (at most FLOOD_ALERTS) are accepted in bulk: the header shows the first few and
  counts the rest. A page raising 300 alerts in one go thus costs the model one `dialog` answer, not 75 (issue 46).
* A dialog left unanswered for DIALOG_WAIT_S is dismissed (Cancel, Stay) and the next observation says so: an
  episode whose model never answers does not keep the page stopped; a dismissal never confirms anything.
* While one dialog is open the page cannot raise another, but another frame's process can: that one is dismissed
  and the model told.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from html import escape
from typing import Any

from playwright.async_api import Dialog
from playwright.async_api import Error as PlaywrightError

from adapter.lines import quoted
from adapter.render import HEADER_ENTRIES

DIALOG_WAIT_S = 180.0
"""How long a dialog may wait for the model's answer before it is dismissed."""
ALERTS_PER_OBSERVATION = HEADER_ENTRIES
"""Alerts accepted for the model between two observations: as many as the header shows; the next one waits."""
FLOOD_ALERTS = 1_000
"""Alerts accepted in bulk after the model answered one, until the next observation; the next one waits again."""
FLOOD_TEXT_CHARS = 1_000
"""Characters kept of each alert's text for the header (which shows 200 of each, and of a flood only the first)."""
BUTTONS = {"alert": ("OK", "OK"), "confirm": ("OK", "Cancel"), "prompt": ("OK", "Cancel"),
           "beforeunload": ("Leave", "Stay")}
"""What accept true and false press, by kind of dialog."""
MESSAGE_CHARS = 2_000
"""Characters of a dialog's question shown (a longer one says how much more there was)."""


@dataclass(frozen=True)
class DialogEvent:
    """An alert/confirm/prompt/beforeunload the page raised."""

    kind: str
    message: str


def _kind(dialog: Dialog) -> str:
    return dialog.type if dialog.type in BUTTONS else "alert"


def described(dialog: Dialog) -> str:
    """`the confirm "Delete ticket T-1?"` (a leave-page question has no text of its own)."""
    kind = _kind(dialog)
    if kind == "beforeunload":
        return "the question whether to leave the page"
    message = dialog.message if len(dialog.message) <= 200 else dialog.message[:199] + "…"
    return f"the {kind} {quoted(message)}"


class Dialogs:
    """The dialogs of one page: which one is open, the alerts to show, the log of all."""

    def __init__(self, notify: Callable[[str], None], *, wait_s: float = DIALOG_WAIT_S) -> None:
        self._notify = notify
        self.wait_s = wait_s
        self.log: list[DialogEvent] = []
        self.open: Dialog | None = None
        """The dialog that waits for the model's answer."""
        self._opened = asyncio.Event()
        self._shown: list[str] = []
        self._bulk = 0
        """Alerts the page may still raise, accepted in bulk, before the next observation: FLOOD_ALERTS once the model
        answered an alert that waited, 0 again at each observation."""
        self._timer: asyncio.TimerHandle | None = None
        self._closing: set[asyncio.Task[None]] = set()

    async def on_dialog(self, dialog: Dialog) -> None:
        """Playwright's `dialog` event."""
        self.log.append(DialogEvent(kind=dialog.type, message=dialog.message))
        if self.open is not None:
            self._notify(f"The page opened {described(dialog)} while {described(self.open)} was waiting for your "
                         "answer; it was dismissed.")
            await _press(dialog, accept=False)
            return
        if _kind(dialog) == "alert" and (len(self._shown) < ALERTS_PER_OBSERVATION or self._bulk > 0):
            if len(self._shown) >= ALERTS_PER_OBSERVATION:
                self._bulk -= 1
            self._shown.append(dialog.message[:FLOOD_TEXT_CHARS])
            await _press(dialog, accept=True)
            return
        self.open = dialog
        self._opened.set()
        self._timer = asyncio.get_running_loop().call_later(self.wait_s, self._expire, dialog)

    def take_shown(self) -> list[str]:
        """The texts of the alerts accepted since the last call (for the observation's `Dialog:` lines)."""
        shown, self._shown, self._bulk = self._shown, [], 0
        return shown

    def _expire(self, dialog: Dialog) -> None:
        if self.open is not dialog:
            return
        self._notify(f"{described(dialog).capitalize()} waited {self.wait_s:g} s for an answer and was dismissed "
                     f"({BUTTONS[_kind(dialog)][1]}).")
        task = asyncio.ensure_future(self.close(accept=False))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def forget(self) -> None:
        """The page went (its renderer crashed): its open dialog with it; nothing is pressed."""
        self.open = None
        self._opened.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def close(self, *, accept: bool, text: str | None = None) -> None:
        """Answer the open dialog (OK/Leave when accept, else Cancel/Stay; a prompt with text)."""
        dialog, self.open = self.open, None
        self._opened.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if dialog is not None:
            if _kind(dialog) == "alert":  # the model saw the flood begin and answered: the rest goes in bulk
                self._bulk = FLOOD_ALERTS
            await _press(dialog, accept=accept, text=text)

    def described(self) -> str:
        """The open dialog, as `described` says it."""
        assert self.open is not None
        return described(self.open)

    def problem(self, accept: bool, text: str | None) -> str | None:
        """Why this answer does not fit the open dialog, or None."""
        if self.open is None:
            return "No dialog is open."
        if text is not None and self.open.type != "prompt":
            return f"Only a prompt takes text; {described(self.open)} is answered with accept true or false."
        return None

    def answer_note(self, accept: bool, text: str | None) -> str:
        """What answering the open dialog so does, as the action's note."""
        assert self.open is not None
        button = BUTTONS[_kind(self.open)][0 if accept else 1]
        typed = f" and the text {quoted(text)}" if text is not None and accept else ""
        return f"answered {described(self.open)} with {button}{typed}"

    def waiting(self) -> str:
        """The reason any other action is refused while a dialog is open."""
        assert self.open is not None
        ok, cancel = BUTTONS[_kind(self.open)]
        return (f"The page waits for your answer to {described(self.open)} and does nothing else until then. "
                f"Answer it first with the dialog action: accept true for {ok}, false for {cancel}.")

    async def until_done_or_open(self, task: asyncio.Future[Any]) -> bool:
        """Wait until the task is done (True) or a dialog is open and waits for the model (False)."""
        if task.done():
            return True
        opened = asyncio.ensure_future(self._opened.wait())
        try:
            await asyncio.wait({task, opened}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            opened.cancel()
        return task.done()

    def page_html(self) -> str:
        """What the page shows while a dialog is open: the dialog, as HTML for the renderer (whose lines page text
        cannot forge: adapter/lines.py)."""
        assert self.open is not None
        dialog, kind = self.open, _kind(self.open)
        ok, cancel = BUTTONS[kind]
        lines = [f"The page opened a {kind} dialog and waits for your answer; nothing else of it can be seen or used "
                 "until then."]
        if kind == "beforeunload":
            lines.append("It asks whether to leave this page (changes you made may not be saved).")
        else:
            message = dialog.message
            cut = len(message) - MESSAGE_CHARS
            lines.append("Its text:")
            lines.extend(message[:MESSAGE_CHARS].splitlines() or [""])
            if cut > 0:
                lines.append(f"({cut} more characters of its text not shown)")
        if kind == "prompt":
            lines.append(f"Its text field holds {quoted(dialog.default_value)}.")
        answers = f"accept true for {ok}" + ("" if kind == "alert" else f", false for {cancel}")
        lines.append(f"Answer it with the dialog action: {answers}" + (
            ", with text for what to type" if kind == "prompt" else "") + ".")
        return "<body>" + "".join(f"<p>{escape(line)}</p>" for line in lines) + "</body>"


async def _press(dialog: Dialog, *, accept: bool, text: str | None = None) -> None:
    if accept and text is None and dialog.type == "prompt":
        text = dialog.default_value  # OK on a prompt the model typed nothing into keeps what its field holds
    with suppress(PlaywrightError):  # the page may go away with its dialog
        if accept:
            await (dialog.accept(text) if text is not None else dialog.accept())
        else:
            await dialog.dismiss()
