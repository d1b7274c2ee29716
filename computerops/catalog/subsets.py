"""Reserved task subsets: drawn from the catalog and hash-locked before any model runs.

A subset of *published* instances is a draw anyone can redo: rank every published instance id by
sha256("<seed>:<instance id>") and take the first N, then list them in id order. A subset of *fresh* instances
ranks the varying templates the same way (by sha256("<seed>:<template id>"), as many rounds as N needs) and gives
each drawn template a seed drawn at reservation from the fresh range (`tasks.templates.FRESH_SEED_FLOOR` up, never
published, unpredictable before the reservation: `secrets`), so no list anyone could read beforehand holds them.

Either way the file records each instance's id, its hash and its whole spec as generated at reservation, and the
sha256 of all that (`lock_sha256`). A run regenerates each instance from (template, version, seed) and refuses a
subset whose file was edited or whose regenerated instance differs from the one reserved, naming the first field
that differs.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from computerops.core.clock import utc_stamp
from computerops.core.difference import first_difference
from computerops.core.formats import Versioned
from computerops.core.hashing import canonical_sha256
from tasks import LoadedTask
from tasks.catalog import Catalog, InstanceUndefined
from tasks.templates import FRESH_SEED_FLOOR, MAX_SEED, instance_id

SUBSET_FORMAT: Literal["computerops.subset/2"] = "computerops.subset/2"
"""/2: fresh or published instances, each with its spec as reserved (a /1 file holds published ones, no specs)."""
DRAW_METHOD = "rank catalog task ids by sha256('<seed>:<task id>'), take the first <count>, list in id order"
FRESH_DRAW_METHOD = ("rank varying template ids by sha256('<seed>:<template id>'), take them in rank order (again "
                     "from the first when <count> needs more), give each a fresh seed drawn at reservation (another "
                     "where the template defines no instance at it), list in id order")
InstanceKind = Literal["published", "fresh"]


class SubsetError(ValueError):
    """A subset that cannot be reserved or used; the message names the file and the task."""


class SubsetTask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    sha256: str
    """The instance's hash when the subset was reserved (`tasks.catalog.instance_sha256`)."""
    spec: dict[str, Any] | None = None
    """The instance's whole spec as generated at reservation (None in a /1 file), so a regenerated instance that
    differs is refused naming the field."""


class ReservedSubset(Versioned):
    """A subset file: what was drawn, from what, how, and the hash that locks it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.subset/1", "computerops.subset/2"] = SUBSET_FORMAT
    reserved_at: str
    instances: InstanceKind = "published"
    """Published instances (the catalog's seeds, a draw anyone can redo) or fresh ones (seeds drawn at reservation,
    never published): what a report says of the run's tasks."""
    count: int = Field(ge=1)
    seed: int
    method: str = DRAW_METHOD
    catalog_size: int
    catalog_sha256: str
    """sha256 over every (task id, content hash) of the catalog the draw was made from."""
    tasks: list[SubsetTask]
    undefined: list[str] = Field(default_factory=list)
    """Fresh instance ids the draw gave whose template defines no instance at that seed (the seed's data hold no
    record its story needs), each replaced by another fresh seed of the same template: the draw's only selection,
    said in the file. Empty for published subsets; a file without it (reserved before it was kept) reads as empty."""
    lock_sha256: str = ""
    """sha256 of the canonical JSON of every other field; a file whose content no longer matches is refused."""

    def computed_lock(self) -> str:
        # `undefined` is left out when empty, so files reserved before it was kept keep their lock.
        excluded = {"lock_sha256"} | (set() if self.undefined else {"undefined"})
        return canonical_sha256(self.model_dump(mode="json", exclude=excluded))

    @property
    def task_ids(self) -> list[str]:
        return [t.id for t in self.tasks]


def catalog_sha256(catalog: Mapping[str, LoadedTask]) -> str:
    return canonical_sha256([[task_id, task.sha256] for task_id, task in sorted(catalog.items())])


def draw(task_ids: list[str], count: int, seed: int) -> list[str]:
    """The draw itself (see DRAW_METHOD)."""
    if count < 1:
        raise SubsetError(f"--count must be at least 1, got {count}")
    if count > len(task_ids):
        raise SubsetError(f"--count {count} is more than the {len(task_ids)} tasks in the catalog")
    ranked = sorted(task_ids, key=lambda task_id: hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest())
    return sorted(ranked[:count])


def fresh_seed() -> int:
    """A seed from the fresh range, drawn unpredictably (never a published seed)."""
    return FRESH_SEED_FLOOR + secrets.randbelow(MAX_SEED - FRESH_SEED_FLOOR + 1)


def draw_fresh(templates: list[str], count: int, seed: int) -> list[str]:
    """Fresh instance ids (see FRESH_DRAW_METHOD); each seed is drawn now, so the same call gives other seeds."""
    if count < 1:
        raise SubsetError(f"--count must be at least 1, got {count}")
    if not templates:
        raise SubsetError("the catalog has no varying template to draw fresh instances of")
    ranked = sorted(templates, key=lambda template: hashlib.sha256(f"{seed}:{template}".encode()).hexdigest())
    chosen: set[str] = set()
    while len(chosen) < count:
        chosen.add(instance_id(ranked[len(chosen) % len(ranked)], fresh_seed()))
    return sorted(chosen)


REDRAWS = 20
"""Fresh seeds tried for one drawn template before the reservation fails naming it."""


def _defined(catalog: Catalog, task_id: str, taken: set[str], undefined: list[str]) -> LoadedTask:
    """The fresh instance `task_id`, or, where its template defines none at that seed (the seed's data hold no
    record its story needs: `InstanceUndefined`), the instance at another fresh seed of the same template not in
    `taken`; every id found undefined is appended to `undefined`."""
    template, _ = task_id.rsplit("@", 1)
    for _ in range(REDRAWS):
        try:
            return catalog[task_id]
        except InstanceUndefined:
            undefined.append(task_id)
            taken.add(task_id)  # never drawn again
            task_id = instance_id(template, fresh_seed())
            while task_id in taken:
                task_id = instance_id(template, fresh_seed())
    raise SubsetError(f"template {template} defined no instance at {REDRAWS} fresh seeds in a row; `computerops "
                      f"tasks check --tasks {template}@SEED` says why")


def reserve_subset(catalog: Catalog, count: int, seed: int, *, fresh: bool = False) -> ReservedSubset:
    """Draw `count` instances with `seed` (published ones, or fresh ones of the varying templates), generate each,
    and lock the result with every instance's hash and spec."""
    if fresh:
        chosen = draw_fresh([t.id for t in catalog.templates.values() if t.varying], count, seed)
        taken: set[str] = set(chosen)
        undefined: list[str] = []
        instances = []
        for task_id in chosen:
            instance = _defined(catalog, task_id, taken, undefined)
            taken.add(instance.id)
            instances.append(instance)
        instances.sort(key=lambda task: task.id)
    else:
        chosen = draw(sorted(catalog), count, seed)
        instances = [catalog[task_id] for task_id in chosen]
    subset = ReservedSubset(
        reserved_at=utc_stamp(), count=count, seed=seed,
        instances="fresh" if fresh else "published", method=FRESH_DRAW_METHOD if fresh else DRAW_METHOD,
        catalog_size=len(catalog), catalog_sha256=catalog_sha256(catalog),
        tasks=[SubsetTask(id=task.id, sha256=task.sha256, spec=task.spec.model_dump(mode="json"))
               for task in instances],
        undefined=sorted(undefined) if fresh else [],
    )
    return subset.model_copy(update={"lock_sha256": subset.computed_lock()})


def write_subset(path: Path, subset: ReservedSubset) -> None:
    """Write a new subset file; an existing file is never overwritten (a reservation is made once)."""
    if path.exists():
        raise SubsetError(f"{path} already exists; a reserved subset is never overwritten (choose another --out)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(subset.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_subset(path: Path) -> ReservedSubset:
    """Read a subset file and check its lock."""
    try:
        subset = ReservedSubset.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, json.JSONDecodeError) as exc:
        raise SubsetError(f"{path}: not a reserved subset file: {exc}") from exc
    if subset.lock_sha256 != subset.computed_lock():
        raise SubsetError(f"{path}: the file was edited after it was reserved (lock_sha256 does not match its "
                          "content); reserve a new subset instead")
    return subset


def subset_tasks(subset: ReservedSubset, catalog: Mapping[str, LoadedTask], path: Path) -> list[LoadedTask]:
    """The subset's instances regenerated now from (template, version, seed); refuses any whose template is gone,
    whose generator fails, or whose instance differs from the one reserved (naming the first field that differs)."""
    from tasks import TaskFileError

    problems: list[str] = []
    found: list[LoadedTask] = []
    for task in subset.tasks:
        try:
            current = catalog.get(task.id)
        except TaskFileError as exc:
            problems.append(f"{task.id} can no longer be generated: {exc}")
            continue
        if current is None:
            problems.append(f"{task.id} is no longer in the catalog")
        elif current.sha256 != task.sha256:
            field = (None if task.spec is None else
                     first_difference(task.spec, current.spec.model_dump(mode="json")))
            what = f"the regenerated instance differs in {field}" if field else "its template's files changed"
            problems.append(f"{task.id} changed since the subset was reserved: {what} (sha256 {task.sha256[:12]} "
                            f"then, {current.sha256[:12]} now, {current.path})")
        else:
            found.append(current)
    if problems:
        raise SubsetError(f"{path}: {'; '.join(problems)}. A changed task is a new condition: reserve a new subset.")
    return found
