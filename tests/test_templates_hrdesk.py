"""The hrdesk templates' generators over many seeds (pure: no browser): every seed gives a valid instance that names
its drawn records where it should (checks, grants, allowed mutations, faults, twins' placements), its negative
controls stay distinct from the right answer, and the published instances differ in the deciding record or value."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from sites.hrdesk.models import APPROVAL_LIMITS
from sites.kit.seeding import seeded_rows
from sites.registry import site_definitions
from tasks import load_catalog
from tasks.catalog import InstanceUndefined
from tasks.templates import FRESH_SEED_FLOOR, MAX_SEED

CATALOG = load_catalog()
SEEDS = st.integers(0, 300) | st.integers(FRESH_SEED_FLOOR, MAX_SEED)

LEAVE = "hrdesk.approve-leave"
LEAVE_TWIN = "hrdesk.injection-leave-approves-claim"
LEAVE_5XX = "hrdesk.fault-5xx-approve-leave"
OVER_LIMIT = "hrdesk.approve-claim-over-limit"
RECEIPT = "hrdesk.answer-claim-by-receipt"
WITHIN = "hrdesk.approve-claim-within-limit"
WITHIN_TWIN = "hrdesk.injection-claim-rejects-leave"
PARTIAL = "hrdesk.fault-partial-success-approve-claims"
TEMPLATES = (LEAVE, LEAVE_5XX, OVER_LIMIT, RECEIPT, WITHIN, PARTIAL)
SINGLE = ("hrdesk.duplicate-dinner-claims", "hrdesk.approve-receipted-claims")


def _params(task_id: str) -> tuple[Any, Mapping[str, Any]]:
    task = CATALOG[task_id]
    assert task.instance is not None
    return task, task.instance.parameters


def _balance(seed: int, employee_id: int) -> int:
    rows = seeded_rows(site_definitions()["hrdesk"], seed)["leave_balance"]
    return int(next(b["days"] for b in rows if b["employee_id"] == employee_id and b["leave_type"] == "annual"))


def _partial_fits(seed: int) -> bool:
    """Whether some employee (past the fixed ones, with a name of their own) has two submitted claims with a receipt
    within their grade's limit and a submitted claim numbered after the second of them."""
    rows = seeded_rows(site_definitions()["hrdesk"], seed)
    names = Counter(str(e["name"]) for e in rows["employee"])
    for employee in rows["employee"]:
        if int(employee["id"]) < 21 or names[str(employee["name"])] != 1:
            continue
        submitted = [c for c in rows["expense_claim"]
                     if c["employee_id"] == employee["id"] and c["status"] == "submitted"]
        approvable = sorted((c for c in submitted if c["receipt"] != ""
                             and int(c["amount_cents"]) <= APPROVAL_LIMITS[str(employee["grade"])]),
                            key=lambda c: str(c["number"]))
        if len(approvable) >= 2 and any(str(c["number"]) > str(approvable[1]["number"]) for c in submitted):
            return True
    return False


def _steps_text(control: Any) -> str:
    return repr(control)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_approve_leave_draws_an_approvable_request_and_its_twin_draws_the_same(seed: int) -> None:
    task, p = _params(f"{LEAVE}@{seed}")
    twin, q = _params(f"{LEAVE_TWIN}@{seed}")
    request, employee, other = p["request"], p["employee"], p["other"]
    assert q == p and twin.spec.instruction == task.spec.instruction
    assert request["status"] == "submitted" and request["leave_type"] == "annual"
    assert employee["id"] == request["employee_id"] and p["balance"] == _balance(seed, employee["id"])
    assert p["balance"] >= request["days"]
    assert other["status"] == "submitted" and other["employee_id"] != employee["id"]
    assert other["number"] != request["number"]
    spec = task.spec
    assert employee["name"] in spec.instruction and request["start_date"] in spec.instruction
    assert spec.grants[0].objects == [request["id"]]
    assert spec.allowed_mutations[0].where == {"number": request["number"]}
    assert spec.allowed_mutations[1].where == {"employee_id": employee["id"], "leave_type": "annual"}
    assert spec.expected_state[1].expect == {"days": p["balance"] - request["days"]}
    assert spec.expected_state[2].where == {"number": other["number"]}
    assert spec.required_procedure[0].path == f"/hrdesk/leave/{request['number']}/approve"
    wrong = next(n for n in spec.negative_controls if n.id == "approves-the-look-alike")
    assert wrong.replace["open-request"][0].url == f"/hrdesk/leave/{other['number']}"
    # The twin plants its payload in the drawn request and its wrong-value control decides the other one.
    assert twin.spec.attack is not None and twin.spec.attack.placement.where == {"id": request["id"]}
    assert request["number"] not in _steps_text(
        next(n for n in twin.spec.negative_controls if n.id == "ignores-the-payload-approves-the-other-request"))


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_5xx_fault_targets_the_drawn_requests_approval(seed: int) -> None:
    task, p = _params(f"{LEAVE_5XX}@{seed}")
    request, employee, other = p["request"], p["employee"], p["other"]
    assert request["status"] == "submitted" and p["balance"] >= request["days"] >= 1
    assert other["employee_id"] != employee["id"] and other["status"] == "submitted"
    spec = task.spec
    assert request["number"] in spec.instruction and employee["name"] in spec.instruction
    assert spec.faults[0].target.path == f"/hrdesk/leave/{request['number']}/approve"
    assert spec.expected_state[1].expect == {"days": p["balance"] - request["days"]}
    assert spec.allowed_mutations[0].where == {"number": request["number"]}
    unrelated = next(n for n in spec.negative_controls if n.id == "also-approves-another-request")
    assert unrelated.insert_after["approve-again"][0].url == f"/hrdesk/leave/{other['number']}"


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_over_limit_claim_is_above_its_employees_limit(seed: int) -> None:
    task, p = _params(f"{OVER_LIMIT}@{seed}")
    claim, employee = p["claim"], p["employee"]
    assert claim["status"] == "submitted" and claim["receipt"]
    assert claim["employee_id"] == employee["id"] and p["limit"] == APPROVAL_LIMITS[employee["grade"]]
    assert claim["amount_cents"] > p["limit"]
    spec = task.spec
    assert claim["number"] in spec.instruction and employee["name"] in spec.instruction
    assert spec.required_procedure[0].where == {"number": claim["number"]}
    assert spec.allowed_mutations == [] and spec.feasible is False


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_receipt_answer_names_the_drawn_claim_and_the_look_alike_another(seed: int) -> None:
    task, p = _params(f"{RECEIPT}@{seed}")
    claim, employee, other = p["claim"], p["employee"], p["other"]
    assert claim["receipt"] and claim["employee_id"] == employee["id"]
    assert other["receipt"] and other["number"] != claim["number"] and other["receipt"] != claim["receipt"]
    spec = task.spec
    assert claim["receipt"] in spec.instruction
    fields = spec.expected_state[0].fields
    assert (fields["claim"].expected, fields["employee"].expected) == (claim["number"], employee["name"])
    assert fields["amount"].expected == p["amount"] and p["amount"].endswith(claim["currency"])
    assert spec.required_procedure[0].where == {"receipt": claim["receipt"]}
    look_alike = next(n for n in spec.negative_controls if n.id == "names-the-look-alike")
    assert look_alike.replace["answer"][0].answer["claim"] == other["number"] != claim["number"]
    no_currency = next(n for n in spec.negative_controls if n.id == "no-currency")
    assert no_currency.replace["answer"][0].answer["amount"] != p["amount"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_claim_within_limit_and_its_twin_draw_the_same_claim(seed: int) -> None:
    task, p = _params(f"{WITHIN}@{seed}")
    twin, q = _params(f"{WITHIN_TWIN}@{seed}")
    claim, employee, other = p["claim"], p["employee"], p["other"]
    assert q == p and twin.spec.instruction == task.spec.instruction
    assert claim["status"] == "submitted" and claim["receipt"]
    assert claim["amount_cents"] <= p["limit"] == APPROVAL_LIMITS[employee["grade"]]
    assert other["employee_id"] != employee["id"] and other["status"] == "submitted" and other["receipt"]
    spec = task.spec
    assert employee["name"] in spec.instruction and claim["description"] in spec.instruction
    grant = spec.grants[0]
    assert grant.objects == [claim["id"]] and grant.limit is not None
    assert (grant.limit.cents, grant.limit.currency) == (claim["amount_cents"], claim["currency"])
    assert spec.allowed_mutations[0].where == {"number": claim["number"]}
    assert spec.required_procedure[0].where == {"number": employee["number"]}
    assert spec.required_procedure[1].path == f"/hrdesk/expenses/{claim['number']}/approve"
    wrong = next(n for n in spec.negative_controls if n.id == "approves-another-submitted-claim")
    assert wrong.replace["open-claim"][0].url == f"/hrdesk/expenses/{other['number']}"
    assert twin.spec.attack is not None and twin.spec.attack.placement.where == {"id": claim["id"]}


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_partial_success_claims_are_two_approvable_claims_of_one_employee(seed: int) -> None:
    try:
        task, p = _params(f"{PARTIAL}@{seed}")
    except InstanceUndefined:
        # No employee of this seed has two approvable claims and a submitted one after them (found by CI's draw); a
        # fresh draw takes another seed. Found here from the seeded rows, not from the template's filter.
        assert not _partial_fits(seed)
        return
    employee, first, second = p["employee"], p["first"], p["second"]
    assert employee["id"] >= 21
    for claim in (first, second):
        assert claim["employee_id"] == employee["id"] and claim["status"] == "submitted" and claim["receipt"]
        assert claim["amount_cents"] <= APPROVAL_LIMITS[employee["grade"]]
    assert first["number"] < second["number"]
    # A blind retry from the page gone back to ticks the box after the second claim's, never the second's alone.
    submitted = [c for c in seeded_rows(site_definitions()["hrdesk"], seed)["expense_claim"]
                 if c["employee_id"] == employee["id"] and c["status"] == "submitted"]
    assert any(c["number"] > second["number"] for c in submitted)
    spec = task.spec
    assert first["number"] in spec.instruction and second["number"] in spec.instruction
    assert [m.where for m in spec.allowed_mutations] == [{"number": first["number"]}, {"number": second["number"]}]
    assert "X-5001" not in (first["number"], second["number"])  # the unrelated-write control's claim


@pytest.mark.parametrize("template", TEMPLATES)
def test_published_instances_differ_in_the_deciding_record_and_their_instructions(template: str) -> None:
    instances = CATALOG.instances(template)
    assert len(instances) > 1
    decided = []
    for task in instances:
        assert task.instance is not None
        p = task.instance.parameters
        if "first" in p:  # a seed's filler numbers claims alike: the deciding records are the employee's two
            decided.append((p["employee"]["name"], p["first"]["number"], p["second"]["number"]))
        else:
            decided.append(p["request" if "request" in p else "claim"]["number"])
    assert len(set(decided)) == len(instances)
    assert len({t.spec.instruction for t in instances}) == len(instances)


@pytest.mark.parametrize("template", SINGLE)
def test_a_single_instance_template_says_why_and_publishes_one_seed(template: str) -> None:
    instances = CATALOG.instances(template)
    assert [t.id for t in instances] == [f"{template}@1"]


# --- cross-app: a claim rejected with the manager named on the employee's record ------------------------------------

TO_MANAGER = "hrdesk.reject-claim-to-manager"
LATEST = "hrdesk.leave-message-latest-wins"


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_rejection_names_the_drawn_claimants_manager_and_no_other_head(seed: int) -> None:
    task, p = _params(f"{TO_MANAGER}@{seed}")
    claim, employee, manager, other = p["claim"], p["employee"], p["manager"], p["other"]
    assert claim["status"] == "submitted" and claim["employee_id"] == employee["id"] >= 21
    assert manager["id"] == employee["manager_id"] and manager["manager_id"] is None  # a department head
    assert manager["department"] == employee["department"]
    assert manager["name"] not in p["other_heads"] and len(p["other_heads"]) == 6
    assert p["wrong_head"] in p["other_heads"] and manager["name"] in p["note"]
    assert other["status"] == "submitted" and other["employee_id"] != employee["id"]
    spec = task.spec
    assert claim["number"] in spec.instruction and employee["name"] in spec.instruction
    assert manager["name"] not in spec.instruction  # the manager is for the employee's record to show
    check = spec.expected_state[0]
    assert check.where == {"number": claim["number"]}
    states = [f.value for f in check.text["decision_note" if "decision_note" in check.text else "note"].states]
    assert states[0] == manager["name"] and all("manager" in words for words in states[1:2])  # named as the manager
    assert spec.grants[0].objects == [claim["id"]]
    assert spec.allowed_mutations[0].where["number"] == claim["number"]
    assert spec.required_procedure[0].where == {"number": employee["number"]}
    wrong = _negative_texts(task, "names-another-department-head")
    assert p["wrong_head"] in wrong and manager["name"] not in wrong


def _negative_texts(task: Any, negative_id: str) -> str:
    control = next(n for n in task.spec.negative_controls if n.id == negative_id)
    return " ".join(step.text or "" for steps in control.replace.values() for step in steps)


# --- event processing: the later of a manager's two messages about a leave request wins -----------------------------

@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_latest_message_asks_to_reject_the_drawn_request_the_desk_could_approve(seed: int) -> None:
    task, p = _params(f"{LATEST}@{seed}")
    request, employee, manager, other = p["request"], p["employee"], p["manager"], p["other"]
    assert request["status"] == "submitted" and request["id"] >= 7 and request["id"] % 3 == 2
    assert request["submitted_at"] >= "2026-02-10" and other["submitted_at"] >= "2026-02-10"  # written about
    assert request["employee_id"] == employee["id"] and manager["id"] == employee["manager_id"]
    if request["leave_type"] != "unpaid":  # the stale approval is a real change, not a refusal
        rows = seeded_rows(site_definitions()["hrdesk"], seed)["leave_balance"]
        left = next(b["days"] for b in rows
                    if b["employee_id"] == employee["id"] and b["leave_type"] == request["leave_type"])
        assert left >= request["days"]
    assert other["id"] % 3 == 0 and other["status"] == "submitted" and other["employee_id"] != employee["id"]
    assert p["keyword"][0] in p["reason"] and p["subject"][0] in p["reason"]  # the reason's situation and subject
    assert p["retraction_key"] == f"M-{request['id']}-2"
    spec = task.spec
    assert employee["name"] in spec.instruction and manager["name"] in spec.instruction
    assert request["start_date"] in spec.instruction and request["number"] not in spec.instruction
    assert spec.expected_state[0].where == {"number": request["number"]}
    assert spec.grants[0].objects == [request["id"]]
    assert spec.required_procedure[0].path == f"/hrdesk/messages/M-{request['id']}-2"
    assert f"/hrdesk/leave/{other['number']}" in repr(
        next(n for n in spec.negative_controls if n.id == "also-applies-another-message"))


def test_the_desk_messages_say_what_the_template_reads_of_them() -> None:
    """The messages (sites/hrdesk/messages.py) the event template relies on: a request of id 2 modulo 3 has an
    approval and, later, a retraction asking for a rejection for the reason of its id modulo 4; the fixed requests
    have none; the same seed gives the same messages."""
    import random

    from sqlmodel import Session, SQLModel, create_engine

    from sites.hrdesk import HRDESK
    from sites.hrdesk.messages import REASONS, WRITTEN_FROM, desk_messages
    from sites.hrdesk.seed import seed_hrdesk

    def messages(seed: int) -> list[tuple[str, str, str, str]]:
        engine = create_engine("sqlite://")
        SQLModel.metadata.create_all(engine)
        HRDESK.metadata.create_all(engine)
        with Session(engine) as session:
            seed_hrdesk(session, random.Random(seed))
            session.commit()
            found = desk_messages(session)
            assert found and all(m.request.id is not None and m.request.id >= 7 for m in found)
            assert [m.sent_at for m in found] == sorted((m.sent_at for m in found), reverse=True)
            for m in found:
                assert m.request.submitted_at >= WRITTEN_FROM and m.sender.id == m.employee.manager_id
                kind = (m.request.id or 0) % 3
                assert m.asks == ("approve" if kind == 0 or (kind == 2 and m.key.endswith("-1")) else "reject")
                if m.asks == "reject":
                    assert REASONS[(m.request.id or 0) % 4] in m.body
            twice = [m for m in found if (m.request.id or 0) % 3 == 2]
            assert twice and all(m.key.endswith(("-1", "-2")) for m in twice)
            by_request: dict[int, list[Any]] = {}
            for m in twice:
                by_request.setdefault(m.request.id or 0, []).append(m)
            for pair in by_request.values():
                first, second = sorted(pair, key=lambda m: m.key)
                assert second.sent_at > first.sent_at and second.subject == f"Re: {first.subject}"
            return [(m.key, m.sent_at, m.subject, m.body) for m in found]

    assert messages(3) == messages(3) != messages(4)


@pytest.mark.parametrize("template", [TO_MANAGER, LATEST])
def test_new_family_templates_publish_instances_on_distinct_records(template: str) -> None:
    instances = CATALOG.instances(template)
    assert len(instances) >= 8
    # A seed's filler numbers records alike: the deciding record is the number with its employee.
    decided = [(t.instance.parameters["claim" if template == TO_MANAGER else "request"]["number"],
                t.instance.parameters["employee"]["name"]) for t in instances if t.instance is not None]
    assert len(set(decided)) == len(instances)
    assert len({t.spec.instruction for t in instances}) == len(instances)
    managers = {t.instance.parameters["manager"]["name"] for t in instances if t.instance is not None}
    assert len(managers) >= 3  # the value carried or the event's sender varies too
