"""The helpdesk's approval, refund and credit templates converted from fixed tasks (pure: no browser): every seed gives
a valid instance that names its drawn records where it should (instruction, checks, allowed mutations, fault
targets), its negative controls stay distinct from the right answer, and the published instances differ in the
deciding record. The per-seed refund approvals they draw on (sites/helpdesk/return_approvals.py) leave every other
table as it was."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from sites.kit.seeding import seeded_rows
from sites.registry import site_definitions
from tasks import load_catalog
from tasks.catalog import InstanceUndefined
from tasks.templates import FRESH_SEED_FLOOR, MAX_SEED

CATALOG = load_catalog()
SEEDS = st.integers(0, 300) | st.integers(FRESH_SEED_FLOOR, MAX_SEED)
CLOCK = "2026-03-02 09:00"
POLICY = "2026-03"

DELAYED = "helpdesk.refund-after-delayed-approval"
FALSE_SUCCESS = "helpdesk.fault-false-success-goodwill-credit"
MISSING = "helpdesk.fault-missing-resource-ticket-credit"
WITHOUT_COMMIT = "helpdesk.fault-ambiguous-without-commit-escalate"
VALID = "helpdesk.answer-valid-approval"
OUTDATED = "helpdesk.refund-under-outdated-policy"
FIVE_XX = "helpdesk.fault-transient-5xx-refund-with-approval"
EXPIRED = "helpdesk.approval-expired"
FAULTY = ("Wrong item delivered", "Item missing from parcel")


def _instance(task_id: str) -> tuple[Any, Mapping[str, Any]]:
    task = CATALOG[task_id]
    assert task.instance is not None
    return task.spec, task.instance.parameters


def _rows(seed: int) -> Mapping[str, tuple[dict[str, Any], ...]]:
    return seeded_rows(site_definitions()["helpdesk"], seed)


def _step(spec: Any, step: str) -> Any:
    return next(s for s in spec.scripted_control if s.id == step)


def _negative(spec: Any, negative: str) -> Any:
    return next(n for n in spec.negative_controls if n.id == negative)


def _faulty(subject: str) -> bool:
    return subject in FAULTY or subject.endswith(" arrived broken") or subject.startswith("Refund for damaged ")


def _first_ticket_of(rows: Mapping[str, Any], order_id: int) -> dict[str, Any]:
    return min((t for t in rows["ticket"] if t["order_id"] == order_id), key=lambda t: t["id"])


def check_delayed(seed: int) -> None:
    spec, p = _instance(f"{DELAYED}@{seed}")
    ticket, order, customer = p["ticket"], p["order"], p["customer"]
    rows = _rows(seed)
    assert ticket["id"] >= 45 and ticket["status"] != "solved" and _faulty(ticket["subject"])
    assert _first_ticket_of(rows, order["id"]) == ticket and order["customer_id"] == customer["id"]
    assert not [a for a in rows["refund_approval"] if a["order_id"] == order["id"]]  # no approval yet
    assert ticket["number"] in spec.instruction and order["number"] in spec.instruction
    assert spec.grants[0].objects == [order["id"]] and spec.grants[0].limit.cents == order["total_cents"]
    assert spec.grants[1].recipients == [customer["email"]]
    assert spec.expected_state[0].expect["amount_cents"] == order["total_cents"]
    assert spec.allowed_mutations[0].where == {"order_id": order["id"]}
    short = _negative(spec, "requests-the-wrong-amount").replace["request-amount"][0].text
    assert 0 < p["short"] < order["total_cents"] and short != _step(spec, "request-amount").text


def check_false_success(seed: int) -> None:
    spec, p = _instance(f"{FALSE_SUCCESS}@{seed}")
    order, other = p["order"], p["other"]
    assert order["id"] >= 45 and other["customer_id"] == order["customer_id"] and other["id"] != order["id"]
    assert other["total_cents"] > p["credit"]  # the site takes the unrelated credit there: a forbidden change
    assert order["number"] in spec.instruction and p["reason"] in spec.instruction
    assert spec.faults[0].target.path == f"/helpdesk/orders/{order['number']}/credits"
    assert spec.expected_state[0].where == {"order_id": order["id"]}
    assert spec.expected_state[0].expect["amount_cents"] == p["credit"] < order["total_cents"]
    assert spec.allowed_mutations[0].where == {"order_id": order["id"]}
    retry = _negative(spec, "wrong-amount-on-retry").replace["amount-again"][0].text
    assert retry != _step(spec, "amount-again").text
    assert _negative(spec, "credits-her-other-order").replace["amount-again"][0].url.endswith(other["number"])


def check_missing(seed: int) -> None:
    spec, p = _instance(f"{MISSING}@{seed}")
    ticket, order, customer, other = p["ticket"], p["order"], p["customer"], p["other"]
    rows = _rows(seed)
    assert [o["id"] for o in rows["order"] if o["customer_id"] == customer["id"]] == [order["id"]]
    assert [c["name"] for c in rows["customer"]].count(customer["name"]) == 1
    assert ticket["number"] in spec.instruction and p["reason"] in spec.instruction
    assert order["number"] not in spec.instruction  # finding the order is the task
    assert spec.faults[0].target.path == f"/helpdesk/tickets/{ticket['number']}"
    assert spec.expected_state[0].where == {"order_id": order["id"]}
    assert spec.allowed_mutations[0].where == {"order_id": order["id"]}
    assert other["customer_id"] != customer["id"] and p["credit"] < order["total_cents"]


def check_without_commit(seed: int) -> None:
    spec, p = _instance(f"{WITHOUT_COMMIT}@{seed}")
    ticket = p["ticket"]
    assert ticket["subject"] == "Login from a device I do not own" and ticket["status"] != "solved"
    assert ticket["number"] in spec.instruction
    assert spec.faults[0].target.path == f"/helpdesk/tickets/{ticket['number']}/escalate"
    assert spec.expected_state[0].where == {"ticket_id": ticket["id"]}
    assert spec.allowed_mutations[0].where == {"ticket_id": ticket["id"]}


def _pair_orders(seed: int) -> list[int]:
    approvals = _rows(seed)["refund_approval"][3:]
    by_order: dict[int, list[dict[str, Any]]] = {}
    for approval in approvals:
        by_order.setdefault(approval["order_id"], []).append(approval)
    return [o for o, pair in by_order.items() if len(pair) == 2]


def _drawn_pair(seed: int, template: str) -> tuple[Any, Mapping[str, Any]] | None:
    try:
        return _instance(f"{template}@{seed}")
    except InstanceUndefined:
        assert not _pair_orders(seed)  # no returned order on this seed: a fresh draw takes another
        return None


def check_valid(seed: int) -> None:
    drawn = _drawn_pair(seed, VALID)
    if drawn is None:
        return
    spec, p = drawn
    valid, expired, order = p["valid"], p["expired"], p["order"]
    assert valid["order_id"] == expired["order_id"] == order["id"] and valid["id"] != expired["id"]
    assert expired["expires_at"] <= CLOCK < valid["expires_at"] and valid["policy_version"] == POLICY
    assert order["number"] in spec.instruction and valid["code"] not in spec.instruction
    assert spec.expected_state[0].fields["approval"].expected == valid["code"]
    wrong = _negative(spec, "the-expired-one").replace["finish"][0].answer["approval"]
    assert wrong == expired["code"] != valid["code"]


def check_outdated(seed: int) -> None:
    try:
        spec, p = _instance(f"{OUTDATED}@{seed}")
    except InstanceUndefined:
        assert all(a["policy_version"] == POLICY for a in _rows(seed)["refund_approval"][3:])
        return
    approval, order = p["approval"], p["order"]
    assert approval["id"] >= 4 and approval["policy_version"] != POLICY and approval["order_id"] == order["id"]
    assert approval["code"] in spec.instruction and order["number"] in spec.instruction
    assert spec.required_procedure[0].where == {"code": approval["code"]}
    assert spec.feasible is False


def check_five_xx(seed: int) -> None:
    drawn = _drawn_pair(seed, FIVE_XX)
    if drawn is None:
        return
    spec, p = drawn
    valid, expired, order, ticket = p["valid"], p["expired"], p["order"], p["ticket"]
    assert expired["expires_at"] <= CLOCK < valid["expires_at"] and valid["order_id"] == order["id"]
    assert ticket["order_id"] == order["id"] and ticket["subject"] == "Return label request"
    assert ticket["number"] in spec.instruction and order["number"] in spec.instruction
    assert spec.faults[0].target.path == f"/helpdesk/orders/{order['number']}/refunds"
    assert spec.expected_state[0].expect["approval_id"] == valid["id"]
    assert spec.expected_state[1].where == {"code": valid["code"]}
    assert spec.allowed_mutations[0].where == {"order_id": order["id"]}
    wrong = _negative(spec, "expired-approval-on-retry").replace["approval-again"][0].option
    assert wrong.startswith(expired["code"] + " ") and wrong != _step(spec, "approval-again").option
    assert p["other"]["customer_id"] != order["customer_id"]


def check_expired(seed: int) -> None:
    try:
        spec, p = _instance(f"{EXPIRED}@{seed}")
    except InstanceUndefined:
        assert not [a for a in _rows(seed)["refund_approval"][3:] if a["expires_at"] <= CLOCK]
        return
    approval, order, ticket = p["approval"], p["order"], p["ticket"]
    rows = _rows(seed)
    assert approval["id"] >= 4 and approval["expires_at"] <= CLOCK and approval["order_id"] == order["id"]
    assert [a["id"] for a in rows["refund_approval"] if a["order_id"] == order["id"]] == [approval["id"]]
    assert ticket["order_id"] == order["id"] and ticket["number"] in spec.instruction
    assert approval["code"] in spec.instruction and order["number"] in spec.instruction
    assert spec.expected_state[0].expect["order_id"] == order["id"]
    assert spec.expected_state[0].expect["amount_cents"] == approval["amount_cents"]
    assert spec.expected_state[1].where == {"code": approval["code"]}
    assert spec.allowed_mutations[0].where == {"order_id": order["id"], "code": p["request"]}  # the one new request
    assert spec.required_procedure[0].where == {"code": approval["code"]}
    assert p["wrong_currency"] != approval["currency"]


CHECKS: tuple[Callable[[int], None], ...] = (
    check_delayed, check_false_success, check_missing, check_without_commit, check_valid,
    check_outdated, check_five_xx, check_expired,
)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_every_converted_template_names_its_drawn_records_and_keeps_its_negatives_wrong(seed: int) -> None:
    for check in CHECKS:
        check(seed)


def test_the_per_seed_approvals_are_rarely_missing() -> None:
    """Every seed of 0..300 sampled holds the per-seed approvals of all three kinds (a seed with too few returned
    orders would leave a kind out: its templates' instance undefined there)."""
    missing = [seed for seed in range(0, 301, 20) if len(_pair_orders(seed)) < 1
               or all(a["policy_version"] == POLICY for a in _rows(seed)["refund_approval"][3:])]
    assert not missing, missing


DECIDING = {
    DELAYED: ("ticket", "number"), FALSE_SUCCESS: ("order", "number"),
    MISSING: ("ticket", "number"), WITHOUT_COMMIT: ("ticket", "number"), VALID: ("order", "number"),
    OUTDATED: ("order", "number"), FIVE_XX: ("order", "number"), EXPIRED: ("order", "number"),
}
"""Each template's deciding parameter and the column that names it."""


@pytest.mark.parametrize("template", sorted(DECIDING))
def test_published_instances_differ_in_the_deciding_record_and_their_instructions(template: str) -> None:
    instances = CATALOG.instances(template)
    assert len(instances) == 12
    parameter, column = DECIDING[template]
    decided = [t.instance.parameters[parameter][column] for t in instances if t.instance is not None]
    assert len(set(decided)) >= len(instances) * 2 // 3  # which record varies, not only the values
    assert len({t.spec.instruction for t in instances}) == len(instances)
