"""Loading the task catalog from YAML files, with errors that name the file and the field."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from pydantic import ValidationError

from tasks.references import SiteSchema, named_apps, named_documents, schema_problems
from tasks.spec import TaskSpec

if TYPE_CHECKING:
    from sites.registry import SiteDefinition

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


EXTENDING_KEYS = frozenset({"id", "version", "title", "difficulty", "extends", "attack", "expected_state",
                            "negative_controls", "equivalent_mutants", "wrong_variants"})
"""What a file that `extends` a task may give: its own identity, the attack, checks and audit notes added to the
base's (`expected_state`, `equivalent_mutants`, `wrong_variants`, appended) and its own negative controls. The rest
(instruction, site, seed, start page, grants, scripted control, allowed mutations, procedure) is the base task's,
so an attacked task and its clean twin cannot differ in what the user asked and may do."""
_NOT_INHERITED = ("negative_controls", "equivalent_solutions")
"""The base task's own controls, proven on the base task; the extending file declares its own."""
_APPENDED = ("expected_state", "equivalent_mutants", "wrong_variants")
"""Lists the extending file adds to the base's: checks, and the audit's notes on the same solution's mutants."""


def _read_yaml(path: Path) -> tuple[bytes, object]:
    raw = path.read_bytes()
    try:
        # libyaml's safe loader where the wheel has it (the pure-Python one is ~10x slower: 5 s for the catalog).
        return raw, yaml.load(raw, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: not valid YAML: {exc}") from exc


def _extended(path: Path, data: dict[str, object]) -> tuple[bytes, dict[str, object]]:
    """An extending file's content merged onto its base task's (the base's bytes, for the hash)."""
    base_id = data["extends"]
    extra = sorted(set(data) - EXTENDING_KEYS)
    if extra:
        raise TaskFileError(f"{path}: a file that extends a task gives only {', '.join(sorted(EXTENDING_KEYS))}; "
                            f"{', '.join(extra)} come from {base_id}")
    if not isinstance(base_id, str) or "." not in base_id:
        raise TaskFileError(f"{path}: extends: {base_id!r} is not a task id")
    base_path = path.parent / f"{base_id.split('.', 1)[1]}.yaml"
    if not base_path.is_file() or base_path == path:
        raise TaskFileError(f"{path}: extends: no task {base_id} beside this file ({base_path.name})")
    base_raw, base = _read_yaml(base_path)
    if not isinstance(base, dict) or base.get("id") != base_id or "extends" in base:
        raise TaskFileError(f"{path}: extends: {base_path.name} is not the plain task {base_id}")
    merged = {key: value for key, value in base.items() if key not in _NOT_INHERITED}
    merged.update({key: value for key, value in data.items() if key not in _APPENDED})
    for key in _APPENDED:
        own = data.get(key) or []
        if not isinstance(own, list):
            raise TaskFileError(f"{path}: {key}: a list (added to {base_id}'s)")
        merged[key] = [*(base.get(key) or []), *own]
    return base_raw, merged


def task_data(path: Path) -> tuple[object, str]:
    """A task file's content (merged onto its base task's when it `extends` one) and its hash (covering both files
    then)."""
    raw, data = _read_yaml(path)
    digest = hashlib.sha256(raw)
    if isinstance(data, dict) and "extends" in data:
        base_raw, data = _extended(path, data)
        digest.update(b"\0extends\0" + base_raw)
    return data, digest.hexdigest()


def load_task(path: Path) -> LoadedTask:
    """Parse and validate one task file (`task_data`)."""
    data, sha256 = task_data(path)
    return LoadedTask(spec=task_spec(path, data), path=path, sha256=sha256)


def task_spec(path: Path, data: object) -> TaskSpec:
    """The task a file's parsed content describes: valid by the schema, on a registered site, naming only tables
    and columns that site has. A TaskFileError names `path` and each problem where it is."""
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: a task file must hold a mapping, found {type(data).__name__}")
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(task)'}: {err['msg']}" for err in exc.errors()
        )
        raise TaskFileError(f"{path}: {problems}") from exc
    _check_against_the_site(path, spec)
    return spec


def site_schemas() -> Mapping[str, SiteSchema]:
    """Every registered site's tables and their columns, from its SQLModel metadata: the sites registered now, so a
    site added for a while (`sites.registry.registered`) is known while it is and unknown again after."""
    from sites.registry import site_definitions  # late: only loading a task needs the sites' models

    return _schemas(tuple(site_definitions().values()))


@functools.cache
def _schemas(sites: tuple[SiteDefinition, ...]) -> Mapping[str, SiteSchema]:
    """The schemas of these sites, read once per set of registered sites (a definition is frozen, so hashable)."""
    return {site.name: site.columns() for site in sites}


def _site_vocabulary(site: str) -> tuple[frozenset[str], frozenset[str]]:
    """The app names and document names a registered site declares."""
    from sites.registry import site_definitions

    definition = site_definitions()[site]
    return frozenset(route.app for route in definition.apps), definition.documents


def _check_against_the_site(path: Path, spec: TaskSpec) -> None:
    """The task's site is registered and has every table and column the task names."""
    schemas = site_schemas()
    schema = schemas.get(spec.site)
    if schema is None:
        known = ", ".join(sorted(schemas))
        raise TaskFileError(f"{path}: site: {spec.site!r} is not a registered site; the sites are {known}")
    problems = schema_problems(spec, schema)
    apps, documents = _site_vocabulary(spec.site)
    problems += [f"{where}: site {spec.site} has no app {app!r}; its apps are {', '.join(sorted(apps)) or 'none'}"
                 for where, app in named_apps(spec) if app not in apps]
    problems += [f"{where}: site {spec.site} shows no document {name!r}; its documents are "
                 f"{', '.join(sorted(documents)) or 'none'}" for where, name in named_documents(spec)
                 if name not in documents]
    if problems:
        raise TaskFileError(f"{path}: " + "; ".join(problems))


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
