"""The run configuration: what is frozen into a run's manifest before any model call."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from adapter.scripted.policies import policy_by_name
from adapter.transcript import Bounds
from computerops.core.formats import Versioned
from computerops.core.vocabulary import BrokerMode, scripted_model
from computerops.persistence.arms import Persistence
from computerops.serving_faults.arms import Serving, tool_fault_rules
from sites.kit.faults import FaultClass, FaultPlan, FaultRule
from sites.kit.noise import CLEAN, NoiseArm, NoiseKind
from tasks.task import TaskSpec

RUN_FORMAT: Literal["computerops.run/1"] = "computerops.run/1"


class FallbackEndpoint(BaseModel):
    """The pinned fallback endpoint a serving protocol may ask (adapter/failover.py): a scripted policy served by the
    run's scripted endpoint, or another OpenAI-compatible endpoint and model. Frozen in the manifest with the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> FallbackEndpoint:
        if (self.policy is None) == (self.base_url is None):
            raise ValueError("a fallback endpoint is a scripted policy or a --fallback-base-url with its model")
        if self.base_url is not None and not self.model:
            raise ValueError("a --fallback-base-url needs its --fallback-model")
        if self.base_url is not None and (problem := base_url_problem(self.base_url)):
            raise ValueError(f"--fallback-base-url {self.base_url!r} {problem}")
        if self.policy is not None:
            policy_by_name(self.policy)
        return self

    def api_key(self) -> str:
        """The key a --fallback-base-url is asked with: its environment variable's value ("" when unset), else a
        placeholder (local servers take any)."""
        return os.environ.get(self.api_key_env, "") if self.api_key_env else "not-needed"

    @property
    def label(self) -> str:
        """The model name the fallback is asked for (`scripted:<policy>`, else its model)."""
        return scripted_model(self.policy) if self.policy is not None else str(self.model)


class EndpointConfig(BaseModel):
    """Which model answers, as the operator *claims* it. What the endpoint says is recorded apart."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["scripted", "openai"]
    policies: list[str] = Field(default_factory=list)
    """Scripted policy names (kind scripted only); every task runs once per policy."""
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the API key; the key itself is never recorded."""
    artifact_sha256: str | None = None
    """SHA-256 of the model file, when the operator supplies it; never guessed."""
    fallback: FallbackEndpoint | None = Field(default=None, exclude_if=lambda value: value is None)
    """The pinned fallback the serving study's protocol may ask; None (left out) without one."""

    @model_validator(mode="after")
    def _complete(self) -> EndpointConfig:
        if self.kind == "scripted" and not self.policies:
            raise ValueError("a scripted endpoint needs at least one policy")
        if self.fallback is not None and (self.fallback.policy is not None) != (self.kind == "scripted"):
            raise ValueError("a scripted endpoint's fallback is a scripted policy (--fallback-policy); a --base-url "
                             "endpoint's is another --fallback-base-url and --fallback-model")
        if self.kind == "openai" and not (self.base_url and self.model):
            raise ValueError("an OpenAI-compatible endpoint needs --base-url and --model")
        return self

    def model_for(self, policy: str | None) -> str:
        """The model name sent with each request, and the label results carry: `scripted:<policy>`
        for the scripted endpoint, else the claimed model name."""
        return scripted_model(str(policy)) if self.kind == "scripted" else str(self.model)

    @property
    def scripted(self) -> bool:
        return self.kind == "scripted"


def base_url_problem(base_url: str) -> str | None:
    """Why a --base-url cannot be an OpenAI-compatible endpoint's address, or None: it must be http(s) with a host
    and a valid port, e.g. http://127.0.0.1:1234/v1."""
    try:
        parts = urlsplit(base_url)
        port = parts.port  # raises for a port that is not a number from 0 to 65535
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "names no host"
    if port == 0:
        return "has port 0"
    if parts.query or parts.fragment:
        return "must not carry a query or fragment"
    return None


def parse_endpoint(
    endpoint: str | None, *, base_url: str | None, model: str | None, api_key_env: str | None,
    artifact_sha256: str | None = None,
) -> EndpointConfig:
    """From CLI options: `--endpoint scripted:POLICY`, or `--base-url URL --model NAME`."""
    if endpoint and base_url:
        raise ValueError("give either --endpoint scripted:POLICY or --base-url/--model, not both")
    if endpoint:
        kind, _, names = endpoint.partition(":")
        policies = [p.strip() for p in names.split(",") if p.strip()]
        if kind != "scripted" or not policies:
            raise ValueError(f"--endpoint must look like scripted:POLICY[,POLICY...], got {endpoint!r}")
        for policy in policies:
            try:
                policy_by_name(policy)
            except ValueError as exc:
                raise ValueError(f"--endpoint: {exc}") from exc
        if repeated := sorted({policy for policy in policies if policies.count(policy) > 1}):
            raise ValueError(f"--endpoint names a policy more than once: {', '.join(repeated)} (`--repeat K` runs "
                             "each policy K times)")
        return EndpointConfig(kind="scripted", policies=policies)
    if not base_url:
        raise ValueError("no endpoint: give --endpoint scripted:POLICY or --base-url URL --model NAME")
    problem = base_url_problem(base_url)
    if problem:
        raise ValueError(f"--base-url {base_url!r} {problem}")
    return EndpointConfig(kind="openai", base_url=base_url.rstrip("/"), model=model, api_key_env=api_key_env,
                          artifact_sha256=artifact_sha256)


def fallback_endpoint(policy: str | None, base_url: str | None, model: str | None,
                      api_key_env: str | None) -> FallbackEndpoint | None:
    """From CLI options: `--fallback-policy P`, or `--fallback-base-url URL --fallback-model NAME`; None for neither."""
    if policy is None and base_url is None:
        if model is not None or api_key_env is not None:
            raise ValueError("--fallback-model and --fallback-api-key-env go with --fallback-base-url")
        return None
    if policy is not None and base_url is not None:
        raise ValueError("give --fallback-policy or --fallback-base-url, not both")
    return FallbackEndpoint(policy=policy, base_url=None if base_url is None else base_url.rstrip("/"), model=model,
                            api_key_env=api_key_env)


def time_bounds(request_timeout_s: float, wall_clock_s: float) -> dict[str, float]:
    """The bounds' time fields from `--request-timeout` and `--wall-clock`; ValueError when the request timeout is
    longer than the wall clock (no reply could take that long: the wall clock would always cut it first)."""
    if request_timeout_s > wall_clock_s:
        raise ValueError(f"the request timeout ({request_timeout_s:g} s, --request-timeout) is longer than the "
                         f"episode's wall clock ({wall_clock_s:g} s, --wall-clock): no reply could take that long; "
                         "give a longer wall clock or a shorter request timeout")
    return {"request_timeout_s": request_timeout_s, "wall_clock_s": wall_clock_s}


class PlannedEpisode(BaseModel):
    """One episode the run will attempt, fixed before any model call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    episode_id: str
    task_id: str
    policy: str | None = None
    """The scripted policy, for a scripted endpoint."""
    repetition: int = Field(default=1, ge=1)
    """Which of the run's K trials of this (task, policy) this is, from 1."""
    faults: bool = True
    """False for a matched control: the same task and policy with fault injection disabled."""
    # An experiment's episodes say where they stand in its design (None/defaults in a plain run); the runner
    # reads only the overrides below, the analysis reads all of them (computerops/experiment/).
    cell: str | None = None
    """The experiment cell: its factor levels, e.g. `tools=3,order=A,fault_rate=0.2,model=scripted:oracle`."""
    arm: Literal["control", "treatment"] | None = None
    """The experiment arm: control = injection disabled (`faults` False), all else identical; in a persistence
    experiment control = the `uninterrupted` episode and treatment = the cell's persistence arm (`persistence`), with
    `faults` True in both (the treatment is the compaction or the interruption, not an injection)."""
    pair: str | None = None
    """Episodes sharing a pair id are matched: one task, cell and repetition, one per arm."""
    apps: list[str] | None = None
    """The invoices portal's listed apps (the tool ladder), replacing the `apps=` query of the task's start path."""
    fault_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    """This episode's fault rate, in place of the run's."""
    fault_classes: list[FaultClass] | None = None
    """The classes this episode's rate draws for, in place of the run's."""
    fault_rules: list[FaultRule] = Field(default_factory=list)
    """Fault rules this episode adds to its task's own (an experiment's treatment of a task without faults)."""
    fault_draw: int | None = None
    """The repetition number fault decisions by rate are drawn for, when not `repetition` (identical reruns of the
    noise floor share one)."""
    seed: int | None = None
    """The seed sent with every model request of this episode, in place of the bounds' seed."""
    broker_mode: BrokerMode | None = Field(default=None, exclude_if=lambda value: value is None)
    """How the broker treats a request no grant of the task allows (sites/kit/broker.py): blocked (`enforcing`, and
    when None) or only recorded (`observing`). Only tasks with grants have a broker."""

    serving: Serving | None = Field(default=None, exclude_if=lambda value: value is None)
    """A serving-study episode: its serving arm, the serving faults between its harness and the endpoint, and its
    serving protocol (computerops/serving_faults/); None asks the endpoint as ever."""
    persistence: Persistence | None = Field(default=None, exclude_if=lambda value: value is None)
    """A long-running episode: its harness runs in child processes, checkpointed, restarted or interrupted as its arm
    says (computerops/persistence/); None runs it in the run's own process, as ever."""
    studies: dict[str, JsonValue] | None = Field(default=None, exclude_if=lambda value: value is None)
    """What an experiment's cell gives this episode of each study added through the study seam after the fields above
    (`Study.arm_entry`, computerops/studies/base.py), under its name; the study reads it in `begin`. Left out of plans
    without one (every plan of the studies above)."""

    @model_validator(mode="after")
    def _one_study(self) -> PlannedEpisode:
        if self.serving is not None and self.persistence is not None:
            raise ValueError(f"episode {self.episode_id}: a serving episode runs in the run's own process; it cannot "
                             "be long-running too (give serving or persistence)")
        return self

    @property
    def broker(self) -> BrokerMode:
        return self.broker_mode or "enforcing"

    def start_path(self, task: TaskSpec) -> str:
        """Where the episode starts: the task's start path, with the portal's `apps` query replaced when set."""
        if self.apps is None:
            return task.start_path
        path, _, query = task.start_path.partition("?")
        kept = [part for part in query.split("&") if part and not part.startswith("apps=")]
        return path + "?" + "&".join([*kept, "apps=" + ",".join(self.apps)])


def plan_episodes(
    task_ids: list[str], endpoint: EndpointConfig, extra: list[tuple[str, str]] | None = None, *, repeat: int = 1,
    matched_controls: list[str] | None = None, broker_mode: BrokerMode | None = None,
    persistence: Sequence[Persistence] = (),
    serving: Sequence[Serving] = (),
    noise: Sequence[NoiseKind] = (),
) -> list[PlannedEpisode]:
    """Every task `repeat` times per policy (per real endpoint), then any extra (task, policy) pairs once.

    An episode id is derived from its place in the plan, its task, its policy (when the run has
    several) and its repetition (when `repeat` > 1), e.g. `004-helpdesk.solve-ticket--oracle--r2`;
    the same inputs always give the same ids, so a resumed run finds its episodes again. Each task in
    `matched_controls` also gets, after its own, the same episodes with injection disabled (`--control`). Every
    episode's broker runs in `broker_mode` (None: enforcing). With `persistence`, every trial runs once per given
    persistence (its arm), long-running (ids end `--<arm>`; the arms of one trial share a pair id). With `serving`,
    every trial runs once per serving arm (ids end `--<arm>`; the arms of one trial share a pair id). With `noise`,
    every trial runs clean and once per noise kind (ids end `--noise-<arm>`; the arms of one trial share a pair id),
    the clean control first in odd trials and last in even ones (docs/noise.md).
    """
    if repeat < 1:
        raise ValueError(f"--repeat must be at least 1, got {repeat}")
    policies: list[str | None] = list(endpoint.policies) if endpoint.scripted else [None]
    trials = [(task_id, policy, k) for task_id in task_ids for policy in policies for k in range(1, repeat + 1)]
    trials += [(task_id, policy, 1) for task_id, policy in extra or []]
    controlled = set(matched_controls or [])
    plan: list[PlannedEpisode] = []
    for trial, (task_id, policy, k) in enumerate(trials):
        suffix = f"--{policy.replace(':', '-')}" if policy and (len(policies) > 1 or extra) else ""
        suffix += f"--r{k}" if repeat > 1 else ""
        for arm in persistence:
            plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task_id}{suffix}--{arm.arm}",
                                       task_id=task_id, policy=policy, repetition=k, broker_mode=broker_mode,
                                       pair=f"{task_id}{suffix}", persistence=arm))
        for arm_serving in serving:
            plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task_id}{suffix}--{arm_serving.arm}",
                                       task_id=task_id, policy=policy, repetition=k, broker_mode=broker_mode,
                                       pair=f"{task_id}{suffix}", serving=arm_serving))
        if noise:
            arms: list[NoiseArm] = [CLEAN, *noise] if trial % 2 == 0 else [*noise, CLEAN]
            for noise_arm in arms:
                plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task_id}{suffix}--noise-{noise_arm}",
                                           task_id=task_id, policy=policy, repetition=k, broker_mode=broker_mode,
                                           pair=f"{task_id}{suffix}", studies={"page_noise": noise_arm}))
        if persistence or serving or noise:
            continue
        plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task_id}{suffix}", task_id=task_id,
                                   policy=policy, repetition=k, broker_mode=broker_mode))
        if task_id in controlled:
            plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task_id}{suffix}--control", task_id=task_id,
                                       policy=policy, repetition=k, faults=False, broker_mode=broker_mode))
    return plan


class SubsetRef(BaseModel):
    """The reserved subset a run's tasks came from (`run --tasks FILE`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    lock_sha256: str
    seed: int
    count: int


class ExperimentRef(BaseModel):
    """The experiment lock a run was made from (`computerops experiment run` / `noise-floor`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: int
    lock_sha256: str
    series: Literal["experiment", "noise_floor"] = "experiment"
    """The experiment's own episodes, or the noise floor's reruns of one of its cells."""


class RunConfig(Versioned):
    """Everything that defines a run's conditions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.run/1"] = RUN_FORMAT
    run_id: str
    tasks: list[str] = Field(min_length=1)
    subset: SubsetRef | None = None
    """Set when the tasks are a reserved subset; the manifest's task hashes match the subset's."""
    endpoint: EndpointConfig
    episodes: list[PlannedEpisode] = Field(min_length=1)
    bounds: Bounds = Field(default_factory=Bounds)
    repeat: int = Field(default=1, ge=1)
    """Trials per (task, policy): K of pass^k."""
    fault_seed: int = 0
    """The run seed of fault decisions made by rate."""
    fault_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Per-run fault rate over eligible operations (0: only the faults task files configure)."""
    fault_classes: list[FaultClass] = Field(default_factory=list)
    """The classes the rate draws for."""
    experiment: ExperimentRef | None = None
    """Set for an experiment's run: the lock it was made from (copied beside the manifest)."""

    def fault_plan(self, task: TaskSpec, planned: PlannedEpisode) -> FaultPlan | None:
        """The faults of one planned episode: its task's rules and the run's rate; None when it has none."""
        rate = self.fault_rate if planned.fault_rate is None else planned.fault_rate
        classes = self.fault_classes if planned.fault_classes is None else planned.fault_classes
        rules = [*task.faults, *planned.fault_rules]
        if planned.serving is not None:  # the serving arm's tool-side failures
            rules += tool_fault_rules(planned.serving.arm, task.site)
        if not planned.faults or not (rules or rate > 0):
            return None
        draw = planned.repetition if planned.fault_draw is None else planned.fault_draw
        return FaultPlan(run_seed=self.fault_seed, task_id=task.id, repetition=draw, rules=rules,
                         rate=rate, rate_classes=classes)

    @model_validator(mode="after")
    def _distinct_episodes(self) -> RunConfig:
        # Each episode owns episodes/<id>/; two with one id would overwrite each other's evidence.
        repeated = sorted(i for i, n in Counter(p.episode_id for p in self.episodes).items() if n > 1)
        if repeated:
            raise ValueError(f"episode ids must be distinct; repeated: {', '.join(repeated)}")
        return self
