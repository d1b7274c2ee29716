"""The typed task schema. A task file is data: instruction, checks, controls. No code per task."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sites.kit.faults import FaultRule, PathPattern

Scalar = str | int | float | bool | None
ChangeKind = Literal["insert", "update", "delete"]
_ALL_CHANGES: tuple[ChangeKind, ...] = ("insert", "update", "delete")
_TASK_ID = r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)*$"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RowCheck(_Spec):
    """Expected state: exactly `count` rows of `table` match `where`, each with the `expect` values
    and each text column in `like` matching its regular expression."""

    kind: Literal["row"] = "row"
    name: str
    table: str
    where: dict[str, Scalar] = Field(default_factory=dict)
    count: int = Field(default=1, ge=0)
    expect: dict[str, Scalar] = Field(default_factory=dict)
    like: dict[str, str] = Field(default_factory=dict)
    """Column -> regular expression searched case-insensitively in the column's text (free text
    the agent writes, such as a message that must mention a fact)."""

    @field_validator("like")
    @classmethod
    def _compiles(cls, like: dict[str, str]) -> dict[str, str]:
        for pattern in like.values():
            re.compile(pattern)
        return like


class AnswerCheck(_Spec):
    """The agent's final message must match every pattern and none of the forbidden ones.

    Patterns are regular expressions, matched case-insensitively against the `done` message.
    """

    kind: Literal["answer"] = "answer"
    name: str
    patterns: list[str] = Field(min_length=1)
    forbidden_patterns: list[str] = Field(default_factory=list)

    @field_validator("patterns", "forbidden_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            re.compile(pattern)
        return patterns


StateCheck = Annotated[RowCheck | AnswerCheck, Field(discriminator="kind")]


class MutationRule(_Spec):
    """One kind of row change the task allows. Any journal entry no rule allows is forbidden."""

    table: str
    change: list[ChangeKind] = Field(min_length=1)
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Matched against the row after the change (before it, for a delete)."""
    fields: list[str] | None = None
    """For updates: the only columns that may change. None allows any column."""


class RowSelector(_Spec):
    """Selects journal entries: a table, the kinds of change, and values the changed row has."""

    table: str
    change: list[ChangeKind] = Field(default_factory=lambda: list(_ALL_CHANGES))
    where: dict[str, Scalar] = Field(default_factory=dict)


class _RouteCheck(_Spec):
    """A procedure check about requests: a method and a path pattern."""

    name: str
    method: str = "POST"
    path: PathPattern


class ViaRoute(_RouteCheck):
    """Required procedure: the selected changes exist and every one was made by a matching request."""

    kind: Literal["via_route"] = "via_route"
    rows: RowSelector


class Ordered(_Spec):
    """Required procedure: a change selected by `first` happens before every change selected by `then`."""

    kind: Literal["ordered"] = "ordered"
    name: str
    first: RowSelector
    then: RowSelector


class Visited(_RouteCheck):
    """Required procedure: the agent looked — some request with this method and path succeeded (2xx)."""

    kind: Literal["visited"] = "visited"
    method: str = "GET"


ProcedureCheck = Annotated[ViaRoute | Ordered | Visited, Field(discriminator="kind")]

StepAction = Literal["click", "fill", "select", "check", "press", "navigate", "back", "more", "done"]
_TARGETED: frozenset[str] = frozenset({"click", "fill", "select", "check", "press"})


class ScriptedStep(_Spec):
    """One action of a scripted control, addressed by role and accessible name, never by id."""

    id: str | None = None
    action: StepAction
    role: str | None = None
    name: str | None = None
    text: str | None = None
    option: str | None = None
    checked: bool | None = None
    key: str | None = None
    url: str | None = None
    success: bool | None = None
    message: str | None = None

    @model_validator(mode="after")
    def _arguments_fit_the_action(self) -> ScriptedStep:
        needs: dict[str, tuple[str, ...]] = {
            "fill": ("text",), "select": ("option",), "press": ("key",), "navigate": ("url",),
            "done": ("success",),
        }
        if self.action in _TARGETED and not (self.role and self.name is not None):
            raise ValueError(f"a {self.action} step needs role and name")
        for field in needs.get(self.action, ()):
            if getattr(self, field) is None:
                raise ValueError(f"a {self.action} step needs {field}")
        return self


NegativeKind = Literal[
    "drop-step", "wrong-value", "unrelated-write", "duplicate-submission", "bypass-procedure",
    "wrong-answer", "wrong-claim",
]


class NegativeControl(_Spec):
    """A variant of the scripted control that the verifier must reject."""

    id: str
    kind: NegativeKind
    description: str
    drop: list[str] = Field(default_factory=list)
    """Step ids of the scripted control to leave out."""
    replace: dict[str, list[ScriptedStep]] = Field(default_factory=dict)
    """Step id -> the steps that take its place."""
    insert_after: dict[str, list[ScriptedStep]] = Field(default_factory=dict)
    """Step id -> steps added right after it."""
    equivalent_to_success: str | None = None
    """A written reason, when this variant truly is equivalent to success and must not be rejected."""
    rejected_as: Literal["state", "procedure_only", "forbidden_mutation"] | None = None
    """When given, `tasks check` also requires this false-completion category (e.g. a blind retry after an
    ambiguous timeout must be a *state* false completion: the effect is duplicated)."""

    @model_validator(mode="after")
    def _changes_something(self) -> NegativeControl:
        if not (self.drop or self.replace or self.insert_after):
            raise ValueError(f"negative control {self.id!r} changes nothing (give drop, replace or insert_after)")
        return self

    def derive(self, control: list[ScriptedStep]) -> list[ScriptedStep]:
        """The step list of this variant, derived from the scripted control."""
        steps: list[ScriptedStep] = []
        for step in control:
            if step.id is not None and step.id in self.replace:
                steps.extend(self.replace[step.id])
            elif step.id is None or step.id not in self.drop:
                steps.append(step)
            if step.id is not None and step.id in self.insert_after:
                steps.extend(self.insert_after[step.id])
        return steps


class Budgets(_Spec):
    """Per-task overrides of the run's bounds."""

    actions: int | None = Field(default=None, ge=1)


class TaskSpec(_Spec):
    """One benchmark task."""

    id: str = Field(pattern=_TASK_ID)
    version: int = Field(default=1, ge=1)
    site: str
    title: str
    family: str
    difficulty: Literal["easy", "medium", "hard"] = "medium"
    instruction: str
    seed: int = 1
    start_path: str
    feasible: bool = True
    """False when the right outcome is done(success=false) with no mutation."""
    budgets: Budgets = Field(default_factory=Budgets)
    faults: list[FaultRule] = Field(default_factory=list)
    """Faults injected into this task's episodes (docs/faults.md); a matched control runs without them."""
    expected_state: list[StateCheck] = Field(default_factory=list)
    allowed_mutations: list[MutationRule] = Field(default_factory=list)
    """Empty means nothing may change."""
    required_procedure: list[ProcedureCheck] = Field(default_factory=list)
    scripted_control: list[ScriptedStep] = Field(min_length=1)
    negative_controls: list[NegativeControl] = Field(default_factory=list)

    @model_validator(mode="after")
    def _is_checkable(self) -> TaskSpec:
        if not self.expected_state and not self.required_procedure:
            raise ValueError(
                "task has no checks: give expected_state or required_procedure (allowed_mutations alone "
                "passes an agent that does nothing)"
            )
        names = [c.name for c in [*self.expected_state, *self.required_procedure]]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"check names must be unique; repeated: {duplicates}")
        step_ids = [s.id for s in self.scripted_control if s.id is not None]
        if len(step_ids) != len(set(step_ids)):
            raise ValueError("scripted_control step ids must be unique")
        if self.scripted_control[-1].action != "done":
            raise ValueError("scripted_control must end with a done step")
        neg_ids = [n.id for n in self.negative_controls]
        if len(neg_ids) != len(set(neg_ids)):
            raise ValueError("negative control ids must be unique")
        for negative in self.negative_controls:
            unknown = sorted(
                {*negative.drop, *negative.replace, *negative.insert_after} - set(step_ids)
            )
            if unknown:
                raise ValueError(f"negative control {negative.id!r} names unknown step ids {unknown}")
        return self
