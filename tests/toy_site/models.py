"""The toy site's one table, in its own SQLModel registry (so its names never meet another site's)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel


class ToyTable(SQLModel, registry=registry()):
    """Base of the toy site's tables: its own registry keeps them apart from other sites' tables."""


class Item(ToyTable, table=True):
    """One item on the shelf and how many of it there are."""

    __tablename__ = "item"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    quantity: int


METADATA = ToyTable.metadata
