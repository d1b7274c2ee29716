"""Creating a run directory: a kill at any point of it leaves either no run directory (the target is new again) or a
whole one that `run --resume` continues, never a half-made one; two creations of one target never both proceed."""

from __future__ import annotations

import itertools
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import computerops.runs.bundle
from computerops.runs.bundle import MANIFEST, NewRunDirectory, RunDirectory, RunLocked
from computerops.runs.config import RunConfig, parse_endpoint, plan_episodes
from computerops.runs.records import ObservedEndpoint, RunManifest

TASK = "helpdesk.solve-ticket@1"
LOCK = "experiment.lock.json"
"""An attachment, written beside the manifest as an experiment's lock is."""


def manifest() -> RunManifest:
    endpoint = parse_endpoint("scripted:oracle", base_url=None, model=None, api_key_env=None)
    config = RunConfig(run_id="run", tasks=[TASK], endpoint=endpoint, episodes=plan_episodes([TASK], endpoint))
    return RunManifest(config=config, created_at="2026-01-01T00:00:00+00:00", scripted=True, tasks=[],
                       code_sha256={}, versions={}, endpoint_observed=ObservedEndpoint())


def tracing_bundle_lines(on_line: Callable[[], None]) -> Callable[[FrameType, str, Any], Any]:
    """A trace function (sys.settrace) that calls `on_line` before each line bundle.py runs."""

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            on_line()
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == computerops.runs.bundle.__file__ else None

    return calls


def on_disk(parent: Path) -> list[tuple[str, int]]:
    """What is in `parent`: every path under it, with a file's size (-1 for a directory)."""
    return sorted((p.relative_to(parent).as_posix(), -1 if p.is_dir() else p.stat().st_size)
                  for p in parent.rglob("*"))


def kill_points(parent: Path) -> list[int]:
    """The lines of a creation (counted as `create_killed_at` counts them) before which what is on disk differs from
    before the line above: a kill anywhere else leaves what one of these leaves (a kill leaves only the disk)."""
    states: list[list[tuple[str, int]]] = []
    parent.mkdir()
    sys.settrace(tracing_bundle_lines(lambda: states.append(on_disk(parent))))
    try:
        RunDirectory.create(parent / "run", manifest(), {LOCK: "{}"})
    finally:
        sys.settrace(None)
    return [line for line in range(1, len(states) + 1) if line == 1 or states[line - 1] != states[line - 2]]


def create_killed_at(line: int, root: Path) -> None:
    """Create a run directory at `root` in a forked child that SIGKILLs itself before the `line`-th line bundle.py
    runs."""
    pid = os.fork()
    if pid == 0:  # the child: no pytest clean-up may run here, whatever happens
        try:
            count = itertools.count(1)

            def maybe_kill() -> None:
                if next(count) == line:
                    os.kill(os.getpid(), signal.SIGKILL)

            sys.settrace(tracing_bundle_lines(maybe_kill))
            RunDirectory.create(root, manifest(), {LOCK: "{}"})
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), f"the creation ended before line {line}"


def test_a_kill_at_any_point_of_the_creation_leaves_no_run_directory_or_a_whole_resumable_one(tmp_path: Path) -> None:
    points = kill_points(tmp_path / "uninterrupted")
    left: dict[str, int] = {"nothing": 0, "whole": 0}
    for line in points:
        root = tmp_path / str(line) / "run"
        create_killed_at(line, root)
        if (root / MANIFEST).exists():
            bundle = RunDirectory.open(root)  # resumable: the manifest, an empty episodes.jsonl, episodes/, the lock
            assert bundle.manifest() == manifest() and bundle.records() == [] and bundle.lost_admissions() == []
            assert (root / LOCK).read_text() == "{}" and (root / "episodes").is_dir(), line
            left["whole"] += 1
        else:
            RunDirectory.ensure_new(root)  # the target is new again: the next run takes it
            RunDirectory.create(root, manifest(), {LOCK: "{}"})
            left["nothing"] += 1
        # What the killed creation left beside the run directory (its staging directory) is gone.
        assert [p.name for p in root.parent.iterdir()] == ["run"], line
    assert left["nothing"] >= 5 and left["whole"] >= 1, left


def test_a_second_creation_of_the_same_target_is_refused_while_the_first_is_under_way(tmp_path: Path) -> None:
    root = tmp_path / "run"
    with NewRunDirectory(root) as first:
        with pytest.raises(RunLocked, match=f"process {os.getpid()}"), NewRunDirectory(root):
            pass
        first.create(manifest())
    assert RunDirectory.open(root).manifest() == manifest()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_target_with_the_longest_name_a_directory_can_have_is_created(tmp_path: Path) -> None:
    root = tmp_path / ("r" * 255)
    RunDirectory.create(root, manifest())
    assert RunDirectory.open(root).manifest() == manifest()
