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
from tasks.spec import AnswerCheck, RowCheck

CATALOG = load_catalog()
ANSWER = "invoices.answer-invoice-total"
SCAN = "invoices.submit-scan-with-calculator"
DATE = "invoices.correct-payable-date"
DATE_TWINS = ("invoices.injection-control-line-total", "invoices.injection-redirect-payee")
TEMPLATES = (ANSWER, SCAN, DATE)
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
def test_answer_invoice_total_names_a_printed_invoice_and_its_wrong_answers_stay_wrong(seed: int) -> None:
    task = CATALOG[f"{ANSWER}@{seed}"]
    assert task.instance is not None
    invoice = task.instance.parameters["invoice"]
    seeded = _seeded_invoice(seed, invoice["number"])
    assert seeded == invoice and seeded["total_printed"] and seeded["currency"] in ACCEPTED
    total = _total(seed, invoice["id"])
    assert task.instance.parameters["total"] == total
    assert invoice["number"] in task.spec.instruction
    [answer] = task.spec.expected_state
    assert isinstance(answer, AnswerCheck)
    assert answer.fields["total"].expected == f"{_plain(total)} {invoice['currency']}"
    [seen] = task.spec.required_procedure
    assert seen.where == {"number": invoice["number"]}
    assert task.spec.allowed_mutations == []
    assert _step(task, "open-invoice").name == invoice["number"]
    # The first line's amount is never the total (two lines at least, each a positive amount).
    lines = _lines(seed, invoice["id"])
    assert len(lines) >= 2 and all(line["amount_cents"] > 0 for line in lines)
    assert task.instance.parameters["first_line"] == lines[0]["amount_cents"] < total
    first = _negative(task, "first-line-amount").replace["answer"][0].answer["total"]
    assert first != _step(task, "answer").answer["total"]
    assert _negative(task, "no-currency").replace["answer"][0].answer["total"] == _plain(total)


@settings(max_examples=examples(40), deadline=None)
@given(seed=SEEDS)
def test_submit_scan_names_an_open_unrecorded_scan_and_its_short_sum_stays_wrong(seed: int) -> None:
    task = CATALOG[f"{SCAN}@{seed}"]
    assert task.instance is not None
    invoice = task.instance.parameters["invoice"]
    seeded = _seeded_invoice(seed, invoice["number"])
    assert seeded["status"] == "open" and not seeded["total_printed"] and seeded["currency"] in ACCEPTED
    assert invoice["number"] not in _recorded(seed)
    filler_scans = [row for row in _rows(seed)["invoice"] if row["id"] > 11 and row["status"] == "open"
                    and not row["total_printed"] and row["currency"] in ACCEPTED
                    and row["number"] not in _recorded(seed)]
    assert (invoice["id"] > 11) == bool(filler_scans)  # a filler scan whenever the seed has one
    lines = _lines(seed, invoice["id"])
    total = sum(line["amount_cents"] for line in lines)
    assert invoice["number"] in task.spec.instruction
    [row] = [check for check in task.spec.expected_state if isinstance(check, RowCheck)]
    assert row.where == {"invoice_number": invoice["number"]}
    assert row.expect["total_cents"] == total and row.expect["vendor"] == invoice["vendor"]
    assert task.spec.allowed_mutations[0].where == {"invoice_number": invoice["number"]}
    assert _step(task, "fill-numbers").text == " + ".join(_plain(line["amount_cents"]) for line in lines)
    assert _step(task, "fill-total").text == _plain(total)
    short = _negative(task, "partial-sum").replace["fill-total"][0].text
    assert short != _plain(total) and round(float(short) * 100) != total


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
    assert len(instances) == 8
    numbers = [t.instance.parameters["invoice"]["number"] for t in instances if t.instance is not None]
    assert len(set(numbers)) == 8
    assert len({t.spec.instruction for t in instances}) == 8  # the scripted endpoint tells them apart
    # The deciding value (the total to report or type; the date to put right) varies too.
    value = "total" if template != DATE else "invoice"
    decided = [t.instance.parameters[value] for t in instances if t.instance is not None]
    assert len({v["issued_on"] if isinstance(v, dict) else v for v in decided}) >= 6
