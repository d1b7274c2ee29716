"""An experiment file (`experiments/*.yaml`): the design and the analysis plan, as a pydantic schema that refuses
unknown fields.

An experiment names its tasks, its endpoint, its **factors** (each with its levels: fault rate, fault classes, the
invoices portal's tool ladder as a number of tools and an order, the broker mode, the persistence arm with its
recovery or compaction policy, the serving arm, and the model), its **arms** (control = injection disabled, all else
identical; treatment; in a persistence experiment control = the uninterrupted long-running episode, treatment = the
cell's persistence arm; in a serving experiment control = the `reference` serving arm, treatment = the cell's serving
arm), the **repetitions** per cell, the **arm order** within each matched pair (counterbalanced AB/BA across
repetitions, randomised with a recorded seed, or fixed) and the **analysis plan** (the primary estimate, each test
with its rule and smallest effect worth reporting, intervals with their resamples and seed, the descriptive reports,
the noise floor and the quality gate). Nothing here runs; `computerops.experiment.lock` freezes it and
`computerops.experiment.plan` turns it into episodes.

A persistence experiment's cells are not the plain product of its three factors, because a policy means something in
one kind of arm only: the `recovery` factor applies to the resuming arms (`restarted`, `interrupted`: what a resumed
harness does about the action it never saw answered) and the `compaction` factor to the `compacted` arm (whose one
process is never resumed). `Factors.persistence_levels` lists the cells: each resuming arm crossed with every
recovery level (`persistence=interrupted,recovery=forget`) and the compacted arm crossed with every compaction level
(`persistence=compacted,compaction=model/1`), never a compacted cell with a recovery level or a resuming cell with a
compaction level. Both arms of a cell's pairs carry the cell's policy (the other policy stays the harness's default,
which nothing in that arm acts on). The schema refuses a `recovery` factor without a resuming arm and a `compaction`
factor without the compacted arm: levels that would mean nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from adapter.transcript import Bounds
from computerops.core.formats import Versioned
from computerops.core.problems import problems
from computerops.core.vocabulary import BrokerMode
from computerops.experiment.grid_tests import RecoveryCostRule, ToolEdgeRule
from computerops.experiment.rows import Arm
from computerops.persistence.arms import (
    COMPACTED,
    DEFAULT_COMPACTION,
    PERSISTENCE_ARMS,
    RESUMING_ARMS,
    CompactionPolicy,
    Persistence,
    PersistenceArm,
    RecoveryPolicy,
)
from computerops.runs.config import EndpointConfig, time_bounds
from computerops.serving_faults.arms import NEEDS_FALLBACK, SERVING_ARMS, ServingArm
from sites.kit.fault_params import fault_params
from sites.kit.faults import FaultClass, FaultRule
from sites.kit.noise import NoiseKind

EXPERIMENT_FORMAT: Literal["computerops.experiment/1"] = "computerops.experiment/1"
LADDER_SITE = "invoices"
"""The site whose portal the tool-ladder factors (`tools`, `order`) act on."""
LADDER_BASE = ("viewer", "form")
"""The two apps every rung of the ladder lists first: the invoice viewer and the record form (the task needs both)."""
PERSISTENCE_CONTROL: PersistenceArm = "uninterrupted"
"""The persistence arm of a persistence experiment's control: one harness process from start to end."""
PERSISTENCE_TREATMENTS: tuple[PersistenceArm, ...] = tuple(a for a in PERSISTENCE_ARMS if a != PERSISTENCE_CONTROL)
"""The arms a persistence experiment may test against its control: every other persistence arm."""
DEFAULT_RECOVERY: RecoveryPolicy = "reconcile"
"""The recovery policy of a persistence experiment that names none: the sound one."""
DEFAULT_CHECKPOINT_EVERY: int = Persistence.model_fields["checkpoint_every"].default
"""The checkpoint interval of a persistence experiment that names none: the harness's own default."""
SERVING_CONTROL: ServingArm = "reference"
"""The serving arm of a serving experiment's control: arm A of the matrix, no serving failure, no fallback."""
SERVING_TREATMENTS: tuple[ServingArm, ...] = tuple(a for a in SERVING_ARMS if a != SERVING_CONTROL)
"""The arms a serving experiment may test against its control: every other arm of the matrix (B to E)."""


class PersistenceLevel(NamedTuple):
    """One cell's persistence levels: the arm tested against the uninterrupted control and the one policy that means
    something in it (a resuming arm's recovery policy, the compacted arm's compaction policy; the other is None)."""

    arm: PersistenceArm
    recovery: RecoveryPolicy | None = None
    compaction: CompactionPolicy | None = None


class ExperimentFileError(ValueError):
    """An experiment file that cannot be read; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExperimentTask(_Strict):
    """One task of the experiment, optionally with the fault classes its treatment draws (E3's per-task family)."""

    id: str
    """An instance id (`TEMPLATE@SEED`), or a template id with `instances`."""
    instances: int | None = Field(default=None, ge=1)
    """With a template id: its first N published instances (seeds 1..N), each an entry of its own with this entry's
    faults; the analysis then resamples templates, not instances, as its clusters."""
    fault_classes: list[FaultClass] | None = None
    """Classes the treatment's rate draws for on this task, in place of the `fault_classes` factor's level."""
    faults: list[FaultRule] = Field(default_factory=list)
    """Fault rules the treatment adds to the task's own (checked against the class's params as a task's are):
    a fault at a fixed place, so every treatment episode is exposed."""

    @field_validator("faults")
    @classmethod
    def _params(cls, rules: list[FaultRule]) -> list[FaultRule]:
        for rule in rules:
            fault_params(rule.fault, rule.params)
        return rules


class Factors(_Strict):
    """Each factor with its levels; a cell is one level of each. The file's format is the study seam's input, not
    behind it: each study reads its own factors' levels from here (`Study.design_levels`, computerops/studies/base.py;
    the planner, computerops/experiment/plan.py, names no study), and their validation stays here and in
    `ExperimentSpec` (`_check_persistence`, `_check_serving`)."""

    fault_rate: list[float] = Field(default_factory=lambda: [0.0], min_length=1)
    """Per-operation fault rates (0 to 1) of the treatment; 0 leaves only the faults the task files configure."""
    fault_classes: list[list[FaultClass]] = Field(default_factory=lambda: [list[FaultClass]()], min_length=1)
    """Levels, each a list of classes the rate draws for."""
    tools: list[int] | None = None
    """Tool-ladder rungs: how many of the invoices portal's apps are listed (2 to 7), in the order's sequence."""
    order: list[str] | None = None
    """Tool orders (keys of `tool_orders`) the ladder is climbed in."""
    broker: list[BrokerMode] = Field(default_factory=lambda: list[BrokerMode](["enforcing"]), min_length=1)
    """How the broker treats what the tasks' grants do not allow: `enforcing` blocks it, `observing` only records it
    (one attack then measures both what the agent would do and what the broker stops)."""

    persistence: list[PersistenceArm] | None = Field(default=None, min_length=1,
                                                     exclude_if=lambda value: value is None)
    """The persistence arms to test (docs/long-running.md: `compacted`, `restarted`, `interrupted`), each against the
    uninterrupted episode of the same task, repetition and cell; None: not a persistence experiment."""
    recovery: list[RecoveryPolicy] | None = Field(default=None, min_length=1, exclude_if=lambda value: value is None)
    """What a resumed harness does about the action whose result it never saw, in both arms of a resuming arm's
    cells (`restarted`, `interrupted`; the mutants `retry-new-key` and `forget` may be levels too, to be caught);
    never crossed with the compacted arm; None: `reconcile`."""
    compaction: list[CompactionPolicy] | None = Field(default=None, min_length=1,
                                                      exclude_if=lambda value: value is None)
    """The summary that replaces the older context, in both arms of the compacted arm's cells (`ledgers/1`, `model/1`;
    the mutants `ledgers/1:drop-currency` and `ledgers/1:changed-amount` may be levels too, to be caught); never
    crossed with a resuming arm; only with `compacted` among the arms; None: `ledgers/1`."""
    serving: list[ServingArm] | None = Field(default=None, min_length=1, exclude_if=lambda value: value is None)
    """The serving arms to test (docs/long-running.md "Serving failures": B to E), each against the `reference` arm
    (A) of the same task, repetition and cell, under the same serving protocol, streamed; None: not a serving
    experiment."""
    noise: list[NoiseKind] | None = Field(default=None, min_length=1, exclude_if=lambda value: value is None)
    """The page-noise kinds to test (docs/noise.md), each against the clean pages of the same task instance,
    repetition and cell; None: not a page-noise experiment."""

    @property
    def recoveries(self) -> list[RecoveryPolicy]:
        """The recovery factor's levels: as given, else the one sound default, `reconcile`."""
        return list(self.recovery) if self.recovery is not None else [DEFAULT_RECOVERY]

    @property
    def compactions(self) -> list[CompactionPolicy]:
        """The compaction factor's levels: as given, else the ledgers' own summary, `ledgers/1`."""
        return list(self.compaction) if self.compaction is not None else [DEFAULT_COMPACTION]

    @property
    def persistence_levels(self) -> list[PersistenceLevel]:
        """A persistence experiment's cells' persistence levels, in the file's order of arms then policies: a
        resuming arm with each recovery level, the compacted arm with each compaction level (the module's docstring
        says why they are not crossed); empty when the experiment is not about persistence."""
        levels: list[PersistenceLevel] = []
        for arm in self.persistence or []:
            if arm == COMPACTED:
                levels += [PersistenceLevel(arm, compaction=policy) for policy in self.compactions]
            else:
                levels += [PersistenceLevel(arm, recovery=policy) for policy in self.recoveries]
        return levels

    @field_validator("broker")
    @classmethod
    def _modes(cls, levels: list[BrokerMode]) -> list[BrokerMode]:
        if len(set(levels)) != len(levels):
            raise ValueError(f"broker levels repeat: {levels}")
        return levels

    @field_validator("persistence")
    @classmethod
    def _interrupting(cls, levels: list[PersistenceArm] | None) -> list[PersistenceArm] | None:
        if levels is None:
            return None
        if PERSISTENCE_CONTROL in levels:
            raise ValueError(f"persistence: {PERSISTENCE_CONTROL} is the control arm of every pair, not a treatment "
                             f"level; the levels are the arms tested against it ({', '.join(PERSISTENCE_TREATMENTS)})")
        if len(set(levels)) != len(levels):
            raise ValueError(f"persistence levels repeat: {levels}")
        return levels

    @field_validator("serving")
    @classmethod
    def _failing(cls, levels: list[ServingArm] | None) -> list[ServingArm] | None:
        if levels is None:
            return None
        if SERVING_CONTROL in levels:
            raise ValueError(f"serving: {SERVING_CONTROL} is the control arm of every pair, not a treatment level; "
                             f"the levels are the arms tested against it ({', '.join(SERVING_TREATMENTS)})")
        if len(set(levels)) != len(levels):
            raise ValueError(f"serving levels repeat: {levels}")
        return levels

    @field_validator("recovery")
    @classmethod
    def _policies(cls, levels: list[RecoveryPolicy] | None) -> list[RecoveryPolicy] | None:
        if levels is not None and len(set(levels)) != len(levels):
            raise ValueError(f"recovery levels repeat: {levels}")
        return levels

    @field_validator("compaction")
    @classmethod
    def _summaries(cls, levels: list[CompactionPolicy] | None) -> list[CompactionPolicy] | None:
        if levels is not None and len(set(levels)) != len(levels):
            raise ValueError(f"compaction levels repeat: {levels}")
        return levels

    @model_validator(mode="after")
    def _recovery_needs_persistence(self) -> Factors:
        if self.persistence is None and self.recovery is not None:
            raise ValueError("factor `recovery` needs the factor `persistence` (the resuming arms it recovers in)")
        if self.persistence is None and self.compaction is not None:
            raise ValueError("factor `compaction` needs the factor `persistence` with the arm `compacted`")
        resuming = set(RESUMING_ARMS) & set(self.persistence or [])
        if self.persistence is not None and self.recovery is not None and not resuming:
            raise ValueError(f"factor `recovery` applies to the resuming arms ({', '.join(RESUMING_ARMS)}), and "
                             f"`persistence` names none: a recovery level would mean nothing in {self.persistence}")
        if self.persistence is not None and self.compaction is not None and COMPACTED not in self.persistence:
            raise ValueError(f"factor `compaction` applies to the arm `{COMPACTED}` only, and `persistence` does not "
                             f"name it: a compaction level would mean nothing in {self.persistence}")
        if self.persistence is not None and self.serving is not None:
            raise ValueError("give the factor `persistence` or the factor `serving`, not both (each is one study's "
                             "arms against its own control)")
        return self

    @field_validator("fault_rate")
    @classmethod
    def _rates(cls, levels: list[float]) -> list[float]:
        bad = [r for r in levels if not 0.0 <= r <= 1.0]
        if bad:
            raise ValueError(f"fault rates must lie in [0, 1]; got {bad}")
        if len(set(levels)) != len(levels):
            raise ValueError(f"fault rate levels repeat: {levels}")
        return levels


class ArmOrder(_Strict):
    """Which arm of a matched pair runs first."""

    kind: Literal["counterbalanced", "randomised", "fixed"] = "counterbalanced"
    """counterbalanced: control first in odd repetitions, treatment first in even ones (AB/BA); randomised: drawn
    per pair from `seed`; fixed: control first always."""
    seed: int | None = None
    """The recorded seed of a randomised order (required for it)."""

    @model_validator(mode="after")
    def _seeded(self) -> ArmOrder:
        if self.kind == "randomised" and self.seed is None:
            raise ValueError("a randomised arm order needs its seed recorded (order: {kind: randomised, seed: N})")
        return self


class Intervals(_Strict):
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    resamples: int = Field(default=2000, ge=100)
    """Task-cluster bootstrap resamples of every bootstrapped interval."""
    seed: int = 0
    """Seed of every bootstrap."""


class ToolEdgeTest(_Strict):
    kind: Literal["tool_edge"] = "tool_edge"
    name: str = "Test 1: upper tool edge"
    order: str | None = None
    """The tool order whose episodes decide the verdict (the others are descriptive); None: all."""
    rule: ToolEdgeRule = Field(default_factory=ToolEdgeRule)


class RecoveryCostTest(_Strict):
    kind: Literal["recovery_cost"] = "recovery_cost"
    name: str = "Test 2: recovery cost"
    order: str | None = None
    rule: RecoveryCostRule = Field(default_factory=RecoveryCostRule)


class NoiseFloorPlan(_Strict):
    """`experiment noise-floor`: reruns of one cell, apart from the experiment's own episodes."""

    cell: dict[str, float | int | str] = Field(default_factory=dict)
    """The cell's factor levels (e.g. {tools: 3, order: A, fault_rate: 0.2}); unnamed factors take their first level."""
    identical_reruns: int = Field(default=5, ge=2)
    """Reruns with identical inputs (same seed, same fault draws) per task."""
    new_seeds: int = Field(default=5, ge=2)
    """Reruns per task, each with a new model seed and new fault draws."""


Descriptive = Literal["cells", "paired", "exposure", "grid", "security", "persistence", "serving"]


class AnalysisPlan(_Strict):
    primary: Literal["paired_false_completion", "paired_verified_success", "grid"]
    """The primary estimate: the task-level mean of treatment minus control (false completion or verified
    success), or the grid's tests."""
    intervals: Intervals = Field(default_factory=Intervals)
    tests: list[ToolEdgeTest | RecoveryCostTest] = Field(default_factory=list)
    descriptive: list[Descriptive] = Field(default_factory=lambda: list[Descriptive](["cells", "paired", "exposure"]))
    """Reports that decide nothing, committed with the plan."""
    gate: Literal["e3"] | None = None
    """The quality gate whose passing records evidence level E3 for the experiment."""
    noise_floor: NoiseFloorPlan | None = None


class ExperimentSpec(Versioned):
    """One experiment file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.experiment/1"] = EXPERIMENT_FORMAT

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    version: int = Field(ge=1)
    question: str = Field(min_length=10)
    """The question, in words, that the experiment answers."""
    tasks: list[ExperimentTask] | None = None
    tasks_file: str | None = None
    """A reserved subset file (`computerops subset reserve`), relative to the experiment file, instead of `tasks`."""
    endpoint: EndpointConfig
    factors: Factors = Field(default_factory=Factors)
    tool_orders: dict[str, list[str]] = Field(default_factory=dict)
    """Tool order name -> the invoices portal's app keys in ladder order (each starting viewer, form)."""
    arms: list[Arm] = Field(default_factory=lambda: list[Arm](["control", "treatment"]), min_length=1)
    repetitions: int = Field(ge=1)
    """Repetitions per task, cell and arm."""
    order: ArmOrder = Field(default_factory=ArmOrder)
    seed: int | None = 42
    """The seed sent with every model request."""
    vary_seed: bool = False
    """True: repetition k sends seed + k - 1 (repetitions are fresh draws of a seeded model); False: every
    repetition sends `seed` (fixed-seed repetitions, as in the E3 replication)."""
    fault_seed: int = 0
    """Seed of fault decisions made by rate."""
    checkpoint_every: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)
    """A persistence experiment's harness checkpoints every this many model replies (besides before and after
    effects), in both arms alike; only with the factor `persistence`; None: the harness's default."""
    continuation: bool = Field(default=False, exclude_if=lambda value: value is False)
    """A serving experiment declares a continuation design: a fallback may answer a turn whose stream was cut (the
    partial-stream arm then falls back); in both arms alike; only with the factor `serving`."""
    bounds: Bounds = Field(default_factory=Bounds)
    """Every episode's bounds; `request_timeout_s` and `wall_clock_s` as `computerops run --request-timeout` and
    `--wall-clock` set them (a model served on a CPU may need more than the defaults)."""
    analysis: AnalysisPlan

    @model_validator(mode="after")
    def _consistent(self) -> ExperimentSpec:
        if (self.tasks is None) == (self.tasks_file is None):
            raise ValueError("give exactly one of `tasks` (a list) and `tasks_file` (a reserved subset)")
        if self.tasks is not None:
            ids = [t.id for t in self.tasks]
            if not ids:
                raise ValueError("`tasks` is empty")
            if len(set(ids)) != len(ids):
                raise ValueError(f"tasks repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms repeat: {self.arms}")
        time_bounds(self.bounds.request_timeout_s, self.bounds.wall_clock_s)
        ladder = self.factors.tools, self.factors.order
        if (ladder[0] is None) != (ladder[1] is None):
            raise ValueError("the tool ladder needs both factors: `tools` (rungs) and `order` (tool orders)")
        if self.factors.order is not None:
            missing = [o for o in self.factors.order if o not in self.tool_orders]
            if missing:
                raise ValueError(f"factor `order` names {missing}, not in `tool_orders` ({sorted(self.tool_orders)})")
        for name, apps in self.tool_orders.items():
            self._check_order(name, apps)
        for rung in self.factors.tools or []:
            too_short = [name for name in self.factors.order or [] if rung > len(self.tool_orders[name])]
            if rung < len(LADDER_BASE) or too_short:
                raise ValueError(f"a tool ladder rung of {rung} tools needs {len(LADDER_BASE)} to the length of "
                                 f"its order; too long for {too_short}" if too_short else
                                 f"a tool ladder rung of {rung} tools is below the {len(LADDER_BASE)} the task needs")
        tested = {t.order for t in self.analysis.tests if t.order is not None}
        if tested - set(self.factors.order or []):
            raise ValueError(f"a test names tool order(s) {sorted(tested - set(self.factors.order or []))} that the "
                             "factor `order` does not have")
        if self.analysis.primary != "grid" and "control" not in self.arms:
            raise ValueError(f"the primary estimate {self.analysis.primary} needs a control arm")
        self._check_persistence()
        self._check_serving()
        self._check_noise()
        return self

    def with_endpoint(self, endpoint: EndpointConfig) -> ExperimentSpec:
        """This experiment run against another endpoint (named at the freeze), validated again: a serving design's
        throttle-fallback arm then needs that endpoint's own fallback."""
        try:
            return ExperimentSpec.model_validate({**self.model_dump(mode="json"), "endpoint": endpoint.model_dump()})
        except ValidationError as exc:
            raise ValueError(problems(exc)) from exc

    @property
    def checkpoint_interval(self) -> int:
        """Replies between a persistence experiment's periodic checkpoints: as given, else the harness's default."""
        return self.checkpoint_every if self.checkpoint_every is not None else DEFAULT_CHECKPOINT_EVERY

    @property
    def persistent(self) -> bool:
        """A persistence experiment: its arms are the uninterrupted episode and the cell's persistence arm."""
        return self.factors.persistence is not None

    def _check_persistence(self) -> None:
        if not self.persistent:
            if self.checkpoint_every is not None:
                raise ValueError("`checkpoint_every` needs the factor `persistence` (only long-running episodes "
                                 "checkpoint)")
            if "persistence" in self.analysis.descriptive:
                raise ValueError("the descriptive report `persistence` needs the factor `persistence`")
            return
        # A persistence experiment's treatment is an interruption, not an injection: the rules below are worded for
        # injected faults, and would claim a verdict its figures do not support.
        if self.analysis.gate is not None:
            raise ValueError("a persistence experiment plans no E3 gate (its items check injected faults' exposure); "
                             "its persistence figures are descriptive")
        costly = [t.name for t in self.analysis.tests if isinstance(t, RecoveryCostTest)]
        if costly:
            raise ValueError(f"a persistence experiment cannot plan {costly}: the recovery-cost rule compares runs "
                             "that recovered from an injected fault, and its treatment injects none")

    @property
    def serving_study(self) -> bool:
        """A serving experiment: its arms are the `reference` serving arm and the cell's serving arm."""
        return self.factors.serving is not None

    def _check_noise(self) -> None:
        if self.factors.noise is None:
            return
        if self.factors.persistence is not None or self.factors.serving is not None:
            raise ValueError("the factor `noise` is its own study's arms: give it without `persistence` or `serving`")
        if len(set(self.factors.noise)) != len(self.factors.noise):
            raise ValueError("the factor `noise` names a kind twice")
        # The treatment is page noise: the gate's items are worded for injected faults alone.
        if self.analysis.gate is not None:
            raise ValueError("a page-noise experiment plans no E3 gate (its items check injected faults' exposure)")

    def _check_serving(self) -> None:
        if self.factors.serving is None:
            if self.continuation:
                raise ValueError("`continuation` needs the factor `serving` (only the serving protocol falls back)")
            if "serving" in self.analysis.descriptive:
                raise ValueError("the descriptive report `serving` needs the factor `serving`")
            if self.endpoint.fallback is not None:
                raise ValueError("endpoint.fallback is asked only by the serving protocol: it needs the factor "
                                 "`serving`")
            return
        fallback = sorted(NEEDS_FALLBACK & set(self.factors.serving))
        if fallback and self.endpoint.fallback is None:
            how = ("fallback: {policy: NAME}" if self.endpoint.scripted else
                   "fallback: {base_url: URL, model: NAME}, or --fallback-base-url/--fallback-model at the freeze")
            raise ValueError(f"the serving arm {fallback[0]} needs a pinned fallback endpoint: give the endpoint "
                             f"{how}")
        # The treatment is a serving failure: the gate's items are worded for injected faults alone.
        if self.analysis.gate is not None:
            raise ValueError("a serving experiment plans no E3 gate (its items check injected faults' exposure); "
                             "its serving figures are descriptive")

    @staticmethod
    def _check_order(name: str, apps: list[str]) -> None:
        from sites.invoices.pages import APPS_BY_KEY

        unknown = [a for a in apps if a not in APPS_BY_KEY]
        if unknown:
            raise ValueError(f"tool order {name}: unknown apps {unknown}; the portal's are {sorted(APPS_BY_KEY)}")
        if tuple(apps[:len(LADDER_BASE)]) != LADDER_BASE or len(set(apps)) != len(apps):
            raise ValueError(f"tool order {name} must start {', '.join(LADDER_BASE)} and list each app once: {apps}")

    @property
    def models(self) -> list[str]:
        """The model factor's levels: the endpoint's scripted policies, or its one model."""
        return list(self.endpoint.policies) if self.endpoint.scripted else [str(self.endpoint.model)]


def load_experiment(path: Path) -> ExperimentSpec:
    """Parse and validate an experiment file; ExperimentFileError names the file and what is wrong."""
    try:
        data = yaml.safe_load(path.read_bytes())
    except OSError as exc:
        raise ExperimentFileError(f"{path}: cannot be read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ExperimentFileError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ExperimentFileError(f"{path}: an experiment file is a mapping of fields, not {type(data).__name__}")
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise ExperimentFileError(f"{path}: {problems(exc)}") from exc
    except ValueError as exc:
        raise ExperimentFileError(f"{path}: {exc}") from exc
