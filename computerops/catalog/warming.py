"""Generate the published instances once, on every core, before many processes need them.

A process that needs every published instance (a pytest-xdist worker collecting the tests, a `computerops`
subprocess listing the catalog) reads what another process kept (tasks/instance_cache.py) instead of generating it;
when nothing is kept yet (a clean clone), the first such processes would each generate all of them, at the same time.
`warm_published` generates them first, split over `processes` processes, so that they are generated once and in
parallel, each site's templates in one process.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from tasks import TaskFileError
from tasks.catalog import load_catalog, load_template


@dataclass(frozen=True)
class Warmed:
    """What warming did: instances now kept (or known to be undefined), seeds that failed, and its wall seconds."""

    instances: int
    failed: int
    seconds: float


def _generate(paths: list[str]) -> tuple[int, int]:
    """Every published instance of these task files (read when kept, else generated and kept)."""
    made = failed = 0
    for path in paths:
        template = load_template(Path(path))
        for seed in template.seeds:
            try:
                template.instance(seed)
            except TaskFileError:  # the template's own checks say why, where they need it
                failed += 1
            else:
                made += 1
    return made, failed


def shares(sites: dict[str, dict[str, int]], processes: int) -> list[list[str]]:
    """The task files (by site: file -> its published seeds) split into at most `processes` shares of nearly equal
    published seeds, a site's files kept together in one share: generating seeds a site's database for each seed
    (`sites.kit.seeding.seeded_rows`, kept for the most recent seeds of a process), so a site split over two processes
    would be seeded twice. Whole sites go to the share with the fewest seeds so far, largest first."""
    buckets: list[tuple[int, list[str]]] = [(0, []) for _ in range(max(1, processes))]
    for _, files in sorted(sites.items(), key=lambda item: (-sum(item[1].values()), item[0])):
        index = min(range(len(buckets)), key=lambda i: buckets[i][0])
        total, paths = buckets[index]
        buckets[index] = (total + sum(files.values()), [*paths, *sorted(files)])
    return [paths for _, paths in buckets if paths]


def warm_published(processes: int) -> Warmed:
    """Generate (or read) every published instance of the repository's catalog in `processes` processes."""
    started = time.monotonic()
    catalog = load_catalog()
    sites: dict[str, dict[str, int]] = {}
    for template in catalog.templates.values():
        sites.setdefault(template.site, {})[str(template.path)] = len(template.seeds)
    made = failed = 0
    with ProcessPoolExecutor(max_workers=max(1, processes), mp_context=get_context("spawn")) as pool:
        for share_made, share_failed in pool.map(_generate, shares(sites, processes)):
            made += share_made
            failed += share_failed
    return Warmed(instances=made, failed=failed, seconds=time.monotonic() - started)
