"""What a run's task instances were when it began: each instance's whole spec, written beside the manifest, so that
`verify` and `replay` of a run whose regenerated instance differs can name the first field that differs (the hash
alone says only that something did)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, ValidationError

from computerops.core.difference import first_difference
from computerops.core.formats import Versioned
from tasks import LoadedTask

INSTANCES_FILE = "instances.json"
INSTANCES_FORMAT: Literal["computerops.instances/1"] = "computerops.instances/1"


class RunInstances(Versioned):
    """Instance id -> its spec as generated when the run began."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.instances/1"] = INSTANCES_FORMAT
    specs: dict[str, dict[str, Any]]


def instances_text(tasks: Sequence[LoadedTask]) -> str:
    """The run's instances file (an attachment of a new run directory)."""
    specs = {task.id: task.spec.model_dump(mode="json") for task in sorted(tasks, key=lambda t: t.id)}
    return RunInstances(specs=specs).model_dump_json(indent=1)


def changed_field(run_root: Path, task: LoadedTask) -> str | None:
    """Where `task` as regenerated now first differs from the instance the run began with, or None when the run
    holds no record of it (a run made before this file) or none differs."""
    try:
        recorded = RunInstances.model_validate_json((run_root / INSTANCES_FILE).read_bytes()).specs.get(task.id)
    except (OSError, ValidationError, json.JSONDecodeError):
        return None
    return None if recorded is None else first_difference(recorded, task.spec.model_dump(mode="json"))
