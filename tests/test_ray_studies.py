"""The studies on Ray (slow tier): the shipped serving and persistence experiments run by the Ray executor leave the
local executor's evidence, byte for byte (serving faults between the harness and its endpoint, and episodes whose
harness runs in child processes with checkpoints, on Ray actors), and verify."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from computerops.cli.main import main; main()"]
COMPARED = ("operations.json", "journal.json", "final_state.json", "verdict.json", "receipt.json")


def cli(*args: str, timeout: float = 900) -> str:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("experiment", ["serving-v1", "persistence-v1"])
def test_a_study_run_on_ray_leaves_the_local_executors_evidence(experiment: str, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    lock = tmp_path / f"{experiment}.lock.json"
    cli("experiment", "freeze", str(ROOT / "experiments" / f"{experiment}.yaml"), "--out", str(lock))
    local, ray = tmp_path / "local" / experiment, tmp_path / "ray" / experiment
    cli("experiment", "run", str(lock), "--out", str(local), "--concurrency", "2")
    cli("experiment", "run", str(lock), "--out", str(ray), "--executor", "ray", "--workers", "2")
    episodes = sorted(p.name for p in (local / "episodes").iterdir())
    assert episodes and episodes == sorted(p.name for p in (ray / "episodes").iterdir())
    compared = 0
    for episode in episodes:
        names = sorted(p.relative_to(local / "episodes" / episode).as_posix()
                       for p in (local / "episodes" / episode).rglob("*") if p.is_file())
        assert names == sorted(p.relative_to(ray / "episodes" / episode).as_posix()
                               for p in (ray / "episodes" / episode).rglob("*") if p.is_file()), episode
        for name in COMPARED:
            if (local / "episodes" / episode / name).is_file():
                compared += 1
                assert (local / "episodes" / episode / name).read_bytes() == (
                    ray / "episodes" / episode / name).read_bytes(), f"{episode}/{name}"
    assert compared >= 4 * len(episodes)
    assert "verify PASS" in cli("verify", str(ray))
