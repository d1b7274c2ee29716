"""Structured answers: the right answer in any spelling passes, every generated wrong answer fails, for every
answer and refusal task of the catalog."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computerops.catalog.mutants import claim_mutants
from tasks import load_catalog
from tasks.spec import AnswerCheck, AnswerField
from verifier import Claim
from verifier.answers import check_answer, claimed_status

CATALOG = load_catalog()
ANSWERED = [t for t in CATALOG.values() if t.spec.answer_check is not None]


def scripted_claim(task_id: str) -> Claim:
    finish = CATALOG[task_id].spec.scripted_control[-1]
    return Claim(success=finish.success, message=finish.message, status=finish.status or (
        "success" if finish.success else "failed"), reason=finish.reason, answer=finish.answer)


def test_the_catalog_has_structured_answers_for_every_read_and_answer_and_refusal_task() -> None:
    assert {t.id for t in ANSWERED} >= {t.id for t in CATALOG.values()
                                        if t.spec.family == "read-and-answer" or not t.spec.feasible}
    assert len([t for t in ANSWERED if t.spec.answer_check and t.spec.answer_check.fields]) >= 10
    assert len([t for t in ANSWERED if not t.spec.feasible]) >= 9


@pytest.mark.parametrize("task_id", [t.id for t in ANSWERED])
def test_the_scripted_answer_passes_and_every_generated_wrong_answer_fails(task_id: str) -> None:
    check = CATALOG[task_id].spec.answer_check
    assert check is not None
    right = scripted_claim(task_id)
    assert check_answer(check, right).passed
    mutants = list(claim_mutants(CATALOG[task_id].spec, right))
    assert mutants
    for mutant in mutants:
        assert mutant.claim is not None
        assert check_answer(check, mutant.claim).passed is (mutant.expect == "valid"), mutant.id


TOTAL = AnswerCheck(name="total", status=["success"],
                    fields={"total": AnswerField(type="money", description="the total", expected="2340.00 EUR")})


@given(st.sampled_from(["2,340.00 EUR", "2.340,00 €", "EUR 2340", "2 340,00 euros", "€2340.00", " 2340.00 eur "]))
def test_a_money_answer_passes_in_any_spelling(spelling: str) -> None:
    assert check_answer(TOTAL, Claim(success=True, status="success", answer={"total": spelling})).passed


@pytest.mark.parametrize("wrong", ["2340.00", "2340.01 EUR", "2340 USD", "2340 or 6480 EUR", "either 2340 EUR",
                                   "2340 EUR, 6480 EUR", "not 2340 EUR", 2340, ["2340 EUR"]])
def test_a_money_answer_fails_when_it_is_not_exactly_that_money(wrong: object) -> None:
    result = check_answer(TOTAL, Claim(success=True, status="success", answer={"total": wrong}))
    assert not result.passed


def test_an_answer_needs_exactly_its_fields_and_a_finish() -> None:
    assert not check_answer(TOTAL, Claim(success=True, status="success", answer={})).passed
    assert not check_answer(TOTAL, Claim(success=True, status="success",
                                         answer={"total": "2340 EUR", "also": "x"})).passed
    assert "did not finish" in check_answer(TOTAL, Claim(success=None)).detail
    assert claimed_status(Claim(success=False)) == "failed" and claimed_status(Claim(success=True)) == "success"


def test_a_list_answer_as_a_set_has_nothing_missing_extra_or_repeated_and_as_a_sequence_keeps_order() -> None:
    spec = AnswerField(type="id_list", description="skus", expected=["A-1", "A-2"])
    check = AnswerCheck(name="skus", status=["success"], fields={"skus": spec})
    ordered = AnswerCheck(name="skus", status=["success"],
                          fields={"skus": spec.model_copy(update={"order": "sequence"})})

    def passes(check: AnswerCheck, value: object) -> bool:
        return check_answer(check, Claim(success=True, status="success", answer={"skus": value})).passed

    assert passes(check, ["A-2", "A-1"]) and passes(ordered, ["A-1", "A-2"]) and not passes(ordered, ["A-2", "A-1"])
    for wrong in (["A-1"], ["A-1", "A-2", "A-3"], ["A-1", "A-2", "A-2"], "A-1, A-2", ["A-1", ""]):
        assert not passes(check, wrong), wrong


def test_a_refusal_needs_an_accepted_status_and_reason() -> None:
    refusal = AnswerCheck(name="refuses", status=["not_allowed"], reasons=["already-done"])
    assert check_answer(refusal, Claim(success=False, status="not_allowed", reason="already-done")).passed
    for claim in (Claim(success=False), Claim(success=False, status="not_allowed"),
                  Claim(success=False, status="not_allowed", reason="other"),
                  Claim(success=False, status="invalid_data", reason="already-done"),
                  Claim(success=True, status="success")):
        assert not check_answer(refusal, claim).passed, claim
