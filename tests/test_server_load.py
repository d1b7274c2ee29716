"""The operator server under load while it runs a run: 20 loopback clients poll the run's progress (four of them
hold its event stream) from the moment its manifest exists until it is sealed; none gets an error, none sees a
number go backwards. The run the server launched leaves the evidence the same plan leaves when run without it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from computerops.runs.bundle import RunDirectory
from computerops.server.screenshots import serving
from computerops.server.settings import ServerSettings
from computerops.service.launch import RunRequest, launch, plan_run

pytestmark = pytest.mark.browser  # each run drives Chromium (the server's in its worker, the other in this process)

RUN = "same-plan"
"""Both runs have this name (in two folders): the run's name is part of its config."""
TASKS = "helpdesk.solve-ticket@1,helpdesk.answer-escalation-queue@1"
ENDPOINT = "scripted:oracle,false-finish"
"""Two tasks by two policies: four episodes, two passed and two false completions."""
CONCURRENCY = 2
CLIENTS = 20
STREAMS = 4
"""Of the clients, those that hold the event stream; the rest poll GET /api/runs/RUN/progress."""
POLL_S = 0.05
DEADLINE_S = 120.0
IDENTICAL = ("operations.json", "journal.json", "final_state.json", "verdict.json", "receipt.json")
"""Evidence byte-identical between two runs of one plan (tests/test_concurrency.py; the transcript holds each
reply's measured latency)."""
MEASURED = ("wall_s", "started_s")
"""Fields of an episode record that are measured, not determined by the plan."""


@dataclass
class Client:
    """What one client saw."""

    statuses: list[int] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failure: str | None = None


@dataclass(frozen=True)
class Loaded:
    served: RunDirectory
    plain: RunDirectory
    clients: list[Client]
    launched_status: int
    job: dict[str, Any]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    root = tmp_path_factory.mktemp("server-load")
    with serving(ServerSettings(runs=root / "served")) as origin:
        yield origin, root / "served", root / "plain"


async def poll(client: httpx.AsyncClient, url: str, seen: Client, deadline: float) -> None:
    while time.monotonic() < deadline:
        response = await client.get(url)
        if response.status_code == 404 and not seen.progress:  # launched: the worker has not written its manifest
            await asyncio.sleep(POLL_S)
            continue
        seen.statuses.append(response.status_code)
        if response.status_code != 200:
            return
        seen.progress.append(response.json())
        if seen.progress[-1]["sealed"]:
            return
        await asyncio.sleep(POLL_S)
    seen.failure = "the run was not sealed before the deadline"


async def stream(client: httpx.AsyncClient, url: str, seen: Client) -> None:
    async with client.stream("GET", url) as response:
        seen.statuses.append(response.status_code)
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                seen.events.append((kind, json.loads(line.removeprefix("data: "))))


async def watch(origin: str, seen: Client, streaming: bool, deadline: float) -> None:
    timeout = httpx.Timeout(10.0, read=DEADLINE_S)
    try:
        async with httpx.AsyncClient(base_url=origin, timeout=timeout) as client:
            if streaming:
                await asyncio.wait_for(stream(client, f"/api/runs/{RUN}/events", seen), DEADLINE_S)
            else:
                await poll(client, f"/api/runs/{RUN}/progress", seen, deadline)
    except Exception as exc:  # any exception is the finding
        seen.failure = f"{type(exc).__name__}: {exc}"


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def loaded(folders: tuple[str, Path, Path]) -> Loaded:
    origin, served, plain = folders
    deadline = time.monotonic() + DEADLINE_S
    async with httpx.AsyncClient(base_url=origin, timeout=30) as client:
        launched = await client.post("/api/runs", json={"run_id": RUN, "tasks": TASKS, "endpoint": ENDPOINT,
                                                        "concurrency": CONCURRENCY})
        clients = [Client() for _ in range(CLIENTS)]
        await asyncio.gather(*(watch(origin, seen, index < STREAMS, deadline) for index, seen in enumerate(clients)))
        while (job := (await client.get(f"/api/runs/{RUN}")).json()["job"])["state"] == "running":
            assert time.monotonic() < deadline, "the worker did not exit"
            await asyncio.sleep(0.1)
    request = RunRequest(tasks=TASKS, endpoint=ENDPOINT)
    await asyncio.to_thread(launch, plan_run(request, plain / RUN), lambda _: None, concurrency=CONCURRENCY)
    return Loaded(RunDirectory.open(served / RUN), RunDirectory.open(plain / RUN), clients, launched.status_code,
                  job)


def test_the_launched_run_completes(loaded: Loaded) -> None:
    assert loaded.launched_status == 202
    assert (loaded.job["state"], loaded.job["exit_code"]) == ("exited", 0)
    assert loaded.served.completeness().complete
    assert len(loaded.served.records()) == 4


def test_no_client_gets_an_error_and_no_number_goes_backwards(loaded: Loaded) -> None:
    assert len(loaded.clients) == CLIENTS
    for index, seen in enumerate(loaded.clients):
        assert seen.failure is None, (index, seen.failure)
        assert seen.statuses and set(seen.statuses) == {200}, (index, seen.statuses)
    pollers = [seen for seen in loaded.clients if seen.progress]
    assert len(pollers) == CLIENTS - STREAMS
    for seen in pollers:
        steps = [(len(p["started"]), len(p["admitted"]), p["sealed"]) for p in seen.progress]
        assert steps == sorted(steps), steps  # started, admitted and sealed each only grow
        assert all(p["planned"] == 4 for p in seen.progress)
        for before, after in zip(seen.progress, seen.progress[1:], strict=False):
            assert set(before["started"]) <= set(after["started"])
            assert after["admitted"][:len(before["admitted"])] == before["admitted"]  # appended to, never rewritten
        assert seen.progress[-1]["sealed"] and len(seen.progress[-1]["admitted"]) == 4
    # The clients watched the run while it ran, not only after it.
    assert any(not p["sealed"] for seen in pollers for p in seen.progress)
    for seen in loaded.clients[:STREAMS]:
        kinds = [kind for kind, _ in seen.events]
        assert "error" not in kinds and kinds[-1] == "end", kinds
        assert kinds.count("admitted") == kinds.count("started") == 4, kinds
        admitted = [data["admitted"] for kind, data in seen.events if kind == "progress"]
        assert admitted == sorted(admitted) and admitted[-1] == 4, admitted
        assert seen.events[-1][1] == {"sealed": True, "exit_code": seen.events[-1][1]["exit_code"], "admitted": 4,
                                      "planned": 4}


def comparable(record: Any) -> dict[str, Any]:
    """An episode record without its measured fields (and the hash of the transcript, which holds latencies)."""
    data: dict[str, Any] = record.model_dump(mode="json", exclude=set(MEASURED))
    data["evidence_sha256"] = {k: v for k, v in data["evidence_sha256"].items() if k != "transcript.json"}
    return data


def test_the_served_run_leaves_the_evidence_of_the_same_plan_run_without_the_server(loaded: Loaded) -> None:
    served, plain = loaded.served, loaded.plain
    assert served.manifest().config == plain.manifest().config
    served_records = {r.episode_id: r for r in served.records()}
    plain_records = {r.episode_id: r for r in plain.records()}
    assert list(served_records) == list(plain_records) == [p.episode_id for p in plain.manifest().config.episodes]
    assert {r.outcome for r in plain_records.values()} == {"verified_success", "false_completion"}
    for episode_id, record in plain_records.items():
        assert comparable(served_records[episode_id]) == comparable(record), episode_id
        for name in IDENTICAL:
            left = (served.episode_dir(episode_id) / name).read_bytes()
            right = (plain.episode_dir(episode_id) / name).read_bytes()
            assert left == right, f"{episode_id}/{name} differs between the served run and the plain one"
