"""The experiment planner goes through the study registry (computerops/experiment/plan.py, `Study.design_levels` and
the other experiment design hooks of computerops/studies/base.py), pure.

Every shipped experiment plans what it planned before the planner named no study: tests/golden/experiment_plans.json
holds, per experiment, its cell ids, what its arms are, each planned episode's id, cell, arm and study fields, and
the sha256 of the whole plan's JSON (and the same of its noise floor). A toy study registered only here adds a factor
level: it shows up in the cell ids and the planned episodes without plan.py naming it.

Regenerate the golden file after an intended change of what is planned: `python tests/test_experiment_plan_seam.py`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import JsonValue

from computerops.core.hashing import canonical_sha256
from computerops.experiment.lock import _resolve_tasks
from computerops.experiment.plan import arms_meaning, cells, injects, noise_cell, plan_experiment, plan_noise_floor
from computerops.experiment.rows import Arm
from computerops.experiment.spec import ExperimentSpec, ExperimentTask, load_experiment
from computerops.runs.config import PlannedEpisode
from computerops.studies import registry
from computerops.studies.base import Study
from tasks import load_catalog

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "experiments").glob("*.yaml"))
GOLDEN = ROOT / "tests" / "golden" / "experiment_plans.json"
STUDY_FIELDS = ("fault_rate", "fault_classes", "fault_rules", "broker_mode", "persistence", "serving", "studies")
"""The `PlannedEpisode` fields the registered studies give (`Study.arm_fields`, `Study.arm_entry`)."""
ROWS_UP_TO = 500


_SHORT = {"fault_rate": "rate", "fault_classes": "classes", "fault_rules": "rules", "broker_mode": "broker"}


def _row(episode: PlannedEpisode, cell_ids: list[str]) -> str:
    """One planned episode, small: its id (which names its cell's number, task, arm and repetition), its cell (the
    number of its id in the experiment's `cells`), its arm, whether injection is enabled, and the study fields it
    has, compacted (`rules` counted, `persistence` as arm/recovery/compaction/checkpoint interval, `serving` as
    arm/protocol)."""
    data = episode.model_dump(mode="json")
    parts = [episode.episode_id, f"cell={cell_ids.index(str(episode.cell)) + 1}", str(episode.arm),
             f"faults={int(episode.faults)}"]
    for name in STUDY_FIELDS:
        value = data.get(name)
        if value in (None, []):
            continue
        if name == "fault_rules":
            value = len(value)
        elif name == "fault_classes":
            value = "+".join(value)
        elif name == "persistence":
            value = f"{value['arm']}/{value['recovery']}/{value['compaction']}/{value['checkpoint_every']}"
        elif name == "serving":
            value = f"{value['arm']}/{'continuation' if value['protocol']['continuation'] else 'plain'}"
        elif name == "studies":
            value = json.dumps(value, sort_keys=True, separators=(",", ":"))
        parts.append(f"{_SHORT.get(name, name)}={value}")
    return " ".join(parts)


def _episodes(plan: Sequence[PlannedEpisode], cell_ids: list[str]) -> dict[str, Any]:
    """The plan's sha256 (every field of every episode) and count, and its rows where it has at most `ROWS_UP_TO`
    episodes (the full tool-ladder map's 720 are left to its sha256: its CI variant has the same design's rows)."""
    rows = [_row(e, cell_ids) for e in plan]
    return {"sha256": canonical_sha256([e.model_dump(mode="json") for e in plan]), "count": len(plan),
            "episodes": rows if len(rows) <= ROWS_UP_TO else None}


def planned(path: Path) -> dict[str, Any]:
    """What the experiment at `path` plans, as the golden file holds it."""
    spec = load_experiment(path)
    catalog = load_catalog()
    entries, _ = _resolve_tasks(spec, path, catalog)
    cell_ids = [c.key(spec) for c in cells(spec)]
    found: dict[str, Any] = {
        "cells": cell_ids, "arms": arms_meaning(spec),
        "plan": _episodes(plan_experiment(spec, entries, {t.id: catalog[t.id].spec.site for t in entries}), cell_ids),
    }
    if spec.analysis.noise_floor is not None:
        found["noise_cell"] = noise_cell(spec)[0]
        found["noise_floor"] = _episodes(plan_noise_floor(spec, entries), cell_ids)
    return found


def _golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


def test_the_golden_file_covers_every_shipped_experiment() -> None:
    assert sorted(_golden()) == sorted(p.stem for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_a_shipped_experiment_plans_what_it_planned_before_the_seam(path: Path) -> None:
    expected = _golden()[path.stem]
    found = planned(path)
    assert found["cells"] == expected["cells"]
    assert found["arms"] == expected["arms"]
    for part in ("plan", "noise_floor"):
        assert (part in found) == (part in expected), part
        if part in found:
            assert found[part]["episodes"] == expected[part]["episodes"], part
            assert found[part]["count"] == expected[part]["count"], part
            assert found[part]["sha256"] == expected[part]["sha256"], f"{part}: a field outside the golden rows"
    assert found.get("noise_cell") == expected.get("noise_cell")


class _PageNoise(Study):
    """A toy study added after the seam: a noise level per cell, from a constant (the experiment file's format
    has no factor for it); the treatment gets the level, the control none."""

    name: ClassVar[str] = "toy_page_noise"  # not the registered page-noise study's name
    noise_factors: ClassVar[tuple[str, ...]] = ("page_noise",)
    LEVELS: ClassVar[tuple[str, ...]] = ("quiet", "loud")

    def design_levels(self, spec: ExperimentSpec) -> Sequence[str]:
        return self.LEVELS

    def cell_parts(self, spec: ExperimentSpec, level: str) -> list[str]:
        return [f"page_noise={level}"]

    def arm_entry(self, spec: ExperimentSpec, level: str, arm: Arm, task: ExperimentTask) -> JsonValue | None:
        return {"level": level} if arm == "treatment" else None

    def injects_control(self, spec: ExperimentSpec) -> bool:
        return True

    def arms_meaning(self, spec: ExperimentSpec) -> str | None:
        return "control = a quiet page; treatment = the cell's page noise; injection in both arms"

    def factor_levels(self, level: str) -> dict[str, float | int | str | None]:
        return {"page_noise": level}


def _toy_spec(**changes: Any) -> ExperimentSpec:
    data: dict[str, Any] = {
        "id": "toy", "version": 1, "question": "Does a toy study reach the plan through the registry?",
        "tasks": [{"id": "helpdesk.solve-ticket@1"}], "endpoint": {"kind": "scripted", "policies": ["oracle"]},
        "repetitions": 1, "factors": {"fault_rate": [0.0, 0.2]}, "analysis": {"primary": "paired_false_completion"},
    }
    data.update(changes)
    return ExperimentSpec.model_validate(data)


def test_a_study_registered_later_adds_its_level_to_cells_and_planned_episodes(monkeypatch: pytest.MonkeyPatch
                                                                             ) -> None:
    spec = _toy_spec(analysis={"primary": "paired_false_completion",
                               "noise_floor": {"cell": {"fault_rate": 0.2, "page_noise": "loud"},
                                               "identical_reruns": 2, "new_seeds": 2}})
    tasks = list(spec.tasks or [])
    before = plan_experiment(spec, tasks, {"helpdesk.solve-ticket@1": "helpdesk"})
    assert "injection disabled" in arms_meaning(spec) and not injects(spec, "control")
    with pytest.raises(ValueError, match="page_noise"):
        noise_cell(spec)
    monkeypatch.setattr(registry, "STUDIES", [*registry.STUDIES, _PageNoise()])

    assert [c.key(spec) for c in cells(spec)] == [
        "fault_rate=0,page_noise=quiet,model=scripted:oracle", "fault_rate=0,page_noise=loud,model=scripted:oracle",
        "fault_rate=0.2,page_noise=quiet,model=scripted:oracle", "fault_rate=0.2,page_noise=loud,model=scripted:oracle"]
    plan = plan_experiment(spec, tasks, {"helpdesk.solve-ticket@1": "helpdesk"})
    assert len(plan) == 2 * len(before)
    for episode in plan:
        level = episode.cell.split("page_noise=")[1].split(",")[0] if episode.cell else None
        assert episode.faults, "the toy's treatment is its own: injection meets both arms"
        assert episode.studies == ({"toy_page_noise": {"level": level}} if episode.arm == "treatment" else None)
    assert arms_meaning(spec).startswith("control = a quiet page")
    index, cell = noise_cell(spec)
    assert (index, cell.factor("fault_rate"), cell.factor("page_noise")) == (4, 0.2, "loud")
    floor = plan_noise_floor(spec, tasks)
    assert {e.cell for e in floor} == {"fault_rate=0.2,page_noise=loud,model=scripted:oracle"}
    assert all(e.studies == {"toy_page_noise": {"level": "loud"}} for e in floor)


def test_two_studies_giving_one_planned_field_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class _Broker(Study):
        name: ClassVar[str] = "other_broker"

        def arm_fields(self, spec: ExperimentSpec, level: Any, arm: Arm, task: ExperimentTask) -> dict[str, Any]:
            return {"broker_mode": "observing"}

    class _Seed(Study):
        name: ClassVar[str] = "seeder"

        def arm_fields(self, spec: ExperimentSpec, level: Any, arm: Arm, task: ExperimentTask) -> dict[str, Any]:
            return {"seed": 7}

    spec = _toy_spec()
    tasks = list(spec.tasks or [])
    monkeypatch.setattr(registry, "STUDIES", [*registry.STUDIES, _Broker()])
    with pytest.raises(ValueError, match=r"studies security and other_broker both give the planned field "
                                         r"'broker_mode'"):
        plan_experiment(spec, tasks, {"helpdesk.solve-ticket@1": "helpdesk"})
    monkeypatch.setattr(registry, "STUDIES", [*registry.STUDIES[:-1], _Seed()])
    with pytest.raises(ValueError, match=r"study seeder gives the planned field 'seed', which the planner fills"):
        plan_experiment(spec, tasks, {"helpdesk.solve-ticket@1": "helpdesk"})


def test_an_unknown_noise_floor_factor_names_every_known_one() -> None:
    spec = _toy_spec(analysis={"primary": "paired_false_completion",
                               "noise_floor": {"cell": {"page_noise": "loud"}, "identical_reruns": 2,
                                               "new_seeds": 2}})
    with pytest.raises(ValueError, match=r"names factors \['page_noise'\]; known: compaction, fault_rate, model, "
                                         r"noise, order, persistence, recovery, serving, tools$"):
        noise_cell(spec)


def _write_golden() -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    data = {path.stem: planned(path) for path in SHIPPED}
    lines = ["{"]
    for n, (name, found) in enumerate(data.items()):
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f"    \"cells\": {json.dumps(found['cells'])},")
        lines.append(f"    \"arms\": {json.dumps(found['arms'])},")
        parts = [p for p in ("plan", "noise_floor") if p in found]
        for k, part in enumerate(parts):
            episodes = found[part]["episodes"]
            rows = ("null" if episodes is None else
                    "[\n" + ",\n".join(f"      {json.dumps(r)}" for r in episodes) + "\n    ]")
            last = k == len(parts) - 1 and "noise_cell" not in found
            lines.append(f"    {json.dumps(part)}: {{\"sha256\": {json.dumps(found[part]['sha256'])}, "
                         f"\"count\": {found[part]['count']}, \"episodes\": {rows}}}{'' if last else ','}")
        if "noise_cell" in found:
            lines.append(f"    \"noise_cell\": {found['noise_cell']}")
        lines.append("  }" + ("," if n < len(data) - 1 else ""))
    lines.append("}")
    GOLDEN.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert json.loads(GOLDEN.read_text(encoding="utf-8")) == json.loads(json.dumps(data))


if __name__ == "__main__":
    _write_golden()
    sys.exit(0)
