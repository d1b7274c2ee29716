"""An episode's serving log (`serving.json`, `computerops.serving/1`): the plan and every model request with its
decision, as the serving-fault layer (computerops/serving_faults/layer.py) saw it; and what `verify` checks of it.

Evidence readers import this module, never the layer: it loads no endpoint code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapter.failover import Upstream
from computerops.core.formats import Versioned
from computerops.serving_faults.plan import ServingDecision, ServingInjector, ServingPlan

SERVING_FORMAT: Literal["computerops.serving/1"] = "computerops.serving/1"
SERVING_LOG = "serving.json"
"""The episode's serving log, beside its other evidence."""


class ServingCall(BaseModel):
    """One model request as the layer saw it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request: int
    """Its number in the episode, from 1, across endpoints."""
    upstream: Upstream
    decision: ServingDecision | None = None
    status: int | None = None
    """What went back: the endpoint's status, the injected 429 or 504; None for a request held until the harness
    gave up on it."""
    streamed: bool = False
    events_sent: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """A cut stream's data events handed back."""
    held_s: float | None = Field(default=None, exclude_if=lambda value: value is None)
    """How long a delayed or held request was held."""


class ServingLog(Versioned):
    """An episode's serving faults: the plan, and every model request with its decision (`serving.json`)."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["computerops.serving/1"] = SERVING_FORMAT

    plan: ServingPlan
    calls: list[ServingCall] = Field(default_factory=list)

    @property
    def fired(self) -> list[ServingCall]:
        return [call for call in self.calls if call.decision is not None and call.decision.applied]

def log_problems(log: ServingLog, plan: ServingPlan) -> list[str]:
    """Where a serving log is not what its episode's plan decides: another plan, or a request whose logged decision
    differs from the plan's for that request and endpoint (decisions are a function of the plan alone, so `verify`
    decides every one again). Only a cut can be logged not applied (the reply was not streamed, or too short)."""
    if log.plan != plan:
        return ["serving.json's plan is not the episode's planned serving"]
    injector = ServingInjector(plan)
    problems = []
    for call in log.calls:
        decided = injector.decide(call.request, call.upstream)
        logged = call.decision
        if logged is not None and not logged.applied and logged.kind != "partial_stream":
            problems.append(f"request {call.request}: a {logged.kind} is logged not applied")
        if (None if logged is None else logged.model_copy(update={"applied": True})) != decided:
            problems.append(f"request {call.request} ({call.upstream}): logged {logged}, the plan decides {decided}")
    if [call.request for call in log.calls] != list(range(1, len(log.calls) + 1)):
        problems.append("serving.json's requests are not numbered 1, 2, ... in order")
    return problems
