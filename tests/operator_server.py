"""The operator server under test, shared by its test modules (test_server_api, test_server_keys, test_server_forms):
a scratch runs folder holding the stored fixture run, jobs that start no worker, and the server over them."""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from computerops.server.app import create_server_app
from computerops.server.jobs import Jobs, JobSpec, JobState
from computerops.server.settings import ServerSettings
from computerops.server.state import ServerState

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
RUN = "fixture"
"""The stored run's name in the scratch folder."""


def runs_folder(parent: Path) -> Path:
    """`parent/runs`, holding a copy of the fixture run named RUN."""
    folder = parent / "runs"
    folder.mkdir()
    shutil.copytree(FIXTURE_RUN, folder / RUN)
    return folder


class RecordingJobs(Jobs):
    """Jobs that write their spec but start no worker: what a launch would have run (it has exited at once)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.started: list[JobSpec] = []

    def start(self, spec: JobSpec) -> JobState:
        self.started.append(spec)
        return JobState(run_id=spec.run_id, kind=spec.kind, state="exited", exit_code=0, started=0.0, log_tail=[])


def serve(settings: ServerSettings, jobs: type[Jobs] = RecordingJobs) -> tuple[TestClient, ServerState]:
    """The server of `settings` with `jobs` in place of its workers (enter the client to start it; close the state
    after)."""
    state = ServerState.start(settings)
    state.jobs = jobs(settings.jobs)
    return TestClient(create_server_app(settings, state)), state
