"""Bookkeeping tables that every tenant database holds next to the site's own tables.

They record the episode (journal, operation log) and are never task-relevant: snapshots and the
journal hook skip every table named in `BOOKKEEPING_TABLES`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Boolean, Column, Integer, LargeBinary, MetaData, String, Table, Text

from sites.kit.clock import format_time
from sites.kit.records import Row

BOOKKEEPING = MetaData()

journal_table = Table(
    "_journal",
    BOOKKEEPING,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("operation", Integer, nullable=False, index=True),
    Column("logical_time", Integer, nullable=False),
    Column("table", String, nullable=False),
    Column("key", Text, nullable=False),
    Column("change", String, nullable=False),
    Column("before", Text, nullable=True),
    Column("after", Text, nullable=True),
)

operation_table = Table(
    "_operation",
    BOOKKEEPING,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("action", Integer, nullable=True),
    Column("method", String, nullable=False),
    Column("path", Text, nullable=False),
    Column("raw_path", Text, nullable=True),
    Column("query", Text, nullable=False),
    Column("content_type", Text, nullable=True),
    Column("body", Text, nullable=False),
    Column("status", Integer, nullable=False),
    Column("location", Text, nullable=True),
    Column("response_digest", String, nullable=False),
    Column("journal_rows", Integer, nullable=False),
    Column("fault", Text, nullable=True),
    Column("app", String, nullable=True),
    Column("shown", Text, nullable=True),
    Column("destination", String, nullable=True),
    Column("oversized", Boolean, nullable=True),
    Column("broker", Text, nullable=True),
    Column("idempotency_key", Text, nullable=True, index=True),
    Column("repeat_of", Integer, nullable=True),
)

committed_response_table = Table(
    "_committed_response",
    BOOKKEEPING,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("status", Integer, nullable=False),
    Column("location", Text, nullable=True),
    Column("content_type", Text, nullable=True),
    Column("body", LargeBinary, nullable=False),
)
"""The handler's own response of every keyed effectful operation that committed (`seq`: that operation), kept so a
repeat under the same key gets it back byte for byte (sites/kit/idempotency.py)."""

BOOKKEEPING_TABLES: frozenset[str] = frozenset(BOOKKEEPING.tables)
"""Names of tables that are bookkeeping, never part of a snapshot or the journal."""


def normal_value(value: Any) -> Any:
    """A JSON-normal form of a column value, so that `25` and `25.0` never hash differently."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"column value of type {type(value).__name__} has no JSON-normal form")


def normal_row(mapping: Mapping[Any, Any]) -> Row:
    """A row as a dict of JSON-normal values, keyed by column name."""
    return {str(name): normal_value(value) for name, value in mapping.items()}


def dump_json(value: Row | None) -> str | None:
    """Canonical JSON text (sorted keys, no spaces) for the journal's JSON columns."""
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
