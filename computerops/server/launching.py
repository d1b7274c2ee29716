"""What the server's launch form and `POST /api/runs` accept: a run's settings with the run named, its tasks given
as a reserved subset of the server (by name) or as catalog ids, never as a path; checked before any worker starts."""

from __future__ import annotations

import re

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from computerops.core.execution import ExecutorChoice
from computerops.core.vocabulary import ExecutorKind
from computerops.runs.config import EndpointConfig
from computerops.server.names import inside
from computerops.server.settings import ENVIRONMENT_NAME, TOKEN_VARIABLE, ServerSettings
from computerops.service.errors import ServiceError
from computerops.service.launch import RunRequest

_TASK = r"[a-z0-9][a-z0-9._-]{0,99}(@[0-9]{1,15})?"
TASK_SELECTION = re.compile(rf"all|{_TASK}(,{_TASK}){{0,499}}")
"""`all`, or template ids and instance ids (`TEMPLATE@SEED`), comma-separated."""


class Execution(BaseModel):
    """How a launched run is carried out: the local executor (`concurrency` episodes at once over one browser) or the
    Ray executor (`workers` Ray actors; none given: one per CPU of the cluster). The Ray cluster is the server's
    (`ServerSettings.ray_address`), never the request's."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(default=1, ge=1, le=8)
    executor: ExecutorKind = "local"
    workers: int | None = Field(default=None, ge=1, le=64)

    def executor_choice(self, settings: ServerSettings) -> ExecutorChoice:
        """The service's executor settings; ServiceError (nothing started) when they do not go together."""
        if self.executor != "ray" and self.workers is not None:  # the Ray address is the server's, never asked
            raise ServiceError("--workers goes with --executor ray")
        choice = ExecutorChoice(executor=self.executor, workers=self.workers,
                                ray_address=settings.ray_address if self.executor == "ray" else None)
        if (problem := choice.problem(self.concurrency)) is not None:
            raise ServiceError(problem)  # the CLI's option names are this form's field names
        return choice


class LaunchRun(RunRequest, Execution):
    """A run to launch: `run_id` names its directory in the runs folder; `subset` (a reserved subset of this
    server, by name) or `tasks` (`all` or comma-separated ids) selects its tasks."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    subset: str | None = None
    trace: bool = False

    @field_validator("tasks")
    @classmethod
    def _tasks_are_ids(cls, value: str) -> str:
        if not TASK_SELECTION.fullmatch(value.strip()) or value.strip().endswith(".json"):
            raise ValueError("tasks must be `all` or comma-separated task ids (a reserved subset is given by name "
                             "in `subset`)")
        return value.strip()



class LaunchExperiment(Execution):
    """A frozen experiment to run: its lock (a lock file of this server, by name) and the run's name."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    lock: str


def key_variables(endpoint: EndpointConfig) -> list[tuple[str, str | None]]:
    """The API key variables `endpoint` and its fallback name, each with the launch field that names it."""
    named = [("api_key_env", endpoint.api_key_env)]
    if endpoint.fallback is not None:
        named.append(("fallback_api_key_env", endpoint.fallback.api_key_env))
    return named


def check_key_variables(named: EndpointConfig | list[tuple[str, str | None]], settings: ServerSettings) -> None:
    """Refuse (ServiceError, nothing started, no variable read) a run whose endpoint or fallback names an API key
    variable the operator did not allow when starting the server (`ServerSettings.api_key_envs`): the server sends
    that variable's value as a bearer token to the base URL the request names. `named`: an endpoint (a manifest's,
    a lock's) or (field, variable) pairs of a request, checked before the request is planned."""
    for field, name in key_variables(named) if isinstance(named, EndpointConfig) else named:
        if name is not None and name not in settings.api_key_envs:
            allowed = (f"it allows {', '.join(settings.api_key_envs)}" if settings.api_key_envs
                       else "it allows none")
            how = ("it is the server's own token, which is never sent to an endpoint" if name == TOKEN_VARIABLE
                   else f"its operator allows it by starting the server with `--api-key-env {name}`"
                   if ENVIRONMENT_NAME.fullmatch(name) else "it is not an environment variable's name")
            raise ServiceError(f"{field}: {name[:130]} is not an API key variable this server lets launches use "
                               f"({allowed}); {how}")


def run_request(launch: LaunchRun, settings: ServerSettings) -> RunRequest:
    """The service's request for a launch: the subset resolved to its file in the server's subsets folder."""
    fields = launch.model_dump(exclude={"run_id", "subset", "trace", *Execution.model_fields})
    if launch.subset is None and "tasks" not in launch.model_fields_set:
        raise ServiceError("give a reserved subset or tasks (`all` for the whole catalog)")
    if launch.subset is not None:
        if "tasks" in launch.model_fields_set:
            raise ServiceError("give a subset or tasks, not both")
        fields["tasks"] = str(subset_path(settings, launch.subset))
    return RunRequest.model_validate(fields)


def subset_path(settings: ServerSettings, name: str) -> str:
    path = inside(settings.subsets, name if name.endswith(".json") else f"{name}.json", "subset")
    if not path.is_file():
        raise ServiceError(f"no reserved subset named {name!r} (reserve one first)", "not_found")
    return str(path)


class EndpointUnreachable(ServiceError):
    """No connection to an endpoint could be made or kept (refused, reset, a name that does not resolve): a run with
    a fallback endpoint goes on on it, as `computerops run` does (computerops/runs/runner.py `unreachable_primary`)."""


def probe_endpoint(base_url: str, api_key: str | None, timeout_s: float = 5.0) -> None:
    """Refuse an OpenAI-compatible endpoint that does not answer its model list (nothing is started for it)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout_s)
    except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:  # no connection made or kept; not a timeout
        raise EndpointUnreachable(f"the endpoint {base_url} did not answer: it could not be reached "
                                  f"({type(exc).__name__}: {exc})") from exc
    except httpx.HTTPError as exc:
        raise ServiceError(f"the endpoint {base_url} did not answer: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise ServiceError(f"the endpoint {base_url} answered its model list with HTTP {response.status_code}")
