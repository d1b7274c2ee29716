"""The site tables and columns a task names, and the check of them against the site's schema.

A task names tables and columns in its row checks (`table`, `where`, `expect`, `text`), effects checks and
procedure selectors (`rows`, `first`, `then`, `before`, `after`: `table`, `where`; `fields`, `per`) and allowed
mutations (`table`, `where`, `fields`). The verifier fails closed on a name the site does not have, so such a
task could never pass; `tasks.catalog.load_task` refuses it instead, naming the reference and what the site has.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from tasks.spec import (
    EffectsCheck,
    MutationRule,
    NotUsed,
    Ordered,
    RowCheck,
    RowSelector,
    Seen,
    ShownFact,
    ViaRoute,
    Visited,
)
from tasks.task import TaskSpec

SiteSchema = Mapping[str, Collection[str]]
"""A site's tables, each with its column names."""


@dataclass(frozen=True)
class Reference:
    """One name a task uses: a table, or a column of a table, at a place in the task file."""

    location: str
    """Where in the task it is, as the loader names fields: `expected_state.2.where.number`."""
    table: str
    column: str | None = None
    """None when the reference is to the table itself."""


def _columns(location: str, table: str, columns: Iterator[tuple[str, str]]) -> Iterator[Reference]:
    for place, column in columns:
        yield Reference(f"{location}.{place}", table, column)


def _selector(location: str, selector: RowSelector) -> Iterator[Reference]:
    yield Reference(f"{location}.table", selector.table)
    yield from _columns(location, selector.table, ((f"where.{column}", column) for column in selector.where))


def _fields(location: str, table: str, fields: list[str] | None) -> Iterator[Reference]:
    return _columns(location, table, ((f"fields.{index}", column) for index, column in enumerate(fields or [])))


def _row_check(location: str, check: RowCheck) -> Iterator[Reference]:
    yield Reference(f"{location}.table", check.table)
    for part, columns in (("where", check.where), ("expect", check.expect), ("text", check.text)):
        yield from _columns(location, check.table, ((f"{part}.{column}", column) for column in columns))


def _effects(location: str, check: EffectsCheck) -> Iterator[Reference]:
    yield from _selector(f"{location}.rows", check.rows)
    yield from _fields(location, check.rows.table, check.fields)
    if check.per is not None:
        yield Reference(f"{location}.per", check.rows.table, check.per)


def _mutation(location: str, rule: MutationRule) -> Iterator[Reference]:
    yield Reference(f"{location}.table", rule.table)
    yield from _columns(location, rule.table, ((f"where.{column}", column) for column in rule.where))
    yield from _fields(location, rule.table, rule.fields)


def _procedure(location: str, check: ViaRoute | Ordered | Visited | Seen | NotUsed) -> Iterator[Reference]:
    parts: dict[str, object] = {}
    if isinstance(check, ViaRoute):
        parts = {"rows": check.rows}
    elif isinstance(check, Ordered):
        parts = {"first": check.first, "then": check.then}
    elif isinstance(check, Visited | Seen):
        parts = {"before": check.before, "after": check.after}  # or first-write, a fault fired, nothing
    if isinstance(check, Seen):
        facts: list[tuple[str, ShownFact]] = [(location, check)]
        facts += [(f"{location}.alternatives.{index}", fact) for index, fact in enumerate(check.alternatives)]
        for place, fact in facts:
            if fact.table is None:
                continue
            yield Reference(f"{place}.table", fact.table)
            yield from _columns(place, fact.table, ((f"where.{column}", column) for column in fact.where))
            yield from _fields(place, fact.table, fact.fields)
            if fact.per is not None:
                yield Reference(f"{place}.per", fact.table, fact.per)
    for part, selector in parts.items():
        if isinstance(selector, RowSelector):
            yield from _selector(f"{location}.{part}", selector)


def references(spec: TaskSpec) -> Iterator[Reference]:
    """Every table and column the task names, in file order."""
    for index, check in enumerate(spec.expected_state):
        if isinstance(check, RowCheck):
            yield from _row_check(f"expected_state.{index}", check)
        elif isinstance(check, EffectsCheck):
            yield from _effects(f"expected_state.{index}", check)
    for index, rule in enumerate(spec.allowed_mutations):
        yield from _mutation(f"allowed_mutations.{index}", rule)
    for index, procedure in enumerate(spec.required_procedure):
        yield from _procedure(f"required_procedure.{index}", procedure)
    if spec.attack is not None:
        place = spec.attack.placement
        yield Reference("attack.placement.table", place.table)
        yield Reference("attack.placement.column", place.table, place.column)
        yield from _columns("attack.placement", place.table,
                            ((f"{part}.{column}", column) for part, values in (("where", place.where),
                                                                               ("row", place.row))
                             for column in values or {}))
        for part, predicates in (("objective", spec.attack.objective), ("alternatives", spec.attack.alternatives)):
            for index, objective in enumerate(predicates):
                where = f"attack.{part}.{index}"
                if isinstance(objective, RowCheck):
                    yield from _row_check(where, objective)
                elif isinstance(objective, EffectsCheck):
                    yield from _effects(where, objective)
                else:  # a total
                    yield from _selector(f"{where}.rows", objective.rows)
                    yield Reference(f"{where}.column", objective.rows.table, objective.column)


def named_apps(spec: TaskSpec) -> Iterator[tuple[str, str]]:
    """(location, app) for every app a `not_used` check names."""
    for index, procedure in enumerate(spec.required_procedure):
        if isinstance(procedure, NotUsed):
            for number, app in enumerate(procedure.apps):
                yield f"required_procedure.{index}.apps.{number}", app


def named_documents(spec: TaskSpec) -> Iterator[tuple[str, str]]:
    """(location, document) for every document a `seen` check names."""
    for index, procedure in enumerate(spec.required_procedure):
        if isinstance(procedure, Seen):
            if procedure.document is not None:
                yield f"required_procedure.{index}.document", procedure.document
            for number, fact in enumerate(procedure.alternatives):
                if fact.document is not None:
                    yield f"required_procedure.{index}.alternatives.{number}.document", fact.document


def _unknown(kind: str, name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no {kind} {name!r}{hint}; it has {', '.join(sorted(known))}"


def schema_problems(spec: TaskSpec, schema: SiteSchema) -> list[str]:
    """Each reference to a table or column the site does not have, with where it is and what the site has."""
    problems = []
    for reference in references(spec):
        columns = schema.get(reference.table)
        if columns is None and reference.column is None:
            problems.append(f"{reference.location}: site {spec.site} has {_unknown('table', reference.table, schema)}")
        elif columns is not None and reference.column is not None and reference.column not in columns:
            problems.append(f"{reference.location}: table {reference.table} has "
                            f"{_unknown('column', reference.column, columns)}")
    return problems  # a column of a table the site lacks is not named again: its table already is
