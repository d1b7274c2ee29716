"""A run whose primary endpoint is already dead when it starts (nothing listens on its port) and a fallback is
configured: the run goes on, says so, probes nothing of the primary (saying why), and every episode is answered by
the fallback after one refused connection, attributed to it; it verifies. A primary that answers something other
than a model list (a wrong base URL) is still refused, fallback or not (issue 43, point 4)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from fastapi import FastAPI

from adapter import serverinfo
from adapter.scripted import create_scripted_app
from adapter.transcript import Bounds
from computerops.runs import provenance, runner
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, FallbackEndpoint, PlannedEpisode, RunConfig
from computerops.runs.endpoint import EndpointError
from computerops.runs.serving import serve_app
from computerops.runs.verification import verify_run
from tasks import load_catalog

pytestmark = pytest.mark.browser

NOTIFY = "helpdesk.notify-and-close-follow-up@1"


def closed_port() -> int:
    """A loopback port nothing listens on (taken from the system, then let go)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        return int(held.getsockname()[1])


def config(primary: str, fallback: str, tool_mode: str = "native") -> RunConfig:
    endpoint = EndpointConfig(kind="openai", base_url=primary, model="primary-model",
                              fallback=FallbackEndpoint(base_url=fallback, model="fallback-model"))
    plan = [PlannedEpisode(episode_id=f"00{n}-notify", task_id=NOTIFY, repetition=n) for n in (1, 2)]
    return RunConfig(run_id="dead-at-start", tasks=[NOTIFY], endpoint=endpoint, episodes=plan, repeat=2,
                     bounds=Bounds(request_timeout_s=5, wall_clock_s=120, tool_mode=tool_mode))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDirectory, list[str]]:
    catalog = load_catalog()
    out = tmp_path_factory.mktemp("dead-at-start") / "run"
    progress: list[str] = []

    async def go() -> None:
        async with serve_app(create_scripted_app([catalog[NOTIFY]], default_policy="oracle")) as fallback:
            await runner.execute_run(config(f"http://127.0.0.1:{closed_port()}/v1", f"{fallback}/v1"),
                                     [catalog[NOTIFY]], out, progress.append)

    asyncio.run(go())
    return RunDirectory.open(out), progress


def test_the_run_goes_on_on_the_fallback_says_so_and_verifies(run: tuple[RunDirectory, list[str]]) -> None:
    bundle, progress = run
    records = bundle.records()
    assert [r.outcome for r in records] == ["verified_success"] * 2, progress  # the fallback is the oracle
    assert asyncio.run(verify_run(bundle)).problems == []
    warning = [line for line in progress if "WARNING" in line and "did not answer GET /models" in line]
    assert len(warning) == 1 and "a fallback is configured" in warning[0], progress


def test_every_reply_is_the_fallbacks_after_one_refused_connection(run: tuple[RunDirectory, list[str]]) -> None:
    bundle, _ = run
    for record in bundle.records():
        transcript = json.loads((bundle.episode_dir(record.episode_id) / "transcript.json").read_text())
        steps = transcript["steps"]
        assert {s["call"].get("upstream") for s in steps} == {"fallback"}
        assert record.replies_by_upstream == {"fallback": len(steps)}
        assert [(e["reply"], e["kind"], e["upstream"]) for e in transcript["serving"]] == [
            (1, "unreachable", "primary"), (1, "fell_back", "fallback")]


def test_the_manifest_says_the_primary_was_unreachable_and_nothing_of_it_was_probed(
        run: tuple[RunDirectory, list[str]]) -> None:
    observed = run[0].manifest().endpoint_observed
    assert observed.models_unreachable and observed.models_error
    assert observed.tools is not None and observed.tools.verdict == "not_checked"
    assert observed.tool_results is not None and observed.tool_results.verdict == "not_checked"
    assert observed.tool_results.detail == "the primary endpoint could not be reached at the start of the run"
    assert run[0].manifest().fallback_observed is not None


def test_a_primary_that_answers_no_model_list_is_refused_even_with_a_fallback(tmp_path: Path) -> None:
    catalog = load_catalog()
    wrong = FastAPI()  # answers, but not as a model list: a wrong base URL, not a dead server

    async def go() -> None:
        async with serve_app(wrong) as primary, serve_app(
                create_scripted_app([catalog[NOTIFY]], default_policy="oracle")) as fallback:
            with pytest.raises(EndpointError, match="did not answer GET /models"):
                await runner.execute_run(config(primary, f"{fallback}/v1"), [catalog[NOTIFY]], tmp_path / "run",
                                         lambda line: None)

    asyncio.run(go())
    assert not (tmp_path / "run").exists()


def test_a_dead_primary_without_a_fallback_is_refused(tmp_path: Path) -> None:
    catalog = load_catalog()
    endpoint = EndpointConfig(kind="openai", base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m")
    plan = [PlannedEpisode(episode_id="001-notify", task_id=NOTIFY, repetition=1)]
    dead = RunConfig(run_id="dead", tasks=[NOTIFY], endpoint=endpoint, episodes=plan, repeat=1,
                     bounds=Bounds(request_timeout_s=5, wall_clock_s=60))
    with pytest.raises(EndpointError, match="did not answer GET /models"):
        asyncio.run(runner.execute_run(dead, [catalog[NOTIFY]], tmp_path / "run", lambda line: None))


async def _observe_slow_and_closing() -> tuple[bool, bool, bool]:
    """(unreachable) as observed of a server that never answers in time, one that closes each connection at once,
    and a port nothing listens on."""
    slow = FastAPI()

    @slow.get("/v1/models")
    async def models() -> dict[str, list[object]]:
        await asyncio.sleep(5)
        return {"data": []}

    async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    closing = await asyncio.start_server(close_at_once, "127.0.0.1", 0)
    closing_port = closing.sockets[0].getsockname()[1]
    async with serve_app(slow) as slow_origin, closing:
        timed_out = await provenance.observe_endpoint(f"{slow_origin}/v1", "k")
        closed = await provenance.observe_endpoint(f"http://127.0.0.1:{closing_port}/v1", "k")
    refused = await provenance.observe_endpoint(f"http://127.0.0.1:{closed_port()}/v1", "k")
    assert timed_out.models_error and closed.models_error and refused.models_error
    return timed_out.models_unreachable, closed.models_unreachable, refused.models_unreachable


def test_only_a_connection_that_could_not_be_made_or_kept_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serverinfo, "PROBE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(provenance, "PROBE_TIMEOUT_S", 0.5)
    assert asyncio.run(_observe_slow_and_closing()) == (False, True, True), "a slow server is not a dead one"
