"""What a run directory holds, as pydantic models: manifest and one record per admitted episode."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from adapter.claims import TextClaim
from adapter.serverinfo import ObservedContext, ToolResultsProbe, ToolsProbe
from computerops.core import formats
from computerops.core.clock import utc_stamp
from computerops.core.formats import Versioned
from computerops.core.vocabulary import ExecutorKind, StopReason
from computerops.persistence.metrics import PersistenceRecord
from computerops.runs.config import PlannedEpisode, RunConfig
from computerops.runs.security import AttackRecord
from computerops.serving_faults.record import ServingRecord
from verifier import Claim, FalseCompletionKind, Outcome
from verifier.looping import LoopStats

EpisodeOutcome = Outcome | Literal["infrastructure_failure"]


class TaskRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    sha256: str
    path: str


class ObservedEndpoint(BaseModel):
    """What the endpoint said about itself. Unknown stays None; nothing is guessed."""

    model_config = ConfigDict(extra="forbid")

    models_payload: Any | None = None
    models_error: str | None = None
    models_unreachable: bool = Field(default=False, exclude_if=lambda value: not value)
    """True when GET /models got no connection at all (refused, reset, a name that does not resolve; not a timeout,
    not an HTTP error): with a fallback configured the run goes on, each episode's first request finding the primary
    unreachable and handing the episode to the fallback (adapter/failover.py)."""
    server_headers: dict[str, str] = Field(default_factory=dict)
    context: ObservedContext | None = None
    """The context the server says it serves the model with, and where it said it (adapter/serverinfo.py); None
    when it says nothing (or for the built-in scripted endpoint, which is not asked)."""
    tools: ToolsProbe | None = None
    """What the server did with tool schemas in a probe request; None where not probed (text mode, scripted)."""
    tool_results: ToolResultsProbe | None = None
    """What the server did with a tool message's content in a probe request; None where not probed (text mode,
    scripted, a server whose tools verdict is not `in_prompt`, manifests written before it was probed)."""


class RunExecution(BaseModel):
    """How the run was carried out. Unlike `RunConfig`, none of it is a condition of the results:
    the same config gives the same evidence at any concurrency, with or without traces."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int = Field(default=1, ge=1)
    """Episodes in flight at once (one browser context and one tenant each)."""
    trace: bool = False
    """True when each episode saved a Playwright trace (episodes/<id>/trace.zip)."""
    executor: ExecutorKind = "local"
    """Where episodes ran: `local` (in this process, over one browser) or `ray` (on Ray actors, each with its own
    sites server, browser and scripted endpoint: computerops/runs/ray_executor.py). The evidence is the same."""
    ray_address: str | None = None
    """The Ray cluster joined (`--ray-address`); None for a local Ray instance started in-process, or no Ray."""
    workers: list[str] = Field(default_factory=list)
    """With Ray: each worker as it named itself (actor index, host, node id, pid), in order."""
    nodes: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    """With Ray: the nodes the workers ran on (host and node id), each once; every worker's code, task files and
    versions were the driver's (so `versions` holds for each node)."""


class RunManifest(Versioned):
    """Frozen before the first model call."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["computerops.manifest/2", "computerops.manifest/1"] = formats.MANIFEST

    config: RunConfig
    created_at: str
    scripted: bool
    """True when a scripted policy, not a model, produced every reply."""
    tasks: list[TaskRef]
    code_sha256: dict[str, str]
    """Content hash of each package of ours (sites, adapter, verifier, tasks, replays, computerops)."""
    protocol_sha256: dict[str, str] = Field(default_factory=dict)
    """sha256 of the system prompts and the action (tool) schemas the model is shown; empty in
    manifests written before it existed."""
    versions: dict[str, str | None]
    endpoint_observed: ObservedEndpoint
    fallback_observed: ObservedEndpoint | None = Field(default=None, exclude_if=lambda value: value is None)
    """What the pinned fallback endpoint said of itself (GET /models) before the first model call, when the run has
    one (`EndpointConfig.fallback`); a scripted fallback is the run's scripted endpoint."""
    execution: RunExecution = Field(default_factory=RunExecution)
    """How the episodes were executed; manifests written before it existed read as serial, untraced."""


def verdict_category(outcome: str, kind: str | None) -> str:
    """An outcome as reports name it, with its false-completion kind: `false_completion (state)`."""
    return outcome + (f" ({kind})" if kind else "")


class EpisodeRecord(Versioned):
    """One admitted episode: one line of episodes.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.episode/2", "computerops.episode/1"] = formats.EPISODE_RECORD

    episode_id: str
    task_id: str
    task_sha256: str
    endpoint: str
    scripted: bool
    outcome: EpisodeOutcome
    false_completion_kind: FalseCompletionKind | None
    claim: Claim
    stop_reason: StopReason
    steps: int
    rejected_actions: int
    rejections_by_cause: dict[str, int]
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_s: float
    """Seconds from creating the tenant to the end of the browser session (judging and replay excluded)."""
    started_s: float | None = None
    """Seconds from the moment the run began its episodes to the start of this one (monotonic clock): with
    wall_s, the episode's place on the run's timeline. None in records written before it existed."""
    operations: int
    journal_entries: int
    evidence_sha256: dict[str, str]
    """sha256 of each evidence file of the episode, by file name."""
    replay: Literal["PASS", "FAIL"]
    models_seen: list[str]
    fingerprints_seen: list[str]
    reply_headers_seen: list[str] = Field(default_factory=list)
    """Distinct `name: value` server headers of the replies (`adapter.loop.SERVER_HEADERS` less the per-request
    x-request-id), sorted."""
    faults_enabled: bool = True
    """False for a matched control: the same task with injection disabled."""
    faults_configured: list[str] = Field(default_factory=list)
    """Fault classes configured for the episode (task rules and the run's rate), sorted, each once."""
    faults_fired: list[str] = Field(default_factory=list)
    """Fault classes that fired, in operation order (repeats kept)."""
    loop: LoopStats | None = None
    """None in records written before the loop detector existed."""
    blocked_requests: int = 0
    """Requests of the episode's pages that containment stopped (the transcript lists them): page content trying
    to leave the site. 0 in records written before they were counted."""
    page_writes: int = Field(default=0, exclude_if=lambda value: not value)
    """Writes the episode's pages made of their own script, not an action of the model's (a `fetch` from a timer, a
    form submitted as a page loads; adapter/initiative.py): operations with no action number in a method that
    writes. They are in the operations, the journal and the verdict as any; this counts them apart. Left out when 0
    (and in records written before they were told apart, when every request carried an action number)."""
    tool_mode_switch: str | None = None
    """Why and from which step the episode went over from native tool calls to the text protocol
    (`AgentTranscript.tool_mode_switch`); None when it did not, and in records written before it was copied."""
    tool_results_switch: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """From which step the episode sent observations in user messages because the server's prompt counts showed tool
    results not reaching the model (`AgentTranscript.tool_results_switch`); left out of records without one."""
    attack: AttackRecord | None = Field(default=None, exclude_if=lambda value: value is None)
    """For an attacked task: exposure, hijack, targeted success, the broker's refusals, capability
    (`computerops.runs.security`); left out of other records."""
    persistence: PersistenceRecord | None = Field(default=None, exclude_if=lambda value: value is None)
    """For a long-running episode: its arm, processes, checkpoints, what each resume carried and lost, duplicate
    effects and unfinished work left (`computerops.persistence.metrics`); left out of other records."""
    serving: ServingRecord | None = Field(default=None, exclude_if=lambda value: value is None)
    """A serving-study episode's figures: its policy path, what was injected and what was not, model time and tokens
    per endpoint, and whether the serving contract held (`computerops.serving_faults.record`); left out of others."""
    studies: dict[str, JsonValue] | None = Field(default=None, exclude_if=lambda value: value is None)
    """The record of each study added through the study seam after these fields (computerops/studies/base.py), under
    its name, where the episode is one of its; left out of records without one (every record of the studies above)."""
    replies_by_upstream: dict[str, int] | None = Field(default=None, exclude_if=lambda value: value is None)
    """In a run with a pinned fallback: the model replies each endpoint answered (`primary`, `fallback`; one that
    answered none is left out); None (left out) in runs without one and in records written before it existed."""
    infrastructure_cause: str | None = None
    """What failed in an infrastructure failure (`AgentTranscript.infrastructure_cause`: `HTTP 500`, `timeout`,
    `browser`, ...); None for the agent's outcomes and in records written before causes were recorded."""
    text_claim: TextClaim | None = Field(default=None, exclude_if=lambda value: value is None)
    """A claim of success the model wrote in plain text in a reply without an action ("The task is completed."),
    read fail-closed (`adapter.claims`): never a `done` claim and never a success, counted apart in the report; left
    out of records without one (and of records written before claims in text were read)."""
    no_usage: bool = Field(default=False, exclude_if=lambda value: not value)
    """The episode had model replies and none of them carried usage (prompt or completion tokens): the server sends
    none (llama.cpp's streamed replies), so its tokens are unknown for that reason; left out when False."""


class StartedEpisode(Versioned):
    """episodes/<id>/started.json: the episode began; written before anything else of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.started/1"] = formats.STARTED

    episode: PlannedEpisode


class AdmittedEpisode(Versioned):
    """episodes/<id>/admitted.json: written once the episode's record line is on disk in episodes.jsonl, so a marker
    whose record that file no longer holds shows the file lost a finished episode after the fact (a kill never
    does that: it can only land before the marker)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.admitted/1"] = formats.ADMITTED

    episode_id: str
    record_sha256: str
    """sha256 of the admitted record's canonical JSON (`computerops.core.hashing`), whatever its line's spacing."""


class ResumeEntry(Versioned):
    """One `run --resume` of a run directory: one line of resumes.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.resume/2", "computerops.resume/1"] = formats.RESUME

    resumed_at: str
    admitted_before: int
    """Episodes already admitted when the resume began (they are kept, never re-run)."""
    torn_bytes_removed: int
    """Bytes of an unfinished last line of episodes.jsonl cut off (a record is admitted only once
    its whole line, newline included, is on disk)."""
    set_apart: dict[str, str]
    """Episode id -> where its partial evidence was moved (under interrupted/); the episode is re-run."""
    rerun_infrastructure: list[str] = Field(default_factory=list)
    """Admitted episodes that had failed as infrastructure and this resume runs again (their evidence is among
    `set_apart`; the earlier record stays in episodes.jsonl, superseded)."""
    to_run: int
    endpoint_observed: ObservedEndpoint
    """What the endpoint said about itself at this resume (the manifest keeps the first observation)."""
    execution: RunExecution | None = Field(default=None, exclude_if=lambda value: value is None)
    """How this resume was carried out (the manifest keeps the first run's): on Ray, the workers it started with;
    None in resume/1 lines."""


class WorkerEvent(Versioned):
    """One event of a Ray run's workers after its start (the manifest, or a resume's line of resumes.jsonl, names the
    workers it started with): a worker
    lost, with the cause Ray gave and where its episode's partial attempt went; a replacement started in its place,
    or one that could not be. One line of workers.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.worker_event/1"] = formats.WORKER_EVENT

    at: str = Field(default_factory=lambda: utc_stamp("milliseconds"))
    """When it happened (UTC; milliseconds: a loss and its replacement can fall in one second)."""
    event: Literal["lost", "replaced", "replacement_failed"]
    worker: str
    """The worker as it named itself (actor index, host, node id, pid); for `replacement_failed`, `replacement of
    worker N` (the cause names the actor that did not start)."""
    cause: str | None = None
    """`lost`: Ray's error (its class and first line); `replacement_failed`: why the replacement did not start."""
    episode_id: str | None = None
    """`lost`: the episode it was running, run again on the next free worker."""
    set_apart: str | None = None
    """`lost`: where that episode's partial attempt went (interrupted/<id>/attempt-N)."""
    in_place_of: str | None = None
    """`replaced` and `replacement_failed`: the lost worker."""


class LostWorker(Versioned):
    """episodes/<id>/lost_worker.json, set apart with the attempt it ends (interrupted/<id>/attempt-N/): the Ray
    worker the episode lost mid-attempt and Ray's word for it, written by the driver, so the attempt says why it
    stopped without workers.jsonl beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.lost_worker/1"] = formats.LOST_WORKER

    episode_id: str
    worker: str
    """The worker as it named itself (actor index, host, node id, pid), as the manifest or a `replaced` event of
    workers.jsonl names it."""
    cause: str
    """Ray's error (its class and first line), as the `lost` event of workers.jsonl gives it."""
    at: str = Field(default_factory=lambda: utc_stamp("milliseconds"))
    """When the driver learned of the loss (UTC)."""


class Completeness(BaseModel):
    """How much of a run's plan has an agent outcome: planned, admitted, what is missing and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planned: int
    admitted: int
    """Episodes with a record (infrastructure failures included)."""
    missing: list[str]
    """Planned episodes with no record: never started, or interrupted (not yet resumed)."""
    infrastructure_failures: list[str]
    """Admitted episodes whose latest outcome is an infrastructure failure: to run again by `run --resume`."""
    interrupted_attempts: int
    """Attempts set apart under interrupted/ (interrupted runs and infrastructure failures run again)."""
    resumes: int
    rerun_after_infrastructure: int
    """Records superseded because `run --resume` ran their episode again after an infrastructure failure."""

    @property
    def complete(self) -> bool:
        """Every planned episode has an agent outcome (not an infrastructure failure)."""
        return not self.missing and not self.infrastructure_failures

    def incomplete(self, remedy: str) -> str:
        """What is said of an incomplete run, with what to do about it (`continue it with ...`)."""
        return f"the run is incomplete: {self.describe()}; {remedy}"

    def describe(self) -> str:
        parts = [f"{self.admitted} of {self.planned} planned episodes admitted"]
        if self.missing:
            parts.append(f"{len(self.missing)} missing ({', '.join(self.missing[:5])}"
                         + (", ..." if len(self.missing) > 5 else "") + ")")
        if self.infrastructure_failures:
            parts.append(f"{len(self.infrastructure_failures)} infrastructure failures to run again")
        return ", ".join(parts)
