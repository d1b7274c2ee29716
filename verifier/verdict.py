"""What the verifier says about an episode, and what the agent claimed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

VERIFIER_VERSION = "1"

CheckCategory = Literal["state", "mutation", "procedure"]
Outcome = Literal["verified_success", "false_completion", "honest_failure", "unclaimed_success"]
FalseCompletionKind = Literal["state", "procedure_only", "forbidden_mutation"]


class Claim(BaseModel):
    """The agent's own word: `done(success, message)`, or no finish at all (success None).

    Recorded, reported beside the verdict, and never used as evidence of success.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    success: bool | None
    message: str | None = None


class CheckResult(BaseModel):
    """One named predicate and whether it held, with a detail a person can read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    category: CheckCategory
    passed: bool
    detail: str


class Verdict(BaseModel):
    """The verifier's judgement of one episode."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verifier_version: str
    task_id: str
    task_sha256: str
    checks: list[CheckResult]
    state_passed: bool
    mutations_passed: bool
    procedure_passed: bool
    claim: Claim
    outcome: Outcome
    false_completion_kind: FalseCompletionKind | None

    @property
    def passed(self) -> bool:
        return self.state_passed and self.mutations_passed and self.procedure_passed
