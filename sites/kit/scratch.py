"""Scratch directories (tenant databases and their templates) that a killed process cannot leak for long.

A process that is killed (SIGKILL, a lost machine) runs no clean-up, so a plain temporary directory of it stays
behind. Each scratch directory therefore holds an owner lock (flock) for as long as its process lives; the OS drops
the lock however the process ends. Whenever a new scratch directory is made, every scratch directory beside it
whose lock is free is removed first: a killed run's tenants go at the start of the next run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO

PREFIX = "computerops-scratch-"
"""Every scratch directory's name starts so, then its kind (`computerops-scratch-tenants-…`); nothing else is swept."""
OWNER_LOCK = ".owner.lock"
"""Held (flock, exclusive) by the process that owns the scratch directory, for as long as it lives."""


@contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive flock on `directory` itself, held for the block: briefly, while a directory in it is made and
    locked, or checked and swept. Done under it, no check ever sees a directory between its creation and its lock,
    so a directory found there without its lock was left by a process killed in between."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def sweep_abandoned(parent: Path) -> list[Path]:
    """Remove the scratch directories in `parent` whose owner is gone (their lock is free, or was never made); returns
    them. Call it under `directory_lock(parent)`."""
    removed = []
    for path in sorted(parent.glob(f"{PREFIX}*")):
        try:
            handle = (path / OWNER_LOCK).open("r", encoding="utf-8")
        except FileNotFoundError:  # killed between making it and locking it
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
            continue
        except OSError:  # not a directory, or not ours to read
            continue
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its owner is alive
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class ScratchDirectory:
    """A fresh directory `PREFIX<kind>-…` in `parent` (the system's temporary directory by default), owned by this
    process until `close()`; abandoned ones of killed processes in `parent` are removed when it is made."""

    def __init__(self, kind: str, parent: Path | None = None) -> None:
        where = Path(tempfile.gettempdir()) if parent is None else parent
        with directory_lock(where):
            sweep_abandoned(where)
            self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=where))
            self._owner: IO[str] | None = (self.path / OWNER_LOCK).open("w", encoding="utf-8")
            fcntl.flock(self._owner.fileno(), fcntl.LOCK_EX)  # a new file: nobody else holds it
            self._owner.write(f"process {os.getpid()}\n")
            self._owner.flush()
            self._pid = os.getpid()

    def close(self) -> None:
        """Remove the directory and release it (idempotent). Only in the process that made it: a child forked from
        that process inherits this object and its exit handlers (`atexit`), and its exit must not remove what its
        parent still uses; there it only forgets the directory."""
        if self._owner is None:
            return
        if self._pid == os.getpid():
            shutil.rmtree(self.path, ignore_errors=True)
            self._owner.close()
        self._owner = None

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
