"""Seeded template databases kept on disk, so that a process does not seed again what another has.

Seeding a site for a seed takes a few hundred milliseconds of CPU (0.4 s a helpdesk seed), and every process that
runs, replays or verifies an episode seeded each (site, seed) it met again: each `computerops run`, `verify` and
`replay`, each harness process of a long-running episode, each Ray worker. A seeding is a pure function of the site's
code, the seed, and the libraries and Python that run it; the cache's key is exactly those (`code_digest`), so a change
to any of them seeds anew.

What is kept: the SQLite file and beside it a record (JSON, with a format version) of its key and its sha256. A file
is used only when its copy hashes to the record's sha256, so a file changed or cut short on disk is seeded again and
rewritten, never used. Only the product's own sites as shipped are kept (`sites.registry.shipped`): a site a test
registers, or a replacement of a shipped one, is code the key does not cover (`shipped`).

Where: `.cache/seeded/` in the repository (beside the venv; a clean clone starts without it), or the folder
`COMPUTEROPS_SEEDED_CACHE` names; `COMPUTEROPS_SEEDED_CACHE=off` keeps nothing and reads nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sqlite3
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from computerops.core import code_keyed

if TYPE_CHECKING:
    from sites.kit.site import SiteDefinition

FORMAT_VERSION: Literal[1] = 1
ENVIRONMENT = "COMPUTEROPS_SEEDED_CACHE"
DEFAULT_ROOT = code_keyed.REPOSITORY / ".cache" / "seeded"
CODE_FOLDERS = ("sites", "computerops/core")
"""What seeding runs (besides the libraries below): every file under these folders."""
LIBRARIES = ("babel", "phonenumbers", "pydantic", "pydantic-core", "sqlalchemy", "sqlmodel")
"""The third-party distributions seeding calls (their versions are in the key)."""
KEPT_CODE_VERSIONS = 3
"""How many versions of the code keep their seedings (as the instance cache: tasks/instance_cache.py)."""


_SHIPPED: dict[int, SiteDefinition] = {}
"""The product's own site definitions as shipped, by identity (`mark_shipped`, by sites/registry.py)."""


def mark_shipped(definitions: Iterable[SiteDefinition]) -> None:
    """These definitions are the product's own sites, as shipped: the only ones whose seedings are kept."""
    _SHIPPED.update((id(definition), definition) for definition in definitions)


def shipped(definition: SiteDefinition) -> bool:
    """Whether `definition` is one of the product's own sites as shipped (a test's definition of a site, even of the
    same name, is code the key does not cover)."""
    return _SHIPPED.get(id(definition)) is definition


class KeptSeeding(BaseModel):
    """The record beside a kept database file."""

    model_config = ConfigDict(extra="forbid")
    format_version: Literal[1] = FORMAT_VERSION
    key: str
    site: str
    seed: int
    sha256: str


def cache_root() -> Path | None:
    """The cache's folder, or None when it is switched off."""
    return code_keyed.cache_root(ENVIRONMENT, DEFAULT_ROOT)


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of what seeds a site: the code under `CODE_FOLDERS`, the versions of the libraries, SQLite and Python."""
    return code_keyed.code_digest(f"format {FORMAT_VERSION}\0sqlite {sqlite3.sqlite_version}", CODE_FOLDERS,
                                  LIBRARIES)


def key(site: str, seed: int) -> str:
    return hashlib.sha256(f"{code_digest()}\0{site}\0{seed}".encode()).hexdigest()


def _paths(root: Path, site: str, seed: int) -> tuple[Path, Path]:
    folder = root / code_digest()[:16]
    return folder / f"{site}-{seed}.sqlite", folder / f"{site}-{seed}.json"


RECORD_LIMIT = 64 * 1024
"""The most a record's file is read (a record is some 300 bytes)."""


def _open_regular(path: Path) -> int:
    """A descriptor of `path` for reading, when it is a regular file itself (not a link, a FIFO, a device or a
    folder: opening a FIFO to read would wait for a writer, copying a device could run for ever); OSError else."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(f"{path} is not a regular file")
    return descriptor


def _read_record(path: Path) -> bytes:
    with os.fdopen(_open_regular(path), "rb") as source:
        return source.read(RECORD_LIMIT)


def _copy_hashed(source_path: Path, target: Path) -> str:
    """Copy the regular file `source_path` to `target`; the sha256 of what was copied."""
    digest = hashlib.sha256()
    with os.fdopen(_open_regular(source_path), "rb") as source, target.open("wb") as out:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def read_into(site: str, seed: int, target: Path) -> bool:
    """Copy the kept seeding of (site, seed) to `target`; False (and no `target`) when none of this key is kept, the
    cache is off, a kept file is not a regular file of its own, or the copy does not hash to its record (the caller
    seeds)."""
    root = cache_root()
    if root is None:
        return False
    database, record_path = _paths(root, site, seed)
    try:
        record = KeptSeeding.model_validate_json(_read_record(record_path))
        if record.key != key(site, seed):
            return False
        copied = _copy_hashed(database, target)
    except (OSError, ValidationError):
        target.unlink(missing_ok=True)
        return False
    if copied != record.sha256:
        target.unlink(missing_ok=True)
        return False
    return True


def keep(site: str, seed: int, source: Path) -> None:
    """Keep the seeding at `source` (a database no one writes any more) for (site, seed). Atomic: a reader sees the
    whole file and record or none; a folder that cannot be written keeps nothing, silently (the cache only saves
    time)."""
    root = cache_root()
    if root is None:
        return
    database, record_path = _paths(root, site, seed)
    made: list[str] = []
    try:
        if not database.parent.is_dir():  # the first seeding kept for this code: older code's go
            database.parent.mkdir(parents=True, exist_ok=True)
            code_keyed.prune_code_versions(root, code_digest()[:16], KEPT_CODE_VERSIONS)
        descriptor, copy = tempfile.mkstemp(dir=database.parent, prefix=".", suffix=".tmp")
        os.close(descriptor)
        made.append(copy)
        record = KeptSeeding(key=key(site, seed), site=site, seed=seed, sha256=_copy_hashed(source, Path(copy)))
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=database.parent, prefix=".", suffix=".tmp",
                                         delete=False) as out:
            made.append(out.name)
            out.write(record.model_dump_json())
        os.replace(copy, database)  # the database first: a record names only a file that is there
        os.replace(out.name, record_path)
    except OSError:
        for path in made:
            with contextlib.suppress(OSError):
                os.unlink(path)
