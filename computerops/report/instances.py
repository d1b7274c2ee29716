"""Which task instances a run judged: how many templates and instances, and whether they were published (the
catalog's seeds, readable by anyone) or fresh (seeds drawn at reservation, never published)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from computerops.runs.records import EpisodeRecord
from tasks.templates import FRESH_SEED_FLOOR, parse_instance_id

InstanceKind = Literal["published instances", "fresh instances", "published and fresh instances"]


class InstancesJudged(BaseModel):
    """The run's instances by kind; what a report says its figures are over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    templates: int
    instances: int
    published: int
    fresh: int
    kind: InstanceKind


def instances_judged(records: Sequence[EpisodeRecord]) -> InstancesJudged | None:
    """The run's instances (None for a run made before instance ids, whose records name bare task ids)."""
    parsed = {record.task_id: parse_instance_id(record.task_id) for record in records}
    if not parsed or any(found is None for found in parsed.values()):
        return None
    seeds = {task_id: found for task_id, found in parsed.items() if found is not None}
    fresh = sum(seed >= FRESH_SEED_FLOOR for _, seed in seeds.values())
    published = len(seeds) - fresh
    kind: InstanceKind = ("fresh instances" if not published else "published instances" if not fresh
                          else "published and fresh instances")
    return InstancesJudged(templates=len({template for template, _ in seeds.values()}), instances=len(seeds),
                           published=published, fresh=fresh, kind=kind)
