"""Lists that paginate: a list page shows one page of its rows and says where it is, so an observation stays
bounded however many records a site holds.

A handler reads its rows with `paged(session, statement, page=..., query=...)` and passes the result to its
template, which includes `kit/_pagination.html` with `pages=` the result. A page that holds every row the statement
returns is read with `listed` (`sites.kit.shown`), so it still counts as showing the whole list (the absence of
rows too); a cut page shows only its rows. Page numbers come from the query string as text: anything that is not a
whole number reads as page 1, and a number past the last page reads as the last page (never an error, never an
empty page after a record was removed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import urlencode

from sqlalchemy import func
from sqlmodel import Session, select
from sqlmodel.sql.expression import SelectOfScalar

from computerops.core.numbers import whole_number
from sites.kit.shown import listed

T = TypeVar("T")

PAGE_SIZE = 25
"""Rows on one list page: the same on every site, so a task's page position means the same everywhere."""


@dataclass(frozen=True)
class Pages(Generic[T]):
    """One page of a list: its rows, its number (from 1), how many pages and rows the whole list has, and the
    list's other query parameters (search, filters), which its page links keep."""

    rows: list[T]
    number: int
    count: int
    total: int
    path: str
    query: tuple[tuple[str, str], ...] = ()

    @property
    def first(self) -> int:
        """The position (from 1) of this page's first row in the whole list; 0 when the list is empty."""
        return 0 if not self.rows else (self.number - 1) * PAGE_SIZE + 1

    @property
    def last(self) -> int:
        """The position of this page's last row in the whole list."""
        return self.first + len(self.rows) - 1 if self.rows else 0

    def link(self, number: int) -> str:
        """The address of page `number` of the same list (same search and filters)."""
        params = [*self.query, *([("page", str(number))] if number > 1 else [])]
        return f"{self.path}?{urlencode(params)}" if params else self.path


def page_number(text: str | None) -> int:
    """The page a query's `page` asks for: a whole number from 1, else 1."""
    number = whole_number(text or "")
    return number if number is not None and number >= 1 else 1


def paged(session: Session, statement: SelectOfScalar[T], *, page: str | None, path: str,
          query: Mapping[str, str] | None = None) -> Pages[T]:
    """Page `page` of the rows `statement` selects (ordered as it orders them), `PAGE_SIZE` to a page, with the
    count of the whole list. `query` is the list's search and filter parameters (empty values dropped), kept by
    the page links; `path` is the list's address."""
    # sqlmodel's select of one column reads scalars (sqlalchemy's would give a Row, which int() refuses)
    total = session.exec(select(func.count()).select_from(statement.subquery())).one()
    count = max(1, -(-int(total) // PAGE_SIZE))
    number = min(page_number(page), count)
    if count == 1:
        rows = listed(session, statement)  # the whole list: it shows the absence of rows too
    else:
        rows = list(session.exec(statement.limit(PAGE_SIZE).offset((number - 1) * PAGE_SIZE)))
    kept = tuple((key, value) for key, value in (query or {}).items() if value)
    return Pages(rows=rows, number=number, count=count, total=int(total), path=path, query=kept)
