"""What each fault class does to an operation, applied by the operation middleware.

`refusal` gives the response that replaces the handler for the classes that never reach it (the
operation commits nothing); `after_commit` the response that replaces the handler's own after it
committed; `SchemaDrift` keeps a renamed form field renamed for the rest of the episode; `StaleReads`
remembers page bodies so a stale read can serve the page as it was before the latest change. Every
response here is a function of the recorded request and the earlier operations only, so replay
reproduces it byte for byte. `docs/faults.md` states each class's semantics.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode

from starlette.responses import HTMLResponse

from sites.kit.faults import FaultDecision, FaultInjector
from sites.kit.pages import KIT_PAGES
from sites.kit.records import Shown
from sites.kit.site import SiteDefinition

SITE_COOPERATIVE = frozenset({"partial_success", "duplicate_delivery", "out_of_order"})
"""Classes that only a site's own handlers can carry out (`SiteDefinition.fault_support`)."""
T = TypeVar("T")

RUNS_HANDLER = frozenset({"ambiguous_after_commit", "false_success", "stale_read"}) | SITE_COOPERATIVE
"""Classes whose operation still reaches the site's handler (the rest are answered without it)."""


def committed_part(fault: FaultDecision | None, batch: list[T]) -> list[T]:
    """The items of a batch a site commits: all of them, or under `partial_success` only the first
    `params.commit`; the site then answers an error page instead of its usual one."""
    if fault is None or fault.fault != "partial_success":
        return batch
    return batch[: int(fault.params.get("commit", "1"))]


def as_delivered(
    items: Iterable[T], fault: FaultDecision | None, param: str, key: Callable[[T], str]
) -> list[tuple[T, bool]]:
    """A site's inbox or queue as delivered: (item, delivered again). Under `duplicate_delivery` the item whose
    `key` is `params[param]` is listed a second time (the same item); under `out_of_order` it is left out, as if
    it had not arrived yet."""
    target = None if fault is None else fault.params.get(param)
    rows: list[tuple[T, bool]] = []
    for item in items:
        if fault is not None and fault.fault == "out_of_order" and key(item) == target:
            continue
        rows.append((item, False))
        if fault is not None and fault.fault == "duplicate_delivery" and key(item) == target:
            rows.append((item, True))
    return rows


def _page(status: int, title: str, message: str, link: str | None = None, link_text: str = "",
          headers: dict[str, str] | None = None) -> HTMLResponse:
    body = KIT_PAGES.text("kit/fault.html", title=title, message=message, link=link, link_text=link_text)
    # A browser may keep some error pages (a 410 among them) and never ask again: fault pages are not stored,
    # so whether the next attempt is faulted is decided by the server, as the rule says.
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store", **(headers or {})})


def timeout_page() -> HTMLResponse:
    """The ambiguous answer: the same page whether or not the change was saved."""
    return _page(504, "Request timed out", "The server did not answer in time. It is not known whether your "
                 "request was carried out.")


def refusal(fired: FaultDecision, site: SiteDefinition, method: str, path: str) -> HTMLResponse | None:
    """The response that replaces the handler for a class that never reaches it; None for the others."""
    fault = fired.fault
    if fault in RUNS_HANDLER or fault == "schema_drift":
        return None
    if fault == "transient_5xx" or (fault == "recovery_loop_trap" and fired.params.get("phase") != "missing"):
        return _page(503, "Service unavailable", "The service is temporarily unavailable. Nothing was saved.")
    if fault == "throttling":
        wait = fired.params.get("retry_after", "1")
        return _page(429, "Too many requests", f"Too many requests. Wait {wait} s and try again. Nothing was "
                     "saved.", headers={"Retry-After": wait})
    if fault == "ambiguous_without_commit":
        return timeout_page()
    if fault == "spurious_validation":
        return _page(422, "Form not accepted", "The form could not be validated. Check the values and submit "
                     "it again.")
    if fault == "version_conflict":
        return _page(409, "Edit conflict", "This record was changed by someone else since you loaded it. Reload "
                     "the page and make your change again. Nothing was saved.")
    if fault == "session_expiry":
        return _page(401, "Session expired", "Your session expired before this request; it was not carried "
                     "out. Continue to start a new session, then repeat what you were doing.",
                     link=site.start_path, link_text="Continue")
    if fault == "moved_endpoint":
        fallback = fired.params.get("fallback", site.start_path)
        return _page(410, "Page moved", f"{path} has moved and is no longer available here.", link=fallback,
                     link_text="Go to the new page")
    # missing_resource, and the loop trap's other phase
    return _page(404, "Not found", f"{path} was not found.")


def _form_changed(field: str, renamed_to: str) -> HTMLResponse:
    return _page(422, "Form changed", f"The form has changed: the field \"{field}\" is now \"{renamed_to}\". Reload "
                 "the form and submit it again. Nothing was saved.")


def refusal_of_drift(fired: FaultDecision) -> HTMLResponse:
    """The operation on which a schema drift fires: refused, whatever it sent, because the form changed."""
    return _form_changed(fired.params.get("field", ""), fired.params.get("renamed_to", ""))


def after_commit(fired: FaultDecision) -> HTMLResponse | None:
    """The response that replaces the handler's own once the operation committed; None if it is kept."""
    return timeout_page() if fired.fault == "ambiguous_after_commit" else None


class SchemaDrift:
    """A form field renamed for the rest of the episode once a schema_drift fault fired on its form's route.

    Params: `field` (old name), `renamed_to` (new name), optional `label` / `new_label` (shown text).
    While active, pages show the new name, a submission with the new name reaches the handler under the
    old one, and a submission with the old name is refused (422) with a message naming both.
    """

    def __init__(self) -> None:
        self.active: list[dict[str, str]] = []

    def activate(self, fired: FaultDecision) -> None:
        if fired.params not in self.active:
            self.active.append(dict(fired.params))

    def refusal(self, body: bytes) -> HTMLResponse | None:
        """A 422 when the submission still uses a renamed field's old name."""
        names = {name for name, _ in parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True)}
        for drift in self.active:
            if drift["field"] in names:
                return _form_changed(drift["field"], drift["renamed_to"])
        return None

    def translate(self, body: bytes) -> bytes:
        """The submission with renamed fields under the names the handler knows."""
        if not self.active:
            return body
        renames = {drift["renamed_to"]: drift["field"] for drift in self.active}
        pairs = parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True)
        return urlencode([(renames.get(name, name), value) for name, value in pairs]).encode()

    def rewrite(self, html: bytes) -> bytes:
        """A page with every renamed field (and its label text, when given) under its new name."""
        text = html.decode("utf-8", errors="replace")
        for drift in self.active:
            text = re.sub(rf'name="{re.escape(drift["field"])}"', f'name="{drift["renamed_to"]}"', text)
            if drift.get("label") and drift.get("new_label"):
                text = text.replace(f">{drift['label']}</label>", f">{drift['new_label']}</label>")
        return text.encode("utf-8")


@dataclass(frozen=True)
class Served:
    """A page body as served, with what it showed (its `as_of` the operation that rendered it)."""

    body: bytes
    shown: Shown


class StaleReads:
    """Page bodies by path and query, as first served after the latest change: a stale read serves the
    body that was current before the latest committed change, if the page was seen then, with what it showed."""

    def __init__(self) -> None:
        self._current: dict[str, tuple[int, Served]] = {}
        self._previous: dict[str, Served] = {}
        self.generation = 0
        """Count of operations that committed a change so far."""

    def stale(self, key: str) -> Served | None:
        """The page of `key` from before the latest change, or None when there is none to serve."""
        seen = self._current.get(key)
        if seen is not None and seen[0] < self.generation:
            return seen[1]
        return self._previous.get(key)

    def remember(self, key: str, served: Served) -> None:
        seen = self._current.get(key)
        if seen is not None and seen[0] < self.generation:
            self._previous[key] = seen[1]
        self._current[key] = (self.generation, served)

    def changed(self) -> None:
        self.generation += 1


class FaultSession:
    """The fault state of one tenant: its decisions, and what fired faults leave behind."""

    def __init__(self, injector: FaultInjector) -> None:
        self.injector = injector
        self.drift = SchemaDrift()
        self.stale = StaleReads()
