"""The invoices site's templates over many seeds: every seed gives an instance whose checks, allowed mutations and
controls name the drawn invoice, whose expected values are that invoice's (from the seeded data, computed here
independently of the template's expressions), and whose negative controls stay wrong; the published instances differ
in the deciding invoice and have distinct instructions. Pure: no browser."""

# Cases read `task.instance` and `spec.attack` of instances the catalog generates, never None there.
# mypy: disable-error-code="union-attr"
from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from sites.invoices import INVOICES
from sites.kit.seeding import seeded_rows
from tasks import load_catalog

CATALOG = load_catalog()
DATE = "invoices.correct-payable-date"
DATE_TWINS = ("invoices.injection-control-line-total", "invoices.injection-redirect-payee")
TEMPLATES = (DATE,)
ACCEPTED = {"EUR", "USD", "GBP"}
SEEDS = st.integers(0, 300) | st.integers(1_000_000, 10**15 - 1)


@cache
def _rows(seed: int) -> Any:
    return seeded_rows(INVOICES, seed)


def _total(seed: int, invoice_id: int) -> int:
    return sum(line["amount_cents"] for line in _rows(seed)["invoice_line"] if line["invoice_id"] == invoice_id)


def _lines(seed: int, invoice_id: int) -> list[dict[str, Any]]:
    return sorted((line for line in _rows(seed)["invoice_line"] if line["invoice_id"] == invoice_id),
                  key=lambda line: line["position"])


def _recorded(seed: int) -> set[str]:
    return {payable["invoice_number"] for payable in _rows(seed)["payable"]}


def _seeded_invoice(seed: int, number: str) -> dict[str, Any]:
    [invoice] = [row for row in _rows(seed)["invoice"] if row["number"] == number]
    return dict(invoice)


def _plain(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def _step(task: Any, step_id: str) -> Any:
    [step] = [step for step in task.spec.scripted_control if step.id == step_id]
    return step


def _negative(task: Any, negative_id: str) -> Any:
    [negative] = [n for n in task.spec.negative_controls if n.id == negative_id]
    return negative


@settings(max_examples=examples(40), deadline=None)
@given(seed=SEEDS)
def test_correct_payable_date_names_a_slipped_record_and_its_twins_draw_the_same(seed: int) -> None:
    task = CATALOG[f"{DATE}@{seed}"]
    assert task.instance is not None
    payable = task.instance.parameters["payable"]
    [seeded] = [row for row in _rows(seed)["payable"] if row["reference"] == payable["reference"]]
    assert dict(seeded) == payable
    invoice = _seeded_invoice(seed, payable["invoice_number"])
    assert payable["invoice_date"] != invoice["issued_on"]  # the record is wrong, so there is something to fix
    assert [row["reference"] for row in _rows(seed)["payable"]
            if row["invoice_number"] == invoice["number"]] == [payable["reference"]]
    assert len(_lines(seed, invoice["id"])) >= 2
    reference = payable["reference"]
    assert reference in task.spec.instruction
    [row] = task.spec.expected_state
    assert row.where == {"reference": reference}
    assert row.expect == {"invoice_number": invoice["number"], "invoice_date": invoice["issued_on"],
                          "total_cents": payable["total_cents"], "currency": payable["currency"]}
    assert task.spec.allowed_mutations[0].where == {"reference": reference}
    assert task.spec.grants[0].objects == [payable["id"]]
    assert _step(task, "open-record").url == f"/invoices/records/{reference}"
    assert _step(task, "fill-date").text == invoice["issued_on"]
    wrong = _negative(task, "types-the-recorded-day").replace["fill-date"][0].text
    assert wrong != invoice["issued_on"]
    for twin_id in DATE_TWINS:
        twin = CATALOG[f"{twin_id}@{seed}"]
        assert twin.instance is not None and twin.instance.parameters == task.instance.parameters
        assert twin.spec.instruction == task.spec.instruction
        attack = twin.spec.attack
        assert attack is not None and reference in attack.instruction
        assert all(getattr(check, "rows", None) is None or check.rows.where.get("reference") == reference
                   for check in attack.objective)
        placed = attack.placement.row or attack.placement.where
        assert placed is not None and placed["invoice_id"] == invoice["id"]


@pytest.mark.parametrize("template", TEMPLATES)
def test_published_instances_differ_in_the_deciding_invoice_and_their_instructions(template: str) -> None:
    instances = CATALOG.instances(template)
    assert len(instances) > 1
    numbers = [t.instance.parameters["invoice"]["number"] for t in instances if t.instance is not None]
    assert len(set(numbers)) == len(instances)
    assert len({t.spec.instruction for t in instances}) == len(instances)  # the scripted endpoint tells them apart
    # The deciding value (the total to report or type; the date to put right) varies too.
    value = "total" if template != DATE else "invoice"
    decided = [t.instance.parameters[value] for t in instances if t.instance is not None]
    assert len({v["issued_on"] if isinstance(v, dict) else v for v in decided}) >= 6
