"""Blind review of task templates (instances `TEMPLATE@SEED`, hashes, fresh reservations, stats, sampled checks).

Written from docs/extending.md "A template", docs/architecture.md "Templates and instances" and "Reserved subsets and
the task document", DESIGN.md "Templates and instances" and the public docstrings and signatures of tasks/templates.py,
tasks/catalog.py, computerops/catalog/subsets.py and computerops/catalog/stats.py -- not from the implementation's
own tests. Pure, in-process (one small subprocess for cross-process determinism); no browser.

Its findings (each first an `xfail(strict=True, reason="FINDING: ...")` case) were fixed, and the marks removed.
"""
# Cases read `task.instance`, `catalog.template_of(...)` and `parse_instance_id(...)` of what the catalog generates,
# which are never None there: the checker's Optional narrowing would add nothing but noise to each line.
# mypy: disable-error-code="union-attr,index,misc"

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from computerops.catalog import subsets
from computerops.catalog.stats import CatalogStats, catalog_stats
from sites.registry import site_definitions
from tasks.catalog import (
    CATALOG_ROOT,
    Catalog,
    InstanceUndefined,
    LoadedTask,
    TaskFileError,
    instance_sha256,
    load_catalog,
    load_task,
    load_template,
    select_tasks,
)
from tasks.templates import (
    FRESH_SEED_FLOOR,
    MAX_SEED,
    _digits_swapped,
    evaluate,
    instance_id,
    looks_alike,
    parse_instance_id,
    render,
)

REPO = Path(__file__).resolve().parent.parent
BASE_FILE = CATALOG_ROOT / "webmail" / "update-contact-phone.yaml"
TWIN_FILE = CATALOG_ROOT / "webmail" / "injection-subject-carlos-email.yaml"
PUBLISHED = len(load_template(BASE_FILE).seeds)
"""How many instances the worked example publishes (its file says; the twin publishes as many)."""
FIXED_FILE = Path(__file__).resolve().parent / "fixtures" / "tasks" / "fixed-answer-latest-order.yaml"
BASE = "webmail.update-contact-phone"
TWIN = "webmail.injection-subject-carlos-email"
FIXED = "helpdesk.answer-latest-order"

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# --- helpers -------------------------------------------------------------------------------------------------------


def write_root(root: Path, base_text: str | None = None, *, twin_text: str | None = None,
               fixed: bool = False) -> Path:
    """A catalog folder holding the worked example (as given), optionally its attacked twin and a fixed task."""
    (root / "webmail").mkdir(parents=True, exist_ok=True)
    (root / "webmail" / BASE_FILE.name).write_text(base_text if base_text is not None else BASE_FILE.read_text())
    if twin_text is not None:
        (root / "webmail" / TWIN_FILE.name).write_text(twin_text)
    if fixed:
        (root / "webmail" / FIXED_FILE.name).write_text(FIXED_FILE.read_text())
    return root


def edited(mutate: Callable[[dict[str, Any]], None]) -> str:
    """The worked example's YAML after `mutate` edited its parsed content."""
    data = copy.deepcopy(yaml.safe_load(BASE_FILE.read_text()))
    mutate(data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def with_parameters(**parameters: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        data["template"]["parameters"].update(parameters)
    return mutate


def catalog_with(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> Catalog:
    return load_catalog(write_root(tmp_path / "catalog", edited(mutate)))


def drawn(tmp_path: Path, parameter: dict[str, Any], seeds: range = range(1, 9), name: str = "x") -> list[Any]:
    """The value of the added parameter `name` at each seed."""
    catalog = catalog_with(tmp_path, with_parameters(**{name: parameter}))
    return [catalog[instance_id(BASE, seed)].instance.parameters[name] for seed in seeds]


def generation_error(tmp_path: Path, mutate: Callable[[dict[str, Any]], None], seed: int = 1) -> str:
    """The TaskFileError's message from loading, or else from generating, the edited template at `seed`."""
    with pytest.raises(TaskFileError) as caught:
        catalog = catalog_with(tmp_path, mutate)
        catalog[instance_id(BASE, seed)]
    return str(caught.value)


@pytest.fixture(scope="module")
def pair_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_root(tmp_path_factory.mktemp("pair"), twin_text=TWIN_FILE.read_text(), fixed=True)


@pytest.fixture(scope="module")
def pair(pair_root: Path) -> Catalog:
    return load_catalog(pair_root)


# --- instance ids -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 8, 9, FRESH_SEED_FLOOR - 1, FRESH_SEED_FLOOR, MAX_SEED])
def test_instance_id_round_trips(seed: int) -> None:
    assert parse_instance_id(instance_id(BASE, seed)) == (BASE, seed)


@pytest.mark.parametrize("suffix", [
    "-1", "+1", "1e3", "", " 1", "1.0", "0x10", "1_000", str(MAX_SEED + 1), "1@2",
    "\u0661",          # ARABIC-INDIC DIGIT ONE
    "\uff11",          # FULLWIDTH DIGIT ONE
    "1\u0662",         # an ASCII digit followed by a non-ASCII one
    "\u00b9",          # SUPERSCRIPT ONE
])
def test_instance_id_refuses_what_is_not_a_seed(suffix: str) -> None:
    assert parse_instance_id(f"{BASE}@{suffix}") is None


@pytest.mark.parametrize("text", [BASE, "@1", "", "webmail.update-contact-phone#1", "Webmail.Update@1"])
def test_instance_id_refuses_what_is_not_an_instance_id(text: str) -> None:
    assert parse_instance_id(text) is None


@given(seed=st.integers(min_value=0, max_value=MAX_SEED))
@settings(max_examples=200, deadline=None)
def test_instance_id_round_trip_property(seed: int) -> None:
    assert parse_instance_id(instance_id(BASE, seed)) == (BASE, seed)


def test_leading_zeros_name_no_other_instance(pair: Catalog) -> None:
    """`T@01` either names nothing or names exactly `T@1` (never a second, differently hashed instance)."""
    task = pair.get(f"{BASE}@01")
    assert task is None or (task.id == f"{BASE}@1" and task.sha256 == pair[f"{BASE}@1"].sha256)


# --- the catalog as a mapping -----------------------------------------------------------------------------------------


def test_catalog_holds_the_published_instances_in_id_order(pair: Catalog) -> None:
    ids = list(pair)
    assert len(pair) == len(ids) == 2 * PUBLISHED + 1
    assert ids == sorted(ids, key=lambda i: parse_instance_id(i) or (i, 0))  # by template, then seed as a number
    assert len(set(ids)) == len(ids)
    for template, count in ((BASE, PUBLISHED), (TWIN, PUBLISHED)):
        assert [i for i in ids if i.startswith(template + "@")] == [f"{template}@{s}" for s in range(1, count + 1)]
    for task_id in ids:
        assert task_id in pair
        assert pair[task_id].id == task_id
        assert pair[task_id].instance.published
        assert not pair[task_id].instance.fresh
    assert pair.template_of(BASE).seeds == list(range(1, PUBLISHED + 1))


def test_instances_are_in_seed_order_beyond_nine(tmp_path: Path) -> None:
    catalog = catalog_with(tmp_path, lambda data: data["template"].update(published=12))
    assert [t.instance.seed for t in catalog.instances(BASE)] == list(range(1, 13))
    assert set(catalog) == {f"{BASE}@{s}" for s in range(1, 13)}
    assert len(catalog) == 12


@pytest.mark.parametrize("key", [None, 5, 1.5, b"webmail.update-contact-phone@1", ("a",), BASE, f"{BASE}@", "@1",
                                 f"{BASE}@{MAX_SEED + 1}", f"{BASE}@-3", "webmail.nope@1", f"{BASE}@1\u0661"])
def test_garbage_keys_are_absent(pair: Catalog, key: Any) -> None:
    assert key not in pair
    assert pair.get(key) is None
    assert pair.get(key, "default") == "default"
    with pytest.raises(KeyError):
        pair[key]


@pytest.mark.parametrize("seed", [PUBLISHED + 1, FRESH_SEED_FLOOR - 1, FRESH_SEED_FLOOR, FRESH_SEED_FLOOR + 1,
                                  MAX_SEED])
def test_other_seeds_are_generated_on_demand_but_not_listed(pair: Catalog, seed: int) -> None:
    before = list(pair)
    task = pair.get(f"{BASE}@{seed}")
    assert task is not None and task.id == f"{BASE}@{seed}"
    assert task.spec.seed == seed and task.instance.seed == seed
    assert task.instance.template == BASE
    assert not task.instance.published
    assert task.instance.fresh == (seed >= FRESH_SEED_FLOOR)
    assert pair[f"{BASE}@{seed}"].sha256 == task.sha256
    assert list(pair) == before and len(pair) == len(before)


def test_a_fixed_task_has_only_its_own_seed(pair: Catalog) -> None:
    own = pair.template_of(FIXED).seeds
    assert own == [pair[f"{FIXED}@{own[0]}"].spec.seed]
    for seed in (own[0] + 1, FRESH_SEED_FLOOR):
        assert f"{FIXED}@{seed}" not in pair
        assert pair.get(f"{FIXED}@{seed}") is None


@pytest.mark.parametrize("seed", [1, FRESH_SEED_FLOOR])
def test_a_failing_generator_is_an_error_not_an_absent_key(tmp_path: Path, seed: int) -> None:
    catalog = catalog_with(tmp_path, with_parameters(x={"row": "no_such_table"}))
    for lookup in (catalog.get, catalog.__getitem__):
        with pytest.raises(TaskFileError) as caught:
            lookup(f"{BASE}@{seed}")
        assert not isinstance(caught.value, KeyError)
        assert f"{BASE}@{seed}" in str(caught.value)
    with pytest.raises(TaskFileError):
        select_tasks(catalog, BASE)


def test_template_of(pair: Catalog) -> None:
    assert pair.template_of(BASE).id == BASE
    assert pair.template_of(f"{BASE}@{FRESH_SEED_FLOOR + 5}").id == BASE
    assert pair.template_of(f"{TWIN}@3").key == BASE
    assert pair.template_of(BASE).key == BASE
    assert pair.template_of("webmail.nope") is None
    assert pair.template_of("webmail.nope@1") is None


# --- determinism and the instance hash --------------------------------------------------------------------------------

SEEDS = (1, 8, FRESH_SEED_FLOOR, 4_242_424_242, MAX_SEED)


def _fingerprint(catalog: Catalog, task_id: str) -> tuple[str, str, str]:
    task = catalog[task_id]
    return task.sha256, task.spec.model_dump_json(), json.dumps(dict(task.instance.parameters), sort_keys=True)


def test_two_loads_give_the_same_instances(pair_root: Path, pair: Catalog) -> None:
    again = load_catalog(pair_root)
    for template in (BASE, TWIN):
        for seed in SEEDS:
            assert _fingerprint(again, f"{template}@{seed}") == _fingerprint(pair, f"{template}@{seed}")


_CHILD = """
import json, sys
from tasks.catalog import load_catalog
catalog = load_catalog(__import__('pathlib').Path(sys.argv[1]))
out = {}
for task_id in sys.argv[2:]:
    task = catalog[task_id]
    out[task_id] = [task.sha256, json.dumps(dict(task.instance.parameters), sort_keys=True)]
print(json.dumps(out))
"""


def test_instances_are_the_same_in_another_process(pair_root: Path, pair: Catalog) -> None:
    ids = [f"{t}@{s}" for t in (BASE, TWIN) for s in SEEDS]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run([sys.executable, "-c", _CHILD, str(pair_root), *ids], capture_output=True, text=True,
                            check=True, cwd=REPO, env=env, timeout=120)
    child = json.loads(result.stdout.strip().splitlines()[-1])
    for task_id in ids:
        task = pair[task_id]
        assert child[task_id] == [task.sha256, json.dumps(dict(task.instance.parameters), sort_keys=True)], task_id


def test_the_hash_is_what_instance_sha256_says(pair: Catalog) -> None:
    for task_id in (f"{BASE}@1", f"{TWIN}@2", f"{BASE}@{FRESH_SEED_FLOOR}", f"{FIXED}@1"):
        task = pair[task_id]
        assert task.sha256 == instance_sha256(task.instance.template_sha256, task.spec)
        assert len(task.sha256) == 64


def test_the_hash_differs_per_seed(pair: Catalog) -> None:
    hashes = {pair[f"{BASE}@{s}"].sha256 for s in (*range(1, PUBLISHED + 1), FRESH_SEED_FLOOR)}
    assert len(hashes) == PUBLISHED + 1
    assert pair[f"{BASE}@1"].sha256 != pair[f"{TWIN}@1"].sha256


def test_the_hash_covers_the_template_file_bytes(tmp_path: Path, pair: Catalog) -> None:
    commented = load_catalog(write_root(tmp_path, BASE_FILE.read_text() + "\n# one more comment\n",
                                        twin_text=TWIN_FILE.read_text()))
    for task_id in (f"{BASE}@3", f"{BASE}@{FRESH_SEED_FLOOR}"):
        assert commented[task_id].spec == pair[task_id].spec
        assert commented[task_id].sha256 != pair[task_id].sha256
        assert commented[task_id].instance.template_sha256 != pair[task_id].instance.template_sha256


def test_the_twin_hash_covers_the_extended_base_file(tmp_path: Path, pair: Catalog) -> None:
    commented = load_catalog(write_root(tmp_path, BASE_FILE.read_text() + "\n# base edited\n",
                                        twin_text=TWIN_FILE.read_text()))
    assert commented[f"{TWIN}@3"].spec == pair[f"{TWIN}@3"].spec
    assert commented[f"{TWIN}@3"].sha256 != pair[f"{TWIN}@3"].sha256


def test_editing_the_twin_leaves_the_base_hash(tmp_path: Path, pair: Catalog) -> None:
    commented = load_catalog(write_root(tmp_path, twin_text=TWIN_FILE.read_text() + "\n# twin edited\n"))
    assert commented[f"{BASE}@3"].sha256 == pair[f"{BASE}@3"].sha256
    assert commented[f"{TWIN}@3"].sha256 != pair[f"{TWIN}@3"].sha256


def test_the_hash_covers_the_version(tmp_path: Path, pair: Catalog) -> None:
    bumped = catalog_with(tmp_path, lambda data: data.update(version=data["version"] + 1))
    task = bumped[f"{BASE}@3"]
    assert task.spec.version == pair[f"{BASE}@3"].spec.version + 1
    assert task.sha256 != pair[f"{BASE}@3"].sha256


def test_the_template_hash_is_the_load_template_hash(pair: Catalog) -> None:
    assert load_template(BASE_FILE).sha256 == pair[f"{BASE}@1"].instance.template_sha256
    assert load_template(TWIN_FILE).sha256 == pair[f"{TWIN}@1"].instance.template_sha256
    assert load_template(TWIN_FILE).key == BASE


@given(seed=st.one_of(st.integers(min_value=1, max_value=200),
                      st.integers(min_value=FRESH_SEED_FLOOR, max_value=MAX_SEED)))
@FAST
def test_twins_draw_the_same_records(pair: Catalog, seed: int) -> None:
    base, twin = pair[f"{BASE}@{seed}"], pair[f"{TWIN}@{seed}"]
    assert dict(twin.instance.parameters) == dict(base.instance.parameters)
    assert twin.spec.seed == base.spec.seed == seed
    other = base.instance.parameters["other"]
    assert other["name"] in twin.spec.attack.instruction


@given(seed=st.one_of(st.integers(min_value=1, max_value=200),
                      st.integers(min_value=FRESH_SEED_FLOOR, max_value=MAX_SEED)))
@FAST
def test_every_seed_gives_a_valid_instance_with_its_draws_in_place(pair: Catalog, seed: int) -> None:
    task = pair[f"{BASE}@{seed}"]
    drawn_ = task.instance.parameters
    contact, other, new_phone = drawn_["contact"], drawn_["other"], drawn_["new_phone"]
    assert 1000 <= drawn_["suffix"] <= 9998
    assert contact["id"] != other["id"]
    assert new_phone != contact["phone"] and new_phone[:-4] == contact["phone"][:-4]
    assert contact["name"] in task.spec.instruction and new_phone in task.spec.instruction
    assert "{{" not in task.spec.instruction
    check = task.spec.expected_state[0]
    assert check.where == {"id": contact["id"]} and isinstance(check.where["id"], int)
    assert task.instance.difficulty is not None and task.instance.difficulty.steps == len(task.spec.scripted_control)


def test_instances_do_not_depend_on_the_order_they_are_asked_for(pair_root: Path) -> None:
    forwards, backwards = load_catalog(pair_root), load_catalog(pair_root)
    seeds = [1, 2, 5, 8, FRESH_SEED_FLOOR + 3, 77_777_777]
    first = {(t, s): forwards[f"{t}@{s}"].sha256 for t in (BASE, TWIN) for s in seeds}
    second = {(t, s): backwards[f"{t}@{s}"].sha256 for t in (TWIN, BASE) for s in reversed(seeds)}
    assert first == second


def test_the_hash_does_not_depend_on_where_the_catalog_lies(pair: Catalog) -> None:
    """The hash covers the template files' bytes: the repository's catalog and a copy elsewhere agree."""
    for task_id in (f"{BASE}@5", f"{TWIN}@5", f"{BASE}@{FRESH_SEED_FLOOR + 9}"):
        template, seed = parse_instance_id(task_id)
        path = BASE_FILE if template == BASE else TWIN_FILE
        assert load_task(path, seed).sha256 == pair[task_id].sha256
    assert load_task(BASE_FILE).id == f"{BASE}@1"


def test_the_twin_extends_the_base_at_the_same_seed(pair: Catalog) -> None:
    for seed in (3, FRESH_SEED_FLOOR + 1):
        twin = pair[f"{TWIN}@{seed}"]
        assert twin.id == f"{TWIN}@{seed}" and twin.template_id == TWIN
        assert getattr(twin.spec, "extends", None) in (None, f"{BASE}@{seed}")


def test_concurrent_generation_gives_one_instance(pair_root: Path) -> None:
    catalog = load_catalog(pair_root)
    task_id = f"{TWIN}@{FRESH_SEED_FLOOR + 4242}"
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: catalog[task_id], range(16)))
    assert len({r.sha256 for r in results}) == 1
    assert results[0].sha256 == load_catalog(pair_root)[task_id].sha256


def test_the_catalog_hash_is_stable_and_covers_the_files(tmp_path: Path, pair_root: Path) -> None:
    catalog = load_catalog(pair_root)
    before = subsets.catalog_sha256(catalog)
    for seed in range(FRESH_SEED_FLOOR, FRESH_SEED_FLOOR + 5):
        catalog[f"{BASE}@{seed}"]                  # generating fresh instances changes nothing published
    assert subsets.catalog_sha256(catalog) == before == subsets.catalog_sha256(load_catalog(pair_root))
    edited_root = write_root(tmp_path, BASE_FILE.read_text() + "\n# edited\n", twin_text=TWIN_FILE.read_text(),
                             fixed=True)
    assert subsets.catalog_sha256(load_catalog(edited_root)) != before


@pytest.mark.parametrize("alias", [f"{BASE}@01", f"{BASE}@1 ", f" {BASE}@1", f"{BASE}@1\n", f"{BASE}@0001"])
def test_an_alias_is_absent_or_the_canonical_instance(pair: Catalog, alias: str) -> None:
    task = pair.get(alias)
    assert task is None or (task.id == f"{BASE}@1" and task.sha256 == pair[f"{BASE}@1"].sha256)
    assert alias not in list(pair)


@given(text=st.text(max_size=40).filter(lambda t: "{{" not in t and "{%" not in t))
@settings(max_examples=150, deadline=None)
def test_a_text_without_template_syntax_renders_as_itself(text: str) -> None:
    assert render(text, {"a": 1}) == text
    assert render({"k": [text, {"n": text}]}, {}) == {"k": [text, {"n": text}]}


def test_render_keeps_mapping_keys_and_types() -> None:
    context = {"a": 5, "k": "K", "row": {"id": 7}}
    assert render({"{{ k }}": "{{ a }}", "n": ["{{ a }}", 3, None, True, "{{ row }}"], "t": "x{{ a }}"}, context) == \
        {"{{ k }}": 5, "n": [5, 3, None, True, {"id": 7}], "t": "x5"}
    assert evaluate("a + 1", context) == 6


@pytest.mark.parametrize("seed", [1, 8, FRESH_SEED_FLOOR, MAX_SEED])
def test_the_drawn_records_are_the_tenants(pair: Catalog, seed: int) -> None:
    from sites.kit.seeding import seeded_rows
    from sites.registry import site_definitions
    contacts = [dict(row) for row in seeded_rows(site_definitions()["webmail"], seed)["contact"]]
    drawn_ = pair[f"{BASE}@{seed}"].instance.parameters
    for name in ("contact", "other"):
        assert dict(drawn_[name]) in contacts
    assert sum(1 for c in contacts if c["name"] == drawn_["contact"]["name"]) == 1
    assert drawn_["contact"]["phone"].startswith("+")


def test_published_instances_differ_in_what_the_agent_must_do(pair: Catalog) -> None:
    instances = pair.instances(BASE)
    deciding = {(t.instance.parameters["contact"]["id"], t.instance.parameters["new_phone"]) for t in instances}
    assert len(deciding) == len(instances) == PUBLISHED
    assert len({t.instance.parameters["contact"]["id"] for t in instances}) > 1
    assert len({t.spec.instruction for t in instances}) == PUBLISHED


def test_generator_keys_do_not_collide(tmp_path: Path) -> None:
    """(template, seed) keys the draws: `T@12` and `T1@2` (or `T-1@1` and `T@11`) are other keys."""
    (tmp_path / "webmail").mkdir()
    for template_id, tag in ((BASE, ""), (BASE + "1", " (one)"), (BASE + "-1", " (dash)")):
        def mutate(data: dict[str, Any], template_id: str = template_id, tag: str = tag) -> None:
            data.update(id=template_id, instruction=data["instruction"] + tag)
            data["template"]["parameters"] = {"k": {"integer": [0, 10**12]}, **data["template"]["parameters"]}
        (tmp_path / "webmail" / f"{template_id.split('.')[1]}.yaml").write_text(edited(mutate))
    catalog = load_catalog(tmp_path)
    k = {i: catalog[i].instance.parameters["k"] for i in (f"{BASE}@12", f"{BASE}1@2", f"{BASE}@11", f"{BASE}-1@1",
                                                          f"{BASE}1@1", f"{BASE}@1")}
    assert len(set(k.values())) == len(k)


def test_a_fixed_task_is_its_own_seed(tmp_path: Path) -> None:
    data = yaml.safe_load(FIXED_FILE.read_text())
    data["seed"] = 5
    (tmp_path / "webmail").mkdir()
    (tmp_path / "webmail" / FIXED_FILE.name).write_text(yaml.safe_dump(data, sort_keys=False))
    catalog = load_catalog(tmp_path)
    assert list(catalog) == [f"{FIXED}@5"]
    task = catalog[f"{FIXED}@5"]
    assert task.spec.seed == 5 and task.instance.published and not task.instance.fresh
    assert catalog.template_of(FIXED).seeds == [5] and not catalog.template_of(FIXED).varying
    assert [t.id for t in select_tasks(catalog, FIXED)] == [f"{FIXED}@5"]


# --- parameters ---------------------------------------------------------------------------------------------------


def test_a_parameter_may_not_use_a_later_one(tmp_path: Path) -> None:
    message = generation_error(tmp_path, with_parameters(a={"value": "zz + 1"}, zz={"integer": [1, 5]}))
    assert f"{BASE}@1" in message and "zz" in message


def test_an_unknown_table_is_refused_naming_it(tmp_path: Path) -> None:
    message = generation_error(tmp_path, with_parameters(x={"row": "no_such_table"}))
    assert "no_such_table" in message and f"{BASE}@1" in message


def test_an_undefined_name_in_a_text_is_an_error_not_blank(tmp_path: Path) -> None:
    message = generation_error(tmp_path, lambda data: data.update(instruction=data["instruction"] + " {{ nosuch }}"))
    assert "nosuch" in message and f"{BASE}@1" in message


def test_an_undefined_attribute_in_a_text_is_an_error_not_blank(tmp_path: Path) -> None:
    message = generation_error(
        tmp_path, lambda data: data.update(instruction=data["instruction"] + " Ask {{ contact.nickname }}."))
    assert f"{BASE}@1" in message


def test_a_generator_yielding_an_invalid_task_names_the_instance(tmp_path: Path) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["template"]["parameters"]["level"] = {"choose": ["impossible"]}
        data["difficulty"] = "{{ level }}"
    message = generation_error(tmp_path, mutate, seed=FRESH_SEED_FLOOR + 7)
    assert f"{BASE}@{FRESH_SEED_FLOOR + 7}" in message


def _brightlane_ids() -> dict[str, Any]:
    return {"value": "rows('contact', company='Brightlane')|map(attribute='id')|list"}


@pytest.mark.parametrize(("order_by", "pick", "which"), [
    (["-id"], "first", max), (["-id"], "last", min), (["id"], "first", min), (["id"], "last", max)])
def test_a_row_with_where_order_by_and_pick(tmp_path: Path, order_by: list[str], pick: str,
                                            which: Callable[[list[int]], int]) -> None:
    catalog = catalog_with(tmp_path, with_parameters(
        ids=_brightlane_ids(), x={"row": "contact", "where": {"company": "Brightlane"}, "order_by": order_by,
                                  "pick": pick}))
    for seed in (1, 2, FRESH_SEED_FLOOR):
        drawn_ = catalog[f"{BASE}@{seed}"].instance.parameters
        assert len(drawn_["ids"]) >= 2
        assert drawn_["x"]["company"] == "Brightlane"
        assert drawn_["x"]["id"] == which(drawn_["ids"])


def test_a_row_filter_sees_the_candidate_and_earlier_parameters(tmp_path: Path) -> None:
    values = drawn(tmp_path, {"row": "contact", "filter": "it.id == contact.id"})
    catalog = load_catalog(write_root(tmp_path / "plain"))
    assert [v["id"] for v in values] == [catalog[f"{BASE}@{s}"].instance.parameters["contact"]["id"]
                                         for s in range(1, 9)]


def test_a_row_where_may_use_earlier_parameters(tmp_path: Path) -> None:
    catalog = catalog_with(tmp_path, with_parameters(x={"row": "contact", "where": {"id": "{{ contact.id }}"}}))
    for seed in (1, 5):
        drawn_ = catalog[f"{BASE}@{seed}"].instance.parameters
        assert drawn_["x"] == drawn_["contact"]


def test_a_row_that_matches_nothing_is_an_error(tmp_path: Path) -> None:
    message = generation_error(tmp_path, with_parameters(x={"row": "contact", "filter": "false"}))
    assert f"{BASE}@1" in message


def test_a_row_order_by_an_unknown_column_is_refused(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"row": "contact", "order_by": ["no_such_column"]}))


def test_a_row_where_on_an_unknown_column_is_refused_naming_it(tmp_path: Path) -> None:
    message = generation_error(tmp_path, with_parameters(x={"row": "contact", "where": {"no_such_column": 1}}))
    assert "no_such_column" in message


def test_choose_from_an_empty_list_is_an_error(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"choose": []}))


def test_choose_items_may_use_earlier_parameters(tmp_path: Path) -> None:
    values = drawn(tmp_path, {"choose": ["{{ contact.id }}", "{{ suffix }}"]}, seeds=range(1, 15))
    catalog = load_catalog(write_root(tmp_path / "plain"))
    for seed, value in zip(range(1, 15), values, strict=True):
        drawn_ = catalog[f"{BASE}@{seed}"].instance.parameters
        assert value in (drawn_["contact"]["id"], drawn_["suffix"])
    assert all(isinstance(v, int) for v in values)


def test_choose_from_a_braced_expression(tmp_path: Path) -> None:
    assert set(drawn(tmp_path, {"choose": "{{ [1, 2, 3] }}"}, seeds=range(1, 25))) == {1, 2, 3}


def test_choose_from_a_bare_expression(tmp_path: Path) -> None:
    assert set(drawn(tmp_path, {"choose": "[contact.id, 1000]"}, seeds=range(1, 20))) <= set(range(1, 10_000))


def test_integer_bounds_are_inclusive(tmp_path: Path) -> None:
    assert set(drawn(tmp_path, {"integer": [3, 4]}, seeds=range(1, 25))) == {3, 4}
    assert set(drawn(tmp_path / "one", {"integer": [-7, -7]}, seeds=range(1, 4))) == {-7}


@pytest.mark.parametrize("parameter", [{"integer": [9, 3]}, {"integer": [1, 5], "step": 0},
                                       {"integer": [1, 5], "step": -2}, {"integer": [1]}, {"no_kind": 1},
                                       {"row": "contact", "pick": "middle"}])
def test_malformed_parameters_are_refused(tmp_path: Path, parameter: dict[str, Any]) -> None:
    generation_error(tmp_path, with_parameters(x=parameter))


def test_integer_with_step_draws_multiples_of_step(tmp_path: Path) -> None:
    values = drawn(tmp_path, {"integer": [1, 20], "step": 5}, seeds=range(1, 25))
    assert set(values) <= {5, 10, 15, 20}


def test_integer_with_step_and_no_multiple_in_range_is_refused(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"integer": [11, 14], "step": 5}))


def test_integer_with_step_stays_in_range(tmp_path: Path) -> None:
    values = drawn(tmp_path, {"integer": [10, 30], "step": 10}, seeds=range(1, 30))
    assert set(values) == {10, 20, 30}


# --- expression functions and filters ------------------------------------------------------------------------------


def _values(tmp_path: Path, expressions: dict[str, str], seed: int = 1) -> dict[str, Any]:
    names = {f"e{i}": {"value": e} for i, e in enumerate(expressions.values())}
    drawn_ = catalog_with(tmp_path, with_parameters(**names))[f"{BASE}@{seed}"].instance.parameters
    return {label: drawn_[f"e{i}"] for i, label in enumerate(expressions)}


def test_money_filters(tmp_path: Path) -> None:
    values = _values(tmp_path, {
        "usd": "12900|money('USD')", "bare": "12900|money", "plain": "123450|plain_money",
        "big": "123456789|plain_money", "cents": "5|plain_money", "zero": "0|money('EUR')",
        "negative": "-5|plain_money", "negative_usd": "-12345|money('USD')"})
    assert values == {"usd": "129.00 USD", "bare": "129.00", "plain": "1234.50", "big": "1234567.89",
                      "cents": "0.05", "zero": "0.00 EUR", "negative": "-0.05", "negative_usd": "-123.45 USD"}


def test_digits_swapped(tmp_path: Path) -> None:
    values = _values(tmp_path, {"phone": "'+44 20 7946 8597'|digits_swapped", "zeros": "'1000'|digits_swapped",
                                "tail": "'4411'|digits_swapped"})
    assert values == {"phone": "+44 20 7946 8579", "zeros": "0100", "tail": "4141"}


def test_digits_swapped_without_two_different_digits_changes_the_last_digit(tmp_path: Path) -> None:
    # A seed's price can be 9.99: a fresh instance of a template whose control swaps its digits must still generate.
    values = _values(tmp_path, {"fives": "'5555'|digits_swapped", "price": "'9.99'|digits_swapped",
                                "zero": "'0.00'|digits_swapped", "one": "'7'|digits_swapped"})
    assert values == {"fives": "5554", "price": "9.98", "zero": "0.01", "one": "6"}


def test_digits_swapped_without_a_digit_is_an_error(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"value": "'none'|digits_swapped"}))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 .+-", min_size=1, max_size=20).filter(lambda t: any(c.isdigit() for c in t)))
def test_digits_swapped_is_always_a_near_miss_of_the_same_shape(text: str) -> None:
    swapped = _digits_swapped(text)
    assert swapped != text and len(swapped) == len(text)
    assert [c for c in swapped if not c.isdigit()] == [c for c in text if not c.isdigit()]
    assert [i for i, c in enumerate(swapped) if c.isdigit()] == [i for i, c in enumerate(text) if c.isdigit()]


def test_row_functions(tmp_path: Path) -> None:
    values = _values(tmp_path, {"one": "one('contact', id=3).id", "count": "count('contact')",
                                "rows": "rows('contact')|length", "some": "rows('contact', id=3)|length",
                                "none": "count('contact', id=-1)"})
    assert values["one"] == 3 and values["some"] == 1 and values["none"] == 0
    assert values["count"] == values["rows"] > 12


def test_one_of_many_rows_is_an_error(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"value": "one('contact', company='Brightlane')"}))


def test_one_of_no_row_is_an_error(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"value": "one('contact', id=-1)"}))


@given(seed=st.one_of(st.integers(min_value=1, max_value=100),
                      st.integers(min_value=FRESH_SEED_FLOOR, max_value=MAX_SEED)))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_difficulty_dimensions(similar_catalog: Catalog, seed: int) -> None:
    task = similar_catalog[f"{BASE}@{seed}"]
    drawn_ = task.instance.parameters
    assert drawn_["contact"]["name"] not in drawn_["alike"]          # similar(): like it without being it
    assert all(isinstance(name, str) for name in drawn_["alike"])
    difficulty = task.instance.difficulty
    # the control: Contacts, search the name (fill, submit), the contact, the phone, save, done (webmail at volume)
    assert (difficulty.steps, difficulty.pages, difficulty.fields) == (7, 3, 2)
    assert difficulty.distractors == len(drawn_["alike"])
    assert difficulty.carried == 2
    assert difficulty.as_dict() == {"steps": 7, "pages": 3, "fields": 2, "distractors": len(drawn_["alike"]),
                                    "carried": 2}


@pytest.fixture(scope="module")
def similar_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    def mutate(data: dict[str, Any]) -> None:
        data["template"]["parameters"]["alike"] = {
            "value": "similar('contact', 'name', contact.name)|map(attribute='name')|list"}
        data["template"]["difficulty"]["carried"] = "1 + 1"
    return load_catalog(write_root(tmp_path_factory.mktemp("similar"), edited(mutate)))


def test_undeclared_difficulty_notes_are_none(tmp_path: Path) -> None:
    catalog = catalog_with(tmp_path, lambda data: data["template"].pop("difficulty"))
    difficulty = catalog[f"{BASE}@2"].instance.difficulty
    assert difficulty.distractors is None and difficulty.carried is None and difficulty.steps == 7


@pytest.mark.parametrize("expression", ["'many'", "-1", "1.5", "none"])
def test_a_difficulty_note_that_is_not_a_count_is_an_error(tmp_path: Path, expression: str) -> None:
    message = generation_error(tmp_path, lambda data: data["template"]["difficulty"].update(distractors=expression))
    assert f"{BASE}@1" in message


@pytest.mark.parametrize(("a", "b"), [("Omar Haddad", "Omer Haddad"), ("Helen Park", "helen smith"),
                                      ("Carlos Mendes", "Carlos Mendez"), ("+44 20 7946 0211", "+44 20 7946 0212"),
                                      ("Lena Fischer", "LENA FISCHER")])
def test_look_alikes(a: str, b: str) -> None:
    assert looks_alike(a, b) and looks_alike(b, a)


@pytest.mark.parametrize(("a", "b"), [("Alpha Industries", "Zulu Freight"), ("Priya Raman", "Omar Haddad")])
def test_not_look_alikes(a: str, b: str) -> None:
    assert not looks_alike(a, b) and not looks_alike(b, a)


@pytest.mark.parametrize(("a", "b"), [("Omar", "Omer"), ("Mark", "Marc"), ("Lena", "Lina"), ("0211", "0212"),
                                      ("Anna Berg", "Anne Borg")])
def test_look_alikes_one_or_two_characters_apart(a: str, b: str) -> None:
    assert looks_alike(a, b)


# --- the template block -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mutate", [
    pytest.param(lambda data: data["template"].pop("varies"), id="parameters-without-varies"),
    pytest.param(lambda data: data.update(template={"single_instance": "cannot vary", "published": 5}),
                 id="single-instance-publishing-five"),
    pytest.param(lambda data: data["template"].update(single_instance="cannot vary"), id="single-with-parameters"),
    pytest.param(lambda data: data.update(seed=3), id="template-and-seed"),
    pytest.param(lambda data: data["template"].update(published=0), id="published-0"),
    pytest.param(lambda data: data["template"].update(published=1001), id="published-1001"),
    pytest.param(lambda data: data["template"].update(published=FRESH_SEED_FLOOR), id="published-into-fresh"),
    pytest.param(lambda data: data["template"].update(unknown_key=1), id="unknown-key"),
])
def test_malformed_template_blocks_are_refused_at_load(tmp_path: Path,
                                                      mutate: Callable[[dict[str, Any]], None]) -> None:
    with pytest.raises(TaskFileError) as caught:
        catalog_with(tmp_path, mutate)
    assert BASE_FILE.name in str(caught.value)


def test_a_single_instance_template(tmp_path: Path) -> None:
    data = yaml.safe_load(FIXED_FILE.read_text())
    data.pop("seed")
    data["template"] = {"single_instance": "the one invoice the site seeds"}
    (tmp_path / "webmail").mkdir()
    (tmp_path / "webmail" / FIXED_FILE.name).write_text(yaml.safe_dump(data, sort_keys=False))
    plain = yaml.safe_load(FIXED_FILE.read_text())
    plain.update(id="helpdesk.plain-fixed", instruction="(A copy.) " + plain["instruction"])
    (tmp_path / "webmail" / "plain-fixed.yaml").write_text(yaml.safe_dump(plain, sort_keys=False))
    catalog = load_catalog(tmp_path)
    assert f"{FIXED}@1" in list(catalog)
    template = catalog.template_of(FIXED)
    assert not template.varying and template.seeds == [1]
    task = catalog[f"{FIXED}@1"]
    assert task.instance.single_instance == "the one invoice the site seeds" and task.instance.published
    stats = catalog_stats(catalog, ["webmail"])
    assert stats.single_instance == {FIXED: "the one invoice the site seeds"}
    assert stats.fixed_unexplained == ["helpdesk.plain-fixed"]
    assert stats.varying_templates == 0


# --- the sandbox --------------------------------------------------------------------------------------------------

ESCAPES = [
    "''.__class__",
    "().__class__.__mro__[1].__subclasses__()",
    "contact.__class__",
    "contact|attr('__class__')",
    "lipsum.__globals__",
    "cycler.__init__.__globals__.os",
    "joiner.__init__.__globals__",
    "namespace.__init__.__globals__",
    "rows.__globals__",
    "rows.func.__globals__",
    "one.__code__",
    "'{0.__class__}'.format(1)",
    "self.__init__.__globals__",
    "config",
    "request",
    "range(10**9)|list|length",
    "[].append(1)",
    "contact.update({'id': 1})",
    "contact.pop('id')",
]


@pytest.mark.parametrize("expression", ESCAPES)
def test_expressions_cannot_leave_the_sandbox(tmp_path: Path, expression: str) -> None:
    message = generation_error(tmp_path, with_parameters(x={"value": expression}))
    assert f"{BASE}@1" in message


@pytest.mark.parametrize("text", ["{{ ''.__class__.__mro__ }}",
                                  "{% for c in ().__class__.__bases__ %}{{ c }}{% endfor %}",
                                  "{{ cycler.__init__.__globals__.os.getcwd() }}"])
def test_texts_cannot_leave_the_sandbox(tmp_path: Path, text: str) -> None:
    message = generation_error(tmp_path, lambda data: data.update(instruction=data["instruction"] + " " + text))
    assert f"{BASE}@1" in message


def test_a_drawn_row_mutated_in_one_instance_does_not_leak(tmp_path: Path, pair: Catalog) -> None:
    catalog = catalog_with(tmp_path, with_parameters(x={"value": "contact.setdefault('id', 0)"}))
    with pytest.raises(TaskFileError):
        catalog[f"{BASE}@1"]
    assert pair[f"{BASE}@1"].instance.parameters["contact"]["id"] == \
        load_catalog(write_root(tmp_path / "plain"))[f"{BASE}@1"].instance.parameters["contact"]["id"]


@pytest.mark.parametrize("expression", ["range(99999)|random", "[1, 2, 3, 4, 5, 6, 7, 8, 9]|random",
                                        "lipsum(1, False, 5, 9)"])
def test_no_expression_can_draw_outside_the_seeded_generator(tmp_path: Path, expression: str) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["template"]["parameters"]["x"] = {"value": expression}
        data["instruction"] = data["instruction"] + " Reference: {{ x }}."
    text = edited(mutate)
    try:
        first = load_catalog(write_root(tmp_path / "a", text))
        values = [(first[f"{BASE}@{s}"].sha256, first[f"{BASE}@{s}"].instance.parameters["x"]) for s in range(1, 6)]
    except TaskFileError:
        return                                    # refused: fine
    second = load_catalog(write_root(tmp_path / "b", text))
    assert [(second[f"{BASE}@{s}"].sha256, second[f"{BASE}@{s}"].instance.parameters["x"]) for s in range(1, 6)] \
        == values


def test_an_expression_cannot_build_a_huge_value(tmp_path: Path) -> None:
    generation_error(tmp_path, with_parameters(x={"value": "'a' * 10**7"}))


# --- drawn values are data, never template code or YAML --------------------------------------------------------------

NASTY = [
    "{{ 7*7 }}",
    "{% if true %}yes{% endif %}",
    "{{ cycler.__init__.__globals__.os.getcwd() }}",
    "Müller: \"Ops\" 'Team' #1 - [a, b] {x: y} & *anchor !tag",
    "first line\nsecond line: value",
    "{{",
    "}} {% raw %}",
]


@pytest.mark.parametrize("nasty", NASTY)
def test_drawn_values_are_inserted_literally(tmp_path: Path, nasty: str) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["template"]["parameters"]["label"] = {"value": json.dumps(nasty)}
        data["instruction"] = data["instruction"] + " Label: {{ label }}."
        data["scripted_control"][-1]["message"] = "{{ label }}"
        data["negative_controls"][1]["description"] = "Never saves ({{ label }})."
    catalog = catalog_with(tmp_path, mutate)
    task = catalog[f"{BASE}@1"]
    assert task.instance.parameters["label"] == nasty
    assert task.spec.instruction.endswith(f" Label: {nasty}.")
    assert task.spec.scripted_control[-1].message == nasty
    again = load_catalog(tmp_path / "catalog")[f"{BASE}@1"]
    assert again.sha256 == task.sha256


@pytest.mark.parametrize("nasty", ["{{ 7*7 }}", "a: b\nc: {{ d }}", "'quoted' \"twice\""])
def test_a_chosen_value_with_template_syntax_in_an_expression_result_is_not_rendered_again(
        tmp_path: Path, nasty: str) -> None:
    """A value computed by an expression is a value: its own braces are text, however often it is used."""
    def mutate(data: dict[str, Any]) -> None:
        data["template"]["parameters"]["label"] = {"value": json.dumps(nasty)}
        data["template"]["parameters"]["twice"] = {"value": "label ~ '|' ~ label"}
        data["instruction"] = data["instruction"] + " {{ twice }}"
    task = catalog_with(tmp_path, mutate)[f"{BASE}@2"]
    assert task.spec.instruction.endswith(f" {nasty}|{nasty}")


def test_a_whole_expression_keeps_its_type(pair: Catalog) -> None:
    task = pair[f"{BASE}@4"]
    contact = task.instance.parameters["contact"]
    assert task.spec.expected_state[0].where == {"id": contact["id"]}
    assert type(task.spec.expected_state[0].where["id"]) is int
    assert task.spec.grants[0].objects == [contact["id"]]


# --- select_tasks -------------------------------------------------------------------------------------------------


def test_select_a_template_gives_its_published_instances(pair: Catalog) -> None:
    assert [t.id for t in select_tasks(pair, BASE)] == [f"{BASE}@{s}" for s in range(1, PUBLISHED + 1)]


def test_select_instances_any_seed(pair: Catalog) -> None:
    chosen = select_tasks(pair, f"{BASE}@3,{TWIN}@{FRESH_SEED_FLOOR},{BASE}@{MAX_SEED}")
    assert {t.id for t in chosen} == {f"{BASE}@3", f"{TWIN}@{FRESH_SEED_FLOOR}", f"{BASE}@{MAX_SEED}"}
    assert all(isinstance(t, LoadedTask) for t in chosen)


def test_select_all_is_every_published_instance(pair: Catalog) -> None:
    assert [t.id for t in select_tasks(pair, "all")] == list(pair)


def test_select_never_repeats_an_instance(pair: Catalog) -> None:
    ids = [t.id for t in select_tasks(pair, f"{BASE}@1,{BASE},{BASE}@2")]
    assert len(ids) == len(set(ids))
    assert set(ids) == {f"{BASE}@{s}" for s in range(1, PUBLISHED + 1)}
    with pytest.raises(TaskFileError, match=f"given more than once: {BASE}@1"):  # issue 47: a typo, refused
        select_tasks(pair, f"{BASE}@1,{BASE}@1,{BASE}@2")


@pytest.mark.parametrize("selection", ["webmail.nope", f"{BASE}@-1", f"{BASE}@{MAX_SEED + 1}", f"{BASE}@x",
                                       f"{BASE}@\u0661", "webmail.nope@3"])
def test_select_unknown_ids_is_an_error_naming_them(pair: Catalog, selection: str) -> None:
    with pytest.raises(TaskFileError) as caught:
        select_tasks(pair, f"{BASE}@1,{selection}")
    assert selection in str(caught.value)


def test_select_names_every_unknown_id(pair: Catalog) -> None:
    with pytest.raises(TaskFileError) as caught:
        select_tasks(pair, f"webmail.nope@1,{BASE}@2,webmail.other-nope")
    assert "webmail.nope@1" in str(caught.value) and "webmail.other-nope" in str(caught.value)


# --- reserved subsets ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_reservation(pair: Catalog) -> subsets.ReservedSubset:
    return subsets.reserve_subset(pair, 5, 11, fresh=True)


def test_a_fresh_reservation_draws_fresh_seeds_of_varying_templates(pair: Catalog,
                                                                    fresh_reservation: subsets.ReservedSubset) -> None:
    reservation = fresh_reservation
    assert reservation.format == "computerops.subset/2"
    assert reservation.instances == "fresh" and reservation.count == 5 and reservation.seed == 11
    assert len(reservation.tasks) == 5
    ids = reservation.task_ids
    assert ids == sorted(ids) and len(set(ids)) == 5
    for task in reservation.tasks:
        template, seed = parse_instance_id(task.id)
        assert template in (BASE, TWIN)          # varying templates only: never the fixed task
        assert FRESH_SEED_FLOOR <= seed <= MAX_SEED
        assert task.id not in list(pair)          # never published
        regenerated = pair[task.id]
        assert not regenerated.instance.published and regenerated.instance.fresh
        assert task.sha256 == regenerated.sha256
        assert task.spec is not None and task.spec["id"] == task.id and task.spec["seed"] == seed
        assert task.spec["instruction"] == regenerated.spec.instruction
    assert reservation.lock_sha256 == reservation.computed_lock()
    assert reservation.catalog_sha256 == subsets.catalog_sha256(pair)


def test_a_fresh_reservation_round_trips_and_regenerates(tmp_path: Path, pair: Catalog,
                                                         fresh_reservation: subsets.ReservedSubset) -> None:
    path = tmp_path / "fresh.json"
    subsets.write_subset(path, fresh_reservation)
    loaded = subsets.load_subset(path)
    assert loaded == fresh_reservation
    assert [t.id for t in subsets.subset_tasks(loaded, pair, path)] == fresh_reservation.task_ids
    with pytest.raises(subsets.SubsetError):
        subsets.write_subset(path, fresh_reservation)


def test_fresh_reservations_are_unpredictable(pair: Catalog, fresh_reservation: subsets.ReservedSubset) -> None:
    again = subsets.reserve_subset(pair, 5, 11, fresh=True)
    assert set(again.task_ids).isdisjoint(fresh_reservation.task_ids)


def test_a_fresh_reservation_needing_more_than_the_templates_repeats_them(pair: Catalog) -> None:
    reservation = subsets.reserve_subset(pair, 6, 3, fresh=True)
    templates = [parse_instance_id(i)[0] for i in reservation.task_ids]
    assert sorted(templates) == sorted([BASE] * 3 + [TWIN] * 3)


def test_a_fresh_reservation_without_varying_templates_is_refused(tmp_path: Path) -> None:
    (tmp_path / "webmail").mkdir()
    (tmp_path / "webmail" / FIXED_FILE.name).write_text(FIXED_FILE.read_text())
    with pytest.raises(subsets.SubsetError):
        subsets.reserve_subset(load_catalog(tmp_path), 1, 1, fresh=True)


@pytest.mark.parametrize("edit", ["seed", "spec", "sha", "id", "kind", "lock"])
def test_a_tampered_reservation_is_refused(tmp_path: Path, fresh_reservation: subsets.ReservedSubset,
                                           edit: str) -> None:
    path = tmp_path / "fresh.json"
    subsets.write_subset(path, fresh_reservation)
    raw = json.loads(path.read_text())
    first = raw["tasks"][0]
    if edit == "seed":
        raw["seed"] += 1
    elif edit == "spec":
        first["spec"]["instruction"] += " (and call them)"
    elif edit == "sha":
        first["sha256"] = "0" * 64
    elif edit == "id":
        template, seed = parse_instance_id(first["id"])
        first["id"] = instance_id(template, seed + 1)
    elif edit == "kind":
        raw["instances"] = "published"
    else:
        raw["lock_sha256"] = "f" * 64
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(raw, indent=2))
    with pytest.raises(subsets.SubsetError) as caught:
        subsets.load_subset(tampered)
    assert str(tampered) in str(caught.value)


def test_a_regenerated_instance_that_differs_is_refused_naming_the_field(
        tmp_path: Path, fresh_reservation: subsets.ReservedSubset) -> None:
    path = tmp_path / "fresh.json"
    subsets.write_subset(path, fresh_reservation)
    root = write_root(tmp_path / "catalog",
                      BASE_FILE.read_text().replace("Save it in the contact.", "Save it in the contact card."),
                      twin_text=TWIN_FILE.read_text(), fixed=True)
    with pytest.raises(subsets.SubsetError) as caught:
        subsets.subset_tasks(subsets.load_subset(path), load_catalog(root), path)
    message = str(caught.value)
    assert "instruction" in message
    assert any(i in message for i in fresh_reservation.task_ids if i.startswith(BASE + "@"))


def test_a_version_bump_is_refused_naming_version(tmp_path: Path, fresh_reservation: subsets.ReservedSubset) -> None:
    path = tmp_path / "fresh.json"
    subsets.write_subset(path, fresh_reservation)
    root = write_root(tmp_path / "catalog", edited(lambda data: data.update(version=data["version"] + 1)),
                      twin_text=TWIN_FILE.read_text(), fixed=True)
    with pytest.raises(subsets.SubsetError) as caught:
        subsets.subset_tasks(subsets.load_subset(path), load_catalog(root), path)
    assert "version" in str(caught.value)


def test_a_changed_template_file_with_the_same_instance_is_refused(
        tmp_path: Path, fresh_reservation: subsets.ReservedSubset) -> None:
    """The hash covers the template's files: a comment-only edit regenerates an equal spec but another hash."""
    path = tmp_path / "fresh.json"
    subsets.write_subset(path, fresh_reservation)
    root = write_root(tmp_path / "catalog", BASE_FILE.read_text() + "\n# comment\n",
                      twin_text=TWIN_FILE.read_text(), fixed=True)
    with pytest.raises(subsets.SubsetError):
        subsets.subset_tasks(subsets.load_subset(path), load_catalog(root), path)


def test_a_reservation_whose_template_is_gone_is_refused(tmp_path: Path,
                                                         fresh_reservation: subsets.ReservedSubset) -> None:
    path = tmp_path / "fresh.json"
    subsets.write_subset(path, fresh_reservation)
    root = write_root(tmp_path / "catalog", fixed=True)   # no twin
    with pytest.raises(subsets.SubsetError) as caught:
        subsets.subset_tasks(subsets.load_subset(path), load_catalog(root), path)
    assert TWIN in str(caught.value)


def test_subset_reserve_fresh_on_the_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  pair: Catalog) -> None:
    import tasks
    from computerops.cli.main import app
    monkeypatch.setattr(tasks, "load_catalog", lambda *a, **k: pair)
    out = tmp_path / "fresh.json"
    result = CliRunner().invoke(app, ["subset", "reserve", "--count", "3", "--seed", "4", "--out", str(out), "--fresh"])
    assert result.exit_code == 0, result.output
    reservation = subsets.load_subset(out)
    assert reservation.instances == "fresh" and reservation.count == 3 and len(reservation.tasks) == 3
    assert all(parse_instance_id(i)[1] >= FRESH_SEED_FLOOR for i in reservation.task_ids)
    assert all(t.spec is not None for t in reservation.tasks)
    again = CliRunner().invoke(app, ["subset", "reserve", "--count", "3", "--seed", "4", "--out", str(out), "--fresh"])
    assert again.exit_code != 0
    assert subsets.load_subset(out) == reservation


def test_a_published_reservation_is_reproducible(pair: Catalog) -> None:
    first, second = subsets.reserve_subset(pair, 4, 2026), subsets.reserve_subset(pair, 4, 2026)
    assert first.instances == "published"
    assert first.task_ids == second.task_ids == sorted(subsets.draw(list(pair), 4, 2026))
    assert [t.sha256 for t in first.tasks] == [t.sha256 for t in second.tasks]
    assert all(t.id in pair and pair[t.id].instance.published for t in first.tasks)
    assert all(t.spec is not None for t in first.tasks)
    assert first.catalog_size == len(pair)


@given(count=st.integers(min_value=1, max_value=40), seed=st.integers(min_value=-10**6, max_value=10**12))
@settings(max_examples=100, deadline=None)
def test_the_draw_is_a_deterministic_sorted_subset(count: int, seed: int) -> None:
    ids = [f"{BASE}@{s}" for s in range(1, 21)] + [f"{TWIN}@{s}" for s in range(1, 5)]
    try:
        chosen = subsets.draw(ids, count, seed)
    except subsets.SubsetError:
        assert count > len(ids)
        return
    assert chosen == subsets.draw(list(reversed(ids)), count, seed)
    assert chosen == sorted(chosen) and len(set(chosen)) == len(chosen) == min(count, len(ids))
    assert set(chosen) <= set(ids)


def test_fresh_seeds_are_in_the_fresh_range() -> None:
    seeds = [subsets.fresh_seed() for _ in range(500)]
    assert all(FRESH_SEED_FLOOR <= s <= MAX_SEED for s in seeds)
    assert len(set(seeds)) == len(seeds)
    for task_id in subsets.draw_fresh([BASE, TWIN], 7, 5):
        assert FRESH_SEED_FLOOR <= parse_instance_id(task_id)[1] <= MAX_SEED


# --- stats --------------------------------------------------------------------------------------------------------


def _check_sums(stats: CatalogStats, catalog: Catalog) -> None:
    assert stats.instances == len(catalog)
    templates = {i.rsplit("@", 1)[0] for i in catalog}
    assert stats.templates == len(templates)
    for table in (stats.per_site, stats.per_family, stats.per_difficulty):
        assert sum(c.templates for c in table.values()) == stats.templates
        assert sum(c.instances for c in table.values()) == stats.instances
    assert stats.sites == len(stats.per_site)
    assert stats.varying_templates == sum(1 for t in templates if catalog.template_of(t).varying)
    for site, counts in stats.per_site.items():
        assert counts.instances == sum(1 for i in catalog if catalog.template_of(i).site == site)


def test_stats_of_a_small_catalog(pair: Catalog) -> None:
    stats = catalog_stats(pair, ["helpdesk", "webmail"])
    _check_sums(stats, pair)
    assert stats.templates == 3 and stats.instances == 2 * PUBLISHED + 1 and stats.varying_templates == 2
    assert stats.per_site["webmail"].instances == 2 * PUBLISHED  # the fixed task is a helpdesk file
    assert stats.per_site["helpdesk"].templates == 1 and stats.per_site["helpdesk"].instances == 1
    assert stats.per_difficulty["hard"].instances == PUBLISHED


def test_stats_generate_no_instance(tmp_path: Path) -> None:
    """Stats read the template files alone: a template whose generator fails is still counted."""
    catalog = catalog_with(tmp_path, with_parameters(x={"row": "no_such_table"}))
    stats = catalog_stats(catalog, ["webmail"])
    assert stats.templates == 1 and stats.instances == PUBLISHED and stats.varying_templates == 1


@pytest.fixture(scope="module")
def real_catalog() -> Catalog:
    return load_catalog()


def test_stats_json_of_the_catalog_add_up(monkeypatch: pytest.MonkeyPatch, real_catalog: Catalog) -> None:
    import tasks
    from computerops.cli.main import app
    monkeypatch.setattr(tasks, "load_catalog", lambda *a, **k: real_catalog)
    result = CliRunner().invoke(app, ["tasks", "stats", "--json"])
    assert result.exit_code == 0, result.output
    stats = CatalogStats.model_validate_json(result.stdout)
    _check_sums(stats, real_catalog)
    assert stats.instances == len(select_tasks(real_catalog, "all"))


# --- tasks check --sample -----------------------------------------------------------------------------------------


def _sampled(monkeypatch: pytest.MonkeyPatch, catalog: Catalog, *args: str) -> list[str]:
    import tasks
    from computerops.catalog import checking
    from computerops.cli.main import app
    seen: list[list[str]] = []

    async def fake_check(selected: list[LoadedTask], *_: Any, **__: Any) -> list[Any]:
        seen.append([t.id for t in selected])
        return []
    monkeypatch.setattr(tasks, "load_catalog", lambda *a, **k: catalog)
    monkeypatch.setattr(checking, "check_tasks", fake_check)
    result = CliRunner().invoke(app, ["tasks", "check", *args])
    assert result.exit_code == 0, result.output
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("count", [1, 3, 7])
def test_check_sample_is_the_stated_number_drawn_by_seed(monkeypatch: pytest.MonkeyPatch, pair: Catalog,
                                                         count: int) -> None:
    first = _sampled(monkeypatch, pair, "--tasks", f"{BASE},{TWIN}", "--sample", str(count), "--sample-seed", "9")
    again = _sampled(monkeypatch, pair, "--tasks", f"{BASE},{TWIN}", "--sample", str(count), "--sample-seed", "9")
    assert len(first) == count and len(set(first)) == count
    assert sorted(first) == sorted(again)
    assert sorted(first) == sorted(subsets.draw([t.id for t in select_tasks(pair, f"{BASE},{TWIN}")], count, 9))


def test_check_sample_depends_on_the_seed(monkeypatch: pytest.MonkeyPatch, pair: Catalog) -> None:
    samples = {tuple(sorted(_sampled(monkeypatch, pair, "--tasks", f"{BASE},{TWIN}", "--sample", "3",
                                     "--sample-seed", str(seed)))) for seed in range(6)}
    assert len(samples) > 1


def test_check_sample_of_more_than_selected_checks_all(monkeypatch: pytest.MonkeyPatch, pair: Catalog) -> None:
    chosen = _sampled(monkeypatch, pair, "--tasks", BASE, "--sample", "50", "--sample-seed", "1")
    assert sorted(chosen) == sorted(f"{BASE}@{s}" for s in range(1, PUBLISHED + 1))


def test_check_without_sample_checks_every_selected(monkeypatch: pytest.MonkeyPatch, pair: Catalog) -> None:
    chosen = _sampled(monkeypatch, pair, "--tasks", f"{BASE}@{FRESH_SEED_FLOOR},{TWIN}")
    assert sorted(chosen) == sorted([f"{BASE}@{FRESH_SEED_FLOOR}", *(f"{TWIN}@{s}" for s in range(1, PUBLISHED + 1))])


def test_a_sampled_check_says_its_rate_and_what_the_whole_selection_would_take(monkeypatch: pytest.MonkeyPatch,
                                                                              pair: Catalog) -> None:
    import tasks
    from computerops.catalog import checking
    from computerops.cli.main import app

    async def fake_check(selected: list[LoadedTask], *_: Any, **__: Any) -> list[Any]:
        return []
    monkeypatch.setattr(tasks, "load_catalog", lambda *a, **k: pair)
    monkeypatch.setattr(checking, "check_tasks", fake_check)
    whole = select_tasks(pair, f"{BASE},{TWIN}")
    sampled = CliRunner().invoke(app, ["tasks", "check", "--tasks", f"{BASE},{TWIN}", "--sample", "2"])
    assert sampled.exit_code == 0, sampled.output
    said = " ".join(sampled.output.split())
    assert "0 instances, 0 episodes in 0 s at concurrency 1" in said
    assert f"the whole selection ({len(whole)} instances, {len(checking.check_plan(whole))} episodes)" in said
    every = CliRunner().invoke(app, ["tasks", "check", "--tasks", f"{BASE},{TWIN}"])
    assert every.exit_code == 0 and "the whole selection" not in every.output


def test_the_catalog_meets_the_issues_targets(real_catalog: Catalog) -> None:
    # Issue 42's targets: at least 150 templates, 1,000 published instances (distinct: tests/test_templates.py),
    # 6 sites, and every family of the catalog on every site.
    stats = catalog_stats(real_catalog, sorted(site_definitions()))
    assert stats.templates >= 150 and stats.instances >= 1000 and stats.sites >= 6
    assert stats.families_missing == {}, stats.families_missing


class _Sparse(Catalog):
    """A catalog whose base template defines no instance at the seeds in `undefined` (its data lack the record)."""

    def __init__(self, catalog: Catalog, undefined: set[int]) -> None:
        super().__init__(catalog.templates)
        self.undefined = undefined

    def __getitem__(self, key: str) -> LoadedTask:
        parsed = parse_instance_id(key)
        if parsed is not None and parsed[0] == BASE and parsed[1] in self.undefined:
            raise InstanceUndefined(f"{key}: the generator failed: parameter contact: no contact row matches")
        return super().__getitem__(key)


def test_a_fresh_draw_at_a_seed_where_the_template_defines_no_instance_takes_another_seed(
    pair: Catalog, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seeds = iter([FRESH_SEED_FLOOR + n for n in range(1, 50)])
    monkeypatch.setattr(subsets, "fresh_seed", lambda: next(seeds))
    sparse = _Sparse(pair, {FRESH_SEED_FLOOR + 1, FRESH_SEED_FLOOR + 3})
    reservation = subsets.reserve_subset(sparse, 2, 3, fresh=True)
    drawn = {parse_instance_id(i)[0]: parse_instance_id(i)[1] for i in reservation.task_ids}
    assert drawn[BASE] not in sparse.undefined and drawn[BASE] > FRESH_SEED_FLOOR + 1
    # The redraw is said in the file (the draw's only selection), under the lock, and the file reads back.
    # (The draw gives the base template the first fresh seed, then the next undefined one: both are said.)
    assert reservation.undefined == [instance_id(BASE, FRESH_SEED_FLOOR + 1), instance_id(BASE, FRESH_SEED_FLOOR + 3)]
    assert reservation.model_copy(update={"undefined": []}).computed_lock() != reservation.lock_sha256
    subsets.write_subset(tmp_path / "fresh.json", reservation)
    assert subsets.load_subset(tmp_path / "fresh.json").undefined == reservation.undefined
    assert all(sparse[task_id].id == task_id for task_id in reservation.task_ids)  # each one generated and locked
    with pytest.raises(subsets.SubsetError, match=f"template {BASE} defined no instance at 20 fresh seeds"):
        subsets.reserve_subset(_Sparse(pair, set(range(FRESH_SEED_FLOOR, FRESH_SEED_FLOOR + 100))), 1, 3,
                               fresh=True)


def test_a_template_that_fails_otherwise_at_a_fresh_seed_fails_the_reservation(pair: Catalog,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(Catalog):
        def __getitem__(self, key: str) -> LoadedTask:
            raise TaskFileError(f"{key}: the generator failed: ZeroDivisionError: division by zero")
    with pytest.raises(TaskFileError, match="ZeroDivisionError"):
        subsets.reserve_subset(Broken(pair.templates), 1, 3, fresh=True)
