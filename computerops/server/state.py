"""What one server process holds: its settings, the run index, the jobs it started; and the lookups every route
shares (a run by name inside the runs folder, the index kept fresh)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, ValidationError

from computerops.core import formats
from computerops.core.durable import write_durably
from computerops.core.formats import Versioned
from computerops.runs.bundle import MANIFEST, RunDirectory
from computerops.server.index import IndexedRun, RunIndex
from computerops.server.jobs import Jobs
from computerops.server.launching import probe_endpoint
from computerops.server.names import inside
from computerops.server.settings import ServerSettings
from computerops.service.errors import ServiceError
from computerops.service.reading import open_run

REFRESH_S = 1.0
"""The index is rebuilt from the runs folder at most once a second however many clients list runs."""


class Launched(Versioned):
    """A run a server launched, as it stood at its launch (jobs/launched/<run>.json) until its worker writes the run's
    manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.launched/1"] = formats.LAUNCHED
    run: IndexedRun


@dataclass
class ServerState:
    settings: ServerSettings
    index: RunIndex
    jobs: Jobs
    probe: Callable[[str, str | None], None] = probe_endpoint
    """How a launch asks an OpenAI-compatible endpoint for its model list before starting anything."""
    _refreshed: float = 0.0
    _refresh_lock: threading.Lock = field(default_factory=threading.Lock)
    _launched: dict[str, IndexedRun] = field(default_factory=dict)
    """Runs this server launched, as each stood at its launch: what `indexed` answers until the worker has written
    the run's manifest (never a 404 between the launch's 202 and the run's first file)."""

    @classmethod
    def start(cls, settings: ServerSettings) -> ServerState:
        """Create the server's folders, open the index and rebuild it from the runs folder; take on the jobs a server
        before this one left running, and the runs it launched whose manifest is still to come (`recall`)."""
        settings.create_folders()
        state = cls(settings=settings, index=RunIndex(settings.database_url), jobs=Jobs(settings.jobs))
        state.jobs.adopt()
        state.recall()
        state.fresh_index()
        return state

    @property
    def _launched_folder(self) -> Path:
        return self.settings.jobs / "launched"

    def recall(self) -> None:
        """The runs a server on this runs folder launched whose worker has not written the manifest: as `launched`
        remembered them (a run whose worker is gone then says so, never a 404). A file of a run now written is
        removed."""
        for path in sorted(self._launched_folder.glob("*.json")):
            try:
                remembered = Launched.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, ValidationError):
                continue
            if (self.run_path(remembered.run.run_id) / MANIFEST).is_file():
                path.unlink(missing_ok=True)
            else:
                self._launched.setdefault(remembered.run.run_id, remembered.run)

    def close(self) -> None:
        self.jobs.close()
        self.index.close()

    def fresh_index(self) -> None:
        """Rebuild the index from the runs folder unless that was done within REFRESH_S."""
        with self._refresh_lock:
            if time.monotonic() - self._refreshed < REFRESH_S:
                return
            self.index.rebuild(self.settings.runs)
            self._refreshed = time.monotonic()

    def run_path(self, run_id: str) -> Path:
        """The folder of run `run_id` inside the runs folder (not checked to exist)."""
        return inside(self.settings.runs, run_id, "run")

    def bundle(self, run_id: str) -> RunDirectory:
        """Run `run_id` opened; ServiceError not_found when there is none."""
        path = self.run_path(run_id)
        if not path.is_dir():
            raise ServiceError(f"no run named {run_id!r}", "not_found")
        return open_run(path)

    def runs(self) -> list[IndexedRun]:
        """Every run of the runs folder, newest first, with the runs this server launched whose manifest is still on
        its way first of all (as `indexed` answers them)."""
        self.fresh_index()
        listed = self.index.runs()
        known = {run.run_id for run in listed}
        launched = list(self._launched)  # a snapshot: routes run in threads, and `indexed` forgets written runs
        waiting = [self.indexed(run_id) for run_id in reversed(launched) if run_id not in known]
        return [*waiting, *listed]

    def launched(self, run: IndexedRun) -> IndexedRun:
        """Remember a run this server just launched (see `_launched`), on disk too (a server started after this one
        stops recalls it); returns it."""
        self._launched[run.run_id] = run
        self._launched_folder.mkdir(parents=True, exist_ok=True)
        write_durably(self._launched_folder / f"{run.run_id}.json", Launched(run=run).model_dump_json(indent=2))
        return run

    def indexed(self, run_id: str) -> IndexedRun:
        """Run `run_id` as the index holds it, refreshed from its directory now; a run this server launched whose
        worker has not written its manifest yet as it stood at its launch (`incomplete`, saying why, once its worker
        ended without writing one)."""
        path = self.run_path(run_id)
        pending = self._launched.get(run_id)
        if pending is not None and (path / MANIFEST).is_file():
            self._launched.pop(run_id, None)  # the run speaks for itself now
            (self._launched_folder / f"{run_id}.json").unlink(missing_ok=True)
        elif pending is not None:
            job = self.jobs.state(run_id)
            if job is not None and job.state == "running":
                return pending
            ended = "was cancelled" if job is not None and job.state == "cancelled" else (
                f"exited with code {job.exit_code}" if job is not None else "is gone")
            return pending.model_copy(update={
                "status": "incomplete", "problem": f"its worker {ended} before it wrote the run's manifest"})
        if not path.is_dir():
            raise ServiceError(f"no run named {run_id!r}", "not_found")
        run = self.index.refresh(self.settings.runs, path)
        if run is None:
            raise ServiceError(f"{run_id!r} is not a run directory", "not_found")
        return run
