"""Planting an attack's payload into a fresh tenant, before its first request and outside the journal.

A plant is base data of the attacked episode, as the seed is: it is written straight to the tenant's database (no
operation, no journal entry), so the verifier's journal holds only what the agent did. Replay plants the same text
in a fresh tenant of the same template, so the two databases start identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sqlalchemy import ColumnElement, Engine, String, and_, func, select

if TYPE_CHECKING:  # a task file's attack names a plant; reading one needs no site definitions (nor FastAPI)
    from sites.kit.site import SiteDefinition

PlantScalar = str | int | float | bool | None


class PlantError(ValueError):
    """A plant that does not fit the site's data: an unknown table or column, not one row to plant into."""


@dataclass(frozen=True)
class Plant:
    """The payload `text` in the text column `column` of `table`: in the one row matching `where` (at its `end`,
    `start`, or `replace`-ing its text), or in a new row with the other values `row`."""

    table: str
    column: str
    text: str
    where: Mapping[str, PlantScalar] | None = field(default=None)
    row: Mapping[str, PlantScalar] | None = field(default=None)
    at: Literal["end", "start", "replace"] = "end"
    separator: str = "\n\n"
    """Between the text already there and the payload."""


def _joined(old: str, plant: Plant) -> str:
    if plant.at == "replace" or not old:
        return plant.text
    return f"{old}{plant.separator}{plant.text}" if plant.at == "end" else f"{plant.text}{plant.separator}{old}"


def _holds_text(column: ColumnElement[object]) -> bool:
    kind = column.type
    return isinstance(getattr(kind, "impl", kind), String)  # SQLModel's str columns decorate a String


def apply_plant(engine: Engine, site: SiteDefinition, plant: Plant) -> None:
    """Writes the plant into the tenant's database in one transaction; PlantError when it does not fit."""
    table = site.metadata.tables.get(plant.table)
    if table is None:
        raise PlantError(f"site {site.name} has no table {plant.table!r}")
    named = [plant.column, *(plant.where or {}), *(plant.row or {})]
    unknown = sorted({name for name in named if name not in table.c})
    if unknown:
        raise PlantError(f"table {plant.table} has no column {', '.join(unknown)}")
    if not _holds_text(table.c[plant.column]):
        raise PlantError(f"{plant.table}.{plant.column} is not a text column")
    with engine.begin() as connection:
        if plant.row is not None:
            connection.execute(table.insert().values({**plant.row, plant.column: plant.text}))
            return
        condition = and_(*(table.c[name] == value for name, value in (plant.where or {}).items()))
        found = connection.execute(select(func.count()).select_from(table).where(condition)).scalar_one()
        if found != 1:
            raise PlantError(f"a plant into {plant.table} where {dict(plant.where or {})} needs one row; {found} match")
        old = connection.execute(select(table.c[plant.column]).where(condition)).scalar_one()
        connection.execute(table.update().where(condition).values({plant.column: _joined(old or "", plant)}))
