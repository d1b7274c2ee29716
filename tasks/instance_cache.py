"""Generated instances kept on disk, so that a process does not generate again what another has.

Generating the catalog's published instances takes about a minute of CPU (each seeds a site's database, draws its
records through the template's expressions and validates the result), and every process that needs them did it again:
each pytest-xdist worker at collection, each `computerops` subprocess of the tests. An instance is a pure function of
its template's files (`TaskTemplate.sha256`), its seed, the code that generates and validates it and the libraries that
code calls; the cache's key is exactly those, so a change to any of them generates anew, and nothing else is ever
read from it.

What is kept: the instance's spec and `Instance` as JSON (never pickle: a file here is data, validated like a task
file), and its `instance_sha256`. A read is checked against that hash (recomputed from the validated spec), so a file
that does not round-trip, or was changed on disk, is generated again and rewritten, never used. A seed at which the
template defines no instance is kept too (`undefined`, with the reason). A generator that fails is not kept: it fails
again, saying why, every time.

Only templates of the product's own sites are kept (`sites.registry.SITES` as shipped): a site added for a while
(`sites.registry.registered`, the tests' toy site) is code the key does not cover.

Where: `.cache/instances/` in the repository (beside the venv; a clean clone starts without it), or the folder
`COMPUTEROPS_INSTANCE_CACHE` names; `COMPUTEROPS_INSTANCE_CACHE=off` keeps nothing and reads nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from computerops.core import code_keyed

FORMAT_VERSION: Literal[1] = 1
ENVIRONMENT = "COMPUTEROPS_INSTANCE_CACHE"
REPOSITORY = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPOSITORY / ".cache" / "instances"
CODE_FOLDERS = ("tasks", "sites", "verifier", "computerops/core")
"""What generating and validating an instance runs (besides the libraries below): every file under these folders but
the task files themselves (a template's own files are in its hash; another template's never change an instance)."""
LIBRARIES = ("babel", "jinja2", "phonenumbers", "pydantic", "pydantic-core", "pyyaml", "sqlalchemy", "sqlmodel",
             "text2num")
"""The third-party distributions the code above calls while generating (their versions are in the key)."""


class CachedInstance(BaseModel):
    """One generated instance (or a seed the template defines none at), as kept on disk."""

    model_config = ConfigDict(extra="forbid")
    format_version: Literal[1] = FORMAT_VERSION
    key: str
    outcome: Literal["instance", "undefined"]
    spec: dict[str, JsonValue] | None = None
    instance: dict[str, JsonValue] | None = None
    sha256: str | None = None
    undefined: str | None = None
    """Why the template defines no instance at this seed (`InstanceUndefined`'s reason, without the file's name)."""


def cache_root() -> Path | None:
    """The cache's folder, or None when it is switched off."""
    return code_keyed.cache_root(ENVIRONMENT, DEFAULT_ROOT)


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of what generates an instance: the code under `CODE_FOLDERS` (task files excepted), the libraries'
    versions and Python's."""
    return code_keyed.code_digest(f"format {FORMAT_VERSION}", CODE_FOLDERS, LIBRARIES, _task_file, REPOSITORY)


def _task_file(folder: str, path: Path) -> bool:
    return path.suffix == ".yaml" or (folder == "tasks" and path.suffix != ".py")


def shipped_site(name: str) -> bool:
    """Whether the site of that name is one of the product's own, as shipped (the only sites the key covers)."""
    from sites.registry import shipped  # late: only a template that is generated needs the sites

    return shipped(name)


def key(template: str, template_sha256: str, seed: int) -> str:
    """What a kept instance is the instance of: the template's id and files, the seed and the code."""
    return hashlib.sha256(f"{code_digest()}\0{template}\0{template_sha256}\0{seed}".encode()).hexdigest()


def _path(root: Path, template: str, seed: int, kept_key: str) -> Path:
    return root / code_digest()[:16] / template / f"{seed}-{kept_key[:16]}.json"


def read(template: str, template_sha256: str, seed: int) -> CachedInstance | None:
    """What is kept for `template` (whose files hash to `template_sha256`) at `seed`, or None when nothing of this
    key is kept, the cache is off, or the file is unreadable or not of this format (the caller checks the instance
    against its hash)."""
    root = cache_root()
    if root is None:
        return None
    kept_key = key(template, template_sha256, seed)
    try:
        kept = CachedInstance.model_validate_json(_path(root, template, seed, kept_key).read_bytes())
    except (OSError, ValidationError):
        return None
    return kept if kept.key == kept_key else None


def write(template: str, seed: int, kept: CachedInstance) -> None:
    """Keep `kept` (made with `key(...)` of this template and seed). Atomic: a reader sees the whole file or none; a
    folder that cannot be written keeps nothing, silently (the cache only saves time)."""
    root = cache_root()
    if root is None:
        return
    path = _path(root, template, seed, kept.key)
    temporary: str | None = None
    try:
        if not path.parent.parent.is_dir():  # the first instance kept for this code: older code's go
            path.parent.parent.mkdir(parents=True, exist_ok=True)
            prune(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=".", suffix=".tmp",
                                         delete=False) as out:
            temporary = out.name
            out.write(kept.model_dump_json())
        os.replace(temporary, path)
    except OSError:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


KEPT_CODE_VERSIONS = 3
"""How many versions of the code keep their instances (the newest by when they were first kept): a branch switched
back and forth keeps its instances, and the folder does not grow with every change."""


def prune(root: Path) -> list[Path]:
    """Remove the instances kept for all but the `KEPT_CODE_VERSIONS` newest code versions under `root` (never the
    current code's); returns what was removed. Errors are ignored: another process may be removing them too."""
    return code_keyed.prune_code_versions(root, code_digest()[:16], KEPT_CODE_VERSIONS)
