"""The serving study's arms, defined once: the fallback matrix of docs/long-running.md ("Serving failures").

- `reference` (A): no failure, no fallback; the reference behaviour.
- `throttle-fallback` (B): 429 before output from the second request on; the pinned fallback answers. Does the
  fallback keep the contract?
- `partial-stream` (C): the second reply's stream cut; fallback refused (no continuation design). Does it end
  safely, saying it is unfinished?
- `timeout-after-commit` (D): the first submission commits and is answered by a timeout; the same model carries on
  after inspecting. Is the effect exactly once?
- `degraded-tool` (E): the site's evidence page fails to load; no fallback. Does it avoid inventing eligibility?

Every arm streams its replies (so that A and C differ in the cut alone) under the same serving protocol but for the
fallback policy B declares. The tool-side failures of D and E are the sites' own fault classes, configured as fault
rules of the episode (`ambiguous_after_commit` on the site's first submission; `missing_resource` on every load of
the site's evidence page, `LedgerSource.evidence`): logged on the operations and forced on replay like every site
fault.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from adapter.failover import ServingProtocol
from computerops.serving_faults.plan import ServingParams, ServingPlan, ServingRule
from sites.kit.faults import FaultRule, FaultTarget

ServingArm = Literal["reference", "throttle-fallback", "partial-stream", "timeout-after-commit", "degraded-tool"]
SERVING_ARMS: tuple[ServingArm, ...] = get_args(ServingArm)
NEEDS_FALLBACK: frozenset[ServingArm] = frozenset({"throttle-fallback"})
NEEDS_EVIDENCE: frozenset[ServingArm] = frozenset({"degraded-tool"})


class Serving(BaseModel):
    """How one episode meets its model endpoint (PlannedEpisode.serving): its arm, the serving faults injected between
    the harness and the endpoint, and the harness's serving protocol. None for an ordinary episode."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: ServingArm = "reference"
    rules: list[ServingRule] = Field(default_factory=list)
    protocol: ServingProtocol = Field(default_factory=lambda: ServingProtocol(stream=True))

    def plan(self, seed: int, task_id: str, repetition: int) -> ServingPlan:
        return ServingPlan(seed=seed, task_id=task_id, repetition=repetition, rules=self.rules)


def serving_arm(arm: ServingArm, *, continuation: bool = False) -> Serving:
    """The serving of an arm of the matrix; `continuation` declares a continuation design (C then falls back)."""
    protocol = ServingProtocol(stream=True, continuation=continuation)
    if arm == "throttle-fallback":
        return Serving(arm=arm, protocol=protocol.model_copy(update={"on_throttle": "fallback"}), rules=[
            ServingRule(kind="throttle", request=2, times=1000, upstream="primary",
                        params=ServingParams(retry_after=1))])
    if arm == "partial-stream":
        return Serving(arm=arm, protocol=protocol, rules=[ServingRule(kind="partial_stream", request=2)])
    return Serving(arm=arm, protocol=protocol)


def evidence_page(site: str) -> str | None:
    """The path pattern of a site's evidence page (`LedgerSource.evidence`), None when it names none."""
    from sites.registry import SITES  # the sites' apps: loaded only where an arm needs one

    definition = SITES.get(site)
    ledgers = None if definition is None else definition.ledgers
    return None if ledgers is None else ledgers.evidence


def tool_fault_rules(arm: ServingArm, site: str) -> list[FaultRule]:
    """The site fault rules an arm's episode adds to its task's own (the tool-side failures D and E); ValueError for
    `degraded-tool` on a site that names no evidence page."""
    if arm == "timeout-after-commit":
        return [FaultRule(fault="ambiguous_after_commit", target=FaultTarget(method="POST", path=f"/{site}/.*"))]
    if arm == "degraded-tool":
        evidence = evidence_page(site)
        if evidence is None:
            raise ValueError(f"site {site} names no evidence page (LedgerSource.evidence): no degraded-tool arm")
        return [FaultRule(fault="missing_resource", target=FaultTarget(method="GET", path=evidence), times=1000)]
    return []


def parse_serving_arms(names: str, sites: list[str], *, has_fallback: bool,
                       continuation: bool = False) -> list[Serving]:
    """The servings `run --serving A,B,...` (or an experiment's factor) asks for over tasks on `sites`; ValueError
    naming what is wrong: an unknown or repeated arm, a fallback arm without a fallback, a degraded-tool arm on a site
    that names no evidence page."""
    arms = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in arms if name not in SERVING_ARMS]
    if unknown:
        raise ValueError(f"--serving: unknown arm {unknown[0]!r}; arms: {', '.join(SERVING_ARMS)}")
    if len(set(arms)) != len(arms):
        raise ValueError(f"--serving names an arm twice: {names}")
    chosen: list[ServingArm] = [arm for arm in SERVING_ARMS if arm in arms]
    if NEEDS_FALLBACK & set(chosen) and not has_fallback:
        raise ValueError("--serving throttle-fallback needs a fallback endpoint (--fallback-policy P, or "
                         "--fallback-base-url URL --fallback-model NAME)")
    if NEEDS_EVIDENCE & set(chosen):
        bare = sorted({site for site in sites if evidence_page(site) is None})
        if bare:
            raise ValueError(f"--serving degraded-tool: site {bare[0]} names no evidence page (LedgerSource.evidence)")
    return [serving_arm(arm, continuation=continuation) for arm in sorted(chosen, key=SERVING_ARMS.index)]
