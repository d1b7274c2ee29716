"""The predicates. Each takes evidence and a check from the task and returns a `CheckResult`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sites.kit.records import JournalEntry, Operation, Row, StateSnapshot
from tasks.spec import AnswerCheck, MutationRule, Ordered, RowCheck, RowSelector, ViaRoute, Visited
from verifier.matching import mismatched_columns, row_matches, unlike_columns
from verifier.verdict import CheckResult, Claim

_SHOWN = 3  # how many offending rows a detail names before summarising


def changed_row(entry: JournalEntry) -> Row:
    """The row a selector or rule is matched against: after the change, or before a delete."""
    return (entry.before if entry.change == "delete" else entry.after) or {}


def check_row(check: RowCheck, state: StateSnapshot) -> CheckResult:
    """Exactly `count` rows match `where`, and each has the expected values and `like` patterns."""
    if check.table not in state:
        return CheckResult(name=check.name, category="state", passed=False,
                           detail=f"table {check.table!r} is not in the final state")
    rows = [row for row in state[check.table] if row_matches(row, check.where)]
    if len(rows) != check.count:
        return CheckResult(
            name=check.name, category="state", passed=False,
            detail=f"{check.table} where {check.where}: expected {check.count} row(s), found {len(rows)}",
        )
    problems = [p for row in rows for p in [*mismatched_columns(row, check.expect), *unlike_columns(row, check.like)]]
    if problems:
        return CheckResult(name=check.name, category="state", passed=False,
                           detail=f"{check.table} where {check.where}: " + "; ".join(problems[:_SHOWN]))
    return CheckResult(name=check.name, category="state", passed=True,
                       detail=f"{check.table} where {check.where}: {len(rows)} row(s) as expected")


def check_answer(check: AnswerCheck, claim: Claim) -> CheckResult:
    """The final message matches every pattern and no forbidden pattern (case-insensitive)."""
    message = claim.message or ""
    if not message.strip():
        return CheckResult(name=check.name, category="state", passed=False, detail="no final message")
    missing = [p for p in check.patterns if not re.search(p, message, re.IGNORECASE)]
    present = [p for p in check.forbidden_patterns if re.search(p, message, re.IGNORECASE)]
    if missing or present:
        parts = ([f"missing {missing}"] if missing else []) + ([f"forbidden {present}"] if present else [])
        return CheckResult(name=check.name, category="state", passed=False, detail="answer " + ", ".join(parts))
    return CheckResult(name=check.name, category="state", passed=True, detail="answer matches")


def _allowed(entry: JournalEntry, rule: MutationRule) -> bool:
    if entry.table != rule.table or entry.change not in rule.change:
        return False
    if not row_matches(changed_row(entry), rule.where):
        return False
    if entry.change == "update" and rule.fields is not None:
        return set(entry.changed_fields()) <= set(rule.fields)
    return True


def _describe(entry: JournalEntry) -> str:
    fields = ", ".join(entry.changed_fields()) if entry.change == "update" else ""
    return f"#{entry.seq} {entry.change} {entry.table} {entry.key}" + (f" ({fields})" if fields else "")


def check_mutations(rules: Sequence[MutationRule], journal: Sequence[JournalEntry]) -> CheckResult:
    """Every journal entry is allowed by some rule; anything else is a forbidden mutation."""
    forbidden = [entry for entry in journal if not any(_allowed(entry, rule) for rule in rules)]
    if forbidden:
        shown = "; ".join(_describe(e) for e in forbidden[:_SHOWN])
        more = f" and {len(forbidden) - _SHOWN} more" if len(forbidden) > _SHOWN else ""
        return CheckResult(name="allowed-mutations", category="mutation", passed=False,
                           detail=f"{len(forbidden)} forbidden change(s): {shown}{more}")
    return CheckResult(name="allowed-mutations", category="mutation", passed=True,
                       detail=f"all {len(journal)} change(s) allowed")


def select_entries(selector: RowSelector, journal: Sequence[JournalEntry]) -> list[JournalEntry]:
    return [
        entry for entry in journal
        if entry.table == selector.table and entry.change in selector.change
        and row_matches(changed_row(entry), selector.where)
    ]


def check_via_route(
    check: ViaRoute, journal: Sequence[JournalEntry], operations: Sequence[Operation]
) -> CheckResult:
    """The selected changes exist and each was caused by a request with this method and path."""
    entries = select_entries(check.rows, journal)
    if not entries:
        return CheckResult(name=check.name, category="procedure", passed=False,
                           detail=f"no {'/'.join(check.rows.change)} of {check.rows.table} where {check.rows.where}")
    by_seq = {op.seq: op for op in operations}
    route = re.compile(check.path)
    for entry in entries:
        op = by_seq.get(entry.operation)
        if op is None:
            return CheckResult(name=check.name, category="procedure", passed=False,
                               detail=f"{_describe(entry)} has no recorded operation #{entry.operation}")
        if op.method != check.method or not route.fullmatch(op.path):
            return CheckResult(
                name=check.name, category="procedure", passed=False,
                detail=f"{_describe(entry)} was made by {op.method} {op.path}, not {check.method} {check.path}",
            )
    return CheckResult(name=check.name, category="procedure", passed=True,
                       detail=f"{len(entries)} change(s) made by {check.method} {check.path}")


def check_ordered(check: Ordered, journal: Sequence[JournalEntry]) -> CheckResult:
    """Some change selected by `first` precedes every change selected by `then`."""
    first = select_entries(check.first, journal)
    then = select_entries(check.then, journal)
    if not first or not then:
        missing = "first" if not first else "then"
        return CheckResult(name=check.name, category="procedure", passed=False,
                           detail=f"no change selected by {missing!r}")
    if min(e.seq for e in first) < min(e.seq for e in then):
        return CheckResult(name=check.name, category="procedure", passed=True,
                           detail=f"{check.first.table} change precedes {check.then.table} change")
    return CheckResult(
        name=check.name, category="procedure", passed=False,
        detail=f"{_describe(min(then, key=lambda e: e.seq))} came before any {check.first.table} change",
    )


def check_visited(check: Visited, operations: Sequence[Operation]) -> CheckResult:
    """Some request with the method and a fully matching path succeeded."""
    route = re.compile(check.path)
    hits = [
        op for op in operations
        if op.method == check.method and route.fullmatch(op.path) and 200 <= op.status < 300
    ]
    if not hits:
        return CheckResult(name=check.name, category="procedure", passed=False,
                           detail=f"no successful {check.method} request to {check.path}")
    return CheckResult(name=check.name, category="procedure", passed=True,
                       detail=f"{check.method} {hits[0].path} (operation #{hits[0].seq})")
