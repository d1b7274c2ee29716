"""Honest episodes replay whatever their paths hold, and request text that could crash a handler is refused first.

Requests go over real HTTP to uvicorn (as the browser's do) and are replayed over ASGI (as `replay` does): paths
with every reserved character percent-encoded replay PASS; an action header out of bounds is refused with 400
before any work (nothing done, nothing logged); ids of many digits or Unicode digits are a 404, never a 500.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from starlette.datastructures import Headers
from test_replay import REFUND
from tiers import examples

from computerops.core.binding import TENANT_HEADER
from computerops.core.vocabulary import ACTION_HEADER
from computerops.runs.serving import serve_app
from replays import RecordedEpisode, replay_episode
from sites.kit.app import create_app
from sites.kit.oplog import MAX_ACTION_NUMBER, own_location
from sites.kit.records import Operation
from sites.registry import tenant_registry
from verifier import Claim, judge

RESERVED = ":/?#[]@!$&'()*+,;=% \\\"<>^`{|}~\t\u00e9\u2028\U0001f4a5"


SentRequest = tuple[str, str, bytes, dict[str, str]]
"""(method, raw path, body, extra headers) of one request an episode sends."""


async def replay_requests(tmp_path: Path, requests: list[SentRequest]) -> tuple[list[Operation], list[str]]:
    """Send each request on a helpdesk tenant over HTTP (as action 1, 2, ...), judge the episode, replay it over
    ASGI: the operations logged, and the receipt's reasons (none when it replays PASS)."""
    registry = tenant_registry(tmp_path / "tenants")
    try:
        tenant = registry.create(REFUND.spec.site, REFUND.spec.seed)
        async with serve_app(create_app(registry)) as origin, httpx.AsyncClient(base_url=origin) as client:
            for number, (method, path, body, extra) in enumerate(requests, start=1):
                headers = {TENANT_HEADER: tenant.token, ACTION_HEADER: str(number), **extra}
                response = await client.request(method, path, content=body, headers=headers)
                assert response.status_code < 500, (path, response.status_code)
        operations, journal, state = tenant.operations(), tenant.journal(), tenant.snapshot()
        registry.drop(tenant)
        verdict = judge(REFUND.spec, REFUND.sha256, state=state, journal=journal, operations=operations,
                        claim=Claim(success=False))
        episode = RecordedEpisode(episode_id="e", operations=operations, journal=journal, final_state=state,
                                  verdict=verdict)
        receipt = await replay_episode(REFUND, episode, registry)
        return operations, [] if receipt.result == "PASS" else list(receipt.mismatches)
    finally:
        registry.close()


async def record_and_replay(tmp_path: Path, paths: list[str]) -> tuple[list[Operation], list[str]]:
    """GET each raw path; the operations and the receipt's reasons (`replay_requests`)."""
    return await replay_requests(tmp_path, [("GET", path, b"", {}) for path in paths])


async def test_paths_with_every_reserved_character_replay_pass(tmp_path: Path) -> None:
    paths = [f"/helpdesk/tickets/{quote(char, safe='')}x" for char in RESERVED]
    paths += ["/helpdesk/tickets/T-2001%3Fsecret=1", "/helpdesk/orders/O-1042%23frag", "/helpdesk/orders/%2541",
              "/helpdesk/tickets/a%2Fb", "/helpdesk/tickets/%3f%3F", "/helpdesk/tickets/T-2001?x=%3F%23&y=%25"]
    operations, problems = await record_and_replay(tmp_path, paths)
    assert problems == []
    by_path = {op.raw_path for op in operations}
    assert "/helpdesk/tickets/T-2001%3Fsecret=1" in by_path, "the path is kept exactly as sent"


@settings(max_examples=examples(10))
@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3))
@example(segments=["/"]).via("a trailing slash the framework redirects away, to an absolute URL of the server")
async def test_generated_path_segments_replay_pass(tmp_path_factory: pytest.TempPathFactory,
                                                    segments: list[str]) -> None:
    path = "/helpdesk/tickets/" + "/".join(quote(s, safe="") for s in segments)
    _, problems = await record_and_replay(tmp_path_factory.mktemp("paths"), [path])
    assert problems == []


@pytest.mark.parametrize("header", [str(MAX_ACTION_NUMBER + 1), "9" * 25, "-1", "1.5", " 3", "\u0661\u0662",
                                    "1_000", "0x10", ""])
async def test_an_action_header_out_of_bounds_is_refused_before_any_work(tmp_path: Path, header: str) -> None:
    registry = tenant_registry(tmp_path)
    try:
        tenant = registry.create(REFUND.spec.site, REFUND.spec.seed)
        transport = httpx.ASGITransport(app=create_app(registry))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            refused = await client.post("/helpdesk/orders/O-1042/refunds",
                                        content=b"amount=49.90&currency=EUR&approval=RA-12&reason=damaged",
                                        headers={TENANT_HEADER.encode(): tenant.token.encode(),
                                                 ACTION_HEADER.encode(): header.encode(),
                                                 b"content-type": b"application/x-www-form-urlencoded"})
            assert refused.status_code == 400 and "action header" in refused.text.lower()
            assert tenant.operations() == [] and tenant.journal() == [], "nothing done, nothing logged"
            accepted = await client.get("/helpdesk/", headers={TENANT_HEADER: tenant.token,
                                                              ACTION_HEADER: str(MAX_ACTION_NUMBER)})
            assert accepted.status_code == 200
            assert [op.action for op in tenant.operations()] == [MAX_ACTION_NUMBER]
    finally:
        registry.close()


ODD_IDS = ["9" * 25, "\u0661\u0662", "\u00b2", "\uff11\uff12", "1" * 16, "0" * 30 + "1"]
ID_ROUTES = ["/webmail/messages/{}", "/webmail/contacts/{}", "/webmail/drafts/{}", "/helpdesk/customers/{}",
             "/invoices/spreadsheet/{}"]


@pytest.mark.parametrize("route", ID_ROUTES)
async def test_ids_of_many_digits_or_unicode_digits_are_not_found_never_a_server_error(tmp_path: Path,
                                                                                       route: str) -> None:
    registry = tenant_registry(tmp_path)
    try:
        site = route.split("/")[1]
        seed = next(t.spec.seed for t in [REFUND] if t.spec.site == site) if site == "helpdesk" else 1
        tenant = registry.create(site, seed)
        transport = httpx.ASGITransport(app=create_app(registry))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for odd in ODD_IDS:
                response = await client.get(route.format(quote(odd)), headers={TENANT_HEADER: tenant.token})
                assert response.status_code in (404, 422), (route, odd, response.status_code)
    finally:
        registry.close()


def test_a_redirect_to_the_servers_own_origin_is_recorded_by_its_path() -> None:
    scope = {"type": "http", "scheme": "http", "path": "/helpdesk/tickets/", "headers": []}
    headers = Headers(headers={"host": "127.0.0.1:41234"})
    assert own_location("http://127.0.0.1:41234/helpdesk/tickets?x=1", scope, headers) == "/helpdesk/tickets?x=1"
    assert own_location("HTTP://127.0.0.1:41234", scope, headers) == "/"
    assert own_location("/helpdesk/tickets", scope, headers) == "/helpdesk/tickets"
    for elsewhere in ("http://127.0.0.1:9999/helpdesk/", "https://127.0.0.1:41234/helpdesk/", "http://evil.example/"):
        assert own_location(elsewhere, scope, headers) == elsewhere
    assert own_location(None, scope, headers) is None
