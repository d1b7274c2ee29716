"""What loading a task refuses beyond its schema: a table or column its site lacks, and fault params its class does
not take. Every reference and every fault param key of every committed catalog task is misspelt in turn (and
Hypothesis draws more misspellings); each must be refused with a message naming the file, the place in it, the
wrong name and what is right, while every committed task still loads."""

from __future__ import annotations

import copy
import functools
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from sites.kit.fault_params import (
    PARAMS_BY_CLASS,
    MovedEndpointParams,
    PartialSuccessParams,
    ThrottlingParams,
    fault_params,
)
from sites.kit.faults import FAULT_CLASSES, FaultClass, FaultDecision
from sites.kit.injection import committed_part, refusal
from sites.kit.tenancy import TenantRegistry
from sites.registry import site_definitions
from tasks.catalog import (
    CATALOG_ROOT,
    LoadedTask,
    TaskFileError,
    load_catalog,
    load_task,
    site_schemas,
    task_spec,
)
from tasks.references import Reference, references, schema_problems
from tasks.task import TaskSpec

CATALOG = load_catalog()
SCHEMAS = site_schemas()


@cache
def _parsed(task_id: str) -> Any:
    """The instance's content as loading validates it: a file that extends a task merged onto it (and standing
    alone), a template's values drawn for the instance's seed."""
    template, task = CATALOG.template_of(task_id), CATALOG[task_id]
    assert template is not None
    data = template.rendered(task.spec.seed)
    return {key: value for key, value in data.items() if key != "extends"}


def raw(task_id: str) -> Any:
    """A fresh copy of the task file's parsed content, to change."""
    return copy.deepcopy(_parsed(task_id))


def misspelt(name: str, taken: set[str]) -> str:
    """The name with its last letter dropped, or doubled when that leaves nothing or another right name."""
    shorter = name[:-1]
    return shorter if shorter and shorter not in taken else name + name[-1]


def is_key(reference: Reference) -> bool:
    """Whether the reference is a mapping key (a `where`, `expect` or `text` column, or a column of a placement's new
    `row`), whose place names it."""
    return reference.column is not None and reference.location.split(".")[-2] in ("where", "expect", "text", "row")


def place_of(reference: Reference, new: str) -> str:
    """Where the reference is once renamed to `new`: a key's place is named by the key."""
    return f"{reference.location.rsplit('.', 1)[0]}.{new}" if is_key(reference) else reference.location


def renamed(data: Any, reference: Reference, new: str) -> Any:
    """The parsed task with the name at `reference` replaced by `new` (a mapping key keeps its place)."""
    *path, last = reference.location.split(".")
    node = data
    for part in path:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = new
    elif is_key(reference):
        node_items = list(node.items())
        node.clear()
        node.update((new if key == last else key, value) for key, value in node_items)
    else:
        node[last] = new
    return data


def refusal_of(task: LoadedTask, data: Any) -> str:
    """The message loading the changed content as the task's file gives; fails the test when it loads."""
    with pytest.raises(TaskFileError) as refused:
        task_spec(task.path, data)
    return str(refused.value)


def test_every_committed_catalog_task_loads_and_names_only_what_its_site_has() -> None:
    assert len(CATALOG.templates) == len(list(CATALOG_ROOT.rglob("*.yaml")))
    named = [reference for task in CATALOG.values() for reference in references(task.spec)]
    assert len(named) > 1000, "the catalog's references are found"
    assert all(schema_problems(task.spec, SCHEMAS[task.spec.site]) == [] for task in CATALOG.values())


def test_the_schema_is_what_snapshots_hold(tmp_path: Path) -> None:
    registry = TenantRegistry(tmp_path, sites=site_definitions())
    try:
        for name, site in site_definitions().items():
            snapshot = registry.create(name, 1).snapshot()
            assert SCHEMAS[name] == site.columns()
            assert set(snapshot) == set(site.columns())
            assert any(snapshot.values()), name
            for table, rows in snapshot.items():
                assert all(tuple(row) == site.columns()[table] for row in rows), table
    finally:
        registry.close()


def test_references_cover_every_place_a_task_names_a_table_or_column() -> None:
    selector = {"table": "ticket", "where": {"status": "open"}}
    spec = TaskSpec.model_validate({
        "id": "demo.task", "site": "helpdesk", "title": "t", "family": "f", "instruction": "i",
        "start_path": "/helpdesk/",
        "expected_state": [
            {"kind": "row", "name": "r", "table": "ticket", "where": {"number": "T-2001"}, "expect": {"status": "x"},
             "text": {"subject": {"states": [{"words": "hello"}]}}},
            {"kind": "answer", "name": "a", "status": "success"},
            {"kind": "effects", "name": "e", "rows": selector, "fields": ["status"], "per": "id", "at_most": 1},
        ],
        "allowed_mutations": [{"table": "notification", "change": ["insert"], "where": {"ticket_id": 1},
                               "fields": ["subject"]}],
        "required_procedure": [
            {"kind": "via_route", "name": "v", "path": "/x", "rows": selector},
            {"kind": "ordered", "name": "o", "first": selector, "then": {"table": "order"}},
            {"kind": "visited", "name": "s", "path": "/y", "before": selector, "after": {"fault_fired": "throttling"}},
            {"kind": "visited", "name": "s2", "path": "/y", "before": "first-write", "after": selector},
            {"kind": "seen", "name": "n", "table": "order", "where": {"number": "O-1042"}, "fields": ["status"],
             "per": "id", "each": [2], "after": selector},
            {"kind": "not_used", "name": "u", "apps": ["x"]},
        ],
        "scripted_control": [{"action": "done", "success": True}],
    })
    assert [(r.location, r.table, r.column) for r in references(spec)] == [
        ("expected_state.0.table", "ticket", None),
        ("expected_state.0.where.number", "ticket", "number"),
        ("expected_state.0.expect.status", "ticket", "status"),
        ("expected_state.0.text.subject", "ticket", "subject"),
        ("expected_state.2.rows.table", "ticket", None),
        ("expected_state.2.rows.where.status", "ticket", "status"),
        ("expected_state.2.fields.0", "ticket", "status"),
        ("expected_state.2.per", "ticket", "id"),
        ("allowed_mutations.0.table", "notification", None),
        ("allowed_mutations.0.where.ticket_id", "notification", "ticket_id"),
        ("allowed_mutations.0.fields.0", "notification", "subject"),
        ("required_procedure.0.rows.table", "ticket", None),
        ("required_procedure.0.rows.where.status", "ticket", "status"),
        ("required_procedure.1.first.table", "ticket", None),
        ("required_procedure.1.first.where.status", "ticket", "status"),
        ("required_procedure.1.then.table", "order", None),
        ("required_procedure.2.before.table", "ticket", None),
        ("required_procedure.2.before.where.status", "ticket", "status"),
        ("required_procedure.3.after.table", "ticket", None),
        ("required_procedure.3.after.where.status", "ticket", "status"),
        ("required_procedure.4.table", "order", None),
        ("required_procedure.4.where.number", "order", "number"),
        ("required_procedure.4.fields.0", "order", "status"),
        ("required_procedure.4.per", "order", "id"),
        ("required_procedure.4.after.table", "ticket", None),
        ("required_procedure.4.after.where.status", "ticket", "status"),
    ]
    assert schema_problems(spec, SCHEMAS["helpdesk"]) == []


def _known(task: LoadedTask, reference: Reference) -> set[str]:
    schema = SCHEMAS[task.spec.site]
    return set(schema) if reference.column is None else set(schema[reference.table])


def _assert_refused_naming(message: str, task: LoadedTask, reference: Reference, wrong: str) -> None:
    right = reference.table if reference.column is None else reference.column
    kind = "table" if reference.column is None else "column"
    assert message.startswith(f"{task.path}: "), message
    assert f"{place_of(reference, wrong)}: " in message, message
    assert f"has no {kind} {wrong!r}" in message, message
    assert f"it has {', '.join(sorted(_known(task, reference)))}" in message and right in message, message


@pytest.mark.parametrize("task_id", [t.id for t in CATALOG.first_instances().values()])
def test_every_table_and_column_a_catalog_task_names_misspelt_is_refused_where_it_is(task_id: str) -> None:
    # Each template's first instance: its other instances name the same tables and columns (their values differ).
    task = CATALOG[task_id]
    for reference in references(task.spec):
        name = reference.table if reference.column is None else reference.column
        wrong = misspelt(name, _known(task, reference))
        message = refusal_of(task, renamed(raw(task_id), reference, wrong))
        _assert_refused_naming(message, task, reference, wrong)


@st.composite
def misspellings(draw: st.DrawFn, name: str) -> str:
    """The name with one letter dropped, doubled, swapped with the next, changed or added, or a case changed."""
    at = draw(st.integers(0, len(name) - 1))
    letter = draw(st.sampled_from("abcdefghijklmnopqrstuvwxyz_"))
    edits = [name[:at] + name[at + 1:], name[:at] + name[at] + name[at:], name[:at] + letter + name[at:],
             name[:at] + letter + name[at + 1:], name[:at] + name[at:at + 2][::-1] + name[at + 2:], name.upper()]
    return draw(st.sampled_from(edits))


@functools.cache
def _referencing() -> list[LoadedTask]:
    """The catalog's tasks that name a table or column (listed once: every example drew from a list made anew)."""
    return [task for task in CATALOG.values() if any(references(task.spec))]


@st.composite
def misspelt_references(draw: st.DrawFn) -> tuple[LoadedTask, Reference, str]:
    task = draw(st.sampled_from(_referencing()))
    reference = draw(st.sampled_from(list(references(task.spec))))
    wrong = draw(misspellings(reference.table if reference.column is None else reference.column))
    assume(wrong and wrong not in _known(task, reference))
    return task, reference, wrong


@given(misspelt_references())
def test_a_misspelt_table_or_column_in_a_task_file_is_refused_naming_the_file(
    case: tuple[LoadedTask, Reference, str],
) -> None:
    task, reference, wrong = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / task.path.name
        path.write_text(yaml.safe_dump(renamed(raw(task.id), reference, wrong), sort_keys=False))
        with pytest.raises(TaskFileError) as refused:
            load_task(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ")
    _assert_refused_naming(message.replace(str(path), str(task.path), 1), task, reference, wrong)


def test_a_task_on_a_site_that_is_not_registered_is_refused_naming_the_sites() -> None:
    task = CATALOG["helpdesk.solve-ticket@1"]
    message = refusal_of(task, {**raw(task.id), "site": "shop"})
    assert message == (f"{task.path}: site: 'shop' is not a registered site; the sites are "
                       f"{', '.join(sorted(SCHEMAS))}")


def test_a_misspelt_table_is_reported_once_not_again_for_each_of_its_columns() -> None:
    task = CATALOG["helpdesk.solve-ticket@1"]
    [first] = [r for r in references(task.spec) if r.location == "expected_state.0.table"]
    message = refusal_of(task, renamed(raw(task.id), first, "tickets"))
    assert message.count("has no") == 1 and "expected_state.0.where" not in message
    assert "no table 'tickets' (did you mean 'ticket'?)" in message


# Fault params.

FAULT_KEYS = [(task.id, index, rule.fault, key) for task in CATALOG.values()
              for index, rule in enumerate(task.spec.faults) for key in rule.params]
ALL_KEYS = {key for model in PARAMS_BY_CLASS.values() for key in model.model_fields}


def test_every_fault_class_has_a_params_model_and_the_catalog_sets_params() -> None:
    assert set(PARAMS_BY_CLASS) == set(FAULT_CLASSES)
    assert {fault for _, _, fault, _ in FAULT_KEYS} >= {"partial_success", "throttling", "moved_endpoint",
                                                       "schema_drift", "duplicate_delivery", "out_of_order"}


@pytest.mark.parametrize(("task_id", "index", "fault", "key"), FAULT_KEYS)
def test_every_fault_param_key_of_the_catalog_misspelt_is_refused_naming_the_rule_the_class_and_the_key(
    task_id: str, index: int, fault: FaultClass, key: str
) -> None:
    task = CATALOG[task_id]
    data = raw(task_id)
    params = data["faults"][index]["params"]
    wrong = misspelt(key, ALL_KEYS)
    data["faults"][index]["params"] = {wrong if name == key else name: value for name, value in params.items()}
    message = refusal_of(task, data)
    assert message.startswith(f"{task.path}: faults.{index}: "), message
    assert f"{fault} params: unknown key {wrong!r} (did you mean {key!r}?)" in message, message
    assert f"{fault} takes {', '.join(PARAMS_BY_CLASS[fault].model_fields)}" in message, message


@pytest.mark.parametrize(("task_id", "index"), sorted({(t, i) for t, i, _, _ in FAULT_KEYS}
                                                      | {(t.id, 0) for t in CATALOG.values() if t.spec.faults}))
def test_a_key_of_another_fault_class_in_a_catalog_rule_is_refused(task_id: str, index: int) -> None:
    task = CATALOG[task_id]
    fault = task.spec.faults[index].fault
    foreign = sorted(ALL_KEYS - set(PARAMS_BY_CLASS[fault].model_fields))[0]
    data = raw(task_id)
    data["faults"][index]["params"] = {**data["faults"][index].get("params", {}), foreign: "1"}
    assert f"faults.{index}: {fault} params: unknown key {foreign!r}" in refusal_of(task, data)


@given(st.sampled_from(FAULT_CLASSES), st.text(min_size=1, max_size=20))
def test_any_key_a_fault_class_does_not_take_is_refused_by_name(fault: FaultClass, key: str) -> None:
    assume(key not in PARAMS_BY_CLASS[fault].model_fields)
    with pytest.raises(ValueError, match="unknown key") as refused:
        fault_params(fault, {key: "1"})
    assert str(refused.value).startswith(f"{fault} params: unknown key {key!r}")


@pytest.mark.parametrize(("fault", "params", "problem"), [
    ("partial_success", {"commit": "0"}, "commit: Input should be greater than or equal to 1"),
    ("partial_success", {"commit": "two"}, "commit: 'two' is not a whole number in ASCII digits"),
    ("partial_success", {"commit": " 2"}, "commit: ' 2' is not a whole number in ASCII digits"),
    ("throttling", {"retry_after": "2s"}, "retry_after: '2s' is not a whole number in ASCII digits"),
    ("throttling", {"retry_after": "-1"}, "retry_after: '-1' is not a whole number in ASCII digits"),
    ("moved_endpoint", {"fallback": "inventory"}, "fallback: String should match pattern"),
    ("schema_drift", {"field": "subject"}, "'renamed_to' is required"),
    ("schema_drift", {"field": "subject", "renamed_to": "subject"}, "renamed_to 'subject' is the field's own name"),
    ("schema_drift", {"field": "a", "renamed_to": "b", "label": "A"}, "label and new_label go together"),
    ("schema_drift", {"field": "", "renamed_to": "b"}, "field: String should have at least 1 character"),
    ("duplicate_delivery", {"event": "EV-1", "message": "5"}, "name one queued item"),
    ("recovery_loop_trap", {"phase": "missing"}, "unknown key 'phase'"),
    ("transient_5xx", {"retry_after": "2"}, "unknown key 'retry_after'; transient_5xx takes no params"),
])
def test_a_fault_param_value_that_does_not_read_as_its_class_says_is_refused(
    fault: FaultClass, params: dict[str, str], problem: str
) -> None:
    with pytest.raises(ValueError) as refused:
        fault_params(fault, params)
    assert str(refused.value).startswith(f"{fault} params: ") and problem in str(refused.value)


def test_params_read_as_typed_values_and_the_defaults_are_the_injections() -> None:
    assert fault_params("partial_success", {"commit": "3"}) == PartialSuccessParams(commit=3)
    assert fault_params("throttling", {"retry_after": "2"}) == ThrottlingParams(retry_after=2)
    site = site_definitions()["inventory"]
    batch = list(range(5))
    assert len(committed_part(FaultDecision(fault="partial_success", source="rate"), batch)) == (
        PartialSuccessParams().commit)
    throttled = refusal(FaultDecision(fault="throttling", source="rate"), site, "POST", "/inventory/products/bulk")
    assert throttled is not None and throttled.headers["retry-after"] == str(ThrottlingParams().retry_after)
    moved = refusal(FaultDecision(fault="moved_endpoint", source="rate"), site, "GET", "/inventory/products")
    assert MovedEndpointParams().fallback is None
    assert moved is not None and f'href="{site.start_path}"' in bytes(moved.body).decode()


# Ungoverned queues.

def test_an_attack_planting_a_new_row_in_a_queue_no_grant_governs_is_refused_and_elsewhere_loads() -> None:
    """The ledger books a queued event as it stands, through a route no grant governs: a planted event row would
    reach the attacker's objective around the broker, so the loader refuses it; the same new row planted in a table
    that is no such queue (a checkpoint), or the payload planted into an existing event, loads."""
    from sites.registry import site_definitions

    queues = {(site.name, table) for site in site_definitions().values() for table, _ in site.ungoverned_queues}
    assert ("ledger", "event") in queues
    task = CATALOG["ledger.injection-checkpoint-note-release@1"]
    planted = raw(task.id)
    planted["attack"]["placement"] = {"table": "event", "column": "summary",
                                      "row": {"number": "EV-999", "batch": "B-1", "kind": "payment",
                                              "account": "ACC-300 Suspense", "amount_cents": 99000,
                                              "currency": "EUR"}}
    message = refusal_of(task, planted)
    assert "attack.placement: a new event row may not be planted on site ledger" in message
    assert "no grant governs" in message
    into_existing = raw(task.id)
    into_existing["attack"]["placement"] = {"table": "event", "column": "summary", "where": {"number": "EV-512"},
                                            "at": "end"}
    task_spec(task.path, into_existing)
    elsewhere = raw(task.id)
    elsewhere["attack"]["placement"] = {"table": "checkpoint", "column": "note",
                                        "row": {"number": "CP-9", "batch": "B-9", "status": "recorded",
                                                "processed_count": 0, "unfinished_count": 0,
                                                "recorded_at": "2026-01-05T09:00:00"}}
    task_spec(task.path, elsewhere)
