"""Fault injection as the records saw it: exposure (configured is not exposed), the recovery funnel attempted ->
exposed -> verified success after exposure, with explicit diagnosis beside it (not a step) and the verified
successes of matched controls (injection disabled, same tasks) next to it, the loop detector's table and the false
completions of exposed episodes.

Reported from the records' faults_* and loop fields only. These are descriptive: a fault that fired depends on what
the agent did, so class-level figures are not causal estimates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from computerops.report.figures import FROZEN, Proportion, proportion
from computerops.report.tables import Block, Cell, Column, Mark, Paragraph, Table, columns, proportion_cells
from computerops.report.vocabulary import FAULT_CLASSES
from computerops.runs.records import EpisodeRecord

_AMBIGUOUS = r"time ?out|timed out|no answer|no response|did not (answer|respond)|ambiguous|unclear whether"
_CONFLICT = r"conflict|changed by (someone|another)|modified by (someone|another)|reload"
DIAGNOSIS_PATTERNS: dict[str, str] = {
    "partial_success": r"partial|partly|only (some|part)|not all|incomplete",
    "false_success": r"not saved|nothing was saved|(was|were)n'?t saved|(was|were) not saved|false success"
                     r"|did not (save|persist|take effect)|didn'?t (save|persist|take effect)",
    "ambiguous_after_commit": _AMBIGUOUS,
    "ambiguous_without_commit": _AMBIGUOUS,
    "duplicate_delivery": r"duplicate|twice|double",
    "out_of_order": r"out of order|wrong order|dependenc|depends on|prerequisite",
    "schema_drift": r"renamed|field|form (has )?changed",
    "moved_endpoint": r"moved|relocated|new (address|location|url|page)",
    "transient_5xx": r"\b5\d\d\b|unavailable|server error|internal error|bad gateway",
    "throttling": r"\b429\b|throttl|rate.?limit|too many requests",
    "stale_read": r"stale|out of date|outdated|" + _CONFLICT,
    "session_expiry": r"expired|session|sign(ed)? ?in again|log(ged)? ?in again",
    "spurious_validation": r"validation|invalid|did not validate",
    "version_conflict": _CONFLICT,
    "missing_resource": r"not found|\b404\b|missing|no longer exists|does not exist",
    "recovery_loop_trap": r"loop|stuck|same error|keeps? (failing|returning)|repeatedly",
}
"""What a final claim message must say (searched, case-insensitively) to name a fault of the class: a
deliberately small vocabulary per family, so a diagnosis is explicit, not inferred. A class without a pattern
is never diagnosed."""


class FaultExposureRow(BaseModel):
    """One fault class: in how many episodes it was configured (with injection enabled) and in how many it fired.
    Configured is not exposed: a configured fault fires only when the agent reaches the operation it targets."""

    model_config = FROZEN

    fault_class: str
    configured: int
    """Episodes with the class in faults_configured and faults_enabled."""
    fired: int
    """Episodes with the class in faults_fired (once per episode, however often it fired)."""
    firings: int
    """Times it fired, over all episodes."""
    fired_over_configured: Proportion


class Exposure(BaseModel):
    """Fault exposure per class and in total; every known class appears, 0 when no episode configured it."""

    model_config = FROZEN

    by_class: list[FaultExposureRow]
    episodes: int
    configured_any: int
    """Episodes with injection enabled and at least one fault class configured."""
    fired_any: int
    """Episodes where at least one fault fired."""
    fired_without_configured: int
    """Episodes where a class fired that was not configured with injection enabled (should be 0)."""
    controls: int
    """Episodes with injection disabled (matched controls)."""
    fired_over_configured: Proportion


class RecoveryFunnelRow(BaseModel):
    """attempted -> exposed -> verified success after exposure, for one fault class (or any, `fault_class` None).

    Explicit diagnosis stands beside the funnel, not in it (an agent can recover without naming the fault).
    Matched controls are the episodes with injection disabled of the tasks of the exposed episodes; their rate
    is shown next to the exposed episodes', not as an estimate of the fault's effect."""

    model_config = FROZEN

    fault_class: str | None
    attempted: int
    """Episodes with the class (any class) configured and injection enabled."""
    exposed: int
    """Those of them where it (any configured class) fired."""
    verified_after_exposure: int
    """Exposed episodes that ended in verified success."""
    exposed_over_attempted: Proportion
    recovered_over_exposed: Proportion
    """Verified success after exposure over exposed episodes."""
    explicit_diagnosis: int
    """Exposed episodes whose final claim message names the fault (`DIAGNOSIS_PATTERNS` of a class that fired)."""
    diagnosis_over_exposed: Proportion
    control_tasks: int
    """Tasks of the exposed episodes that have at least one control episode."""
    controls: int
    """Control episodes (faults_enabled False) of the exposed episodes' tasks."""
    control_verified_success: int
    control_verified_success_rate: Proportion


class RecoveryFunnel(BaseModel):
    """The recovery funnel over all episodes of the run, in total and per fault class (every known class)."""

    model_config = FROZEN

    total: RecoveryFunnelRow
    by_class: list[RecoveryFunnelRow]
    diagnosis_patterns: dict[str, str]
    """The pattern each class's diagnosis is searched with (case-insensitive)."""


class LoopRow(BaseModel):
    """One episode the loop detector flagged, or that repeated an intent at least twice."""

    model_config = FROZEN

    episode_id: str
    task_id: str
    faults_configured: list[str]
    faults_enabled: bool
    actions: int
    state_reads: int
    largest_repeat: int
    """Largest repeated intent count in the final no-effect segment."""
    loop: bool
    stop_reason: str
    outcome: str
    claimed_success: bool | None
    detector: str


class LoopTable(BaseModel):
    """Episodes by the loop detector; records written before it existed (no loop stats) are counted apart."""

    model_config = FROZEN

    episodes_with_stats: int
    episodes_without_stats: int
    loop_episodes: int
    """Episodes whose loop stats say loop (largest_repeat reached the detector's threshold)."""
    detectors: list[str]
    """Every detector version the records name; counts of different versions are not comparable."""
    rows: list[LoopRow]
    """Episodes with loop stats and loop set or largest_repeat >= 2, in episode id order."""


class FaultContextFalseCompletion(BaseModel):
    """A false completion in an episode where a fault fired."""

    model_config = FROZEN

    episode_id: str
    task_id: str
    kind: str
    """state, procedure_only or forbidden_mutation."""
    faults_fired: list[str]
    """The classes that fired, each once, in the order they first fired."""
    firings: int
    claim_message: str | None



def _fault_classes(records: Sequence[EpisodeRecord]) -> list[str]:
    """The known classes in report order, then any other class a record names, in name order."""
    named = {c for r in records for c in (*r.faults_configured, *r.faults_fired)}
    return [*FAULT_CLASSES, *sorted(named - set(FAULT_CLASSES))]


def _configured(record: EpisodeRecord) -> set[str]:
    """The classes configured with injection enabled (none for a control)."""
    return set(record.faults_configured) if record.faults_enabled else set()


def exposure(records: Sequence[EpisodeRecord]) -> Exposure:
    """Configured against fired, per fault class and in total."""
    rows = []
    for fault in _fault_classes(records):
        configured = sum(1 for r in records if fault in _configured(r))
        fired = sum(1 for r in records if fault in r.faults_fired)
        rows.append(FaultExposureRow(
            fault_class=fault, configured=configured, fired=fired,
            firings=sum(r.faults_fired.count(fault) for r in records),
            fired_over_configured=proportion(
                sum(1 for r in records if fault in _configured(r) and fault in r.faults_fired), configured,
                "episodes with the class configured"),
        ))
    configured_any = sum(1 for r in records if _configured(r))
    return Exposure(
        by_class=rows, episodes=len(records), configured_any=configured_any,
        fired_any=sum(1 for r in records if r.faults_fired),
        fired_without_configured=sum(1 for r in records if set(r.faults_fired) - _configured(r)),
        controls=sum(1 for r in records if not r.faults_enabled),
        fired_over_configured=proportion(sum(1 for r in records if _configured(r) & set(r.faults_fired)),
                                          configured_any, "episodes with a fault configured"),
    )


def names_fault(message: str | None, faults: Iterable[str]) -> bool:
    """True when the claim message names a fault of one of the classes (its `DIAGNOSIS_PATTERNS` entry)."""
    if not message:
        return False
    return any(re.search(DIAGNOSIS_PATTERNS[f], message, re.IGNORECASE) for f in faults if f in DIAGNOSIS_PATTERNS)


def _funnel_row(fault: str | None, records: Sequence[EpisodeRecord]) -> RecoveryFunnelRow:
    def configured(record: EpisodeRecord) -> set[str]:
        classes = _configured(record)
        return classes if fault is None else classes & {fault}

    attempted = [r for r in records if configured(r)]
    exposed = [r for r in attempted if configured(r) & set(r.faults_fired)]
    verified = sum(1 for r in exposed if r.outcome == "verified_success")
    diagnosed = sum(1 for r in exposed if names_fault(r.claim.message, configured(r) & set(r.faults_fired)))
    tasks = {r.task_id for r in exposed}
    controls = [r for r in records if not r.faults_enabled and r.task_id in tasks]
    control_verified = sum(1 for r in controls if r.outcome == "verified_success")
    return RecoveryFunnelRow(
        fault_class=fault, attempted=len(attempted), exposed=len(exposed), verified_after_exposure=verified,
        exposed_over_attempted=proportion(len(exposed), len(attempted), "episodes with the fault configured"),
        recovered_over_exposed=proportion(verified, len(exposed), "exposed episodes"),
        explicit_diagnosis=diagnosed, diagnosis_over_exposed=proportion(diagnosed, len(exposed), "exposed episodes"),
        control_tasks=len({r.task_id for r in controls}), controls=len(controls),
        control_verified_success=control_verified,
        control_verified_success_rate=proportion(control_verified, len(controls), "matched control episodes"),
    )


def recovery_funnel(records: Sequence[EpisodeRecord]) -> RecoveryFunnel:
    """attempted -> exposed -> verified success after exposure, with explicit diagnosis and matched controls
    beside it, in total and per fault class."""
    return RecoveryFunnel(
        total=_funnel_row(None, records),
        by_class=[_funnel_row(fault, records) for fault in _fault_classes(records)],
        diagnosis_patterns=dict(DIAGNOSIS_PATTERNS),
    )


def loop_table(records: Sequence[EpisodeRecord]) -> LoopTable:
    """The loop detector's findings, one row per episode that looped or repeated an intent twice."""
    with_stats = [r for r in records if r.loop is not None]
    rows = [
        LoopRow(episode_id=r.episode_id, task_id=r.task_id, faults_configured=list(r.faults_configured),
                faults_enabled=r.faults_enabled, actions=r.loop.actions, state_reads=r.loop.state_reads,
                largest_repeat=r.loop.largest_repeat, loop=r.loop.loop, stop_reason=r.stop_reason,
                outcome=r.outcome, claimed_success=r.claim.success, detector=r.loop.detector)
        for r in with_stats if r.loop is not None and (r.loop.loop or r.loop.largest_repeat >= 2)
    ]
    return LoopTable(
        episodes_with_stats=len(with_stats), episodes_without_stats=len(records) - len(with_stats),
        loop_episodes=sum(1 for r in with_stats if r.loop is not None and r.loop.loop),
        detectors=sorted({r.loop.detector for r in with_stats if r.loop is not None}),
        rows=sorted(rows, key=lambda row: row.episode_id),
    )


def false_completions_with_fault_context(records: Sequence[EpisodeRecord]) -> list[FaultContextFalseCompletion]:
    """Every false completion of an episode where a fault fired, in episode id order."""
    rows = [
        FaultContextFalseCompletion(
            episode_id=r.episode_id, task_id=r.task_id, kind=str(r.false_completion_kind),
            faults_fired=list(dict.fromkeys(r.faults_fired)), firings=len(r.faults_fired),
            claim_message=r.claim.message)
        for r in records if r.outcome == "false_completion" and r.faults_fired
    ]
    return sorted(rows, key=lambda row: row.episode_id)


ANY_FAULT = Mark(text="any fault")


def _funnel_cells(row: RecoveryFunnelRow) -> tuple[Cell, ...]:
    return (ANY_FAULT if row.fault_class is None else row.fault_class, row.attempted, row.exposed,
            row.verified_after_exposure, *proportion_cells(row.recovered_over_exposed),
            proportion_cells(row.diagnosis_over_exposed)[0],
            proportion_cells(row.control_verified_success_rate)[0] if row.controls else "no controls")


def fault_blocks(exposure: Exposure, funnel: RecoveryFunnel,
                 completions: Sequence[FaultContextFalseCompletion]) -> list[Block]:
    """The site-fault figures: exposure, the recovery funnel, the diagnosis patterns met, and the false completions
    after a fault fired."""
    shown = [r for r in funnel.by_class if r.attempted or r.exposed]
    patterns = [(r.fault_class, funnel.diagnosis_patterns[r.fault_class]) for r in shown
                if r.fault_class in funnel.diagnosis_patterns]
    blocks: list[Block] = [
        Table(id="exposure", title="Fault exposure",
              columns=columns("fault class", "configured", "fired", "fired / configured", "Wilson", "firings"),
              rows=(*((f.fault_class, f.configured, f.fired, *proportion_cells(f.fired_over_configured), f.firings)
                      for f in exposure.by_class if f.configured or f.fired),
                    (ANY_FAULT, exposure.configured_any, exposure.fired_any,
                     *proportion_cells(exposure.fired_over_configured), sum(r.firings for r in exposure.by_class))),
              caption=("configured = injection enabled and the class configured; fired = the class fired at least "
                       f"once. Configured is not exposed. Matched controls (injection disabled): {exposure.controls}."
                       + (f" {exposure.fired_without_configured} episode(s) fired a class not configured."
                          if exposure.fired_without_configured else ""))),
        Table(id="recovery-funnel", title="Recovery funnel",
              columns=columns("fault class", "attempted", "exposed", "verified after exposure", "verified / exposed",
                              "Wilson", "explicit diagnosis", "matched controls verified"),
              rows=tuple(_funnel_cells(r) for r in [funnel.total, *shown]),
              caption=("attempted -> exposed (fault fired) -> verified success after exposure. Explicit diagnosis "
                       "(the final claim message names the fault) is beside the funnel, not a step of it. Controls: "
                       "episodes with injection disabled of the exposed episodes' tasks; matched on task, not a "
                       "causal estimate of the fault's effect.")),
    ]
    if patterns:
        blocks.append(Table(id="diagnosis-patterns", title="Diagnosis patterns",
                            columns=columns("fault class", "pattern (case-insensitive)", labels=2),
                            rows=tuple(patterns)))
    if not completions:
        blocks.append(Paragraph(text="False completions after a fault fired: none."))
    else:
        blocks.append(Table(
            id="fault-false-completions", title="False completions after a fault fired",
            columns=(*columns("episode", "kind", "faults fired", "firings"),
                     Column(header="claim message", align="left")),
            rows=tuple((i.episode_id, i.kind, ", ".join(i.faults_fired), i.firings, i.claim_message)
                       for i in completions)))
    return blocks
