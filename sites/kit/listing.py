"""What every site's lists share: a search that matches part of a name or number, filters, and a filter's choices
(the invoices and the ledger use them; kit/_filters.html is the search box and filters they render).

A list's search is a case-insensitive substring match over the columns a person would type part of (an invoice
number, a vendor); its filters are equalities (`column == value`), so a filtered list that fits on one page is still
a whole listing (`sites.kit.paging.paged`). A filter's choices are the values its column holds now, in name order:
a vocabulary, not the records, so a list page's size does not grow with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from sqlalchemy import String, cast, or_
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

T = TypeVar("T")


class _Keyed(Protocol):
    id: int | None


K = TypeVar("K", bound=_Keyed)


def searched(statement: SelectOfScalar[T], text: str, *columns: Any) -> SelectOfScalar[T]:
    """The statement narrowed to rows where any of `columns` holds `text` (case-insensitive, `%` and `_` taken
    literally); unchanged for an empty or blank text."""
    words = text.strip()
    if not words:
        return statement
    return statement.where(or_(*(cast(col(column), String).icontains(words, autoescape=True) for column in columns)))


def filtered(statement: SelectOfScalar[T], **conditions: tuple[Any, str]) -> SelectOfScalar[T]:
    """The statement narrowed by each `name=(column, value)` whose value is not empty, as `column == value`."""
    for column, value in conditions.values():
        if value:
            statement = statement.where(col(column) == value)
    return statement


def choices(session: Session, column: Any) -> list[str]:
    """The distinct values the column holds, sorted: a filter's options."""
    return sorted(str(value) for value in session.exec(select(column).distinct()) if value is not None)


def by_id(session: Session, model: type[K], ids: Iterable[int | None]) -> dict[int, K]:
    """The rows of `model` whose id is one of `ids` (None ignored), keyed by id: the few rows a page's table points to
    (a dependency's number, an order's supplier), read by `id IN (...)`, not the whole table. Plain reads (not a
    listing: `sites.kit.shown` records only what the template then shows of them)."""
    wanted = sorted({key for key in ids if key is not None})
    if not wanted:
        return {}
    rows = session.exec(select(model).where(col(model.id).in_(wanted)))
    return {row.id: row for row in rows if row.id is not None}
