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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, MetaData, func, select

from sites.kit.bookkeeping import journal_table, normal_row, operation_table
from sites.kit.records import Row, Scalar, StateSnapshot


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
    effects: Mapping[str, Mapping[str, Scalar]] = field(hash=False)
    """The effect tables, each with the column values a row inserted there must have to be an external effect (a
    refund, a notification, a sent dispatch: `{"dispatch": {"outcome": "sent"}}`; `{}`: every inserted row is one).
    A row a site writes to record a refusal (a dispatch refused as a duplicate) is no effect."""
    evidence: str | None = None
    """The path pattern (full match) of the page that states what makes an effect allowed (the helpdesk's approvals
    and the policy they were issued under): the serving study's `degraded-tool` arm makes it fail to load
    (computerops/serving_faults/arms.py). None: the site names none."""

    @property
    def effect_tables(self) -> frozenset[str]:
        return frozenset(self.effects)

    def is_effect(self, table: str, row: Row | None) -> bool:
        """Whether inserting `row` into `table` was an external effect."""
        wanted = self.effects.get(table)
        return wanted is not None and row is not None and all(row.get(k) == v for k, v in wanted.items())


def rows_of(connection: Connection, metadata: MetaData, table: str) -> list[Row]:
    """Every row of one of the site's tables, by primary key, as plain dicts."""
    found = metadata.tables[table]
    query = select(found).order_by(*found.primary_key.columns)
    return [normal_row(row) for row in connection.execute(query).mappings()]


def completed_effects(connection: Connection, source: LedgerSource,
                      operation: int | None = None) -> list[CompletedEffect]:
    """Every effect the journal holds (an insert `source` counts as one; those of one operation, when given), with the
    operation, action and key that committed it."""
    query = (select(journal_table.c.table, journal_table.c.key, journal_table.c.after, journal_table.c.operation,
                    operation_table.c.action, operation_table.c.idempotency_key)
             .join(operation_table, operation_table.c.seq == journal_table.c.operation)
             .where(journal_table.c.change == "insert", journal_table.c.table.in_(sorted(source.effect_tables)))
             .order_by(journal_table.c.seq))
    if operation is not None:
        query = query.where(journal_table.c.operation == operation)
    return [CompletedEffect(table=row.table, key=json.loads(row.key), operation=row.operation, action=row.action,
                            idempotency_key=row.idempotency_key)
            for row in connection.execute(query)
            if source.is_effect(row.table, None if row.after is None else json.loads(row.after))]


def effects_committed_by(connection: Connection, operation: int, source: LedgerSource) -> bool:
    """Whether one operation committed an effect (its journal rows are committed with it)."""
    return bool(completed_effects(connection, source, operation))


def read_site_ledgers(connection: Connection, metadata: MetaData, source: LedgerSource) -> SiteLedgers:
    """The site's ledgers as its records hold them now, at the moment of its latest operation (call within one
    transaction for one moment's view)."""
    state = {table: rows_of(connection, metadata, table) for table in sorted(source.tables)}
    moment = int(connection.execute(select(func.coalesce(func.max(operation_table.c.seq), 0))).scalar_one())
    effects = completed_effects(connection, source)
    return SiteLedgers(approvals=source.approvals(state, moment), completed_effects=effects,
                       unfinished_work=source.unfinished(state))
