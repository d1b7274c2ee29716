"""A request reaches a tenant through exactly one binding, and what a response shows counts only when it was loaded
as a document.

- `tenant_bindings` reads cookies as the server does (starlette's parser), so no spelling of a second binding gets
  past the server's refusal; `without_bindings` takes every binding out and nothing else (the egress proxy's rule);
- the server refuses, before any work, a request that carries two bindings (header and cookie, a cookie twice, a
  header twice), whichever tenants they name;
- a response loaded as an image, script or fetch() shows nothing (`Operation.shown` empty), and replays PASS with
  the destination sent again; a body over the operation log's bound is refused with 413, logged without its body,
  and replays PASS.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import cookie_parser
from test_replay_paths import replay_requests
from tiers import examples

from computerops.core.binding import TENANT_COOKIE, TENANT_HEADER, tenant_bindings, without_bindings
from computerops.core.vocabulary import DISPLAYED_DESTINATIONS, FETCH_DESTINATION_HEADER
from computerops.runs.serving import serve_app
from sites.kit.app import create_app
from sites.kit.oplog import MAX_REQUEST_BYTES
from sites.kit.records import Shown
from sites.registry import tenant_registry

_NAMES = st.sampled_from([TENANT_COOKIE, f" {TENANT_COOKIE}", f"{TENANT_COOKIE} ", "other", "computerops_tenantx",
                          "Computerops_Tenant", "", "apps"])
_VALUES = st.text(alphabet=st.sampled_from("ab=; \"\\,"), max_size=6)
COOKIE_HEADERS = st.lists(st.tuples(_NAMES, _VALUES), max_size=5).map(
    lambda pairs: ";".join(f"{name}={value}" if name or value else "" for name, value in pairs))


@settings(max_examples=examples(400))
@given(COOKIE_HEADERS, st.booleans())
def test_bindings_are_read_as_the_server_reads_cookies_and_taken_out_leaving_the_rest(cookie: str,
                                                                                       header: bool) -> None:
    lines = [("Cookie", cookie), *([(TENANT_HEADER.lower(), "h")] if header else [])]
    found = tenant_bindings(lines)
    server_token = cookie_parser(cookie).get(TENANT_COOKIE)
    if server_token is not None:  # what the server would bind by is among the bindings found
        assert server_token in found
    assert len(found) == header + sum(1 for chunk in cookie.split(";") if TENANT_COOKIE in cookie_parser(chunk))
    cleaned = without_bindings(lines)
    assert tenant_bindings(cleaned) == []
    others = {k: v for k, v in cookie_parser(cookie).items() if k != TENANT_COOKIE}
    assert cookie_parser(";".join(v for k, v in cleaned if k == "Cookie")) == others  # nothing else lost


def _bindings(token_a: str, token_b: str) -> list[dict[str, str]]:
    """Header sets that carry two bindings (a second one page script could have added)."""
    return [
        {TENANT_HEADER: token_a, "cookie": f"{TENANT_COOKIE}={token_b}"},
        {TENANT_HEADER: token_a, "cookie": f"{TENANT_COOKIE}={token_a}"},
        {"cookie": f"{TENANT_COOKIE}={token_a}; {TENANT_COOKIE}={token_b}"},
        {"cookie": f"{TENANT_COOKIE}={token_b}; x=1;  {TENANT_COOKIE} =\"{token_a}\""},
    ]


async def test_a_request_with_two_tenant_bindings_is_refused_before_any_work(tmp_path: Path) -> None:
    registry = tenant_registry(tmp_path)
    try:
        mine, other = registry.create("helpdesk", 1), registry.create("helpdesk", 1)
        async with serve_app(create_app(registry)) as origin, httpx.AsyncClient(base_url=origin) as client:
            for headers in _bindings(mine.token, other.token):
                refused = await client.post("/helpdesk/orders/O-1042/refunds", data={"amount": "1.00"},
                                            headers=headers)
                assert refused.status_code == 400 and "Two tenant bindings" in refused.text, headers
            # The same token twice in two header lines is two bindings too.
            raw = [(TENANT_HEADER, mine.token), (TENANT_HEADER, other.token)]
            assert (await client.get("/helpdesk/", headers=raw)).status_code == 400
            assert mine.operations() == [] and other.operations() == []  # nothing done, nothing logged
            assert (await client.get("/helpdesk/", headers={TENANT_HEADER: mine.token})).status_code == 200
            async with httpx.AsyncClient(base_url=origin, cookies={TENANT_COOKIE: mine.token}) as person:
                assert (await person.get("/helpdesk/")).status_code == 200
    finally:
        registry.close()


def _as(destination: str | None, form: bool = False) -> dict[str, str]:
    headers = {} if destination is None else {FETCH_DESTINATION_HEADER: destination}
    return {**headers, "content-type": "application/x-www-form-urlencoded"} if form else headers


@pytest.mark.parametrize("destination", ["image", "script", "style", "empty", "video", "font", "report", "x y"])
async def test_a_page_not_loaded_as_a_document_shows_nothing_and_replays(tmp_path: Path, destination: str) -> None:
    page = "/helpdesk/tickets/T-2001"
    operations, problems = await replay_requests(tmp_path, [("GET", page, b"", _as("document")),
                                                            ("GET", page, b"", _as(destination)),
                                                            ("GET", page, b"", _as(None))])
    assert problems == []
    shown = [op.shown for op in operations]
    assert shown[0] is not None and shown[0].records and shown[0] == shown[2], "a document (or no word) shows rows"
    assert shown[1] == Shown(), f"loaded as {destination!r}, the page displayed nothing"
    assert operations[1].destination == (destination if destination != "x y" else "other")
    assert operations[0].destination is None and "document" in DISPLAYED_DESTINATIONS


async def test_a_body_over_the_bound_is_refused_logged_without_it_and_replays(tmp_path: Path) -> None:
    huge = b"note=" + b"x" * MAX_REQUEST_BYTES
    operations, problems = await replay_requests(tmp_path, [
        ("POST", "/helpdesk/orders/O-1042/refunds", huge, _as("document", form=True)),
        ("GET", "/helpdesk/", b"", _as("document"))])
    assert problems == []
    refused, after = operations
    assert (refused.status, refused.oversized, refused.body, refused.journal_rows) == (
        413, True, "", 0)
    assert after.status == 200 and after.oversized is None
