"""Fault injection at the HTTP/transaction layer: what can be configured, how it is decided, what fired.

Faults are part of the environment, never of the model client. A tenant carries a `FaultPlan`
(rules from the task file, a rate from the run); the operation middleware asks it, before each
operation, whether a fault fires there. Every decision is a pure function of the plan and the
operation: rules fire on the n-th operation matching their target; the rate fires when
`draw(run seed, task, repetition, operation seq, class)` is below it, so an operation faulted at
10% is faulted at every higher rate. Every decision is logged on the operation itself
(`Operation.fault`, with `applied` saying whether it fired), and replay forces exactly the logged
decisions. `docs/faults.md` gives each
class's precise semantics.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

FaultClass = Literal[
    "partial_success",
    "false_success",
    "ambiguous_after_commit",
    "ambiguous_without_commit",
    "duplicate_delivery",
    "out_of_order",
    "schema_drift",
    "moved_endpoint",
    "transient_5xx",
    "throttling",
    "stale_read",
    "session_expiry",
    "spurious_validation",
    "version_conflict",
    "missing_resource",
    "recovery_loop_trap",
]
FAULT_CLASSES: tuple[FaultClass, ...] = get_args(FaultClass)
READ_FAULTS: frozenset[FaultClass] = frozenset({"stale_read", "missing_resource", "moved_endpoint"})
"""Classes that apply to page loads (GET); the others apply to submissions (POST)."""


def _compiles(pattern: str) -> str:
    re.compile(pattern)
    return pattern


PathPattern = Annotated[str, AfterValidator(_compiles)]
"""A regular expression a request path must fully match; refused at load time when it does not compile."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FaultTarget(_Spec):
    """Which operations a rule applies to: a method and a path pattern (full match)."""

    method: str = "POST"
    path: PathPattern

    def matches(self, method: str, path: str) -> bool:
        return method.upper() == self.method.upper() and re.fullmatch(self.path, path) is not None


class FaultRule(_Spec):
    """A fault the task configures: `fault` on the `occurrence`-th operation matching `target`, and on
    the next `times - 1` matching operations too (a trap that keeps failing sets `times` high)."""

    fault: FaultClass
    target: FaultTarget
    occurrence: int = Field(default=1, ge=1)
    times: int = Field(default=1, ge=1)
    params: dict[str, str] = Field(default_factory=dict)
    """Class-specific settings as text, e.g. schema_drift {field, renamed_to, label, new_label}, throttling
    {retry_after}, moved_endpoint {fallback}, partial_success {commit}: each class's keys and what their values
    read as are its model in `sites.kit.fault_params`; a task whose rules do not fit it is refused at load."""


class FaultPlan(_Spec):
    """Everything that decides the faults of one episode's tenant."""

    run_seed: int = 0
    task_id: str = ""
    repetition: int = 1
    rules: list[FaultRule] = Field(default_factory=list)
    rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Per-run rate: each eligible operation faults with this probability (by `draw`)."""
    rate_classes: list[FaultClass] = Field(default_factory=list)
    """The classes the rate draws for; an operation is eligible for a class by its method."""

    @property
    def configured(self) -> list[str]:
        """The configured classes, sorted, each once."""
        classes = {rule.fault for rule in self.rules}
        if self.rate > 0:
            classes |= set(self.rate_classes)
        return sorted(classes)


class FaultDecision(_Spec):
    """A fault decided for one operation, as logged on it and forced again on replay."""

    fault: FaultClass
    source: str
    """`rule:<index>` for a task rule, `rate` for the run's rate."""
    params: dict[str, str] = Field(default_factory=dict)
    applied: bool = True
    """Whether it fired. False when it could not be carried out: a stale read with no older page to
    serve, or a class the site does not implement. Configured and fired are counted apart."""


def draw(run_seed: int, task_id: str, repetition: int, seq: int, fault: str) -> float:
    """A uniform number in [0, 1) fixed by its inputs: the rate fires a fault where it is below the rate."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{repetition}:{seq}:{fault}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FaultInjector:
    """The decisions of one tenant: counts matching operations per rule, as the operations come."""

    def __init__(self, plan: FaultPlan, *, forced: dict[int, FaultDecision] | None = None) -> None:
        self.plan = plan
        self.forced = forced
        """On replay: exactly the faults logged by the recorded operations, by sequence number."""
        self._matches = [0] * len(plan.rules)

    def decide(self, seq: int, method: str, path: str) -> FaultDecision | None:
        """The fault that fires on operation `seq`, or None. Call once per operation, in order."""
        if self.forced is not None:
            return self.forced.get(seq)
        fired: FaultDecision | None = None
        for index, rule in enumerate(self.plan.rules):
            if not rule.target.matches(method, path):
                continue
            self._matches[index] += 1
            n = self._matches[index]
            if fired is None and rule.occurrence <= n < rule.occurrence + rule.times:
                params = dict(rule.params)
                if rule.fault == "recovery_loop_trap":  # alternates: unavailable, missing, unavailable, ...
                    params["phase"] = "unavailable" if (n - rule.occurrence) % 2 == 0 else "missing"
                fired = FaultDecision(fault=rule.fault, source=f"rule:{index}", params=params)
        if fired is not None or self.plan.rate <= 0:
            return fired
        plan = self.plan
        for fault in plan.rate_classes:
            eligible = (method.upper() == "GET") == (fault in READ_FAULTS)
            if eligible and draw(plan.run_seed, plan.task_id, plan.repetition, seq, fault) < plan.rate:
                return FaultDecision(fault=fault, source="rate")
        return None
