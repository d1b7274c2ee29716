"""An experiment's design turned into the episodes a run attempts: cells x tasks x repetitions x arms, each
episode marked with its cell, arm, repetition and pair, in the frozen arm order.

What an arm is depends on the design, and each planned episode says it in its fields: in a fault or attack
experiment the control has injection disabled (`faults` False) and the treatment has it; in a persistence
experiment both arms are long-running with the cell's recovery policy and checkpoint interval, the control
uninterrupted and the treatment the cell's interrupting arm (`persistence`), and injection is enabled in both
(`faults` True: the treatment is the interruption, so whatever faults or attacks the tasks configure meet both arms
alike); in a serving experiment both arms stream their replies under the same serving protocol, the control the
`reference` arm (A) and the treatment the cell's serving arm (`serving`: B to E), injection enabled in both (the
treatment is the serving failure).

The plan is a pure function of the experiment file and its resolved task ids, so the lock can hold it and anyone
can re-derive it; the noise floor's reruns are planned here too.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

from computerops.core.vocabulary import BrokerMode
from computerops.experiment.rows import ARMS, Arm
from computerops.experiment.spec import (
    LADDER_SITE,
    PERSISTENCE_CONTROL,
    SERVING_CONTROL,
    ExperimentSpec,
    ExperimentTask,
)
from computerops.persistence.arms import Persistence, PersistenceArm, RecoveryPolicy
from computerops.runs.config import PlannedEpisode
from computerops.serving_faults.arms import Serving, ServingArm, serving_arm
from sites.kit.faults import FaultClass


@dataclass(frozen=True)
class Cell:
    """One level of each factor."""

    model: str
    """A scripted policy name, or the real endpoint's model name."""
    fault_rate: float
    fault_classes: tuple[FaultClass, ...]
    tools: int | None = None
    order: str | None = None
    broker: BrokerMode = "enforcing"
    persistence: PersistenceArm | None = None
    """The interrupting arm this cell's treatment runs (a persistence experiment); None otherwise."""
    recovery: RecoveryPolicy | None = None
    """The recovery policy of both arms of a persistence experiment's cell; None otherwise."""
    serving: ServingArm | None = None
    """The serving arm this cell's treatment runs (a serving experiment); None otherwise."""

    def key(self, spec: ExperimentSpec) -> str:
        """The cell's id: its levels, named, e.g. `tools=3,order=A,fault_rate=0.2,model=scripted:oracle`; a factor
        with a single level is named too (a cell id says everything that defines it), a persistence experiment's
        `persistence=interrupted,recovery=reconcile` and a serving experiment's `serving=partial-stream` included."""
        parts = []
        if self.tools is not None:
            parts += [f"tools={self.tools}", f"order={self.order}"]
        parts.append(f"fault_rate={self.fault_rate:g}")
        if len(spec.factors.fault_classes) > 1:
            parts.append("fault_classes=" + "+".join(self.fault_classes))
        if spec.factors.broker != ["enforcing"]:
            parts.append(f"broker={self.broker}")
        if self.persistence is not None:
            parts += [f"persistence={self.persistence}", f"recovery={self.recovery}"]
        if self.serving is not None:
            parts.append(f"serving={self.serving}")
        parts.append(f"model={spec.endpoint.model_for(self.model)}")
        return ",".join(parts)


def cells(spec: ExperimentSpec) -> list[Cell]:
    """Every combination of the factors' levels, in the file's order of levels (models outermost)."""
    ladder: list[tuple[int | None, str | None]] = [(None, None)]
    if spec.factors.tools is not None and spec.factors.order is not None:
        ladder = [(t, o) for o in spec.factors.order for t in spec.factors.tools]
    persistence: list[tuple[PersistenceArm | None, RecoveryPolicy | None]] = [(None, None)]
    if spec.factors.persistence is not None:
        persistence = [(a, p) for a in spec.factors.persistence for p in spec.factors.recoveries]
    serving: list[ServingArm | None] = [None] if spec.factors.serving is None else list(spec.factors.serving)
    return [Cell(model=m, fault_rate=r, fault_classes=tuple(c), tools=t, order=o, broker=b, persistence=a, recovery=p,
                 serving=v)
            for m, (t, o), r, c, b, (a, p), v in itertools.product(spec.models, ladder, spec.factors.fault_rate,
                                                                 spec.factors.fault_classes, spec.factors.broker,
                                                                 persistence, serving)]


def injects(spec: ExperimentSpec, arm: Arm) -> bool:
    """Whether an arm's episodes have injection enabled (`PlannedEpisode.faults`): the treatment always; the control
    only in a persistence experiment, whose treatment is the interruption, and in a serving experiment, whose
    treatment is the serving failure (both arms meet the same faults and attacks)."""
    return arm == "treatment" or spec.persistent or spec.serving_study


def persistence_of(spec: ExperimentSpec, cell: Cell, arm: Arm) -> Persistence | None:
    """How an arm's episodes persist: in a persistence experiment, long-running in both arms with the cell's
    recovery policy and the experiment's checkpoint interval (matched costs), the control uninterrupted and the
    treatment the cell's arm; None (in-process, as ever) otherwise."""
    if cell.persistence is None or cell.recovery is None:
        return None
    return Persistence(arm=PERSISTENCE_CONTROL if arm == "control" else cell.persistence, recovery=cell.recovery,
                       checkpoint_every=spec.checkpoint_interval)


def serving_of(spec: ExperimentSpec, cell: Cell, arm: Arm) -> Serving | None:
    """How an arm's episodes meet their endpoint: in a serving experiment, streamed under the same serving protocol
    in both arms (a continuation design in both when the experiment declares one), the control the `reference` arm
    and the treatment the cell's serving arm; None (the endpoint asked as ever) otherwise."""
    if cell.serving is None:
        return None
    return serving_arm(SERVING_CONTROL if arm == "control" else cell.serving, continuation=spec.continuation)


def arms_meaning(spec: ExperimentSpec) -> str:
    """What the experiment's arms are, in words (the freeze prints it, the report shows it)."""
    if spec.factors.persistence is not None:
        return (f"control = the {PERSISTENCE_CONTROL} long-running episode; treatment = the cell's persistence arm "
                f"({', '.join(spec.factors.persistence)}); both in child processes with the cell's recovery policy "
                f"and a checkpoint every {spec.checkpoint_interval} replies; injection (faults, attacks) as configured "
                "in both arms")
    if spec.factors.serving is not None:
        return (f"control = the {SERVING_CONTROL} serving arm (A: no serving failure); treatment = the cell's serving "
                f"arm ({', '.join(spec.factors.serving)}); both streamed under the same serving protocol"
                + (" with a continuation design" if spec.continuation else "")
                + "; injection (faults, attacks) as configured in both arms")
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
    return PlannedEpisode(
        episode_id=f"{number:04d}-c{cell_index:02d}-{task.id}-{arm}-{tag}r{repetition}", task_id=task.id,
        policy=cell.model if spec.endpoint.scripted else None, repetition=repetition, faults=injects(spec, arm),
        cell=cell.key(spec), arm=arm, pair=pair, apps=apps, fault_rate=cell.fault_rate,
        fault_classes=list(cell.fault_classes) if task.fault_classes is None else task.fault_classes,
        fault_rules=task.faults, fault_draw=draw, seed=seed,
        broker_mode=None if cell.broker == "enforcing" else cell.broker, persistence=persistence_of(spec, cell, arm),
        serving=serving_of(spec, cell, arm),
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
    known = ("fault_rate", "model", "order", "persistence", "recovery", "serving", "tools")
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise ValueError(f"analysis.noise_floor.cell names factors {unknown}; known: {', '.join(known)}")
    for index, cell in enumerate(cells(spec), start=1):
        levels = {"tools": cell.tools, "order": cell.order, "fault_rate": cell.fault_rate, "model": cell.model,
                  "persistence": cell.persistence, "recovery": cell.recovery, "serving": cell.serving}
        if all(levels[k] == v for k, v in wanted.items()):
            return index, cell
    raise ValueError(f"analysis.noise_floor.cell {wanted} is not a cell of experiment {spec.id}")


def plan_noise_floor(spec: ExperimentSpec, tasks: list[ExperimentTask]) -> list[PlannedEpisode]:
    """The noise floor's reruns of its cell, treatment arm, on every task: `identical_reruns` with identical inputs
    (the experiment's seed, the first repetition's fault draws), then `new_seeds` each with a new model seed and new
    fault draws. Their pair field names the series (`identical` or `new-seed`)."""
    plan = spec.analysis.noise_floor
    assert plan is not None
    index, cell = noise_cell(spec)
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
