"""What a run's task instances were when it began: each instance's whole spec, written beside the manifest, so that
`verify` and `replay` of a run whose regenerated instance differs can name the first field that differs (the hash
alone says only that something did)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from computerops.core.difference import first_difference
from computerops.core.formats import Versioned
from tasks import LoadedTask

INSTANCES_FILE = "instances.json"
INSTANCES_FORMAT: Literal["computerops.instances/1"] = "computerops.instances/1"


class RunInstances(Versioned):
    """Instance id -> its spec as generated when the run began, its template and its difficulty dimensions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.instances/1"] = INSTANCES_FORMAT
    specs: dict[str, dict[str, Any]]
    templates: dict[str, str] = Field(default_factory=dict)
    difficulty: dict[str, dict[str, int | None]] = Field(default_factory=dict)
    """Instance id -> `tasks.catalog.Difficulty` (steps, pages, fields, distractors, carried)."""


def instances_text(tasks: Sequence[LoadedTask]) -> str:
    """The run's instances file (an attachment of a new run directory)."""
    ordered = sorted(tasks, key=lambda t: t.id)
    return RunInstances(
        specs={task.id: task.spec.model_dump(mode="json") for task in ordered},
        templates={task.id: task.template_id for task in ordered},
        difficulty={task.id: task.instance.difficulty.as_dict() for task in ordered
                    if task.instance is not None and task.instance.difficulty is not None},
    ).model_dump_json(indent=1)


def read_instances(run_root: Path) -> RunInstances | None:
    """The run's instances file, or None for a run made before it (or one whose file cannot be read)."""
    try:
        return RunInstances.model_validate_json((run_root / INSTANCES_FILE).read_bytes())
    except (OSError, ValidationError, json.JSONDecodeError):
        return None


def changed_field(run_root: Path, task: LoadedTask) -> str | None:
    """Where `task` as regenerated now first differs from the instance the run began with, or None when the run
    holds no record of it (a run made before this file) or none differs."""
    found = read_instances(run_root)
    recorded = None if found is None else found.specs.get(task.id)
    return None if recorded is None else first_difference(recorded, task.spec.model_dump(mode="json"))
