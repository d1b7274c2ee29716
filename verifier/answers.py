"""The structured final answer against the task's answer check: status, reason code, typed fields.

The free-text message is never read. Each field is read with its type (`tasks.values.read_value`) on both
sides and compared exactly: `2.340,00 EUR` equals `2,340.00 EUR`, `RA-12` does not equal `RA-12 or RA-11`,
a list of ids compared as a set has no item missing, extra or repeated.
"""

from __future__ import annotations

import re
from typing import Any

from tasks.answers import REFUSAL_STATUSES
from tasks.spec import AnswerCheck, AnswerField
from tasks.values import read_value
from verifier.facts import text_problems
from verifier.verdict import CheckResult, Claim


def claimed_status(claim: Claim) -> str | None:
    """The status the agent finished with: as it said, or from its success flag; None without a finish."""
    if claim.success is None:
        return None
    return claim.status or ("success" if claim.success else "failed")


def field_problem(name: str, spec: AnswerField, given: Any) -> str | None:
    """Why a given field value is not the expected one (None when it is)."""
    value = read_value(spec.type, given)
    if value is None:
        return f"{name}: {given!r} is not a {spec.type}"
    expected = read_value(spec.type, spec.expected)
    if spec.type == "id_list" and spec.order == "set":
        assert isinstance(value, tuple) and isinstance(expected, tuple)
        repeated = sorted({item for item in value if value.count(item) > 1})
        missing, extra = sorted(set(expected) - set(value)), sorted(set(value) - set(expected))
        parts = ([f"missing {missing}"] if missing else []) + ([f"extra {extra}"] if extra else []) \
            + ([f"repeated {repeated}"] if repeated else [])
        return f"{name}: " + ", ".join(parts) if parts else None
    if value != expected and spec.match == "with_qualifiers" and isinstance(given, str):
        base, qualifier = split_qualifier(given)
        value = read_value(spec.type, base)
        if value == expected and qualifier and spec.qualifier is not None:
            wrong = text_problems(qualifier, spec.qualifier)
            if wrong:
                return f"{name}: its qualifier {qualifier!r} {'; '.join(wrong)}"
    return None if value == expected else f"{name}: {given!r} is not the expected {spec.type}"


_QUALIFIED = re.compile(r"\s*(.+?)\s*(\([^()]*\)|[,;:]\s.*|\s[-–—]\s.*)\s*\.?\s*", re.DOTALL)


def split_qualifier(text: str) -> tuple[str, str | None]:
    """A name and its qualifier: `Orchard Room (2nd floor)` and `Orchard Room, 2nd floor` are `Orchard Room` and
    `2nd floor`; a name with nothing set off by punctuation has none."""
    match = _QUALIFIED.fullmatch(text)
    if match is None:
        return text, None
    return match.group(1), match.group(2).strip(" ()[],;:-–—.")


def without_qualifier(text: str) -> str:
    """The name without its qualifier (`split_qualifier`)."""
    return split_qualifier(text)[0]


def check_answer(check: AnswerCheck, claim: Claim) -> CheckResult:
    """Status among the accepted, a refusal's reason among the accepted, exactly the declared fields, each right."""
    def result(passed: bool, detail: str) -> CheckResult:
        return CheckResult(name=check.name, category="state", passed=passed, detail=detail)

    status = claimed_status(claim)
    if status is None:
        return result(False, "no final answer (the episode did not finish)")
    if status not in check.status:
        return result(False, f"status {status}, expected {' or '.join(check.status)}")
    if status in REFUSAL_STATUSES:
        if claim.reason not in check.reasons:
            return result(False, f"reason {claim.reason!r}, expected {' or '.join(check.reasons)}")
        return result(True, f"{status} ({claim.reason})")
    answer = claim.answer or {}
    missing, extra = sorted(set(check.fields) - set(answer)), sorted(set(answer) - set(check.fields))
    if missing or extra:
        parts = ([f"missing fields {missing}"] if missing else []) + ([f"unknown fields {extra}"] if extra else [])
        return result(False, "answer " + ", ".join(parts))
    problems = [p for name, spec in check.fields.items() if (p := field_problem(name, spec, answer[name]))]
    if problems:
        return result(False, "; ".join(problems))
    return result(True, f"{status}" + (f" with {len(check.fields)} field(s) as expected" if check.fields else ""))
