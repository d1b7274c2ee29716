"""Governed routes: how a site says which of its requests the broker decides, and what each asks for
(sites/kit/broker.py decides; sites/kit/oplog.py asks it before the handler runs).

Apart from the broker's models, which task files use (its grants), so that reading a task needs none of the web
stack this module imports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol, TypeVar
from urllib.parse import parse_qsl

from sqlmodel import SQLModel
from starlette.datastructures import ImmutableMultiDict
from starlette.responses import HTMLResponse

from sites.kit.broker import BrokerDecision, BrokerRequest

FormFields = ImmutableMultiDict[str, str]
"""A request's form as its handler reads it: `get` gives the last value of a repeated name, as FastAPI gives a `str`
form parameter (so a second `to` cannot hide behind a first one), `getlist` every value, as it gives a list."""

Row = TypeVar("Row", bound=SQLModel)


class Lookup(Protocol):
    """A read-only look-up into the tenant's state as it is before the handler runs: the first `model` row whose
    columns equal `where` (`lookup(Order, number="O-1042")`), or None. What a request asks for may depend on the
    row it acts on (an order's currency, a ticket's customer, the price a product has now)."""

    def __call__(self, model: type[Row], /, **where: object) -> Row | None: ...


Extract = Callable[[re.Match[str], FormFields, Lookup], BrokerRequest | None]
"""From a governed route's path match, its form fields and a look-up of the rows it names, what the request asks
for (None: nothing governed, such as a form that only saves a draft). The operation log calls it in a worker
thread, under the tenant's lock."""


def selection(rows: Sequence[int | None]) -> tuple[int | None, list[int]]:
    """A bulk route's selected rows (each the id the site has for it, None where it has none) as a request names
    them: the one object of a one-row selection, or `several`, each of a larger selection's rows, which a grant's
    `objects` bind one by one. A selection holding a row the site does not have names none, so a grant limited to
    objects refuses it. The rows are read as the handler reads its selection (repeats kept out by the caller)."""
    known = [row for row in rows if row is not None]
    single = known[0] if len(rows) == 1 and known else None
    several = known if len(rows) > 1 and len(known) == len(rows) else []
    return single, several


@dataclass(frozen=True)
class GovernedRoute:
    """A route of a site that a grant governs: `method` and a path pattern matched in full (relative to nothing:
    the whole path, mount point included)."""

    method: str
    path: str
    extract: Extract

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.path)


def form_fields(body: bytes, content_type: str | None) -> FormFields:
    """The fields of an urlencoded form body, every value of a repeated name in order; none for any other body."""
    if (content_type or "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return ImmutableMultiDict()
    return ImmutableMultiDict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))


def blocked_page(decision: BrokerDecision) -> HTMLResponse:
    """What the agent sees of a blocked request: a refusal that names the rule, nothing committed."""
    from sites.kit.pages import message_page  # the kit's pages import the records, which import this module

    reasons = "; ".join(decision.reasons)
    return message_page(status=403, title="Blocked by policy",
                        message=f"This request was not carried out: {reasons}. Nothing was changed.")


def governing(routes: Sequence[GovernedRoute], method: str, path: str) -> tuple[GovernedRoute, re.Match[str]] | None:
    """The governed route that serves a request, with its path match; None when none does."""
    for route in routes:
        if route.method == method and (match := route.pattern.fullmatch(path)) is not None:
            return route, match
    return None
