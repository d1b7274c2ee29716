"""What a response showed: the rows and columns its page read, the lists it showed whole, the documents it rendered.

Sites render every page through the kit (`sites.kit.pages.SitePages.page`), and the kit's Jinja2 environment
records each column of a row a template *outputs* (`{{ ticket.status }}`, `{{ customers[t.customer_id].name }}`,
`{{ refund.amount_cents|money }}`): a value read from a row carries where it came from, and the environment's
`finalize`, which every `{{ ... }}` goes through, records it. So no site can forget to say what it showed, and a
column a page only tests (`{% if g.id != 2 %}`) is not counted as shown; a true/false column is counted where it
is read, since pages show it by what they print for it; a key a template follows to another row
(`orders[follow_up.order_id]`) is counted, since the page shows that relation. A list shows
the *absence* of rows only when the site read it with `listed(session, statement)`: the kit takes the list's filter
from the statement itself (equality conditions; any other filter, a search, makes it a *searched* listing, which
shows the absence of rows only where each row of a set was on it), no limit cut it short, and keeps the listing
only if the page went on to show every row the statement returned. A static text the page renders (a policy, the
escalation rules) is a document: `{{ shows("mail-policy") }}` in the template. A handler that states a column in text it
builds in Python (a refusal naming an approval's policy version) says so with `operation.shown.row(obj, field)`, and
one that looks a related row up in Python reads it with `related(session, obj, column, Model)`, so that the
relation counts as shown once the page shows the related row.

The operation log writes the result on each operation (`Operation.shown`); procedure checks read it (`kind: seen`).
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jinja2 import Environment
from sqlalchemy import BindParameter, Column, Table, inspect
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BinaryExpression, BooleanClauseList, ColumnElement
from sqlmodel import Session
from sqlmodel.sql.expression import SelectOfScalar

from sites.kit.bookkeeping import BOOKKEEPING_TABLES, normal_value
from sites.kit.records import Scalar, Shown, ShownListing, ShownRows

RECORDER_INFO = "computerops.shown"
"""`session.info` key of the operation's `ShownRecorder` (set by `sites.kit.journal.operation_session`)."""

T = TypeVar("T")


@dataclass(frozen=True)
class _Mapped:
    """What the recorder needs of a mapped class: its table, primary key columns and column names."""

    table: str
    key: tuple[str, ...]
    columns: frozenset[str]


_MAPPED: dict[type, _Mapped | None] = {}


def _mapped(kind: type) -> _Mapped | None:
    """The table of a site's mapped class (cached per class); None for anything else."""
    if kind in _MAPPED:
        return _MAPPED[kind]
    found: _Mapped | None = None
    table = getattr(kind, "__table__", None)
    if isinstance(table, Table) and table.name not in BOOKKEEPING_TABLES:
        found = _Mapped(table=table.name, key=tuple(c.name for c in table.primary_key.columns),
                        columns=frozenset(c.name for c in table.columns))
    _MAPPED[kind] = found
    return found


def _key_of(obj: Any, mapped: _Mapped) -> tuple[Scalar, ...] | None:
    """The row's primary key values; None for an object that is not (yet) a row of the database."""
    state = inspect(obj, raiseerr=False)
    identity = getattr(state, "identity", None)
    if identity is None:
        return None
    return tuple(normal_value(value) for value in identity)


@dataclass
class _Listing:
    table: str
    where: dict[str, Scalar]
    keys: list[tuple[Scalar, ...]]
    searched: bool = False


@dataclass
class ShownRecorder:
    """Collects what one operation's response shows; `shown()` gives the record."""

    _fields: dict[tuple[str, tuple[Scalar, ...]], set[str]] = field(default_factory=lambda: defaultdict(set))
    _keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _listings: list[_Listing] = field(default_factory=list)
    _documents: set[str] = field(default_factory=set)
    _relations: list[tuple[Any, str, Any]] = field(default_factory=list)

    def read(self, obj: Any, name: str) -> None:
        """A page read column `name` of `obj` (ignored unless `obj` is a row and `name` one of its columns)."""
        mapped = _mapped(type(obj))
        if mapped is None or name not in mapped.columns:
            return
        key = _key_of(obj, mapped)
        if key is not None:
            self._keys[mapped.table] = mapped.key
            self._fields[(mapped.table, key)].add(name)

    def row(self, obj: Any, *names: str) -> None:
        """A handler states these columns of `obj` in text it built itself (a refusal message)."""
        for name in names:
            self.read(obj, name)

    def document(self, name: str) -> None:
        self._documents.add(name)

    def relation(self, obj: Any, column: str, target: Any) -> None:
        """`obj.column` leads to the row `target`: shown if the page shows anything of `target`."""
        self._relations.append((obj, column, target))

    def listing(self, table: str, where: dict[str, Scalar], keys: list[tuple[Scalar, ...]],
                searched: bool = False) -> None:
        self._listings.append(_Listing(table=table, where=where, keys=keys, searched=searched))

    def shown(self) -> Shown:
        """The record: rows grouped by table and columns shown, the listings whose every row the page showed, and
        the documents, each sorted so the same page gives the same record."""
        for obj, column, target in self._relations:
            mapped = _mapped(type(target))
            key = None if mapped is None else _key_of(target, mapped)
            if mapped is not None and key is not None and self._fields.get((mapped.table, key)):
                self.read(obj, column)
        groups: dict[tuple[str, tuple[str, ...]], list[list[Scalar]]] = defaultdict(list)
        for (table, key), names in self._fields.items():
            groups[(table, tuple(sorted(names)))].append(list(key))
        records = [ShownRows(table=table, fields=list(names), key=list(self._keys[table]),
                             rows=sorted(rows, key=_order))
                   for (table, names), rows in sorted(groups.items())]
        listings = {(lst.table, tuple(sorted(lst.where.items(), key=lambda item: item[0])), lst.searched): lst
                    for lst in self._listings if all((lst.table, key) in self._fields for key in lst.keys)}
        return Shown(records=records,
                     listings=[ShownListing(table=lst.table, where=dict(sorted(lst.where.items())),
                                            searched=lst.searched)
                               for _, lst in sorted(listings.items(), key=lambda item: repr(item[0]))],
                     documents=sorted(self._documents))


def _order(values: list[Scalar]) -> tuple[tuple[int, str], ...]:
    return tuple((0 if isinstance(v, int | float) else 1, f"{v:020}" if isinstance(v, int) else str(v))
                 for v in values)


_RECORDING: ContextVar[ShownRecorder | None] = ContextVar("computerops_shown", default=None)


@contextmanager
def recording(recorder: ShownRecorder | None) -> Any:
    """Templates rendered inside record what they read into `recorder` (None: record nothing)."""
    token = _RECORDING.set(recorder)
    try:
        yield
    finally:
        _RECORDING.reset(token)


class _FromRow(str):
    """A text read from a row's column, carrying which (`origin`: the row and the column)."""

    origin: tuple[Any, str]


class _IntFromRow(int):
    origin: tuple[Any, str]


class _FloatFromRow(float):
    origin: tuple[Any, str]


def _carrying(value: Any, origin: tuple[Any, str]) -> Any:
    """The value marked with where it came from, when its type can be (texts and numbers)."""
    kind = {str: _FromRow, int: _IntFromRow, float: _FloatFromRow}.get(type(value))
    if kind is None:
        return value
    marked = kind(value)
    marked.origin = origin
    return marked


def _finalize(value: Any) -> Any:
    """Every value a template outputs passes here: one read from a row is recorded as shown."""
    origin = getattr(value, "origin", None)
    recorder = _RECORDING.get()
    if origin is not None and recorder is not None:
        recorder.read(*origin)
    return value


def _keeping_origin(fn: Any) -> Any:
    """A filter whose result carries its input's origin (`{{ cents|money }}` shows the cents column)."""
    def wrapped(value: Any, *args: Any, **kwargs: Any) -> Any:
        result = fn(value, *args, **kwargs)
        origin = getattr(value, "origin", None)
        return result if origin is None else _carrying(result, origin)

    for attribute in ("jinja_pass_arg",):
        if hasattr(fn, attribute):
            setattr(wrapped, attribute, getattr(fn, attribute))
    return wrapped


class RecordingEnvironment(Environment):
    """A Jinja2 environment whose outputs tell the current recorder which row columns a template showed;
    `shows(name)` records a document. Filters added with `add_filter` pass the origin of their input on."""

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_finalize, **options)
        self.globals["shows"] = _shows
        for name in ("upper", "lower", "title", "capitalize", "trim", "string", "e", "escape", "truncate", "round",
                     "int", "float", "default", "d"):
            self.filters[name] = _keeping_origin(self.filters[name])

    def add_filter(self, name: str, fn: Any) -> None:
        self.filters[name] = _keeping_origin(fn)

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self._from_row(obj, attribute, super().getattr(obj, attribute))

    def getitem(self, obj: Any, argument: Any) -> Any:
        value = super().getitem(obj, argument)
        origin = getattr(argument, "origin", None)
        if origin is not None and _mapped(type(value)) is not None:
            recorder = _RECORDING.get()  # `orders[follow_up.order_id]`: the page shows the relation it follows
            if recorder is not None:
                recorder.read(*origin)
        return self._from_row(obj, argument, value) if isinstance(argument, str) else value

    @staticmethod
    def _from_row(obj: Any, name: str, value: Any) -> Any:
        mapped = _mapped(type(obj))
        if mapped is None or name not in mapped.columns:
            return value
        if isinstance(value, bool):  # pages show a true/false column by what they print for it
            recorder = _RECORDING.get()
            if recorder is not None:
                recorder.read(obj, name)
            return value
        return _carrying(value, (obj, name))


def _shows(name: str) -> str:
    recorder = _RECORDING.get()
    if recorder is not None:
        recorder.document(name)
    return ""


def _conditions(clause: ColumnElement[Any] | None) -> list[ColumnElement[Any]]:
    if clause is None:
        return []
    if isinstance(clause, BooleanClauseList) and clause.operator is operators.and_:
        return [part for element in clause.clauses for part in _conditions(element)]
    return [clause]


def _equalities(statement: SelectOfScalar[Any], table: Table) -> dict[str, Scalar] | None:
    """The statement's filter as column = value conditions on `table`; None when it has any other condition."""
    where: dict[str, Scalar] = {}
    for condition in _conditions(statement.whereclause):
        if not (isinstance(condition, BinaryExpression) and condition.operator is operators.eq
                and isinstance(condition.left, Column) and condition.left.table is table
                and isinstance(condition.right, BindParameter)):
            return None
        where[condition.left.name] = normal_value(condition.right.effective_value)
    return where


def listed(session: Session, statement: SelectOfScalar[T]) -> list[T]:
    """The rows of a select of one mapped class, recorded as a listing of their table when no limit or offset cut
    it (the page must still show every row it got): with its filter when that is a conjunction of equalities, else
    as a searched listing (it holds the rows it showed, its filter unstated)."""
    rows = list(session.exec(statement))
    recorder = session.info.get(RECORDER_INFO)
    if not isinstance(recorder, ShownRecorder):
        return rows
    entities = statement.column_descriptions
    kind = entities[0].get("entity") if len(entities) == 1 else None
    mapped = _mapped(kind) if isinstance(kind, type) else None
    table = getattr(kind, "__table__", None)
    if mapped is None or not isinstance(table, Table) or statement._offset_clause is not None:
        return rows
    limit = statement._limit_clause
    if limit is not None and len(rows) >= int(getattr(limit, "effective_value", 0) or 0):
        return rows
    where = _equalities(statement, table)
    keys = [key for row in rows if (key := _key_of(row, mapped)) is not None]
    recorder.listing(mapped.table, where or {}, keys, searched=where is None)
    return rows



def related(session: Session, obj: Any, column: str, model: type[T]) -> T | None:
    """The row `obj.column` points to (None when it points nowhere); when the page then shows anything of that row,
    `obj.column` is recorded as shown too: the page shows the relation (the ticket's order)."""
    key = getattr(obj, column)
    target = None if key is None else session.get(model, key)
    recorder = session.info.get(RECORDER_INFO)
    if target is not None and isinstance(recorder, ShownRecorder):
        recorder.relation(obj, column, target)
    return target
