"""An experiment's design turned into the episodes a run attempts: cells x tasks x repetitions x arms, each
episode marked with its cell, arm, repetition and pair, in the frozen arm order.

A cell is one level of each factor: the model, the invoices portal's tool ladder (`tools` x `order`; neither is a
study, so both stay here) and each registered study's level (computerops/studies/registry.py), which the study
reads from the experiment's factors (`Study.design_levels`: site faults' fault rate x fault classes, the security
study's broker mode, the serving arm, the persistence arm with its recovery or compaction policy). The planner goes
through the registry and names no study: each study says its cell-id parts (`Study.cell_parts`), the
`PlannedEpisode` fields its level gives each arm (`Study.arm_fields`), whether the control has injection enabled
(`Study.injects_control`), what the arms are where it defines them (`Study.arms_meaning`) and which of its factors a
noise floor's cell may name (`Study.noise_factors`, `Study.factor_levels`). The experiment file's format is the same
as ever, and its validation (a study's factors included) stays in computerops/experiment/spec.py.

What an arm is depends on the design, and each planned episode says it in its fields: by default the control has
injection disabled (`faults` False) and the treatment has it, all else identical; a study whose treatment is its own
(the persistence study's interruption, the serving study's failure) enables injection in both arms and gives each
arm its own fields (computerops/persistence/study.py, computerops/serving_faults/study.py).

The plan is a pure function of the experiment file, its resolved task ids and the registered studies, so the lock can
hold it and anyone can re-derive it; the noise floor's reruns are planned here too.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from computerops.experiment.rows import ARMS, Arm
from computerops.experiment.spec import LADDER_SITE, ExperimentSpec, ExperimentTask
from computerops.runs.config import PlannedEpisode
from computerops.studies.base import Study
from computerops.studies.registry import registered

PLANNER_FIELDS = frozenset({"episode_id", "task_id", "policy", "repetition", "faults", "cell", "arm", "pair", "apps",
                            "fault_draw", "seed", "studies"})
"""The `PlannedEpisode` fields the planner fills itself (ids, the model's policy and seed, the tool ladder's apps,
whether injection is enabled, the noise floor's draw, the `studies` map that `Study.arm_entry` fills): no study's
`arm_fields` may give one."""


@dataclass(frozen=True)
class Cell:
    """One level of each factor: the model, the tool ladder's rung and order, and each registered study's level.

    A factor a noise floor's cell may name reads by name (`factor("fault_rate")`, `factor("serving")`)."""

    model: str
    """A scripted policy name, or the real endpoint's model name."""
    tools: int | None = None
    order: str | None = None
    levels: tuple[tuple[Study, Any], ...] = ()
    """Each registered study with its level of this cell (`Study.design_levels`), in the registry's order."""

    def key(self, spec: ExperimentSpec) -> str:
        """The cell's id: its levels, named, e.g. `tools=3,order=A,fault_rate=0.2,model=scripted:oracle`; a factor
        with a single level is named too (a cell id says everything that defines it), a persistence experiment's
        `persistence=interrupted,recovery=reconcile` and a serving experiment's `serving=partial-stream` included
        (each study names its own level: `Study.cell_parts`)."""
        parts = []
        if self.tools is not None:
            parts += [f"tools={self.tools}", f"order={self.order}"]
        for study, level in self.levels:
            parts += study.cell_parts(spec, level)
        parts.append(f"model={spec.endpoint.model_for(self.model)}")
        return ",".join(parts)

    def factor(self, name: str) -> Any:
        """The cell's level of the factor `name`: `model`, `tools`, `order` or a study's `noise_factors`; KeyError
        for another name."""
        if name in ("model", "tools", "order"):
            return {"model": self.model, "tools": self.tools, "order": self.order}[name]
        for study, level in self.levels:
            if name in study.noise_factors:
                return study.factor_levels(level)[name]
        raise KeyError(name)


def factor_names(studies: Sequence[Study]) -> tuple[str, ...]:
    """The factors a noise floor's cell may name, sorted: the model, the tool ladder's and the studies'."""
    return tuple(sorted({"model", "order", "tools", *(f for study in studies for f in study.noise_factors)}))


def cells(spec: ExperimentSpec) -> list[Cell]:
    """Every combination of the factors' levels, in the file's order of levels: models outermost, then the tool
    ladder, then each registered study's levels in the registry's order."""
    studies = registered()
    ladder: list[tuple[int | None, str | None]] = [(None, None)]
    if spec.factors.tools is not None and spec.factors.order is not None:
        ladder = [(t, o) for o in spec.factors.order for t in spec.factors.tools]
    return [Cell(model=m, tools=t, order=o, levels=tuple(zip(studies, levels, strict=True)))
            for m, (t, o), *levels in itertools.product(spec.models, ladder,
                                                         *(study.design_levels(spec) for study in studies))]


def injects(spec: ExperimentSpec, arm: Arm) -> bool:
    """Whether an arm's episodes have injection enabled (`PlannedEpisode.faults`): the treatment always; the control
    only where a registered study's treatment is its own (`Study.injects_control`: a persistence experiment's
    interruption, a serving experiment's failure), so that both arms meet the same faults and attacks."""
    return _injects(spec, arm, registered())


def _injects(spec: ExperimentSpec, arm: Arm, studies: Sequence[Study]) -> bool:
    return arm == "treatment" or any(study.injects_control(spec) for study in studies)


def arms_meaning(spec: ExperimentSpec) -> str:
    """What the experiment's arms are, in words (the freeze prints it, the report shows it): the first registered
    study's that defines them (`Study.arms_meaning`), else injection disabled against injection."""
    for study in registered():
        meaning = study.arms_meaning(spec)
        if meaning is not None:
            return meaning
    return "control = injection disabled (no fault, no attack's payload), all else identical; treatment = injection"


def arm_order(spec: ExperimentSpec, repetition: int, pair: str) -> tuple[Arm, ...]:
    """The experiment's arms in the order one pair runs them.

    counterbalanced: control first in odd repetitions, treatment first in even ones (AB, BA, AB, ...); randomised:
    treatment first when sha256(f"{seed}:{pair}") is odd; fixed: control first.
    """
    arms = tuple(a for a in ARMS if a in spec.arms)
    if len(arms) < 2 or spec.order.kind == "fixed":
        return arms
    if spec.order.kind == "counterbalanced":
        flipped = repetition % 2 == 0
    else:
        flipped = hashlib.sha256(f"{spec.order.seed}:{pair}".encode()).digest()[-1] % 2 == 1
    return tuple(reversed(arms)) if flipped else arms


def _episode(
    spec: ExperimentSpec, cell: Cell, cell_index: int, task: ExperimentTask, arm: Arm,
    repetition: int, pair: str | None, number: int, *, seed: int | None, draw: int | None = None, tag: str = "",
) -> PlannedEpisode:
    apps = None
    if cell.tools is not None and cell.order is not None:
        apps = spec.tool_orders[cell.order][:cell.tools]
    given: dict[str, Any] = {}
    owner: dict[str, str] = {}
    entries: dict[str, JsonValue] = {}
    for study, level in cell.levels:
        fields = study.arm_fields(spec, level, arm, task)
        for name in fields:
            if name in PLANNER_FIELDS:
                raise ValueError(f"study {study.name} gives the planned field {name!r}, which the planner fills")
            if name in owner:
                raise ValueError(f"studies {owner[name]} and {study.name} both give the planned field {name!r}")
            owner[name] = study.name
        given.update(fields)
        entry = study.arm_entry(spec, level, arm, task)
        if entry is not None:
            entries[study.name] = entry
    return PlannedEpisode(
        episode_id=f"{number:04d}-c{cell_index:02d}-{task.id}-{arm}-{tag}r{repetition}", task_id=task.id,
        policy=cell.model if spec.endpoint.scripted else None, repetition=repetition,
        faults=_injects(spec, arm, [study for study, _ in cell.levels]), cell=cell.key(spec), arm=arm, pair=pair,
        apps=apps, fault_draw=draw, seed=seed, **given,
        **({"studies": entries} if entries else {}),
    )


def plan_experiment(spec: ExperimentSpec, tasks: list[ExperimentTask], task_sites: dict[str, str]
                    ) -> list[PlannedEpisode]:
    """Every episode of the experiment: repetitions outermost (so a run stopped early has whole repetitions of
    every cell), then cells, then tasks, then the pair's arms in `arm_order`.

    `tasks` are the file's task entries (a subset file's tasks as plain entries); `task_sites` every task's site
    (a tool ladder is refused on a task of another site).
    """
    grid = cells(spec)
    if spec.factors.tools is not None:
        off_site = sorted(t.id for t in tasks if task_sites[t.id] != LADDER_SITE)
        if off_site:
            raise ValueError(f"the tool ladder lists the {LADDER_SITE} portal's apps; these tasks are of another "
                             f"site: {', '.join(off_site)}")
    plan: list[PlannedEpisode] = []
    paired = len(spec.arms) > 1
    for repetition in range(1, spec.repetitions + 1):
        seed = None if spec.seed is None else spec.seed + (repetition - 1 if spec.vary_seed else 0)
        for index, cell in enumerate(grid, start=1):
            for task in tasks:
                pair = f"c{index:02d}:{task.id}:r{repetition}" if paired else None
                for arm in arm_order(spec, repetition, pair or ""):
                    plan.append(_episode(spec, cell, index, task, arm, repetition, pair, len(plan) + 1, seed=seed))
    return plan


NOISE_IDENTICAL = "identical"
NOISE_SEEDS = "new-seed"


def noise_cell(spec: ExperimentSpec) -> tuple[int, Cell]:
    """The cell the noise floor reruns (numbered as in `cells`): the plan's named levels, first levels elsewhere."""
    plan = spec.analysis.noise_floor
    if plan is None:
        raise ValueError(f"experiment {spec.id} plans no noise floor (analysis.noise_floor)")
    wanted = plan.cell
    known = factor_names(registered())
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise ValueError(f"analysis.noise_floor.cell names factors {unknown}; known: {', '.join(known)}")
    for index, cell in enumerate(cells(spec), start=1):
        if all(cell.factor(k) == v for k, v in wanted.items()):
            return index, cell
    raise ValueError(f"analysis.noise_floor.cell {wanted} is not a cell of experiment {spec.id}")


def plan_noise_floor(spec: ExperimentSpec, tasks: list[ExperimentTask]) -> list[PlannedEpisode]:
    """The noise floor's reruns of its cell, treatment arm, on every task: `identical_reruns` with identical inputs
    (the experiment's seed, the first repetition's fault draws), then `new_seeds` each with a new model seed and new
    fault draws. Their pair field names the series (`identical` or `new-seed`)."""
    index, cell = noise_cell(spec)  # refuses an experiment that plans no noise floor
    plan = spec.analysis.noise_floor
    assert plan is not None
    base = 0 if spec.seed is None else spec.seed
    episodes: list[PlannedEpisode] = []
    for k in range(1, plan.identical_reruns + 1):
        for task in tasks:
            episodes.append(_episode(spec, cell, index, task, "treatment", k, NOISE_IDENTICAL, len(episodes) + 1,
                                     seed=spec.seed, draw=1, tag="same-"))
    for k in range(1, plan.new_seeds + 1):
        for task in tasks:
            episodes.append(_episode(spec, cell, index, task, "treatment", k, NOISE_SEEDS, len(episodes) + 1,
                                     seed=base + 1000 + k, draw=1000 + k, tag="seed-"))
    return episodes
