"""A whole run against two OpenAI-compatible servers on loopback (the scripted endpoint served twice, as `computerops
mock-llm` serves it), without --serving: the primary is slow to answer the run's probe and is stopped after its
first reply. The probe says it decided nothing and why, the episode in flight and the next go on on the pinned
fallback, each reply attributed to the endpoint that answered it, the report has a row per endpoint, and the run
verifies (issue 43)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import pytest

from adapter.modelclient import model_client
from adapter.scripted import create_scripted_app
from adapter.transcript import Bounds
from computerops.report.html import render_html
from computerops.report.layout import report_view
from computerops.report.run import summarize
from computerops.runs import runner
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, FallbackEndpoint, PlannedEpisode, RunConfig
from computerops.runs.serving import serve_app
from computerops.runs.verification import verify_run
from computerops.serving_faults import clients
from tasks import load_catalog

pytestmark = pytest.mark.browser

NOTIFY = "helpdesk.notify-and-close-follow-up@1"
REQUEST_TIMEOUT_S = 2.0
PROBE_DELAY_S = 5.0
Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class StoppedAfterOneReply:
    """The primary: its first chat request (the run's tools probe) answered only after PROBE_DELAY_S, its second
    (the first episode's first reply) answered, and then the server stopped (`stop`)."""

    def __init__(self, app: Asgi) -> None:
        self.app = app
        self.chats = 0
        self.stop = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        chat = scope["type"] == "http" and scope["path"].endswith("/chat/completions")
        if chat:
            self.chats += 1
            if self.chats == 1:
                await asyncio.sleep(PROBE_DELAY_S)
        await self.app(scope, receive, send)
        if chat and self.chats == 2:
            self.stop.set()


async def _held(app: Asgi, origin: asyncio.Future[str], stop: asyncio.Event) -> None:
    async with serve_app(app) as served:
        origin.set_result(served)
        await stop.wait()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDirectory, list[str], list[float]]:
    catalog = load_catalog()
    out = tmp_path_factory.mktemp("dead-primary") / "run"
    progress: list[str] = []
    timeouts: list[float] = []

    def spied(original: Callable[..., Any]) -> Callable[..., Any]:
        def client(*args: Any, **kwargs: Any) -> Any:
            timeouts.append(kwargs["timeout"])
            return original(*args, **kwargs)
        return client

    async def go() -> None:
        primary = StoppedAfterOneReply(create_scripted_app([catalog[NOTIFY]], default_policy="careful"))
        origin: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        held = asyncio.create_task(_held(primary, origin, primary.stop))
        async with serve_app(create_scripted_app([catalog[NOTIFY]], default_policy="oracle")) as fallback:
            endpoint = EndpointConfig(kind="openai", base_url=f"{await origin}/v1", model="primary-model",
                                      fallback=FallbackEndpoint(base_url=f"{fallback}/v1", model="fallback-model"))
            plan = [PlannedEpisode(episode_id=f"00{n}-notify", task_id=NOTIFY, repetition=n) for n in (1, 2)]
            config = RunConfig(run_id="dead-primary", tasks=[NOTIFY], endpoint=endpoint, episodes=plan, repeat=2,
                               bounds=Bounds(request_timeout_s=REQUEST_TIMEOUT_S, wall_clock_s=120))
            await runner.execute_run(config, [catalog[NOTIFY]], out, progress.append)
        primary.stop.set()
        await held

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "model_client", spied(model_client))
        patch.setattr(clients, "model_client", spied(model_client))
        asyncio.run(go())
    return RunDirectory.open(out), progress, timeouts


def test_the_run_goes_on_on_the_fallback_and_verifies(run: tuple[RunDirectory, list[str], list[float]]) -> None:
    bundle, progress, _ = run
    records = bundle.records()
    assert [r.outcome for r in records] == ["verified_success"] * 2, progress  # this fallback is the oracle
    assert all(r.replay == "PASS" for r in records)
    assert asyncio.run(verify_run(bundle)).problems == []


def test_each_reply_is_attributed_to_the_endpoint_that_answered_it(
        run: tuple[RunDirectory, list[str], list[float]]) -> None:
    bundle, _, _ = run
    first, second = bundle.records()
    steps = [json.loads((bundle.episode_dir(r.episode_id) / "transcript.json").read_text())["steps"]
             for r in (first, second)]
    assert [s["call"].get("upstream") for s in steps[0]] == [None] + ["fallback"] * (len(steps[0]) - 1)
    assert {s["call"].get("upstream") for s in steps[1]} == {"fallback"}, "the next episode on the fallback too"
    assert first.replies_by_upstream == {"fallback": len(steps[0]) - 1, "primary": 1}
    assert second.replies_by_upstream == {"fallback": len(steps[1])}
    events = json.loads((bundle.episode_dir(first.episode_id) / "transcript.json").read_text())["serving"]
    assert [(e["reply"], e["kind"], e["upstream"]) for e in events] == [
        (2, "unreachable", "primary"), (2, "fell_back", "fallback")]


def test_the_report_has_a_row_per_endpoint_that_answered(run: tuple[RunDirectory, list[str], list[float]]) -> None:
    bundle, _, _ = run
    report = summarize(bundle.manifest(), bundle.records())
    rows = {r.upstream: r for r in report.by_upstream}
    first, second = bundle.records()
    assert (rows["primary"].endpoint, rows["primary"].replies, rows["primary"].table.episodes) == (
        "primary-model", 1, 1)
    answered = sum((r.replies_by_upstream or {})["fallback"] for r in (first, second))
    assert (rows["fallback"].endpoint, rows["fallback"].replies, rows["fallback"].table.episodes) == (
        "fallback-model", answered, 2)
    table = next(t for t in report_view(report).tables() if t.id == "answered-by")
    assert [row[:3] for row in table.rows] == [("primary: primary-model", 1, 1),
                                               ("fallback: fallback-model", rows["fallback"].replies, 2)]
    page = render_html(report)
    assert 'id="answered-by"' in page and "fallback: fallback-model" in page


def test_the_clients_wait_the_request_timeout_and_the_unanswered_probe_is_said(
        run: tuple[RunDirectory, list[str], list[float]]) -> None:
    bundle, progress, timeouts = run
    assert timeouts == [REQUEST_TIMEOUT_S] * 3, "the run's client and each episode's fallback client"
    observed = bundle.manifest().endpoint_observed
    assert observed.tools is not None and observed.tools.verdict == "not_checked"
    assert observed.tool_results is not None and observed.tool_results.verdict == "not_checked"
    because = f"the tools probe before it got no answer within {REQUEST_TIMEOUT_S:g} s"
    assert observed.tool_results.detail == because
    assert any(f"WARNING tool results: not checked, because {because}" in line for line in progress)
    assert bundle.manifest().config.bounds.request_timeout_s == REQUEST_TIMEOUT_S
