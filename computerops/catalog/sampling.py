"""Seeded samples of the catalog's instances, for checks that cannot afford every instance: the same draw as a
reserved subset (rank by sha256("<seed>:<instance id>")), over the whole selection or within each template."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from tasks import LoadedTask


def _ranked(tasks: Sequence[LoadedTask], seed: int) -> list[LoadedTask]:
    return sorted(tasks, key=lambda task: hashlib.sha256(f"{seed}:{task.id}".encode()).hexdigest())


def sample_instances(tasks: Sequence[LoadedTask], *, seed: int, count: int | None = None,
                     per_template: int | None = None) -> list[LoadedTask]:
    """At most `per_template` instances of each template, then at most `count` of those, drawn by `seed`; in the
    selection's order. Without either bound, the selection itself."""
    chosen = list(tasks)
    if per_template is not None:
        groups: dict[str, list[LoadedTask]] = {}
        for task in chosen:
            groups.setdefault(task.template_id, []).append(task)
        kept = {task.id for group in groups.values() for task in _ranked(group, seed)[:per_template]}
        chosen = [task for task in chosen if task.id in kept]
    if count is not None:
        kept = {task.id for task in _ranked(chosen, seed)[:count]}
        chosen = [task for task in chosen if task.id in kept]
    return chosen
