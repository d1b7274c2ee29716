"""What an on-disk cache of generated data is keyed by: the code that generates it (its files' bytes under some
folders of the repository, the versions of the libraries it calls, Python's), and the pruning of what older code kept.
Used by the instance cache (tasks/instance_cache.py) and the seeded-database cache (sites/kit/seeded_cache.py)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def cache_root(environment: str, default: Path) -> Path | None:
    """A cache's folder: the one the environment variable names, else `default`; None when it says `off`."""
    chosen = os.environ.get(environment, "").strip()
    if chosen.lower() == "off":
        return None
    return Path(chosen) if chosen else default


def code_digest(salt: str, folders: Sequence[str], libraries: Sequence[str],
                skip: Callable[[str, Path], bool] = lambda _folder, _path: False, root: Path = REPOSITORY) -> str:
    """A hash of `salt` (the cache's format), Python's version, these distributions' versions and every file under
    these folders of `root` (the repository; bytecode and `skip(folder, path)` excepted)."""
    digest = hashlib.sha256(f"{salt}\0python {sys.version}\0".encode())
    for name in libraries:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{name}=={version}\0".encode())
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc" or skip(folder, path):
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def prune_code_versions(root: Path, current: str, keep: int) -> list[Path]:
    """Remove the folders of `root` named by a code digest's first 16 characters but those of the `keep` newest code
    versions (by when first kept; never `current`'s); returns what was removed. Errors are ignored: another process
    may be removing them too."""
    try:
        folders = [path for path in root.iterdir() if path.is_dir() and len(path.name) == 16]
    except OSError:
        return []
    folders.sort(key=lambda path: (path.name == current, path.stat().st_mtime), reverse=True)
    removed = [path for path in folders[keep:] if path.name != current]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed
