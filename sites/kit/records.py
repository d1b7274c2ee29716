"""What a tenant witnesses: the operation log and the mutation journal, as typed records.

These two models are the raw evidence of an episode. Sites write them; the verifier and the
replayer read them. They import nothing of ours but the fault records (`sites.kit.faults`, which
imports nothing of ours either), so that every layer may depend on them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sites.kit.broker import BrokerDecision
from sites.kit.faults import FaultDecision

Row = dict[str, Any]
"""One database row as JSON-normal values (ints, strings, bools, None)."""

StateSnapshot = dict[str, list[Row]]
"""Every task-relevant table of a tenant, rows sorted by primary key."""

ChangeKind = Literal["insert", "update", "delete"]


class JournalEntry(BaseModel):
    """One row change, written by the session hook in the same transaction as the change."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int
    """Position in the tenant's journal, from 1."""
    operation: int
    """Sequence number of the operation (HTTP request) that caused the change."""
    logical_time: int
    table: str
    key: Row
    """Primary key of the changed row."""
    change: ChangeKind
    before: Row | None
    """Column values before the change (None for an insert)."""
    after: Row | None
    """Column values after the change (None for a delete)."""

    def changed_fields(self) -> list[str]:
        """Columns whose value differs between before and after (all columns for insert/delete)."""
        before = self.before or {}
        after = self.after or {}
        return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


Scalar = str | int | float | bool | None


class ShownRows(BaseModel):
    """Rows of one table a response displayed, with the columns it displayed of each (the same for all of them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table: str
    fields: list[str]
    """The columns shown, sorted."""
    key: list[str]
    """The primary key's columns, in the table's order."""
    rows: list[list[Scalar]]
    """Each row's primary key values (in `key` order), sorted."""


class ShownListing(BaseModel):
    """A list a response displayed whole: every row of `table` whose columns equal `where` was on it (with nothing
    left out by another filter, a limit or the template), so the page showed those rows or their absence.

    A `searched` list is one whose filter is no set of equalities (a search: "number or customer's name contains
    Tara Nowak"): it showed every row its filter held, but the filter cannot be stated, so it shows the absence of
    a set of rows only where each of them was on it (`verifier.seen`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table: str
    where: dict[str, Scalar]
    searched: bool = Field(default=False, exclude_if=lambda value: not value)


class Shown(BaseModel):
    """What one response displayed of the tenant's data: rows with the columns shown, whole lists, and the named
    documents (static policy or rule texts) a page rendered. Recorded by the kit as pages render."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    records: list[ShownRows] = Field(default_factory=list, exclude_if=lambda value: not value)
    listings: list[ShownListing] = Field(default_factory=list, exclude_if=lambda value: not value)
    documents: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    """Names of static texts the page showed (a policy, the escalation rules), each rendered where it appears."""
    as_of: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """The operation whose rendering this response served again (a stale copy): the data is as of then. None: as
    of this operation."""

    def is_empty(self) -> bool:
        return not (self.records or self.listings or self.documents)


class Operation(BaseModel):
    """One HTTP request of a tenant, as logged by the operation middleware."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int
    """Position in the tenant's operation log, from 1; also the logical time of the request."""
    action: int | None
    """The adapter action number that caused the request (from the X-ComputerOps-Action header)."""
    method: str
    path: str
    """The request path, percent-escapes decoded (as routes see it)."""
    raw_path: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The path exactly as sent when that differs from `path` (it held percent-escapes); replay sends this one.
    Left out of the evidence when None, so operations of ordinary paths are written as before it existed."""
    query: str
    content_type: str | None
    body: str
    """Request body as text (forms are urlencoded)."""
    status: int
    location: str | None
    """Redirect target, when the response is a redirect."""
    response_digest: str
    """sha256 hex of the response body bytes."""
    journal_rows: int
    """Number of journal entries this operation caused."""
    fault: FaultDecision | None = None
    """The fault decided for this operation, if any (`applied`: whether it fired); replay forces the same."""
    app: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The site's app that served the request (`SiteDefinition.apps`), for sites made of several apps."""
    shown: Shown | None = Field(default=None, exclude_if=lambda value: value is None)
    """What the response displayed (`Shown`). None only in evidence recorded before ComputerOps recorded it."""
    destination: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """How the browser was to use the response (its `Sec-Fetch-Dest`: `image`, `script`, `empty` for fetch()...) when
    that was not as a document (`computerops.core.vocabulary.DISPLAYED_DESTINATIONS`); replay sends it again. Such a
    response (an `<img>` or a fetch() of a page) displays nothing, so its `shown` is empty. None for a document, and
    for a client that did not say (in-process clients, replay of a document)."""
    broker: BrokerDecision | None = Field(default=None, exclude_if=lambda value: value is None)
    """The broker's decision on a request to a route a grant governs (sites/kit/broker.py), in an episode with
    grants; None for every other request. A blocked request never reached its handler and committed nothing."""
    oversized: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    """True when the request body was over the operation log's bound: refused with 413 before any handler ran, and
    its body not kept (replay sends a body over the bound again)."""
    idempotency_key: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The `Idempotency-Key` header the request carried (the adapter sends one per action), whatever its method;
    replay sends it again. None without one, and in evidence recorded before keys existed."""
    repeat_of: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """The seq of the committed operation whose result this one returned: a repeat of a committed keyed request
    (same key, method, path as sent, query, content type and body) is answered with the stored committed response
    and commits nothing (sites/kit/idempotency.py). None for every other request."""
