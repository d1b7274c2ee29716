"""A run's outcomes grouped by what its instances were: each difficulty dimension (steps of the scripted control,
pages, form fields, distractors on the deciding page, values carried), the template, or the site and family —
verified success over attempted with its Wilson interval, per value. Read from the run's records and the instances
file it wrote when it began (`computerops.runs.instances`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from computerops.report.figures import Proportion, proportion
from computerops.runs.instances import RunInstances
from computerops.runs.records import EpisodeRecord

Grouping = Literal["steps", "pages", "fields", "distractors", "carried", "template", "site", "family"]
GROUPINGS: tuple[Grouping, ...] = ("steps", "pages", "fields", "distractors", "carried", "template", "site", "family")


class GroupRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: str
    instances: int
    verified: Proportion
    false_completions: Proportion


class GroupedOutcomes(BaseModel):
    """Verified success and false completions per value of one grouping (`value` "unknown" where the instance
    declares none, e.g. a template without a distractors note)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by: Grouping
    rows: list[GroupRow]


def _value(by: Grouping, task_id: str, instances: RunInstances) -> str:
    if by == "template":
        return instances.templates.get(task_id, task_id)
    if by in ("site", "family"):
        return str(instances.specs.get(task_id, {}).get(by, "unknown"))
    found = instances.difficulty.get(task_id, {}).get(by)
    return "unknown" if found is None else str(found)


def grouped_outcomes(records: Sequence[EpisodeRecord], instances: RunInstances, by: Grouping) -> GroupedOutcomes:
    """The run's attempted episodes (infrastructure failures left out, as in every rate) by `by`."""
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        if record.outcome != "infrastructure_failure":
            groups[_value(by, record.task_id, instances)].append(record)

    def order(value: str) -> tuple[int, int, str]:
        return (0, int(value), "") if value.isdigit() else (1, 0, value)

    rows = [GroupRow(value=value, instances=len({r.task_id for r in found}),
                     verified=proportion(sum(r.outcome == "verified_success" for r in found), len(found),
                                         "attempted episodes"),
                     false_completions=proportion(sum(r.outcome == "false_completion" for r in found), len(found),
                                                  "attempted episodes"))
            for value, found in sorted(groups.items(), key=lambda item: order(item[0]))]
    return GroupedOutcomes(by=by, rows=rows)
