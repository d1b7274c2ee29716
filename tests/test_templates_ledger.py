"""The ledger's task templates: every seed yields a valid instance that names its drawn record in its checks, grants
and allowed mutations, whose negative controls stay distinct from the right answer, and whose twins draw the same
records; the published instances differ in the deciding record or value, with eight distinct instructions. Pure: no
browser, no site served."""

# Cases read `task.instance` and `spec.attack` of instances the catalog generates, never None there.
# mypy: disable-error-code="union-attr"
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from tasks import load_catalog, select_tasks

CATALOG = load_catalog()
SEEDS = st.integers(0, 300) | st.integers(1_000_000, 10**15 - 1)
DOCKS = {f"Dock {n}" for n in range(1, 7)}


def _instance(template: str, seed: int) -> tuple[Any, Mapping[str, Any]]:
    task = CATALOG[f"{template}@{seed}"]
    assert task.instance is not None
    return task, task.instance.parameters


def _negative(task: Any, negative_id: str) -> Any:
    return next(n for n in task.spec.negative_controls if n.id == negative_id)


def _texts(steps: list[Any]) -> list[Any]:
    return [(s.name, s.text, s.option, s.url, s.answer) for s in steps]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_amend_delivery_destination_names_its_pending_delivery_and_a_new_dock(seed: int) -> None:
    task, p = _instance("ledger.amend-delivery-destination", seed)
    delivery = p["delivery"]
    assert delivery["status"] == "pending"
    assert {p["new_dest"], p["wrong_dest"]} <= DOCKS
    assert len({delivery["destination"], p["new_dest"], p["wrong_dest"]}) == 3
    assert delivery["number"] in task.spec.instruction and p["new_dest"] in task.spec.instruction
    assert task.spec.expected_state[0].where == {"number": delivery["number"]}
    assert task.spec.expected_state[0].expect["destination"] == p["new_dest"]
    assert task.spec.allowed_mutations[0].where == {"number": delivery["number"]}
    assert task.spec.required_procedure[0].path == f"/ledger/deliveries/{delivery['number']}"
    assert _negative(task, "wrong-dock").replace["choose-dock"][0].option == p["wrong_dest"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_dispatch_delivery_once_names_its_pending_delivery_and_other_ones(seed: int) -> None:
    task, p = _instance("ledger.dispatch-delivery-once", seed)
    delivery, other, third = p["delivery"], p["other"], p["third"]
    assert {delivery["status"], other["status"], third["status"]} == {"pending"}
    assert len({delivery["id"], other["id"], third["id"]}) == 3
    assert delivery["number"] in task.spec.instruction and delivery["request_id"] in task.spec.instruction
    delivered, dispatch = task.spec.expected_state
    assert delivered.expect["version"] == delivery["version"] + 1
    assert dispatch.where == {"request_id": delivery["request_id"]}
    assert dispatch.expect["delivery_id"] == delivery["id"] and dispatch.expect["version"] == delivery["version"]
    assert task.spec.allowed_mutations[1].where == {"delivery_id": delivery["id"], "request_id": delivery["request_id"],
                                                    "outcome": "sent"}
    assert _negative(task, "wrong-delivery").replace["open-delivery"][0].name == other["number"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_process_payment_event_names_its_queued_payment_and_another(seed: int) -> None:
    task, p = _instance("ledger.process-payment-event", seed)
    event, other = p["event"], p["other"]
    for row in (event, other):
        assert (row["kind"], row["status"], row["depends_on_id"]) == ("payment", "queued", None)
    assert event["id"] != other["id"]
    assert event["number"] in task.spec.instruction
    entry = task.spec.expected_state[1]
    assert entry.where == {"event_id": event["id"]}
    assert entry.expect == {"account": event["account"], "amount_cents": event["amount_cents"],
                            "currency": event["currency"]}
    assert [m.where for m in task.spec.allowed_mutations] == [{"number": event["number"]}, {"event_id": event["id"]}]
    assert _negative(task, "wrong-event").replace["open-event"][0].name == other["number"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_answer_delivery_version_expects_its_deliverys_values_and_a_wrong_version(seed: int) -> None:
    task, p = _instance("ledger.answer-delivery-version", seed)
    delivery, other = p["delivery"], p["other"]
    assert delivery["status"] == "pending" and other["id"] != delivery["id"]
    assert delivery["number"] in task.spec.instruction
    fields = task.spec.expected_state[0].fields
    assert (fields["request"].expected, fields["version"].expected, fields["destination"].expected) == (
        delivery["request_id"], delivery["version"], delivery["destination"])
    assert task.spec.required_procedure[0].where == {"number": delivery["number"]}
    wrong = _negative(task, "another-version").replace["answer"][0].answer
    assert wrong["version"] != delivery["version"]
    assert p["wrong_dest"] != delivery["destination"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_redeliver_same_request_names_its_delivered_delivery(seed: int) -> None:
    task, p = _instance("ledger.redeliver-same-request", seed)
    delivery, other = p["delivery"], p["other"]
    assert delivery["status"] == "delivered" and other["status"] == "pending"
    assert delivery["number"] in task.spec.instruction and delivery["request_id"] in task.spec.instruction
    assert task.spec.expected_state[0].where == {"request_id": delivery["request_id"]}
    assert task.spec.expected_state[1].where == {"number": delivery["number"]}
    assert task.spec.required_procedure[0].where == {"number": delivery["number"], "status": "delivered"}
    assert task.spec.allowed_mutations == []


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_post_bank_charge_expects_its_amount_and_its_twins_draw_the_same(seed: int) -> None:
    task, p = _instance("ledger.post-bank-charge", seed)
    cents, wrong = p["cents"], p["wrong_cents"]
    assert 500 <= cents <= 4950 and 500 <= wrong <= 5000 and wrong != cents  # both within the grant
    assert p["month"] in task.spec.instruction
    assert task.spec.expected_state[0].expect["amount_cents"] == cents
    assert task.spec.allowed_mutations[0].where["amount_cents"] == cents
    assert task.spec.grants[0].limit.cents == 5000
    for twin in ("ledger.injection-account-currency", "ledger.injection-memo-over-limit"):
        attacked, q = _instance(twin, seed)
        assert q == p and attacked.spec.instruction == task.spec.instruction
    attacked, _ = _instance("ledger.injection-account-currency", seed)
    inserted = attacked.spec.attack.obedient.insert_after["create"]
    assert any(s.text == f"{cents // 100}.{cents % 100:02d}" for s in inserted)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_harbor_fee_checkpoint_names_its_event_and_fee_and_its_twins_draw_the_same(seed: int) -> None:
    task, p = _instance("ledger.harbor-fee-checkpoint", seed)
    event, other, fee = p["event"], p["other"], p["fee"]
    assert event["batch"] == other["batch"] == "B-1" and event["id"] != other["id"]
    assert event["account"] != "ACC-100 Operations" and 100 <= fee < 2000  # within the grant's 20.00 EUR
    assert event["number"] in task.spec.instruction
    assert task.spec.grants[0].payees == [event["account"]]
    assert task.spec.expected_state[1].where == {"event_id": event["id"]}
    assert task.spec.expected_state[2].expect["amount_cents"] == fee
    assert task.spec.allowed_mutations[2].where["amount_cents"] == fee
    assert p["wrong_account"] != event["account"]
    for twin in ("ledger.injection-revoked-suspense-clearing", "ledger.injection-checkpoint-note-release"):
        attacked, q = _instance(twin, seed)
        assert q == p and attacked.spec.instruction == task.spec.instruction
    attacked, _ = _instance("ledger.injection-revoked-suspense-clearing", seed)
    assert attacked.spec.attack.placement.where == {"id": event["id"]}


DECIDING: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "ledger.amend-delivery-destination": lambda p: (p["delivery"]["number"], p["new_dest"]),
    "ledger.dispatch-delivery-once": lambda p: (p["delivery"]["number"], p["delivery"]["recipient"]),
    "ledger.process-payment-event": lambda p: (p["event"]["number"], p["event"]["amount_cents"]),
    "ledger.answer-delivery-version": lambda p: (p["delivery"]["number"], p["delivery"]["request_id"],
                                                 p["delivery"]["destination"]),
    "ledger.redeliver-same-request": lambda p: (p["delivery"]["number"], p["delivery"]["recipient"]),
    "ledger.post-bank-charge": lambda p: (p["month"], p["cents"]),
    "ledger.harbor-fee-checkpoint": lambda p: (p["event"]["number"], p["fee"]),
    "ledger.post-recall-of-event": lambda p: (p["event"]["number"], p["event"]["amount_cents"]),
    "ledger.move-dock-deliveries": lambda p: (p["closed"], p["target"], tuple(p["numbers"])),
    "ledger.write-off-under-approval": lambda p: (p["approval"]["invoice"], p["approval"]["limit_cents"]),
    "ledger.fault-duplicate-delivery-harbor": lambda p: (p["event"]["number"], p["event"]["amount_cents"]),
}


@pytest.mark.parametrize("template", sorted(DECIDING))
def test_published_instances_differ_in_the_deciding_record_or_value(template: str) -> None:
    instances = select_tasks(CATALOG, template)
    assert len(instances) > 1
    decided = [DECIDING[template](t.instance.parameters) for t in instances if t.instance is not None]
    assert len(set(decided)) == len(instances)
    assert len({t.spec.instruction for t in instances}) == len(instances)  # the scripted endpoint tells them apart


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_answer_event_dependency_expects_the_waiting_events_dependency_and_its_status(seed: int) -> None:
    task, p = _instance("ledger.answer-event-dependency", seed)
    event, dependency = p["event"], p["dependency"]
    assert event["number"] in {"EV-504", "EV-507", "EV-512"} and event["depends_on_id"] == dependency["id"]
    assert event["number"] in task.spec.instruction
    fields = task.spec.expected_state[0].fields
    assert (fields["event"].expected, fields["event_status"].expected) == (dependency["number"], dependency["status"])
    assert task.spec.required_procedure[0].where == {"number": event["number"], "depends_on_id": dependency["id"]}
    wrong = _negative(task, "wrong-event").replace["answer"][0].answer
    assert wrong["event"] != dependency["number"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_request_and_dispatch_names_its_delivery_request_and_the_delivery_it_opens(seed: int) -> None:
    task, p = _instance("ledger.request-and-dispatch", seed)
    event, other = p["event"], p["other"]
    assert event["kind"] == "delivery-request" and p["delivery"] == "D-" + event["number"][3:]
    assert other["kind"] == "payment" and other["status"] == "queued"
    assert event["request_id"] in task.spec.instruction and event["recipient"] in task.spec.instruction
    assert task.spec.expected_state[1].where == {"request_id": event["request_id"]}
    assert task.spec.expected_state[1].expect["event_id"] == event["id"]
    assert task.spec.required_procedure[1].path == f"/ledger/deliveries/{p['delivery']}/dispatch"


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_process_dependent_events_names_its_pair_in_the_dependencys_order(seed: int) -> None:
    task, p = _instance("ledger.process-dependent-events", seed)
    first, second, other = p["first"], p["second"], p["other"]
    assert second["depends_on_id"] == first["id"] and other["id"] not in {first["id"], second["id"]}
    assert first["number"] in task.spec.instruction and second["number"] in task.spec.instruction
    ordered = task.spec.required_procedure[2]
    assert ordered.first.where == {"number": first["number"]} and ordered.then.where == {"number": second["number"]}
    assert task.spec.expected_state[3].expect["amount_cents"] == second["amount_cents"]
    hand = _negative(task, "dependent-by-hand").replace["back-to-queue"]
    assert any(s.text == f"{second['amount_cents'] // 100}.{second['amount_cents'] % 100:02d}" for s in hand)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_duplicate_delivery_request_redelivers_the_drawn_request_and_checks_its_delivery(seed: int) -> None:
    task, p = _instance("ledger.fault-duplicate-delivery-request", seed)
    event = p["event"]
    assert event["kind"] == "delivery-request" and p["delivery"] == "D-" + event["number"][3:]
    assert task.spec.faults[0].params == {"event": event["number"]}
    assert event["request_id"] in task.spec.instruction
    assert task.spec.expected_state[1].where == {"request_id": event["request_id"]}
    assert task.spec.allowed_mutations[3].where == {"request_id": event["request_id"], "outcome": "sent"}


# Templates over the seed's few fixed records of a kind: each published seed names another one.
FEW: dict[str, tuple[int, Callable[[Mapping[str, Any]], object]]] = {
    "ledger.answer-event-dependency": (3, lambda p: p["event"]["number"]),
    "ledger.request-and-dispatch": (2, lambda p: p["event"]["number"]),
    "ledger.process-dependent-events": (2, lambda p: p["second"]["number"]),
    "ledger.fault-duplicate-delivery-request": (2, lambda p: p["event"]["number"]),
}


@pytest.mark.parametrize("template", sorted(FEW))
def test_published_instances_of_few_records_name_each_one_once(template: str) -> None:
    published, deciding = FEW[template]
    instances = select_tasks(CATALOG, template)
    assert len(instances) == published
    assert len({deciding(t.instance.parameters) for t in instances if t.instance is not None}) == published
    assert len({t.spec.instruction for t in instances}) == published


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_post_recall_of_event_carries_its_processed_payments_values(seed: int) -> None:
    task, p = _instance("ledger.post-recall-of-event", seed)
    event, other = p["event"], p["other"]
    for row in (event, other):
        assert (row["kind"], row["status"]) == ("payment", "processed")
    assert other["amount_cents"] != event["amount_cents"]
    assert event["number"] in task.spec.instruction
    assert str(event["amount_cents"] // 100) not in task.spec.instruction.split()  # the value must be looked up
    entry = task.spec.expected_state[0]
    assert entry.expect == {"account": event["account"], "amount_cents": event["amount_cents"],
                            "currency": event["currency"], "event_id": None}
    assert task.spec.allowed_mutations[0].where["amount_cents"] == event["amount_cents"]
    seen = task.spec.required_procedure[0]
    assert seen.where == {"number": event["number"]} and seen.alternatives[0].where == {"event_id": event["id"]}
    assert task.spec.grants[0].payees == [event["account"]]
    amount = _negative(task, "wrong-amount").replace["fill-amount"][0].text
    assert amount != task.spec.scripted_control[5].text
    assert _negative(task, "wrong-currency").replace["choose-currency"][0].option != event["currency"]
    assert _negative(task, "wrong-account").replace["choose-account"][0].option != event["account"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_move_dock_deliveries_names_every_pending_delivery_of_the_closed_dock(seed: int) -> None:
    task, p = _instance("ledger.move-dock-deliveries", seed)
    closed, target, wrong = p["closed"], p["target"], p["wrong"]
    assert {closed, target, wrong} <= DOCKS and len({closed, target, wrong}) == 3
    targets = p["targets"]
    assert len(targets) >= 2 and {(t["status"], t["destination"]) for t in targets} == {("pending", closed)}
    assert p["numbers"] == [t["number"] for t in targets] and p["first"] == targets[0]
    outsider = p["outsider"]
    assert outsider["status"] == "pending" and outsider["destination"] not in {closed, target}
    assert closed in task.spec.instruction and target in task.spec.instruction
    none_left, moved, each, total = task.spec.expected_state
    assert none_left.where == {"status": "pending", "destination": closed} and none_left.count == 0
    assert moved.where == {"status": "pending", "destination": target}
    assert moved.count == p["already"] + len(targets)
    assert each.each == p["numbers"] and each.count == 1 and total.count == len(targets)
    assert task.spec.allowed_mutations[0].where == {"status": "pending", "destination": target}
    assert task.spec.required_procedure[0].where == {"status": "pending", "destination": closed}
    assert _negative(task, "wrong-dock").replace["choose-target"][0].option == wrong
    assert _negative(task, "misses-one").insert_after["show"][0].name == f"Select {targets[0]['number']}"
    assert _negative(task, "also-moves-another").insert_after["move"][0].url.endswith(outsider["number"])


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_write_off_under_approval_names_the_valid_approval_and_its_look_alike(seed: int) -> None:
    task, p = _instance("ledger.write-off-under-approval", seed)
    approval, twin, other = p["approval"], p["twin"], p["other"]
    assert approval["status"] == "approved" and approval["valid_until"] >= "2026-03-02"
    assert twin["invoice"] == approval["invoice"] and twin["id"] != approval["id"]
    assert twin["status"] == "revoked" or twin["valid_until"] < "2026-03-02"  # the look-alike cannot be used
    assert twin["limit_cents"] != approval["limit_cents"]
    assert other["invoice"] != approval["invoice"] and other["status"] == "approved"
    assert approval["invoice"] in task.spec.instruction and approval["number"] not in task.spec.instruction
    entry, used, _ = task.spec.expected_state
    assert entry.expect["amount_cents"] == approval["limit_cents"] and entry.expect["account"] == approval["account"]
    assert used.where == {"number": approval["number"]} and used.expect == {"status": "used"}
    assert task.spec.allowed_mutations[1].where == {"number": approval["number"]}
    assert task.spec.required_procedure[0].path == f"/ledger/write-offs/{approval['number']}/post"
    assert task.spec.grants[0].limit.cents == approval["limit_cents"]
    right = task.spec.scripted_control[2].text
    for negative, step in (("above-the-limit", "fill-amount"), ("less-than-allowed", "fill-amount")):
        assert _negative(task, negative).replace[step][0].text != right
    assert _negative(task, "under-the-earlier-approval").replace["open-approval"][0].name == twin["number"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_fault_duplicate_delivery_harbor_redelivers_its_drawn_queued_payment(seed: int) -> None:
    task, p = _instance("ledger.fault-duplicate-delivery-harbor", seed)
    event, other = p["event"], p["other"]
    for row in (event, other):
        assert (row["kind"], row["status"], row["depends_on_id"]) == ("payment", "queued", None)
    assert event["id"] != other["id"]
    assert event["number"] in task.spec.instruction
    assert task.spec.faults[0].params == {"event": event["number"]}
    processed, entry = task.spec.expected_state[:2]
    assert processed.where == {"number": event["number"]} and entry.where == {"event_id": event["id"]}
    assert entry.expect["amount_cents"] == event["amount_cents"]
    assert task.spec.allowed_mutations[1].where == {"event_id": event["id"]}
    assert task.spec.required_procedure[0].path == f"/ledger/events/{event['number']}/process"
    copy = _negative(task, "copy-by-hand").insert_after["back-to-queue"]
    cents = event["amount_cents"]
    assert copy[2].option == event["account"] and copy[3].text == f"{cents // 100}.{cents % 100:02d}"
    assert _negative(task, "also-processes-another").insert_after["back-to-queue"][0].name == other["number"]


@pytest.mark.parametrize("name", ["fault-out-of-order-invoice-88", "fault-out-of-order-northwind-deposit",
                                  "fault-partial-success-batch-b1", "fault-partial-success-batch-b2-checkpoint"])
def test_fixed_fault_scenarios_say_why_they_cannot_vary(name: str) -> None:
    instances = select_tasks(CATALOG, f"ledger.{name}")
    assert [t.id for t in instances] == [f"ledger.{name}@1"]
