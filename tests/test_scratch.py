"""Scratch directories (tenant databases): one a SIGKILLed process left is removed when the next is made; a live
process's, and anything not a scratch directory, are kept."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from sites.kit.scratch import OWNER_LOCK, PREFIX, ScratchDirectory
from sites.registry import tenant_registry


def made_by_a_killed_process(parent: Path, *, lock: bool = True) -> Path:
    """A scratch directory as a process SIGKILLed while it held it leaves it (forked child, no clean-up run); with
    `lock` False, as one killed between making the directory and its lock leaves it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            path = ScratchDirectory("tenants", parent=parent).path
            (path / "templates").mkdir()
            if not lock:
                (path / OWNER_LOCK).unlink()
            os.write(write, str(path).encode())
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    os.close(write)
    with os.fdopen(read) as pipe:
        path = Path(pipe.read())
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and path.is_dir(), "a SIGKILLed process removes nothing itself"
    return path


def test_the_scratch_directory_of_a_killed_process_is_removed_when_the_next_is_made(tmp_path: Path) -> None:
    killed = made_by_a_killed_process(tmp_path)
    unlocked = made_by_a_killed_process(tmp_path, lock=False)
    foreign = tmp_path / "computerops-tenants-not-a-scratch-directory"
    foreign.mkdir()
    with ScratchDirectory("verify", parent=tmp_path) as live:
        assert not killed.exists() and not unlocked.exists()
        assert live.name.startswith(f"{PREFIX}verify-")
        with ScratchDirectory("tenants", parent=tmp_path) as other:
            assert live.is_dir() and other.is_dir(), "a live owner's directory is kept"
    assert [p.name for p in tmp_path.iterdir()] == [foreign.name]


def test_a_tenant_registry_without_a_root_lives_in_a_scratch_directory_it_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = made_by_a_killed_process(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the system's temporary directory, for this test
    registry = tenant_registry()
    assert not killed.exists() and registry.root.parent == tmp_path and registry.root.name.startswith(PREFIX)
    registry.close()
    assert list(tmp_path.iterdir()) == []
