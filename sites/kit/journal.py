"""The mutation journal: one `_journal` row per changed row of a site table.

The hook runs inside every flush of a `TenantSession` and writes through the session's own
connection, so a change and its journal row commit or roll back together: sites cannot forget to
log. Sites must change rows through the ORM unit of work (add, attribute assignment, delete);
bulk ORM statements would bypass the hook and are refused.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, and_, event, func, inspect, select
from sqlalchemy.orm import ORMExecuteState, UOWTransaction
from sqlalchemy.orm import Session as OrmSession
from sqlmodel import Session

from sites.kit.bookkeeping import BOOKKEEPING_TABLES, dump_json, journal_table, normal_row
from sites.kit.operation import OperationContext
from sites.kit.records import Row
from sites.kit.shown import RECORDER_INFO

OPERATION_INFO = "computerops.operation"
"""`session.info` key of the current `OperationContext`."""
SEEDING_INFO = "computerops.seeding"
"""`session.info` key that marks a template-seeding session (not journaled)."""
_BEFORE_INFO = "computerops.journal.before"

_CHANGE_ORDER = {"insert": 0, "update": 1, "delete": 2}


class OutsideOperationError(RuntimeError):
    """A site tried to write without an operation context, so the change could not be journaled."""


class TenantSession(Session):
    """The only session sites use on a tenant database; every flush of it is journaled."""


def seeding_session(bind: Any) -> TenantSession:
    """A session for filling a template database; its writes are deliberately not journaled."""
    return TenantSession(bind, info={SEEDING_INFO: True})


def operation_session(bind: Any, operation: OperationContext) -> TenantSession:
    """A session whose writes are journaled under `operation`."""
    return TenantSession(bind, info={OPERATION_INFO: operation, RECORDER_INFO: operation.shown})


def current_operation(session: OrmSession) -> OperationContext:
    """The operation a session writes for; raises `OutsideOperationError` when there is none."""
    operation = session.info.get(OPERATION_INFO)
    if not isinstance(operation, OperationContext):
        raise OutsideOperationError(
            "a site wrote to the database outside an operation; open sessions with "
            "sites.kit.deps.SessionDep so that every change is journaled"
        )
    return operation


def _site_table(obj: Any) -> Table | None:
    table = inspect(obj).mapper.local_table
    if not isinstance(table, Table) or table.name in BOOKKEEPING_TABLES:
        return None
    return table


def _key_values(table: Table, values: tuple[Any, ...]) -> Row:
    return normal_row(dict(zip((column.name for column in table.primary_key.columns), values, strict=True)))


def _read_row(session: OrmSession, table: Table, key: Row) -> Row | None:
    """The row as the database holds it now, inside the session's transaction."""
    condition = and_(*(table.c[name] == value for name, value in key.items()))
    found = session.connection().execute(select(table).where(condition)).mappings().first()
    return None if found is None else normal_row(found)


def _identity_key(table: Table, obj: Any) -> Row | None:
    identity = inspect(obj).identity
    return None if identity is None else _key_values(table, identity)


@event.listens_for(TenantSession, "before_flush")
def _remember_rows_before(session: OrmSession, _context: UOWTransaction, _instances: Any) -> None:
    """Reads the stored values of every row about to be updated or deleted.

    Reading the database (rather than attribute history) gives the true `before` even for
    attributes that were expired or never loaded.
    """
    if session.info.get(SEEDING_INFO):
        return
    touched = [obj for obj in (*session.new, *session.dirty, *session.deleted) if _site_table(obj) is not None]
    if not touched:
        return
    current_operation(session)
    before: dict[tuple[str, str], Row | None] = {}
    for obj in (*session.dirty, *session.deleted):
        table = _site_table(obj)
        key = None if table is None else _identity_key(table, obj)
        if table is not None and key is not None:
            before[(table.name, dump_json(key) or "")] = _read_row(session, table, key)
    session.info[_BEFORE_INFO] = before


@event.listens_for(TenantSession, "after_flush")
def _journal_changes(session: OrmSession, _context: UOWTransaction) -> None:
    """Writes one journal row per inserted, really updated or deleted row of a site table."""
    if session.info.get(SEEDING_INFO):
        return
    before: dict[tuple[str, str], Row | None] = session.info.pop(_BEFORE_INFO, {})
    entries: list[tuple[str, str, Row, Row | None, Row | None]] = []
    for change, objects in (("insert", session.new), ("update", session.dirty), ("delete", session.deleted)):
        for obj in objects:
            table = _site_table(obj)
            if table is None:
                continue
            if change == "insert":
                key = _key_values(table, tuple(inspect(obj).mapper.primary_key_from_instance(obj)))
                entries.append((change, table.name, key, None, _read_row(session, table, key)))
                continue
            identity = _identity_key(table, obj)
            if identity is None:
                continue
            old = before.get((table.name, dump_json(identity) or ""))
            new = _read_row(session, table, identity) if change == "update" else None
            if change == "update" and old == new:
                continue  # an assignment that changed nothing is not a mutation
            entries.append((change, table.name, identity, old, new))
    if not entries:
        return
    operation = current_operation(session)
    # Within one flush the unit of work's order is not stable across processes; sort it.
    entries.sort(key=lambda entry: (_CHANGE_ORDER[entry[0]], entry[1], tuple(entry[2].values())))
    connection = session.connection()
    for change, table_name, key, old, new in entries:
        connection.execute(
            journal_table.insert().values(
                operation=operation.seq,
                logical_time=operation.logical_time,
                table=table_name,
                key=dump_json(key),
                change=change,
                before=dump_json(old),
                after=dump_json(new),
            )
        )


@event.listens_for(TenantSession, "do_orm_execute")
def _refuse_bulk_writes(state: ORMExecuteState) -> None:
    """Bulk ORM insert/update/delete statements skip the flush, so they would skip the journal."""
    if state.session.info.get(SEEDING_INFO):
        return
    if state.is_insert or state.is_update or state.is_delete:
        raise OutsideOperationError(
            "bulk ORM writes bypass the mutation journal; load the rows and change them instead"
        )


def journal_rows_of(session_or_connection: Any, seq: int) -> int:
    """How many journal rows the operation `seq` caused (as committed so far)."""
    statement = select(func.count()).select_from(journal_table).where(journal_table.c.operation == seq)
    return int(session_or_connection.execute(statement).scalar_one())
