"""In-process tests of the model loop against the scripted endpoint over the openai SDK (no browser).

The environment here is a small fake page machine; the browser-backed driver is tested separately.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
import httpx2
import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from adapter.actions import Action, Rejection
from adapter.loop import ModelLoop
from adapter.observation import Control, Observation, format_control
from adapter.scripted import create_scripted_app
from adapter.transcript import Bounds
from tasks import load_catalog

CATALOG = load_catalog()
SOLVE = CATALOG["helpdesk.solve-ticket@1"]

assert SOLVE.instance is not None
NUMBER = SOLVE.instance.parameters["ticket"]["number"]  # the open ticket seed 1 draws
SEARCH = "Search tickets (number, subject or customer)"
PAGES: dict[str, list[Control]] = {
    "/helpdesk/": [Control(id="1", role="link", name="Tickets")],
    "/helpdesk/tickets": [Control(id="1", role="link", name="Tickets"), Control(id="2", role="searchbox", name=SEARCH),
                          Control(id="3", role="button", name="Search"), Control(id="4", role="link", name=NUMBER)],
    f"/helpdesk/tickets/{NUMBER}": [
        Control(id="1", role="link", name="Tickets"),
        Control(id="7", role="combobox", name="Status", value="open", options=["open", "pending", "solved"]),
        Control(id="8", role="button", name="Save status"),
    ],
}
LINKS = {("/helpdesk/", "1"): "/helpdesk/tickets", ("/helpdesk/tickets", "4"): f"/helpdesk/tickets/{NUMBER}",
         ("/helpdesk/tickets", "1"): "/helpdesk/tickets", (f"/helpdesk/tickets/{NUMBER}", "1"): "/helpdesk/tickets"}
SOLVED = ["1:click:1", "2:fill:2", "3:click:3", "4:click:4", "5:select:7", "6:click:8"]


@dataclass
class Outcome:
    ok: bool
    rejection: Rejection | None = None
    note: str = ""
    navigated: bool = False


@dataclass
class FakeSite:
    """Three pages of the helpdesk as text; records what was done to them."""

    url: str = "/helpdesk/"
    done: list[str] = field(default_factory=list)

    async def observe(self) -> Observation:
        lines = [f"Page: fake\nURL: {self.url}"] + [format_control(c) for c in PAGES[self.url]]
        return Observation(url=self.url, title="fake", text="\n".join(lines), controls=PAGES[self.url])

    async def act(self, action: Action, number: int) -> Outcome:
        if action.action == "navigate":
            if not action.url.startswith("/helpdesk/"):
                return Outcome(ok=False, rejection=Rejection(cause="off_site", reason="off site"))
            self.url = action.url
            return Outcome(ok=True)
        control_id = getattr(action, "id", None)
        if control_id not in {c.id for c in PAGES[self.url]}:
            return Outcome(ok=False, rejection=Rejection(cause="unknown_control", reason=f"no [{control_id}]"))
        self.done.append(f"{number}:{action.action}:{control_id}")
        self.url = LINKS.get((self.url, str(control_id)), self.url)
        return Outcome(ok=True)


def in_process(app: FastAPI, base_url: str, *, max_retries: int = 2) -> openai.AsyncOpenAI:
    """An openai client whose HTTP goes straight into an ASGI app (the SDK's own HTTP client class)."""
    http = openai.DefaultAsyncHttpxClient(transport=httpx2.ASGITransport(app=app))
    return openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="scripted", http_client=http, max_retries=max_retries)


def scripted_client() -> openai.AsyncOpenAI:
    return in_process(create_scripted_app(list(CATALOG.values())), "http://scripted.test")


@pytest.mark.parametrize("tool_mode", ["auto", "native", "text"])
async def test_the_oracle_solves_the_task_from_the_text_observation_alone(tool_mode: str) -> None:
    site = FakeSite()
    loop = ModelLoop(scripted_client(), "scripted:oracle", Bounds(tool_mode=tool_mode))
    transcript = await loop.run(site, SOLVE.spec.instruction)
    assert transcript.stop_reason == "finish"
    assert transcript.finish is not None and transcript.finish.success
    assert site.done == SOLVED
    assert transcript.rejected_actions == 0
    assert {s.call.model for s in transcript.steps} == {"scripted:oracle"}
    assert all(s.call.system_fingerprint == "computerops-scripted-v1" for s in transcript.steps)
    assert len({s.call.request_sha256 for s in transcript.steps}) == len(transcript.steps)


async def test_malformed_output_is_rejected_recorded_and_counted_against_the_budget() -> None:
    site = FakeSite()
    transcript = await ModelLoop(scripted_client(), "scripted:malformed", Bounds(action_budget=10)).run(
        site, SOLVE.spec.instruction)
    assert transcript.stop_reason == "budget_exhausted"
    assert len(transcript.steps) == 10 and transcript.finish is None
    causes = [s.rejection.cause for s in transcript.steps if s.rejection]
    assert len(causes) == 10
    assert set(causes) == {"no_action", "malformed_arguments", "unknown_control", "off_site", "unknown_action"}
    assert site.done == []


async def test_give_up_is_a_claimed_failure_after_one_reply() -> None:
    loop = ModelLoop(scripted_client(), "scripted:give-up", Bounds())
    transcript = await loop.run(FakeSite(), SOLVE.spec.instruction)
    assert transcript.finish is not None and transcript.finish.success is False
    assert len(transcript.steps) == 1


async def test_an_unreachable_endpoint_ends_the_episode_as_infrastructure() -> None:
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0, timeout=2.0)
    transcript = await ModelLoop(client, "any", Bounds()).run(FakeSite(), SOLVE.spec.instruction)
    assert transcript.stop_reason == "infrastructure"
    assert transcript.infrastructure_error and "Connection" in transcript.infrastructure_error
    assert transcript.steps == []


async def test_the_scripted_endpoint_lists_its_policies_and_refuses_unknown_models() -> None:
    app = create_scripted_app(list(CATALOG.values()))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://s") as http:
        models = (await http.get("/v1/models")).json()
        assert "scripted:oracle" in [m["id"] for m in models["data"]]
        response = await http.post("/v1/chat/completions", json={"model": "gpt-x", "messages": []})
        assert response.status_code == 404
        response = await http.post("/v1/chat/completions", json={"model": "scripted:nope", "messages": []})
        assert response.status_code == 404 and "unknown scripted policy" in response.text


class BrokenSite(FakeSite):
    async def act(self, action: Action, number: int) -> Outcome:
        raise RuntimeError("Target page, context or browser has been closed")


async def test_a_crashed_page_ends_the_episode_as_infrastructure_not_as_an_agent_failure() -> None:
    transcript = await ModelLoop(scripted_client(), "scripted:oracle", Bounds()).run(
        BrokenSite(), SOLVE.spec.instruction)
    assert transcript.stop_reason == "infrastructure"
    assert "browser has been closed" in (transcript.infrastructure_error or "")


def without_tool_support() -> openai.AsyncOpenAI:
    """A server that answers 400 to any request carrying tools, like some local servers do."""
    scripted = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_scripted_app(list(CATALOG.values()))),
                                 base_url="http://scripted.test")
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.json()
        if "tools" in body:
            return JSONResponse({"error": {"message": "tools are not supported by this server"}}, status_code=400)
        forwarded = await scripted.post("/v1/chat/completions", json=body)
        return Response(forwarded.content, status_code=forwarded.status_code, media_type="application/json")

    return in_process(app, "http://plain.test", max_retries=0)


async def test_a_server_without_tool_calls_falls_back_to_the_text_protocol() -> None:
    site = FakeSite()
    transcript = await ModelLoop(without_tool_support(), "scripted:oracle", Bounds()).run(site, SOLVE.spec.instruction)
    assert transcript.tool_mode == "text"
    assert "Reply with exactly one action as a JSON object" in transcript.system_prompt
    assert transcript.stop_reason == "finish" and site.done == SOLVED
    assert all(not s.call.tool_calls and s.call.content for s in transcript.steps)
