"""What the agent was shown, and which apps it used: procedure checks over what each response displayed.

Each operation records what its response showed (`Operation.shown`, written by the sites kit as the page rendered):
rows with the columns the page read, whole lists with their filter, and named documents. A `seen` check asks
whether a fact was among them within a window; a row is matched against `where` as it was when the page rendered
(the final state with every later journal entry undone), so a page that showed a record before it changed does not
show the change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from sites.kit.records import JournalEntry, Operation, Row, Scalar, StateSnapshot
from tasks.spec import NotUsed, Seen, ShownFact, Typed
from verifier.checks import window_of
from verifier.matching import row_matches, same_value
from verifier.verdict import CheckResult


def _key(values: dict[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(values.items()))


@dataclass(frozen=True)
class History:
    """Rows of the tenant as they were after any operation: the final state with later journal entries undone."""

    final: StateSnapshot
    changes: dict[tuple[str, tuple[tuple[str, object], ...]], list[JournalEntry]]

    @classmethod
    def of(cls, state: StateSnapshot, journal: Sequence[JournalEntry]) -> History:
        changes: dict[tuple[str, tuple[tuple[str, object], ...]], list[JournalEntry]] = defaultdict(list)
        for entry in sorted(journal, key=lambda e: e.seq):
            changes[(entry.table, _key(entry.key))].append(entry)
        return cls(final=state, changes=dict(changes))

    def row_at(self, table: str, key: dict[str, Scalar], moment: int) -> Row | None:
        """The row with this primary key once operation `moment` was done; None when it did not exist then."""
        for entry in self.changes.get((table, _key(dict(key))), []):
            if entry.operation > moment:
                return entry.before
        return next((row for row in self.final.get(table, [])
                     if all(same_value(row.get(column), value) for column, value in key.items())), None)


    def rows_at(self, table: str, key: Sequence[str], moment: int) -> list[Row]:
        """Every row of the table once operation `moment` was done (`key`: its primary key's columns)."""
        candidates = [*self.final.get(table, []),
                      *(entry.before for (name, _), entries in self.changes.items() if name == table
                        for entry in entries if entry.before is not None)]
        keys = {tuple(row.get(column) for column in key) for row in candidates}
        found = (self.row_at(table, dict(zip(key, values, strict=True)), moment) for values in sorted(keys, key=repr))
        return [row for row in found if row is not None]


def _fails(check: Seen | NotUsed, detail: str) -> CheckResult:
    return CheckResult(name=check.name, category="procedure", passed=False, detail=detail)


def _data_time(op: Operation) -> int:
    """The operation after which the data a response showed was current (older for a stale copy)."""
    assert op.shown is not None
    return op.shown.as_of if op.shown.as_of is not None else op.seq


def _rows_shown(fact: ShownFact, op: Operation, history: History) -> list[Row]:
    """Rows of the fact's table this response showed with all the fact's fields, as they were then, that match
    `where`."""
    assert op.shown is not None and fact.table is not None
    found: list[Row] = []
    for group in op.shown.records:
        if group.table != fact.table or not set(fact.fields) <= set(group.fields):
            continue
        for values in group.rows:
            row = history.row_at(group.table, dict(zip(group.key, values, strict=True)), _data_time(op))
            if row is not None and row_matches(row, fact.where):
                found.append(row)
    return found


def _all_with_fields(fact: ShownFact, op: Operation, history: History) -> bool:
    """Every row of the fact's table the response showed that matched `where` then was shown with all of the
    fact's fields (a list shows its rows with the same columns; this refuses one that left a column out)."""
    assert op.shown is not None
    for group in op.shown.records:
        if group.table != fact.table or set(fact.fields) <= set(group.fields):
            continue
        for values in group.rows:
            row = history.row_at(group.table, dict(zip(group.key, values, strict=True)), _data_time(op))
            if row is not None and row_matches(row, fact.where):
                return False
    return True


def _every_row_on_it(fact: ShownFact, op: Operation, history: History) -> bool:
    """A searched list (its filter unstated) holds every row matching the fact's `where` then: each of them was
    among the rows the response showed ("Tara Nowak" searched shows each of her orders, whatever else it shows)."""
    assert op.shown is not None and fact.table is not None
    groups = [group for group in op.shown.records if group.table == fact.table]
    if not groups:
        return False
    key = groups[0].key
    on_it = {tuple(values) for group in groups for values in group.rows}
    wanted = [row for row in history.rows_at(fact.table, key, _data_time(op)) if row_matches(row, fact.where)]
    return all(tuple(row.get(column) for column in key) in on_it for row in wanted)


def _covers(listing_where: dict[str, Scalar], where: dict[str, Scalar | Typed]) -> bool:
    """A list filtered by `listing_where` holds every row matching `where`: each of its conditions is one of
    `where`'s."""
    return all(column in where and same_value(value, where[column]) for column, value in listing_where.items())


def describe_fact(fact: ShownFact) -> str:
    """The fact in words, one line: verdict details and docs/tasks.md both say it this way."""
    if fact.document is not None:
        return f"the document {fact.document}"
    where = " where " + ", ".join(f"{k}={str(v).replace(chr(10), chr(92) + 'n')}" for k, v in fact.where.items()) \
        if fact.where else ""
    if fact.listing:
        fields = f" with {', '.join(fact.fields)}" if fact.fields else ""
        return f"the whole list of {fact.table}{where}{fields} (its rows or their absence)"
    each = f" for each {fact.per} of {', '.join(map(str, fact.each))}" if fact.per is not None else ""
    return f"{fact.table}{where}: {', '.join(fact.fields)}{each}"


def shown_by(fact: ShownFact, ops: Sequence[Operation], history: History) -> Operation | None:
    """The first response among `ops` that showed the fact (for `per`/`each`, the one that completed it)."""
    if fact.document is not None:
        return next((op for op in ops if op.shown is not None and fact.document in op.shown.documents), None)
    if fact.listing:
        return next((op for op in ops if op.shown is not None
                     and any(lst.table == fact.table and (_every_row_on_it(fact, op, history) if lst.searched
                                                          else _covers(lst.where, fact.where))
                             for lst in op.shown.listings)
                     and _all_with_fields(fact, op, history)), None)
    if fact.per is None:
        return next((op for op in ops if _rows_shown(fact, op, history)), None)
    missing = list(fact.each)
    for op in ops:
        values = [row.get(fact.per) for row in _rows_shown(fact, op, history)]
        missing = [v for v in missing if not any(same_value(seen, v) for seen in values)]
        if not missing:
            return op
    return None


def check_seen(check: Seen, operations: Sequence[Operation], journal: Sequence[JournalEntry],
               state: StateSnapshot) -> CheckResult:
    """The fact, or one of its alternatives, was among what some response in the window showed
    (`tasks.spec.Seen`)."""
    window = window_of(check.before, check.after, operations, journal)
    if isinstance(window, str):
        return _fails(check, window)
    shown = [op for op in operations if op.shown is not None and window.admits(op.seq, _data_time(op))]
    words = window.words
    if not any(op.shown is not None for op in operations):
        return _fails(check, "the operations record nothing of what pages showed (evidence recorded before "
                             "ComputerOps recorded it)")
    history = History.of(state, journal)
    facts: list[ShownFact] = [check, *check.alternatives]
    for fact in facts:
        op = shown_by(fact, shown, history)
        if op is not None:
            return CheckResult(name=check.name, category="procedure", passed=True,
                               detail=f"shown {describe_fact(fact)} by operation #{op.seq} ({op.method} {op.path})"
                                      f"{words}")
    return _fails(check, f"never shown {' or '.join(describe_fact(f) for f in facts)}{words}")


def followed_redirect(op: Operation, previous: Operation | None) -> bool:
    """The browser followed the site's own redirect: a GET of the address the previous request of the same action
    answered with."""
    if previous is None or previous.location is None or op.method != "GET" or op.action != previous.action:
        return False
    target = urlsplit(previous.location)
    return unquote(target.path) == op.path and target.query == op.query


def apps_used(operations: Sequence[Operation]) -> list[Operation]:
    """The operations that used an app: every one an app served, apart from the browser following the site's own
    redirect after a request of another app (submitting the record form shows the new record)."""
    used = []
    for index, op in enumerate(operations):
        previous = operations[index - 1] if index else None
        if op.app is not None and not (followed_redirect(op, previous) and previous is not None
                                       and previous.app != op.app):
            used.append(op)
    return used


def check_not_used(check: NotUsed, operations: Sequence[Operation]) -> CheckResult:
    """No request was served by one of the apps, the site's own redirects after another app's request aside."""
    forbidden = set(check.apps)
    used = [op for op in apps_used(operations) if op.app in forbidden]
    if used:
        op = used[0]
        return _fails(check, f"{op.method} {op.path} (operation #{op.seq}) was served by app {op.app!r}")
    return CheckResult(name=check.name, category="procedure", passed=True,
                       detail=f"no request served by {', '.join(sorted(forbidden))}")
