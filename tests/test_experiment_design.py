"""Experiment files, plans and locks, pure: the schema refuses what it must, the plan has the design's counts and
arm order, and the lock names the first input that changed since the freeze."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from computerops.experiment.lock import ExperimentRefused, freeze, lock_difference, read_lock
from computerops.experiment.plan import arm_order, cells, noise_cell, plan_experiment, plan_noise_floor
from computerops.experiment.spec import ExperimentFileError, ExperimentSpec, ExperimentTask, load_experiment
from computerops.runs.config import PlannedEpisode
from tasks import load_catalog

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "experiments").glob("*.yaml"))
CATALOG = load_catalog()


def _base(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "probe", "version": 1, "question": "Does the probe design plan what it says?",
        "tasks": [{"id": "helpdesk.solve-ticket@1"}, {"id": "inventory.discontinue-product@1"}],
        "endpoint": {"kind": "scripted", "policies": ["oracle"]},
        "repetitions": 3, "analysis": {"primary": "paired_false_completion"},
    }
    data.update(changes)
    return data


def _plan(spec: ExperimentSpec) -> list[PlannedEpisode]:
    assert spec.tasks is not None
    return plan_experiment(spec, list(spec.tasks), {t.id: CATALOG[t.id].spec.site for t in spec.tasks})


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_experiment_freezes(path: Path) -> None:
    lock = freeze(path, CATALOG)
    assert lock.computed_lock() == lock.lock_sha256
    assert lock.counts.episodes == len(lock.plan) == len({p.episode_id for p in lock.plan})
    assert lock_difference(lock, CATALOG) is None


def test_the_e3_replication_is_36_episodes_in_18_counterbalanced_pairs() -> None:
    lock = freeze(ROOT / "experiments" / "e3-replication.yaml", CATALOG)
    assert (lock.counts.episodes, lock.counts.pairs, lock.counts.tasks) == (36, 18, 6)
    by_pair: dict[str, list[PlannedEpisode]] = defaultdict(list)
    for episode in lock.plan:
        assert episode.pair is not None
        by_pair[episode.pair].append(episode)
    for pair, (first, second) in by_pair.items():
        assert {first.arm, second.arm} == {"control", "treatment"}
        # AB in odd repetitions, BA in even ones
        assert first.arm == ("control" if first.repetition % 2 else "treatment"), pair
        control = first if first.arm == "control" else second
        treatment = second if control is first else first
        assert not control.faults and treatment.faults
        same = {"task_id", "policy", "repetition", "cell", "pair", "apps", "seed", "fault_rate", "fault_classes",
                "fault_rules", "fault_draw"}
        assert {k: getattr(control, k) for k in same} == {k: getattr(treatment, k) for k in same}
        assert treatment.fault_rules, "every E3 treatment adds a fault at a fixed place"
    families = {rule.fault for p in lock.plan for rule in p.fault_rules}
    assert len(families) >= 5


def test_the_tool_ladder_lists_the_orders_apps_in_sequence() -> None:
    spec = load_experiment(ROOT / "experiments" / "tool-ladder-map.yaml")
    plan = _plan(spec)
    assert len(cells(spec)) == 5 * 2 * 6
    for episode in plan:
        assert episode.apps is not None and episode.cell is not None
        order = dict(part.split("=") for part in episode.cell.split(","))["order"]
        assert episode.apps == spec.tool_orders[order][:len(episode.apps)]
        assert f"tools={len(episode.apps)}" in episode.cell
    task = CATALOG["invoices.ladder-record-inv-1001@1"].spec
    path = plan[0].start_path(task)
    assert path.startswith("/invoices/portal?") and path.endswith("apps=" + ",".join(plan[0].apps or []))
    assert "apps=viewer,form" not in path.replace("apps=" + ",".join(plan[0].apps or []), "")


def test_the_noise_floor_reruns_its_cell_with_identical_then_new_seeds() -> None:
    spec = load_experiment(ROOT / "experiments" / "tool-ladder-map-ci.yaml")
    assert spec.tasks is not None
    _index, cell = noise_cell(spec)
    episodes = plan_noise_floor(spec, list(spec.tasks))
    same = [e for e in episodes if e.pair == "identical"]
    seeds = [e for e in episodes if e.pair == "new-seed"]
    assert spec.analysis.noise_floor is not None
    assert len(same) == len(spec.tasks) * spec.analysis.noise_floor.identical_reruns
    assert len(seeds) == len(spec.tasks) * spec.analysis.noise_floor.new_seeds
    assert {(e.seed, e.fault_draw) for e in same} == {(spec.seed, 1)}
    assert len({(e.task_id, e.seed) for e in seeds}) == len(seeds)
    assert {e.cell for e in episodes} == {cell.key(spec)}
    assert len({e.episode_id for e in episodes}) == len(episodes)


def test_randomised_order_is_reproducible_from_its_recorded_seed() -> None:
    spec = ExperimentSpec.model_validate(_base(order={"kind": "randomised", "seed": 7}, repetitions=40))
    first = [arm_order(spec, p.repetition, p.pair or "")[0] for p in _plan(spec) if p.arm == "control"]
    again = [arm_order(spec, p.repetition, p.pair or "")[0] for p in _plan(spec) if p.arm == "control"]
    other = ExperimentSpec.model_validate(_base(order={"kind": "randomised", "seed": 8}, repetitions=40))
    assert first == again
    assert first != [arm_order(other, p.repetition, p.pair or "")[0] for p in _plan(other) if p.arm == "control"]
    assert 0.25 < Counter(first)["control"] / len(first) < 0.75
    fixed = ExperimentSpec.model_validate(_base(order={"kind": "fixed"}))
    assert all(arm_order(fixed, k, "x")[0] == "control" for k in range(1, 6))
    with pytest.raises(ValueError, match="seed recorded"):
        ExperimentSpec.model_validate(_base(order={"kind": "randomised"}))


@pytest.mark.parametrize(("change", "words"), [
    ({"colour": "blue"}, "colour"),
    ({"analysis": {"primary": "paired_false_completion", "gate": "e4"}}, "gate"),
    ({"factors": {"fault_rate": [1.5]}}, "fault rates must lie in"),
    ({"factors": {"tools": [3]}}, "both factors"),
    ({"factors": {"tools": [3], "order": ["A"]}}, "not in `tool_orders`"),
    ({"factors": {"tools": [9], "order": ["A"]}, "tool_orders": {"A": ["viewer", "form", "search"]}}, "too long"),
    ({"tool_orders": {"A": ["form", "viewer"]}}, "must start viewer, form"),
    ({"tool_orders": {"A": ["viewer", "form", "fax"]}}, "unknown apps"),
    ({"arms": ["treatment"]}, "needs a control arm"),
    ({"tasks": [{"id": "a.b"}, {"id": "a.b"}]}, "tasks repeat"),
    ({"tasks": [{"id": "helpdesk.solve-ticket@1", "faults": [
        {"fault": "throttling", "target": {"path": "/x"}, "params": {"retry_afterr": "2"}}]}]}, "retry_afterr"),
])
def test_the_schema_refuses_a_bad_experiment_naming_the_field(tmp_path: Path, change: dict[str, Any],
                                                              words: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_base(**change)))
    with pytest.raises(ExperimentFileError, match=words.replace("(", r"\(").replace("`", "`")):
        load_experiment(path)


def test_a_tool_ladder_on_another_site_is_refused() -> None:
    spec = ExperimentSpec.model_validate(_base(factors={"tools": [2], "order": ["A"]},
                                               tool_orders={"A": ["viewer", "form"]}))
    with pytest.raises(ValueError, match="another site"):
        _plan(spec)


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_bytes((ROOT / "experiments" / name).read_bytes())
    return target


def test_one_changed_task_byte_after_the_freeze_is_named(tmp_path: Path) -> None:
    lock = freeze(_copy(tmp_path, "e3-replication.yaml"), CATALOG)
    task_id = lock.task_ids[2]
    changed = dict(CATALOG)
    changed[task_id] = dataclasses.replace(CATALOG[task_id], sha256="0" * 64)
    found = lock_difference(lock, changed)
    assert found is not None and found.startswith(f"tasks.{task_id}:")
    # In a checkout the edited task file also changes the `tasks` package's code hash; the task is still named.
    inputs = lock.inputs.model_copy(update={"code_sha256": {**lock.inputs.code_sha256, "tasks": "f" * 64}})
    found = lock_difference(lock.model_copy(update={"inputs": inputs}), changed)
    assert found is not None and found.startswith(f"tasks.{task_id}:"), found


def test_a_changed_experiment_file_or_lock_is_refused(tmp_path: Path) -> None:
    source = _copy(tmp_path, "e3-replication.yaml")
    lock = freeze(source, CATALOG)
    path = tmp_path / "e3.lock.json"
    path.write_text(lock.model_dump_json())
    assert read_lock(path) == lock
    source.write_bytes(source.read_bytes().replace(b"repetitions: 3", b"repetitions: 4"))
    found = lock_difference(lock, CATALOG)
    assert found is not None and found.startswith("experiment_sha256:")
    data = json.loads(path.read_text())
    data["spec"]["repetitions"] = 4
    path.write_text(json.dumps(data))
    with pytest.raises(ExperimentRefused, match="edited after the freeze"):
        read_lock(path)
    source.unlink()
    assert lock_difference(lock, CATALOG) == f"experiment_file: {source} is missing"


TASK_IDS = sorted(t for t in CATALOG if not CATALOG[t].spec.faults)[:12]


@settings(max_examples=examples(200), deadline=None)
@given(
    tasks=st.lists(st.sampled_from(TASK_IDS), min_size=1, max_size=4, unique=True),
    rates=st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]), min_size=1, max_size=3, unique=True),
    policies=st.lists(st.sampled_from(["oracle", "give-up", "noop"]), min_size=1, max_size=2, unique=True),
    repetitions=st.integers(1, 5),
    arms=st.sampled_from([["control", "treatment"], ["treatment"], ["treatment", "control"]]),
    order=st.sampled_from([{"kind": "counterbalanced"}, {"kind": "fixed"}, {"kind": "randomised", "seed": 3}]),
)
def test_any_design_plans_every_cell_task_repetition_and_arm_once(
    tasks: list[str], rates: list[float], policies: list[str], repetitions: int, arms: list[str],
    order: dict[str, Any],
) -> None:
    spec = ExperimentSpec.model_validate(_base(
        tasks=[{"id": t} for t in tasks], factors={"fault_rate": rates}, arms=arms, order=order,
        repetitions=repetitions, endpoint={"kind": "scripted", "policies": policies},
        analysis={"primary": "paired_false_completion" if "control" in arms else "grid"}))
    plan = _plan(spec)
    keys = Counter((p.cell, p.task_id, p.repetition, p.arm) for p in plan)
    assert len(plan) == len(cells(spec)) * len(tasks) * repetitions * len(arms) == len(keys)
    assert set(keys.values()) == {1}
    assert len({p.episode_id for p in plan}) == len(plan)
    assert [p.repetition for p in plan] == sorted(p.repetition for p in plan), "repetitions outermost"
    if len(arms) == 2:
        pairs = Counter(p.pair for p in plan)
        assert set(pairs.values()) == {2}
        assert all((p.arm == "treatment") == p.faults for p in plan)
    else:
        assert all(p.pair is None for p in plan)
    assert ExperimentTask(id="x").faults == []


E3_TASKS = yaml.safe_load((ROOT / "experiments" / "e3-replication.yaml").read_text())["tasks"]


@pytest.mark.parametrize("mutation", ["path", "method", "occurrence"])
@pytest.mark.parametrize("index", range(len(E3_TASKS)), ids=lambda i: E3_TASKS[i]["id"])
def test_a_treatment_fault_the_reference_solution_never_meets_is_refused_at_freeze(
        tmp_path: Path, index: int, mutation: str) -> None:
    data = yaml.safe_load((ROOT / "experiments" / "e3-replication.yaml").read_text())
    rule = data["tasks"][index]["faults"][0]
    if mutation == "path":
        rule["target"]["path"] += "/elsewhere"
    elif mutation == "method":
        rule["target"]["method"] = "DELETE"  # no reference solution deletes
    else:
        rule["occurrence"] = 50
    source = tmp_path / "e3.yaml"
    source.write_text(yaml.safe_dump(data))
    with pytest.raises(ExperimentRefused, match=rf"tasks\[{index}\]\.faults\[0\] .*reference solution"):
        freeze(source, CATALOG)


def test_one_byte_added_to_any_task_file_after_the_freeze_makes_run_refuse_naming_it(tmp_path: Path) -> None:
    from computerops.experiment.running import checked_lock
    from tasks.catalog import CATALOG_ROOT

    catalog_root = tmp_path / "catalog"
    shutil.copytree(CATALOG_ROOT, catalog_root)
    catalog = load_catalog(catalog_root)
    lock = freeze(_copy(tmp_path, "e3-replication.yaml"), catalog)
    path = tmp_path / "e3.lock.json"
    path.write_text(lock.model_dump_json())
    assert checked_lock(path, catalog) == lock
    for task_id in lock.task_ids:
        task_file = catalog[task_id].path
        original = task_file.read_bytes()
        task_file.write_bytes(original + b"\n")  # one byte, the task's meaning unchanged
        named = rf"an input changed since the freeze: tasks\.{re.escape(task_id)}:"
        with pytest.raises(ExperimentRefused, match=named):
            checked_lock(path, load_catalog(catalog_root))
        task_file.write_bytes(original)
