"""Idempotency keys (sites/kit/idempotency.py): a repeat of a committed keyed request gets the committed result back
byte for byte and commits nothing; the operation log shows both, and replay reproduces the repeat.

Requests go in-process over ASGI to helpdesk tenants; the goodwill credit form commits a refund row on each success.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx
import pytest
import pytest_asyncio
from hypothesis import given, settings
from hypothesis import strategies as st
from test_containment import _exchange
from test_replay import CATALOG
from tiers import examples

from adapter.driver import PageDriver
from adapter.egress import EgressProxy
from adapter.scope import SiteScope
from computerops.core.binding import TENANT_HEADER
from computerops.core.vocabulary import ACTION_HEADER, IDEMPOTENCY_HEADER, idempotency_key
from replays import RecordedEpisode, replay_episode
from sites.kit.app import create_app
from sites.kit.broker import Amount, BrokerSession, Grant
from sites.kit.faults import FaultDecision, FaultInjector, FaultPlan
from sites.kit.idempotency import MAX_KEY_CHARS, CommittedEffect, committed_under
from sites.kit.injection import FaultSession
from sites.kit.records import Operation, Shown
from sites.kit.tenancy import Tenant, TenantRegistry
from sites.registry import tenant_registry
from verifier import Claim, judge

CREDITS = "/helpdesk/orders/O-1042/credits"
OTHER_CREDITS = "/helpdesk/orders/O-1043/credits"
TASK = CATALOG["helpdesk.solve-ticket@1"]
"""A helpdesk task of seed 1 without grants: what replay judges these episodes against (their outcome is no matter)."""
FORM = "application/x-www-form-urlencoded"
CREDIT = "credit_amount=5.00&credit_reason=late"
OTHER_CREDIT = "credit_amount=2.00&credit_reason=late"
NOT_AN_AMOUNT = "credit_amount=five&credit_reason=late"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantRegistry]:
    registry = tenant_registry(tmp_path_factory.mktemp("idempotency"))
    yield registry
    registry.close()


class Episode:
    """One helpdesk tenant's requests over ASGI, each as the next action, with an idempotency key when given."""

    def __init__(self, registry: TenantRegistry, tenant: Tenant) -> None:
        self.registry, self.tenant = registry, tenant
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(registry)),
                                        base_url="http://t")
        self.actions = 0

    async def send(self, method: str, path: str, body: str = "", key: str | None = None) -> httpx.Response:
        self.actions += 1
        sent = {TENANT_HEADER.encode(): self.tenant.token.encode(), ACTION_HEADER.encode(): str(self.actions).encode()}
        if body:
            sent[b"content-type"] = FORM.encode()
        if key is not None:
            sent[IDEMPOTENCY_HEADER.encode()] = key.encode()
        return await self.client.request(method, path, content=body.encode(), headers=sent)

    def credits(self) -> int:
        return len(self.tenant.snapshot()["refund"])

    def recorded(self) -> RecordedEpisode:
        """The tenant's evidence, judged against TASK as the runner would."""
        operations, journal, state = self.tenant.operations(), self.tenant.journal(), self.tenant.snapshot()
        verdict = judge(TASK.spec, TASK.sha256, state=state, journal=journal, operations=operations,
                        claim=Claim(success=False))
        return RecordedEpisode(episode_id="e", operations=operations, journal=journal, final_state=state,
                               verdict=verdict)


@asynccontextmanager
async def fresh_episode(registry: TenantRegistry, site: str = TASK.spec.site) -> AsyncIterator[Episode]:
    """An Episode on a fresh tenant of TASK's site (or `site`) and seed, dropped after."""
    tenant = registry.create(site, TASK.spec.seed)
    episode = Episode(registry, tenant)
    try:
        yield episode
    finally:
        await episode.client.aclose()
        registry.drop(tenant)


@pytest_asyncio.fixture(loop_scope="session")
async def episode(registry: TenantRegistry) -> AsyncIterator[Episode]:
    async with fresh_episode(registry) as fresh:
        yield fresh


def assert_same_response(first: httpx.Response, again: httpx.Response) -> None:
    assert again.status_code == first.status_code
    for header in ("location", "content-type"):
        assert again.headers.get(header) == first.headers.get(header)
    assert again.content == first.content


async def test_a_repeat_of_a_committed_request_returns_its_result_and_commits_nothing(episode: Episode) -> None:
    first = await episode.send("POST", CREDITS, CREDIT, key="action-1")
    assert first.status_code == 303 and episode.credits() == 1
    journal = episode.tenant.journal()
    again = await episode.send("POST", CREDITS, CREDIT, key="action-1")
    assert_same_response(first, again)
    assert episode.tenant.journal() == journal and episode.credits() == 1, "nothing committed again"
    committed, repeat = episode.tenant.operations()
    assert committed.idempotency_key == repeat.idempotency_key == "action-1"
    assert committed.journal_rows > 0 and committed.repeat_of is None
    assert repeat.repeat_of == committed.seq and repeat.journal_rows == 0 and repeat.seq == committed.seq + 1
    assert repeat.action == 2 and repeat.body == committed.body
    assert (repeat.status, repeat.location, repeat.response_digest) == (
        committed.status, committed.location, committed.response_digest)
    assert repeat.shown == Shown() and repeat.fault is None and repeat.broker is None
    with episode.tenant.engine.connect() as connection:
        assert committed_under(connection, "action-1") == CommittedEffect(
            seq=committed.seq, action=1, method="POST", path=CREDITS, status=303, location=committed.location,
            journal_rows=committed.journal_rows)
        assert committed_under(connection, "action-2") is None


async def test_a_repeat_gets_the_committed_page_byte_for_byte(registry: TenantRegistry) -> None:
    """A partial success commits some of a bulk edit, then the handler answers an error page: that page is the
    committed result a repeat gets back."""
    bulk = "sku=SKU-1001&sku=SKU-1002&sku=SKU-1003&action=reorder&reorder_point=77"
    async with fresh_episode(registry, "inventory") as episode:
        forced = {1: FaultDecision(fault="partial_success", source="rule:0", params={"commit": "2"})}
        episode.tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
        first = await episode.send("POST", "/inventory/products/bulk", bulk, key="action-1")
        assert first.status_code == 500 and b"The bulk edit failed after 2 of 3 products." in first.content
        journal = episode.tenant.journal()
        again = await episode.send("POST", "/inventory/products/bulk", bulk, key="action-1")
        assert_same_response(first, again)
        assert again.headers["content-type"].startswith("text/html")
        assert episode.tenant.journal() == journal
        committed, repeat = episode.tenant.operations()
        assert committed.journal_rows == 2 and repeat.repeat_of == 1 and repeat.fault is None
        assert repeat.response_digest == committed.response_digest


async def test_the_same_request_under_another_key_commits_again(episode: Episode) -> None:
    await episode.send("POST", CREDITS, CREDIT, key="action-1")
    await episode.send("POST", CREDITS, CREDIT, key="action-2")
    assert episode.credits() == 2
    assert [op.repeat_of for op in episode.tenant.operations()] == [None, None]


async def test_another_request_under_the_same_key_runs_as_usual(episode: Episode) -> None:
    await episode.send("POST", CREDITS, CREDIT, key="action-1")
    await episode.send("POST", CREDITS, OTHER_CREDIT, key="action-1")  # another body
    await episode.send("POST", OTHER_CREDITS, CREDIT, key="action-1")  # another path
    await episode.send("POST", CREDITS + "?again=1", CREDIT, key="action-1")  # another query
    assert episode.credits() == 4
    assert all(op.repeat_of is None and op.journal_rows > 0 for op in episode.tenant.operations())
    with episode.tenant.engine.connect() as connection:
        found = committed_under(connection, "action-1")
    assert found is not None and found.seq == 1, "the first commit under the key"


async def test_a_retry_of_an_attempt_that_committed_nothing_runs_and_commits(episode: Episode) -> None:
    refused = await episode.send("POST", CREDITS, NOT_AN_AMOUNT, key="action-1")
    assert refused.status_code == 422
    retried = await episode.send("POST", CREDITS, NOT_AN_AMOUNT, key="action-1")
    assert retried.status_code == 422, "a refused attempt is no committed result: it runs again"
    done = await episode.send("POST", CREDITS, CREDIT, key="action-1")
    again = await episode.send("POST", CREDITS, CREDIT, key="action-1")
    assert done.status_code == 303 and episode.credits() == 1
    assert_same_response(done, again)
    assert [(op.status, op.journal_rows > 0, op.repeat_of) for op in episode.tenant.operations()] == [
        (422, False, None), (422, False, None), (303, True, None), (303, False, 3)]


@pytest.mark.parametrize("key", ["", " ", "a b", "key\t", "caf\u00e9", "x" * (MAX_KEY_CHARS + 1), "k\x7f", "k\x00"])
async def test_a_bad_key_is_refused_before_any_work(episode: Episode, key: str) -> None:
    refused = await episode.client.post(CREDITS, content=CREDIT.encode(), headers={
        TENANT_HEADER.encode(): episode.tenant.token.encode(), b"content-type": FORM.encode(),
        IDEMPOTENCY_HEADER.encode(): key.encode("latin-1")})
    assert refused.status_code == 400 and "idempotency key" in refused.text.lower()
    assert episode.tenant.operations() == [] and episode.tenant.journal() == [], "nothing done, nothing logged"


async def test_two_keys_on_one_request_are_refused(episode: Episode) -> None:
    headers = [(TENANT_HEADER, episode.tenant.token), ("content-type", FORM), (IDEMPOTENCY_HEADER, "action-1"),
               (IDEMPOTENCY_HEADER, "action-2")]
    refused = await episode.client.post(CREDITS, content=CREDIT.encode(), headers=headers)
    assert refused.status_code == 400 and episode.tenant.operations() == []


@pytest.mark.parametrize("key", ["!", "~" * MAX_KEY_CHARS, "action-0", "resumed.2-17"])
async def test_every_key_of_visible_ascii_characters_is_accepted_and_recorded(episode: Episode, key: str) -> None:
    assert (await episode.send("POST", CREDITS, CREDIT, key=key)).status_code == 303
    assert [op.idempotency_key for op in episode.tenant.operations()] == [key]


async def test_a_get_with_a_key_runs_every_time(episode: Episode) -> None:
    first = await episode.send("GET", "/helpdesk/orders/O-1042", key="action-1")
    again = await episode.send("GET", "/helpdesk/orders/O-1042", key="action-1")
    assert first.status_code == again.status_code == 200
    operations = episode.tenant.operations()
    assert [(op.idempotency_key, op.repeat_of) for op in operations] == [("action-1", None), ("action-1", None)]
    assert all(op.shown is not None and not op.shown.is_empty() for op in operations), "both pages rendered"


async def test_a_request_without_a_key_records_none_and_always_runs(episode: Episode) -> None:
    await episode.send("POST", CREDITS, CREDIT)
    await episode.send("POST", CREDITS, CREDIT)
    assert episode.credits() == 2
    dumped = [op.model_dump(mode="json") for op in episode.tenant.operations()]
    assert not any("idempotency_key" in op or "repeat_of" in op for op in dumped), "evidence written as before"


async def test_a_repeat_runs_no_broker(episode: Episode) -> None:
    episode.tenant.broker = BrokerSession(mode="enforcing", grants=(Grant(
        id="credit", capability="refund", table="order", objects=[2], limit=Amount(cents=1000, currency="EUR")),))
    await episode.send("POST", CREDITS, CREDIT, key="action-1")
    await episode.send("POST", CREDITS, CREDIT, key="action-1")
    committed, repeat = episode.tenant.operations()
    assert committed.broker is not None and committed.broker.allowed
    assert repeat.broker is None and repeat.repeat_of == committed.seq and episode.credits() == 1


async def test_a_retry_after_an_ambiguous_timeout_learns_the_committed_result(episode: Episode) -> None:
    forced = {1: FaultDecision(fault="ambiguous_after_commit", source="rule:0")}
    episode.tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
    timed_out = await episode.send("POST", CREDITS, CREDIT, key="action-1")
    assert timed_out.status_code == 504 and episode.credits() == 1, "committed, then answered as a timeout"
    retried = await episode.send("POST", CREDITS, CREDIT, key="action-1")
    assert retried.status_code == 303 and retried.headers["location"] == "/helpdesk/orders/O-1042?credited=1"
    assert episode.credits() == 1
    committed, repeat = episode.tenant.operations()
    assert committed.status == 504 and committed.fault is not None and committed.fault.applied
    assert repeat.repeat_of == committed.seq and repeat.status == 303 and repeat.fault is None
    assert repeat.location == "/helpdesk/orders/O-1042?credited=1" and repeat.journal_rows == 0
    receipt = await replay_episode(TASK, episode.recorded(), episode.registry)
    assert receipt.result == "PASS", receipt.mismatches


# --- replay ------------------------------------------------------------------------------------------------------


async def test_an_episode_with_a_repeat_replays_pass_and_a_tampered_repeat_fails(episode: Episode) -> None:
    await episode.send("GET", "/helpdesk/orders/O-1042", key="action-1")
    await episode.send("POST", CREDITS, CREDIT, key="action-2")
    await episode.send("POST", CREDITS, CREDIT, key="action-2")
    await episode.send("POST", CREDITS, CREDIT, key="action-3")
    recorded = episode.recorded()
    assert [op.repeat_of for op in recorded.operations] == [None, None, 2, None]
    receipt = await replay_episode(TASK, recorded, episode.registry)
    assert receipt.result == "PASS", receipt.mismatches

    def tampered(**update: object) -> RecordedEpisode:
        operations = [op.model_copy(update=update) if op.repeat_of is not None else op for op in recorded.operations]
        return dataclasses.replace(recorded, operations=operations)

    for altered, field in ((tampered(repeat_of=None), "repeat_of"), (tampered(repeat_of=4), "repeat_of"),
                           # without its key, or under another, the repeat runs its handler on replay and commits
                           (tampered(idempotency_key=None), "journal_rows"),
                           (tampered(idempotency_key="action-9"), "journal_rows")):
        receipt = await replay_episode(TASK, altered, episode.registry)
        assert receipt.result == "FAIL"
        assert receipt.first_mismatch is not None and f"operation #3 POST {CREDITS}: {field}" in receipt.first_mismatch


# --- the property ------------------------------------------------------------------------------------------------

KEYED_REQUESTS = st.lists(st.tuples(st.sampled_from(["k1", "k2"]), st.sampled_from([CREDIT, OTHER_CREDIT,
                                                                                    NOT_AN_AMOUNT])),
                          min_size=1, max_size=8)


@settings(max_examples=examples(60))
@given(KEYED_REQUESTS)
async def test_each_distinct_keyed_request_commits_at_most_once(registry: TenantRegistry,
                                                                 requests: list[tuple[str, str]]) -> None:
    """Whatever the order of keyed requests: one commit per distinct (key, request) that commits, and every later
    copy of it a repeat of that commit; replay reproduces them all."""
    async with fresh_episode(registry) as episode:
        for key, body in requests:
            await episode.send("POST", CREDITS, body, key=key)
        operations = episode.tenant.operations()
        committing = {(key, body) for key, body in requests if body != NOT_AN_AMOUNT}
        assert episode.credits() == len(committing)
        first: dict[tuple[str, str], Operation] = {}
        for op in operations:
            request = (op.idempotency_key or "", op.body)
            if request in first:
                assert op.repeat_of == first[request].seq and op.journal_rows == 0
            else:
                assert op.repeat_of is None
                if op.journal_rows:
                    first[request] = op
        assert set(first) == committing
        receipt = await replay_episode(TASK, episode.recorded(), registry)
        assert receipt.result == "PASS", receipt.mismatches


# --- the adapter -------------------------------------------------------------------------------------------------


def test_the_driver_keys_each_actions_requests_with_its_prefix() -> None:
    class Page:
        def on(self, *_: object) -> None:
            pass

    plain = PageDriver(cast(Any, Page()), origin="http://t", site_prefix="/helpdesk/")
    assert plain.action_headers(7) == {ACTION_HEADER: "7", IDEMPOTENCY_HEADER: "action-7"}
    resumed = PageDriver(cast(Any, Page()), origin="http://t", site_prefix="/helpdesk/", idempotency_prefix="run2")
    assert resumed.idempotency_prefix == "run2" and resumed.action_headers(7)[IDEMPOTENCY_HEADER] == "run2-7"
    assert idempotency_key(0) == "action-0"


async def test_the_egress_proxy_forwards_the_key_unchanged() -> None:
    seen: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    origin = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    proxy = EgressProxy(SiteScope(origin, "/site/"), lambda _refused: None, tenant="token")
    address = await proxy.start()
    try:
        head = f"POST {origin}/site/x HTTP/1.1\r\nHost: h\r\n{IDEMPOTENCY_HEADER}: action-12\r\n" \
               f"{ACTION_HEADER}: 12\r\nContent-Length: 0\r\n\r\n"
        answer = await _exchange(address, head.encode())
        assert answer.startswith(b"HTTP/1.1 200 OK")
        assert f"\r\n{IDEMPOTENCY_HEADER}: action-12\r\n".encode() in seen[0]
    finally:
        await proxy.close()
        server.close()
