"""The resident memory of this process tree, sampled while `computerops bench` measures (computerops/bench/measure.py,
and the executors' part in computerops/bench/scaling.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psutil


@contextmanager
def peak_memory() -> Iterator[Callable[[], float]]:
    """Sample the resident memory of this process tree every 50 ms; yields a function giving the peak in MiB."""
    peak = 0
    stop = threading.Event()
    me = psutil.Process()

    def sample() -> None:
        nonlocal peak
        while True:
            total = 0
            for process in [me, *me.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    continue  # a process that ended between listing and reading
            peak = max(peak, total)
            if stop.wait(0.05):
                return

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield lambda: round(peak / 2**20, 1)
    finally:
        stop.set()
        thread.join()
