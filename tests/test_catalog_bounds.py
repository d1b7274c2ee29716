"""The catalog rule that every insert a task allows is counted (computerops/catalog/bounds.py): over the catalog, and
on hand-made rules and checks, with the wrong solution each bound tells apart (an extra row beside the right one)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from tiers import FULL

from computerops.catalog.bounds import bounding_checks, covers, unbounded_inserts
from sites.kit.records import JournalEntry
from tasks import load_catalog
from tasks.spec import EffectsCheck, MutationRule, RowCheck, Typed
from tasks.task import TaskSpec
from verifier.checks import check_effects, check_mutations

CATALOG = load_catalog()
ADD_CONTACT = CATALOG["webmail.add-contact-from-signature@1"]
NOOR = {"email": "noor.aziz@riverside-hall.example", "name": "Noor Aziz", "phone": "+44 161 555 0147",
        "company": "Riverside Hall"}


def test_every_insert_a_catalog_task_allows_is_counted_or_says_why_not() -> None:
    """Every template's rules that allow inserts are bounded by a check that counts their rows (every published
    instance in the full tier: the rule reads the drawn values, which a seed could make equal or not)."""
    tasks = CATALOG.values() if FULL else CATALOG.first_instances().values()
    found = {task.id: problems for task in tasks if (problems := unbounded_inserts(task.spec))}
    assert found == {}


def test_a_declared_unbounded_rule_says_why_in_words() -> None:
    declared = [rule.unbounded for task in CATALOG.first_instances().values() for rule in task.spec.allowed_mutations
                if rule.unbounded is not None]
    assert declared and all(len(why.split()) >= 8 for why in declared)


def _added(key: int, row: dict[str, Any]) -> JournalEntry:
    return JournalEntry(seq=key, operation=key, logical_time=key, table="contact", key={"id": key}, change="insert",
                        before=None, after={"id": key, **row})


def test_add_contact_counts_its_inserts_so_an_extra_contact_beside_noor_fails() -> None:
    """The blind review's defect: one contact asked for, any contact insert allowed, no count. The row check of
    Noor's address alone does not see a second contact; the rule finds that, and the count the task now has refuses
    it, while Noor added with a typo and corrected on her page (an own correction) still passes."""
    spec = ADD_CONTACT.spec
    [rule] = [r for r in spec.allowed_mutations if "insert" in r.change]
    assert bounding_checks(spec, rule) == ["one-contact-added"]
    without = spec.model_copy(update={"expected_state": [c for c in spec.expected_state
                                                         if c.name != "one-contact-added"]})
    assert [p.split(":")[0] for p in unbounded_inserts(without)] == ["allowed_mutations.0 (insert contact where {})"]
    [count] = [c for c in spec.expected_state if isinstance(c, EffectsCheck)]
    noor, bookings = _added(20, NOOR), _added(21, {**NOOR, "email": "bookings@riverside-hall.example"})
    assert check_effects(count, [noor]).passed and not check_effects(count, [noor, bookings]).passed
    typo = _added(20, {**NOOR, "phone": "+44 161 555 0174"})
    fixed = JournalEntry(seq=21, operation=21, logical_time=21, table="contact", key={"id": 20}, change="update",
                         before=typo.after, after={"id": 20, **NOOR})
    assert check_effects(count, [typo, fixed]).passed and check_mutations(spec.allowed_mutations, [typo, fixed]).passed


RULE = MutationRule(table="message", change=["insert"], where={"folder": "sent", "reply_to_id": 9,
                                                             "recipient": Typed(type="email", value="A@b.example")})


@pytest.mark.parametrize(("check", "counted"), [
    (RowCheck(name="c", table="message", where={"reply_to_id": 9}), True),  # fewer columns: more rows counted
    (RowCheck(name="c", table="message", where={}, expect={"folder": "sent"}), True),  # the whole table
    (RowCheck(name="c", table="message", where={"reply_to_id": 9}, count=0), True),  # none may stay
    (RowCheck(name="c", table="message", where={"recipient": Typed(type="email", value="a@B.example")}), True),
    (RowCheck(name="c", table="message", where={"subject": "Re: budget"}), False),  # a column the rule leaves free
    (RowCheck(name="c", table="message", where={"reply_to_id": 8}), False),  # another value
    (RowCheck(name="c", table="message", where={"recipient": Typed(type="exact", value="A@b.example")}), False),
    (RowCheck(name="c", table="draft", where={"reply_to_id": 9}), False),  # another table
    (EffectsCheck(name="c", rows={"table": "message", "change": ["insert"], "where": {"folder": "sent"}}, count=1),
     True),
    (EffectsCheck(name="c", rows={"table": "message", "change": ["insert"]}, at_most=2), True),
    (EffectsCheck(name="c", rows={"table": "message", "change": ["insert"]}, at_least=1), False),  # no upper bound
    (EffectsCheck(name="c", rows={"table": "message", "change": ["update"]}, count=1), False),  # not the inserts
    (EffectsCheck(name="c", rows={"table": "message", "change": ["insert"]}, per="recipient", count=1),
     False),  # one per recipient: a second recipient is a group of its own
])
def test_a_check_counts_a_rule_only_when_it_bounds_every_row_the_rule_allows(check: RowCheck | EffectsCheck,
                                                                            counted: bool) -> None:
    spec = ADD_CONTACT.spec.model_copy(update={"expected_state": [check],
                                               "allowed_mutations": [RULE]})
    assert bool(bounding_checks(spec, RULE)) is counted
    assert bool(unbounded_inserts(spec)) is not counted
    declared = spec.model_copy(update={"allowed_mutations": [RULE.model_copy(update={"unbounded": "why " * 4})]})
    assert unbounded_inserts(declared) == []


def test_plain_and_typed_values_cover_as_they_compare() -> None:
    rule = MutationRule(table="entry", change=["insert"], where={"memo": "EV-502 bank fee", "code": "AR-8",
                                                               "amount_cents": 1370, "note": Typed(type="text",
                                                                                                   value="Late")})
    assert covers({"memo": Typed(type="text", value="ev-502 bank fee"), "amount_cents": 1370.0}, rule)
    assert covers({"code": "ar-8", "note": Typed(type="text", value=" late.")}, rule)  # ids without case, as matched
    assert not covers({"code": Typed(type="text", value="AR-8")}, rule)  # an id admits other dashes text does not
    assert not covers({"note": "Late"}, rule)  # the rule admits "late", the check counts "Late" only
    assert not covers({"memo": Typed(type="exact", value="EV-502 bank fee ")}, rule)


def test_unbounded_belongs_to_a_rule_that_allows_inserts_and_says_why() -> None:
    with pytest.raises(ValidationError, match="give it to a rule that allows insert"):
        MutationRule(table="contact", change=["update"], unbounded="the agent may correct any number of them")
    with pytest.raises(ValidationError, match="at least 10 characters"):
        MutationRule(table="contact", change=["insert"], unbounded="because")
    dumped = TaskSpec.model_validate(ADD_CONTACT.spec.model_dump(mode="json")).model_dump(mode="json")
    assert all("unbounded" not in rule for rule in dumped["allowed_mutations"])  # absent: hashes as before
