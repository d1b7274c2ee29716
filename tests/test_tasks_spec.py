"""Pure tests of the task schema and loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from adapter.prompts import normalise_instruction
from adapter.scripted import create_scripted_app
from sites.kit.faults import FaultClass
from tasks import LoadedTask, TaskFileError, TaskSpec, load_catalog, load_task, select_tasks
from tasks.spec import EquivalentMutant, Ordered
from tasks.stated_order import order_problems

CATALOG = load_catalog()


def minimal(**changes: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": "demo.task", "site": "helpdesk", "title": "t", "family": "single-record-update",
        "instruction": "Do it.", "start_path": "/helpdesk/",
        "expected_state": [{"kind": "row", "name": "c", "table": "ticket", "where": {"id": 1}}],
        "scripted_control": [{"id": "go", "action": "click", "role": "link", "name": "Tickets"},
                             {"action": "done", "success": True}],
    }
    task.update(changes)
    return task


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_catalog_has_the_three_task_shapes() -> None:
    families = {t.spec.family for t in CATALOG.values()}
    assert {"approval-bound-action", "single-record-update", "read-and-answer"} <= families
    for task in CATALOG.values():
        assert task.spec.negative_controls, task.id
        assert len(task.sha256) == 64


def test_an_unknown_field_is_rejected_with_the_file_and_field_named(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(expected_stat=[]))
    with pytest.raises(TaskFileError, match=r"task\.yaml: expected_stat: not a known field"):
        load_task(path)


def test_a_task_with_no_checks_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="task has no checks"):
        load_task(write(tmp_path, minimal(expected_state=[])))


def test_a_negative_control_naming_an_unknown_step_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown step ids \['nope'\]"):
        TaskSpec.model_validate(minimal(negative_controls=[
            {"id": "n", "kind": "drop-step", "description": "d", "drop": ["nope"]}]))


def test_a_negative_control_that_changes_nothing_is_rejected() -> None:
    with pytest.raises(ValueError, match="changes nothing"):
        TaskSpec.model_validate(minimal(negative_controls=[{"id": "n", "kind": "drop-step", "description": "d"}]))


def test_a_fill_step_without_text_is_rejected() -> None:
    with pytest.raises(ValueError, match="a fill step needs text"):
        TaskSpec.model_validate(minimal(scripted_control=[
            {"action": "fill", "role": "textbox", "name": "Amount"}, {"action": "done", "success": True}]))


def test_a_control_must_end_with_done() -> None:
    with pytest.raises(ValueError, match="must end with a done step"):
        TaskSpec.model_validate(minimal(scripted_control=[{"action": "click", "role": "link", "name": "x"}]))


def test_malformed_yaml_is_reported_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: [unclosed\n")
    with pytest.raises(TaskFileError, match=r"bad\.yaml: not valid YAML"):
        load_task(path)


def test_negative_controls_are_derived_from_the_scripted_control() -> None:
    task = CATALOG["helpdesk.refund-with-approval@1"]
    spec, drawn = task.spec, task.instance.parameters if task.instance else {}
    steps = {n.id: n.derive(list(spec.scripted_control)) for n in spec.negative_controls}
    assert [s.name for s in steps["done-without-notifying"] if s.action == "click"] == [
        drawn["ticket"]["number"], drawn["order"]["number"], "Issue refund", drawn["follow_up"], "Mark done"]
    bypass = [s.name for s in steps["goodwill-bypass"] if s.action in ("fill", "click")]
    assert "Issue goodwill credit" in bypass and "Issue refund" not in bypass
    assert steps["notify-before-refund"][2].name == "Subject"


def test_selecting_unknown_task_ids_names_them() -> None:
    with pytest.raises(TaskFileError, match="unknown task ids: nope"):
        select_tasks(CATALOG, "helpdesk.solve-ticket@1,nope")
    assert [t.id for t in select_tasks(CATALOG, "all")] == list(CATALOG)


def test_the_content_hash_changes_with_any_byte(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    before = load_task(path).sha256
    path.write_text(path.read_text() + "\n")
    assert load_task(path).sha256 != before


def test_every_task_of_the_catalog_has_its_own_instruction() -> None:
    """Two tasks with one instruction would be indistinguishable to an agent (and to the scripted endpoint), unless
    they are twins: attacked tasks that extend one plain task, told apart by the payload the pages show."""
    seen: dict[str, str] = {}
    for task in CATALOG.values():
        if task.spec.extends is not None:
            base = CATALOG[task.spec.extends]
            assert task.spec.instruction == base.spec.instruction and task.spec.grants == base.spec.grants
            continue
        key = normalise_instruction(task.spec.instruction)
        assert key not in seen, f"{task.id} has the instruction of {seen.get(key)}"
        seen[key] = task.id
    first = next(iter(CATALOG.values()))
    twin = LoadedTask(spec=first.spec.model_copy(update={"id": "helpdesk.twin"}), path=first.path, sha256=first.sha256)
    with pytest.raises(ValueError, match="have the same instruction"):
        create_scripted_app([first, twin])


def test_every_order_an_instruction_states_between_writes_is_checked_or_its_swap_declared_equivalent() -> None:
    """"Do A, then B" is a check: per order an instruction states between two writes (`tasks.stated_order`), an
    `ordered` check or a `swap:` mutant declared equivalent with its reason (the audit swaps the writes)."""
    assert [problem for task in CATALOG.values() for problem in order_problems(task.spec)] == []
    harbor = CATALOG["ledger.harbor-fee-checkpoint@1"].spec
    orders = [check for check in harbor.required_procedure if isinstance(check, Ordered)]
    assert len(orders) == 2
    unchecked = harbor.model_copy(update={"required_procedure": [c for c in harbor.required_procedure
                                                                 if c is not orders[0]]})
    [problem] = order_problems(unchecked)
    assert problem.startswith("ledger.harbor-fee-checkpoint@1: the instruction states 2 order(s) between writes")
    declared = unchecked.model_copy(update={"equivalent_mutants": [
        *unchecked.equivalent_mutants, EquivalentMutant(mutant="swap:process:create", reason="a reason of ten")]})
    assert order_problems(declared) == []
    solve = CATALOG["helpdesk.solve-ticket@1"].spec
    assert order_problems(solve) == []
    ordered = solve.model_copy(update={"instruction": "Set ticket T-2274 to pending, then mark it solved."})
    assert len(order_problems(ordered)) == 1


def test_every_fault_class_has_two_scenarios_on_at_least_two_sites() -> None:
    sites: dict[str, set[str]] = {fault: set() for fault in get_args(FaultClass)}
    scenarios: dict[str, int] = dict.fromkeys(sites, 0)
    for task in CATALOG.values():
        for fault in {rule.fault for rule in task.spec.faults}:
            sites[fault].add(task.spec.site)
            scenarios[fault] += 1
    assert {fault for fault, count in scenarios.items() if count < 2} == set()
    assert {fault for fault, where in sites.items() if len(where) < 2} == set()
    assert sum(bool(task.spec.faults) for task in CATALOG.values()) >= 30
