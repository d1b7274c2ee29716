"""Task templates: a parameter space and a seeded, deterministic generator that yields whole task instances.

A template is a task file with a `template:` block. The block names its parameters, each drawn for a seed from the
site's seeded data for that seed (`sites.kit.seeding.seeded_rows`: which record), from a list, or from a range
(which values), or computed from earlier ones; every other string of the file may use them as Jinja2 expressions
(`{{ contact.name }}`). A string that is one expression alone gives the expression's own value (a number stays a
number, a row a mapping), so a check's `where: {id: "{{ contact.id }}"}` compares an integer. The file's structure
never varies, only its values: the instance is the task file with those values in place, validated as any task is.

An instance is `TEMPLATE@SEED`: the site is seeded with SEED and the parameters drawn from a generator keyed by the
template (an attacked twin's by the task it extends, so that twins draw the same records) and SEED. The same template
files, version and seed give the same instance, byte for byte, in any process; `instance_sha256` covers all of them
and the instance itself, so a changed site seeding that changes what the instance asks is caught as well.

Published instances are the seeds `1..published`; seeds from `FRESH_SEED_FLOOR` up are never published and are what
`subset reserve --fresh` draws; the seeds between (0 too) are neither, instances one may generate to explore a
template but that no reservation draws. A file without a `template:` block is a fixed task: its one instance is its
own `seed`, and no other seed of it exists.
"""

from __future__ import annotations

import collections
import difflib
import functools
import random
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

if TYPE_CHECKING:
    from sites.kit.seeding import SeededRows

INSTANCE_MARK = "@"
FRESH_SEED_FLOOR = 1_000_000
"""Seeds from here up are fresh: never published, drawn at reservation."""
MAX_SEED = 10**15 - 1
ROW_FUNCTIONS = ("rows", "one", "count", "similar")
"""What expressions may call on the site's seeded data (`_row_functions`)."""
_INSTANCE_ID = re.compile(r"(?P<template>[a-z0-9][a-z0-9.-]*)@(?P<seed>0|[1-9][0-9]{0,14})")
"""A seed is written as `str(seed)` does: no sign, no leading zero, so one instance has one id."""

Scalar = str | int | float | bool | None


class TemplateSpecError(ValueError):
    """A template that cannot yield an instance: the message names the template, the seed and what failed."""


class NoRowFits(TemplateSpecError):
    """A row parameter for which the seed's data hold no fitting record: the template defines no instance at this
    seed (a seed's data can lack what a template's story needs), as opposed to a template that is wrong."""


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RowParameter(_Block):
    """One row of `row` (a table of the site) from the site's seeded data: among the rows whose columns equal
    `where` (values may use earlier parameters) and for which the expression `filter` is true (the candidate is
    `it`), ordered by `order_by` (columns, `-column` descending, then the key), the one `pick` says."""

    row: str
    where: dict[str, Any] = Field(default_factory=dict)
    filter: str | None = None
    order_by: list[str] = Field(default_factory=list)
    pick: Literal["any", "first", "last"] = "any"


class ChoiceParameter(_Block):
    """One of the items of `choose`: a list (its items may use earlier parameters) or an expression giving one."""

    choose: list[Any] | str


class IntegerParameter(_Block):
    """A whole number from `integer[0]` to `integer[1]` inclusive that is a multiple of `step`."""

    integer: tuple[int, int]
    step: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> IntegerParameter:
        if self.integer[0] > self.integer[1]:
            raise ValueError(f"integer: {self.integer[0]} is above {self.integer[1]}")
        if self.first > self.integer[1]:
            raise ValueError(f"integer: no multiple of {self.step} from {self.integer[0]} to {self.integer[1]}")
        return self

    @property
    def first(self) -> int:
        """The smallest multiple of `step` in the range."""
        return -(-self.integer[0] // self.step) * self.step


class ValueParameter(_Block):
    """The value of the expression `value`, computed from earlier parameters and the site's rows."""

    value: str


Parameter = RowParameter | ChoiceParameter | IntegerParameter | ValueParameter


class DifficultyNotes(_Block):
    """What only the template knows of an instance's difficulty, as expressions over its parameters: the records
    on the deciding page that could be taken for the right one, and the values the agent must carry from one page to
    another. The rest (steps, forms, pages) is counted from the instance's scripted control."""

    distractors: str | None = None
    carried: str | None = None


class TemplateBlock(_Block):
    """A task file's `template:` block: its parameter space (`parameters`, in the order they are drawn), what varies
    between instances (`varies`, for people), how many seeds are published (`published`: seeds 1..N), and the
    difficulty notes. A template that cannot vary says why in `single_instance` and publishes one seed."""

    published: int = Field(default=1, ge=1, le=1000)
    varies: str | None = None
    single_instance: str | None = None
    parameters: dict[str, Parameter] = Field(default_factory=dict)
    difficulty: DifficultyNotes = Field(default_factory=DifficultyNotes)

    @model_validator(mode="after")
    def _varies_or_says_why_not(self) -> TemplateBlock:
        if self.parameters and not (self.varies or "").strip():
            raise ValueError("a template with parameters says what varies between its instances (varies)")
        if not self.parameters and not (self.single_instance or "").strip():
            raise ValueError("a template without parameters says why it cannot vary (single_instance)")
        if self.single_instance and self.parameters:
            raise ValueError("single_instance and parameters exclude each other")
        if self.single_instance and self.published != 1:
            raise ValueError("a single-instance template publishes one seed")
        reserved = {"seed", *ROW_FUNCTIONS} & set(self.parameters)
        if reserved:
            raise ValueError(f"parameter names {sorted(reserved)} are taken by the generator")
        return self

    @property
    def varying(self) -> bool:
        return bool(self.parameters)


def parse_instance_id(text: str) -> tuple[str, int] | None:
    """(template id, seed) of an instance id `TEMPLATE@SEED`, or None when `text` is not one."""
    match = _INSTANCE_ID.fullmatch(text)
    return None if match is None else (match["template"], int(match["seed"]))


def instance_id(template: str, seed: int) -> str:
    return f"{template}{INSTANCE_MARK}{seed}"


# --- rendering ---------------------------------------------------------------------------------------------------

def _money(cents: int, currency: str = "") -> str:
    """Whole cents as the sites print them: `129.00 USD` (`129.00` without a currency)."""
    sign = "-" if cents < 0 else ""
    amount = f"{sign}{abs(int(cents)) // 100:,}.{abs(int(cents)) % 100:02d}"
    return f"{amount} {currency}".strip()


def _plain_money(cents: int) -> str:
    """Whole cents as a form field takes them: `1234.50` (no thousands separator)."""
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(int(cents)) // 100}.{abs(int(cents)) % 100:02d}"


def _digits_swapped(text: str) -> str:
    """`text` with its last two neighbouring digits that differ swapped: a near-miss of a number, of the same length
    and never equal to `text`. Where all its digits are one digit (`9.99`, `5555`), none can be swapped: its last
    digit is changed to the next lower one (0 to 1) instead, so every text with a digit has a near-miss (a price of
    a seed's data can be 9.99); a text without a digit is an error."""
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    if not digits:
        raise TemplateSpecError(f"{text!r} has no digit to make a near-miss of")
    chars = list(text)
    pairs = [(digits[i - 1], digits[i]) for i in range(1, len(digits)) if text[digits[i - 1]] != text[digits[i]]]
    if pairs:
        first, second = pairs[-1]
        chars[first], chars[second] = chars[second], chars[first]
    else:
        last = int(text[digits[-1]])
        chars[digits[-1]] = str(last - 1 if last else 1)
    return "".join(chars)


MAX_VALUE_SIZE = 100_000
"""The most items or characters one `*` or `**` of an expression may build: a task's values are names, numbers and
short texts, and a template that builds more is refused instead of filling memory."""


_DICT_ATTRIBUTES = frozenset(dir(dict))
"""What `getattr` finds on a plain dict: any other name is no attribute of one (a dict has no instance attributes)."""


class _TemplateSandbox(ImmutableSandboxedEnvironment):
    """The sandbox with `*` and `**` bounded (`MAX_VALUE_SIZE`)."""

    intercepted_binops = frozenset({"*", "**"})

    def getattr(self, obj: Any, attribute: str) -> Any:
        """`row.column` of a plain dict (every row a filter or a row function gives) read as Jinja's sandbox reads
        it, without its failed attribute lookup first: on a dict a name that is not one of dict's own attributes
        raises AttributeError, and the sandbox then takes the item. Anything else, and a missing key, as the sandbox
        does (a fifth of drawing an instance went to the raised and caught AttributeError)."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 64:
            raise TemplateSpecError(f"{left} ** {right} is beyond what a task's value needs")
        if operator == "*":
            sizes = [len(x) for x in (left, right) if isinstance(x, str | list | tuple)]
            counts = [x for x in (left, right) if isinstance(x, int) and not isinstance(x, bool)]
            if sizes and counts and sizes[0] * counts[0] > MAX_VALUE_SIZE:
                raise TemplateSpecError(f"a value of {sizes[0] * counts[0]} items is beyond {MAX_VALUE_SIZE}")
        return super().call_binop(context, operator, left, right)


@functools.cache
def _environment() -> ImmutableSandboxedEnvironment:
    env = _TemplateSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    # Jinja's `random` filter and `lipsum` draw from Python's shared generator: an instance would differ from one
    # load to the next. Draws come only from the template's parameters (keyed by template and seed).
    del env.filters["random"]
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    env.filters["money"] = _money
    env.filters["plain_money"] = _plain_money
    env.filters["digits_swapped"] = _digits_swapped
    return env


_WHOLE_EXPRESSION = re.compile(r"\A\{\{(?P<expr>(?:(?!\}\}|\{\{).)*)\}\}\Z", re.DOTALL)


@functools.lru_cache(maxsize=4096)
def _expression(text: str) -> Callable[..., Any]:
    return _environment().compile_expression(text, undefined_to_none=False)


@functools.lru_cache(maxsize=4096)
def _text_template(text: str) -> Any:
    return _environment().from_string(text)


def evaluate(expression: str, context: Mapping[str, Any]) -> Any:
    """The value of one Jinja2 expression in `context` (an undefined name is an error, never blank)."""
    value = _expression(expression)(**context)
    if isinstance(value, StrictUndefined):
        str(value)  # raises UndefinedError naming what is undefined
    return value


def render(value: Any, context: Mapping[str, Any]) -> Any:
    """`value` with every string rendered in `context`: a string that is one `{{ expression }}` alone gives the
    expression's value, any other string with `{{`/`{%` the rendered text; mapping keys stay as written."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        whole = _WHOLE_EXPRESSION.fullmatch(value)
        if whole is not None:
            return evaluate(whole["expr"], context)
        return _text_template(value).render(context)
    if isinstance(value, list):
        return [render(item, context) for item in value]
    if isinstance(value, dict):
        return {key: render(item, context) for key, item in value.items()}
    return value


# --- drawing parameters ------------------------------------------------------------------------------------------

_Indexes = dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], list[Mapping[str, Any]]]]
_KEPT_INDEXES: collections.OrderedDict[int, tuple[SeededRows, _Indexes]] = collections.OrderedDict()
"""The row functions' indexes of the most recent seeded data (each held with its data, so its id stays its own): the
data of a (site, seed) is the same object for every template drawn from it (sites/kit/seeding.py), and building a
table's index once per instance was a tenth of drawing one."""
_KEPT_INDEX_LIMIT = 32
_KEPT_LOCK = threading.Lock()


def _indexes_of(rows: SeededRows) -> _Indexes:
    """The indexes kept for `rows` (the very object), else new ones, kept (the least recently used let go)."""
    with _KEPT_LOCK:
        kept = _KEPT_INDEXES.get(id(rows))
        if kept is not None and kept[0] is rows:
            _KEPT_INDEXES.move_to_end(id(rows))
            return kept[1]
        indexes: _Indexes = {}
        _KEPT_INDEXES[id(rows)] = (rows, indexes)
        while len(_KEPT_INDEXES) > _KEPT_INDEX_LIMIT:
            _KEPT_INDEXES.popitem(last=False)
        return indexes


def _row_functions(rows: SeededRows) -> dict[str, Callable[..., Any]]:
    """What expressions may call on the site's seeded data: `rows(table, column=value, ...)` (a list of mappings),
    `one(table, ...)` (exactly one row, an error otherwise), `count(table, ...)` and `similar(table, column, value)`
    (the rows whose `column` looks like `value` without being it: `looks_alike`)."""

    indexes = _indexes_of(rows)

    def matching(table: str, where: Mapping[str, Any]) -> list[dict[str, Any]]:
        if table not in rows:
            raise TemplateSpecError(f"the site has no table {table!r}; it has {', '.join(sorted(rows))}")
        columns = tuple(sorted(where))
        try:
            wanted = tuple(where[c] for c in columns)
            # A filter may ask one(...) or count(...) of every candidate row: each table is indexed once per set of
            # columns asked about, not scanned per call (equal values hash alike, so this is the scan's `==`).
            index = indexes.get((table, columns))
            if index is None:
                index = {}
                for row in rows[table]:
                    index.setdefault(tuple(row.get(c) for c in columns), []).append(row)
                indexes[(table, columns)] = index  # kept only once whole (a row's unhashable value stops it)
            found = index.get(wanted, [])
        except TypeError:  # a value that cannot be hashed (a list): compared row by row
            found = [row for row in rows[table] if all(row.get(k) == v for k, v in where.items())]
        return [dict(row) for row in found]

    def one(table: str, /, **where: Any) -> dict[str, Any]:
        found = matching(table, where)
        if len(found) != 1:
            raise TemplateSpecError(f"one({table!r}, {where}) matches {len(found)} rows, not one")
        return found[0]

    def similar(table: str, column: str, value: str) -> list[dict[str, Any]]:
        return [row for row in matching(table, {}) if isinstance(row.get(column), str)
                and row[column] != value and looks_alike(row[column], value)]

    def every(table: str, /, **where: Any) -> list[dict[str, Any]]:
        return matching(table, where)

    def count(table: str, /, **where: Any) -> int:
        return len(matching(table, where))

    return {"rows": every, "one": one, "count": count, "similar": similar}


def looks_alike(text: str, other: str) -> bool:
    """Whether two names or numbers could be taken for each other at a glance: they share a word (case aside), or
    they are nearly the same text (at most two characters apart, or 80% alike)."""
    words = {w for w in re.split(r"\W+", text.casefold()) if len(w) > 1}
    if words & {w for w in re.split(r"\W+", other.casefold()) if len(w) > 1}:
        return True
    first, second = text.casefold(), other.casefold()
    return (_edits_within(first, second, 2)
            or difflib.SequenceMatcher(None, first, second).ratio() >= 0.8)


def _edits_within(first: str, second: str, most: int) -> bool:
    """Whether at most `most` insertions, deletions or substitutions turn `first` into `second`."""
    if abs(len(first) - len(second)) > most:
        return False
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, 1):
        current = [i]
        for j, b in enumerate(second, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        if min(current) > most:
            return False
        previous = current
    return previous[-1] <= most


_CANDIDATES = "candidate_rows_"
_FILTER_LOOP = "{%% for it in " + _CANDIDATES + " %%}{%% if (%s) %%}{{ loop.index0 }} {%% endif %%}{%% endfor %%}"
"""The test in parentheses: `{% if A if B else C %}` is no statement, `{% if (A if B else C) %}` is the expression."""


@functools.lru_cache(maxsize=1024)
def _filter_loop(test: str) -> Any:
    """The filter `test` as one template looping over the candidates (the indices of those it keeps), or None where
    it cannot be one: a filter that names the loop's own variables or holds a template delimiter."""
    _expression(test)  # not one expression (`A, B` would loop as a tuple, always true): the per-row call's error
    if any(mark in test for mark in ("{%", "%}", "{{", "}}", "{#", "#}")):
        return None
    env = _environment()
    if meta.find_undeclared_variables(env.parse("{{ " + test + " }}")) & {"loop", _CANDIDATES}:
        return None
    return env.from_string(_FILTER_LOOP % test)


def _filtered(test: str, context: Mapping[str, Any], candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates for which the expression `test` is true (each candidate is `it`). One render loops over them
    all (a call of a compiled expression per row builds a context per row: most of what drawing costs); the same
    test, the same truth and the same errors as the per-row call, which a filter that cannot loop keeps."""
    loop = _filter_loop(test)
    if loop is None:
        row_test = _expression(test)
        return [row for row in candidates if row_test(**{**context, "it": row})]  # the row is `it`, a parameter too
    kept = loop.render({**context, _CANDIDATES: candidates}).split()
    return [candidates[int(index)] for index in kept]


def _ordered(candidates: list[dict[str, Any]], order_by: Sequence[str]) -> list[dict[str, Any]]:
    for column in reversed(order_by):
        name = column.lstrip("-")
        candidates = sorted(candidates, key=lambda row, name=name: (row.get(name) is None, row.get(name)),  # type: ignore[misc]
                            reverse=column.startswith("-"))
    return candidates


def _draw(name: str, parameter: Parameter, context: dict[str, Any], rng: random.Random,
          rows: Callable[[], SeededRows]) -> Any:
    if isinstance(parameter, IntegerParameter):
        first, high = parameter.first, parameter.integer[1]
        return first + parameter.step * rng.randrange((high - first) // parameter.step + 1)
    if isinstance(parameter, ChoiceParameter):
        choose = parameter.choose
        if isinstance(choose, str):  # an expression, with or without its braces (as `value` and `filter` take)
            braced = _WHOLE_EXPRESSION.fullmatch(choose.strip())
            items = evaluate(braced["expr"] if braced else choose, context)
        else:
            items = render(choose, context)
        if not isinstance(items, list | tuple) or not items:
            raise TemplateSpecError(f"parameter {name}: choose gives {items!r}, not a non-empty list")
        return rng.choice(list(items))
    if isinstance(parameter, ValueParameter):
        return evaluate(parameter.value, context)
    seeded = rows()
    if parameter.row not in seeded:
        raise TemplateSpecError(f"parameter {name}: the site has no table {parameter.row!r}")
    where = render(parameter.where, context)
    candidates = [dict(row) for row in seeded[parameter.row] if all(row.get(k) == v for k, v in where.items())]
    if parameter.filter is not None:
        candidates = _filtered(parameter.filter, context, candidates)
    columns = set(seeded[parameter.row][0]) if seeded[parameter.row] else set()
    unknown = sorted(({c.lstrip("-") for c in parameter.order_by} | set(where)) - columns) if columns else []
    if unknown:
        raise TemplateSpecError(f"parameter {name}: table {parameter.row} has no column {', '.join(unknown)}; it has "
                                f"{', '.join(sorted(columns))}")
    if not candidates:
        raise NoRowFits(f"parameter {name}: no {parameter.row} row matches (where {where}"
                                + (f", filter {parameter.filter}" if parameter.filter else "") + ")")
    candidates = _ordered(candidates, parameter.order_by)
    if parameter.pick == "first":
        return candidates[0]
    if parameter.pick == "last":
        return candidates[-1]
    return rng.choice(candidates)


def draw_parameters(block: TemplateBlock, *, key: str, seed: int, rows: Callable[[], SeededRows]) -> dict[str, Any]:
    """The template's parameters for `seed`, drawn in order from a generator keyed by (`key`, `seed`); `rows` gives
    the site's seeded data for the seed (called only when a parameter or expression needs it)."""
    rng = random.Random(f"{key}{INSTANCE_MARK}{seed}:parameters")
    context: dict[str, Any] = {"seed": seed}
    lazy = _LazyRows(rows)
    context.update({name: functools.partial(lazy.call, name) for name in ROW_FUNCTIONS})
    for name, parameter in block.parameters.items():
        try:
            context[name] = _draw(name, parameter, context, rng, rows)
        except TemplateSpecError:
            raise
        except (TemplateError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise TemplateSpecError(f"parameter {name}: {type(exc).__name__}: {exc}") from exc
    return context


class _LazyRows:
    """The row functions, made on first use (a template of values alone never seeds the site)."""

    def __init__(self, rows: Callable[[], SeededRows]) -> None:
        self._rows = rows
        self._functions: dict[str, Callable[..., Any]] | None = None

    def call(self, function: str, /, *args: Any, **kwargs: Any) -> Any:
        if self._functions is None:
            self._functions = _row_functions(self._rows())
        return self._functions[function](*args, **kwargs)


def drawn_values(context: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The drawn parameters as JSON-normal values (what an instance records it was made with)."""
    return {name: context[name] for name in names}


def template_block(data: dict[str, Any], where: str) -> TemplateBlock | None:
    """The file's `template:` block, validated (None for a fixed task); TemplateSpecError names `where`."""
    raw = data.get("template")
    if raw is None:
        return None
    try:
        return TemplateBlock.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"template.{'.'.join(str(p) for p in err['loc']) or '(block)'}: {err['msg']}"
                             for err in exc.errors())
        raise TemplateSpecError(f"{where}: {problems}") from exc
