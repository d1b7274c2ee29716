"""Reserved task subsets: drawn from the catalog and hash-locked before any model runs.

The draw is fully specified, so anyone can redo it: rank every catalog task id by
sha256("<seed>:<task id>") and take the first N, then list them in id order. The subset file
records the draw's inputs, each task's content hash, and the sha256 of all that (`lock_sha256`);
a run refuses a subset whose file was edited or whose tasks changed since the reservation.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from computerops.core.formats import Versioned
from computerops.core.hashing import canonical_sha256
from tasks import LoadedTask

SUBSET_FORMAT: Literal["computerops.subset/1"] = "computerops.subset/1"
DRAW_METHOD = "rank catalog task ids by sha256('<seed>:<task id>'), take the first <count>, list in id order"


class SubsetError(ValueError):
    """A subset that cannot be reserved or used; the message names the file and the task."""


class SubsetTask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    sha256: str
    """Content hash of the task file when the subset was reserved."""


class ReservedSubset(Versioned):
    """A subset file: what was drawn, from what, how, and the hash that locks it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.subset/1"] = SUBSET_FORMAT
    reserved_at: str
    count: int = Field(ge=1)
    seed: int
    method: str = DRAW_METHOD
    catalog_size: int
    catalog_sha256: str
    """sha256 over every (task id, content hash) of the catalog the draw was made from."""
    tasks: list[SubsetTask]
    lock_sha256: str = ""
    """sha256 of the canonical JSON of every other field; a file whose content no longer matches is refused."""

    def computed_lock(self) -> str:
        return canonical_sha256(self.model_dump(mode="json", exclude={"lock_sha256"}))

    @property
    def task_ids(self) -> list[str]:
        return [t.id for t in self.tasks]


def catalog_sha256(catalog: dict[str, LoadedTask]) -> str:
    return canonical_sha256([[task_id, task.sha256] for task_id, task in sorted(catalog.items())])


def draw(task_ids: list[str], count: int, seed: int) -> list[str]:
    """The draw itself (see DRAW_METHOD)."""
    if count < 1:
        raise SubsetError(f"--count must be at least 1, got {count}")
    if count > len(task_ids):
        raise SubsetError(f"--count {count} is more than the {len(task_ids)} tasks in the catalog")
    ranked = sorted(task_ids, key=lambda task_id: hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest())
    return sorted(ranked[:count])


def reserve_subset(catalog: dict[str, LoadedTask], count: int, seed: int) -> ReservedSubset:
    """Draw `count` tasks with `seed` and lock the result."""
    chosen = draw(sorted(catalog), count, seed)
    subset = ReservedSubset(
        reserved_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), count=count, seed=seed,
        catalog_size=len(catalog), catalog_sha256=catalog_sha256(catalog),
        tasks=[SubsetTask(id=task_id, sha256=catalog[task_id].sha256) for task_id in chosen],
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


def subset_tasks(subset: ReservedSubset, catalog: dict[str, LoadedTask], path: Path) -> list[LoadedTask]:
    """The subset's tasks as they are now; refuses any task that is gone or changed since the reservation."""
    problems = []
    for task in subset.tasks:
        current = catalog.get(task.id)
        if current is None:
            problems.append(f"{task.id} is no longer in the catalog")
        elif current.sha256 != task.sha256:
            problems.append(f"{task.id} changed since the subset was reserved (sha256 {task.sha256[:12]} then, "
                            f"{current.sha256[:12]} now, {current.path})")
    if problems:
        raise SubsetError(f"{path}: {'; '.join(problems)}. A changed task is a new condition: reserve a new subset.")
    return [catalog[task_id] for task_id in subset.task_ids]
