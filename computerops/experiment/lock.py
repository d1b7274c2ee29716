"""The freeze: every fixed input of an experiment hashed into a lock file before any model call, and the check that
nothing changed since.

A lock holds the experiment file (its bytes' sha256 and its parsed content), every task's content hash, the code
of every package (sites, adapter, verifier, tasks, replays, computerops: `computerops.runs.provenance.code_hashes`), the
prompts and tool schemas the model is shown, the endpoint configuration, the analysis code's own hash (the
estimators and their statistics library's version), and the plan those inputs give: every episode with its cell,
arm, repetition and pair. `lock_sha256` seals the rest. `experiment run` recomputes the inputs and refuses, naming
the first that differs (`computerops.core.difference.first_difference`), as `run --resume` does for a manifest.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from computerops.catalog.subsets import load_subset, subset_tasks
from computerops.core.clock import utc_stamp
from computerops.core.difference import first_difference, first_difference_of
from computerops.core.formats import Versioned
from computerops.core.hashing import canonical_sha256
from computerops.core.problems import said
from computerops.experiment.plan import cells, plan_experiment
from computerops.experiment.spec import ExperimentSpec, ExperimentTask, load_experiment
from computerops.runs.config import EndpointConfig, PlannedEpisode
from computerops.runs.provenance import code_hashes, package_sha256, protocol_hashes
from replays.corpus import CORPUS_ROOT, file_name, load_entry
from tasks import LoadedTask
from tasks.catalog import Catalog
from tasks.templates import instance_id

LOCK_FORMAT: Literal["computerops.experiment_lock/1"] = "computerops.experiment_lock/1"
ANALYSIS_MODULES = ("computerops/experiment", "computerops/core/stats.py")
"""The analysis code whose hash the lock records (the estimators, tests, gate, noise floor and intervals)."""
_ROOT = Path(__file__).resolve().parent.parent.parent


class ExperimentRefused(RuntimeError):
    """An experiment whose lock does not match its inputs now, or that cannot be frozen."""


def analysis_sha256(root: Path = _ROOT) -> str:
    """sha256 over the analysis code (ANALYSIS_MODULES) and the versions of the statistics libraries it calls."""
    digest = hashlib.sha256()
    for name in ANALYSIS_MODULES:
        path = root / name
        digest.update(name.encode() + b"\0")
        if path.is_dir():
            digest.update(bytes.fromhex(package_sha256(name, root)))
        else:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    for library in ("statsmodels", "numpy", "scipy"):
        try:
            version = importlib.metadata.version(library)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{library}={version}\0".encode())
    return digest.hexdigest()


class PlanCounts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cells: int
    tasks: int
    repetitions: int
    arms: int
    episodes: int
    pairs: int


class FrozenInputs(BaseModel):
    """What the results of the experiment depend on; `experiment run` must find every field unchanged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment_sha256: str
    """sha256 of the experiment file's bytes."""
    subset_sha256: str | None = None
    """sha256 of the reserved subset file's bytes, for an experiment with `tasks_file`."""
    tasks: dict[str, str]
    """Task id -> content hash of its file."""
    code_sha256: dict[str, str]
    protocol_sha256: dict[str, str]
    endpoint: EndpointConfig
    analysis_sha256: str


class ExperimentLock(Versioned):
    """The lock file `experiment freeze` writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["computerops.experiment_lock/1"] = LOCK_FORMAT

    frozen_at: str
    experiment_file: str
    """The experiment file's path as given to `freeze` (read again from there by `run`)."""
    spec: ExperimentSpec
    inputs: FrozenInputs
    plan: list[PlannedEpisode] = Field(min_length=1)
    counts: PlanCounts
    lock_sha256: str = ""
    """sha256 of the canonical JSON of every other field; a lock edited after the freeze is refused."""

    def computed_lock(self) -> str:
        return canonical_sha256(self.model_dump(mode="json", exclude={"lock_sha256"}))

    @property
    def task_ids(self) -> list[str]:
        return list(self.inputs.tasks)


def _expanded(entries: list[ExperimentTask], catalog: Mapping[str, LoadedTask], source: Path) -> list[ExperimentTask]:
    """Each entry naming a template with `instances: N` as N entries, its published seeds 1..N in order."""
    templates = catalog.templates if isinstance(catalog, Catalog) else {}
    found: list[ExperimentTask] = []
    for entry in entries:
        if entry.instances is None:
            found.append(entry)
            continue
        template = templates.get(entry.id)
        if template is None:
            raise ExperimentRefused(f"{source}: {entry.id} (with instances: {entry.instances}) is not a template of "
                                    "the catalog")
        if entry.instances > len(template.seeds):
            raise ExperimentRefused(f"{source}: {entry.id} publishes {len(template.seeds)} instances, "
                                    f"{entry.instances} asked for")
        found += [entry.model_copy(update={"id": instance_id(entry.id, seed), "instances": None})
                  for seed in template.seeds[:entry.instances]]
    ids = [e.id for e in found]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ExperimentRefused(f"{source}: tasks named twice: {', '.join(repeated)}")
    return found


def _resolve_tasks(spec: ExperimentSpec, source: Path, catalog: Mapping[str, LoadedTask]
                   ) -> tuple[list[ExperimentTask], str | None]:
    """The experiment's task entries (a subset file's tasks as plain entries) and the subset file's sha256."""
    if spec.tasks is not None:
        entries = _expanded(spec.tasks, catalog, source)
        unknown = [t.id for t in entries if t.id not in catalog]
        if unknown:
            raise ExperimentRefused(f"{source}: tasks not in the catalog: {', '.join(unknown)}")
        return entries, None
    assert spec.tasks_file is not None
    subset_path = source.parent / spec.tasks_file
    try:
        subset = load_subset(subset_path)
        subset_tasks(subset, catalog, subset_path)  # refuses a subset whose tasks changed since the reservation
    except ValueError as exc:
        raise ExperimentRefused(f"{source}: tasks_file: {exc}") from exc
    return [ExperimentTask(id=i) for i in subset.task_ids], hashlib.sha256(subset_path.read_bytes()).hexdigest()


def current_inputs(source: Path, catalog: Mapping[str, LoadedTask], endpoint: EndpointConfig | None = None
                   ) -> tuple[ExperimentSpec, list[ExperimentTask], FrozenInputs]:
    """The experiment at `source` and its inputs as they are now (`endpoint` replaces the file's, e.g. a real model
    named at freeze time, with its own pinned fallback or none)."""
    spec = load_experiment(source)
    if endpoint is not None:
        spec = spec.with_endpoint(endpoint)
    entries, subset_sha = _resolve_tasks(spec, source, catalog)
    inputs = FrozenInputs(
        experiment_sha256=hashlib.sha256(source.read_bytes()).hexdigest(), subset_sha256=subset_sha,
        tasks={t.id: catalog[t.id].sha256 for t in entries}, code_sha256=code_hashes(),
        protocol_sha256=protocol_hashes(), endpoint=spec.endpoint, analysis_sha256=analysis_sha256(),
    )
    return spec, entries, inputs


def check_rules_reach(entries: list[ExperimentTask], catalog: Mapping[str, LoadedTask], corpus: Path = CORPUS_ROOT
                      ) -> None:
    """Refuse a treatment fault rule that no episode solving its task would meet: one whose target matches fewer
    operations of the task's recorded reference solution (the scripted oracle's corpus entry) than its
    `occurrence`. Left alone, such a rule fires nowhere and the gate's exposure item fails only after the run."""
    for index, entry in enumerate(entries):
        if not entry.faults:
            continue
        site = catalog[entry.id].spec.site
        path = corpus / site / entry.id / file_name("scripted:oracle")
        try:
            operations = load_entry(path).operations
        except (OSError, ValueError) as exc:
            raise ExperimentRefused(f"tasks[{index}] ({entry.id}): its fault rules cannot be checked against the "
                                    f"task's reference solution: {path}: {exc} (record it with `computerops corpus "
                                    "record`)") from exc
        for k, rule in enumerate(entry.faults):
            met = sum(1 for op in operations if rule.target.matches(op.method, op.path))
            if met < rule.occurrence:
                raise ExperimentRefused(
                    f"tasks[{index}].faults[{k}] ({entry.id}): {rule.target.method} {rule.target.path} matches {met} "
                    f"operation(s) of the task's reference solution ({path}), fewer than its occurrence "
                    f"{rule.occurrence}: a treatment episode that solves the task would not meet this fault")


def check_ledgers(spec: ExperimentSpec, entries: list[ExperimentTask], catalog: Mapping[str, LoadedTask],
                  source: Path) -> None:
    """Refuse a persistence experiment with a task on a site that keeps no ledgers (`sites/kit/ledgers.py`): its
    checkpoints could carry no approvals, effects or open work, and its interrupted arm could find no effect to
    interrupt after. Names every such task."""
    if not spec.persistent:
        return
    from sites.registry import SITES

    unfit = [f"{e.id} ({catalog[e.id].spec.site})" for e in entries if SITES[catalog[e.id].spec.site].ledgers is None]
    if unfit:
        raise ExperimentRefused(f"{source}: a persistence experiment's tasks must be on sites that keep ledgers "
                                f"(sites/kit/ledgers.py: approvals, effects, open work); these are not: "
                                f"{', '.join(unfit)}")


def check_serving(spec: ExperimentSpec, entries: list[ExperimentTask], catalog: Mapping[str, LoadedTask],
                  source: Path) -> None:
    """Refuse a serving experiment's arms as `run --serving` refuses them (`parse_serving_arms`): a throttle-fallback
    arm without a pinned fallback, a degraded-tool arm on a task whose site names no evidence page."""
    if spec.factors.serving is None:
        return
    from computerops.serving_faults.arms import parse_serving_arms

    try:
        parse_serving_arms(",".join(spec.factors.serving), sorted({catalog[e.id].spec.site for e in entries}),
                           has_fallback=spec.endpoint.fallback is not None, continuation=spec.continuation)
    except ValueError as exc:
        raise ExperimentRefused(f"{source}: factor serving: {exc}") from exc


def freeze(source: Path, catalog: Mapping[str, LoadedTask], endpoint: EndpointConfig | None = None) -> ExperimentLock:
    """The lock of the experiment at `source`: every fixed input hashed and the plan derived, before any model call."""
    spec, entries, inputs = current_inputs(source, catalog, endpoint)
    check_ledgers(spec, entries, catalog, source)
    check_serving(spec, entries, catalog, source)
    check_rules_reach(entries, catalog)
    try:
        plan = plan_experiment(spec, entries, {t.id: catalog[t.id].spec.site for t in entries})
    except ValueError as exc:
        raise ExperimentRefused(f"{source}: {exc}") from exc
    pairs = {p.pair for p in plan if p.pair is not None}
    counts = PlanCounts(cells=len(cells(spec)), tasks=len(entries), repetitions=spec.repetitions, arms=len(spec.arms),
                        episodes=len(plan), pairs=len(pairs))
    lock = ExperimentLock(frozen_at=utc_stamp(),
                          experiment_file=str(source), spec=spec, inputs=inputs, plan=plan, counts=counts)
    return lock.model_copy(update={"lock_sha256": lock.computed_lock()})


def read_lock(path: Path) -> ExperimentLock:
    """A lock file, refused when it does not parse or was edited after the freeze."""
    try:
        lock = ExperimentLock.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ExperimentRefused(f"{path}: cannot be read: {exc.strerror}") from exc
    except ValueError as exc:
        raise ExperimentRefused(f"{path}: not an experiment lock: {said(exc)}") from exc
    if lock.computed_lock() != lock.lock_sha256:
        raise ExperimentRefused(f"{path}: the lock was edited after the freeze (its content no longer has the "
                                f"sha256 {lock.lock_sha256[:12]} it was sealed with)")
    return lock


_NAMED_FIRST = ("experiment_sha256", "subset_sha256", "tasks")
"""The inputs `lock_difference` compares before the rest (the code hashes cover the task files too)."""


def lock_difference(lock: ExperimentLock, catalog: Mapping[str, LoadedTask], base: Path | None = None) -> str | None:
    """The first fixed input that differs now from the lock, or None: the experiment file, a task, the code, the
    prompts, the endpoint, the analysis or the plan they give."""
    source = Path(lock.experiment_file)
    if base is not None and not source.is_absolute():
        source = base / source
    if not source.is_file():
        return f"experiment_file: {lock.experiment_file} is missing"
    try:
        spec, entries, inputs = current_inputs(source, catalog, lock.inputs.endpoint)
    except (ValueError, ExperimentRefused) as exc:
        return f"experiment_file: {exc}"
    recorded: dict[str, Any] = lock.inputs.model_dump(mode="json")
    now: dict[str, Any] = inputs.model_dump(mode="json")
    # The most specific input first: a changed task file also changes the `tasks` package's code hash, and the
    # refusal should name the task, not the package.
    found = first_difference_of(recorded, now, (*_NAMED_FIRST, *sorted(set(recorded) - set(_NAMED_FIRST))))
    if found:
        return found
    plan = plan_experiment(spec, entries, {t.id: catalog[t.id].spec.site for t in entries})
    return first_difference({"plan": [p.model_dump(mode="json") for p in lock.plan]},
                            {"plan": [p.model_dump(mode="json") for p in plan]})
