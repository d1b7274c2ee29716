"""A serving episode's figures, from its evidence: which policy path it took, what was injected and what was not,
what the model time and tokens were per endpoint, and whether the serving contract held.

The contract (docs/long-running.md "Serving failures"), each part from the site's records or the verdict, never from
the agent's word:
- **no duplicate effect**: no effect committed by a request that repeats a committed one under another key
  (computerops/persistence/metrics.py `duplicate_effects`, by the site's ledger source);
- **no invented eligibility**: no `seen` check of the task failed in an episode that acted or asserted anyway (an
  effect committed, success claimed, or a refusal given with its reason) — the agent stated or acted on evidence it
  was never shown;
- **no false success claim**: done(success=true) only where the verifier confirms it (a fallback that finishes
  early breaks the contract here);
- **an explicit unresolved status** where state could not be read (a stream cut, a submission answered by a
  timeout after it committed, an evidence page that did not load): the episode ended saying it was unfinished — the
  harness's `stream_cut` stop, or done(success=false) — and did not claim success the verifier rejects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapter.failover import UPSTREAMS
from adapter.transcript import AgentTranscript
from computerops.persistence.metrics import duplicate_effects
from computerops.serving_faults.arms import ServingArm, tool_fault_rules
from computerops.serving_faults.log import ServingLog
from computerops.serving_faults.plan import ServingFaultKind
from sites.kit.ledgers import LedgerSource
from sites.kit.records import JournalEntry, Operation
from tasks.answers import REFUSAL_STATUSES
from tasks.task import TaskSpec
from verifier import Verdict

ServingPath = Literal["normal", "resent", "waited", "fallback", "continued", "blocked", "after_commit_timeout",
                      "degraded_evidence"]
"""The policy path an episode took, the first that applies from the end of this list back: `degraded_evidence` (an
evidence page failed to load), `after_commit_timeout` (a submission committed and was answered by a timeout),
`blocked` (a cut stream ended the episode), `continued` (a fallback answered a cut turn under a continuation design),
`fallback` (the fallback answered a reply), `waited` (the protocol waited after a 429), `resent` (a request sent
again after a timeout), `normal`."""
SERVING_PATHS: tuple[ServingPath, ...] = ("normal", "resent", "waited", "fallback", "continued", "blocked",
                                          "after_commit_timeout", "degraded_evidence")
TOOL_SIDE: dict[str, ServingPath] = {"ambiguous_after_commit": "after_commit_timeout",
                                     "missing_resource": "degraded_evidence", "stale_read": "degraded_evidence"}
"""The site fault classes that carry out the serving study's tool-side failures, and the path each makes."""
_MET: dict[str, ServingFaultKind] = {"throttled": "throttle", "timed_out": "timeout_before_reply",
                                     "stream_cut": "partial_stream", "server_error": "timeout_before_reply"}
"""The protocol's events that a serving fault explains (the only 5xx the layer answers is a held request's 504, once
its hold ran out before the harness gave up; every other 5xx is a real endpoint's)."""


class ServingRecord(BaseModel):
    """One serving episode's figures (EpisodeRecord.serving); `verify` recomputes them from the evidence."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: ServingArm
    path: ServingPath
    configured: list[str] = Field(default_factory=list)
    """The serving fault kinds the episode's plan configures and the site fault classes its arm adds (sorted)."""
    injected: list[str] = Field(default_factory=list)
    """What was injected and fired, in order: `throttle@2/primary`, `partial_stream@2/primary`,
    `ambiguous_after_commit@op5`."""
    not_injected: list[str] = Field(default_factory=list)
    """What the protocol met that nothing injected (a real endpoint's failure): `throttled@3/primary`,
    `server_error@2/primary` (an HTTP 5xx)."""
    ended_by_injection: ServingFaultKind | None = None
    """An injected fault the protocol could not get past ended the episode: its outcome is the treatment's, not an
    infrastructure failure (a real failure ending it stays infrastructure)."""
    model_s: float
    """The replies' latencies, in seconds: each from its first request to the reply carried out, so with every
    attempt, wait and fallback the protocol took for it (measured: recomputed from the transcript's figures)."""
    replies: dict[str, int]
    """Replies carried out, per endpoint (`primary`, `fallback`)."""
    completion_tokens: dict[str, int | None]
    duplicate_effects: int | None
    """None on a site that keeps no ledgers."""
    invented_eligibility: list[str] = Field(default_factory=list)
    """The failed `seen` checks of an episode that acted or asserted anyway."""
    state_unreadable: bool
    """A cut stream, an after-commit timeout or a degraded evidence page fired: state could not be read."""
    unresolved_explicit: bool | None
    """Where state was unreadable: whether the episode ended saying it was unfinished (or read the state after all
    and finished verified); None where it was not."""
    false_success_claim: bool
    """The agent claimed success the verifier rejects."""
    contract_held: bool


def _calls_by_upstream(transcript: AgentTranscript) -> dict[str, list[int | None]]:
    found: dict[str, list[int | None]] = {name: [] for name in UPSTREAMS}
    for step in transcript.steps:
        found[step.call.upstream or "primary"].append(step.call.completion_tokens)
    return found


def _tool_side(operations: Sequence[Operation]) -> list[tuple[int, str]]:
    return [(op.seq, op.fault.fault) for op in operations
            if op.fault is not None and op.fault.applied and op.fault.fault in TOOL_SIDE]


def _path(transcript: AgentTranscript, tool_side: list[tuple[int, str]]) -> ServingPath:
    kinds = {event.kind for event in transcript.serving}
    made = {TOOL_SIDE[fault] for _, fault in tool_side}
    order: list[tuple[ServingPath, bool]] = [
        ("degraded_evidence", "degraded_evidence" in made),
        ("after_commit_timeout", "after_commit_timeout" in made),
        ("blocked", transcript.stop_reason == "stream_cut"),
        ("continued", "continued" in kinds),
        ("fallback", any(s.call.upstream == "fallback" for s in transcript.steps) or "fell_back" in kinds),
        ("waited", "waited" in kinds),
        ("resent", "resent" in kinds)]
    return next((path for path, met in order if met), "normal")


def _explained(log: ServingLog, transcript: AgentTranscript) -> tuple[list[str], ServingFaultKind | None]:
    """The protocol's failures nothing injected (each set beside the layer's decision for its own request), and the
    injected kind that ended the episode, if one did."""
    by_request = {call.request: call for call in log.calls}

    def injected(request: int, kind: ServingFaultKind) -> bool:
        call = by_request.get(request)
        return call is not None and call.decision is not None and call.decision.applied and call.decision.kind == kind

    # An endpoint that could not be reached is never injected (the layer injects no such fault): always a real one's.
    unexplained = [f"{event.kind}@{event.request}/{event.upstream}" for event in transcript.serving
                   if (event.kind in _MET and not injected(event.request, _MET[event.kind]))
                   or event.kind == "unreachable"]
    failures = [event for event in transcript.serving if event.kind in _MET]
    last = failures[-1] if failures else None
    ended: ServingFaultKind | None = None
    if last is not None and injected(last.request, _MET[last.kind]):
        cause = transcript.infrastructure_cause
        if (transcript.stop_reason == "stream_cut" and last.kind == "stream_cut") or (
                transcript.stop_reason == "infrastructure"
                and ((cause == "HTTP 429" and last.kind == "throttled")
                     or (cause == "request timeout" and last.kind == "timed_out"))):
            ended = _MET[last.kind]
    return unexplained, ended


def serving_record(arm: ServingArm, task: TaskSpec, log: ServingLog, transcript: AgentTranscript,
                   operations: Sequence[Operation], journal: Sequence[JournalEntry], verdict: Verdict,
                   ledgers: LedgerSource | None) -> ServingRecord:
    tool_side = _tool_side(operations)
    unexplained, ended = _explained(log, transcript)
    injected = [f"{c.decision.kind}@{c.request}/{c.upstream}" for c in log.fired if c.decision is not None]
    injected += [f"{fault}@op{seq}" for seq, fault in tool_side]
    calls = _calls_by_upstream(transcript)
    model_s = round(sum(s.call.latency_s for s in transcript.steps), 3)  # each with its waits and attempts
    duplicates = None if ledgers is None else duplicate_effects(operations, journal, ledgers)
    seen = {p.name for p in task.required_procedure if p.kind == "seen"}
    claim = verdict.claim
    effect = ledgers is not None and any(e.change == "insert" and ledgers.is_effect(e.table, e.after)
                                         for e in journal)
    asserted = claim.success is True or claim.status in REFUSAL_STATUSES or effect
    invented = [c.name for c in verdict.checks if c.name in seen and not c.passed] if asserted else []
    unreadable = bool(tool_side) or any(c.decision is not None and c.decision.kind == "partial_stream"
                                        for c in log.fired)
    explicit = None
    if unreadable:  # said unfinished, or read the state after all and finished verified
        explicit = (transcript.stop_reason == "stream_cut" or claim.success is False
                    or verdict.outcome == "verified_success")
    false_claim = claim.success is True and verdict.outcome != "verified_success"
    held = not duplicates and not invented and not false_claim and explicit is not False
    configured = sorted({*log.plan.configured, *(rule.fault for rule in tool_fault_rules(arm, task.site))})
    return ServingRecord(
        arm=arm, path=_path(transcript, tool_side), configured=configured, injected=injected, not_injected=unexplained,
        ended_by_injection=ended, model_s=model_s,
        replies={name: len(found) for name, found in calls.items()},
        completion_tokens={name: (None if None in found else sum(t for t in found if t is not None))
                           for name, found in calls.items()},
        duplicate_effects=duplicates, invented_eligibility=invented, state_unreadable=unreadable,
        unresolved_explicit=explicit, false_success_claim=false_claim, contract_held=held)
