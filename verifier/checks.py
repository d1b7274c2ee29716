"""The predicates. Each takes evidence and a check from the task and returns a `CheckResult`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote_plus

from sites.kit.broker import RowKey, inserted_rows, row_key
from sites.kit.records import JournalEntry, Operation, Row, StateSnapshot
from tasks.spec import (
    EffectsCheck,
    FaultFired,
    MutationRule,
    Ordered,
    RowCheck,
    RowSelector,
    ViaRoute,
    Visited,
)
from verifier.facts import KnownIds, text_problems
from verifier.matching import mismatched_columns, row_matches
from verifier.verdict import CheckResult

_SHOWN = 3  # how many offending rows a detail names before summarising


def changed_row(entry: JournalEntry) -> Row:
    """The row a selector or rule is matched against: after the change, or before a delete."""
    return (entry.before if entry.change == "delete" else entry.after) or {}


def _text_columns(row: Row, check: RowCheck, known: KnownIds) -> list[str]:
    on_row = known.on(row)
    return [f"{column}: {problem}" for column, text_check in check.text.items()
            for problem in (text_problems(row[column], text_check, on_row) if column in row else ["no such column"])]


def check_row(check: RowCheck, state: StateSnapshot, known: KnownIds | None = None) -> CheckResult:
    """Exactly `count` rows match `where`, and each has the expected values and states its text facts (read with
    `known`, the tenant's ids and record words: `KnownIds.of`, from the state alone when not given)."""
    if check.table not in state:
        return CheckResult(name=check.name, category="state", passed=False,
                           detail=f"table {check.table!r} is not in the final state")
    rows = [row for row in state[check.table] if row_matches(row, check.where)]
    if len(rows) != check.count:
        return CheckResult(
            name=check.name, category="state", passed=False,
            detail=f"{check.table} where {check.where}: expected {check.count} row(s), found {len(rows)}",
        )
    known = known or (KnownIds.of(state) if check.text else KnownIds(kinds={}))
    problems = [p for row in rows
                for p in [*mismatched_columns(row, check.expect), *_text_columns(row, check, known)]]
    if problems:
        return CheckResult(name=check.name, category="state", passed=False,
                           detail=f"{check.table} where {check.where}: " + "; ".join(problems[:_SHOWN]))
    return CheckResult(name=check.name, category="state", passed=True,
                       detail=f"{check.table} where {check.where}: {len(rows)} row(s) as expected")


def select_entries(selector: RowSelector, journal: Sequence[JournalEntry]) -> list[JournalEntry]:
    return [
        entry for entry in journal
        if entry.table == selector.table and entry.change in selector.change
        and row_matches(changed_row(entry), selector.where)
    ]


def check_effects(check: EffectsCheck, journal: Sequence[JournalEntry]) -> CheckResult:
    """The number of selected changes (those that change `fields`, for updates) is within the bounds, in all or
    for each value of `per`, and every value of `each` has its changes."""
    entries = [e for e in select_entries(check.rows, journal)
               if check.fields is None or e.change != "update" or set(e.changed_fields()) & set(check.fields)]
    low, high = check.bounds
    what = f"{'/'.join(check.rows.change)} of {check.rows.table} where {check.rows.where}"
    if check.per is None:
        groups: Counter[str] = Counter({"": len(entries)})
    else:
        groups = Counter(repr(changed_row(e).get(check.per)) for e in entries)
        for value in check.each:
            groups.setdefault(repr(value), 0)
    wrong = [(key, n) for key, n in sorted(groups.items()) if n < low or (high is not None and n > high)]
    bound = f"{low}" if high == low else f"{low}..{'' if high is None else high}"
    if wrong:
        shown = ", ".join(f"{check.per}={key}: {n}" if check.per else str(n) for key, n in wrong[:_SHOWN])
        return CheckResult(name=check.name, category="state", passed=False,
                           detail=f"{what}: {shown} change(s), expected {bound}" + (" each" if check.per else ""))
    return CheckResult(name=check.name, category="state", passed=True,
                       detail=f"{what}: {len(entries)} change(s), {bound}" + (" each" if check.per else ""))


def _allowed(entry: JournalEntry, rule: MutationRule, created: frozenset[RowKey]) -> bool:
    if entry.table != rule.table or entry.change not in rule.change:
        return False
    if rule.created_in_episode and row_key(entry.table, entry.key) not in created:
        return False
    if not row_matches(changed_row(entry), rule.where):
        return False
    if entry.change == "update" and rule.fields is not None:
        return set(entry.changed_fields()) <= set(rule.fields)
    return True


def _describe(entry: JournalEntry) -> str:
    fields = ", ".join(entry.changed_fields()) if entry.change == "update" else ""
    return f"#{entry.seq} {entry.change} {entry.table} {entry.key}" + (f" ({fields})" if fields else "")


def _own_correction(entry: JournalEntry, rules: Sequence[MutationRule], created: frozenset[RowKey]) -> bool:
    """The agent corrected a row it inserted in this episode: an update that leaves it a row some rule allows
    inserting, or its deletion. One rule on every site (`TaskSpec.own_corrections`), and the broker's: a row the
    episode inserted is one `sites.kit.broker.inserted_rows` names, whose change or deletion the broker allows
    whatever the grants (`own_correction`); what the row becomes is the verdict's to judge."""
    if row_key(entry.table, entry.key) not in created:
        return False
    if entry.change == "delete":
        return True
    return entry.change == "update" and any(
        rule.table == entry.table and "insert" in rule.change and row_matches(entry.after or {}, rule.where)
        for rule in rules)


def check_mutations(rules: Sequence[MutationRule], journal: Sequence[JournalEntry], *,
                    own_corrections: bool = True) -> CheckResult:
    """Every journal entry is allowed by some rule, or (`own_corrections`) corrects a row the episode inserted;
    anything else is a forbidden mutation."""
    created = inserted_rows(journal)
    forbidden = [entry for entry in journal if not any(_allowed(entry, rule, created) for rule in rules)
                 and not (own_corrections and _own_correction(entry, rules, created))]
    if forbidden:
        shown = "; ".join(_describe(e) for e in forbidden[:_SHOWN])
        more = f" and {len(forbidden) - _SHOWN} more" if len(forbidden) > _SHOWN else ""
        return CheckResult(name="allowed-mutations", category="mutation", passed=False,
                           detail=f"{len(forbidden)} forbidden change(s): {shown}{more}")
    return CheckResult(name="allowed-mutations", category="mutation", passed=True,
                       detail=f"all {len(journal)} change(s) allowed")


def check_via_route(
    check: ViaRoute, journal: Sequence[JournalEntry], operations: Sequence[Operation]
) -> CheckResult:
    """The selected changes exist and each was caused by a request of this route or one of its alternatives."""
    entries = select_entries(check.rows, journal)
    if not entries:
        return CheckResult(name=check.name, category="procedure", passed=False,
                           detail=f"no {'/'.join(check.rows.change)} of {check.rows.table} where {check.rows.where}")
    by_seq = {op.seq: op for op in operations}
    routes = [(check.method, re.compile(check.path)), *((r.method, re.compile(r.path)) for r in check.alternatives)]
    named = " or ".join(f"{m} {p.pattern}" for m, p in routes)
    for entry in entries:
        op = by_seq.get(entry.operation)
        if op is None:
            return CheckResult(name=check.name, category="procedure", passed=False,
                               detail=f"{_describe(entry)} has no recorded operation #{entry.operation}")
        if not any(op.method == method and route.fullmatch(op.path) for method, route in routes):
            return CheckResult(name=check.name, category="procedure", passed=False,
                               detail=f"{_describe(entry)} was made by {op.method} {op.path}, not {named}")
    return CheckResult(name=check.name, category="procedure", passed=True,
                       detail=f"{len(entries)} change(s) made by {named}")


def check_ordered(check: Ordered, journal: Sequence[JournalEntry]) -> CheckResult:
    """Every change selected by `first` precedes every change selected by `then`: "do A, then B" is not done by a B
    before the last A. A failure names the offending change."""
    first = select_entries(check.first, journal)
    then = select_entries(check.then, journal)
    if not first or not then:
        missing = "first" if not first else "then"
        return CheckResult(name=check.name, category="procedure", passed=False,
                           detail=f"no change selected by {missing!r}")
    last_first, first_then = max(first, key=lambda e: e.seq), min(then, key=lambda e: e.seq)
    if last_first.seq < first_then.seq:
        return CheckResult(name=check.name, category="procedure", passed=True, detail=_in_order(check, first, then))
    if min(e.seq for e in first) > first_then.seq:
        return CheckResult(name=check.name, category="procedure", passed=False,
                           detail=f"{_describe(first_then)} came before any {check.first.table} change")
    return CheckResult(
        name=check.name, category="procedure", passed=False,
        detail=f"{_describe(last_first)} came after {_describe(first_then)}: every {check.first.table} change must "
               f"precede every {check.then.table} change",
    )


def _in_order(check: Ordered, first: Sequence[JournalEntry], then: Sequence[JournalEntry]) -> str:
    """What a passed `ordered` check found: one change each (the words of every verdict since the check began), or
    how many of each."""
    if len(first) == len(then) == 1:
        return f"{check.first.table} change precedes {check.then.table} change"
    return f"all {len(first)} {check.first.table} change(s) precede all {len(then)} {check.then.table} change(s)"


def _successful(method: str, path: str, operations: Sequence[Operation]) -> list[Operation]:
    route = re.compile(path)
    return [op for op in operations if op.method == method and route.fullmatch(op.path) and 200 <= op.status < 300]


def first_change(selector: RowSelector | None, journal: Sequence[JournalEntry]) -> JournalEntry | None:
    """The earliest journal entry a selector picks (any entry for None)."""
    entries = list(journal) if selector is None else select_entries(selector, journal)
    return min(entries, key=lambda e: e.seq, default=None)


@dataclass(frozen=True)
class Window:
    """When a procedure check's read counts: before operation `before` (None: no bound), and after `after` (None:
    no bound; a read at `after` itself counts only when `at_or_after`, i.e. the moment is a change, which a page
    rendered by the same operation already shows), with words for the detail."""

    before: int | None
    after: int | None
    at_or_after: bool
    words: str

    def admits(self, seq: int, data_time: int) -> bool:
        """A response of operation `seq` whose data was current after operation `data_time`."""
        if self.before is not None and seq >= self.before:
            return False
        if self.after is None:
            return True
        return data_time >= self.after if self.at_or_after else data_time > self.after


def window_of(before: Literal["first-write"] | RowSelector | None, after: RowSelector | FaultFired | None,
              operations: Sequence[Operation], journal: Sequence[JournalEntry]) -> Window | str:
    """The window `before`/`after` set (`visited`, `seen`); a detail saying why there is none when `after` selects
    no change to look after."""
    bound, words = None, ""
    if before is not None:
        first = first_change(None if before == "first-write" else before, journal)
        if first is not None:
            bound = first.operation
            words += f" before operation #{first.operation} ({_describe(first)})"
    if isinstance(after, FaultFired):
        fired = [op.seq for op in operations
                 if op.fault is not None and op.fault.applied and op.fault.fault == after.fault_fired]
        if fired:
            words += f" after operation #{max(fired)} (last {after.fault_fired})"
            return Window(bound, max(fired), False, words)
    elif after is not None:
        change = first_change(after, journal)
        if change is None:
            return f"no change of {after.table} where {after.where} to look after"
        return Window(bound, change.operation, True, words + f" after operation #{change.operation} "
                                                            f"({_describe(change)})")
    return Window(bound, None, False, words)


def check_visited(check: Visited, operations: Sequence[Operation], journal: Sequence[JournalEntry]) -> CheckResult:
    """Some request with the method and a fully matching path succeeded, within the window `before`/`after` set:
    before the operation of the first change `before` selects (none selected: no bound), after the operation of
    the first change `after` selects (none selected: the check fails) or after the last one its fault fired on."""
    def failed(detail: str) -> CheckResult:
        return CheckResult(name=check.name, category="procedure", passed=False, detail=detail)

    pages = [(check.method, check.path, check.query), *((p.method, p.path, p.query) for p in check.alternatives)]
    hits = sorted({op.seq: op for method, path, query in pages for op in _successful(method, path, operations)
                   if query is None or re.search(query, unquote_plus(op.query))}.values(), key=lambda op: op.seq)
    queries = f" with query /{check.query}/" if check.query is not None else ""
    queries += "".join(f" or {m} {p}" + (f" with query /{q}/" if q else "") for m, p, q in pages[1:])
    window = window_of(check.before, check.after, operations, journal)
    if isinstance(window, str):
        return failed(window)
    hits = [op for op in hits if window.admits(op.seq, op.seq)]
    if not hits:
        return failed(f"no successful {check.method} request to {check.path}{queries}{window.words}")
    return CheckResult(name=check.name, category="procedure", passed=True,
                       detail=f"{check.method} {hits[0].path} (operation #{hits[0].seq}){queries}{window.words}")
