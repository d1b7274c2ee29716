"""Drives one Playwright page of one episode: observe it as text, and carry out typed actions.

Every action is checked against the latest observation before it touches the page; anything the
driver cannot or may not do comes back as a `Rejection` with a reason the model can read, never as
an exception.

One module (over 400 lines) because it is one class, `PageDriver`: every action's check, execution and settle
share its state (the latest observation, the in-flight requests, the isolated world). What an action may do to a
control and the wordings of its outcomes are adapter/acting.py's; the functions it evaluates in the page,
adapter/page_functions.py's.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Coroutine
from contextlib import suppress
from functools import cache, partial
from importlib.resources import files
from typing import Any, TypeVar
from urllib.parse import urlsplit

from playwright.async_api import ElementHandle, Frame, Page, Request, Response
from playwright.async_api import Error as PlaywrightError

from adapter import guard
from adapter.acting import (
    ActionOutcome,
    at_point,
    bad_point,
    changed_control,
    check_applicable,
    check_state,
    described,
    pixels,
    reject,
    short_error,
    stale,
)
from adapter.actions import (
    Action,
    AnswerDialog,
    Back,
    Check,
    Click,
    Done,
    Drag,
    Fill,
    Hover,
    More,
    Navigate,
    Press,
    Select,
)
from adapter.containment import containment_of
from adapter.dialogs import DIALOG_WAIT_S, DialogEvent, Dialogs
from adapter.inputs import CONSTRAINED_TYPES, Probe, describe_type, fill_problem
from adapter.observation import Control, Observation, PagePart
from adapter.page_functions import (
    CHECKED,
    CLICK_POINT,
    FIELD_VALUE,
    FILL_INTO,
    FILL_READS,
    LOAD_ON_SCROLL,
    LOOKUP,
    SELECT_LABEL,
    ClickPoint,
)
from adapter.reading import DEFAULT_LIMITS, ReadLimits, within_time
from adapter.render import render_observation
from adapter.scope import BadURL, SiteScope
from adapter.stability import wait_for_visual_stability
from adapter.world import IsolatedWorld, ScriptError, world_of
from computerops.core import defaults
from computerops.core.vocabulary import ACTION_HEADER, IDEMPOTENCY_HEADER, idempotency_key

ACTION_TIMEOUT_MS = 5_000
GIVES_INPUT = (Click, Check, Fill, Select, Press, Hover, Drag, AnswerDialog)
"""Actions that give the page the model's input: the page's writes in answer to them are the model's for a while
after the action (adapter/initiative.py LINGER_S)."""
DRAG_STEPS = 5
"""Pointer moves from a drag's press to its release: enough for a page's pointer handlers (a slider follows each)
and for Chromium to begin an HTML5 drag (dragstart) and send dragenter/dragover to the target before the drop."""
NAVIGATION_TIMEOUT_MS = 15_000
SETTLE_TIMEOUT_S = 5.0
LOAD_WAIT_MS = 2_000
"""How long `more` at a list's end waits for the page to load more rows once their sentinel is in view."""
LOAD_QUIET_MS = 150
"""The page has loaded them when its DOM changed and then stayed unchanged this long."""
RENDER_IN_LOOP_CHARS = 8_000
"""Annotated HTML up to this size is rendered on the event loop (a few milliseconds at most); larger, in a thread, so
that a page taking seconds to render does not hold up the other episodes the loop drives."""
CRASHED = ("The page crashed in the browser (its renderer stopped: the page built more than the browser could "
           "handle), so nothing of it can be read or used. Use navigate to open a page of the site again, in a fresh "
           "tab; back has nowhere to go.")
"""What the observation of a crashed page says (adapter/driver.py `_crash_observation`)."""
CRASHED_ACTION = "The page crashed in the browser and cannot be used; use navigate to open a page of the site again."
"""Why any action but navigate is refused on a crashed page."""
T = TypeVar("T")


class PageCrashed(Exception):
    """The page's renderer crashed while it was being read."""


@cache
def annotate_script() -> str:
    """The page-side annotation function (adapter/annotate.js), read once."""
    return files("adapter").joinpath("annotate.js").read_text(encoding="utf-8")


def site_path(url: str, origin: str) -> str:
    """Path and query of a URL on the site's origin; other URLs stay whole."""
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != origin:
        return url
    return parts.path + (f"?{parts.query}" if parts.query else "")


class PageDriver:
    """One episode's page: `observe` renders it, `act` carries out one checked action."""

    def __init__(
        self, page: Page, *, origin: str, site_prefix: str, max_chars: int = defaults.OBSERVATION_CHARS,
        dialog_wait_s: float = DIALOG_WAIT_S, read_limits: ReadLimits = DEFAULT_LIMITS,
        idempotency_prefix: str = "action",
    ) -> None:
        self.page = page
        self.idempotency_prefix = idempotency_prefix
        """What the idempotency key of each action starts with (`computerops.core.vocabulary.idempotency_key`)."""
        self.origin = origin.rstrip("/")
        self.site_prefix = site_prefix
        self.max_chars = max_chars
        self.read_limits = read_limits
        """How much of a page an observation reads, and for how long, at most (adapter/reading.py)."""
        self.latest: Observation | None = None
        self._pending_notices: list[str] = []
        self.dialogs = Dialogs(self.notify, wait_s=dialog_wait_s)
        """The page's JavaScript dialogs (adapter/dialogs.py): the open one waits for the model's `dialog` action."""
        self.dialog_log: list[DialogEvent] = self.dialogs.log
        self._blocked: asyncio.Task[ActionOutcome] | None = None
        """An action stopped by the dialog it opened: it goes on once the dialog is answered."""
        self._part: PagePart | None = None
        """The part of a long page the next observation shows (set by `more`, cleared by any other action)."""
        self._token: str | None = None
        self._inflight: set[Request] = set()
        self._committing: Request | None = None
        """A navigation of the page whose new document has not committed yet."""
        self._quiet = asyncio.Event()
        """Set while no request is in flight and no navigation waits to commit."""
        self._navigations = 0
        self._pointer: tuple[float, float] | None = None
        """Where the driver last left the mouse pointer (top-level viewport coordinates), None before it moved it."""
        self._crashed = asyncio.Event()
        """Set when the page's renderer crashed (`page.on("crash")`): until a `navigate` opens a fresh page, the
        observation says so and every other action is refused."""
        self._watch(page)
        self._check_quiet()

    def _watch(self, page: Page) -> None:
        page.on("dialog", self.dialogs.on_dialog)
        page.on("framenavigated", self._frame_navigated)
        page.on("request", self._request_started)
        page.on("response", self._response)
        page.on("requestfinished", self._request_ended)
        page.on("requestfailed", self._request_failed)
        page.on("crash", self._on_crash)

    def _on_crash(self, page: Page) -> None:
        """The renderer of the page crashed (a page that built more than it can lay out, or ran out of memory): it
        can neither be read nor act, and its dialog and any action it stopped are gone with it."""
        if page is not self.page:
            return
        self._crashed.set()
        self.dialogs.forget()
        if self._blocked is not None:
            self._blocked.cancel()
            self._blocked = None

    async def _recover(self) -> None:
        """Replace the crashed page with a fresh one of the same (contained) context, for the action that follows:
        the crashed one is closed first (Chromium refuses the context's calls while it is there)."""
        crashed = self.page
        with suppress(PlaywrightError):
            await crashed.close()
        page = await crashed.context.new_page()
        self.page = page
        self._inflight.clear()
        self._committing = None
        self._pointer = None
        self._token = None
        self._part = None
        self._crashed.clear()
        self._watch(page)
        self._check_quiet()

    def _crash_observation(self) -> Observation:
        self._report_containment()
        notices, self._pending_notices = self._pending_notices, []
        self.latest = render_observation(
            f"<body><p>{CRASHED}</p></body>", url=site_path(self.page.url, self.origin), title="",
            max_chars=self.max_chars, dialogs=self.dialogs.take_shown(), notices=notices)
        return self.latest

    async def _unless_crashed(self, work: Coroutine[Any, Any, T]) -> T:
        """`work`, unless the page's renderer crashes first (then `PageCrashed`): a crashed page never answers."""
        task = asyncio.ensure_future(work)
        crash = asyncio.ensure_future(self._crashed.wait())
        try:
            await asyncio.wait({task, crash}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            crash.cancel()
        if task.done():
            return task.result()
        task.cancel()
        raise PageCrashed

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

    def notify(self, notice: str) -> None:
        """Tell the model something in the next observation's header (`Notice:` lines), e.g. that a request
        the page made was blocked; notices are shown once."""
        self._pending_notices.append(notice)

    async def observe(self) -> Observation:
        """Render the current page; dialogs raised since the last observation are included. While a dialog waits
        for the model's answer, the page cannot be read: the observation is the dialog (adapter/dialogs.py)."""
        self._window(None)  # the page is the model's to read: what it writes from now is its own
        if self._crashed.is_set():
            return self._crash_observation()
        if self.dialogs.open is None:
            reading = asyncio.ensure_future(self._observe_page())
            if await self.dialogs.until_done_or_open(reading):
                return reading.result()
            reading.cancel()  # it waits on the stopped page
        return self._dialog_observation()

    def _dialog_observation(self) -> Observation:
        self._report_containment()
        notices, self._pending_notices = self._pending_notices, []
        self.latest = render_observation(
            self.dialogs.page_html(), url=site_path(self.page.url, self.origin),
            title=self.latest.title if self.latest else "", max_chars=self.max_chars,
            dialogs=self.dialogs.take_shown(), notices=notices,
        )
        return self.latest

    async def _observe_page(self) -> Observation:
        """Read the page within the read limits, then render it off the event loop (a large page takes seconds to
        render, and the loop drives every other episode meanwhile)."""
        limits = self.read_limits
        failure = None
        try:
            read, stopped = await within_time(self._unless_crashed(self._read_page()), self.world, limits.seconds)
        except ScriptError as error:  # the page's content made the reading fail: an observation saying so
            read, stopped, failure = None, False, str(error)
        except PageCrashed:
            return self._crash_observation()
        dialogs = self.dialogs.take_shown()
        self._report_containment()
        notices, self._pending_notices = self._pending_notices, []
        here = site_path(self.page.url, self.origin)
        if self._part is not None and self.latest is not None and here != self.latest.url:
            self._part = None  # the page went elsewhere on its own: start at its top
        unread = None
        if read is None:  # the page did not answer: an observation that says so, with no controls
            same_page = self.latest is not None and self.latest.url == here
            read, unread = ("<body></body>", self._token, self.latest.title if same_page and self.latest else ""), \
                limits.unanswered() if failure is None else limits.unreadable(failure)
        elif stopped:
            notices.append(limits.stopped())
        html, token, title = read
        self._token = None if token is None else str(token)
        render = partial(render_observation, str(html), url=here, title=str(title), max_chars=self.max_chars,
                         dialogs=dialogs, notices=notices, part=self._part, unread=unread)
        # a small page renders in about a millisecond, less than a hop to a thread and back
        self.latest = render() if len(html) <= RENDER_IN_LOOP_CHARS else await asyncio.to_thread(render)
        return self.latest

    async def _read_page(self) -> tuple[str, str | None, str]:
        """The page's annotated HTML (annotate.js within the read limits), the world's id token and the title."""
        script = (f"(listening) => {{ const html = ({annotate_script()})(listening, {self.read_limits.argument()}); "
                  "return [html, window.__computerops.token, document.title]; }")
        for attempt in range(3):
            try:
                if not self.world.top_frame_loaded:  # else Playwright's wait returns at once, after 3 messages
                    await self.page.wait_for_load_state("domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
                html, token, title = await self.world.annotate(script)
                return str(html), str(token), str(title)
            except PlaywrightError:
                if attempt == 2:
                    raise
                await asyncio.sleep(0.2)  # a navigation replaced the document mid-evaluation
        raise AssertionError("unreachable")  # pragma: no cover

    def _window(self, number: int | None, *, lingers: bool = False) -> None:
        """Open action `number`'s window, or close the open one (None; `lingers`: the action gave the page input):
        writes the page makes outside it are logged as the page's own, with no action number
        (adapter/initiative.py)."""
        guard = containment_of(self.page.context)
        if guard is not None:
            if number is None:
                guard.initiative.end(lingers=lingers)
            else:
                guard.initiative.begin(number)

    async def act(self, action: Action, number: int) -> ActionOutcome:
        """Check and carry out one action; requests it causes carry `X-ComputerOps-Action: number` (writes the
        page's own script makes, not the action, do not: adapter/initiative.py)."""
        outcome = None
        try:
            outcome = await self._act(action, number)
            return outcome
        finally:  # what the page does in answer to the model's input stays the model's a while (initiative.py)
            self._window(None, lingers=outcome is not None and outcome.ok and isinstance(action, GIVES_INPUT))

    async def _act(self, action: Action, number: int) -> ActionOutcome:
        if isinstance(action, Done):
            return reject("not_applicable", "done is handled by the episode loop, not the page.")
        if self._crashed.is_set():
            if not isinstance(action, Navigate):
                return reject("not_applicable", f"{CRASHED_ACTION}")
            await self._recover()  # a fresh page of the same context, and the navigate goes on in it
        if isinstance(action, AnswerDialog):
            return await self._answer(action, number)
        if self.dialogs.open is not None:
            return reject("dialog_open", self.dialogs.waiting())
        if self._blocked is not None:  # an action whose dialog was dismissed unanswered: it finishes first
            if not await self.dialogs.until_done_or_open(self._blocked):
                return reject("dialog_open", self.dialogs.waiting())
            self._blocked = None
        if isinstance(action, More):
            return await self._more(number)
        self._part = None
        acting = asyncio.ensure_future(self._carry_out(action, number))
        if await self.dialogs.until_done_or_open(acting):
            return acting.result()
        self._blocked = acting
        return ActionOutcome(ok=True, note=f"the page opened {self.dialogs.described()} and waits for your "
                                           "answer before it finishes the action")

    async def _answer(self, action: AnswerDialog, number: int) -> ActionOutcome:
        """Answer the open dialog; the action it stopped then goes on (and its own outcome is in the note)."""
        if problem := self.dialogs.problem(action.accept, action.text):
            return reject("not_applicable", problem)
        note = self.dialogs.answer_note(action.accept, action.text)
        navigations_before = self._navigations
        self._window(number)  # what the page sends as it goes on is the answer's (the header follows in `_resume`)
        await self.dialogs.close(accept=action.accept, text=action.text)
        stopped, self._blocked = self._blocked, None
        going_on = asyncio.ensure_future(self._resume(number, stopped))
        if not await self.dialogs.until_done_or_open(going_on):
            self._blocked = going_on
            return ActionOutcome(ok=True, note=f"{note}; the page then opened {self.dialogs.described()} and "
                                               "waits for your answer")
        finished = going_on.result()
        if stopped is not None:
            then = finished.note if finished.ok else (finished.rejection.reason if finished.rejection else "")
            note = f"{note}; then the action it interrupted: {then}" if then else note
        return ActionOutcome(ok=True, note=note, navigated=self._navigations != navigations_before)

    def action_headers(self, number: int) -> dict[str, str]:
        """The headers every request of action `number` carries: its number, and its idempotency key."""
        return {ACTION_HEADER: str(number), IDEMPOTENCY_HEADER: idempotency_key(number, self.idempotency_prefix)}

    async def _resume(self, number: int, stopped: asyncio.Task[ActionOutcome] | None) -> ActionOutcome:
        """After a dialog's answer: the action it stopped finishes, else the page settles. The header is set only
        now (the browser applies it through the page, which the dialog stopped): what the page sends as it resumes,
        in the stopped action's task, still carries that action's number."""
        await self.page.context.set_extra_http_headers(self.action_headers(number))
        if stopped is not None:
            return await stopped
        await self._settle()
        return ActionOutcome(ok=True)

    async def _carry_out(self, action: Navigate | Back | Click | Fill | Select | Check | Press | Hover | Drag,
                         number: int) -> ActionOutcome:
        """Carry out a page action: everything it does may be stopped by a dialog it opens (see `act`)."""
        await self.page.context.set_extra_http_headers(self.action_headers(number))
        navigations_before = self._navigations
        try:
            if isinstance(action, Navigate):
                outcome = await self._navigate(action)
            elif isinstance(action, Back):
                outcome = await self._back()
            else:
                outcome = await self._on_control(action)
        except PlaywrightError as error:
            return reject("execution_error", f"The browser could not do it: {short_error(error)}")
        except (ValueError, TypeError, OverflowError) as error:  # a value of the model's that Python code refused
            return reject("execution_error", f"The action could not be carried out: {short_error(error)}")
        if outcome.ok and self._navigations != navigations_before:
            outcome = outcome.model_copy(update={"navigated": True})
        return outcome

    async def _more(self, number: int) -> ActionOutcome:
        following = self.latest.next_part if self.latest else None
        if following is None and self.latest is not None and self.latest.loads_more:
            return await self._load_on_scroll(number)
        if following is None and self.latest is not None and self.latest.left_out:
            # not "the whole page": the reading stopped at its bounds, and what it left out no part can show
            return reject("not_applicable", "There is no further part of what could be read, but this is not the "
                                             f"whole page: {self.latest.left_out} more cannot show the rest; reach "
                                             "it through the page itself (its search, filters, links or pages).")
        if following is None:
            return reject("not_applicable", "The whole page is already shown; there is no further part.")
        self._part = following
        return ActionOutcome(ok=True, note="showing the next part of the page")

    async def _load_on_scroll(self, number: int) -> ActionOutcome:
        """`more` at the last part of a page whose list loads more as its end scrolls into view: scroll there, wait
        for the page to load (its DOM changed, then quiet; its requests over) and show the same part again, now with
        what loaded. What the page fetches for it carries the action's number, as every action's requests do."""
        try:
            await self.page.context.set_extra_http_headers(self.action_headers(number))
            loaded = await self.world.evaluate(LOAD_ON_SCROLL, [self._token, LOAD_WAIT_MS, LOAD_QUIET_MS],
                                               await_promise=True)
        except PlaywrightError as error:
            return reject("execution_error", f"The page could not be scrolled: {short_error(error)}")
        await self._settle()
        if not loaded.get("sentinels"):
            return reject("not_applicable", "The whole page is already shown, and the list's end that loaded more "
                                             "is gone from it.")
        if loaded.get("changed"):
            return ActionOutcome(ok=True, note="scrolled to the end of the list: the page loaded more")
        return ActionOutcome(ok=True, note=f"scrolled to the end of the list: nothing more loaded within "
                                           f"{LOAD_WAIT_MS / 1000:g} s")

    async def _on_control(self, action: Click | Fill | Select | Check | Press | Hover | Drag) -> ActionOutcome:
        control = self.latest.control(action.id) if self.latest else None
        if control is None:
            return reject(
                "unknown_control",
                f"There is no control [{action.id}] on this page. Use an id from the latest observation.",
            )
        problem = check_applicable(action, control)
        if problem:
            return reject("not_applicable", problem)
        if isinstance(action, Click | Check):
            return await self._click(action, control)
        if isinstance(action, Hover):
            return await self._hover(action, control)
        if isinstance(action, Drag):
            return await self._drag(action, control)
        fill_reads: object = None
        if isinstance(action, Fill):  # the check and the fill's reads in one round trip
            checked = await guard.identity_and(self.world, action.id, self._token, FILL_READS, action.text)
            identity, fill_reads = checked if checked is not None else (None, None)
        else:
            identity = await guard.identity_now(self.world, action.id, self._token)
        if identity is None:
            return stale(action.id)
        if changed := guard.changed(control, identity):
            return changed_control(action.id, changed)
        if isinstance(action, Press):
            return await self._press(action, control)
        if isinstance(action, Fill):
            return await self._fill(action, control, fill_reads)
        return await self._select(action, control)

    async def _press(self, action: Press, control: Control) -> ActionOutcome:
        """A key pressed on the control: it is given the keyboard focus first (adapter/guard.py), and a control that
        cannot take it is refused (the key would go to whatever has the focus, usually the page's body); the key's
        keydown must then be seen to reach it."""
        focus = await guard.focus_for_keys(self.world, action.id, self._token)
        if focus is None:
            return stale(action.id)
        if focus is not True:
            return reject("not_applicable", f"Cannot press keys on [{action.id}]: it cannot take the keyboard focus, "
                                             f"so a key would go to {focus}. Click or drag it instead, or press on a "
                                             "control inside it that takes the focus.")
        try:
            await self.page.keyboard.press(action.key)
        finally:  # an unknown key name raises: the watch ends either way
            seen = None
            with suppress(PlaywrightError):  # the key loaded another document: the watch went with the old one
                seen = await guard.keys_seen(self.world)
        await self._settle()
        if seen is not None and not seen:
            return reject("execution_error", f"The key {action.key} was not seen to reach [{action.id}]: the page "
                                              "kept its events from the driver's check, or moved the focus. What the "
                                              "page did is in the next observation.")
        return ActionOutcome(ok=True, note=f"pressed {action.key} on {described(control)}")

    async def _select(self, action: Select, control: Control) -> ActionOutcome:
        """Select an option by its label, as Playwright's select_option does, on the control's element in the
        isolated world (no Playwright handle to find first)."""
        found = await self.evaluate_on(action.id, SELECT_LABEL, action.option)
        if not isinstance(found, dict) or found.get("problem") == "gone":
            return stale(action.id)
        if "problem" in found:
            return reject("not_applicable", f"Cannot select {action.option!r} in [{action.id}]: {found['problem']}.")
        await self._settle()
        return ActionOutcome(ok=True, note=f"selected {action.option!r} in {described(control)}")

    async def _fill(self, action: Fill, control: Control, reads: object) -> ActionOutcome:
        """Fill a text field with Playwright's fill, and say what it holds afterwards.

        An input whose type constrains its value (adapter/inputs.py) is first asked what it would keep: a value
        it would sanitise away (a date not written YYYY-MM-DD, "1,000" in a number field, 150 on a slider that
        ends at 100) is refused before anything is typed, with the format it takes; a normal form of the same
        value ("2024-06-01 10:30" for a datetime-local) is filled as that form. Afterwards the value is read
        back: a typed input that does not hold what was filled is an execution error; a text field the page or
        browser changed (cut at its maxlength, line breaks of a one-line field, a page's own formatting) is
        filled, and the note says what it holds.

        The fill itself is Playwright's, without a Playwright handle on the element (finding one costs a marker and
        a query in every frame): the element is focused and its content selected in the isolated world
        (FILL_INTO), then the text is typed over the selection with `keyboard.insert_text` (Delete for none);
        an input whose type takes a set value gets it there, with its input and change events. `reads` is what
        FILL_READS found on the element (with the act-time check, in one round trip).
        """
        unfillable, found = reads if isinstance(reads, list) else ("no longer on the page", None)
        if unfillable:  # read in the isolated world: the page cannot forge it
            return reject("not_applicable", f"Cannot fill [{action.id}]: it is {unfillable}. Use press with "
                                             "keys (ArrowUp, ArrowDown, Enter, letters) or click it.")
        probe = None
        text = action.text
        if isinstance(found, dict) and found["type"] in CONSTRAINED_TYPES:
            low, high, step = found["bounds"]
            probe = Probe(input_type=str(found["type"]), asked=str(found["asked"]), kept=str(found["kept"]),
                          is_colour=bool(found["colour"]),
                          bounds=(str(low), str(high), str(step)))
            if problem := fill_problem(probe):
                return reject("not_applicable", f"Cannot fill [{action.id}] with {json.dumps(action.text)}: "
                                                 f"{problem}. Nothing was changed.")
            text = probe.kept if probe.asked else ""
        how = await self.evaluate_on(action.id, FILL_INTO, text)
        if how == "gone":
            return stale(action.id)
        if how == "needsinput":
            if text:
                await self.page.keyboard.insert_text(text)
            else:
                await self.page.keyboard.press("Delete")
        elif how != "done":
            return reject("not_applicable", f"Cannot fill [{action.id}]: it is {how}.")
        await self._settle()
        note = f"filled {described(control)}"
        if text != action.text:
            note += f" with {json.dumps(text)}, the field's form of {json.dumps(action.text)}"
        held: object = None
        with suppress(PlaywrightError):  # the fill may have submitted a form: the document is gone
            held = await self.evaluate_on(action.id, FIELD_VALUE)
        if not isinstance(held, list):  # an editing host, or gone
            return ActionOutcome(ok=True, note=note)
        value, max_length = str(held[0]), int(held[1])
        expected = text.replace("\r\n", "\n").replace("\r", "\n")  # a field's value has \n line breaks
        if value == expected:
            return ActionOutcome(ok=True, note=note)
        if probe is not None:
            return reject("execution_error", f"[{action.id}] holds {json.dumps(value)} after the fill, not "
                                              f"{json.dumps(text)}: it is {describe_type(probe.input_type)}.")
        if 0 <= max_length < len(expected) and value == expected[:max_length]:
            return ActionOutcome(ok=True, note=f"{note}; it keeps at most {max_length} characters and holds "
                                               f"{json.dumps(value)}")
        return ActionOutcome(ok=True, note=f"{note}; it holds {json.dumps(value)}")

    async def _click(self, action: Click | Check, control: Control) -> ActionOutcome:
        """A click with real mouse events where the control (or the label it hides under) is hit;
        `check` clicks only when the state differs, then verifies the state it asked for."""
        if isinstance(action, Check) and await self._checked(action.id) == action.checked:
            return ActionOutcome(ok=True, note=f"{described(control)} was already {check_state(action.checked)}")
        at = action.point if isinstance(action, Click) else None
        if bad := bad_point(at):
            return reject("malformed_arguments", f"Cannot click [{action.id}]{at_point(at)}: {bad}.")
        point = await self.click_point(action.id, at=at)
        if point is None:
            return stale(action.id)
        if isinstance(point, str):
            return reject("not_applicable", f"Control [{action.id}] cannot be clicked{at_point(at)} now: {point}.")
        identity = await guard.arm(self.world, action.id, self._token, point.label)
        if identity is None:
            return stale(action.id)
        if changed := guard.changed(control, identity):
            await guard.disarm(self.world, control)
            return changed_control(action.id, changed)
        await self.page.mouse.click(point.x, point.y)
        self._pointer = (point.x, point.y)
        report = None
        with suppress(PlaywrightError):  # the click loaded another document: the guard went with the old one
            report = await guard.disarm(self.world, control)
        pressed = ""
        if report is not None and report.stopped is not None:
            await self._settle()  # what the page did as the pointer came is over before it is observed
            if report.reaction is None:
                return changed_control(action.id, f"{report.stopped}. The click was stopped there and reached "
                                                  "nothing")
            # The press reached the control and the page answered it (a field that moves a cover over itself as it
            # takes the focus): acted on, and the rest of the click, which would land on the cover, was held back.
            pressed = (f"; the press reached it and {report.reaction}, then {report.stopped}: that event and the "
                       "rest of the click were held back")
        else:
            await self._settle()
        if report is not None and "click" not in report.seen and not pressed:
            return reject("execution_error", f"The click on [{action.id}] was not seen to reach it: the page kept "
                                              "its events from the driver's check. What the page did is in the next "
                                              "observation.")
        if isinstance(action, Click):
            return ActionOutcome(ok=True, note=f"{'pressed' if pressed else 'clicked'} {described(control)}"
                                               f"{at_point(at)}{pressed}")
        if await self._checked(action.id) != action.checked:
            return reject("execution_error", f"Clicking [{action.id}] did not make it {check_state(action.checked)}.")
        return ActionOutcome(ok=True, note=f"{check_state(action.checked)} {described(control)}")

    async def click_point(self, control_id: str, at: tuple[float, float] | None = None,
                          scroll: bool = True) -> ClickPoint | str | None:
        """Where a click on the control lands (see CLICK_POINT): at the point `at` of its box (fractions across and
        down) when given; a reason when nothing of it (or not that point) can be clicked; None when the id no
        longer names an element on the page. With scroll false, nothing is scrolled: a control out of view is a
        reason.

        The click itself then goes through real mouse events at that point: what a person's click does,
        without Playwright's extra actionability round trips.
        """
        if self._token is None:
            return None
        if bad := bad_point(at):
            return bad
        found = await self.world.evaluate(CLICK_POINT, [control_id, self._token, at and list(at), scroll])
        if found.get("stale"):
            return None
        if "problem" in found:
            return str(found["problem"])
        return ClickPoint(x=float(found["x"]), y=float(found["y"]), label=found["label"])

    async def _hover(self, action: Hover, control: Control) -> ActionOutcome:
        """The mouse pointer moved onto the control where a click would land, with a real mouse move; its arrival
        is guarded (adapter/guard.py): a page that puts something over the control as the pointer comes is refused,
        and those events held back."""
        point = await self.click_point(action.id)
        if point is None:
            return stale(action.id)
        if isinstance(point, str):
            return reject("not_applicable", f"The pointer cannot be put over [{action.id}] now: {point}.")
        identity = await guard.arm(self.world, action.id, self._token, point.label, guard.HOVER_EVENTS)
        if identity is None:
            return stale(action.id)
        if changed := guard.changed(control, identity):
            await guard.disarm(self.world, control, "hover")
            return changed_control(action.id, changed)
        already = self._pointer == (point.x, point.y)
        await self.page.mouse.move(point.x, point.y)
        self._pointer = (point.x, point.y)
        report = None
        with suppress(PlaywrightError):  # the page loaded another document as the pointer came
            report = await guard.disarm(self.world, control, "hover")
        await self._settle()
        if report is not None and report.stopped is not None:
            return changed_control(action.id, f"{report.stopped}. The pointer's events were stopped there")
        if report is not None and not report.seen and not already:
            return reject("execution_error", f"The pointer was not seen to reach [{action.id}]: the page kept its "
                                              "events from the driver's check. What the page did is in the next "
                                              "observation.")
        return ActionOutcome(ok=True, note=f"the pointer is over {described(control)}")

    async def _drag(self, action: Drag, control: Control) -> ActionOutcome:
        """Press the mouse where a click on the control would land, move it in DRAG_STEPS real moves and release
        it: over `to_id` (where a click on it would land, or at the point x, y of its box), at a point of the
        control's own box, or dx, dy pixels away. The release point is found (and hit-tested on its control)
        before the press, with both points in the window at once; the press is guarded like a click's
        (adapter/guard.py), and the drag goes on only when it reached the control."""
        if bad := bad_point(action.point):
            return reject("malformed_arguments", f"Cannot drag [{action.id}]{at_point(action.point)}: {bad}.")
        target = control
        if action.to_id is not None:
            found = self.latest.control(action.to_id) if self.latest else None
            if found is None:
                return reject("unknown_control", f"There is no control [{action.to_id}] on this page to drag to. "
                                                  "Use an id from the latest observation.")
            target = found
        start = await self.click_point(action.id)
        if start is None:
            return stale(action.id)
        if isinstance(start, str):
            return reject("not_applicable", f"Control [{action.id}] cannot be dragged now: {start}.")
        if action.dx is not None or action.dy is not None:
            end = (start.x + (action.dx or 0.0), start.y + (action.dy or 0.0))
            if not all(math.isfinite(v) for v in end):
                return reject("malformed_arguments", "A drag's dx and dy are numbers of pixels.")
            width, height = await self.world.evaluate("() => [window.innerWidth, window.innerHeight]")
            if not (0 <= end[0] < width and 0 <= end[1] < height):
                return reject("not_applicable", f"A drag of [{action.id}] by {pixels(action)} would end outside "
                                                 f"the window ({width} x {height} px); nothing was dragged.")
        else:
            release = await self.click_point(target.id, at=action.point)
            if release is None:
                return stale(target.id)
            if isinstance(release, str):
                return reject("not_applicable", f"A drag cannot end over [{target.id}]{at_point(action.point)} now: "
                                                 f"{release}.")
            start = await self.click_point(action.id, scroll=False)  # bringing the target into view may hide it
            if start is None:
                return stale(action.id)
            if isinstance(start, str):
                return reject("not_applicable", f"[{action.id}] and where the drag ends do not show in the window "
                                                 f"together ([{action.id}]: {start}); nothing was dragged.")
            end = (release.x, release.y)
        if math.dist((start.x, start.y), end) < 1:
            return reject("not_applicable", f"The drag would end where it begins, on [{action.id}]; click it instead, "
                                             "or give another place to drag it to.")
        if target is not control:
            now = await guard.identity_now(self.world, target.id, self._token)
            if now is None:
                return stale(target.id)
            if changed := guard.changed(target, now):
                return changed_control(target.id, changed)
        identity = await guard.arm(self.world, action.id, self._token, start.label)
        if identity is None:
            return stale(action.id)
        if changed := guard.changed(control, identity):
            await guard.disarm(self.world, control, "drag")
            return changed_control(action.id, changed)
        mouse = self.page.mouse
        await mouse.move(start.x, start.y)
        await mouse.down()
        self._pointer = (start.x, start.y)
        pressed = None
        with suppress(PlaywrightError):  # the press loaded another document
            pressed = await guard.peek(self.world, control, "drag")
        # A page that cancels the pointerdown (a sortable list's) keeps the mousedown from being dispatched at all.
        if pressed is None or pressed.stopped is not None or not {"pointerdown", "mousedown"} & set(pressed.seen):
            await mouse.up()  # where it was pressed; a stopped press's release is held back too
            with suppress(PlaywrightError):
                await guard.disarm(self.world, control, "drag")
            await self._settle()
            if pressed is not None and pressed.stopped is not None:
                return changed_control(action.id, f"{pressed.stopped}. The drag was stopped there and moved nothing")
            if pressed is None:
                return reject("execution_error", f"Pressing the mouse on [{action.id}] loaded another page; "
                                                  "nothing was dragged.")
            return reject("execution_error", f"The press on [{action.id}] was not seen to reach it: the page kept "
                                              "its events from the driver's check; nothing was dragged.")
        await guard.disarm(self.world, control, "drag")
        await mouse.move(end[0], end[1], steps=DRAG_STEPS)
        await mouse.up()
        self._pointer = end
        await self._settle()
        if action.dx is not None or action.dy is not None:
            onto = f"by {pixels(action)}"
        elif target is control:
            onto = f"to a point of its own box{at_point(action.point)}"
        else:
            onto = f"onto {described(target)}{at_point(action.point)}"
        return ActionOutcome(ok=True, note=f"dragged {described(control)} {onto}")

    async def _checked(self, control_id: str) -> bool | None:
        return await self.world.evaluate(CHECKED, [control_id, self._token])  # type: ignore[no-any-return]

    @property
    def world(self) -> IsolatedWorld:
        """The page's isolated world (adapter/world.py): the annotation, the ids and every lookup live there."""
        return world_of(self.page)

    async def element(self, control_id: str) -> ElementHandle | None:
        """A Playwright handle on the live element of a control id, from whichever same-origin frame holds it;
        None when the id no longer resolves (or the page moved the marker the handle is found by)."""
        if self._token is None:
            return None
        return await self.world.element(LOOKUP, [control_id, self._token])

    async def evaluate_on(self, control_id: str, function: str, arg: object = None) -> object:
        """`function(element, arg)` (JavaScript source) on a control's element, in the isolated world, by value;
        the function gets null when the id no longer resolves. For reading a control's state where page script
        cannot forge the answer."""
        call = f"([id, token, arg]) => ({function})(({LOOKUP})([id, token]), arg)"
        return await self.world.evaluate(call, [control_id, self._token, arg])

    @property
    def scope(self) -> SiteScope:
        """The site this driver may navigate to (adapter/scope.py)."""
        return SiteScope(self.origin, self.site_prefix)

    async def _navigate(self, action: Navigate) -> ActionOutcome:
        """Go to the model's URL, read as the browser reads it (adapter/scope.py), if it is a page of the site."""
        scope = self.scope
        try:
            target = scope.navigation_target(action.url, self.page.url)
        except BadURL as bad:
            return reject("malformed_arguments", f"Cannot navigate: {bad}. Give a path such as {self.site_prefix}")
        problem = scope.problem(target)
        if problem is not None:
            asked = action.url if len(action.url) <= 100 else action.url[:99] + "…"
            return reject("off_site", f"{asked} is not a page of this site: {problem}. "
                                       f"Only paths under {self.site_prefix} on this origin are allowed.")
        await self.page.goto(target, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        await self._settle()
        return ActionOutcome(ok=True, note=f"navigated to {site_path(self.page.url, self.origin)}")

    def _report_containment(self) -> None:
        """Pass on to the model what the context's containment stopped since the last observation."""
        guard = containment_of(self.page.context)
        for notice in guard.take_notices() if guard is not None else []:
            self.notify(notice)

    async def _back(self) -> ActionOutcome:
        can_go_back = await self.world.evaluate("() => Boolean(window.navigation?.canGoBack)")
        if not can_go_back:
            return reject("not_applicable", "There is no previous page to go back to.")
        await self.page.go_back(wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        await self._settle()
        return ActionOutcome(ok=True, note=f"went back to {site_path(self.page.url, self.origin)}")

    async def start(self, url: str) -> None:
        """Open the episode's start page (`url`, on the site) as action 0, the harness's before the model's first:
        like a `navigate`, so that a dialog the page raises as it loads reaches the first observation (an alert in
        its header, a confirm or prompt open and waiting for the model's answer) instead of being dismissed unseen,
        and the writes its script makes are the page's own (adapter/initiative.py). Raises PlaywrightError when the
        browser could not load it (an infrastructure failure); a failure after a dialog stopped the load is the
        answer's note."""
        await self.page.context.set_extra_http_headers(self.action_headers(0))
        try:
            loading = asyncio.ensure_future(self._open(url))
            if not await self.dialogs.until_done_or_open(loading):
                self._blocked = loading  # the first observation is the dialog; the load goes on once it is answered
                return
            outcome = loading.result()
        finally:
            self._window(None)
        if outcome.rejection is not None:
            raise PlaywrightError(outcome.rejection.reason)

    async def _open(self, url: str) -> ActionOutcome:
        try:
            await self.page.goto(url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        except PlaywrightError as error:
            return reject("execution_error", f"The browser could not open the start page: {short_error(error)}")
        await self._settle()
        return ActionOutcome(ok=True, note=f"opened {site_path(self.page.url, self.origin)}")

    async def settle(self) -> None:
        """Wait until the page is settled, as after every action: for a page opened by other means (the
        episode's start page, a test's goto), before its first observation."""
        await self._settle()

    async def _settle(self) -> None:
        """Wait until what the action started is over: a navigation it began has reached DOMContentLoaded, the
        requests it started have finished (event-driven, bounded by SETTLE_TIMEOUT_S), and the page's animations
        and transitions that move, size, show or hide boxes have ended (bounded by VISUAL_SETTLE_S each time;
        adapter/stability.py). On a page with no request and no animation that is one round trip."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_TIMEOUT_S
        while True:
            # A round trip through the page's task queue: a navigation or fetch the action scheduled has begun
            # (its request is in flight) by the time it returns, or the old document is gone; in the same trip,
            # the wait for the animations running then. In the isolated world: page script cannot stall it.
            await wait_for_visual_stability(self.page, after_a_task=True)
            with suppress(PlaywrightError, TimeoutError):  # a round trip on Playwright's own session (the world's is
                # another): the request events of that task have reached the driver before `_quiet` is read. The
                # document's title, read in Playwright's utility world: no selector engine to install in a new
                # document (a locator's first query there costs ~30 ms), nothing the page can stall or forge
                await asyncio.wait_for(self.page.title(), timeout=NAVIGATION_TIMEOUT_MS / 1000)
            try:
                await self.page.wait_for_load_state("domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
            except PlaywrightError:
                return
            remaining = deadline - loop.time()
            if self.world.top_frame_loading and remaining > 0:
                # a navigation the task asked for, whose request the browser may not have made yet (adapter/world.py)
                await self.world.until_top_frame_loaded(remaining)
                continue
            if self._quiet.is_set():
                return
            if remaining <= 0:
                return
            with suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), timeout=remaining)
