"""One episode end to end: fresh tenant, browser context bound to it, model loop, evidence, verdict."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from playwright.async_api import Browser
from playwright.async_api import Error as PlaywrightError
from pydantic import JsonValue

from adapter.actions import NO_ANSWER, AnswerFieldSchema, FinishSchema
from adapter.claims import text_claim
from adapter.containment import containment_of
from adapter.driver import PageDriver
from adapter.failover import ServingProtocol
from adapter.loop import ModelLoop
from adapter.reply import clean_text
from adapter.transcript import AgentTranscript, Bounds
from computerops.core import formats
from computerops.core.hashing import file_sha256
from computerops.core.vocabulary import (
    ACTION_HEADER,
    IDEMPOTENCY_HEADER,
    READ_METHODS,
    SCRIPTED_HEADER,
    idempotency_key,
    scripted_policy,
)
from computerops.runs.bundle import TRACE, RunDirectory
from computerops.runs.config import PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from computerops.runs.serving import tenant_context
from computerops.serving_faults.clients import fallback_client
from computerops.studies.base import (
    DriveRequest,
    Endpoint,
    EpisodeEnd,
    EpisodeFacts,
    EpisodeSetup,
    ModelAccess,
    Study,
    StudyEpisode,
    StudyFailed,
)
from computerops.studies.registry import registered
from computerops.studies.rules import RUN_RECORD_FIELDS, evidence_problem, study_parts
from replays import Receipt, RecordedEpisode, replay_episode
from sites.kit.plant import Plant
from sites.kit.records import JournalEntry, Operation, StateSnapshot
from sites.kit.tenancy import Tenant, TenantRegistry
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


def planted(setup: EpisodeSetup, studies: tuple[Study, ...] | None = None) -> Plant | None:
    """The payload an episode's tenant is created with: the one a study plants (the security study: its task's attack
    unless injection is disabled, the clean twin); two studies planting into one episode is a design error."""
    plants = [(study.name, plant) for study in (registered() if studies is None else studies)
              if (plant := study.plant(setup)) is not None]
    if len(plants) > 1:
        raise ValueError(f"episode {setup.planned.episode_id}: more than one study plants into its tenant: "
                         f"{', '.join(name for name, _ in plants)}")
    return plants[0][1] if plants else None


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


async def _drive(ctx: EpisodeContext, setup: EpisodeSetup, tenant: Tenant, model: str, trace: Path | None,
                 parts: list[tuple[Study, StudyEpisode]]) -> AgentTranscript:
    """The episode driven: by a study that drives it itself (a long-running episode's child processes), else by the
    model loop in a browser context of its own, asking the model through the clients a study supplies (a serving
    episode's fault layer), else the run's client with its fallback where one is configured; with `trace`, its
    Playwright trace is saved there before the context closes, whether the session ended normally or not."""
    task, planned = setup.task, setup.planned
    endpoint = Endpoint(base_url=str(ctx.client.base_url), api_key=ctx.client.api_key, model=model,
                        bounds=_episode_bounds(ctx, planned), token_scale=ctx.token_scale)
    directory = ctx.bundle.episode_dir(planned.episode_id)
    directory.mkdir(parents=True, exist_ok=True)
    request = DriveRequest(setup=setup, tenant=tenant, origin=ctx.origin, run_id=ctx.bundle.root.name,
                           evidence_dir=directory, endpoint=endpoint, finish=finish_schema(task))
    for _, part in parts:
        driven = await part.drive(request)
        if driven is not None:
            return driven
    accesses = [(study.name, offered) for study, part in parts
                if (offered := part.model_access(endpoint, setup)) is not None]
    if len(accesses) > 1:
        raise ValueError(f"episode {planned.episode_id}: more than one study supplies the model's clients: "
                         f"{', '.join(name for name, _ in accesses)}")
    if accesses:
        async with accesses[0][1] as access:
            return await _browse(ctx, task, planned, tenant.token, _loop(ctx, task, endpoint, access), trace)
    if ctx.config.endpoint.fallback is not None:
        # A fallback outside the serving study: asked under the protocol's defaults (a primary that cannot be
        # reached falls back at once; a 429 is waited for, a timeout resent), each reply attributed to its endpoint.
        async with fallback_client(endpoint.base_url, endpoint.api_key, ctx.config.endpoint.fallback,
                                   timeout_s=endpoint.bounds.request_timeout_s) as second:
            access = ModelAccess(client=ctx.client, serving=ServingProtocol(), fallback=second)
            return await _browse(ctx, task, planned, tenant.token, _loop(ctx, task, endpoint, access), trace)
    loop = _loop(ctx, task, endpoint, ModelAccess(client=ctx.client))
    return await _browse(ctx, task, planned, tenant.token, loop, trace)


def _loop(ctx: EpisodeContext, task: LoadedTask, endpoint: Endpoint, access: ModelAccess) -> ModelLoop:
    return ModelLoop(access.client, endpoint.model, endpoint.bounds, budget=task.spec.budgets.actions,
                     finish=finish_schema(task), token_scale=ctx.token_scale, serving=access.serving,
                     fallback=access.fallback, stream_watch=access.watch)


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
            driver = PageDriver(page, origin=ctx.origin, site_prefix=f"/{task.spec.site}/",
                                max_chars=ctx.config.bounds.observation_chars)
            # settled, as every page after an action is; its dialogs are the first observation's
            await driver.start(ctx.origin + planned.start_path(task.spec))
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
    """Run, judge, save and replay one episode; the record is admitted to the run only after all that. Each study of
    the registry (computerops/studies/registry.py) plants into and prepares the tenant, takes part in the episode
    where it is one of its, and writes its evidence."""
    episode_id = planned.episode_id
    model = ctx.config.endpoint.model_for(planned.policy)
    started = time.monotonic()
    ctx.bundle.start_episode(planned)
    trace = ctx.bundle.evidence_path(episode_id, TRACE) if ctx.trace else None
    setup, studies = EpisodeSetup(ctx.config, task, planned), registered()
    plant = planted(setup, studies)
    tenant = ctx.registry.create(task.spec.site, task.spec.seed, plant=plant)
    parts: list[tuple[Study, StudyEpisode]] = []
    try:
        try:
            for study in studies:
                study.prepare(setup, tenant)
            parts = [(study, part) for study in studies if (part := study.begin(setup)) is not None]
            transcript = await _drive(ctx, setup, tenant, model, trace, parts)
        except StudyFailed as exc:  # a study's harness ended in a way its design does not explain
            transcript = _harness_failure(task, exc.cause, str(exc))
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
                             planted=plant is not None)
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
    directory, loaded = ctx.bundle.episode_dir(episode_id), {}
    ended = EpisodeEnd(transcript=transcript, operations=operations, journal=journal, final_state=state)
    writers = dict.fromkeys(evidence, "the run")
    for study, part in parts:
        files = part.evidence(directory, ended)
        for name in [*files.written, *files.hashed]:
            # A study that names the run's file, another study's or one outside the episode is a defect of the
            # study (the same in every episode of it): the run stops, saying so, before it writes anything of it.
            if (problem := evidence_problem(study, name, writers)) is not None:
                raise ValueError(f"episode {episode_id}: {problem}")
            writers[name] = study.name
        evidence.update({name: write(episode_id, name, value) for name, value in files.written.items()})
        evidence.update({name: file_sha256(ctx.bundle.evidence_path(episode_id, name)) for name in files.hashed})
        if files.loaded is not None:
            loaded[study.name] = files.loaded
    receipt = await replay_episode(
        task, RecordedEpisode(episode_id=episode_id, operations=operations, journal=journal,
                              final_state=state, verdict=verdict),
        ctx.replay_registry,
    )
    write(episode_id, "receipt.json", receipt)
    record = EpisodeRecord(
        episode_id=episode_id, task_id=task.id, task_sha256=task.sha256,
        **derived_fields(ctx.config, task, planned, transcript, operations, journal, verdict,
                         final_state=state, evidence=loaded),
        wall_s=round(wall_s, 3), started_s=round(started - ctx.clock_zero, 3),
        evidence_sha256=evidence, replay=receipt.result,
    )
    ctx.bundle.admit(record)
    return record, receipt


def page_writes(operations: Sequence[Operation]) -> int:
    """Writes among an episode's operations that no action of the model's made: the page's own script's, sent with
    no action number (adapter/initiative.py), in a method that writes."""
    return sum(1 for op in operations if op.action is None and op.method.upper() not in READ_METHODS)


def derived_fields(
    config: RunConfig, task: LoadedTask, planned: PlannedEpisode, transcript: AgentTranscript,
    operations: Sequence[Operation], journal: Sequence[JournalEntry], verdict: Verdict, *,
    final_state: StateSnapshot | None = None, evidence: Mapping[str, object] | None = None,
    record_format: str = formats.EPISODE_RECORD,
) -> dict[str, Any]:
    """Every field of an episode record that follows from its evidence (all but ids, hashes, times and
    the replay result): the episode's own, and each registered study's (`evidence`: each study's loaded evidence by
    its name). `computerops verify` recomputes them from the saved files and compares, by the rules of the
    record's format (`record_format`: an episode/1 record reads no claim in text or missing usage, and a cut stream
    was the agent's outcome)."""
    current = record_format != formats.EPISODE_RECORD_1
    assert transcript.stop_reason is not None, "the model loop always records why an episode ended"
    calls = [s.call for s in transcript.steps]
    models_seen = sorted({c.model for c in calls if c.model})
    # A scripted endpoint reached through --base-url (`computerops mock-llm`) names itself scripted:<policy>.
    # So does its x-computerops-scripted header, also where it imitates a server that echoes any model name.
    scripted = (config.endpoint.scripted or (bool(models_seen) and all(scripted_policy(m) for m in models_seen))
                or any(SCRIPTED_HEADER in c.server_headers for c in calls))
    # A compaction's request for the model's summary (`model/1`) is tokens spent, though no step.
    spent = [*calls, *(s.call for s in transcript.summaries if s.call is not None)]
    facts = EpisodeFacts(setup=EpisodeSetup(config, task, planned), transcript=transcript, operations=operations,
                         journal=journal, verdict=verdict, final_state=final_state,
                         evidence=evidence or {})
    studies = registered()
    studied, entries = study_fields(facts, studies)
    treatment = any(study.treatment_ended(studied, entries.get(study.name)) for study in studies)
    infrastructure = not treatment and ended_by_infrastructure(transcript, cut_stream=current)
    prompt = [c.prompt_tokens for c in spent]
    completion = [c.completion_tokens for c in spent]
    core = {
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
        "loop": loop_stats(operations),
        "blocked_requests": len(transcript.blocked_requests),
        "page_writes": page_writes(operations),
        "tool_mode_switch": transcript.tool_mode_switch,
        "tool_results_switch": transcript.tool_results_switch,
        "text_claim": text_claim([(s.number, s.call.content) for s in transcript.steps if s.action is None])
        if current else None,
        "no_usage": current and bool(spent) and all(c.prompt_tokens is None and c.completion_tokens is None
                                                    for c in spent),
        "infrastructure_cause": infrastructure_cause_of(transcript) if infrastructure else None,
        "studies": entries or None,
        "replies_by_upstream": None if config.endpoint.fallback is None or not current else dict(sorted(Counter(
            s.call.upstream or "primary" for s in transcript.steps).items())),
    }
    if clash := sorted(set(studied) & set(core)):
        owners = sorted(study.name for study in studies if set(study.owned_fields) & set(clash))
        raise ValueError(f"study {', '.join(owners)} fills {clash}, a field the run fills itself")
    return {**core, **studied}


def study_fields(facts: EpisodeFacts, studies: tuple[Study, ...]) -> tuple[dict[str, Any], dict[str, JsonValue]]:
    """Each registered study's record fields: those of `EpisodeRecord` it owns, and the `studies` entries of the
    others (each under its study's name, where the episode is one of its)."""
    return study_parts(studies, "record", lambda study: study.owned_fields, lambda study: study.record_fields(facts),
                       lambda study: study.record(facts), RUN_RECORD_FIELDS)


STREAM_CUT_CAUSE = "stream cut"
"""The infrastructure cause of an episode whose endpoint itself cut a streamed reply (nothing injected the cut)."""


def ended_by_infrastructure(transcript: AgentTranscript, *, cut_stream: bool = True) -> bool:
    """Whether an episode is an infrastructure failure, not an agent outcome: the endpoint or the browser failed
    (`stop_reason: infrastructure`), or the endpoint cut a streamed reply and the episode ended `stream_cut` (a real
    failure stays infrastructure). An episode a study's own treatment ended (`Study.treatment_ended`: an injected
    serving fault) is not asked: its outcome is the agent's. `cut_stream` False: the rule of episode/1 records, under
    which a cut stream was the agent's outcome."""
    return transcript.stop_reason in (("infrastructure", "stream_cut") if cut_stream else ("infrastructure",))


def infrastructure_cause_of(transcript: AgentTranscript) -> str | None:
    """What failed, for an episode `ended_by_infrastructure`: the transcript's cause, `stream cut` for a cut stream."""
    return STREAM_CUT_CAUSE if transcript.stop_reason == "stream_cut" else transcript.infrastructure_cause
