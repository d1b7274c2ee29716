"""Serving faults: what can be injected between the harness and its model endpoint, how it is decided, what fired.

Decided like the sites' faults (sites/kit/faults.py), per model request instead of per operation: a rule fires on
the n-th request of the episode (and the `times - 1` after it); a rate fires a kind where `draw(seed, task,
repetition, request, kind)` is below it, so a request faulted at 10% is faulted at every higher rate. Every decision
is logged (`ServingCall.decision`, with `applied` saying whether it could be carried out) and a forced injector
(`ServingInjector(forced=...)`) makes exactly the logged decisions again.

Model-side kinds are carried out by the serving-fault layer (computerops/serving_faults/layer.py); the two
tool-side kinds of the serving study (a timeout after a tool call's effect committed, a degraded evidence page)
are the sites' own fault classes (`ambiguous_after_commit`, `missing_resource` / `stale_read`) that a serving arm
configures (computerops/serving_faults/arms.py), logged on the operations and forced on replay as every site fault.
"""

from __future__ import annotations

import hashlib
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from adapter.failover import Upstream

ServingFaultKind = Literal["throttle", "queue_delay", "timeout_before_reply", "partial_stream"]
"""`throttle`: HTTP 429 before any generation (`retry_after` seconds in its Retry-After header, or none);
`queue_delay`: the request waits `delay_s` before it reaches the endpoint (queueing); `timeout_before_reply`: the
request is held and never answered (the harness's own request bound ends the wait); `partial_stream`: a streamed
reply is cut after its first `events` data events (no finish reason, no [DONE]); a reply that is not streamed
cannot be cut (the decision is logged not applied)."""
SERVING_FAULT_KINDS: tuple[ServingFaultKind, ...] = get_args(ServingFaultKind)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServingParams(_Spec):
    retry_after: int | None = Field(default=None, ge=0)
    """A throttle's Retry-After in seconds; None sends the 429 without one."""
    delay_s: float = Field(default=1.0, ge=0, le=60)
    """A queueing delay's wait."""
    events: int = Field(default=2, ge=0)
    """A partial stream's data events sent before the cut."""
    hold_s: float = Field(default=600.0, gt=0, le=3600)
    """How long a held request (`timeout_before_reply`) waits for the harness to give up before it is answered 504."""


class ServingRule(_Spec):
    """A serving fault an arm configures: `kind` on the `request`-th model request of the episode, counted on every
    endpoint it asks, and on the next `times - 1` requests too; `upstream` limits it to one endpoint's requests."""

    kind: ServingFaultKind
    request: int = Field(default=1, ge=1)
    times: int = Field(default=1, ge=1)
    upstream: Upstream | None = "primary"
    params: ServingParams = Field(default_factory=ServingParams)


class ServingPlan(_Spec):
    """Everything that decides one episode's serving faults."""

    seed: int = 0
    task_id: str = ""
    repetition: int = 1
    rules: list[ServingRule] = Field(default_factory=list)
    rate: float = Field(default=0.0, ge=0.0, le=1.0)
    rate_kinds: list[ServingFaultKind] = Field(default_factory=list)

    @property
    def configured(self) -> list[ServingFaultKind]:
        kinds = {rule.kind for rule in self.rules} | (set(self.rate_kinds) if self.rate > 0 else set())
        return sorted(kinds)


class ServingDecision(_Spec):
    """A serving fault decided for one model request, as logged and forced again."""

    kind: ServingFaultKind
    source: str
    """`rule:<index>` or `rate`."""
    params: ServingParams = Field(default_factory=ServingParams)
    applied: bool = True


def draw(seed: int, task_id: str, repetition: int, request: int, kind: str) -> float:
    """A uniform number in [0, 1) fixed by its inputs (a rate fires a kind where it is below the rate)."""
    digest = hashlib.sha256(f"serving:{seed}:{task_id}:{repetition}:{request}:{kind}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class ServingInjector:
    """The decisions of one episode, request by request (numbered from 1 across its endpoints)."""

    def __init__(self, plan: ServingPlan, *, forced: dict[int, ServingDecision | None] | None = None) -> None:
        self.plan = plan
        self.forced = forced
        """Exactly the logged decisions, by request number (a replay of the episode's requests)."""

    def decide(self, request: int, upstream: Upstream) -> ServingDecision | None:
        if self.forced is not None:
            return self.forced.get(request)
        for index, rule in enumerate(self.plan.rules):
            if rule.upstream not in (None, upstream):
                continue
            if rule.request <= request < rule.request + rule.times:
                return ServingDecision(kind=rule.kind, source=f"rule:{index}", params=rule.params)
        plan = self.plan
        for kind in plan.rate_kinds if plan.rate > 0 else []:
            if draw(plan.seed, plan.task_id, plan.repetition, request, kind) < plan.rate:
                return ServingDecision(kind=kind, source="rate")
        return None
