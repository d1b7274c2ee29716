"""Command-line options more than one command takes: how a run's episodes are carried out (`run`, `experiment run`,
`experiment noise-floor`), defined once."""

from __future__ import annotations

from typing import Annotated

import typer

from computerops.core.execution import ExecutorChoice
from computerops.core.vocabulary import ExecutorKind

ExecutorOption = Annotated[ExecutorKind, typer.Option(
    help="local: episodes run in this process over one browser; ray: on Ray actors, each with its own browser and "
         "sites server (pip install 'computerops\\[ray]'). The evidence is the same.")]
RayAddressOption = Annotated[str | None, typer.Option(
    help="With --executor ray: the Ray cluster to join (e.g. HOST:6379); without it a local Ray instance starts "
         "in-process.")]
WorkersOption = Annotated[int | None, typer.Option(
    min=1, help="With --executor ray: Ray actors, one episode in flight each (default: one per CPU of the cluster, "
                "at most one per planned episode).")]


def executor_choice(executor: ExecutorKind, ray_address: str | None, workers: int | None) -> ExecutorChoice:
    """The options as the service takes them (checked there: `ExecutorChoice.problem`)."""
    return ExecutorChoice(executor=executor, ray_address=ray_address, workers=workers)
