"""Where an episode's time goes: run a few SCRIPTED episodes through the real runner (`execute_run`, one at a time)
and print, as Markdown, (1) wall time by span (model request, observe and its parts, act and its settle, the
routing check, the egress proxy, judge and replay), from a first pass without a profiler, and (2) CPU time of the
event loop's thread by component (cProfile self time, grouped by where the code lives; a builtin or standard-library
function's time goes to its callers), from a second pass of the same episodes under cProfile.

Everything in-process shares one event loop (the sites server, the scripted endpoint, the egress proxy, the adapter,
the openai client), so the cProfile of that thread is their CPU; Chromium and Playwright's Node driver are other
processes, seen here only as time the loop waits (`select.epoll`). Spans are wall clock and nest (act includes its
settle; observe includes the annotation and the render), so they do not sum to the episode.

    .venv/bin/python scripts/profile_episode.py [--tasks ID,ID] [--repeat N]

Figures are from one machine and one run; compare shares, not milliseconds, across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import pstats
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_TASKS = "helpdesk.escalate-chargeback,helpdesk.escalate-account-takeover,helpdesk.answer-latest-order"

SPANS: dict[str, list[float]] = defaultdict(list)
"""Span name -> durations in ms (from the first pass, without the profiler)."""
PROFILING = False
"""The second pass: cProfile on during each episode, spans not kept."""

COMPONENTS: tuple[tuple[str, str], ...] = (
    ("renderer (adapter/render.py, lxml)", "adapter/render.py|lxml"),
    ("openai client (request build and transform, reply parsing)", "openai/"),
    ("httpx / httpcore (the client's HTTP)", "httpx|httpcore|h11"),
    ("egress proxy (adapter/egress.py)", "adapter/egress.py"),
    ("containment routing (adapter/containment.py)", "adapter/containment.py"),
    ("Playwright client (protocol messages)", "playwright/"),
    ("sites server (sites/, starlette, fastapi, uvicorn)", "sites/|starlette|fastapi|uvicorn"),
    ("database (sqlalchemy, sqlmodel, sqlite3)", "sqlalchemy|sqlmodel|sqlite3"),
    ("pydantic (models, validation, JSON)", "pydantic"),
    ("scripted endpoint (adapter/scripted)", "adapter/scripted"),
    ("judge, replay, run directory (verifier/, replays/, computerops/)", "verifier/|replays/|computerops/"),
    ("rest of the adapter (driver, world, loop, lines...)", "adapter/"),
    ("waiting on Chromium and the Node driver (epoll)", "select.epoll|selectors.py"),
)


def _span(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(function):
        @functools.wraps(function)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                if not PROFILING:
                    SPANS[name].append((time.perf_counter() - began) * 1000)
        return timed_async

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            if not PROFILING:
                SPANS[name].append((time.perf_counter() - began) * 1000)
    return timed


def _instrument(profiler: cProfile.Profile) -> None:
    """Spans around the functions named below, and the profiler on during each episode (before the runner imports
    `run_episode`, so that it calls the wrapped one)."""
    import adapter.driver
    import adapter.loop
    import adapter.world
    import computerops.runs.episode
    from adapter.containment import Containment
    from adapter.egress import EgressProxy

    wrap = [
        (computerops.runs.episode, "run_episode", "episode (reset, drive, judge, save, replay)"),
        (computerops.runs.episode, "_drive", "drive (browser context, model loop)"),
        (computerops.runs.episode, "replay_episode", "replay to a receipt"),
        (computerops.runs.episode, "judge", "judge (verdict)"),
        (adapter.loop.ModelLoop, "_request", "model request (openai client + scripted endpoint)"),
        (adapter.driver.PageDriver, "observe", "observe"),
        (adapter.world.IsolatedWorld, "annotate", "observe: annotation in the page (annotate.js)"),
        (adapter.driver, "render_observation", "observe: render (Python)"),
        (adapter.driver.PageDriver, "act", "act"),
        (adapter.driver.PageDriver, "_settle", "act: settle"),
        (Containment, "_route", "routing check per request"),
        (EgressProxy, "_forward", "egress proxy per request (with the site's handling)"),
    ]
    for owner, name, label in wrap:
        setattr(owner, name, _span(label, getattr(owner, name)))
    episode = computerops.runs.episode.run_episode

    async def profiled(*args: Any, **kwargs: Any) -> Any:
        if not PROFILING:
            return await episode(*args, **kwargs)
        profiler.enable()
        try:
            return await episode(*args, **kwargs)
        finally:
            profiler.disable()

    computerops.runs.episode.run_episode = profiled


def _attributed(table: dict[Any, Any], key: Any, seconds: float, depth: int) -> list[tuple[str, float]]:
    """A function's self time by component: its own, or for a builtin or standard-library function (isinstance,
    json, typing, posix.write...), its callers' in proportion to the time spent under each of them."""
    label = _component(f"{key[0]}:{key[2]}")
    callers = table[key][4] if key in table else {}
    if not label.startswith("other") or depth >= 4 or not callers:
        return [(label, seconds)]
    under = {caller: max(float(times[2]), 0.0) for caller, times in callers.items()}
    whole = sum(under.values())
    if whole <= 0:
        return [(label, seconds)]
    return [part for caller, share in under.items()
            for part in _attributed(table, caller, seconds * share / whole, depth + 1)]


def _component(path: str) -> str:
    import re
    for label, pattern in COMPONENTS:
        if re.search(pattern, path):
            return label
    return "other (the asyncio loop itself, standard library)"


async def _run(task_ids: list[str], repeat: int, out: Path) -> int:
    from computerops.runs.config import RunConfig, parse_endpoint, plan_episodes
    from computerops.runs.runner import execute_run
    from tasks import load_catalog

    catalog = load_catalog()
    unknown = [task_id for task_id in task_ids if task_id not in catalog]
    if unknown:
        raise SystemExit(f"unknown task ids: {', '.join(unknown)}")
    tasks = [catalog[task_id] for task_id in task_ids]
    endpoint = parse_endpoint("scripted:oracle", base_url=None, model=None, api_key_env=None, artifact_sha256=None)
    config = RunConfig(run_id="profile", tasks=task_ids, endpoint=endpoint, repeat=repeat,
                       episodes=plan_episodes(task_ids, endpoint, repeat=repeat, matched_controls=[]))
    records = await execute_run(config, tasks, out)
    return sum(record.steps for record in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated task ids (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=2, help="episodes per task (default: %(default)s)")
    options = parser.parse_args()
    profiler = cProfile.Profile()
    _instrument(profiler)
    task_ids = [task_id.strip() for task_id in options.tasks.split(",") if task_id.strip()]
    global PROFILING
    with tempfile.TemporaryDirectory() as scratch:
        steps = asyncio.run(_run(task_ids, options.repeat, Path(scratch) / "spans"))
        PROFILING = True
        asyncio.run(_run(task_ids, options.repeat, Path(scratch) / "cpu"))
    episodes = len(SPANS["episode (reset, drive, judge, save, replay)"])
    total = sum(SPANS["episode (reset, drive, judge, save, replay)"])
    print(f"{episodes} SCRIPTED episodes (oracle policy), {steps} steps, {total:.0f} ms of episodes "
          f"({total / max(steps, 1):.1f} ms per step)\n")
    print("| span | count | total ms | median ms | share of episode time |\n|---|---|---|---|---|")
    for name, times in SPANS.items():
        ordered = sorted(times)
        print(f"| {name} | {len(times)} | {sum(times):.0f} | {ordered[len(ordered) // 2]:.2f} | "
              f"{100 * sum(times) / total:.0f} % |")
    stats = pstats.Stats(profiler)
    table = stats.stats  # type: ignore[attr-defined]
    by_component: dict[str, float] = defaultdict(float)
    for key, row in table.items():
        for label, seconds in _attributed(table, key, row[2], depth=0):
            by_component[label] += seconds
    cpu = sum(by_component.values())
    print(f"\nThe event loop's thread during the episodes: {cpu * 1000:.0f} ms (cProfile self time; its overhead "
          "inflates Python-heavy parts)\n")
    print("| component | ms | share |\n|---|---|---|")
    for label, seconds in sorted(by_component.items(), key=lambda item: -item[1]):
        print(f"| {label} | {seconds * 1000:.0f} | {100 * seconds / cpu:.0f} % |")


if __name__ == "__main__":
    main()
