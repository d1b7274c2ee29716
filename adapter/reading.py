"""How much of a page one observation reads, and for how long, at most: a hostile page is a truncated observation.

annotate.js walks at most `depth` elements deep and `elements` elements in all (options of a list included), and
copies at most `chars` characters of text, names and values; it says on its root what it left out, and the header
of the observation says so (`Observation truncated: ...`, adapter/render.py). The page side is read within
`seconds`: a page whose own script holds the renderer's thread (a busy loop), or too large to walk in time, has
the running script ended (`IsolatedWorld.interrupt`) and STOP_GRACE_S more; one that still does not answer is an
observation that says so, never an error of the harness.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from playwright.async_api import Error as PlaywrightError

from adapter.lines import flat
from adapter.world import IsolatedWorld

T = TypeVar("T")
STOP_GRACE_S = 2.0
"""How long a reading may still take once the script holding the page's thread was ended."""


MAX_DEPTH = 1_000
"""The deepest a reading may go: the renderer's parser (libxml2) keeps about 2,000 levels (adapter/render.py)."""


@dataclass(frozen=True)
class ReadLimits:
    """The bounds of one observation's reading of a page."""

    depth: int = 256
    """Elements nested deeper are left out (Chromium's own parser nests at most 512); at most MAX_DEPTH."""
    elements: int = 10_000
    """Elements (and options of lists) looked at; the walk stops after them."""
    chars: int = 500_000
    """Characters of text, names and values copied, in all; page text only down to a fifth of it (kept for controls),
    and each name, value, message or option at least what its line shows, from a second pool as large (so at most
    twice this in all; annotate.js `take`)."""
    seconds: float = 10.0
    """How long the page may take to answer before its running script is ended."""

    def __post_init__(self) -> None:
        if not 1 <= self.depth <= MAX_DEPTH:
            raise ValueError(f"ReadLimits.depth must be between 1 and {MAX_DEPTH} (got {self.depth}): the annotated "
                             "HTML is parsed again by libxml2, which keeps no more than about 2,000 levels")

    def argument(self) -> str:
        """The limits as annotate.js takes them (a JavaScript object literal)."""
        return json.dumps({"depth": self.depth, "nodes": self.elements, "chars": self.chars})

    def unanswered(self) -> str:
        """What the observation of a page that did not answer says."""
        return (f"the page did not answer within {self.seconds:g} s (a script of its own kept it busy, or it is too "
                "large to read in time); nothing of it is shown. The next observation reads it again.")

    def unreadable(self, error: str) -> str:
        """What the observation of a page whose content made the reading itself fail says."""
        return (f"the page could not be read ({flat(error)[:160]}); nothing of it is shown. The next observation "
                "reads it again.")

    def stopped(self) -> str:
        """The notice when a script of the page was ended so that the page could be read."""
        return f"A script of the page kept it busy for over {self.seconds:g} s and was stopped so it could be read."


DEFAULT_LIMITS = ReadLimits()


def _settled(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # read, so that a reading given up on is not reported as never retrieved


async def within_time(reading: Coroutine[Any, Any, T], world: IsolatedWorld, seconds: float) -> tuple[T | None, bool]:
    """The reading's result if it comes within `seconds`; else the script holding the page's thread is ended and the
    reading gets STOP_GRACE_S more. Returns the result (None when it never came, or failed once the script was
    ended: the page did not answer) and whether a script was ended."""
    task = asyncio.ensure_future(reading)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
        if done:
            return task.result(), False
        await world.interrupt(timeout=STOP_GRACE_S)
        done, _ = await asyncio.wait({task}, timeout=STOP_GRACE_S)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()  # it waits on a thread that is still busy; its late answer is not wanted
        task.add_done_callback(_settled)
        return None, True
    try:
        return task.result(), True
    except PlaywrightError:  # the ended script was the reading's own
        return None, True
