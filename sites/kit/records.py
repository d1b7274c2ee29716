"""What a tenant witnesses: the operation log and the mutation journal, as typed records.

These two models are the raw evidence of an episode. Sites write them; the verifier and the
replayer read them. They import nothing of ours but the fault records (`sites.kit.faults`, which
imports nothing of ours either), so that every layer may depend on them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
