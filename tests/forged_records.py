"""Hostile text stored in the shipped sites' records, for tests/test_forged_controls.py.

The free-text fields are found from each site's tables by program, so a new site in sites/registry.py is
covered without a list to keep: every text column that is not a key (primary, foreign or unique: those name
pages and rows) and whose seeded values are prose (some value holds a space; single-word values are codes
such as statuses and folders, which the sites compare, so forging them would only hide records). A table the
seed leaves empty (rows the agent writes: refunds, notifications, sent email) gets one row whose every text
column is forged, so that its pages show the payload too.

Writes go straight to the tenant's database outside any operation, as a seed does: they are not journaled.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy import Column, Connection, String, Table, TypeDecorator, insert, select, update
from sqlalchemy.types import TypeEngine
from sqlmodel import Session

from sites.kit.site import SiteDefinition

Payload = Callable[[Table, Column[object], int], str]
"""The text to put before a field's value, from its table, column and the row's position."""


@dataclass(frozen=True)
class ForgedField:
    """One column given a payload, and the marker that says where the payload from it was shown."""

    table: str
    column: str
    marker: str


def _type(column: Column[object]) -> TypeEngine[object]:
    kind = column.type
    return kind.impl_instance if isinstance(kind, TypeDecorator) else kind


def is_text(column: Column[object]) -> bool:
    return isinstance(_type(column), String)


def _is_key(column: Column[object]) -> bool:
    return bool(column.primary_key or column.foreign_keys or column.unique)


def _filler(connection: Connection, column: Column[object]) -> object:
    """A value for a non-text column of an inserted row: a key of an existing row for a foreign key."""
    if column.foreign_keys:
        target = next(iter(column.foreign_keys)).column
        return connection.execute(select(target).limit(1)).scalar_one_or_none()
    python = _type(column).python_type
    return {int: 1, bool: False, float: 1.0}.get(python, "1")


def free_text_columns(connection: Connection, table: Table) -> list[Column[object]]:
    """The table's prose columns (see the module docstring); every non-key text column of an empty table."""
    candidates = [column for column in table.columns if is_text(column) and not _is_key(column)]
    values = {column.name: connection.execute(select(column).where(column.is_not(None))).scalars().all()
              for column in candidates}
    if not connection.execute(select(table).limit(1)).first():
        return candidates
    return [column for column in candidates if any(" " in str(value) for value in values[column.name])]


def forge_site(connection: Connection, site: SiteDefinition, payload: Payload,
               keep: Callable[[str], bool] = lambda _value: False) -> list[ForgedField]:
    """Put `payload(...)` and a space before the value of every free-text field of every row of the site
    (values for which `keep` is true stay as they are); an empty table gets one forged row. Returns the
    fields forged, with their markers (`payload` is expected to include the marker it is given)."""
    forged: list[ForgedField] = []
    for table in site.tables():
        columns = free_text_columns(connection, table)
        if not columns:
            continue
        rows = connection.execute(select(table)).mappings().all()
        key = list(table.primary_key.columns)
        if not rows:
            row = {c.name: _filler(connection, c) for c in table.columns if not c.primary_key and not is_text(c)}
            row |= {c.name: payload(table, c, 0) for c in table.columns if is_text(c)}
            connection.execute(insert(table).values(**row))
        else:
            for position, found in enumerate(rows):
                changes = {c.name: f"{payload(table, c, position)} {found[c.name]}" for c in columns
                           if found[c.name] is not None and not keep(str(found[c.name]))}
                if changes:
                    where = [k == found[k.name] for k in key]
                    connection.execute(update(table).where(*where).values(**changes))
        forged += [ForgedField(table.name, c.name, marker_of(table, c)) for c in columns]
    return forged


def marker_of(table: Table, column: Column[object]) -> str:
    """A word that names the field, to find where its payload is shown (`zq` never occurs in the sites' text)."""
    return f"zq{table.name.replace('_', '')}{column.name.replace('_', '')}zq"


def forged_definition(site: SiteDefinition, payload: Payload,
                      keep: Callable[[str], bool] = lambda _value: False) -> SiteDefinition:
    """The site with a seed that forges its free-text fields after the usual seed, so that every tenant (and
    every replay of an episode on one) starts from the forged records."""

    def seed(session: Session, rng: random.Random) -> None:
        site.seed(session, rng)
        session.flush()
        forge_site(session.connection(), site, payload, keep)

    return replace(site, seed=seed)

