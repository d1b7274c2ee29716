"""Persistence experiments, pure: the plan pairs each persistence arm with an uninterrupted control of the same task,
repetition and cell, both long-running with the same policy (a resuming arm's recovery policy, the compacted arm's
compaction policy, never crossed) and checkpoint interval, injection enabled in both; the schema and the freeze refuse
what they must, naming it; the report shows the persistence figures per cell and arm as descriptive, names every cell
and arm of the design that has none, and other experiments keep their arms' meaning."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from computerops.experiment.analysis import ExperimentAnalysis, Missing, PersistenceCell
from computerops.experiment.gate import evidence_level
from computerops.experiment.layout import experiment_view
from computerops.experiment.lock import ExperimentRefused, freeze, lock_difference, read_lock
from computerops.experiment.plan import arms_meaning, cells, injects, noise_cell, plan_experiment, plan_noise_floor
from computerops.experiment.spec import (
    DEFAULT_CHECKPOINT_EVERY,
    PERSISTENCE_CONTROL,
    PERSISTENCE_TREATMENTS,
    ExperimentFileError,
    ExperimentSpec,
    load_experiment,
)
from computerops.persistence.arms import (
    COMPACTED,
    COMPACTION_POLICIES,
    MUTANT_COMPACTIONS,
    MUTANT_RECOVERIES,
    PERSISTENCE_ARMS,
    RECOVERY_POLICIES,
    RESUMING_ARMS,
    CompactionPolicy,
    PersistenceArm,
    RecoveryPolicy,
)
from computerops.report.figures import proportion
from computerops.report.persistence import PersistenceRow
from computerops.report.tables import Paragraph, Table
from computerops.runs.config import PlannedEpisode, RunConfig
from computerops.runs.episode import planted
from computerops.studies.base import EpisodeSetup
from sites.registry import SITES
from tasks import load_catalog

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "experiments" / "persistence-v1.yaml"
CATALOG = load_catalog()
NOTIFY = "helpdesk.notify-and-close-follow-up@1"
REFUND = "helpdesk.refund-with-approval@1"
NO_LEDGERS = sorted(t for t, task in CATALOG.items() if SITES[task.spec.site].ledgers is None)


def _base(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "probe-persistence", "version": 1, "question": "Does a persistence design plan what it says?",
        "tasks": [{"id": NOTIFY}, {"id": REFUND}], "endpoint": {"kind": "scripted", "policies": ["oracle"]},
        "factors": {"persistence": ["interrupted"]}, "repetitions": 2,
        "analysis": {"primary": "paired_verified_success", "descriptive": ["cells", "paired", "persistence"]},
    }
    data.update(changes)
    return data


def _plan(spec: ExperimentSpec) -> list[PlannedEpisode]:
    assert spec.tasks is not None
    return plan_experiment(spec, list(spec.tasks), {t.id: CATALOG[t.id].spec.site for t in spec.tasks})


def _pairs(plan: list[PlannedEpisode]) -> dict[str, dict[str, PlannedEpisode]]:
    pairs: dict[str, dict[str, PlannedEpisode]] = defaultdict(dict)
    for episode in plan:
        assert episode.pair is not None and episode.arm is not None
        assert episode.arm not in pairs[episode.pair], f"{episode.pair} has two {episode.arm} episodes"
        pairs[episode.pair][episode.arm] = episode
    return pairs


def _levels(cell: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in cell.split(","))


def test_the_control_levels_are_derived_from_the_arms_literal() -> None:
    assert PERSISTENCE_CONTROL in PERSISTENCE_ARMS
    assert set(PERSISTENCE_TREATMENTS) == set(PERSISTENCE_ARMS) - {PERSISTENCE_CONTROL}
    assert list(PERSISTENCE_TREATMENTS) == [a for a in PERSISTENCE_ARMS if a != PERSISTENCE_CONTROL]


def _policy_of(cell: str) -> tuple[str, str]:
    """The policy factor a persistence cell's id names and its level: `compaction` in a compacted cell, `recovery` in
    a resuming one (one of the two, never both)."""
    levels = _levels(cell)
    [factor] = {"recovery", "compaction"} & set(levels)
    return factor, levels[factor]


def _policy(episode: PlannedEpisode) -> tuple[str, str]:
    return _policy_of(episode.cell or "")


def test_the_shipped_experiment_pairs_each_persistence_arm_with_an_uninterrupted_control() -> None:
    lock = freeze(SHIPPED, CATALOG)
    spec = lock.spec
    assert spec.persistent and spec.factors.persistence == ["restarted", "interrupted", "compacted"]
    assert spec.factors.recoveries == ["reconcile", "retry-new-key", "forget"]
    assert spec.factors.compactions == ["ledgers/1", "model/1", "ledgers/1:drop-currency", "ledgers/1:changed-amount"]
    assert (lock.counts.cells, lock.counts.tasks, lock.counts.repetitions) == (10, 2, 1)
    assert (lock.counts.episodes, lock.counts.pairs) == (40, 20)
    assert spec.analysis.gate is None and spec.analysis.tests == [], "no verdict is planned on these figures"
    assert "persistence" in spec.analysis.descriptive
    assert spec.endpoint.scripted and spec.models == ["oracle"]
    pairs = _pairs(lock.plan)
    assert len(pairs) == 20
    seen: set[tuple[str, str, str]] = set()
    for pair, arms in pairs.items():
        control, treatment = arms["control"], arms["treatment"]
        levels = _levels(treatment.cell or "")
        factor, policy = _policy(treatment)
        assert control.persistence is not None and treatment.persistence is not None
        assert control.persistence.arm == PERSISTENCE_CONTROL
        assert treatment.persistence.arm == levels["persistence"] != PERSISTENCE_CONTROL
        assert factor == ("compaction" if treatment.persistence.arm == COMPACTED else "recovery"), treatment.cell
        assert getattr(control.persistence, factor) == getattr(treatment.persistence, factor) == policy
        assert control.persistence == treatment.persistence.model_copy(update={"arm": PERSISTENCE_CONTROL}), pair
        assert control.persistence.checkpoint_every == treatment.persistence.checkpoint_every == 5
        assert control.faults and treatment.faults, "the treatment is the interruption, not an injection"
        same = {"task_id", "policy", "repetition", "cell", "pair", "apps", "seed", "fault_rate", "fault_classes",
                "fault_rules", "fault_draw", "broker_mode"}
        assert {k: getattr(control, k) for k in same} == {k: getattr(treatment, k) for k in same}, pair
        assert pair == f"{pair.split(':')[0]}:{control.task_id}:r{control.repetition}"
        seen.add((control.task_id, levels["persistence"], policy))
    assert seen == {(t, a, r) for t in (NOTIFY, REFUND) for a in ("restarted", "interrupted")
                    for r in ("reconcile", "retry-new-key", "forget")} | {
        (t, COMPACTED, c) for t in (NOTIFY, REFUND) for c in COMPACTION_POLICIES}
    # every cell's id names the arm and the one policy that means something in it
    for cell in cells(spec):
        key = cell.key(spec)
        assert "persistence=" in key and ("recovery=" in key) != ("compaction=" in key), key
        assert ("compaction=" in key) == (cell.factor("persistence") == COMPACTED), key


def test_the_shipped_design_names_every_persistence_arm_and_each_mutant_as_a_negative_cell() -> None:
    """Issue 51: the shipped study covers the four arms (the uninterrupted one as every pair's control), both summary
    policies, the sound recovery, and every recovery and compaction mutant as a level of its own (a negative cell:
    it must be caught, tests/test_persistence_experiment_runs.py)."""
    spec = load_experiment(SHIPPED)
    assert spec.factors.persistence is not None
    assert {PERSISTENCE_CONTROL, *spec.factors.persistence} == set(PERSISTENCE_ARMS)
    assert set(spec.factors.compactions) == set(COMPACTION_POLICIES) >= MUTANT_COMPACTIONS | {"ledgers/1", "model/1"}
    assert set(spec.factors.recoveries) >= MUTANT_RECOVERIES | {"reconcile"}
    named = {(level.arm, level.recovery or level.compaction) for level in spec.factors.persistence_levels}
    assert {(COMPACTED, policy) for policy in MUTANT_COMPACTIONS} <= named
    assert {(arm, policy) for arm in RESUMING_ARMS for policy in MUTANT_RECOVERIES} <= named


@pytest.mark.parametrize("arm", RESUMING_ARMS)
@pytest.mark.parametrize("recovery", RECOVERY_POLICIES)
def test_every_interrupting_arm_and_recovery_plans_matched_pairs(arm: PersistenceArm, recovery: RecoveryPolicy
                                                                  ) -> None:
    spec = ExperimentSpec.model_validate(_base(factors={"persistence": [arm], "recovery": [recovery]},
                                               checkpoint_every=3))
    plan = _plan(spec)
    assert len(plan) == 2 * 2 * 2  # tasks x repetitions x arms, one cell
    [cell] = cells(spec)
    assert cell.key(spec) == f"fault_rate=0,persistence={arm},recovery={recovery},model=scripted:oracle"
    for pair, arms in _pairs(plan).items():
        assert set(arms) == {"control", "treatment"}, pair
        for name, episode in arms.items():
            assert episode.persistence is not None and episode.faults
            assert episode.persistence.arm == (PERSISTENCE_CONTROL if name == "control" else arm)
            assert (episode.persistence.recovery, episode.persistence.checkpoint_every) == (recovery, 3)
    # counterbalanced: the uninterrupted control first in odd repetitions, the interruption first in even ones
    for episode in plan[::2]:
        assert episode.arm == ("control" if episode.repetition % 2 else "treatment")


@pytest.mark.parametrize("compaction", COMPACTION_POLICIES)
def test_every_compaction_plans_matched_pairs_with_no_recovery_level(compaction: CompactionPolicy) -> None:
    spec = ExperimentSpec.model_validate(_base(factors={"persistence": [COMPACTED], "compaction": [compaction]}))
    plan = _plan(spec)
    assert len(plan) == 2 * 2 * 2
    [cell] = cells(spec)
    assert cell.key(spec) == f"fault_rate=0,persistence=compacted,compaction={compaction},model=scripted:oracle"
    assert (cell.factor("compaction"), cell.factor("recovery")) == (compaction, None)
    for pair, arms in _pairs(plan).items():
        assert set(arms) == {"control", "treatment"}, pair
        for name, episode in arms.items():
            assert episode.persistence is not None and episode.faults
            assert episode.persistence.arm == (PERSISTENCE_CONTROL if name == "control" else COMPACTED)
            assert episode.persistence.compaction == compaction
            assert episode.persistence.recovery == "reconcile", "the harness's default, which no compaction reads"


def _design(draw: random.Random) -> dict[str, Any]:
    """A persistence design drawn at random: a non-empty set of the treatment arms in a random order, and for each
    kind of arm drawn its factor's levels (a random non-empty ordered subset) or none (the default)."""
    arms = draw.sample(PERSISTENCE_TREATMENTS, draw.randint(1, len(PERSISTENCE_TREATMENTS)))
    factors: dict[str, Any] = {"persistence": arms}
    if set(arms) & set(RESUMING_ARMS) and draw.random() < 0.8:
        factors["recovery"] = draw.sample(RECOVERY_POLICIES, draw.randint(1, len(RECOVERY_POLICIES)))
    if COMPACTED in arms and draw.random() < 0.8:
        factors["compaction"] = draw.sample(COMPACTION_POLICIES, draw.randint(1, len(COMPACTION_POLICIES)))
    return _base(factors=factors, repetitions=draw.randint(1, 2))


def test_generated_designs_cross_each_arm_with_its_own_policies_only() -> None:
    """Over 150 drawn designs: the cells are exactly each resuming arm x the recovery levels and the compacted arm x
    the compaction levels, in the file's order; each pair's two episodes carry the cell's policy; nothing else."""
    draw = random.Random(51)
    for _ in range(150):
        design = _design(draw)
        spec = ExperimentSpec.model_validate(design)
        factors = design["factors"]
        recoveries = factors.get("recovery", ["reconcile"])
        compactions = factors.get("compaction", ["ledgers/1"])
        expected = [cell for arm in factors["persistence"] for cell in (
            [(arm, "compaction", c) for c in compactions] if arm == COMPACTED else
            [(arm, "recovery", r) for r in recoveries])]
        found = [(_levels(c.key(spec))["persistence"], *_policy_of(c.key(spec))) for c in cells(spec)]
        assert found == expected, design
        plan = _plan(spec)
        assert len(plan) == len(expected) * 2 * spec.repetitions * 2
        for arms in _pairs(plan).values():
            control, treatment = arms["control"], arms["treatment"]
            assert control.persistence is not None and treatment.persistence is not None
            factor, policy = _policy(treatment)
            assert getattr(control.persistence, factor) == getattr(treatment.persistence, factor) == policy
            assert control.persistence == treatment.persistence.model_copy(update={"arm": PERSISTENCE_CONTROL})
            other = "recovery" if factor == "compaction" else "compaction"
            assert getattr(treatment.persistence, other) == {"recovery": "reconcile", "compaction": "ledgers/1"}[other]


def test_the_defaults_are_reconcile_and_the_harness_checkpoint_interval() -> None:
    spec = ExperimentSpec.model_validate(_base())
    assert spec.factors.recovery is None and spec.factors.recoveries == ["reconcile"]
    assert spec.checkpoint_every is None and spec.checkpoint_interval == DEFAULT_CHECKPOINT_EVERY
    assert {(p.persistence.recovery, p.persistence.checkpoint_every) for p in _plan(spec) if p.persistence} == {
        ("reconcile", DEFAULT_CHECKPOINT_EVERY)}
    assert "uninterrupted" in arms_meaning(spec) and "in both arms" in arms_meaning(spec)


def test_injection_meets_both_arms_of_a_persistence_experiment_and_only_the_treatment_otherwise() -> None:
    attacked = "helpdesk.injection-credit-full-price@1"
    assert SITES[CATALOG[attacked].spec.site].ledgers is not None and CATALOG[attacked].spec.attack is not None
    design = _base(tasks=[{"id": NOTIFY}, {"id": attacked}], repetitions=1,
                   factors={"persistence": ["interrupted"], "fault_rate": [0.3],
                            "fault_classes": [["transient_5xx"]]})
    persistent = ExperimentSpec.model_validate(design)
    plain = ExperimentSpec.model_validate({**design, "factors": {"fault_rate": [0.3],
                                                                 "fault_classes": [["transient_5xx"]]},
                                           "analysis": {"primary": "paired_verified_success"}})
    assert injects(persistent, "control") and injects(persistent, "treatment")
    assert not injects(plain, "control") and injects(plain, "treatment")
    for spec in (persistent, plain):
        plan = _plan(spec)
        config = RunConfig(run_id="probe", tasks=[NOTIFY, attacked], endpoint=spec.endpoint, episodes=plan)
        for arms in _pairs(plan).values():
            control, treatment = arms["control"], arms["treatment"]
            task = CATALOG[control.task_id]
            treated = config.fault_plan(task.spec, treatment)
            assert treated is not None and treated.rate == 0.3
            if spec.persistent:
                assert config.fault_plan(task.spec, control) == treated, "the same faults meet both arms"
                assert (planted(EpisodeSetup(config, task, control)) is None) == (task.spec.attack is None)
                assert control.persistence is not None and treatment.persistence is not None
            else:
                assert config.fault_plan(task.spec, control) is None
                assert planted(EpisodeSetup(config, task, control)) is None
                assert control.persistence is None and treatment.persistence is None


def test_other_experiments_keep_their_arms_and_locks() -> None:
    for name in ("e3-replication.yaml", "security-v1.yaml", "tool-ladder-map-ci.yaml"):
        lock = freeze(ROOT / "experiments" / name, CATALOG)
        assert not lock.spec.persistent
        assert all(p.persistence is None and p.faults == (p.arm == "treatment") for p in lock.plan), name
        assert all("persistence=" not in (p.cell or "") for p in lock.plan)
        factors = lock.spec.model_dump(mode="json")["factors"]
        assert "persistence" not in factors and "recovery" not in factors, "an old lock's spec reads the same"
        assert "checkpoint_every" not in lock.spec.model_dump(mode="json")
        assert "injection disabled" in arms_meaning(lock.spec)


def test_a_persistence_lock_reads_back_and_names_a_changed_level(tmp_path: Path) -> None:
    source = tmp_path / "persistence-v1.yaml"
    source.write_bytes(SHIPPED.read_bytes())
    lock = freeze(source, CATALOG)
    path = tmp_path / "lock.json"
    path.write_text(lock.model_dump_json())
    assert read_lock(path) == lock and lock_difference(lock, CATALOG) is None
    source.write_bytes(source.read_bytes().replace(b"recovery: [reconcile, retry-new-key, forget]",
                                                   b"recovery: [reconcile, forget]"))
    found = lock_difference(lock, CATALOG)
    assert found is not None and found.startswith("experiment_sha256:")


@pytest.mark.parametrize(("change", "words"), [
    ({"factors": {"persistence": ["uninterrupted"]}}, "uninterrupted is the control arm of every pair"),
    ({"factors": {"persistence": ["restarted", "uninterrupted"]}}, "not a treatment level"),
    ({"factors": {"persistence": ["restarted", "restarted"]}}, "persistence levels repeat"),
    ({"factors": {"persistence": []}}, "at least 1 item"),
    ({"factors": {"persistence": ["paused"]}}, "factors.persistence.0"),
    ({"factors": {"persistence": ["interrupted"], "recovery": ["forget", "forget"]}}, "recovery levels repeat"),
    ({"factors": {"persistence": ["interrupted"], "recovery": ["guess"]}}, "factors.recovery.0"),
    ({"factors": {"recovery": ["reconcile"]}}, "`recovery` needs the factor `persistence`"),
    ({"factors": {"compaction": ["ledgers/1"]}}, "`compaction` needs the factor `persistence`"),
    ({"factors": {"persistence": ["compacted"], "recovery": ["forget"]}},
     "`recovery` applies to the resuming arms .* would mean nothing"),
    ({"factors": {"persistence": ["interrupted"], "compaction": ["model/1"]}},
     "`compaction` applies to the arm `compacted` only.* would mean nothing"),
    ({"factors": {"persistence": ["compacted"], "compaction": ["model/1", "model/1"]}}, "compaction levels repeat"),
    ({"factors": {"persistence": ["compacted"], "compaction": ["ledgers/2"]}}, "factors.compaction.0"),
    ({"factors": {}, "checkpoint_every": 3}, "`checkpoint_every` needs the factor `persistence`"),
    ({"checkpoint_every": 0}, "checkpoint_every"),
    ({"factors": {}}, "descriptive report `persistence` needs the factor `persistence`"),
    ({"analysis": {"primary": "paired_verified_success", "gate": "e3"}}, "plans no E3 gate"),
    ({"analysis": {"primary": "paired_verified_success", "tests": [{"kind": "recovery_cost"}]}},
     "cannot plan .*Test 2: recovery cost"),
])
def test_the_schema_refuses_a_bad_persistence_design_naming_it(tmp_path: Path, change: dict[str, Any],
                                                                words: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_base(**change)))
    with pytest.raises(ExperimentFileError, match=words):
        load_experiment(path)


def test_the_freeze_refuses_tasks_on_sites_without_ledgers_naming_them(tmp_path: Path) -> None:
    assert len(NO_LEDGERS) >= 2
    named = NO_LEDGERS[:2]
    source = tmp_path / "no-ledgers.yaml"
    source.write_text(yaml.safe_dump(_base(tasks=[{"id": NOTIFY}, *({"id": t} for t in named)])))
    with pytest.raises(ExperimentRefused, match="must be on sites that keep ledgers") as refused:
        freeze(source, CATALOG)
    said = str(refused.value)
    assert all(f"{t} ({CATALOG[t].spec.site})" in said for t in named) and NOTIFY not in said
    # The same tasks in an experiment that is not about persistence freeze as before.
    plain = _base(tasks=[{"id": t} for t in named], factors={}, analysis={"primary": "paired_verified_success"})
    source.write_text(yaml.safe_dump(plain))
    assert freeze(source, CATALOG).counts.tasks == 2


def test_the_noise_floor_reruns_a_persistence_cell_long_running() -> None:
    spec = ExperimentSpec.model_validate(_base(
        factors={"persistence": ["restarted", "interrupted"], "recovery": ["reconcile", "forget"]},
        analysis={"primary": "paired_verified_success", "descriptive": ["persistence"],
                  "noise_floor": {"cell": {"persistence": "interrupted", "recovery": "forget"},
                                  "identical_reruns": 2, "new_seeds": 2}}))
    index, cell = noise_cell(spec)
    assert (index, cell.factor("persistence"), cell.factor("recovery")) == (4, "interrupted", "forget")
    assert spec.tasks is not None
    episodes = plan_noise_floor(spec, list(spec.tasks))
    assert len(episodes) == 2 * 2 * 2
    assert {(e.arm, e.faults) for e in episodes} == {("treatment", True)}
    assert {(e.persistence.arm, e.persistence.recovery) for e in episodes if e.persistence} == {
        ("interrupted", "forget")} and all(e.persistence for e in episodes)


def test_the_noise_floor_reruns_a_compacted_cell_named_by_its_compaction_level() -> None:
    noise = {"identical_reruns": 2, "new_seeds": 2}
    design = _base(factors={"persistence": ["interrupted", COMPACTED], "recovery": ["forget"],
                            "compaction": ["ledgers/1", "model/1"]},
                   analysis={"primary": "paired_verified_success", "descriptive": ["persistence"],
                             "noise_floor": {"cell": {"persistence": COMPACTED, "compaction": "model/1"}, **noise}})
    spec = ExperimentSpec.model_validate(design)
    index, cell = noise_cell(spec)
    assert (index, cell.factor("compaction"), cell.factor("recovery")) == (3, "model/1", None)
    assert spec.tasks is not None
    assert {(e.persistence.arm, e.persistence.compaction) for e in plan_noise_floor(spec, list(spec.tasks))
            if e.persistence} == {(COMPACTED, "model/1")}
    # a recovery level names no compacted cell
    crossed = ExperimentSpec.model_validate({**design, "analysis": {**design["analysis"], "noise_floor": {
        "cell": {"persistence": COMPACTED, "recovery": "forget"}, **noise}}})
    with pytest.raises(ValueError, match="is not a cell of experiment"):
        noise_cell(crossed)


def _row(arm: str, recovery: str, *, verified: int, boundaries: int, duplicates: int) -> PersistenceRow:
    kept = proportion(boundaries, boundaries, "boundaries (resumes)")
    return PersistenceRow(
        endpoint="scripted:oracle", arm=arm, policy=recovery,
        verified=proportion(verified, 2, "episodes"), constraints_retained=kept, approvals_valid=kept,
        effects_retained=kept, unfinished_retained=kept,
        with_duplicates=proportion(min(duplicates, 2), 2, "episodes"), duplicate_effects=duplicates,
        unfinished_left=0, recovery_turns=0.0 if boundaries else None, median_wall_s=5.0, mean_tokens=None)


def test_the_report_shows_the_persistence_figures_per_cell_and_arm_as_descriptive() -> None:
    lock = freeze(SHIPPED, CATALOG)
    spec = lock.spec
    keys = [c.key(spec) for c in cells(spec)]
    new_key = next(k for k in keys if "interrupted,recovery=retry-new-key" in k)
    found = [PersistenceCell(cell=new_key, arm="control", rows=[_row("uninterrupted", "retry-new-key", verified=2,
                                                                     boundaries=0, duplicates=0)]),
             PersistenceCell(cell=new_key, arm="treatment", rows=[_row("interrupted", "retry-new-key", verified=1,
                                                                       boundaries=2, duplicates=1)])]
    analysis = ExperimentAnalysis(
        experiment=spec.id, version=spec.version, question=spec.question, series="experiment",
        lock_sha256=lock.lock_sha256, scripted=True, primary="treatment minus control verified success",
        missing=Missing(planned=24, admitted=4, not_run=[], infrastructure_failures=[]), persistence=found)
    view = experiment_view(analysis, lock, evidence_level(None, verified=False))
    tables = {b.id: b for b in view.blocks if isinstance(b, Table)}
    table = tables["persistence-cells"]
    headers = [c.header for c in table.columns]
    assert headers[:3] == ["cell", "arm", "verified"] and "duplicate effects" in headers
    assert [row[:2] for row in table.rows] == [(new_key, "control (uninterrupted)"),
                                               (new_key, "treatment (interrupted)")]
    duplicates = headers.index("duplicate effects")
    assert [row[duplicates] for row in table.rows] == [0, 1]
    assert table.caption is not None and "Descriptive: no frozen rule" in table.caption
    assert "verdicts" not in tables, "no test is planned, so no verdict is shown"
    plan = {str(row[0]): str(row[1]) for row in tables["plan"].rows}
    assert "uninterrupted" in plan["what the arms are"]
    assert any(isinstance(b, Paragraph) and "cannot be E3" in b.text for b in view.blocks)
    # the JSON keeps it only when the plan asks for it
    assert "persistence" in json.loads(analysis.model_dump_json())
    assert "persistence" not in json.loads(analysis.model_copy(update={"persistence": None}).model_dump_json())


def test_a_cell_whose_episodes_all_failed_as_infrastructure_says_so() -> None:
    lock = freeze(SHIPPED, CATALOG)
    key = cells(lock.spec)[0].key(lock.spec)
    analysis = ExperimentAnalysis(
        experiment="x", version=1, question="q", series="experiment", lock_sha256=lock.lock_sha256, scripted=True,
        primary="p", missing=Missing(planned=24, admitted=0, not_run=[], infrastructure_failures=[]),
        persistence=[PersistenceCell(cell=key, arm="control", rows=[])])
    view = experiment_view(analysis, lock, "E1")
    assert not any(isinstance(b, Table) and b.id == "persistence-cells" for b in view.blocks)
    assert any(isinstance(b, Paragraph) and "no episode was attempted by the agent" in b.text for b in view.blocks)


def test_the_report_shows_each_cell_and_arms_own_figures_and_names_those_without_any() -> None:
    """Over 60 drawn designs, each cell and arm given figures of its own (its duplicate count is its index) and a
    random part of them none (as if every episode there failed as infrastructure), the compacted treatments' now and
    then all at once: the table has a row for exactly the cells and arms with figures, each showing its own; a warning
    names every cell and arm of the design without figures and no other, and every persistence arm of the design that
    no figure shows at all; with every figure there, no warning."""
    shipped = freeze(SHIPPED, CATALOG)
    draw = random.Random(4051)
    for attempt in range(60):
        spec = ExperimentSpec.model_validate(_design(draw))
        plan = _plan(spec)
        lock = shipped.model_copy(update={"spec": spec, "plan": plan})
        keys = list(dict.fromkeys((str(p.cell), str(p.arm)) for p in plan))
        arm_of = {(str(p.cell), str(p.arm)): p.persistence.arm for p in plan if p.persistence is not None}
        if attempt % 4 == 0 and COMPACTED in (spec.factors.persistence or []):
            dropped = {k for k in keys if arm_of[k] == COMPACTED}
        else:
            dropped = {k for k in keys if draw.random() < 0.3}
        found = [PersistenceCell(cell=cell, arm=arm, rows=[] if (cell, arm) in dropped else [
            _row(arm_of[(cell, arm)], _policy_of(cell)[1], verified=2, boundaries=2, duplicates=index)])
            for index, (cell, arm) in enumerate(keys)]
        analysis = ExperimentAnalysis(
            experiment=spec.id, version=spec.version, question=spec.question, series="experiment",
            lock_sha256=lock.lock_sha256, scripted=True, primary="p",
            missing=Missing(planned=len(plan), admitted=0, not_run=[], infrastructure_failures=[]), persistence=found)
        view = experiment_view(analysis, lock, "E1")
        label = {k: f"{k[1]} ({arm_of[k]})" for k in keys}
        warnings = [b.text for b in view.blocks if isinstance(b, Paragraph) and b.text.startswith("No figures for")]
        if len(dropped) == len(keys):
            assert not warnings and any(isinstance(b, Paragraph) and "no episode was attempted" in b.text
                                        for b in view.blocks)
            continue
        [table] = [b for b in view.blocks if isinstance(b, Table) and b.id == "persistence-cells"]
        duplicates = [c.header for c in table.columns].index("duplicate effects")
        kept = [(index, k) for index, k in enumerate(keys) if k not in dropped]
        assert [(row[0], row[1], row[duplicates]) for row in table.rows] == [
            (k[0], label[k], index) for index, k in kept], "each cell and arm's own figures, in plan order"
        if not dropped:
            assert warnings == []
            continue
        [warning] = warnings
        said = warning.replace(";", " ;").replace(".", " .")
        for key in keys:
            assert (f"{key[0]} {label[key]} " in said) == (key in dropped), (key, warning)
        absent = [arm for arm in dict.fromkeys(arm_of.values())
                  if all(k in dropped for k in keys if arm_of[k] == arm)]
        assert (" have no figures at all" in warning) == bool(absent), warning
        assert all(f" {arm}" in warning.split("persistence arm(s)")[-1] for arm in absent), warning
