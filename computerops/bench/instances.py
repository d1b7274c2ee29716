"""How long an instance costs: generating a published instance (its site's seeded data already read), and a fresh
one end to end (the site seeded for a new seed, the instance generated, its first tenant created), beside the reset
figure (a fresh tenant of a seed whose template exists) measured in the same run, so the three compare as ratios."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict

from computerops.bench.measure import Distribution, bench_reset, distribution
from computerops.catalog.subsets import REDRAWS
from computerops.core.clock import utc_stamp
from computerops.core.formats import Versioned
from sites.registry import tenant_registry
from tasks.catalog import Catalog, InstanceUndefined, TaskTemplate
from tasks.templates import FRESH_SEED_FLOOR

INSTANCES_FORMAT: Literal["computerops.bench_instances/1"] = "computerops.bench_instances/1"


class InstanceFigures(Versioned):
    """What `computerops bench --only instances` measured."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.bench_instances/1"] = INSTANCES_FORMAT
    created_at: str
    templates: int
    """Varying templates measured (each at every seed sampled)."""
    reset_ms: Distribution
    published_instance_ms: Distribution
    """Generating one published instance, its site's seeded data already read in this process."""
    fresh_instance_ms: Distribution
    """A fresh seed end to end: the site's data seeded, the instance generated, its first tenant created."""
    fresh_undefined: int = 0
    """Fresh seeds at which a template defined no instance (the seed's data hold no record its story needs), each
    replaced by the next seed as a reservation does; not timed."""
    published_to_reset: float
    fresh_to_reset: float
    """Medians over the reset median: the figures as ratios in one run."""


def _uncached(template: TaskTemplate) -> TaskTemplate:
    """The same template without the instances it already generated."""
    return dataclasses.replace(template, _cache={})


def bench_instances(catalog: Catalog, root: Path, *, fresh_seeds: int = 5, per_template: int | None = None,
                    first_fresh_seed: int | None = None) -> InstanceFigures:
    """Time every varying template's published instances (`per_template`: only its first so many) and `fresh_seeds`
    fresh ones each (consecutive seeds from `first_fresh_seed`, by default one the process has never seeded),
    against the reset of the same sites. A fresh seed at which a template defines no instance is counted and the
    next one taken, up to `REDRAWS` in a row."""
    templates: Sequence[TaskTemplate] = [t for t in catalog.templates.values() if t.varying]
    if not templates:
        raise ValueError("the catalog has no varying template to measure")
    reset = bench_reset(sorted({(t.site, 1) for t in templates}), 20, root / "reset")
    published: list[float] = []
    for template in templates:
        for seed in template.seeds[:per_template]:
            template.instance(seed)  # the seed's site data read once; not what is measured
            began = time.perf_counter()
            _uncached(template).instance(seed)
            published.append((time.perf_counter() - began) * 1000)
    fresh: list[float] = []
    registry = tenant_registry(root / "fresh")
    start = FRESH_SEED_FLOOR + time.time_ns() % 10**9 if first_fresh_seed is None else first_fresh_seed
    if start < FRESH_SEED_FLOOR:
        raise ValueError(f"a fresh seed is at least {FRESH_SEED_FLOOR}, got {start}")
    seeds = itertools.count(start)
    undefined = 0
    try:
        for template in templates:
            for _ in range(fresh_seeds):
                for _ in range(REDRAWS):
                    seed = next(seeds)
                    began = time.perf_counter()
                    try:
                        task = template.instance(seed)
                    except InstanceUndefined:
                        undefined += 1
                        continue
                    registry.drop(registry.create(task.spec.site, task.spec.seed))
                    fresh.append((time.perf_counter() - began) * 1000)
                    break
                else:
                    raise ValueError(f"template {template.id} defined no instance at {REDRAWS} fresh seeds in a row "
                                     f"(from {seed - REDRAWS + 1})")
    finally:
        registry.close()
    published_ms, fresh_ms = distribution(published, "ms"), distribution(fresh, "ms")
    return InstanceFigures(
        created_at=utc_stamp(), templates=len(templates), reset_ms=reset,
        published_instance_ms=published_ms, fresh_instance_ms=fresh_ms, fresh_undefined=undefined,
        published_to_reset=round(published_ms.median / reset.median, 1),
        fresh_to_reset=round(fresh_ms.median / reset.median, 1))
