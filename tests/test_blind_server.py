"""Blind cases for the operator server, written from docs/server.md and the public signatures only.

In process: a FastAPI TestClient over `create_server_app`, the jobs replaced by a recorder that starts no worker and
the endpoint probe by a function that never touches the network. Each case is a promise of the docs that a wrong
implementation would break."""

from __future__ import annotations

import hashlib
import html as html_text
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from computerops.server.app import create_server_app
from computerops.server.jobs import Jobs, JobSpec, JobState
from computerops.server.settings import ServerSettings
from computerops.server.state import ServerState
from computerops.service.errors import ServiceError
from tasks import load_catalog

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
ORACLE = "001-helpdesk.solve-ticket@1--oracle"
FALSE_FINISH = "002-helpdesk.solve-ticket@1--false-finish"
TASK = "helpdesk.solve-ticket@1"
TOKEN = "s3cret-Token"
REPO = Path(__file__).resolve().parent.parent


class RecordingJobs(Jobs):
    """Jobs that record what would have been started and start nothing."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.specs: list[JobSpec] = []

        self.states: dict[str, JobState] = {}
        self.cancelled: list[str] = []

    def start(self, spec: JobSpec) -> JobState:
        """As Jobs.start promises: a conflict while a job of that run is alive; else recorded, nothing spawned."""
        if self.running(spec.run_id):
            raise ServiceError(f"run {spec.run_id} has a live job", "conflict")
        self.specs.append(spec)
        self.states[spec.run_id] = JobState(run_id=spec.run_id, kind=spec.kind, state="running", exit_code=None,
                                            started=time.time(), log_tail=[])
        return self.states[spec.run_id]

    def state(self, run_id: str) -> JobState | None:
        return self.states.get(run_id)

    def running(self, run_id: str) -> bool:
        job = self.states.get(run_id)
        return job is not None and job.state == "running"

    def cancel(self, run_id: str, grace_s: float = 20.0) -> JobState:
        if not self.running(run_id):
            raise ServiceError(f"run {run_id} has no live job", "conflict")
        self.cancelled.append(run_id)
        self.states[run_id] = self.states[run_id].model_copy(update={"state": "cancelled"})
        return self.states[run_id]

    def close(self) -> None:
        for run_id in list(self.states):
            if self.running(run_id):
                self.cancel(run_id)


@dataclass
class Probe:
    """The endpoint probe: records each call; refuses when `fail` is set."""

    fail: bool = False
    calls: list[tuple[str, str | None]] = field(default_factory=list)

    def __call__(self, base_url: str, api_key: str | None) -> None:
        self.calls.append((base_url, api_key))
        if self.fail:
            raise ServiceError(f"the endpoint {base_url} did not answer: ConnectError: refused")


@dataclass
class Server:
    client: TestClient
    state: ServerState
    jobs: RecordingJobs
    probe: Probe
    runs: Path


ALLOWED_KEYS = ("MY_SERVICE_TOKEN", "LOCAL_API_KEY")
"""The API key variables this file's servers were started with (`computerops server --api-key-env`)."""


def start_server(runs: Path, token: str | None = None) -> Server:
    settings = ServerSettings(runs=runs, token=token, api_key_envs=ALLOWED_KEYS)
    state = ServerState.start(settings)
    jobs = RecordingJobs(settings.jobs)
    probe = Probe()
    state.jobs = jobs
    state.probe = probe
    client = TestClient(create_server_app(settings, state), follow_redirects=False)
    return Server(client, state, jobs, probe, runs)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copytree(FIXTURE, folder / "base")
    return folder


@pytest.fixture
def server(runs: Path) -> Iterator[Server]:
    made = start_server(runs)
    yield made
    made.state.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the cases that only read (nothing they send may change the runs folder)."""
    folder = tmp_path_factory.mktemp("shared") / "runs"
    folder.mkdir()
    shutil.copytree(FIXTURE, folder / "base")
    made = start_server(folder)
    yield made
    made.state.close()


@pytest.fixture(scope="module")
def shared_guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("guarded") / "runs"
    folder.mkdir()
    shutil.copytree(FIXTURE, folder / "base")
    made = start_server(folder, token=TOKEN)
    yield made
    made.state.close()


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for launches that must be refused (none of them may change its runs folder)."""
    folder = tmp_path_factory.mktemp("launcher") / "runs"
    folder.mkdir()
    shutil.copytree(FIXTURE, folder / "base")
    (folder / "notes.txt").write_text("not a run", encoding="utf-8")
    made = start_server(folder)
    yield made
    made.state.close()


@pytest.fixture
def logged_out(shared_guarded: Server) -> Iterator[Server]:
    """The shared guarded server with no cookie before or after the case."""
    shared_guarded.client.cookies.clear()
    yield shared_guarded
    shared_guarded.client.cookies.clear()


@pytest.fixture
def guarded(runs: Path) -> Iterator[Server]:
    made = start_server(runs, token=TOKEN)
    yield made
    made.state.close()


def run_folders(runs: Path) -> set[str]:
    return {path.name for path in runs.iterdir()}


def job_files(runs: Path) -> set[str]:
    folder = runs / ".server" / "jobs"
    return {path.name for path in folder.iterdir()} if folder.exists() else set()


def files_beside(runs: Path) -> set[str]:
    """Every path under the runs folder's parent, but the index database (which the server writes as it likes)."""
    return {str(path) for path in runs.parent.rglob("*") if not path.name.startswith("index.sqlite")}


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Server-sent events parsed loosely: (event name, JSON data)."""
    parsed: list[tuple[str, dict[str, Any]]] = []
    for block in re.split(r"\r?\n\r?\n", text):
        name, data = "message", ""
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data += line[len("data:"):].strip()
        if data or name != "message":
            parsed.append((name, json.loads(data) if data else {}))
    return parsed


def episode_lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text(encoding="utf-8").splitlines() if line]


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def visible_text(html: str) -> str:
    body = html[html.find("<body"):]
    body = re.sub(r"<script.*?</script>", " ", body, flags=re.S)
    return html_text.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def wait_for(check: Callable[[], bool], seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def tamper(path: Path) -> None:
    data = bytearray(path.read_bytes())
    index = data.index(b"true") if b"true" in data else len(data) // 2
    data[index] = ord("T") if data[index] != ord("T") else ord("t")
    path.write_bytes(bytes(data))


def scripted_launch(run_id: str = "fresh", **extra: Any) -> dict[str, Any]:
    return {"run_id": run_id, "tasks": TASK, "endpoint": "scripted:oracle", **extra}


# --- the API table: every route exists and answers ------------------------------------------------------------------

DOCUMENTED_GETS = [
    "/api/catalog",
    "/api/catalog?site=helpdesk",
    "/api/subsets",
    "/api/locks",
    "/api/runs",
    "/api/runs/base",
    "/api/runs/base/progress",
    "/api/runs/base/events",
    "/api/runs/base/report",
    "/api/runs/base/episodes",
    f"/api/runs/base/episodes/{ORACLE}",
    f"/api/runs/base/episodes/{ORACLE}/files/verdict.json",
    "/api/compare?a=base&b=base",
    "/openapi.json",
]


@pytest.mark.parametrize("url", DOCUMENTED_GETS)
def test_documented_get_routes_answer_200(shared: Server, url: str) -> None:
    response = shared.client.get(url)
    assert response.status_code == 200, response.text


def test_openapi_lists_every_documented_route(shared: Server) -> None:
    paths = set(shared.client.get("/openapi.json").json()["paths"])
    documented = {"/api/catalog", "/api/subsets", "/api/subsets/{name}", "/api/locks", "/api/runs",
                  "/api/runs/{run_id}", "/api/experiments/runs", "/api/runs/{run_id}/cancel",
                  "/api/runs/{run_id}/resume", "/api/runs/{run_id}/progress", "/api/runs/{run_id}/events",
                  "/api/runs/{run_id}/report", "/api/runs/{run_id}/experiment", "/api/runs/{run_id}/episodes",
                  "/api/runs/{run_id}/episodes/{episode_id}", "/api/runs/{run_id}/episodes/{episode_id}/files/{name}",
                  "/api/compare"}
    assert documented <= paths


@pytest.mark.parametrize(("method", "url", "body"), [
    ("GET", "/api/runs/nosuch", None),
    ("GET", "/api/runs/nosuch/progress", None),
    ("GET", "/api/runs/nosuch/events", None),  # FINDING fixed: was 200 with an `error` event
    ("GET", "/api/runs/nosuch/report", None),
    ("GET", "/api/runs/nosuch/experiment", None),
    ("GET", "/api/runs/nosuch/episodes", None),
    ("GET", f"/api/runs/nosuch/episodes/{ORACLE}", None),
    ("GET", "/api/runs/base/episodes/003-helpdesk.solve-ticket@1--oracle", None),
    ("GET", "/api/runs/base/episodes/003-helpdesk.solve-ticket@1--oracle/files/verdict.json", None),
    ("GET", "/api/subsets/nosuch", None),
    ("GET", "/api/compare?a=base&b=nosuch", None),
    ("POST", "/api/runs/nosuch/resume", {}),
])
def test_a_name_that_names_nothing_is_404_with_detail(shared: Server, method: str, url: str,
                                                      body: dict[str, Any] | None) -> None:
    response = shared.client.request(method, url, json=body)
    assert response.status_code == 404, response.text
    assert isinstance(response.json()["detail"], str)


def test_cancelling_a_run_without_a_job_is_refused(shared: Server) -> None:
    """Ambiguous in the docs: 404 (no run of that name) or 409 (no job to cancel); either way a 4xx with detail."""
    for url in ("/api/runs/nosuch/cancel", "/api/runs/base/cancel"):
        response = shared.client.post(url)
        assert response.status_code in (404, 409), response.text
        assert response.json()["detail"]


def test_a_complete_run_has_nothing_to_resume_and_no_job_to_cancel(server: Server) -> None:
    for url, body in (("/api/runs/base/resume", {}), ("/api/runs/base/cancel", None)):
        response = server.client.post(url, json=body)
        assert 400 <= response.status_code < 500, response.text
        assert response.json()["detail"]
    assert server.jobs.specs == []


def test_an_ordinary_run_has_no_experiment_analysis(shared: Server) -> None:
    response = shared.client.get("/api/runs/base/experiment")
    assert 400 <= response.status_code < 500
    assert "detail" in response.json()


# --- names, not paths -----------------------------------------------------------------------------------------------

BAD_NAMES = [
    "..", ".server", ".hidden", "%2e%2e", "..%2Fbase", "base%2F..%2F..", "a%5Cb", "base%00", "x" * 101,
    "-leading", "%EF%BD%82ase",  # fullwidth b: a look-alike of base
    "base%E2%80%8B",  # zero-width space
    "%20base", "base%0A", "BASE", "base.", "b%D0%B0se",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_run_name_that_is_not_a_name_is_refused_and_never_500(shared: Server, name: str) -> None:
    for suffix in ("", "/progress", "/report", "/episodes", f"/episodes/{ORACLE}/files/verdict.json"):
        response = shared.client.get(f"/api/runs/{name}{suffix}")
        assert response.status_code in (404, 422), (suffix, response.status_code, response.text)


@pytest.mark.parametrize("name", ["%2e%2e", "..%2F..%2Fmanifest.json", ".started.json", "%2e%2e%2fsummary.json",
                                  "verdict.json%00", "VERDICT.JSON", "checksums.sha256", "x" * 101])
def test_a_file_name_that_is_not_offered_is_refused(shared: Server, name: str) -> None:
    response = shared.client.get(f"/api/runs/base/episodes/{ORACLE}/files/{name}")
    assert response.status_code in (404, 422), response.text


@pytest.mark.parametrize("episode", ["%2e%2e", "%2E%2E", f"..%2F..%2Fbase%2Fepisodes%2F{ORACLE}", f".{ORACLE}",
                                     f"{ORACLE}%2F..", "x" * 101])
def test_an_episode_id_that_is_not_a_name_is_refused(shared: Server, episode: str) -> None:
    for suffix in ("", "/files/verdict.json"):
        response = shared.client.get(f"/api/runs/base/episodes/{episode}{suffix}")
        assert response.status_code in (404, 422), (suffix, response.text)


@pytest.mark.parametrize("name", ["..%2F..%2Fetc", ".hidden", "a%2Fb", "x" * 101, "%2e%2e"])
def test_subset_names_that_are_not_names(shared: Server, name: str) -> None:
    assert shared.client.get(f"/api/subsets/{name}").status_code in (404, 422)


@pytest.mark.parametrize("name", ["../escape", ".hidden", "a/b", "x" * 101, "", "a\x00b"])
def test_reserving_a_subset_under_a_bad_name_is_422_and_writes_nothing(shared: Server, name: str) -> None:
    before = files_beside(shared.runs)
    response = shared.client.post("/api/subsets", json={"name": name, "count": 1, "seed": 0})
    assert response.status_code == 422, response.text
    assert files_beside(shared.runs) == before


def test_an_api_key_variable_named_like_a_token_is_accepted(server: Server) -> None:
    response = server.client.post("/api/runs", json={"run_id": "remote", "tasks": TASK,
                                                     "base_url": "https://127.0.0.1:9/v1", "model": "m",
                                                     "api_key_env": "MY_SERVICE_TOKEN"})
    assert response.status_code == 202, response.text
    assert [spec.run_id for spec in server.jobs.specs] == ["remote"]


def test_the_server_folder_is_never_listed_as_a_run(server: Server) -> None:
    server.client.post("/api/subsets", json={"name": "s1", "count": 1, "seed": 0})
    listed = {run["run_id"] for run in server.client.get("/api/runs").json()}
    assert listed == {"base"}
    assert server.client.get("/api/runs/.server").status_code in (404, 422)


def test_a_symlinked_run_pointing_outside_is_not_served(tmp_path: Path, runs: Path) -> None:
    outside = tmp_path / "outside"
    shutil.copytree(FIXTURE, outside)
    (runs / "evil").symlink_to(outside, target_is_directory=True)
    made = start_server(runs)
    try:
        for url in ("/api/runs/evil/report", f"/api/runs/evil/episodes/{ORACLE}",
                    f"/api/runs/evil/episodes/{ORACLE}/files/verdict.json"):
            response = made.client.get(url)
            assert 400 <= response.status_code < 500, (url, response.status_code)
    finally:
        made.state.close()


# A blind-review finding, fixed: a link to a run outside the folder was listed, with counts read from outside.
def test_a_run_outside_the_folder_is_neither_listed_nor_served(tmp_path: Path, runs: Path) -> None:
    outside = tmp_path / "outside"
    shutil.copytree(FIXTURE, outside)
    (runs / "evil").symlink_to(outside, target_is_directory=True)
    made = start_server(runs)
    try:
        assert made.client.get("/api/runs/evil").status_code == 404
        assert "evil" not in listed(made)
    finally:
        made.state.close()


def test_a_run_replaced_by_a_symlink_after_start_is_not_served(tmp_path: Path, server: Server) -> None:
    assert server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/verdict.json").status_code == 200
    outside = tmp_path / "outside"
    shutil.copytree(FIXTURE, outside)
    (outside / "episodes" / ORACLE / "verdict.json").write_text('{"secret": "outside"}', encoding="utf-8")
    shutil.rmtree(server.runs / "base")
    (server.runs / "base").symlink_to(outside, target_is_directory=True)
    for url in (f"/api/runs/base/episodes/{ORACLE}/files/verdict.json", f"/api/runs/base/episodes/{ORACLE}",
                "/api/runs/base/report", "/api/runs/base/progress"):
        response = server.client.get(url)
        assert 400 <= response.status_code < 500, (url, response.status_code)
        assert "outside" not in response.text.replace(str(outside), "")


def test_an_evidence_file_symlinked_outside_is_not_served(tmp_path: Path, runs: Path, server: Server) -> None:
    """Same bytes (so the checksum matches), but the file resolves outside the runs folder."""
    target = runs / "base" / "episodes" / ORACLE / "verdict.json"
    outside = tmp_path / "verdict-outside.json"
    shutil.copy(target, outside)
    target.unlink()
    target.symlink_to(outside)
    response = server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/verdict.json")
    assert response.status_code != 200


# A blind-review finding, fixed: an episode folder linked to a copy outside the runs folder was served.
def test_an_episode_directory_symlinked_outside_is_not_served(tmp_path: Path, server: Server) -> None:
    outside = tmp_path / "outside-episode"
    shutil.copytree(FIXTURE / "episodes" / ORACLE, outside)
    shutil.rmtree(server.runs / "base" / "episodes" / ORACLE)
    (server.runs / "base" / "episodes" / ORACLE).symlink_to(outside, target_is_directory=True)
    assert server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/verdict.json").status_code != 200
    assert server.client.get(f"/api/runs/base/episodes/{ORACLE}").status_code != 200


# --- evidence files: offered and matching the checksums -------------------------------------------------------------

def test_every_offered_file_is_served_byte_for_byte(shared: Server) -> None:
    offered = shared.client.get(f"/api/runs/base/episodes/{ORACLE}").json()["downloads"]["files"]
    assert "verdict.json" in offered and "transcript.json" in offered
    for name in offered:
        response = shared.client.get(f"/api/runs/base/episodes/{ORACLE}/files/{name}")
        assert response.status_code == 200, name
        assert response.content == (shared.runs / "base" / "episodes" / ORACLE / name).read_bytes()


def test_a_file_present_but_not_in_the_evidence_is_not_served(server: Server) -> None:
    (server.runs / "base" / "episodes" / ORACLE / "secret.txt").write_text("secret", encoding="utf-8")
    view = server.client.get(f"/api/runs/base/episodes/{ORACLE}")
    assert view.status_code < 500
    if view.status_code == 200:
        assert "secret.txt" not in view.json()["downloads"]["files"]
    assert 400 <= server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/secret.txt").status_code < 500


def test_an_altered_evidence_file_is_refused_by_the_file_and_episode_routes(server: Server) -> None:
    tamper(server.runs / "base" / "episodes" / ORACLE / "verdict.json")
    file_response = server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/verdict.json")
    episode_response = server.client.get(f"/api/runs/base/episodes/{ORACLE}")
    assert 400 <= file_response.status_code < 500, file_response.status_code
    assert 400 <= episode_response.status_code < 500, episode_response.status_code
    assert file_response.json()["detail"] and episode_response.json()["detail"]


def test_an_altered_transcript_is_refused_too(server: Server) -> None:
    tamper(server.runs / "base" / "episodes" / ORACLE / "transcript.json")
    assert 400 <= server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/transcript.json").status_code < 500
    assert 400 <= server.client.get(f"/api/runs/base/episodes/{ORACLE}").status_code < 500


def test_altering_one_episode_leaves_the_other_served(server: Server) -> None:
    """The docs tie a file to *its* evidence: another episode's altered file does not take this one down."""
    tamper(server.runs / "base" / "episodes" / FALSE_FINISH / "verdict.json")
    assert server.client.get(f"/api/runs/base/episodes/{ORACLE}/files/verdict.json").status_code == 200
    assert 400 <= server.client.get(f"/api/runs/base/episodes/{FALSE_FINISH}/files/verdict.json").status_code < 500


def forge_outcome(run: Path) -> None:
    """Rewrite the false completion as a verified success in episodes.jsonl (checksums.sha256 left as it was)."""
    text = (run / "episodes.jsonl").read_text(encoding="utf-8")
    forged = text.replace('"outcome":"false_completion"', '"outcome":"verified_success"')
    assert forged != text
    (run / "episodes.jsonl").write_text(forged, encoding="utf-8")


# A blind-review finding, fixed: an episode whose line of episodes.jsonl was edited after the run was served.
def test_an_episode_whose_record_no_longer_matches_the_checksums_is_refused(server: Server) -> None:
    forge_outcome(server.runs / "base")
    response = server.client.get(f"/api/runs/base/episodes/{FALSE_FINISH}")
    assert 400 <= response.status_code < 500, response.json().get("outcome")


def test_a_served_episode_never_contradicts_its_verdict(server: Server) -> None:
    """Weaker than the case above: whatever is served, its outcome is its verdict's."""
    forge_outcome(server.runs / "base")
    response = server.client.get(f"/api/runs/base/episodes/{FALSE_FINISH}")
    if response.status_code == 200:
        view = response.json()
        assert view["outcome"] == view["verdict"]["outcome"]


# A blind-review finding, fixed: an edited run was indexed with counts no run can have (2/2 verified, 1/2 false).
def test_index_counts_of_an_altered_run_stay_consistent(runs: Path) -> None:
    forge_outcome(runs / "base")
    made = start_server(runs)
    try:
        run = listed(made)["base"]
        assert run["status"] == "unreadable" or run["verified"] + run["false_completions"] <= run["admitted"], run
    finally:
        made.state.close()


def test_the_episode_page_of_an_altered_episode_is_not_a_500(server: Server) -> None:
    tamper(server.runs / "base" / "episodes" / ORACLE / "verdict.json")
    response = server.client.get(f"/runs/base/episodes/{ORACLE}")
    assert 400 <= response.status_code < 500


# --- launch -----------------------------------------------------------------------------------------------------------

def test_a_scripted_launch_is_202_and_records_one_spec_without_probing(server: Server) -> None:
    response = server.client.post("/api/runs", json=scripted_launch(concurrency=2))
    assert response.status_code == 202, response.text
    assert [spec.run_id for spec in server.jobs.specs] == ["fresh"]
    spec = server.jobs.specs[0]
    assert spec.kind == "run" and spec.concurrency == 2
    assert Path(spec.runs).resolve() == server.runs.resolve()
    assert server.probe.calls == []


def test_a_second_launch_of_a_run_with_a_live_job_is_409(server: Server) -> None:
    assert server.client.post("/api/runs", json=scripted_launch()).status_code == 202
    again = server.client.post("/api/runs", json=scripted_launch())
    assert again.status_code == 409 and again.json()["detail"]
    assert len(server.jobs.specs) == 1


def test_a_launched_run_can_be_cancelled_before_its_manifest_is_written(server: Server) -> None:
    assert server.client.post("/api/runs", json=scripted_launch()).status_code == 202
    response = server.client.post("/api/runs/fresh/cancel")
    assert response.status_code == 200, response.text
    assert server.jobs.cancelled == ["fresh"]


def test_a_launched_run_shows_its_job(server: Server) -> None:
    """`GET /api/runs/NAME`: one run with this server's job for it (once its directory holds a run)."""
    assert server.client.post("/api/runs", json=scripted_launch(run_id="base2")).status_code == 202
    shutil.copytree(FIXTURE, server.runs / "base2")
    detail = server.client.get("/api/runs/base2")
    assert detail.status_code == 200
    assert detail.json()["job"]["run_id"] == "base2" and detail.json()["job"]["state"] == "running"


def test_an_endpoint_launch_probes_the_endpoint_first(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_API_KEY", "k")
    response = server.client.post("/api/runs", json={"run_id": "remote", "tasks": TASK,
                                                     "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                                     "api_key_env": "LOCAL_API_KEY"})
    assert response.status_code == 202, response.text
    assert [call[0].rstrip("/") for call in server.probe.calls] == ["http://127.0.0.1:9/v1"]
    assert [spec.run_id for spec in server.jobs.specs] == ["remote"]


@pytest.mark.parametrize(("case", "body", "statuses"), [
    ("unknown subset", {"run_id": "fresh", "subset": "nosuch", "endpoint": "scripted:oracle"}, (404, 422)),
    ("subset as a path", {"run_id": "fresh", "subset": "../base", "endpoint": "scripted:oracle"}, (422,)),
    ("tasks as a path", {"run_id": "fresh", "tasks": "tasks/helpdesk", "endpoint": "scripted:oracle"}, (422,)),
    ("tasks as an absolute path", {"run_id": "fresh", "tasks": "/etc/passwd", "endpoint": "scripted:oracle"}, (422,)),
    ("unknown task", {"run_id": "fresh", "tasks": "helpdesk.no-such-task", "endpoint": "scripted:oracle"}, (422,)),
    ("unknown policy", scripted_launch(endpoint="scripted:no-such-policy"), (422,)),
    ("file url", {"run_id": "fresh", "tasks": TASK, "base_url": "file:///etc/passwd", "model": "m"}, (422,)),
    ("ftp url", {"run_id": "fresh", "tasks": TASK, "base_url": "ftp://127.0.0.1/v1", "model": "m"}, (422,)),
    ("key variable HOME", {"run_id": "fresh", "tasks": TASK, "base_url": "http://127.0.0.1:9/v1", "model": "m",
                           "api_key_env": "HOME"}, (422,)),
    ("key variable not a key", {"run_id": "fresh", "tasks": TASK, "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                "api_key_env": "OPENAI_KEY_FILE"}, (422,)),
    ("concurrency 0", scripted_launch(concurrency=0), (422,)),
    ("concurrency 9", scripted_launch(concurrency=9), (422,)),
    ("unknown field", scripted_launch(out="/tmp/elsewhere"), (422,)),
    ("run name a path", scripted_launch(run_id="../escape"), (422,)),
    ("run name hidden", scripted_launch(run_id=".server"), (422,)),
    ("run name too long", scripted_launch(run_id="r" * 101), (422,)),
    ("run name taken", scripted_launch(run_id="base"), (409,)),
    ("run name a file", scripted_launch(run_id="notes.txt"), (409,)),
    ("run name with a newline", scripted_launch(run_id="fresh\n"), (422,)),
    ("run name a look-alike", scripted_launch(run_id="b\u0430se"), (422,)),
    ("run name empty", scripted_launch(run_id=""), (422,)),
    ("repeat 0", scripted_launch(repeat=0), (422,)),
    ("fault rate over 1", scripted_launch(fault_rate=1.5), (422,)),
    ("unknown fault class", scripted_launch(fault_classes="no-such-class"), (422,)),
    ("action budget 0", scripted_launch(action_budget=0), (422,)),
    ("unknown persistence arm", scripted_launch(persistence="no-such-arm"), (422,)),
    ("unknown serving arm", scripted_launch(serving="no-such-arm"), (422,)),
    ("unknown fallback policy", scripted_launch(fallback_policy="no-such-policy"), (422,)),
])
def test_a_refused_launch_starts_nothing(launcher: Server, case: str, body: dict[str, Any],
                                         statuses: tuple[int, ...]) -> None:
    before = files_beside(launcher.runs)
    specs = len(launcher.jobs.specs)
    response = launcher.client.post("/api/runs", json=body)
    assert response.status_code in statuses, (case, response.status_code, response.text)
    assert response.json()["detail"]
    assert len(launcher.jobs.specs) == specs
    assert files_beside(launcher.runs) == before
    assert (launcher.runs / "notes.txt").read_text(encoding="utf-8") == "not a run"


def test_an_endpoint_that_does_not_answer_starts_nothing(server: Server) -> None:
    server.probe.fail = True
    before = run_folders(server.runs)
    response = server.client.post("/api/runs", json={"run_id": "remote", "tasks": TASK,
                                                     "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert response.status_code == 422, response.text
    assert "detail" in response.json()
    assert len(server.probe.calls) == 1
    assert server.jobs.specs == [] and run_folders(server.runs) == before


def test_a_subset_whose_task_changed_is_refused(server: Server) -> None:
    reserved = server.client.post("/api/subsets", json={"name": "s1", "count": 1, "seed": 3})
    assert reserved.status_code == 201, reserved.text
    (path,) = [p for p in (server.runs / ".server" / "subsets").iterdir() if p.name.startswith("s1")]
    lock = json.loads(path.read_text(encoding="utf-8"))
    lock["tasks"][0]["sha256"] = "0" * 64
    path.write_text(json.dumps(lock), encoding="utf-8")
    response = server.client.post("/api/runs", json={"run_id": "fresh", "subset": "s1", "endpoint": "scripted:oracle"})
    assert 400 <= response.status_code < 500, response.text
    assert server.jobs.specs == [] and not (server.runs / "fresh").exists()


def test_a_launch_from_a_reserved_subset_is_accepted(server: Server) -> None:
    assert server.client.post("/api/subsets", json={"name": "s1", "count": 1, "seed": 3}).status_code == 201
    response = server.client.post("/api/runs", json={"run_id": "fresh", "subset": "s1", "endpoint": "scripted:oracle"})
    assert response.status_code == 202, response.text
    assert [spec.run_id for spec in server.jobs.specs] == ["fresh"]


@pytest.mark.parametrize("lock", ["nosuch", "../base/manifest.json", ".hidden"])
def test_an_experiment_launch_with_no_such_lock_starts_nothing(server: Server, lock: str) -> None:
    before = run_folders(server.runs)
    response = server.client.post("/api/experiments/runs", json={"run_id": "exp", "lock": lock})
    assert response.status_code in (404, 422), response.text
    assert server.jobs.specs == [] and run_folders(server.runs) == before


def test_the_launch_form_starts_a_run(server: Server) -> None:
    response = server.client.post("/runs", data={"run_id": "formed", "tasks": TASK, "endpoint": "scripted:oracle",
                                                 "concurrency": "1", "repeat": "1"})
    assert response.status_code < 400, response.text[:300]
    assert [spec.run_id for spec in server.jobs.specs] == ["formed"]


def test_the_launch_form_refusal_starts_nothing_and_shows_reasons(server: Server) -> None:
    before = run_folders(server.runs)
    response = server.client.post("/runs", data={"run_id": "../escape", "tasks": TASK, "endpoint": "scripted:oracle"})
    assert 400 <= response.status_code < 500
    assert 'id="launch"' in response.text and "../escape" in response.text
    assert server.jobs.specs == [] and run_folders(server.runs) == before


# --- subsets ------------------------------------------------------------------------------------------------------

def test_a_reserved_subset_is_never_overwritten(server: Server) -> None:
    first = server.client.post("/api/subsets", json={"name": "s1", "count": 2, "seed": 1})
    assert first.status_code == 201
    (path,) = list((server.runs / ".server" / "subsets").iterdir())
    saved = path.read_bytes()
    again = server.client.post("/api/subsets", json={"name": "s1", "count": 5, "seed": 9})
    assert again.status_code == 409 and again.json()["detail"]
    assert path.read_bytes() == saved
    listed = server.client.get("/api/subsets").json()
    assert len(listed) == 1
    shown = server.client.get("/api/subsets/s1").json()
    assert shown["count"] == 2 and len(shown["tasks"]) == 2


@pytest.mark.parametrize("body", [{"name": "s", "count": 0, "seed": 1}, {"name": "s", "count": 1, "seed": -1},
                                  {"name": "s", "count": 1}, {"name": "s", "count": 1, "seed": 1, "tasks": "all"},
                                  {"name": "s", "count": 100000, "seed": 1}])
def test_a_bad_subset_request_is_422_and_reserves_nothing(shared: Server, body: dict[str, Any]) -> None:
    response = shared.client.post("/api/subsets", json=body)
    assert response.status_code == 422
    assert shared.client.get("/api/subsets").json() == []


def test_a_garbage_lock_starts_nothing(server: Server) -> None:
    (server.runs / ".server" / "locks" / "bad.json").write_text("{not json", encoding="utf-8")
    assert server.client.get("/api/locks").status_code == 200
    before = run_folders(server.runs)
    for lock in ("bad", "bad.json"):
        response = server.client.post("/api/experiments/runs", json={"run_id": "exp", "lock": lock})
        assert 400 <= response.status_code < 500, response.text
    assert server.jobs.specs == [] and run_folders(server.runs) == before


def test_a_garbage_subset_file_is_listed_with_its_problem_and_refused_for_launch(server: Server) -> None:
    (server.runs / ".server" / "subsets" / "junk.json").write_text("{oops", encoding="utf-8")
    listing = server.client.get("/api/subsets")
    assert listing.status_code == 200
    body = {"run_id": "fresh", "subset": "junk", "endpoint": "scripted:oracle"}
    response = server.client.post("/api/runs", json=body)
    assert response.status_code == 422 and response.json()["detail"]
    assert server.jobs.specs == [] and not (server.runs / "fresh").exists()


# A blind-review finding, fixed: a subset file that is not JSON was a 500.
def test_a_garbage_subset_file_is_not_a_500(server: Server) -> None:
    (server.runs / ".server" / "subsets" / "junk.json").write_text("{oops", encoding="utf-8")
    client = TestClient(server.client.app, raise_server_exceptions=False)
    assert client.get("/api/subsets/junk").status_code < 500


def test_a_subset_is_hash_locked_to_the_catalog(server: Server) -> None:
    catalog = {task["id"]: task["sha256"] for task in server.client.get("/api/catalog").json()}
    subset = server.client.post("/api/subsets", json={"name": "s2", "count": 3, "seed": 7}).json()
    assert len(subset["tasks"]) == 3
    for task in subset["tasks"]:
        assert catalog[task["id"]] == task["sha256"]


def test_catalog_filters_by_site_and_family(shared: Server) -> None:
    everything = shared.client.get("/api/catalog").json()
    helpdesk = shared.client.get("/api/catalog?site=helpdesk").json()
    assert helpdesk and all(task["site"] == "helpdesk" for task in helpdesk)
    assert len(helpdesk) < len(everything)
    family = helpdesk[0]["family"]
    both = shared.client.get(f"/api/catalog?site=helpdesk&family={family}").json()
    assert both and all(task["family"] == family and task["site"] == "helpdesk" for task in both)
    assert shared.client.get("/api/catalog?site=no-such-site").json() == []


# --- the token --------------------------------------------------------------------------------------------------------

GUARDED_API = ["/api/runs", "/api/runs/base", "/api/runs/base/progress", "/api/runs/base/events", "/api/catalog",
               "/api/subsets", "/api/locks", f"/api/runs/base/episodes/{ORACLE}/files/verdict.json",
               "/api/compare?a=base&b=base", "/openapi.json", "/api/runs/nosuch"]


@pytest.mark.parametrize("url", GUARDED_API)
def test_every_api_route_is_401_without_the_token(shared_guarded: Server, url: str) -> None:
    assert shared_guarded.client.get(url).status_code == 401


def test_posts_are_401_without_the_token_and_start_nothing(guarded: Server) -> None:
    assert guarded.client.post("/api/runs", json=scripted_launch()).status_code == 401
    assert guarded.client.post("/api/subsets", json={"name": "s1", "count": 1, "seed": 0}).status_code == 401
    assert guarded.client.post("/api/runs/base/cancel").status_code == 401
    assert guarded.jobs.specs == [] and not list((guarded.runs / ".server" / "subsets").iterdir())


def test_the_right_bearer_passes(guarded: Server) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for url in ("/api/runs", "/api/runs/base/progress", "/openapi.json"):
        assert guarded.client.get(url, headers=headers).status_code == 200, url
    response = guarded.client.post("/api/runs", json=scripted_launch(), headers=headers)
    assert response.status_code == 202


@pytest.mark.parametrize("header", [f"Bearer {TOKEN.upper()}", f"Bearer {TOKEN.lower()}", f"Bearer {TOKEN}x",
                                    f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN, "Bearer", "Bearer ",
                                    f"Bearer {TOKEN} {TOKEN}", f"Bearer {TOKEN},{TOKEN}"])
def test_a_wrong_bearer_is_401(shared_guarded: Server, header: str) -> None:
    assert shared_guarded.client.get("/api/runs", headers={"Authorization": header}).status_code == 401


@pytest.mark.parametrize("page", ["/", "/runs/base", f"/runs/base/episodes/{ORACLE}", "/compare?a=base&b=base"])
def test_pages_redirect_to_login_without_a_cookie(shared_guarded: Server, page: str) -> None:
    response = shared_guarded.client.get(page)
    assert 300 <= response.status_code < 400
    assert response.headers["location"].startswith("/login")


def test_the_login_page_and_nothing_else_opens_without_the_token(shared_guarded: Server) -> None:
    assert shared_guarded.client.get("/login").status_code == 200
    for url in ("/docs", "/openapi.json", "/runs/base", "/api/runs/base/report"):
        response = shared_guarded.client.get(url)
        assert response.status_code in (401, 302, 303, 307), (url, response.status_code)
        assert "helpdesk" not in response.text


def login(server: Server, token: str, next_url: str = "/") -> Any:
    return server.client.post("/login", data={"token": token, "next": next_url})


def test_login_sets_a_cookie_that_is_not_the_token_and_opens_pages(guarded: Server) -> None:
    response = login(guarded, TOKEN)
    assert 300 <= response.status_code < 400
    assert response.cookies, "login set no cookie"
    for value in response.cookies.values():
        assert TOKEN not in value and TOKEN.lower() not in value.lower()
    assert TOKEN not in response.headers.get("set-cookie", "")
    guarded.client.cookies.update(response.cookies)
    assert guarded.client.get("/").status_code == 200
    assert guarded.client.get("/runs/base").status_code == 200


def test_a_wrong_token_login_sets_no_cookie(guarded: Server) -> None:
    response = login(guarded, "wrong")
    assert not response.cookies
    guarded.client.cookies.update(response.cookies)
    assert 300 <= guarded.client.get("/").status_code < 400


@pytest.mark.parametrize("next_url", ["//evil.example", "https://evil.example/", "/\\evil.example",
                                      "\\\\evil.example", "%2F%2Fevil.example", "/%2F/evil.example",
                                      "http:evil.example", "javascript:alert(1)", " //evil.example",
                                      "/\t/evil.example"])
def test_login_never_redirects_off_site(logged_out: Server, next_url: str) -> None:
    response = login(logged_out, TOKEN, next_url)
    location = response.headers.get("location", "/")
    assert location.startswith("/"), location
    assert not location.startswith("//") and not location.startswith("/\\"), location
    assert "evil" not in location.split("?")[0].lstrip("/").split("/")[0] or location.startswith("/login"), location


def test_login_keeps_a_local_next(logged_out: Server) -> None:
    response = login(logged_out, TOKEN, "/runs/base")
    assert response.headers["location"] == "/runs/base"


def test_a_logged_in_page_can_follow_live_progress(guarded: Server) -> None:
    """The pages follow progress with EventSource, which sends the cookie, not a bearer."""
    guarded.client.cookies.update(login(guarded, TOKEN).cookies)
    response = guarded.client.get("/api/runs/base/events")
    assert response.status_code == 200
    assert events(response.text)[-1][0] == "end"


def test_a_cookie_of_another_token_is_refused(tmp_path: Path, runs: Path) -> None:
    other_runs = tmp_path / "other"
    other_runs.mkdir()
    other = start_server(other_runs, token="another-token")
    mine = start_server(runs, token=TOKEN)
    try:
        cookies = login(other, "another-token").cookies
        assert cookies
        mine.client.cookies.update(cookies)
        assert 300 <= mine.client.get("/").status_code < 400
        assert mine.client.get("/api/runs").status_code == 401
    finally:
        other.state.close()
        mine.state.close()


# --- the index ------------------------------------------------------------------------------------------------------

def listed(server: Server) -> dict[str, dict[str, Any]]:
    return {run["run_id"]: run for run in server.client.get("/api/runs").json()}


def test_a_run_copied_in_after_start_appears_and_a_removed_one_disappears(server: Server) -> None:
    assert set(listed(server)) == {"base"}
    shutil.copytree(FIXTURE, server.runs / "later")
    assert server.client.get("/api/runs/later").status_code == 200
    assert wait_for(lambda: "later" in listed(server), 2.5)
    shutil.rmtree(server.runs / "base")
    assert wait_for(lambda: "base" not in listed(server), 2.5)
    assert server.client.get("/api/runs/base").status_code == 404


def test_the_index_counts_match_the_episodes(server: Server) -> None:
    run = listed(server)["base"]
    lines = episode_lines(server.runs / "base")
    assert run["status"] == "complete" and run["scripted"] is True
    assert run["planned"] == 2 and run["admitted"] == len(lines)
    assert run["verified"] == sum(line["outcome"] == "verified_success" for line in lines)
    assert run["self_reported"] == sum(bool(line["claim"]["success"]) for line in lines)
    assert run["false_completions"] == sum(line["outcome"] == "false_completion" for line in lines)
    assert server.client.get("/api/runs/base").json() == {"run": run, "job": None}


def test_a_run_with_a_garbage_manifest_is_listed_unreadable(runs: Path) -> None:
    broken = runs / "broken"
    shutil.copytree(FIXTURE, broken)
    (broken / "manifest.json").write_text("{not json", encoding="utf-8")
    server = start_server(runs)
    try:
        assert listed(server)["broken"]["status"] == "unreadable"
        assert listed(server)["broken"]["problem"]
        assert listed(server)["base"]["status"] == "complete"
        assert "unreadable" in visible_text(server.client.get("/").text)
        for url in ("/api/runs/broken", "/", "/runs/broken", "/api/runs/broken/progress", "/api/runs/broken/report",
                    "/api/runs/broken/episodes", "/api/compare?a=base&b=broken"):
            assert server.client.get(url).status_code < 500, url
    finally:
        server.state.close()


def test_an_empty_folder_is_not_a_500(server: Server) -> None:
    (server.runs / "empty").mkdir()
    assert server.client.get("/api/runs").status_code == 200
    assert server.client.get("/").status_code == 200
    assert server.client.get("/api/runs/empty").status_code < 500


def make_partial(run: Path) -> None:
    """The fixture as a run interrupted after its first episode: one line admitted, no summary, not sealed."""
    shutil.copytree(FIXTURE, run)
    (run / "summary.json").unlink()
    (run / "checksums.sha256").unlink()
    shutil.rmtree(run / "episodes" / FALSE_FINISH)
    lines = (run / "episodes.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (run / "episodes.jsonl").write_text(lines[0], encoding="utf-8")


def test_an_incomplete_run_is_listed_incomplete(runs: Path) -> None:
    make_partial(runs / "partial")
    server = start_server(runs)
    try:
        assert listed(server)["partial"]["status"] == "incomplete"
        assert listed(server)["partial"]["admitted"] == 1
        progress = server.client.get("/api/runs/partial/progress").json()
        assert [e["episode_id"] for e in progress["admitted"]] == [ORACLE]
        assert progress["planned"] == 2
        assert progress["being_written"] is False and progress["sealed"] is False
        stream = events(server.client.get("/api/runs/partial/events").text)
        assert stream[-1][0] == "end"
    finally:
        server.state.close()


def test_resuming_an_incomplete_run_starts_one_resume_job(runs: Path) -> None:
    make_partial(runs / "partial")
    server = start_server(runs)
    try:
        refused = server.client.post("/api/runs/partial/resume", json={"concurrency": 9})
        assert refused.status_code == 422 and server.jobs.specs == []
        refused = server.client.post("/api/runs/partial/resume", json={"concurrency": 1, "tasks": "all"})
        assert refused.status_code == 422 and server.jobs.specs == []
        response = server.client.post("/api/runs/partial/resume", json={"concurrency": 3})
        assert response.status_code == 202, response.text
        assert [(spec.kind, spec.run_id, spec.concurrency) for spec in server.jobs.specs] == [("resume", "partial", 3)]
    finally:
        server.state.close()


HOLDER = """
import sys
from pathlib import Path
from computerops.runs.bundle import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_run_another_process_writes_shows_as_running(server: Server) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(server.runs / "base")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert server.client.get("/api/runs/base/progress").json()["being_written"] is True
        assert wait_for(lambda: listed(server)["base"]["status"] == "running", 2.5)
        assert server.client.get("/api/runs/base").json()["run"]["status"] == "running"
        resumed = server.client.post("/api/runs/base/resume", json={})
        assert resumed.status_code == 409, resumed.text
        taken = server.client.post("/api/runs", json=scripted_launch(run_id="base"))
        assert taken.status_code == 409, taken.text
        assert server.jobs.specs == []
        assert "running" in visible_text(server.client.get("/").text)
        # The event stream ends only once no process writes the run: release the lock a second from now.
        assert holder.stdin is not None
        release = threading.Timer(1.0, holder.stdin.close)
        release.start()
        began = time.monotonic()
        stream = events(server.client.get("/api/runs/base/events").text)
        assert time.monotonic() - began >= 0.8, "the stream ended while the run was being written"
        assert [name for name, _ in stream][-1] == "end"
        release.join()
    finally:
        assert holder.stdin is not None
        if not holder.stdin.closed:
            holder.stdin.close()
        holder.wait(10)
    assert server.client.get("/api/runs/base/progress").json()["being_written"] is False


# --- progress and events ------------------------------------------------------------------------------------------

def test_progress_of_a_stored_run_matches_its_episodes(shared: Server) -> None:
    progress = shared.client.get("/api/runs/base/progress").json()
    lines = episode_lines(shared.runs / "base")
    assert progress["planned"] == 2
    assert sorted(progress["started"]) == sorted(line["episode_id"] for line in lines)
    assert [(e["episode_id"], e["outcome"], e["false_completion_kind"]) for e in progress["admitted"]] == [
        (line["episode_id"], line["outcome"], line["false_completion_kind"]) for line in lines]
    assert progress["being_written"] is False


def test_events_of_a_complete_run(shared: Server) -> None:
    response = shared.client.get("/api/runs/base/events")
    assert response.headers["content-type"].startswith("text/event-stream")
    stream = events(response.text)
    names = [name for name, _ in stream]
    assert names[-1] == "end" and names.count("end") == 1
    started = [data["episode_id"] for name, data in stream if name == "started"]
    admitted = [data["episode_id"] for name, data in stream if name == "admitted"]
    assert sorted(started) == sorted([ORACLE, FALSE_FINISH])
    assert sorted(admitted) == sorted([ORACLE, FALSE_FINISH])
    for episode in admitted:
        assert names.index("started") <= min(i for i, (n, d) in enumerate(stream)
                                            if n == "admitted" and d["episode_id"] == episode)
    outcomes = {data["episode_id"]: data["outcome"] for name, data in stream if name == "admitted"}
    assert outcomes == {ORACLE: "verified_success", FALSE_FINISH: "false_completion"}
    last_progress = [data for name, data in stream if name == "progress"][-1]
    assert last_progress["planned"] == 2 and last_progress["admitted"] == 2


# --- report, episodes, compare ----------------------------------------------------------------------------------

def test_the_report_matches_the_stored_summary(shared: Server) -> None:
    report = shared.client.get("/api/runs/base/report").json()
    summary = json.loads((FIXTURE / "summary.json").read_text(encoding="utf-8"))
    for key in ("episodes", "verified_success", "self_reported_success", "false_completions"):
        assert report["total"][key] == summary["total"][key], key


@pytest.mark.parametrize(("query", "expected"), [
    ("", {ORACLE, FALSE_FINISH}),
    ("?outcome=false_completion", {FALSE_FINISH}),
    ("?outcome=verified_success", {ORACLE}),
    ("?site=helpdesk", {ORACLE, FALSE_FINISH}),
    ("?site=shop", set()),
    ("?false_completion_kind=state", {FALSE_FINISH}),
    ("?false_completion_kind=procedure_only", set()),
    ("?fault_fired=latency", set()),
    ("?outcome=false_completion&site=helpdesk", {FALSE_FINISH}),
])
def test_episode_filters(shared: Server, query: str, expected: set[str]) -> None:
    response = shared.client.get(f"/api/runs/base/episodes{query}")
    assert response.status_code == 200
    assert {episode["episode_id"] for episode in response.json()} == expected


def test_the_episode_view_agrees_with_episodes_jsonl(shared: Server) -> None:
    for line in episode_lines(shared.runs / "base"):
        view = shared.client.get(f"/api/runs/base/episodes/{line['episode_id']}").json()
        assert view["outcome"] == line["outcome"]
        assert view["task_id"] == line["task_id"]
        assert view["steps_count"] == line["steps"]
        assert view["claim"]["success"] == line["claim"]["success"]
        assert view["verdict"]


def test_compare_a_run_with_itself_changes_nothing(shared: Server) -> None:
    comparison = shared.client.get("/api/compare?a=base&b=base").json()
    assert comparison["format"] == "computerops.comparison/1"
    assert len(comparison["episodes"]) == 2
    assert all(row["change"] == "same" and row["outcome_a"] == row["outcome_b"] for row in comparison["episodes"])


def test_compare_with_a_copy_is_the_same(server: Server) -> None:
    shutil.copytree(FIXTURE, server.runs / "copy")
    comparison = server.client.get("/api/compare?a=base&b=copy")
    assert comparison.status_code == 200
    assert all(row["change"] == "same" for row in comparison.json()["episodes"])


def test_compare_with_an_altered_outcome_is_refused(server: Server) -> None:
    altered = server.runs / "altered"
    shutil.copytree(FIXTURE, altered)
    text = (altered / "episodes.jsonl").read_text(encoding="utf-8")
    text = text.replace('"outcome":"false_completion"', '"outcome":"verified_success"')
    (altered / "episodes.jsonl").write_text(text, encoding="utf-8")
    response = server.client.get("/api/compare?a=base&b=altered")
    assert 400 <= response.status_code < 500, response.text[:400]


@pytest.mark.parametrize("query", ["a=base", "b=base", "a=..&b=base", "a=base&b=%2Fetc", "a=base&b=.server"])
def test_compare_with_a_missing_or_bad_name(shared: Server, query: str) -> None:
    response = shared.client.get(f"/api/compare?{query}")
    assert response.status_code in (404, 422)


# --- pages ------------------------------------------------------------------------------------------------------------

def test_the_runs_page_shows_the_counts_and_intervals_of_the_api(shared: Server) -> None:
    run = listed(shared)["base"]
    text = visible_text(shared.client.get("/").text)
    n = run["admitted"]
    for count in (run["verified"], run["self_reported"], run["false_completions"]):
        low, high = wilson(count, n)
        assert f"{count}/{n}" in text
        assert f"[{low:.2f}, {high:.2f}]" in text, (count, text[:600])
    assert "complete" in text and "SCRIPTED" in text


def test_the_run_page_shows_status_and_episodes(shared: Server) -> None:
    text = visible_text(shared.client.get("/runs/base").text)
    assert "complete" in text
    assert ORACLE in text and FALSE_FINISH in text
    assert "verified_success" in text and "false_completion" in text


def test_the_episode_page_shows_instruction_and_checks(shared: Server) -> None:
    view = shared.client.get(f"/api/runs/base/episodes/{ORACLE}").json()
    text = visible_text(shared.client.get(f"/runs/base/episodes/{ORACLE}").text)
    assert view["instruction"] in text
    verdict = json.loads((shared.runs / "base" / "episodes" / ORACLE / "verdict.json").read_text(encoding="utf-8"))
    for check in verdict["checks"]:
        assert check["name"] in text


def test_the_compare_page_shows_both_runs_task_by_task(shared: Server) -> None:
    rows = shared.client.get("/api/compare?a=base&b=base").json()["episodes"]
    text = visible_text(shared.client.get("/compare?a=base&b=base").text)
    assert "base" in text
    assert re.search(rf"\b{sum(row['change'] == 'same' for row in rows)} the same\b", text), text[:500]
    assert re.search(r"\b0 changed", text), text[:500]


@pytest.mark.parametrize("page", ["/runs/nosuch", "/runs/..%2F..", f"/runs/base/episodes/{ORACLE}%2F..",
                                  "/runs/base/episodes/nosuch", "/compare?a=base&b=nosuch"])
def test_pages_for_bad_or_missing_names_are_4xx(shared: Server, page: str) -> None:
    response = shared.client.get(page)
    assert 400 <= response.status_code < 500, (page, response.status_code)


# --- the CLI ------------------------------------------------------------------------------------------------------

@pytest.fixture
def no_uvicorn(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    import uvicorn

    started: list[dict[str, Any]] = []

    def fake_run(app: Any, **kwargs: Any) -> None:
        started.append(kwargs)

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.delenv("COMPUTEROPS_SERVER_TOKEN", raising=False)
    return started


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_cli_refuses_a_non_loopback_host_without_a_token(tmp_path: Path, no_uvicorn: list[dict[str, Any]],
                                                          host: str) -> None:
    from typer.testing import CliRunner

    from computerops.cli.main import app

    result = CliRunner().invoke(app, ["server", "--runs", str(tmp_path / "runs"), "--host", host])
    assert result.exit_code != 0
    assert "--token" in result.output
    assert no_uvicorn == []


@pytest.mark.parametrize("args", [["--host", "127.0.0.1"], ["--host", "0.0.0.0", "--token", "t"],
                                  ["--host", "localhost"], ["--host", "::1"], ["--host", "127.0.0.2"]])
def test_cli_serves_loopback_or_with_a_token(tmp_path: Path, no_uvicorn: list[dict[str, Any]],
                                             args: list[str]) -> None:
    from typer.testing import CliRunner

    from computerops.cli.main import app

    result = CliRunner().invoke(app, ["server", "--runs", str(tmp_path / "runs"), *args])
    assert result.exit_code == 0, result.output
    assert len(no_uvicorn) == 1


def test_sha256_of_fixture_is_intact() -> None:
    """The fixture this file reads is what its checksums say (a guard for every case above)."""
    for line in (FIXTURE / "checksums.sha256").read_text(encoding="utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        assert hashlib.sha256((FIXTURE / name).read_bytes()).hexdigest() == digest


def test_cli_token_from_the_environment_allows_any_host_and_guards_the_app(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from computerops.cli.main import app

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda served, **kwargs: apps.append(served))
    monkeypatch.setenv("COMPUTEROPS_SERVER_TOKEN", "env-token")
    result = CliRunner().invoke(app, ["server", "--runs", str(tmp_path / "runs"), "--host", "0.0.0.0"])
    assert result.exit_code == 0, result.output
    assert "env-token" not in result.output
    (served,) = apps
    with TestClient(served) as client:
        assert client.get("/api/runs").status_code == 401
        assert client.get("/api/runs", headers={"Authorization": "Bearer env-token"}).status_code == 200


# --- what no request may do -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "url"), [("DELETE", "/api/runs/base"), ("PUT", "/api/runs/base"),
                                             ("DELETE", f"/api/runs/base/episodes/{ORACLE}/files/verdict.json"),
                                             ("PUT", "/api/subsets/s1"), ("DELETE", "/api/subsets")])
def test_no_route_deletes_or_overwrites(shared: Server, method: str, url: str) -> None:
    response = shared.client.request(method, url)
    assert response.status_code in (404, 405)
    assert (shared.runs / "base" / "episodes" / ORACLE / "verdict.json").read_bytes() == (
        FIXTURE / "episodes" / ORACLE / "verdict.json").read_bytes()


@pytest.mark.parametrize(("method", "url", "body"), [
    ("GET", "/api/runs/" + "a" * 5000, None),
    ("GET", "/api/runs/base/episodes?outcome=%3Cscript%3E&fault_fired=%00", None),
    ("GET", "/api/compare?a=base&b=base&a=nosuch", None),
    ("GET", "/api/catalog?site=%00&family=..%2F..", None),
    ("POST", "/api/runs", "not json"),
    ("POST", "/api/runs", "[]"),
    ("POST", "/api/subsets", '{"name": "s", "count": "many", "seed": 1}'),
    ("POST", "/api/runs/base/resume", "null"),
])
def test_odd_requests_are_4xx_or_empty_never_5xx(shared: Server, method: str, url: str, body: str | None) -> None:
    headers = {"content-type": "application/json"} if body is not None else {}
    response = shared.client.request(method, url, content=body, headers=headers)
    assert response.status_code < 500
    assert shared.jobs.specs == []


def reseal(run: Path) -> None:
    """Recompute checksums.sha256 over the run's files after an edit (as a consistent, re-sealed run)."""
    lines = []
    for line in (run / "checksums.sha256").read_text(encoding="utf-8").splitlines():
        _, name = line.split(maxsplit=1)
        lines.append(f"{hashlib.sha256((run / name).read_bytes()).hexdigest()}  {name}")
    (run / "checksums.sha256").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_what_an_agent_said_is_escaped_on_the_pages(server: Server) -> None:
    """A model's words are data: a reply carrying HTML shows as text on the episode page, never as markup."""
    run = server.runs / "base"
    payload = "<script>alert('owned')</script><img src=x onerror=alert(1)>"
    said = next(step.message or "" for step in load_catalog()[TASK].spec.scripted_control if step.action == "done")
    episode = run / "episodes" / ORACLE
    for name in ("transcript.json", "verdict.json", "receipt.json"):
        (episode / name).write_text((episode / name).read_text(encoding="utf-8").replace(said, payload),
                                    encoding="utf-8")
    records = episode_lines(run)
    for record in records:
        if record["episode_id"] == ORACLE:
            record["claim"]["message"] = payload
            for name in record["evidence_sha256"]:
                record["evidence_sha256"][name] = hashlib.sha256((episode / name).read_bytes()).hexdigest()
    (run / "episodes.jsonl").write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records),
                                        encoding="utf-8")
    reseal(run)
    view = server.client.get(f"/api/runs/base/episodes/{ORACLE}")
    assert view.status_code == 200, view.text[:300]
    assert payload in view.text.replace("\\u003c", "<") or payload in json.dumps(view.json(), ensure_ascii=False)
    page = server.client.get(f"/runs/base/episodes/{ORACLE}")
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert" in page.text or "&lt;script&gt;alert" in page.text.replace("&#39;", "'")
