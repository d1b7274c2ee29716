"""The server's JSON API under /api: the catalog, reserved subsets, experiment locks, runs (launch, cancel, resume,
progress as server-sent events), reports, episodes and comparisons. Every route calls the service layer; every
refusal is a `ServiceError` the app turns into a 4xx with its message (computerops/server/app.py)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from computerops.runs.bundle import MANIFEST, BundleError, RunDirectory, being_written
from computerops.runs.config import EndpointConfig
from computerops.server.index import IndexedEpisode, IndexedRun, endpoint_label
from computerops.server.jobs import JobSpec, JobState
from computerops.server.launching import (
    EndpointUnreachable,
    Execution,
    LaunchExperiment,
    LaunchRun,
    check_key_variables,
    run_request,
)
from computerops.server.names import EPISODE_NAME, checked_name, inside
from computerops.server.progress import RunProgress, run_progress
from computerops.server.state import ServerState
from computerops.service import reading
from computerops.service.episode_view import EpisodeView, episode_view
from computerops.service.errors import ServiceError
from computerops.service.launch import check_experiment, plan_run


class Refusal(BaseModel):
    """Every refusal of the API: what is wrong, in one line for a person (never a framework's error list)."""

    detail: str


REFUSALS: dict[int | str, dict[str, Any]] = {status: {"model": Refusal, "description": why} for status, why in (
    (401, "the server was started with a token and the request did not carry it"),
    (403, "a changing request from another site, or a request for a host name that is not loopback"),
    (404, "the request names no run, episode, file, subset or lock"),
    (405, "the path takes other methods (listed in `Allow`)"),
    (409, "the request collides with a run that exists or is running"),
    (422, "the request does not validate or cannot be carried out as given: nothing was started"),
)}
"""The refusals every route may answer, as app.py and the middlewares write them."""

router = APIRouter(prefix="/api", responses=REFUSALS)


class EventStream(StreamingResponse):
    """Server-sent events (so the OpenAPI schema says `text/event-stream`, not JSON)."""

    media_type = "text/event-stream"


def json_refusals_of_streams(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every refusal of an event-stream route documented as the JSON it is (FastAPI gives a route's
    every response its response class's media type)."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            for status, response in operation.get("responses", {}).items():
                content = response.get("content", {})
                if status != "200" and "text/event-stream" in content:
                    response["content"] = {"application/json": content["text/event-stream"]}
    return schema

POLL_S = 0.5
"""How often the event stream looks at a run's directory."""


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


class CatalogTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    site: str
    family: str
    difficulty: str
    title: str
    sha256: str


class RunDetail(BaseModel):
    """A run as the index holds it, with the job of this server that writes it, if any."""

    run: IndexedRun
    job: JobState | None


class ReserveSubset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    count: int = Field(ge=1, le=10_000)
    seed: int = Field(ge=0, le=2**63 - 1)


class Resume(Execution):
    model_config = ConfigDict(extra="forbid")


@router.get("/catalog")
def catalog(site: str | None = None, family: str | None = None) -> list[CatalogTask]:
    """Every catalog task with its content hash; filtered by site and family."""
    from tasks import load_catalog
    return [CatalogTask(id=t.id, site=t.spec.site, family=t.spec.family, difficulty=t.spec.difficulty,
                        title=t.spec.title, sha256=t.sha256)
            for t in load_catalog().values()
            if (site is None or t.spec.site == site) and (family is None or t.spec.family == family)]


@router.get("/subsets")
def subsets(request: Request) -> list[dict[str, Any]]:
    """The reserved subsets of this server: name, count, seed and lock."""
    from computerops.catalog.subsets import SubsetError, load_subset
    listed: list[dict[str, Any]] = []
    for path in sorted(state_of(request).settings.subsets.glob("*.json")):
        try:
            subset = load_subset(path)
        except SubsetError as exc:
            listed.append({"name": path.stem, "problem": str(exc)})
            continue
        listed.append({"name": path.stem, "count": subset.count, "seed": subset.seed,
                       "lock_sha256": subset.lock_sha256})
    return listed


@router.post("/subsets", status_code=201)
def reserve(body: ReserveSubset, request: Request) -> dict[str, Any]:
    """Draw and hash-lock a subset of the catalog (`computerops subset reserve`)."""
    path = inside(state_of(request).settings.subsets, f"{checked_name(body.name, 'subset')}.json", "subset")
    if path.exists():
        raise ServiceError(f"a subset named {body.name!r} exists; a reserved subset is never overwritten", "conflict")
    subset = reading.reserve(body.count, body.seed, path)
    return {"name": body.name, **subset.model_dump(mode="json")}


@router.get("/subsets/{name}")
def subset(name: str, request: Request) -> dict[str, Any]:
    """A reserved subset's lock: its tasks and their hashes."""
    path = inside(state_of(request).settings.subsets, f"{checked_name(name, 'subset')}.json", "subset")
    if not path.is_file():
        raise ServiceError(f"no reserved subset named {name!r}", "not_found")
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ServiceError(f"{path.name} is not a reserved subset file: {exc}", "conflict") from exc
    return data


@router.get("/locks")
def locks(request: Request) -> list[str]:
    """The experiment locks this server can run (files in its locks folder, `experiment freeze --out`)."""
    return sorted(p.stem for p in state_of(request).settings.locks.glob("*.json"))


@router.get("/runs")
def runs(request: Request) -> list[IndexedRun]:
    """Every run in the runs folder, newest first (launched here or by the CLI)."""
    return state_of(request).runs()


@router.post("/runs", status_code=202)
def launch(body: LaunchRun, request: Request) -> RunDetail:
    """Check a run's settings and start it in a worker process; refused with nothing started on bad input."""
    state = state_of(request)
    out = state.run_path(checked_name(body.run_id, "run"))
    if state.jobs.running(body.run_id):
        raise ServiceError(f"run {body.run_id} is already running", "conflict")
    taken(out, body.run_id)
    # Before anything is planned or probed: no variable the operator did not allow is ever read.
    check_key_variables([("api_key_env", body.api_key_env), ("fallback_api_key_env", body.fallback_api_key_env)],
                        state.settings)
    service_request = run_request(body, state.settings)
    executor = body.executor_choice(state.settings)
    planned = plan_run(service_request, out)
    check_key_variables(planned.config.endpoint, state.settings)
    if (endpoint := planned.config.endpoint).kind == "openai" and endpoint.base_url is not None:
        try:
            state.probe(endpoint.base_url, os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None)
        except EndpointUnreachable:
            # A dead primary with a fallback to answer for it: the run goes on (it says so), if the fallback answers.
            if endpoint.fallback is None or endpoint.fallback.base_url is None:
                raise
            state.probe(endpoint.fallback.base_url, endpoint.fallback.api_key() or None)
    job = state.jobs.start(JobSpec(kind="run", run_id=body.run_id, runs=str(state.settings.runs.resolve()),
                                   request=service_request, concurrency=body.concurrency, trace=body.trace,
                                   executor=executor))
    placeholder = _placeholder(body.run_id, len(planned.config.episodes), planned.config.endpoint)
    return RunDetail(run=state.launched(placeholder), job=job)


@router.post("/experiments/runs", status_code=202)
def launch_experiment(body: LaunchExperiment, request: Request) -> RunDetail:
    """Run a frozen experiment's lock in a worker process; refused when its inputs changed since the freeze."""
    from computerops.experiment.lock import read_lock
    state = state_of(request)
    out = state.run_path(checked_name(body.run_id, "run"))
    lock = inside(state.settings.locks, f"{checked_name(body.lock, 'lock')}.json", "lock")
    if state.jobs.running(body.run_id):
        raise ServiceError(f"run {body.run_id} is already running", "conflict")
    taken(out, body.run_id)
    executor = body.executor_choice(state.settings)
    if not lock.is_file():
        raise ServiceError(f"no experiment lock named {body.lock!r} (the runs page lists this server's locks)",
                           "not_found")
    check_experiment(lock, out)
    check_key_variables(read_lock(lock).inputs.endpoint, state.settings)  # a lock names its endpoint's key too
    job = state.jobs.start(JobSpec(kind="experiment", run_id=body.run_id, runs=str(state.settings.runs.resolve()),
                                   lock=str(lock.resolve()), concurrency=body.concurrency, executor=executor))
    return RunDetail(run=state.launched(_placeholder(body.run_id, 0, None)), job=job)


def taken(out: Path, run_id: str) -> None:
    """Refuse a new run under a name the runs folder already holds, in the form's words (never the server's path
    or a CLI option)."""
    try:
        RunDirectory.ensure_new(out)
    except BundleError:
        raise ServiceError(f"a run named {run_id} already exists: choose another run_id (or resume that run)",
                           "conflict") from None


def _placeholder(run_id: str, planned: int, endpoint: EndpointConfig | None) -> IndexedRun:
    """A launched run before its worker has written its manifest (an experiment's plan is the worker's to read)."""
    return IndexedRun(run_id=run_id, path=run_id, status="starting", problem=None, planned=planned, admitted=0,
                      verified=0, self_reported=0, false_completions=0, infrastructure_failures=0,
                      scripted=endpoint is not None and endpoint.scripted,
                      endpoint="" if endpoint is None else endpoint_label(endpoint), subset_lock=None,
                      verified_by_verify=False, updated=0.0)


@router.get("/runs/{run_id}")
def run(run_id: str, request: Request) -> RunDetail:
    state = state_of(request)
    return RunDetail(run=state.indexed(run_id), job=state.jobs.state(run_id))


@router.post("/runs/{run_id}/cancel")
async def cancel(run_id: str, request: Request) -> JobState:
    """Interrupt this server's job of the run (as Ctrl-C: the run stays resumable)."""
    state = state_of(request)
    checked_name(run_id, "run")
    return await to_thread.run_sync(state.jobs.cancel, run_id)


@router.post("/runs/{run_id}/resume", status_code=202)
def resume(run_id: str, body: Resume, request: Request) -> RunDetail:
    """Continue an interrupted run in a worker process with the settings of its manifest."""
    from computerops.service.launch import plan_resume
    state = state_of(request)
    bundle = state.bundle(run_id)
    if state.jobs.running(run_id) or being_written(bundle.root):
        raise ServiceError(f"run {run_id} is being written now", "conflict")
    if bundle.completeness().complete:
        raise ServiceError(f"run {run_id} is complete: nothing to resume", "conflict")
    executor = body.executor_choice(state.settings)
    check_key_variables(bundle.manifest().config.endpoint, state.settings)
    plan_resume(bundle.root)
    job = state.jobs.start(JobSpec(kind="resume", run_id=run_id, runs=str(state.settings.runs.resolve()),
                                   concurrency=body.concurrency, executor=executor))
    return RunDetail(run=state.indexed(run_id), job=job)


@router.post("/runs/{run_id}/verify", status_code=202)
def verify(run_id: str, request: Request) -> RunDetail:
    """`computerops verify` on the run in a worker process: every file against its checksum, every verdict re-judged,
    every episode replayed; on PASS the run's evidence level E2 is recorded (the run page shows it)."""
    state = state_of(request)
    bundle = state.bundle(run_id)
    if state.jobs.running(run_id) or being_written(bundle.root):
        raise ServiceError(f"run {run_id} is being written now: verify it when it ends", "conflict")
    job = state.jobs.start(JobSpec(kind="verify", run_id=run_id, runs=str(state.settings.runs.resolve())))
    return RunDetail(run=state.indexed(run_id), job=job)


@router.get("/runs/{run_id}/progress")
def progress(run_id: str, request: Request) -> RunProgress:
    """Where the run stands: planned, started and admitted episodes (read from its directory, lock-free)."""
    return _progress(state_of(request), run_id)


def _progress(state: ServerState, run_id: str) -> RunProgress:
    path = state.run_path(run_id)
    if not (path / MANIFEST).is_file():
        try:
            launched = state.indexed(run_id)
        except ServiceError:
            launched = None
        if launched is not None and launched.status == "starting":  # its worker is on its way: nothing started yet
            return RunProgress(run_id=run_id, planned=launched.planned, started=[], admitted=[], being_written=False,
                               sealed=False)
        if not (path / MANIFEST).is_file():  # the worker may have placed the run between the two looks (CI: a 404
            raise ServiceError(f"no run named {run_id!r}", "not_found")  # to a client that had been polling it)
    try:
        return run_progress(path)
    except ValueError as exc:
        raise ServiceError(str(exc), "conflict") from exc


@router.get("/runs/{run_id}/events", response_class=EventStream,
            responses={200: {"description": "`started`, `admitted`, `progress`, `end` and `error` events",
                             "content": {"text/event-stream": {"schema": {"type": "string"}}}}})
async def events(run_id: str, request: Request) -> StreamingResponse:
    """Server-sent events of the run: `started` and `admitted` per episode (with its outcome), `progress` after
    each change, `end` when no process writes the run any more."""
    state = state_of(request)
    state.indexed(run_id)  # 404 for no run; a run launched a moment ago is followed while its manifest is on its way
    return EventStream(_event_stream(state, run_id, request), headers={"Cache-Control": "no-store"})


async def _event_stream(state: ServerState, run_id: str, request: Request) -> AsyncIterator[str]:
    started: set[str] = set()
    admitted = 0
    waited = 0.0
    while not await request.is_disconnected():
        # Asked before the run is read: a run no process wrote before this read is read whole, so `end` below never
        # comes before the last episode's `admitted` (asked after, a writer finishing in between would be missed).
        path = state.run_path(run_id)
        active = state.jobs.running(run_id) or await to_thread.run_sync(being_written, path)
        try:
            now = await to_thread.run_sync(_progress, state, run_id)
        except ServiceError as exc:
            if state.jobs.running(run_id) and waited < 60:  # launched: its manifest is on its way
                waited += POLL_S
                await asyncio.sleep(POLL_S)
                continue
            yield _event("error", {"message": exc.message})
            return
        changed = False
        for episode in now.started:
            if episode not in started:
                started.add(episode)
                changed = True
                yield _event("started", {"episode_id": episode})
        for record in now.admitted[admitted:]:
            changed = True
            yield _event("admitted", record.model_dump(mode="json"))
        admitted = len(now.admitted)
        if changed:
            yield _event("progress", {"planned": now.planned, "started": len(now.started),
                                      "admitted": len({a.episode_id for a in now.admitted})})
        if not active:
            job = state.jobs.state(run_id)
            yield _event("end", {"sealed": now.sealed, "exit_code": None if job is None else job.exit_code,
                                 "admitted": len({a.episode_id for a in now.admitted}), "planned": now.planned})
            return
        await asyncio.sleep(POLL_S)


def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"


@router.get("/runs/{run_id}/report")
def report(run_id: str, request: Request) -> dict[str, Any]:
    """The run's report as `computerops report --json` prints it (`computerops.report/3`)."""
    from computerops.report.run import report_json
    result: dict[str, Any] = report_json(reading.run_report_of(state_of(request).bundle(run_id)))
    return result


@router.get("/runs/{run_id}/experiment")
def experiment(run_id: str, request: Request) -> dict[str, Any]:
    """An experiment run's analysis with its evidence level, as `experiment report --json` prints it."""
    result = reading.experiment_result(state_of(request).bundle(run_id))
    return {**result.analysis.model_dump(mode="json"), "evidence_level": result.level}


@router.get("/runs/{run_id}/episodes")
def episodes(run_id: str, request: Request, outcome: str | None = None, site: str | None = None,
             false_completion_kind: str | None = None, fault_fired: str | None = None) -> list[IndexedEpisode]:
    """The run's admitted episodes in plan order, filtered by outcome, site, false-completion kind, fault fired."""
    state = state_of(request)
    state.indexed(run_id)
    return state.index.episodes(run_id, outcome=outcome, site=site, false_completion_kind=false_completion_kind,
                                fault_fired=fault_fired)


@router.get("/runs/{run_id}/episodes/{episode_id}")
def episode(run_id: str, episode_id: str, request: Request) -> EpisodeView:
    """One episode step by step: what the model saw and replied, the operations each action caused, the verdict's
    checks and the replay receipt."""
    bundle = state_of(request).bundle(run_id)
    # An episode folder (or the episodes folder) that links elsewhere is none of the run's.
    inside(inside(bundle.root, "episodes", "folder"), episode_id, "episode", EPISODE_NAME)
    return episode_view(bundle, episode_id)


@router.get("/runs/{run_id}/episodes/{episode_id}/files/{name}")
def evidence_file(run_id: str, episode_id: str, name: str, request: Request) -> FileResponse:
    """One evidence file of an episode (only the names the episode view lists for download)."""
    view = episode(run_id, episode_id, request)
    if name not in view.downloads.files:
        raise ServiceError(f"{name!r} is not an evidence file of {episode_id}", "not_found")
    bundle = state_of(request).bundle(run_id)
    path = inside(bundle.episode_dir(episode_id), name, "file")
    return FileResponse(path, filename=f"{episode_id}-{name}")


@router.get("/compare")
def compare(request: Request, a: Annotated[str, Query()], b: Annotated[str, Query()]) -> dict[str, Any]:
    """Two runs task by task: which episodes changed outcome and why (`computerops compare A B --json`)."""
    state = state_of(request)
    comparison = reading.compare(state.bundle(a).root, state.bundle(b).root)
    result: dict[str, Any] = comparison.model_dump(mode="json")
    return result


