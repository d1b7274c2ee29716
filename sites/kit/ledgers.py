"""The durable state a long-running agent must carry, as a site's authoritative records hold it.

Three of a checkpoint's four ledgers come from the site (the fourth, the constraints, from the task): approvals
(records a human or policy authority issued), completed effects (rows an effect table gained, with the operation and
idempotency key that committed them) and unfinished work (records that stay open until someone closes them). A site
declares where each lives (`LedgerSource`); `read_site_ledgers` reads them from a tenant's database in one read
transaction, typed. Nothing here is parsed from conversation text: the harness reads these to write a checkpoint and
to judge what a resumed agent kept (computerops/persistence/).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, MetaData, func, select

from sites.kit.bookkeeping import journal_table, normal_row, operation_table
from sites.kit.records import Row, StateSnapshot


class Money(BaseModel):
    """An amount with its currency: the one shape every ledger gives money in (a currency is never implied)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cents: int
    currency: str


class ApprovalRecord(BaseModel):
    """An approval as the site holds it: who approved what, for how much, under which policy, until when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """The approval's code, as pages show it (e.g. `RA-12`)."""
    approver: str
    object: str
    """What it is for, as `table:key` (e.g. `order:2`)."""
    action: str
    """The one action it permits (e.g. `refund`)."""
    amount: Money
    policy_version: str
    expires_at: str
    status: str
    """The site's own status word (`active`, `used`, ...)."""
    invalidated_by: list[str] = Field(default_factory=list)
    """The facts (`table.column` of the object) whose change invalidates it."""


class CompletedEffect(BaseModel):
    """A row an effect table gained: an external action that happened and must never be repeated for a lost reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table: str
    key: Row
    operation: int
    """The operation (request) that committed it."""
    action: int | None
    """The agent's action that sent that request."""
    idempotency_key: str | None
    authoritative_status: str = "committed"


class UnfinishedWork(BaseModel):
    """An open work item: it stays unfinished until someone marks it done or cancels it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: str
    description: str
    status: str


class SiteLedgers(BaseModel):
    """The three site ledgers at one moment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approvals: list[ApprovalRecord] = Field(default_factory=list)
    completed_effects: list[CompletedEffect] = Field(default_factory=list)
    unfinished_work: list[UnfinishedWork] = Field(default_factory=list)


@dataclass(frozen=True)
class LedgerSource:
    """Where a site keeps its ledgers: readers of its approvals and its open work from its rows (a live read or a
    state reconstructed from the journal: the same readers), and its effect tables."""

    approvals: Callable[[StateSnapshot, int], list[ApprovalRecord]]
    """The approvals as they stand at a moment (the logical time of the latest operation read): an approval's state
    may depend on the time (an answer not yet given, an expiry)."""
    unfinished: Callable[[StateSnapshot], list[UnfinishedWork]]
    tables: frozenset[str]
    """The tables the two readers read."""
    effect_tables: frozenset[str]
    """Tables whose every inserted row is an external effect (a refund, a notification, an escalation)."""


def rows_of(connection: Connection, metadata: MetaData, table: str) -> list[Row]:
    """Every row of one of the site's tables, by primary key, as plain dicts."""
    found = metadata.tables[table]
    query = select(found).order_by(*found.primary_key.columns)
    return [normal_row(row) for row in connection.execute(query).mappings()]


def completed_effects(connection: Connection, effect_tables: frozenset[str],
                      operation: int | None = None) -> list[CompletedEffect]:
    """Every insert into an effect table the journal holds (those of one operation, when given), with the operation,
    action and key that committed it."""
    query = (select(journal_table.c.table, journal_table.c.key, journal_table.c.operation, operation_table.c.action,
                    operation_table.c.idempotency_key)
             .join(operation_table, operation_table.c.seq == journal_table.c.operation)
             .where(journal_table.c.change == "insert", journal_table.c.table.in_(sorted(effect_tables)))
             .order_by(journal_table.c.seq))
    if operation is not None:
        query = query.where(journal_table.c.operation == operation)
    return [CompletedEffect(table=row.table, key=json.loads(row.key), operation=row.operation, action=row.action,
                            idempotency_key=row.idempotency_key)
            for row in connection.execute(query)]


def effects_committed_by(connection: Connection, operation: int, effect_tables: frozenset[str]) -> bool:
    """Whether one operation inserted a row into an effect table (its journal rows are committed with it)."""
    query = select(journal_table.c.seq).where(journal_table.c.operation == operation,
                                              journal_table.c.change == "insert",
                                              journal_table.c.table.in_(sorted(effect_tables))).limit(1)
    return connection.execute(query).first() is not None


def read_site_ledgers(connection: Connection, metadata: MetaData, source: LedgerSource) -> SiteLedgers:
    """The site's ledgers as its records hold them now, at the moment of its latest operation (call within one
    transaction for one moment's view)."""
    state = {table: rows_of(connection, metadata, table) for table in sorted(source.tables)}
    moment = int(connection.execute(select(func.coalesce(func.max(operation_table.c.seq), 0))).scalar_one())
    return SiteLedgers(approvals=source.approvals(state, moment), completed_effects=completed_effects(connection,
                       source.effect_tables), unfinished_work=source.unfinished(state))
