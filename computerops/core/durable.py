"""Writing a file so that a kill at any moment leaves the old file or the new one, never a torn one: the one way
evidence, checkpoints and a harness process's transcript are written."""

from __future__ import annotations

import os
from pathlib import Path


def write_durably(path: Path, text: str | bytes, *, sync_directory: bool = False) -> None:
    """Write `text` (UTF-8, or bytes as they are) to a staging file beside `path`, fsync it and rename it into place;
    with `sync_directory`, fsync the directory too, so the rename itself survives a crash of the machine."""
    staging = path.with_suffix(path.suffix + ".tmp")
    with staging.open("wb") as handle:
        handle.write(text.encode("utf-8") if isinstance(text, str) else text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staging, path)
    if sync_directory:
        descriptor = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
