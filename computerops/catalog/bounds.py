"""Inserts a task allows are counted: a catalog rule over every task file (tests/test_catalog_bounds.py).

A rule of `allowed_mutations` that allows inserts lets the agent add rows; without a check that counts them, an extra
row beside the right one passes (a second contact added with the one asked for). So each such rule must be bounded
by a check that counts the rows it allows:

- an `effects` check with an upper bound (`count` or `at_most`), in all (not `per` value of a column: a new value is
  a group of its own), whose selector picks inserts of the rule's table and covers the rule;
- or a `row` check (it always counts: `count`, 1 by default) of the rule's table whose `where` covers the rule: the
  final state then holds at most that many of them (a row the agent added and then deleted is not there, so an own
  correction by deletion stays right);

where a selector covers a rule when every column it names is one the rule fixes, to a value it matches whatever the
rule lets through (`{text: ...}` where the rule says `{exact: ...}`, never the other way). Or the rule says why no
count is right (`MutationRule.unbounded`: the instruction lets the agent add as many as it needs; the site itself
inserts the rows, once per request another check counts).

What the rule cannot tell: whether the bound is the number the instruction implies (an `at_most: 5` where one row is
asked for passes it), and whether a bound the site keeps (one checkpoint per batch, refused by its own rules) makes a
check unnecessary: such a task declares `unbounded` or counts anyway. And an `effects` count refuses the agent that
deletes its wrong row and adds it again (its journal holds two inserts): where the rows' identity is known, a `row`
check is the bound that allows it.
"""

from __future__ import annotations

from tasks.spec import EffectsCheck, MutationRule, RowCheck, Scalar, Typed
from tasks.task import TaskSpec
from tasks.values import is_identifier
from verifier.matching import same_value

Value = Scalar | Typed


def implies(allowed: Value, counted: Value) -> bool:
    """Every value a rule's `allowed` admits, a check's `counted` admits too (`verifier.matching.same_value`): the
    same value, the same typed value, or a plain one (not an id, which compares without case) the typed one matches."""
    if allowed == counted:
        return True
    if isinstance(allowed, Typed):
        return (isinstance(counted, Typed) and counted.type == allowed.type and counted.type != "exact"
                and same_value(allowed.value, counted))
    if isinstance(counted, Typed):
        return (isinstance(allowed, str) and not is_identifier(allowed) and counted.type != "exact"
                and same_value(allowed, counted))
    return same_value(allowed, counted) and same_value(counted, allowed)


def covers(where: dict[str, Value], rule: MutationRule) -> bool:
    """A selector's `where` picks every row the rule allows: each column it names, the rule fixes to a value it
    admits."""
    return all(column in rule.where and implies(rule.where[column], value) for column, value in where.items())


def counts(check: object, rule: MutationRule) -> bool:
    """The check bounds the number of rows the insert rule allows."""
    if isinstance(check, EffectsCheck):
        return (check.rows.table == rule.table and "insert" in check.rows.change and check.per is None
                and check.bounds[1] is not None and covers(check.rows.where, rule))
    return isinstance(check, RowCheck) and check.table == rule.table and covers(check.where, rule)


def bounding_checks(spec: TaskSpec, rule: MutationRule) -> list[str]:
    """The names of the task's checks that count the inserts `rule` allows."""
    return [check.name for check in spec.expected_state if counts(check, rule)]


def unbounded_inserts(spec: TaskSpec) -> list[str]:
    """Each rule that allows inserts no check counts and that does not say why (`unbounded`), named as the loader
    names a field: `allowed_mutations.0 (insert contact where {})`."""
    return [f"allowed_mutations.{index} (insert {rule.table} where {rule.where}): no check counts these inserts "
            "(an effects check with count or at_most, or a row check, whose selector covers the rule), and the "
            "rule does not say why it needs none (unbounded)"
            for index, rule in enumerate(spec.allowed_mutations)
            if "insert" in rule.change and rule.unbounded is None and not bounding_checks(spec, rule)]
