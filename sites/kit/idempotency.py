"""Idempotency keys: a repeat of a committed keyed request gets the committed result back and commits nothing.

The adapter sends an `Idempotency-Key` with every request of an action (`computerops.core.vocabulary`). For an
effectful request (any method but GET and HEAD) the operation log asks `earlier_commit` whether an earlier operation
of the tenant with the same key and the same request (method, path as sent, query, content type, body) committed;
if one did, it answers with the response stored for that operation (`remember`: the handler's own, kept before an
after-commit fault replaced what went out, so a retry after an ambiguous timeout learns the real result) and runs no
handler, broker or fault. Every other keyed request runs as usual. Both operations are logged: the repeat with
`repeat_of`. `committed_under` tells another process, from the tenant's database alone, what committed under a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, select
from starlette.responses import Response

from sites.kit.bookkeeping import committed_response_table, operation_table

MAX_KEY_CHARS = 128
"""Longest idempotency key accepted (a longer one is refused with 400 before any work)."""
_KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY_CHARS}}}")
SAFE_METHODS = frozenset({"GET", "HEAD"})
"""Methods that commit nothing by design: a key they carry is recorded, and they always run."""


def key_of(raw: str | None) -> str | Literal["invalid"] | None:
    """The key an `Idempotency-Key` header carries: None without one, "invalid" for a value that is not 1 to
    MAX_KEY_CHARS visible ASCII characters (0x21-0x7E, so no spaces or control characters)."""
    if raw is None:
        return None
    return raw if _KEY.fullmatch(raw) else "invalid"


@dataclass(frozen=True)
class KeyedRequest:
    """An effectful request under a key, as the operation log records it: two are the same request when every
    field is equal."""

    key: str
    method: str
    path: str
    raw_path: str | None
    query: str
    content_type: str | None
    body: str


@dataclass(frozen=True)
class StoredResponse:
    """The handler's response of a committed keyed operation: what a repeat of it gets back, byte for byte."""

    status: int
    location: str | None
    content_type: str | None
    body: bytes

    def response(self) -> Response:
        """The stored response, to send again (with the same status, location, content type and body)."""
        headers = {name: value for name, value in (("location", self.location), ("content-type", self.content_type))
                   if value is not None}
        return Response(self.body, status_code=self.status, headers=headers)


class CommittedEffect(BaseModel):
    """An operation that committed under a key (journal rows, and not itself a repeat)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int
    action: int | None
    method: str
    path: str
    status: int
    location: str | None
    journal_rows: int


_operation, _response = operation_table.c, committed_response_table.c
_COMMITTED = (_operation.journal_rows > 0) & _operation.repeat_of.is_(None)


def earlier_commit(connection: Connection, request: KeyedRequest) -> tuple[int, StoredResponse] | None:
    """The first operation that committed the same request under the same key, with its stored response; None when
    there is none (a new key, another request under the key, or earlier attempts that committed nothing)."""
    statement = (
        select(_operation.seq, _response.status, _response.location, _response.content_type, _response.body)
        .join_from(operation_table, committed_response_table, _response.seq == _operation.seq)
        .where(_COMMITTED, _operation.idempotency_key == request.key, _operation.method == request.method,
               _operation.path == request.path, _operation.raw_path.is_not_distinct_from(request.raw_path),
               _operation.query == request.query,
               _operation.content_type.is_not_distinct_from(request.content_type), _operation.body == request.body)
        .order_by(_operation.seq)
        .limit(1)
    )
    row = connection.execute(statement).first()
    if row is None:
        return None
    return row.seq, StoredResponse(status=row.status, location=row.location, content_type=row.content_type,
                                   body=bytes(row.body))


def remember(connection: Connection, seq: int, response: StoredResponse) -> None:
    """Keep the response of operation `seq`, a keyed effectful operation that committed, for its repeats."""
    connection.execute(committed_response_table.insert().values(
        seq=seq, status=response.status, location=response.location, content_type=response.content_type,
        body=response.body))


def committed_under(connection: Connection, key: str) -> CommittedEffect | None:
    """The first operation that committed under `key` (journal rows, not a repeat), or None: for a reader that has
    only the tenant's database (another process, after the episode)."""
    statement = (
        select(_operation.seq, _operation.action, _operation.method, _operation.path, _operation.status,
               _operation.location, _operation.journal_rows)
        .where(_COMMITTED, _operation.idempotency_key == key)
        .order_by(_operation.seq)
        .limit(1)
    )
    row = connection.execute(statement).mappings().first()
    return None if row is None else CommittedEffect.model_validate(dict(row))
