"""The E3 quality gate: each item checked by code from the run's raw evidence and listed pass/fail.

Only a passing gate records evidence level E3 for the experiment, scoped to its tasks, model and configuration;
otherwise the level stays E2 (the run passed `computerops verify`) or E1 (observed executions with provenance).
Unknown facts (a real model's artifact hash nobody supplied) stay unknown and fail their item; nothing is guessed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, ConfigDict

from computerops.experiment.collect import ExperimentRun
from computerops.experiment.rows import ExperimentEpisode

EvidenceLevel = Literal["E1", "E2", "E3"]

GATE_ITEMS = (
    "complete captures",
    "matched pairs",
    "fixed model and code hashes",
    "treatment exposure",
    "replay PASS",
    "lock unchanged",
)
"""The gate's items, in the order they are checked and listed."""


class GateItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    passed: bool
    detail: str
    """What was checked, with the count, or the first thing that failed."""


class Gate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    items: list[GateItem]
    passed: bool
    scope: str
    """What an E3 level is limited to: these tasks, this model, this configuration."""


def _first(problems: list[str], total: int, what: str) -> tuple[bool, str]:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return False, problems[0] + more
    return True, f"{total} {what}"


def _captures(run: ExperimentRun) -> tuple[bool, str]:
    completeness = run.bundle.completeness()
    problems = [] if completeness.complete else [completeness.describe()]
    for record in run.records:
        problems += run.bundle.integrity_problems(record)
        transcript = run.transcripts.get(record.episode_id)
        if transcript is None:
            problems.append(f"{record.episode_id}: no transcript")
        elif not transcript.steps:
            problems.append(f"{record.episode_id}: the transcript holds no model call")
    return _first(problems, len(run.records), "episodes captured whole: transcript, operations, journal, state, "
                                               "verdict, each matching its recorded sha256")


def _pairs(run: ExperimentRun) -> tuple[bool, str]:
    by_pair: dict[str, list[ExperimentEpisode]] = defaultdict(list)
    for row in run.rows:
        if row.pair is not None:
            by_pair[row.pair].append(row)
    planned_pairs = {p.pair for p in run.plan if p.pair is not None}
    if not planned_pairs:
        return False, "the experiment has no matched pairs (one arm only)"
    records = {r.episode_id: r for r in run.records}
    planned = {p.episode_id: p for p in run.plan}
    problems = [f"pair {pair}: {len(by_pair.get(pair, []))} of 2 episodes admitted"
                for pair in sorted(planned_pairs) if len(by_pair.get(pair, [])) != 2]
    for pair, rows in sorted(by_pair.items()):
        if len(rows) != 2:
            continue
        a, b = sorted(rows, key=lambda r: r.arm)
        pa, pb = planned[a.episode_id], planned[b.episode_id]
        same = {
            "task": (a.task_id, b.task_id), "task sha256": (records[a.episode_id].task_sha256,
                                                            records[b.episode_id].task_sha256),
            "cell": (a.cell, b.cell), "model": (a.model, b.model), "seed": (a.seed, b.seed),
            "repetition": (a.repetition, b.repetition), "apps": (pa.apps, pb.apps),
            "treatment faults": (pa.fault_rules, pb.fault_rules), "fault rate": (pa.fault_rate, pb.fault_rate),
        }
        if {a.arm, b.arm} != {"control", "treatment"}:
            problems.append(f"pair {pair}: arms {a.arm} and {b.arm}")
        problems += [f"pair {pair}: {name} differs ({x!r} and {y!r})" for name, (x, y) in same.items() if x != y]
        ta, tb = run.transcripts.get(a.episode_id), run.transcripts.get(b.episode_id)
        if ta is None or tb is None or not ta.steps or not tb.steps:
            problems.append(f"pair {pair}: a first prompt is not on record")
        elif ta.steps[0].call.request_sha256 != tb.steps[0].call.request_sha256:
            problems.append(f"pair {pair}: first prompts differ (request sha256 {ta.steps[0].call.request_sha256[:12]}"
                            f" and {tb.steps[0].call.request_sha256[:12]})")
    return _first(problems, len(planned_pairs), "pairs matched: one control and one treatment, same task, cell, "
                                                "model, seed and configuration, identical first prompts")


def _hashes(run: ExperimentRun) -> tuple[bool, str]:
    manifest = run.bundle.manifest()
    lock = run.lock.inputs
    problems = []
    if manifest.code_sha256 != lock.code_sha256:
        changed = sorted(k for k in set(manifest.code_sha256) | set(lock.code_sha256)
                         if manifest.code_sha256.get(k) != lock.code_sha256.get(k))
        problems.append(f"the run's code differs from the frozen code: {', '.join(changed)}")
    if manifest.protocol_sha256 != lock.protocol_sha256:
        problems.append("the run's prompts or tool schemas differ from the frozen ones")
    endpoint = manifest.config.endpoint
    if not endpoint.scripted and endpoint.artifact_sha256 is None:
        problems.append("the model's artifact sha256 is unknown (give --artifact-sha256 at freeze; it is never "
                        "guessed)")
    claimed = {endpoint.model_for(p.policy) for p in run.plan}
    for record in run.records:
        seen = set(record.models_seen)
        if record.outcome != "infrastructure_failure" and not seen <= claimed | {record.endpoint}:
            problems.append(f"{record.episode_id}: the endpoint answered as {sorted(seen)}, not {sorted(claimed)}")
    what = ("scripted policies (their code is the adapter's, hashed)" if endpoint.scripted
            else f"model artifact {endpoint.artifact_sha256}")
    return _first(problems, len(manifest.code_sha256), f"packages' code and the protocol as frozen; {what}")


def _exposure(run: ExperimentRun) -> tuple[bool, str]:
    treatment = [r for r in run.rows if r.arm == "treatment" and not r.infrastructure]
    if not treatment:
        return False, "no treatment episode was admitted"
    problems = [f"{r.episode_id}: configured {', '.join(r.faults_configured) or 'no fault'}, none fired"
                for r in treatment if not r.exposed]
    return _first(problems, len(treatment), "treatment episodes met a fault that actually fired")


def _replays(run: ExperimentRun) -> tuple[bool, str]:
    problems = [f"{r.episode_id}: replay {r.replay}" for r in run.records if r.replay != "PASS"]
    return _first(problems, len(run.records), "recorded-action replays PASS")


def _lock(run: ExperimentRun) -> tuple[bool, str]:
    manifest = run.bundle.manifest()
    problems = []
    if run.lock.computed_lock() != run.lock.lock_sha256:
        problems.append("the lock was edited after the freeze")
    tasks = {t.id: t.sha256 for t in manifest.tasks}
    problems += [f"task {task_id}: sha256 {tasks.get(task_id, 'absent')[:12]} in the run, {sha[:12]} frozen"
                 for task_id, sha in run.lock.inputs.tasks.items() if tasks.get(task_id) != sha]
    if manifest.config.endpoint != run.lock.inputs.endpoint:
        problems.append("the run's endpoint configuration is not the frozen one")
    if manifest.config.experiment is None or manifest.config.experiment.lock_sha256 != run.lock.lock_sha256:
        problems.append("the run names another lock")
    return _first(problems, len(run.lock.inputs.tasks), "tasks, the endpoint and the plan as frozen, the lock sealed")


def evaluate_gate(run: ExperimentRun) -> Gate:
    """Every gate item, from the run directory alone (so `computerops verify` recomputes it exactly)."""
    checks = [_captures(run), _pairs(run), _hashes(run), _exposure(run), _replays(run), _lock(run)]
    items = [GateItem(name=name, passed=ok, detail=detail)
             for name, (ok, detail) in zip(GATE_ITEMS, checks, strict=True)]
    spec = run.lock.spec
    models = sorted({r.model for r in run.rows})
    scope = (f"experiment {spec.id} v{spec.version}: its {len(run.lock.task_ids)} tasks, model "
             f"{', '.join(models) or 'none'}, this configuration (lock {run.lock.lock_sha256[:12]})")
    return Gate(items=items, passed=all(i.passed for i in items), scope=scope)


def evidence_level(gate: Gate | None, *, verified: bool) -> EvidenceLevel:
    """E3 when the experiment's gate passed and the run passed `computerops verify`; E2 when it verified; else E1."""
    if not verified:
        return "E1"
    return "E3" if gate is not None and gate.passed else "E2"
