"""How a run is to be carried out (`--executor`, `--ray-address`, `--workers`) and where its progress lines go
(`Progress`): never a condition of its results. Light to import (the CLI's options are built on it)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from computerops.core.vocabulary import ExecutorKind


class ExecutorChoice(BaseModel):
    """How a run is to be carried out, as `run`, `experiment run` and the server's launch take it: never a condition of
    the results (the manifest's `execution` records what was done)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: ExecutorKind = "local"
    ray_address: str | None = None
    """With `ray`: the cluster to join; None starts a local Ray instance in-process."""
    workers: int | None = Field(default=None, ge=1)
    """With `ray`: Ray actors, one episode in flight each; None: as many as the cluster's CPUs allow (one each), at
    most one per planned episode."""

    def problem(self, concurrency: int) -> str | None:
        """Why these settings do not go together (with `concurrency` episodes in flight asked for), else None."""
        if self.executor != "ray" and (self.ray_address is not None or self.workers is not None):
            return "--ray-address and --workers go with --executor ray"
        if self.executor == "ray" and concurrency != 1:
            return "with --executor ray, --workers sets the episodes in flight (one per worker); drop --concurrency"
        return None


LOCAL = ExecutorChoice()
"""Episodes run in this process, over one browser: the default."""

Progress = Callable[[str], None]
"""Where a run's progress lines go, one at a time, as they happen (the CLI prints them)."""
