"""The operator server's JSON API in process (no browser, no worker started): every route answered, bad input
refused with a 4xx and a message and nothing started, no route reading outside the runs folder, the token required
off loopback, and the OpenAPI schema fuzzed by schemathesis (no 5xx on any input, no status it does not document)."""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from operator_server import FIXTURE_RUN, RUN, RecordingJobs, runs_folder, serve
from schemathesis.core.result import Err, Ok
from schemathesis.specs.openapi.schemas import OpenApiSchema
from tiers import examples
from typer.testing import CliRunner

from computerops.catalog.subsets import ReservedSubset
from computerops.cli.main import app as cli
from computerops.core.execution import ExecutorChoice
from computerops.runs.bundle import RunDirectory
from computerops.server import worker
from computerops.server.api import router as api_router
from computerops.server.app import create_server_app
from computerops.server.jobs import JobSpec, JobState
from computerops.server.launching import EndpointUnreachable, probe_endpoint
from computerops.server.pages import router as pages_router
from computerops.server.settings import ServerSettings
from computerops.server.state import ServerState
from computerops.service.errors import ServiceError
from tasks import load_catalog

COVERED: set[tuple[str, str]] = set()
"""(method, route path) of every API route a test below called: the last test checks none was left out."""


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return runs_folder(tmp_path)


ALLOWED_KEYS = ("SPARE_API_KEY", "LOCAL_API_KEY")
"""The API key variables the test servers were started with (`computerops server --api-key-env`)."""


def _client(runs: Path, token: str | None = None, ray_address: str | None = None) -> tuple[TestClient, ServerState]:
    return serve(ServerSettings(runs=runs, token=token, ray_address=ray_address, api_key_envs=ALLOWED_KEYS))


@pytest.fixture
def client(runs: Path) -> Iterator[tuple[TestClient, ServerState]]:
    client, state = _client(runs)
    with client:
        yield client, state
    state.close()


def call(client: TestClient, method: str, route: str, url: str, **kwargs: Any) -> Any:
    COVERED.add((method, route))
    return client.request(method, url, **kwargs)


def test_runs_report_episodes_and_files_of_a_stored_run(client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    listed = call(c, "GET", "/api/runs", "/api/runs").json()
    assert [r["run_id"] for r in listed] == [RUN]
    assert (listed[0]["planned"], listed[0]["admitted"], listed[0]["verified"], listed[0]["false_completions"]) \
        == (2, 2, 1, 1)
    detail = call(c, "GET", "/api/runs/{run_id}", f"/api/runs/{RUN}").json()
    assert detail["run"]["status"] == "complete" and detail["job"] is None
    report = call(c, "GET", "/api/runs/{run_id}/report", f"/api/runs/{RUN}/report").json()
    assert report["format"].startswith("computerops.report/")
    records = [json.loads(line) for line in (FIXTURE_RUN / "episodes.jsonl").read_text().splitlines()]
    episodes = call(c, "GET", "/api/runs/{run_id}/episodes", f"/api/runs/{RUN}/episodes").json()
    assert [e["episode_id"] for e in episodes] == [r["episode_id"] for r in records]
    failed = c.get(f"/api/runs/{RUN}/episodes", params={"outcome": "verified_success"}).json()
    assert [e["outcome"] for e in failed] == ["verified_success"]
    first = records[0]["episode_id"]
    view = call(c, "GET", "/api/runs/{run_id}/episodes/{episode_id}", f"/api/runs/{RUN}/episodes/{first}").json()
    verdict = json.loads((FIXTURE_RUN / "episodes" / first / "verdict.json").read_text())
    assert [check["name"] for check in view["verdict"]["checks"]] == [check["name"] for check in verdict["checks"]]
    file = call(c, "GET", "/api/runs/{run_id}/episodes/{episode_id}/files/{name}",
                f"/api/runs/{RUN}/episodes/{first}/files/verdict.json")
    assert file.status_code == 200 and file.content == (FIXTURE_RUN / "episodes" / first / "verdict.json").read_bytes()
    progress = call(c, "GET", "/api/runs/{run_id}/progress", f"/api/runs/{RUN}/progress").json()
    assert progress["planned"] == 2 and len(progress["admitted"]) == 2 and not progress["being_written"]
    compared = call(c, "GET", "/api/compare", f"/api/compare?a={RUN}&b={RUN}").json()
    assert {e["change"] for e in compared["episodes"]} == {"same"}
    not_experiment = call(c, "GET", "/api/runs/{run_id}/experiment", f"/api/runs/{RUN}/experiment")
    assert not_experiment.status_code == 404 and "not an experiment run" in not_experiment.json()["detail"]


def test_events_of_a_finished_run_name_every_episode_and_end(client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    text = call(c, "GET", "/api/runs/{run_id}/events", f"/api/runs/{RUN}/events").text
    events = [(block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n")[1].removeprefix("data: ")))
              for block in text.strip().split("\n\n")]
    records = [json.loads(line) for line in (FIXTURE_RUN / "episodes.jsonl").read_text().splitlines()]
    assert [d["episode_id"] for kind, d in events if kind == "started"] == [r["episode_id"] for r in records]
    assert [(d["episode_id"], d["outcome"]) for kind, d in events if kind == "admitted"] \
        == [(r["episode_id"], r["outcome"]) for r in records]
    assert events[-1] == ("end", {"sealed": True, "exit_code": None, "admitted": 2, "planned": 2})


def test_catalog_subsets_and_locks(client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    helpdesk = call(c, "GET", "/api/catalog", "/api/catalog?site=helpdesk").json()
    assert helpdesk and all(t["site"] == "helpdesk" and len(t["sha256"]) == 64 for t in helpdesk)
    made = call(c, "POST", "/api/subsets", "/api/subsets", json={"name": "s1", "count": 2, "seed": 7})
    assert made.status_code == 201 and len(made.json()["tasks"]) == 2
    again = c.post("/api/subsets", json={"name": "s1", "count": 2, "seed": 7})
    assert again.status_code == 409 and "never overwritten" in again.json()["detail"]
    listed = call(c, "GET", "/api/subsets", "/api/subsets").json()
    assert [(s["name"], s["count"]) for s in listed] == [("s1", 2)]
    shown = call(c, "GET", "/api/subsets/{name}", "/api/subsets/s1").json()
    assert shown["lock_sha256"] == made.json()["lock_sha256"]
    assert c.get("/api/subsets/nope").status_code == 404
    assert call(c, "GET", "/api/locks", "/api/locks").json() == []
    (state.settings.locks / "e1.json").write_text("{}")
    assert c.get("/api/locks").json() == ["e1"]


def _nothing_started(state: ServerState, runs: Path, before: set[str]) -> None:
    assert isinstance(state.jobs, RecordingJobs) and state.jobs.started == []
    assert {p.name for p in runs.iterdir()} == before


NEW = {"run_id": "new", "tasks": "helpdesk.solve-ticket@1"}
"""A launch of one task under a new name: each case below adds what is wrong with it."""


@pytest.mark.parametrize(("body", "status", "said"), [
    ({"run_id": "new", "subset": "nope", "endpoint": "scripted:oracle"}, 404, "no reserved subset named 'nope'"),
    ({"run_id": "new", "tasks": "no.such-task", "endpoint": "scripted:oracle"}, 422, "no.such-task"),
    ({"run_id": "new", "tasks": "/etc/passwd.json", "endpoint": "scripted:oracle"}, 422, "comma-separated task ids"),
    ({"run_id": "new", "tasks": "../../x.json", "endpoint": "scripted:oracle"}, 422, "comma-separated task ids"),
    ({**NEW, "endpoint": "scripted:no-such-policy"}, 422, "no-such-policy"),
    ({**NEW, "base_url": "ftp://example.org/v1", "model": "m"}, 422, "--base-url"),
    ({**NEW, "base_url": "http://127.0.0.1:9/v1", "model": "m"}, 422, "did not answer"),
    ({**NEW, "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "HOME"}, 422, "API key variable"),
    ({**NEW}, 422, "no endpoint"),
    ({"run_id": "new", "endpoint": "scripted:oracle"}, 422, "give a reserved subset or tasks"),
    ({"run_id": "new", "subset": "s", "tasks": "all", "endpoint": "scripted:oracle"}, 422, "not both"),
    ({**NEW, "endpoint": "scripted:oracle", "fault_rate": 0.5}, 422, "--fault-classes"),
    ({**NEW, "endpoint": "scripted:oracle", "repeat": 0}, 422, "repeat"),
    ({**NEW, "endpoint": "scripted:oracle", "temperature": -1}, 422, "temperature"),
    ({**NEW, "endpoint": "scripted:oracle", "seed": -3}, 422, "seed"),
    ({"run_id": "../escape", "endpoint": "scripted:oracle"}, 422, "is not a name"),
    ({"run_id": ".server", "endpoint": "scripted:oracle"}, 422, "is not a name"),
    ({"run_id": RUN, "tasks": "helpdesk.solve-ticket@1", "endpoint": "scripted:oracle"}, 409,
     f"a run named {RUN} already exists: choose another run_id"),
    ({"run_id": "new", "endpoint": "scripted:oracle", "surprise": 1}, 422, "surprise"),
    ({**NEW, "endpoint": "scripted:oracle", "executor": "ray", "concurrency": 2}, 422, "drop --concurrency"),
    ({**NEW, "endpoint": "scripted:oracle", "workers": 2}, 422, "goes with --executor ray"),
    ({**NEW, "endpoint": "scripted:oracle", "executor": "ray", "workers": 0}, 422, "workers"),
    ({**NEW, "endpoint": "scripted:oracle", "executor": "dask"}, 422, "executor"),
    ({**NEW, "endpoint": "scripted:oracle", "executor": "ray", "ray_address": "evil.example:6379"}, 422,
     "ray_address"),
])
def test_a_bad_launch_is_refused_with_its_reason_and_starts_nothing(
        client: tuple[TestClient, ServerState], runs: Path, body: dict[str, Any], status: int, said: str) -> None:
    c, state = client
    before = {p.name for p in runs.iterdir()}
    refused = call(c, "POST", "/api/runs", "/api/runs", json=body)
    assert refused.status_code == status, refused.text
    assert said in json.dumps(refused.json()["detail"])
    assert str(runs.resolve()) not in refused.text and "--out" not in refused.text, "the server's path or a CLI flag"
    _nothing_started(state, runs, before)


def test_a_subset_whose_task_changed_is_refused(client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    made = c.post("/api/subsets", json={"name": "s2", "count": 1, "seed": 3}).json()
    data = {key: value for key, value in made.items() if key != "name"}
    data["tasks"][0]["sha256"] = "0" * 64
    stale = ReservedSubset.model_validate(data)
    (state.settings.subsets / "s2.json").write_text(
        stale.model_copy(update={"lock_sha256": stale.computed_lock()}).model_dump_json())
    before = {p.name for p in runs.iterdir()}
    refused = c.post("/api/runs", json={"run_id": "new", "subset": "s2", "endpoint": "scripted:oracle"})
    assert refused.status_code == 422 and "changed since the subset was reserved" in refused.json()["detail"]
    _nothing_started(state, runs, before)


def test_a_good_launch_hands_its_plan_to_a_worker(client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    c.post("/api/subsets", json={"name": "s3", "count": 2, "seed": 5})
    launched = c.post("/api/runs", json={"run_id": "new", "subset": "s3", "endpoint": "scripted:oracle",
                                         "concurrency": 2})
    assert launched.status_code == 202, launched.text
    assert isinstance(state.jobs, RecordingJobs)
    [spec] = state.jobs.started
    assert spec.kind == "run" and spec.run_id == "new" and spec.concurrency == 2 and spec.request is not None
    assert spec.request.tasks == str(state.settings.subsets / "s3.json")
    assert not (runs / "new").exists()  # the worker writes it


class LiveJobs(RecordingJobs):
    """Recording jobs whose every started job stays running (its worker has written nothing yet)."""

    def state(self, run_id: str) -> JobState | None:
        return next((JobState(run_id=s.run_id, kind=s.kind, state="running", exit_code=None, started=0.0,
                              log_tail=[]) for s in self.started if s.run_id == run_id), None)


def test_a_launched_run_is_a_run_at_once_and_says_so_if_its_worker_ends_without_writing_it(
        client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    state.jobs = LiveJobs(state.settings.jobs)
    launched = c.post("/api/runs", json={"run_id": "new", "tasks": "helpdesk.solve-ticket@1,helpdesk.solve-ticket@2",
                                         "endpoint": "scripted:oracle"})
    assert launched.status_code == 202, launched.text
    assert not (runs / "new").exists()
    detail = call(c, "GET", "/api/runs/{run_id}", "/api/runs/new")
    assert detail.status_code == 200, detail.text  # not a 404 while the worker starts
    assert (detail.json()["run"]["status"], detail.json()["run"]["planned"]) == ("starting", 2)
    assert [r["run_id"] for r in c.get("/api/runs").json()][:1] == ["new"]
    assert c.get("/runs/new").status_code == 200
    state.jobs = RecordingJobs(state.settings.jobs)  # the worker is gone, and wrote nothing
    gone = c.get("/api/runs/new").json()["run"]
    assert gone["status"] == "incomplete" and "before it wrote the run's manifest" in gone["problem"]
    page = c.get("/runs/new")
    assert page.status_code == 200 and "before it wrote the run&#39;s manifest" in page.text
    assert 'id="resume"' not in page.text  # nothing to resume
    assert c.get("/api/runs/never-launched").status_code == 404


def test_ray_launches_reach_the_worker_with_the_servers_cluster_never_the_requests(runs: Path) -> None:
    """The executor and workers of a launch, an experiment launch and a resume reach the worker's spec; the Ray
    address is the server's own setting (a run's workers receive its endpoint's key)."""
    client, state = _client(runs, ray_address="10.0.0.7:6379")
    with client as c:
        launched = c.post("/api/runs", json={"run_id": "on-ray", "tasks": "helpdesk.solve-ticket@1",
                                             "endpoint": "scripted:oracle", "executor": "ray", "workers": 3})
        assert launched.status_code == 202, launched.text
        form = c.post("/runs", data={"run_id": "formed-ray", "tasks": "helpdesk.solve-ticket@1",
                                     "endpoint": "scripted:oracle", "executor": "ray", "workers": ""},
                      follow_redirects=False)
        assert form.status_code == 303, form.text
        local = c.post("/api/runs", json={"run_id": "local", "tasks": "helpdesk.solve-ticket@1",
                                          "endpoint": "scripted:oracle", "concurrency": 2})
        assert local.status_code == 202
        refused = c.post("/runs", data={"run_id": "bad", "tasks": "helpdesk.solve-ticket@1", "endpoint":
                                        "scripted:oracle", "executor": "ray", "concurrency": "2"})
        assert refused.status_code == 422 and "drop “Concurrency”" in refused.text  # the form's words
        page = c.get("/")
        assert 'name="executor"' in page.text and "10.0.0.7:6379" in page.text
    assert isinstance(state.jobs, RecordingJobs)
    specs = {spec.run_id: spec for spec in state.jobs.started}
    assert sorted(specs) == ["formed-ray", "local", "on-ray"]
    assert specs["on-ray"].executor == ExecutorChoice(executor="ray", workers=3, ray_address="10.0.0.7:6379")
    assert specs["formed-ray"].executor == ExecutorChoice(executor="ray", ray_address="10.0.0.7:6379")
    assert specs["local"].executor == ExecutorChoice() and specs["local"].concurrency == 2
    spec = specs["on-ray"]
    assert JobSpec.model_validate_json(spec.model_dump_json()) == spec  # what the worker reads back


@pytest.mark.browser
def test_a_ray_launch_runs_on_ray_through_the_servers_worker(runs: Path) -> None:
    """What the worker process does with a Ray launch's spec, in process: the run on a local Ray (2 workers), sealed,
    its manifest saying so, listed by the server with its outcomes."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray already runs in this process")
    client, state = _client(runs)
    with client as c:
        launched = c.post("/api/runs", json={"run_id": "on-ray", "tasks": "helpdesk.solve-ticket@1",
                                             "endpoint": "scripted:oracle,false-finish", "executor": "ray",
                                             "workers": 2})
        assert launched.status_code == 202, launched.text
        assert isinstance(state.jobs, RecordingJobs)
        [spec] = state.jobs.started
        job = state.settings.jobs / "on-ray.json"
        job.write_text(spec.model_dump_json())
        assert worker.main(["worker", str(job)]) == 0
        shown = c.get("/api/runs/on-ray").json()["run"]
        assert (shown["status"], shown["planned"], shown["admitted"], shown["verified"],
                shown["false_completions"]) == ("complete", 2, 2, 1, 1), shown
    execution = RunDirectory.open(runs / "on-ray").manifest().execution
    assert execution.executor == "ray" and len(execution.workers) == 2 and len(execution.nodes) == 1
    assert not ray.is_initialized()
    state.close()


def test_the_launch_form_carries_every_setting_to_the_worker(client: tuple[TestClient, ServerState]) -> None:
    c, state = client
    form = {"run_id": "formed", "tasks": "helpdesk.solve-ticket@1", "endpoint": "scripted:oracle", "repeat": "2",
            "temperature": "0.5", "tool_mode": "text", "broker": "observing", "matched_controls": "on",
            "trace": "on", "concurrency": "2", "fault_seed": ""}
    launched = c.post("/runs", data=form, follow_redirects=False)
    assert launched.status_code == 303 and launched.headers["location"] == "/runs/formed"
    assert isinstance(state.jobs, RecordingJobs)
    [spec] = state.jobs.started
    assert spec.request is not None and spec.trace and spec.concurrency == 2
    assert (spec.request.repeat, spec.request.temperature, spec.request.tool_mode, spec.request.broker,
            spec.request.matched_controls, spec.request.fault_seed) == (2, 0.5, "text", "observing", True, 0)
    refused = c.post("/runs", data={**form, "run_id": "other", "persistence": "sideways"})
    assert refused.status_code == 422 and "unknown arm &#39;sideways&#39;" in refused.text
    no_lock = c.post("/experiments/runs", data={"run_id": "exp", "lock": "nope"})
    assert no_lock.status_code == 404 and "no experiment lock named &#39;nope&#39;" in no_lock.text
    assert len(state.jobs.started) == 1


def test_the_launch_form_carries_a_fallback_endpoint_to_the_worker(client: tuple[TestClient, ServerState]) -> None:
    c, state = client
    state.probe = lambda base_url, api_key: None  # both endpoints answer their model list
    form = {"run_id": "with-fallback", "tasks": "helpdesk.solve-ticket@1", "base_url": "http://127.0.0.1:8080/v1",
            "model": "primary", "fallback_base_url": "http://127.0.0.1:8081/v1", "fallback_model": "spare",
            "fallback_api_key_env": "SPARE_API_KEY"}
    assert 'name="fallback_base_url"' in c.get("/").text
    launched = c.post("/runs", data=form, follow_redirects=False)
    assert launched.status_code == 303, launched.text
    assert isinstance(state.jobs, RecordingJobs)
    [spec] = state.jobs.started
    assert spec.request is not None
    assert (spec.request.fallback_base_url, spec.request.fallback_model, spec.request.fallback_api_key_env) == (
        "http://127.0.0.1:8081/v1", "spare", "SPARE_API_KEY")


@pytest.mark.parametrize(("where", "variable", "launched"), [
    ("api_key_env", "LOCAL_API_KEY", True),
    ("api_key_env", "COMPUTEROPS_SERVER_TOKEN", False),
    ("api_key_env", "OTHER_API_KEY", False),
    ("fallback_api_key_env", "SPARE_API_KEY", True),
    ("fallback_api_key_env", "COMPUTEROPS_SERVER_TOKEN", False),
    ("fallback_api_key_env", "HOME", False),
])
def test_a_launch_may_name_only_the_key_variables_the_operator_allowed(
        client: tuple[TestClient, ServerState], runs: Path, where: str, variable: str, launched: bool) -> None:
    c, state = client
    state.probe = lambda base_url, api_key: None
    body = {**NEW, "base_url": "http://127.0.0.1:8080/v1", "model": "m", "fallback_base_url":
            "http://127.0.0.1:8081/v1", "fallback_model": "spare", where: variable}
    before = {p.name for p in runs.iterdir()}
    answer = c.post("/api/runs", json=body)
    assert (answer.status_code == 202) is launched, answer.text
    if not launched:
        assert answer.status_code == 422
        assert f"{where}: {variable} is not an API key variable this server lets launches use" in answer.text
        _nothing_started(state, runs, before)


def test_a_resume_may_name_only_the_key_variables_the_operator_allowed(runs: Path) -> None:
    """A run directory whose manifest names a variable the server does not allow (written by the CLI, or before the
    operator narrowed the list) is not resumed by the server."""
    manifest_path = runs / RUN / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["config"]["endpoint"] = {"kind": "openai", "base_url": "http://127.0.0.1:8080/v1", "model": "m",
                                      "api_key_env": "COMPUTEROPS_SERVER_TOKEN"}
    unstarted = {**manifest["config"]["episodes"][0], "episode_id": "999-not-started"}
    manifest["config"]["episodes"].append(unstarted)  # an episode still to run: the run is resumable
    manifest_path.write_text(json.dumps(manifest))
    client, state = _client(runs)
    with client as c:
        refused = c.post(f"/api/runs/{RUN}/resume", json={})
    state.close()
    assert refused.status_code == 422 and "COMPUTEROPS_SERVER_TOKEN is not an API key variable" in refused.text
    assert isinstance(state.jobs, RecordingJobs) and state.jobs.started == []


def test_the_servers_own_token_can_never_be_an_allowed_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="never sent to an endpoint"):
        ServerSettings(runs=tmp_path, api_key_envs=("COMPUTEROPS_SERVER_TOKEN",))
    said = CliRunner().invoke(cli, ["server", "--runs", str(tmp_path / "runs"), "--api-key-env",
                                    "COMPUTEROPS_SERVER_TOKEN"])
    assert said.exit_code == 2 and "never sent to an endpoint" in said.output
    assert "Traceback" not in said.output and "pydantic" not in said.output


DEAD, SPARE = "http://127.0.0.1:9/v1", "http://127.0.0.1:8081/v1"


@pytest.mark.parametrize(("primary", "fallback", "launched"), [
    ("unreachable", "answers", True),
    ("unreachable", "unreachable", False),
    ("unreachable", None, False),
    ("no model list", "answers", False),
])
def test_a_dead_primary_is_launched_only_with_a_fallback_that_answers(
        client: tuple[TestClient, ServerState], runs: Path, primary: str, fallback: str | None,
        launched: bool) -> None:
    """As `computerops run` does: a primary that cannot be reached is answered for by a fallback that answers its
    model list; a primary that answers something else (a wrong base URL) is refused whatever the fallback."""
    c, state = client
    asked: list[str] = []

    def probe(base_url: str, api_key: str | None) -> None:
        asked.append(base_url)
        said = primary if base_url == DEAD else fallback
        if said == "unreachable":
            raise EndpointUnreachable(f"the endpoint {base_url} did not answer: it could not be reached")
        if said == "no model list":
            raise ServiceError(f"the endpoint {base_url} answered its model list with HTTP 404")

    state.probe = probe
    body = {**NEW, "base_url": DEAD, "model": "m",
            **({"fallback_base_url": SPARE, "fallback_model": "spare"} if fallback else {})}
    before = {p.name for p in runs.iterdir()}
    answer = c.post("/api/runs", json=body)
    assert (answer.status_code == 202) is launched, answer.text
    assert asked == ([DEAD, SPARE] if fallback and primary == "unreachable" else [DEAD])
    if not launched:
        assert "did not answer" in answer.text or "HTTP 404" in answer.text
        _nothing_started(state, runs, before)


def test_only_a_connection_not_made_is_an_unreachable_endpoint() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
    with pytest.raises(EndpointUnreachable, match="could not be reached"):
        probe_endpoint(f"http://127.0.0.1:{port}/v1", None, timeout_s=2)
    with socket.socket() as silent:  # listens, never answers: a timeout, not a dead endpoint
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises(ServiceError, match="did not answer") as timed_out:
            probe_endpoint(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", None, timeout_s=0.5)
        assert not isinstance(timed_out.value, EndpointUnreachable)


def test_verify_runs_in_a_worker_and_records_e2(client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    started = call(c, "POST", "/api/runs/{run_id}/verify", f"/api/runs/{RUN}/verify")
    assert started.status_code == 202 and c.post("/api/runs/nope/verify").status_code == 404
    assert isinstance(state.jobs, RecordingJobs)
    [spec] = state.jobs.started
    assert spec.kind == "verify" and spec.run_id == RUN
    job = state.settings.jobs / "verify.json"
    job.write_text(spec.model_dump_json())
    assert worker.main(["worker", str(job)]) == 0  # what the worker process runs: the real verify, in process
    assert c.get(f"/api/runs/{RUN}").json()["run"]["verified_by_verify"]
    (runs / RUN / "episodes.jsonl").write_text((runs / RUN / "episodes.jsonl").read_text().replace(
        '"outcome":"false_completion"', '"outcome":"verified_success"'))
    assert worker.main(["worker", str(job)]) == 1


def test_resume_cancel_and_experiment_launch_refusals(client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    complete = call(c, "POST", "/api/runs/{run_id}/resume", f"/api/runs/{RUN}/resume", json={})
    assert complete.status_code == 409 and "nothing to resume" in complete.json()["detail"]
    assert c.post("/api/runs/nope/resume", json={}).status_code == 404
    no_job = call(c, "POST", "/api/runs/{run_id}/cancel", f"/api/runs/{RUN}/cancel")
    assert no_job.status_code == 409 and "no live job" in no_job.json()["detail"]
    no_lock = call(c, "POST", "/api/experiments/runs", "/api/experiments/runs",
                   json={"run_id": "exp", "lock": "nope"})
    assert no_lock.status_code == 404 and no_lock.json()["detail"] == (
        "no experiment lock named 'nope' (the runs page lists this server's locks)")
    (state.settings.locks / "broken.json").write_text("{}")
    broken = c.post("/api/experiments/runs", json={"run_id": "exp", "lock": "broken"})
    assert broken.status_code == 422
    assert isinstance(state.jobs, RecordingJobs) and state.jobs.started == []


TRAVERSALS = ["..", "...", ".server", "..%2f..%2fetc", "%2e%2e", "a%2fb", "x" * 200, "%00", "fixture%2f..%2f..",
              "~root", " fixture"]


@pytest.mark.parametrize("name", TRAVERSALS)
def test_no_run_name_reaches_outside_the_runs_folder(client: tuple[TestClient, ServerState], name: str) -> None:
    c, _ = client
    for url in (f"/api/runs/{name}", f"/api/runs/{name}/report", f"/api/runs/{name}/episodes",
                f"/api/runs/{name}/progress", f"/api/compare?a={name}&b={RUN}", f"/runs/{name}"):
        answer = c.get(url)
        if ".." in name and not name.startswith("..."):  # `..` as a whole segment: the client resolves it away
            assert answer.status_code < 500
            continue
        assert 400 <= answer.status_code < 500, (url, answer.status_code)


def test_no_file_route_reads_outside_its_episode(client: tuple[TestClient, ServerState], runs: Path,
                                                 tmp_path: Path) -> None:
    c, _ = client
    first = json.loads((FIXTURE_RUN / "episodes.jsonl").read_text().splitlines()[0])["episode_id"]
    base = f"/api/runs/{RUN}/episodes/{first}/files"
    for name in ("..%2f..%2fmanifest.json", "manifest.json", "checksums.sha256", "%2e%2e", ".writer.lock"):
        assert c.get(f"{base}/{name}").status_code == 404, name
    for episode in ("...", "..%2f..", "%2e%2e%2fmanifest.json", "x"):
        assert 400 <= c.get(f"/api/runs/{RUN}/episodes/{episode}").status_code < 500
    outside = tmp_path / "outside"
    shutil.copytree(FIXTURE_RUN, outside)
    os.symlink(outside, runs / "linked")
    assert c.get("/api/runs/linked/report").status_code == 404  # a link out of the folder is no run of it
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    os.symlink(secret, runs / RUN / "episodes" / first / "verdict-link.json")
    assert c.get(f"{base}/verdict-link.json").status_code in (404, 409)  # not offered; the sealed episode changed
    receipt = runs / RUN / "episodes" / first / "receipt.json"
    receipt.unlink()
    os.symlink(secret, receipt)  # an offered name that leads out of the episode
    answer = c.get(f"{base}/receipt.json")
    assert 400 <= answer.status_code < 500 and answer.content != secret.read_bytes()


def test_the_token_is_required_of_every_request(runs: Path) -> None:
    client, state = _client(runs, token="s3cret-token")
    with client as c:
        assert c.get("/api/runs").status_code == 401
        assert c.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/api/runs", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
        assert c.get("/openapi.json").status_code == 401
        page = c.get("/runs/fixture", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/login?next=/runs/fixture"
        assert c.post("/login", data={"token": "wrong", "next": "/"}).status_code == 401
        offsite = c.post("/login", data={"token": "s3cret-token", "next": "//evil.example/x"},
                         follow_redirects=False)
        assert offsite.status_code == 303 and offsite.headers["location"] == "/"
        assert "s3cret-token" not in offsite.headers["set-cookie"]
        assert c.get("/", follow_redirects=False).status_code == 200  # the cookie logs the pages in
        assert c.get("/api/runs").status_code == 200  # and the page's own API calls (live progress)
    state.close()


def test_a_changing_request_from_another_site_or_for_another_host_is_refused(
        client: tuple[TestClient, ServerState], runs: Path) -> None:
    c, state = client
    body = {**NEW, "endpoint": "scripted:oracle"}
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999"):
        refused = c.post("/api/runs", json=body, headers={"Origin": origin})
        assert refused.status_code == 403 and "may not change" in refused.json()["detail"], origin
        assert c.post("/runs", data=body, headers={"Origin": origin}).status_code == 403
    rebound = c.get("/api/runs", headers={"Host": "attacker.example"})
    assert rebound.status_code == 403 and "loopback names only" in rebound.json()["detail"]
    assert c.get("/api/runs", headers={"Host": "127.0.0.1:8700"}).status_code == 200
    assert isinstance(state.jobs, RecordingJobs) and state.jobs.started == []
    same = c.post("/api/runs", json=body, headers={"Origin": "http://testserver"})
    assert same.status_code == 202


def test_binding_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    refused = CliRunner().invoke(cli, ["server", "--host", "0.0.0.0", "--runs", str(tmp_path)],
                                 env={"COMPUTEROPS_SERVER_TOKEN": ""})
    assert refused.exit_code == 2 and "give --token" in " ".join(refused.output.split())


def test_the_schema_describes_every_refusal_as_the_one_line_it_is(client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    schema = c.get("/openapi.json").json()
    refusal = {"$ref": "#/components/schemas/Refusal"}
    for path, operations in schema["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method, operation in operations.items():
            responses = operation["responses"]
            for status in ("404", "409", "422"):
                assert responses[status]["content"] == {"application/json": {"schema": refusal}}, (method, path)
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    assert list(schema["paths"]["/api/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]) == [
        "text/event-stream"]
    # What the schema says is what is answered: a body that does not validate is one line naming its fields.
    answer = c.post("/api/runs", json={"run_id": 5, "temperature": -1})
    assert answer.status_code == 422
    assert answer.json() == {"detail": "temperature: input should be greater than or equal to 0 (given -1); "
                                       "run_id: input should be a valid string (given 5)"}
    assert c.post("/api/runs", content=b"{not json", headers={"content-type": "application/json"}).json()[
        "detail"].startswith("body")


def test_options_names_the_methods_and_an_unknown_path_answers_in_its_own_kind(
        client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    asked = c.options("/api/runs")
    assert (asked.status_code, asked.headers["allow"]) == (204, "GET, HEAD, OPTIONS, POST")
    assert c.options(f"/api/runs/{RUN}/cancel").headers["allow"] == "OPTIONS, POST"
    assert c.options("/api/no-such-route").status_code == 404
    wrong = c.delete("/api/runs")
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "GET, HEAD, OPTIONS, POST")
    assert wrong.json()["detail"] == "DELETE is not allowed here (allowed: GET, HEAD, OPTIONS, POST)"
    head = c.head(f"/api/runs/{RUN}/cancel")  # no GET there: no HEAD either
    assert (head.status_code, head.headers["allow"]) == (405, "OPTIONS, POST")
    api_path = c.get("/api/no-such-route")
    assert api_path.status_code == 404 and api_path.headers["content-type"].startswith("application/json")
    page = c.get("/no-such-page")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "nothing is served at /no-such-page" in page.text and "{" not in page.text.split("<body>")[-1]


def test_an_episode_page_shows_a_replys_text_and_each_tool_call_apart(runs: Path) -> None:
    """The text a model wrote beside a tool call, and each call, are blocks of their own (never one run-on line)."""
    from adapter.reply import ToolCall
    from computerops.server.pages import render
    from computerops.service.episode_view import episode_view
    from computerops.service.reading import open_run
    view = episode_view(open_run(runs / RUN), "001-helpdesk.solve-ticket@1--oracle")
    first = view.steps[0].model_copy(update={
        "content": "I will open the ticket.",
        "tool_calls": [ToolCall(name="click", arguments='{"ref": "e1"}'), ToolCall(name="done", arguments="{}")]})
    page = render("episode.html", run_id=RUN, episode=view.model_copy(update={"steps": [first, *view.steps[1:]]}))
    body = bytes(page.body).decode()
    assert '<pre class="reply-text">I will open the ticket.</pre>' in body
    assert '<pre class="tool-call">tool call click {&#34;ref&#34;: &#34;e1&#34;}</pre>' in body
    assert '<pre class="tool-call">tool call done {}</pre>' in body


def test_options_and_a_wrong_method_name_exactly_each_paths_methods(client: tuple[TestClient, ServerState]) -> None:
    """Generated over every route of the app (pages and API): OPTIONS at the path, its parameters filled, answers 204
    with the methods of the routes of that path template, and a method none of them takes 405 with the same list."""
    import re
    c, _ = client
    by_template: dict[str, set[str]] = {}
    for route in [*api_router.routes, *pages_router.routes]:
        if isinstance(route, APIRoute):
            by_template.setdefault(route.path, set()).update(route.methods or set())
    assert len(by_template) > 20
    for template, methods in by_template.items():
        path = re.sub(r"\{[^}]+\}", "zz-filled", template)
        expected = ", ".join(sorted(methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())))
        asked = c.options(path)
        assert (asked.status_code, asked.headers.get("allow")) == (204, expected), template
        wrong = next(m for m in ("PATCH", "PUT", "DELETE") if m not in methods)
        refused = c.request(wrong, path)
        assert (refused.status_code, refused.headers.get("allow")) == (405, expected), template


def test_head_answers_as_get_without_a_body_on_every_get_route(client: tuple[TestClient, ServerState]) -> None:
    """Generated over every GET route (pages and API), its parameters filled with the fixture run's names where it
    has them: HEAD answers the GET's status and headers (its Content-Length included) and no body. A stream (a run's
    events) answers its headers and ends."""
    import re
    c, _ = client
    episode = "001-helpdesk.solve-ticket@1--oracle"
    filled = {"run_id": RUN, "episode_id": episode, "name": RUN}
    templates = sorted({route.path for route in [*api_router.routes, *pages_router.routes]
                        if isinstance(route, APIRoute) and "GET" in (route.methods or set())})
    assert len(templates) > 15
    answered = set()
    for template in templates:
        path = re.sub(r"\{([^}:]+)(:[^}]*)?\}", lambda m: filled.get(m[1], "zz-filled"), template)
        got, head = c.get(path), c.head(path)
        assert head.status_code == got.status_code, template
        assert head.content == b"", template
        for header in ("content-type", "content-length"):
            if header in got.headers and not got.headers.get("content-type", "").startswith("text/event-stream"):
                assert head.headers.get(header) == got.headers[header], (template, header)
        answered.add(got.status_code)
    assert 200 in answered
    events = c.head(f"/api/runs/{RUN}/events")
    assert events.status_code == 200 and events.headers["content-type"].startswith("text/event-stream")


def test_every_api_route_is_tested() -> None:
    """Runs after the tests above (pytest keeps file order): each API route must have been called by one of them."""
    routes = {(method, route.path) for route in api_router.routes if isinstance(route, APIRoute)
              for method in route.methods or set() if route.path.startswith("/api/")}
    assert len(routes) >= 20  # the app's own `routes` hold its included routers, not their routes
    assert routes - COVERED == set()


def _fuzz_app(scratch: Path) -> Any:
    """A server over a copy of the fixture run in a folder of its own."""
    runs = scratch / "runs"
    runs.mkdir()
    shutil.copytree(FIXTURE_RUN, runs / RUN)
    settings = ServerSettings(runs=runs)
    state = ServerState.start(settings)
    state.jobs = RecordingJobs(settings.jobs)
    state.probe = _no_network
    return create_server_app(settings, state)


def _no_network(base_url: str, api_key: str | None) -> None:
    """The fuzzer's endpoints are never asked (its URLs could name any host): refused as one that did not answer."""
    raise ServiceError(f"the endpoint {base_url} did not answer (not asked under the fuzzer)")


def _fuzzed_schema(scratch: Path) -> OpenApiSchema:
    """The server's OpenAPI schema read from the app in process (`app.openapi()`), not requested over the ASGI
    transport, whose 10-second read timeout made a loaded machine fail the session's collection (issue 47). Made
    when the test runs, never when the module is imported: collecting this module builds no app and asks nothing
    (schemathesis's `@schema.parametrize()` needs the schema at collection, and its lazy `from_fixture` does not run
    under pytest 9, which it sets `_nodeid` for), so a slow or failing schema fails one test, not the session."""
    app = _fuzz_app(scratch)
    loaded = schemathesis.openapi.from_dict(app.openapi())
    loaded.app = app
    loaded.location = "/openapi.json"
    return loaded


@pytest.fixture(scope="module", autouse=True)
def _catalog_loaded() -> None:
    """The catalog loaded, its published instances generated, before the fuzzer asks for them: that takes seconds
    on a busy machine (once per process), and the fuzzer's transport gives up on a response after 10 (a read
    timeout, not a server error)."""
    list(load_catalog().values())


def test_no_input_makes_a_server_error_or_a_status_the_schema_does_not_document(tmp_path: Path) -> None:
    """schemathesis draws requests from the OpenAPI schema (valid and not) for every operation; none may get a 5xx,
    and every status answered, each refusal included, must be one the schema documents for that operation
    (api.REFUSALS on every route). One Hypothesis search per operation, each named in its failure."""
    results = list(_fuzzed_schema(tmp_path).get_all_operations())
    invalid = [result.err() for result in results if isinstance(result, Err)]
    assert not invalid, invalid
    operations = [result.ok() for result in results if isinstance(result, Ok)]
    assert len(operations) >= 20

    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=examples(30), deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
        def no_server_error(case: Any) -> None:
            case.call_and_validate(checks=[schemathesis.checks.not_a_server_error,
                                           schemathesis.checks.status_code_conformance])

        try:
            no_server_error()
        except Exception as exc:
            raise AssertionError(f"{operation.label}: {exc}") from exc


def test_importing_the_module_builds_no_app_and_reads_no_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collecting this module (importing it) builds no server and reads no schema: the fuzzing test makes them (issue
    47: a schema read at import, over a transport with a 10-second timeout, ran 0 tests on a loaded machine)."""
    import importlib.util

    import computerops.server.app

    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("built or read at import")

    monkeypatch.setattr(computerops.server.app, "create_server_app", refused)
    monkeypatch.setattr(schemathesis.openapi, "from_dict", refused)
    monkeypatch.setattr(schemathesis.openapi, "from_asgi", refused)
    spec = importlib.util.spec_from_file_location("server_api_imported_again", __file__)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_progress_that_says_sealed_holds_every_record(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run sealed while its records are being read is not reported sealed with the records read before."""
    from computerops.server import progress
    run = runs / RUN
    summary = (run / "summary.json").read_bytes()
    (run / "summary.json").unlink()
    read = progress._admitted

    def sealed_meanwhile(path: Path) -> list[progress.AdmittedEpisode]:
        found = read(path)[:1]  # read before the last admission
        (run / "summary.json").write_bytes(summary)  # the run then admits the rest and seals
        return found

    monkeypatch.setattr(progress, "_admitted", sealed_meanwhile)
    now = progress.run_progress(run)
    assert not now.sealed or len(now.admitted) == now.planned
