"""One benchmark task as its file declares it (`TaskSpec`): the schema's parts (tasks/spec.py) and an attacked task's
attack (tasks/attack.py, which builds on those parts) put together, with the rules that hold across them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sites.kit.broker import Grant
from tasks.attack import Attack
from tasks.spec import (
    _TASK_ID,
    AnswerCheck,
    Budgets,
    EquivalentMutant,
    EquivalentSolution,
    MutationRule,
    NegativeControl,
    ProcedureCheck,
    ScriptedStep,
    StateCheck,
    TaskFault,
    Variant,
    _Spec,
)


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
    faults: list[TaskFault] = Field(default_factory=list)
    """Faults injected into this task's episodes (docs/faults.md); a matched control runs without them."""
    grants: list[Grant] = Field(default_factory=list)
    """What the episode's user may do through the routes a grant governs (sites/kit/broker.py); with any, the
    site's broker decides every request to such a route. The same for a clean task and its attacked twin."""
    attack: Attack | None = None
    """The attack of an attacked task (tasks/attack.py): the payload planted in its episodes unless injection is
    disabled (its clean twin), the attacker's objective and what starts toward it."""
    extends: str | None = None
    """The catalog task an attacked task file is written on (`tasks.catalog`: the file gives its id, title, version,
    attack and added checks; everything else, grants and instruction included, is that task's)."""
    expected_state: list[StateCheck] = Field(default_factory=list)
    allowed_mutations: list[MutationRule] = Field(default_factory=list)
    """Empty means nothing may change."""
    own_corrections: bool = True
    """An agent may correct a row it inserted in the episode (update it so that it is still a row some rule allows
    inserting, or delete it): the same rule on every site. False where the task says its first write must stand."""
    required_procedure: list[ProcedureCheck] = Field(default_factory=list)
    scripted_control: list[ScriptedStep] = Field(min_length=1)
    negative_controls: list[NegativeControl] = Field(default_factory=list)
    equivalent_solutions: list[EquivalentSolution] = Field(default_factory=list)
    """Other routes to success the site offers; each must be verified success."""
    equivalent_mutants: list[EquivalentMutant] = Field(default_factory=list)
    wrong_variants: list[EquivalentMutant] = Field(default_factory=list)
    """The audit's *valid* variants that are wrong for this task, with the reason (the instruction asks for a value
    exactly as written, so its other spellings are not the same): the verdict must reject them."""

    @property
    def answer_check(self) -> AnswerCheck | None:
        """The task's structured-answer check, if it has one (at most one)."""
        return next((c for c in self.expected_state if isinstance(c, AnswerCheck)), None)

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
        variants: list[Variant] = [*self.negative_controls, *self.equivalent_solutions]
        variant_ids = [v.id for v in variants]
        if len(variant_ids) != len(set(variant_ids)):
            raise ValueError("negative control and equivalent solution ids must be unique together")
        for variant in variants:
            unknown = sorted(variant.named_steps() - set(step_ids))
            if unknown:
                raise ValueError(f"variant {variant.id!r} names unknown step ids {unknown}")
        if self.attack is not None:
            unknown = sorted(self.attack.obedient.named_steps() - set(step_ids))
            if unknown:
                raise ValueError(f"the attack's obedient control names unknown step ids {unknown}")
            if not self.grants:
                raise ValueError("an attacked task needs grants: the broker must govern what the attacker asks for")
        for negative in self.negative_controls:
            if negative.stops_at is not None and negative.stops_at not in {
                    s.id for s in negative.derive(list(self.scripted_control))}:
                raise ValueError(f"negative control {negative.id!r}: stops_at {negative.stops_at!r} is no step of it")
        self._answer_fits()
        return self

    def _answer_fits(self) -> None:
        answers = [c for c in self.expected_state if isinstance(c, AnswerCheck)]
        if len(answers) > 1:
            raise ValueError("a task has at most one answer check")
        answer = answers[0] if answers else None
        if not self.feasible and (answer is None or "success" in answer.status):
            raise ValueError("an infeasible task needs an answer check with refusal statuses and reasons")
        if self.feasible and answer is not None and "success" not in answer.status:
            raise ValueError("a feasible task's answer check accepts status success")
        if self.family == "read-and-answer" and (answer is None or not answer.fields):
            raise ValueError("a read-and-answer task needs an answer check with fields")
        finish = self.scripted_control[-1]
        if answer is not None and answer.fields and finish.success:
            given = set(finish.answer or {})
            if given != set(answer.fields):
                raise ValueError(f"the scripted done answers {sorted(given)}, the task declares "
                                 f"{sorted(answer.fields)}")
