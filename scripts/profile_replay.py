"""Replay against the live episode, as `computerops bench` measures it, and where a replay's time goes.

(1) The bench's replay row alone: SCRIPTED oracle episodes at concurrency 1 over every site (`bench_plan` over the
catalog without its fault scenarios, `bench_levels`), then each episode replayed once on a fresh tenant after
`prepare_replay` (`bench_replays`); prints the ratio of the medians with its 95% bootstrap interval and each site's
median replay. (2) With `--profile N`: the same episodes replayed N more times in one process, warm, under cProfile,
printing each part's share of the replays' CPU (cumulative time of the functions that bound the parts).

    .venv/bin/python scripts/profile_replay.py [--episodes 24] [--profile 3]

Figures are from one machine and one run; compare ratios within a run, not milliseconds across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from computerops.bench.measure import BenchOptions, RatioFigure, bench_levels, bench_replays
from computerops.runs.bundle import RunDirectory
from replays import prepare_replay, replay_episode
from sites.registry import tenant_registry
from tasks import LoadedTask, load_catalog

PARTS = {
    ("replays/replay.py", "replay_episode"): "whole replay",
    ("httpx/_client.py", "request"): "requests (operation log, site handler, HTTP in-process)",
    ("fastapi/routing.py", "run_endpoint_function"): "  the sites' handlers (ORM queries, pages)",
    ("sites/kit/pages.py", "text"): "    page rendering (Jinja2)",
    ("sites/kit/oplog.py", "in_place"): "  the operation log's own database calls",
    ("sites/kit/tenancy.py", "hashed_snapshot"): "final-state snapshot and its hash",
    ("verifier/judge.py", "rejudge"): "rejudging",
    ("computerops/core/hashing.py", "canonical_sha256"): "other hashes (recorded state, journal, operations)",
}
"""Each part by the function that bounds it (its file's path ends so, its name), for cProfile's cumulative time."""


async def main(episodes: int, repeats: int) -> None:
    catalog = load_catalog()
    tasks = [task for task in catalog.values() if not task.spec.faults]
    with tempfile.TemporaryDirectory(prefix="computerops-replay-profile-") as scratch:
        root = Path(scratch)
        _, run = await bench_levels(tasks, BenchOptions(episodes=episodes, levels=[1]), root / "runs", lambda _: None)
        bundle = RunDirectory(run)
        planned = [catalog[record.task_id] for record in bundle.records()]
        figures, setup_s = await bench_replays(bundle, planned, root / "replay")
        ratio = RatioFigure.of([f.episode_wall_s for f in figures], [f.replay_s for f in figures])
        by_site: dict[str, list[float]] = defaultdict(list)
        for figure in figures:
            by_site[figure.site or '?'].append(figure.replay_s * 1000)
        print(f"{len(figures)} episodes over {len(by_site)} sites: median episode "
              f"{statistics.median(f.episode_wall_s for f in figures) * 1000:.0f} ms, median replay "
              f"{statistics.median(f.replay_s for f in figures) * 1000:.1f} ms; ratio of the medians "
              f"{ratio.ratio:.1f} x [{ratio.low:.1f}, {ratio.high:.1f}]; once per process before the first replay "
              f"{setup_s:.2f} s; "
              f"{sum(f.result == 'PASS' for f in figures)} PASS")
        print("median replay by site (ms): " + ", ".join(f"{site} {statistics.median(times):.1f}"
                                                        for site, times in sorted(by_site.items())))
        if repeats:
            await _profile(bundle, planned, repeats, root / "profile")


async def _profile(bundle: RunDirectory, planned: list[LoadedTask], repeats: int, root: Path) -> None:
    registry = tenant_registry(root)
    try:
        prepare_replay(registry, planned)
        episodes = [bundle.load_episode(record) for record in bundle.records()]
        for task, episode in zip(planned, episodes, strict=True):  # warm: templates compiled, statements cached
            await replay_episode(task, episode, registry)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(repeats):
            for task, episode in zip(planned, episodes, strict=True):
                await replay_episode(task, episode, registry)
        profile.disable()
    finally:
        registry.close()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    cumulative = {part: sum(row[3] for (path, _, name), row in stats.items()
                            if path.endswith(part[0]) and name == part[1]) for part in PARTS}
    whole = cumulative[("replays/replay.py", "replay_episode")]
    replays = repeats * len(episodes)
    print(f"\n{replays} warm replays under cProfile ({whole / replays * 1000:.1f} ms each with the profiler's cost)\n")
    print("| part | share of replay CPU |\n|---|---|")
    for part, label in PARTS.items():
        print(f"| {label} | {cumulative[part] / whole:.0%} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=24, help="SCRIPTED episodes (the bench's plan, every site)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="warm replays of each episode profiled")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.episodes, arguments.profile))
