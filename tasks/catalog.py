"""Loading the task catalog from YAML files, with errors that name the file and the field."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from tasks.spec import TaskSpec

CATALOG_ROOT = Path(__file__).parent / "catalog"


class TaskFileError(ValueError):
    """A task file that cannot be loaded; the message names the file and what is wrong."""


@dataclass(frozen=True)
class LoadedTask:
    """A task spec with where it came from and the content hash of its file."""

    spec: TaskSpec
    path: Path
    sha256: str

    @property
    def id(self) -> str:
        return self.spec.id


_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_task(path: Path) -> LoadedTask:
    """Parse and validate one task file."""
    raw = path.read_bytes()
    try:
        # libyaml's safe loader where the wheel has it (the pure-Python one is ~10x slower: 5 s for the catalog).
        data = yaml.load(raw, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: a task file must hold a mapping, found {type(data).__name__}")
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(task)'}: {err['msg']}" for err in exc.errors()
        )
        raise TaskFileError(f"{path}: {problems}") from exc
    return LoadedTask(spec=spec, path=path, sha256=hashlib.sha256(raw).hexdigest())


def load_catalog(root: Path = CATALOG_ROOT) -> dict[str, LoadedTask]:
    """Every task under `root` (recursively, *.yaml), keyed by id, in id order."""
    tasks: dict[str, LoadedTask] = {}
    for path in sorted(root.rglob("*.yaml")):
        task = load_task(path)
        if task.id in tasks:
            raise TaskFileError(f"{path}: task id {task.id!r} is also defined in {tasks[task.id].path}")
        tasks[task.id] = task
    if not tasks:
        raise TaskFileError(f"{root}: no task files found")
    return dict(sorted(tasks.items()))


def select_tasks(catalog: dict[str, LoadedTask], selection: str) -> list[LoadedTask]:
    """`all` or a comma-separated list of ids; unknown ids are an error naming them."""
    if selection.strip() == "all":
        return list(catalog.values())
    wanted = [part.strip() for part in selection.split(",") if part.strip()]
    unknown = [task_id for task_id in wanted if task_id not in catalog]
    if unknown:
        raise TaskFileError(f"unknown task ids: {', '.join(unknown)} (see `computerops tasks list`)")
    if not wanted:
        raise TaskFileError("no task ids given")
    return [catalog[task_id] for task_id in wanted]
