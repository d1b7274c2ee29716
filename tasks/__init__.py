"""The task catalog: typed `TaskSpec` schema and the YAML loader."""

from tasks.catalog import CATALOG_ROOT, LoadedTask, TaskFileError, load_catalog, load_task, select_tasks
from tasks.spec import (
    AnswerCheck,
    MutationRule,
    NegativeControl,
    Ordered,
    RowCheck,
    RowSelector,
    ScriptedStep,
    ViaRoute,
    Visited,
)
from tasks.task import TaskSpec

__all__ = [
    "CATALOG_ROOT",
    "AnswerCheck",
    "LoadedTask",
    "MutationRule",
    "NegativeControl",
    "Ordered",
    "RowCheck",
    "RowSelector",
    "ScriptedStep",
    "TaskFileError",
    "TaskSpec",
    "ViaRoute",
    "Visited",
    "load_catalog",
    "load_task",
    "select_tasks",
]
