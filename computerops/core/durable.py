"""Writing a file so that a kill at any moment leaves the old file or the new one, never a torn one: the one way
evidence, checkpoints and a harness process's transcript are written."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_SCRATCH: ContextVar[bool] = ContextVar("scratch_writes", default=False)


@contextmanager
def scratch_writes() -> Iterator[None]:
    """Within it (this task, and the tasks and threads it starts), `sync` does nothing: for files another process
    writes again durably, as a Ray worker's episode folder, whose files the driver writes into the run directory. A
    kill of the process still leaves each file old or new (the rename is kept); only a crash of the machine may not."""
    token = _SCRATCH.set(True)
    try:
        yield
    finally:
        _SCRATCH.reset(token)


def sync(descriptor: int) -> None:
    """fsync `descriptor`, but within `scratch_writes`."""
    if not _SCRATCH.get():
        os.fsync(descriptor)


def write_durably(path: Path, text: str | bytes, *, sync_directory: bool = False) -> None:
    """Write `text` (UTF-8, or bytes as they are) to a staging file beside `path`, fsync it and rename it into place;
    with `sync_directory`, fsync the directory too, so the rename itself survives a crash of the machine."""
    staging = path.with_suffix(path.suffix + ".tmp")
    with staging.open("wb") as handle:
        handle.write(text.encode("utf-8") if isinstance(text, str) else text)
        handle.flush()
        sync(handle.fileno())
    os.replace(staging, path)
    if sync_directory:
        descriptor = os.open(path.parent, os.O_RDONLY)
        try:
            sync(descriptor)
        finally:
            os.close(descriptor)
