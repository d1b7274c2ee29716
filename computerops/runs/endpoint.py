"""A run's model endpoint as an executor sets it up: the base URL and API key a run's model client is given, with a
scripted endpoint served over HTTP for the run's duration (by the local executor, computerops/runs/runner.py, and by
each Ray worker, computerops/runs/ray_executor.py)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from adapter.scripted import create_scripted_app
from computerops.runs.config import EndpointConfig
from computerops.runs.serving import serve_app
from tasks import LoadedTask, ScriptedStep

ExtraSteps = Mapping[str, Mapping[str, list[ScriptedStep]]]
"""Step lists a scripted endpoint is given beside the task files': task id -> name -> steps."""


class EndpointError(RuntimeError):
    """The model endpoint cannot be used (missing key, unreachable)."""


@asynccontextmanager
async def model_endpoint(
    endpoint: EndpointConfig, tasks: list[LoadedTask], extra_steps: ExtraSteps | None = None
) -> AsyncIterator[tuple[str, str]]:
    """(base URL, API key) of the endpoint; a scripted one is served over HTTP for the duration, with the step
    lists of `extra_steps` for its `mutant:<name>` policies."""
    if endpoint.kind == "scripted":
        async with serve_app(create_scripted_app(tasks, extra_steps=extra_steps)) as origin:
            yield f"{origin}/v1", "scripted"
        return
    assert endpoint.base_url is not None
    key = "not-needed"
    if endpoint.api_key_env:
        key = os.environ.get(endpoint.api_key_env, "")
        if not key:
            raise EndpointError(f"--api-key-env {endpoint.api_key_env}: that environment variable is not set")
    yield endpoint.base_url, key
