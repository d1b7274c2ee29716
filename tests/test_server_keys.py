"""The operator server reads only the API key variables its operator allowed (`computerops server --api-key-env`):
a launch (by the API or the form), an experiment lock or a resumed manifest naming any other variable, the server's
own token above all, is refused naming it, and that variable is never looked up, probed with or handed to a worker
with the secret in its environment (issue 47: the server sent COMPUTEROPS_SERVER_TOKEN as a bearer token to
whatever base URL a launch named)."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_server import RecordingJobs, runs_folder, serve
from tiers import examples

from computerops.server.jobs import worker_environment
from computerops.server.settings import TOKEN_VARIABLE, ServerSettings

ALLOWED = ("SPARE_API_KEY", "LOCAL_API_KEY")
SECRET = "s3cret-never-sent"
BASE = {"run_id": "new", "tasks": "helpdesk.solve-ticket@1", "base_url": "http://127.0.0.1:8080/v1", "model": "m"}
FALLBACK = {"fallback_base_url": "http://127.0.0.1:8081/v1", "fallback_model": "spare"}


class RecordingEnviron(MutableMapping[str, str]):
    """`os.environ` as it is, recording every variable looked up by name (`[]`, `get`, `in`)."""

    def __init__(self, inner: MutableMapping[str, str]) -> None:
        self.inner = inner
        self.looked_up: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.looked_up.add(key)
        return self.inner[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.looked_up.add(key)
        return key in self.inner

    def __setitem__(self, key: str, value: str) -> None:
        self.inner[key] = value

    def __delitem__(self, key: str) -> None:
        del self.inner[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)


class Server:
    """A test server over a scratch runs folder whose probes of endpoints are recorded, not sent."""

    def __init__(self, runs: Path) -> None:
        self.settings = ServerSettings(runs=runs, api_key_envs=ALLOWED)
        self.client, self.state = serve(self.settings)
        assert isinstance(self.state.jobs, RecordingJobs)
        self.jobs = self.state.jobs
        self.probes: list[tuple[str, str | None]] = []
        self.state.probe = lambda base_url, api_key: self.probes.append((base_url, api_key))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    made = Server(runs_folder(tmp_path_factory.mktemp("keys")))
    with made.client:
        yield made
    made.state.close()


@contextmanager
def environment_with(name: str) -> Iterator[RecordingEnviron]:
    """`name` set to SECRET (what it was restored after), every lookup by name recorded."""
    recording = RecordingEnviron(os.environ)
    before = os.environ.get(name)
    os.environ[name] = SECRET
    real = os.environ
    os.environ = recording  # type: ignore[assignment]  # noqa: B003
    try:
        yield recording
    finally:
        os.environ = real  # noqa: B003
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def refused_unread(server: Server, name: str, field: str, answer: Any, recording: RecordingEnviron) -> None:
    """The launch was refused naming `name` and how to allow it, nothing started, `name` never looked up or sent."""
    text = html.unescape(answer.text)
    assert answer.status_code == 422, text
    if answer.headers["content-type"].startswith("application/json"):
        assert json.loads(text)["detail"].startswith(f"{field}: {name} is not an API key variable")
    else:  # the form names the field by its label
        label = {"api_key_env": "API key variable", "fallback_api_key_env": "Fallback API key variable"}[field]
        assert f"<li>{label}: {name} is not an API key variable" in text
    if name == TOKEN_VARIABLE:
        assert "the server's own token" in text
    else:
        assert "--api-key-env" in text
    assert name not in recording.looked_up, f"{name} was read"
    assert server.jobs.started == [] and not (server.settings.runs / "new").exists()
    assert all(key != SECRET for _, key in server.probes), "the secret was sent to an endpoint"
    assert SECRET not in text


NOT_ALLOWED = st.one_of(
    st.sampled_from([TOKEN_VARIABLE, "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "HOME",
                     "spare_api_key", "SPARE_API_KEY_", "LOCAL_API_KEYS"]),
    st.from_regex(r"[A-Z_][A-Z0-9_]{0,30}_(TOKEN|API_KEY)", fullmatch=True),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,40}", fullmatch=True),
).filter(lambda name: name not in ALLOWED)
"""Environment variables' names the operator did not allow: the server's own token, names shaped like secrets,
near misses of the allowed names, and any other."""


@given(name=NOT_ALLOWED, field=st.sampled_from(["api_key_env", "fallback_api_key_env"]),
       through=st.sampled_from(["api", "form"]))
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_key_variable_outside_the_allow_list_is_ever_read(server: Server, name: str, field: str,
                                                             through: str) -> None:
    body = {**BASE, **FALLBACK, field: name}
    server.probes.clear()
    with environment_with(name) as recording:
        if through == "api":
            answer = server.client.post("/api/runs", json=body)
        else:
            answer = server.client.post("/runs", data=body)
    refused_unread(server, name, field, answer, recording)


@pytest.mark.parametrize("name", ALLOWED)
@pytest.mark.parametrize("field", ["api_key_env", "fallback_api_key_env"])
def test_an_allowed_key_variable_is_launched_with(server: Server, name: str, field: str) -> None:
    """The other side: a variable the operator allowed is launched with, and the primary's is what its model list is
    asked with (the test above could pass with a server that refuses every key)."""
    server.probes.clear()
    run_id = f"allowed-{field}-{name}".lower().replace("_", "-")
    with environment_with(name):
        answer = server.client.post("/api/runs", json={**BASE, **FALLBACK, "run_id": run_id, field: name})
    assert answer.status_code == 202, answer.text
    spec = server.jobs.started.pop()
    assert spec.run_id == run_id and spec.request is not None and getattr(spec.request, field) == name
    if field == "api_key_env":
        assert server.probes == [(BASE["base_url"], SECRET)]


def test_an_experiment_lock_naming_a_key_variable_not_allowed_is_refused(server: Server) -> None:
    """A lock names its endpoint's key variable too: the server runs it only when the operator allowed it."""
    from computerops.experiment.lock import freeze
    from computerops.runs.config import EndpointConfig
    from tasks import load_catalog
    source = Path(__file__).resolve().parent.parent / "experiments" / "e3-replication.yaml"
    for name, launched in ((TOKEN_VARIABLE, False), ("OPENAI_API_KEY", False), (ALLOWED[0], True)):
        endpoint = EndpointConfig(kind="openai", base_url="http://127.0.0.1:8080/v1", model="m", api_key_env=name)
        lock = freeze(source, load_catalog(), endpoint)
        (server.settings.locks / "e.json").write_text(lock.model_dump_json(), encoding="utf-8")
        with environment_with(name) as recording:
            answer = server.client.post("/api/experiments/runs", json={"run_id": "exp", "lock": "e"})
        if launched:
            assert answer.status_code == 202, answer.text
            assert server.jobs.started.pop().kind == "experiment"
        else:
            assert answer.status_code == 422 and f"api_key_env: {name} is not an API key variable" in answer.text
            assert name not in recording.looked_up and server.jobs.started == []


def test_a_worker_never_has_the_servers_token_in_its_environment() -> None:
    environ = {TOKEN_VARIABLE: SECRET, "PATH": "/usr/bin", ALLOWED[0]: "key"}
    assert worker_environment(environ) == {"PATH": "/usr/bin", ALLOWED[0]: "key"}
