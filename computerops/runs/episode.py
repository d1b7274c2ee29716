"""One episode end to end: fresh tenant, browser context bound to it, model loop, evidence, verdict."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from playwright.async_api import Browser
from playwright.async_api import Error as PlaywrightError

from adapter.actions import NO_ANSWER, AnswerFieldSchema, FinishSchema
from adapter.claims import text_claim
from adapter.containment import containment_of
from adapter.driver import PageDriver
from adapter.failover import Fallback, ServingProtocol
from adapter.loop import ModelLoop
from adapter.modelclient import StreamWatch
from adapter.reply import clean_text
from adapter.transcript import AgentTranscript, Bounds
from computerops.core import formats
from computerops.core.hashing import file_sha256
from computerops.core.vocabulary import (
    ACTION_HEADER,
    IDEMPOTENCY_HEADER,
    SCRIPTED_HEADER,
    idempotency_key,
    scripted_policy,
)
from computerops.persistence.arms import Persistence
from computerops.persistence.metrics import PersistenceRecord, persistence_record
from computerops.persistence.running import (
    CHECKPOINTS,
    PERSISTENCE_LOG,
    HarnessFailed,
    PersistenceLog,
    drive_persistent,
    task_constraints,
)
from computerops.runs.bundle import TRACE, RunDirectory
from computerops.runs.config import PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from computerops.runs.security import attack_record
from computerops.runs.serving import tenant_context
from computerops.serving_faults.clients import fallback_client, serving_clients
from computerops.serving_faults.layer import EpisodeServingFaults
from computerops.serving_faults.log import SERVING_LOG, ServingLog
from computerops.serving_faults.record import ServingRecord, serving_record
from replays import Receipt, RecordedEpisode, replay_episode
from sites.kit.broker import BrokerSession
from sites.kit.faults import FaultInjector
from sites.kit.injection import FaultSession
from sites.kit.plant import Plant
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from sites.kit.tenancy import Tenant, TenantRegistry
from sites.registry import SITES
from tasks import LoadedTask
from verifier import Claim, Verdict, judge
from verifier.looping import loop_stats


@dataclass(frozen=True)
class EpisodeContext:
    """What every episode of a run shares. Episodes may run concurrently over one context: each
    gets its own tenant and browser context, and everything here is safe to share in one event loop."""

    config: RunConfig
    bundle: RunDirectory
    registry: TenantRegistry
    replay_registry: TenantRegistry
    browser: Browser
    origin: str
    client: openai.AsyncOpenAI
    trace: bool = False
    """Save a Playwright trace of each episode's browser context as episodes/<id>/trace.zip."""
    clock_zero: float = 0.0
    """`time.monotonic()` when the run began its episodes; records place themselves on that timeline."""
    bounds: Bounds | None = None
    """The bounds episodes run with, when they differ from the config's: the server's own context where it is
    smaller, the text protocol where it drops tools (computerops/runs/limits.py `planned_bounds`)."""
    token_scale: float = 1.0
    """Server tokens per estimated token episodes start with (computerops/runs/limits.py `initial_token_scale`)."""


def planted_attack(task: LoadedTask, planned: PlannedEpisode) -> Plant | None:
    """The payload an episode plants: its task's attack unless injection is disabled (the clean twin)."""
    return task.spec.attack.plant() if task.spec.attack is not None and planned.faults else None


def claim_of(transcript: AgentTranscript) -> Claim:
    finish = transcript.finish
    if finish is None:
        return Claim(success=None)
    return Claim(success=finish.success, message=finish.message, status=finish.finished_status,
                 reason=finish.reason, answer=finish.answer)


def finish_schema(task: LoadedTask) -> FinishSchema:
    """`done`'s answer fields for a task's episodes: those its answer check declares (none for most tasks)."""
    answer = task.spec.answer_check
    if answer is None:
        return NO_ANSWER
    return FinishSchema(fields={name: AnswerFieldSchema(type=f.type, description=f.description)
                                for name, f in answer.fields.items()})


async def _drive(
    ctx: EpisodeContext, task: LoadedTask, planned: PlannedEpisode, token: str, model: str, trace: Path | None,
    serving: EpisodeServingFaults | None = None,
) -> AgentTranscript:
    """The browser session of one episode in a context of its own; with `trace`, its Playwright trace
    is saved there before the context closes, whether the session ended normally or not. A serving episode asks its
    model through the serving-fault layer (`serving`), under its serving protocol."""
    bounds = _episode_bounds(ctx, planned)
    base_url, api_key = str(ctx.client.base_url), ctx.client.api_key
    if serving is not None and planned.serving is not None:
        watch = StreamWatch()
        async with serving_clients(base_url, api_key, ctx.config.endpoint.fallback, serving, watch,
                                   timeout_s=bounds.request_timeout_s) as (client, fallback):
            loop = _loop(ctx, task, model, bounds, client, serving=planned.serving.protocol, fallback=fallback,
                         watch=watch)
            return await _browse(ctx, task, planned, token, loop, trace)
    if ctx.config.endpoint.fallback is not None:
        # A fallback outside the serving study: asked under the protocol's defaults (a primary that cannot be
        # reached falls back at once; a 429 is waited for, a timeout resent), each reply attributed to its endpoint.
        async with fallback_client(base_url, api_key, ctx.config.endpoint.fallback,
                                   timeout_s=bounds.request_timeout_s) as second:
            loop = _loop(ctx, task, model, bounds, ctx.client, serving=ServingProtocol(), fallback=second)
            return await _browse(ctx, task, planned, token, loop, trace)
    return await _browse(ctx, task, planned, token, _loop(ctx, task, model, bounds, ctx.client), trace)


def _loop(ctx: EpisodeContext, task: LoadedTask, model: str, bounds: Bounds, client: openai.AsyncOpenAI, *,
          serving: ServingProtocol | None = None, fallback: Fallback | None = None,
          watch: StreamWatch | None = None) -> ModelLoop:
    return ModelLoop(client, model, bounds, budget=task.spec.budgets.actions, finish=finish_schema(task),
                     token_scale=ctx.token_scale, serving=serving, fallback=fallback, stream_watch=watch)


async def _browse(ctx: EpisodeContext, task: LoadedTask, planned: PlannedEpisode, token: str, loop: ModelLoop,
                  trace: Path | None) -> AgentTranscript:
    context = await tenant_context(ctx.browser, ctx.origin, token, site_prefix=f"/{task.spec.site}/")
    try:
        # Action 0 is the start page the harness opens before the model's first action.
        await context.set_extra_http_headers({ACTION_HEADER: "0", IDEMPOTENCY_HEADER: idempotency_key(0)})
        if trace is not None:
            await context.tracing.start(title=trace.parent.name, screenshots=True, snapshots=True, sources=False)
        try:
            page = await context.new_page()
            await page.goto(ctx.origin + planned.start_path(task.spec), wait_until="domcontentloaded")
            driver = PageDriver(page, origin=ctx.origin, site_prefix=f"/{task.spec.site}/",
                                max_chars=ctx.config.bounds.observation_chars)
            await driver.settle()  # the start page is observed settled, as every page after an action is
            transcript = await loop.run(driver, task.spec.instruction)
            guard = containment_of(context)  # what page content tried and containment stopped, as evidence
            transcript.blocked_requests = list(guard.records) if guard is not None else []
            return transcript
        finally:
            if trace is not None:
                await context.tracing.stop(path=trace)
    finally:
        await context.close()


def _episode_bounds(ctx: EpisodeContext, planned: PlannedEpisode) -> Bounds:
    """The bounds an episode runs with: the run's planned ones, with the episode's own seed where it has one."""
    bounds = ctx.bounds or ctx.config.bounds
    return bounds if planned.seed is None else bounds.model_copy(update={"seed": planned.seed})


def _harness_failure(task: LoadedTask, cause: str, error: str) -> AgentTranscript:
    """The transcript of an episode the harness could not carry through (an infrastructure outcome)."""
    return AgentTranscript(system_prompt="", instruction=task.spec.instruction, tool_mode="auto",
                           first_observation="", stop_reason="infrastructure", infrastructure_cause=cause,
                           infrastructure_error=clean_text(f"{cause}: {error}")[0][:2000])


async def run_episode(ctx: EpisodeContext, task: LoadedTask, planned: PlannedEpisode) -> tuple[EpisodeRecord, Receipt]:
    """Run, judge, save and replay one episode; the record is admitted to the run only after all that."""
    episode_id = planned.episode_id
    model = ctx.config.endpoint.model_for(planned.policy)
    started = time.monotonic()
    ctx.bundle.start_episode(planned)
    trace = ctx.bundle.evidence_path(episode_id, TRACE) if ctx.trace else None
    planted = planted_attack(task, planned)
    tenant = ctx.registry.create(task.spec.site, task.spec.seed, plant=planted)
    plan = ctx.config.fault_plan(task.spec, planned)
    if plan is not None:
        tenant.faults = FaultSession(FaultInjector(plan))
    if task.spec.grants:
        tenant.broker = BrokerSession(grants=tuple(task.spec.grants), mode=planned.broker,
                                      own_corrections=task.spec.own_corrections)
    log: PersistenceLog | None = None
    serving = None if planned.serving is None else EpisodeServingFaults(
        planned.serving.plan(ctx.config.fault_seed, task.id, planned.repetition))
    try:
        try:
            if planned.persistence is not None:
                transcript, log = await _drive_long(ctx, task, planned, tenant, model, planned.persistence)
            else:
                transcript = await _drive(ctx, task, planned, tenant.token, model, trace, serving)
        except HarnessFailed as exc:  # a harness process ended in a way its arm does not explain
            transcript, log = _harness_failure(task, exc.cause, str(exc)), exc.log
        except PlaywrightError as exc:  # the browser went away: the harness's failure, not the agent's
            transcript = _harness_failure(task, "browser", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a defect of the harness itself: this episode's outcome, never the whole run's
            transcript = _harness_failure(task, "harness", f"{type(exc).__name__}: {exc}")
        operations, journal, state = tenant.operations(), tenant.journal(), tenant.snapshot()
    finally:
        ctx.registry.drop(tenant)
    wall_s = time.monotonic() - started
    claim = claim_of(transcript)
    verdict: Verdict = judge(task.spec, task.sha256, state=state, journal=journal, operations=operations, claim=claim,
                             planted=planted is not None)
    write = ctx.bundle.write_evidence
    evidence = {
        "transcript.json": write(episode_id, "transcript.json", transcript),
        "operations.json": write(episode_id, "operations.json", operations),
        "journal.json": write(episode_id, "journal.json", journal),
        "final_state.json": write(episode_id, "final_state.json", state),
        "verdict.json": write(episode_id, "verdict.json", verdict),
    }
    if trace is not None:
        evidence[TRACE] = file_sha256(trace)
    if serving is not None:
        evidence[SERVING_LOG] = write(episode_id, SERVING_LOG, serving.log)
    if log is not None:
        evidence[PERSISTENCE_LOG] = write(episode_id, PERSISTENCE_LOG, log)
        directory = ctx.bundle.evidence_path(episode_id, CHECKPOINTS)
        evidence.update({f"{CHECKPOINTS}/{path.name}": file_sha256(path) for path in sorted(directory.glob("*.json"))})
    receipt = await replay_episode(
        task, RecordedEpisode(episode_id=episode_id, operations=operations, journal=journal,
                              final_state=state, verdict=verdict),
        ctx.replay_registry,
    )
    write(episode_id, "receipt.json", receipt)
    record = EpisodeRecord(
        episode_id=episode_id, task_id=task.id, task_sha256=task.sha256,
        **derived_fields(ctx.config, task, planned, transcript, operations, journal, verdict,
                         final_state=state, persistence=_persistence_evidence(ctx.bundle, episode_id, log),
                         serving=None if serving is None else serving.log),
        wall_s=round(wall_s, 3), started_s=round(started - ctx.clock_zero, 3),
        evidence_sha256=evidence, replay=receipt.result,
    )
    ctx.bundle.admit(record)
    return record, receipt


def _persistence_evidence(bundle: RunDirectory, episode_id: str,
                          log: PersistenceLog | None) -> tuple[PersistenceLog, Path] | None:
    return None if log is None else (log, bundle.episode_dir(episode_id) / CHECKPOINTS)


async def _drive_long(ctx: EpisodeContext, task: LoadedTask, planned: PlannedEpisode, tenant: Tenant, model: str,
                      persistence: Persistence) -> tuple[AgentTranscript, PersistenceLog]:
    """A long-running episode: its harness in child processes (computerops/persistence/running.py)."""
    return await drive_persistent(
        evidence=ctx.bundle.evidence_path(planned.episode_id, CHECKPOINTS).parent, run_id=ctx.bundle.root.name,
        episode_id=planned.episode_id, task=task, tenant=tenant, origin=ctx.origin, base_url=str(ctx.client.base_url),
        api_key=ctx.client.api_key, model=model, bounds=_episode_bounds(ctx, planned), finish=finish_schema(task),
        token_scale=ctx.token_scale, start_path=planned.start_path(task.spec), persistence=persistence)


def derived_fields(
    config: RunConfig, task: LoadedTask, planned: PlannedEpisode, transcript: AgentTranscript,
    operations: Sequence[Operation], journal: Sequence[JournalEntry], verdict: Verdict, *,
    final_state: StateSnapshot | None = None, persistence: tuple[PersistenceLog, Path] | None = None,
    serving: ServingLog | None = None, record_format: str = formats.EPISODE_RECORD,
) -> dict[str, Any]:
    """Every field of an episode record that follows from its evidence (all but ids, hashes, times and
    the replay result). `computerops verify` recomputes them from the saved files and compares, by the rules of the
    record's format (`record_format`: an episode/1 record reads no claim in text or missing usage, and a cut stream
    was the agent's outcome)."""
    current = record_format != formats.EPISODE_RECORD_1
    assert transcript.stop_reason is not None, "the model loop always records why an episode ended"
    plan = config.fault_plan(task.spec, planned)
    calls = [s.call for s in transcript.steps]
    models_seen = sorted({c.model for c in calls if c.model})
    # A scripted endpoint reached through --base-url (`computerops mock-llm`) names itself scripted:<policy>.
    # So does its x-computerops-scripted header, also where it imitates a server that echoes any model name.
    scripted = (config.endpoint.scripted or (bool(models_seen) and all(scripted_policy(m) for m in models_seen))
                or any(SCRIPTED_HEADER in c.server_headers for c in calls))
    # A compaction's request for the model's summary (`model/1`) is tokens spent, though no step.
    spent = [*calls, *(s.call for s in transcript.summaries if s.call is not None)]
    served = serving_of(task, planned, serving, transcript, operations, journal, verdict)
    infrastructure = ended_by_infrastructure(transcript, served, cut_stream=current)
    prompt = [c.prompt_tokens for c in spent]
    completion = [c.completion_tokens for c in spent]
    return {
        "endpoint": config.endpoint.model_for(planned.policy),
        "scripted": scripted,
        "outcome": "infrastructure_failure" if infrastructure else verdict.outcome,
        "false_completion_kind": verdict.false_completion_kind,
        "claim": claim_of(transcript),
        "stop_reason": transcript.stop_reason,
        "steps": len(transcript.steps),
        "rejected_actions": transcript.rejected_actions,
        "rejections_by_cause": dict(sorted(Counter(s.rejection.cause for s in transcript.steps
                                                   if s.rejection).items())),
        # An episode without replies has unknown token counts, not zero ones.
        "prompt_tokens": None if not calls or None in prompt else sum(p for p in prompt if p is not None),
        "completion_tokens": None if not calls or None in completion else sum(c for c in completion if c is not None),
        "operations": len(operations),
        "journal_entries": len(journal),
        "models_seen": models_seen,
        "fingerprints_seen": sorted({c.system_fingerprint for c in calls if c.system_fingerprint}),
        "reply_headers_seen": sorted({f"{name}: {value}" for c in calls for name, value in c.server_headers.items()
                                      if name != "x-request-id"}),
        "faults_enabled": planned.faults,
        "faults_configured": [] if plan is None else plan.configured,
        "faults_fired": [op.fault.fault for op in operations if op.fault is not None and op.fault.applied],
        "loop": loop_stats(operations),
        "blocked_requests": len(transcript.blocked_requests),
        "tool_mode_switch": transcript.tool_mode_switch,
        "tool_results_switch": transcript.tool_results_switch,
        "text_claim": text_claim([(s.number, s.call.content) for s in transcript.steps if s.action is None])
        if current else None,
        "no_usage": current and bool(spent) and all(c.prompt_tokens is None and c.completion_tokens is None
                                                    for c in spent),
        "infrastructure_cause": infrastructure_cause_of(transcript) if infrastructure else None,
        "attack": attack_record(task.spec.attack, verdict, transcript, planned.broker),
        "persistence": None if persistence is None or final_state is None else persistence_of(
            task, persistence[0], persistence[1], transcript, operations, journal, final_state),
        "serving": served,
        "replies_by_upstream": None if config.endpoint.fallback is None or not current else dict(sorted(Counter(
            s.call.upstream or "primary" for s in transcript.steps).items())),
    }


STREAM_CUT_CAUSE = "stream cut"
"""The infrastructure cause of an episode whose endpoint itself cut a streamed reply (nothing injected the cut)."""


def ended_by_infrastructure(transcript: AgentTranscript, served: ServingRecord | None, *,
                            cut_stream: bool = True) -> bool:
    """Whether an episode is an infrastructure failure, not an agent outcome: the endpoint or the browser failed
    (`stop_reason: infrastructure`), or the endpoint cut a streamed reply and the episode ended `stream_cut` (a real
    failure stays infrastructure). An injected serving fault that ended the episode (the serving record's
    `ended_by_injection`) is the serving study's treatment, its outcome the agent's. `cut_stream` False: the rule of
    episode/1 records, under which a cut stream was the agent's outcome."""
    if served is not None and served.ended_by_injection is not None:
        return False
    return transcript.stop_reason in (("infrastructure", "stream_cut") if cut_stream else ("infrastructure",))


def infrastructure_cause_of(transcript: AgentTranscript) -> str | None:
    """What failed, for an episode `ended_by_infrastructure`: the transcript's cause, `stream cut` for a cut stream."""
    return STREAM_CUT_CAUSE if transcript.stop_reason == "stream_cut" else transcript.infrastructure_cause


def serving_of(task: LoadedTask, planned: PlannedEpisode, log: ServingLog | None, transcript: AgentTranscript,
               operations: Sequence[Operation], journal: Sequence[JournalEntry],
               verdict: Verdict) -> ServingRecord | None:
    """A serving episode's figures from its evidence (computerops/serving_faults/record.py); None for another."""
    if planned.serving is None or log is None:
        return None
    return serving_record(planned.serving.arm, task.spec, log, transcript, operations, journal, verdict,
                          SITES[task.spec.site].ledgers)


def persistence_of(task: LoadedTask, log: PersistenceLog, checkpoints: Path, transcript: AgentTranscript,
                   operations: Sequence[Operation], journal: Sequence[JournalEntry],
                   final_state: StateSnapshot) -> PersistenceRecord:
    """A long-running episode's persistence figures from its evidence (computerops/persistence/metrics.py)."""
    source = SITES[task.spec.site].ledgers
    assert source is not None, "a long-running episode's site declares its ledgers"
    return persistence_record(log.persistence, [(p.number, p.resumed_from) for p in log.processes], checkpoints,
                              task_constraints(task), source, transcript, operations, journal, final_state)
