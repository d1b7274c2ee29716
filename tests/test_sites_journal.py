"""The mutation journal and the operation log, exercised through a tiny site defined here."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import httpx
import pytest
from fastapi import APIRouter, Form
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import registry as orm_registry
from sqlmodel import Field, Session, SQLModel

from computerops.core.vocabulary import ACTION_HEADER
from sites.helpdesk import HELPDESK
from sites.kit import (
    TENANT_HEADER,
    OperationDep,
    OutsideOperationError,
    SessionDep,
    SiteDefinition,
    Tenant,
    TenantRegistry,
    TenantSession,
    create_app,
    now_text,
    operation_rng,
)


class NotesTable(SQLModel, registry=orm_registry()):
    """A separate registry: this test site's `customer` must not clash with the helpdesk's."""


class Customer(NotesTable, table=True):
    __tablename__ = "customer"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    tier: str = "standard"


def _seed(session: Session, rng: random.Random) -> None:
    session.add(Customer(id=1, name="Ada"))
    session.add(Customer(id=2, name="Grace", tier=rng.choice(["standard", "premium"])))


def _router() -> APIRouter:
    router = APIRouter()

    @router.post("/customers", response_model=None)
    def add(session: SessionDep, name: Annotated[str, Form()]) -> Response:
        customer = Customer(name=name)
        session.add(customer)
        session.flush()
        return RedirectResponse(f"/notes/customers/{customer.id}", status_code=303)

    @router.post("/customers/{customer_id}", response_model=None)
    def edit(
        customer_id: int, session: SessionDep, name: Annotated[str, Form()], tier: Annotated[str, Form()]
    ) -> Response:
        customer = session.get(Customer, customer_id)
        assert customer is not None
        customer.name, customer.tier = name, tier
        session.add(customer)
        return RedirectResponse(f"/notes/customers/{customer_id}", status_code=303)

    @router.post("/customers/{customer_id}/delete", response_model=None)
    def remove(customer_id: int, session: SessionDep) -> Response:
        session.delete(session.get(Customer, customer_id))
        return RedirectResponse("/notes/", status_code=303)

    @router.post("/explode")
    def explode(session: SessionDep) -> None:
        session.add(Customer(name="Mallory"))
        session.flush()
        raise RuntimeError("boom after the flush")

    @router.post("/bulk")
    def bulk(session: SessionDep) -> None:
        session.exec(update(Customer).values(tier="premium"))

    @router.get("/now", response_class=PlainTextResponse)
    def now(operation: OperationDep) -> str:
        return f"{operation.seq} {operation.clock.text()} {operation.rng.random()} {operation.action}"

    return router


NOTES = SiteDefinition(
    name="notes", title="Notes", router=_router, metadata=NotesTable.metadata, seed=_seed, start_path="/notes/"
)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[TenantRegistry]:
    registry = TenantRegistry(tmp_path, sites={"notes": NOTES, "helpdesk": HELPDESK})
    yield registry
    registry.close()


@pytest.fixture
def tenant(registry: TenantRegistry) -> Tenant:
    return registry.create("notes", 3)


@pytest.fixture
def client(registry: TenantRegistry, tenant: Tenant) -> Iterator[TestClient]:
    with TestClient(create_app(registry), headers={TENANT_HEADER: tenant.token}) as client:
        yield client


def test_seeding_a_template_writes_no_journal_and_no_operations(tenant: Tenant) -> None:
    assert tenant.journal() == [] and tenant.operations() == []
    assert [row["name"] for row in tenant.snapshot()["customer"]] == ["Ada", "Grace"]


def test_an_insert_is_journaled_with_its_operation_its_key_and_the_stored_row(
    tenant: Tenant, client: TestClient
) -> None:
    client.get("/notes/now")
    client.post("/notes/customers", data={"name": "Linus"}, follow_redirects=False)
    [entry] = tenant.journal()
    assert (entry.seq, entry.operation, entry.logical_time) == (1, 2, 2)
    assert (entry.table, entry.key, entry.change) == ("customer", {"id": 3}, "insert")
    assert entry.before is None
    assert entry.after == {"id": 3, "name": "Linus", "tier": "standard"}


def test_an_update_journals_the_row_before_and_after_and_only_the_changed_fields(
    tenant: Tenant, client: TestClient
) -> None:
    client.post("/notes/customers/1", data={"name": "Ada", "tier": "premium"}, follow_redirects=False)
    [entry] = tenant.journal()
    assert entry.change == "update" and entry.key == {"id": 1}
    assert entry.before == {"id": 1, "name": "Ada", "tier": "standard"}
    assert entry.after == {"id": 1, "name": "Ada", "tier": "premium"}
    assert entry.changed_fields() == ["tier"]


def test_an_assignment_that_changes_nothing_is_not_journaled(tenant: Tenant, client: TestClient) -> None:
    client.post("/notes/customers/1", data={"name": "Ada", "tier": "standard"}, follow_redirects=False)
    assert tenant.journal() == []
    assert tenant.operations()[0].journal_rows == 0


def test_a_delete_is_journaled_with_the_row_as_it_was(tenant: Tenant, client: TestClient) -> None:
    client.post("/notes/customers/1/delete", follow_redirects=False)
    [entry] = tenant.journal()
    assert (entry.change, entry.key, entry.after) == ("delete", {"id": 1}, None)
    assert entry.before == {"id": 1, "name": "Ada", "tier": "standard"}


def test_a_handler_that_raises_after_flushing_leaves_no_row_and_no_journal_entry(
    registry: TenantRegistry, tenant: Tenant
) -> None:
    before = tenant.snapshot()
    with TestClient(create_app(registry), raise_server_exceptions=False) as client:
        response = client.post("/notes/explode", headers={TENANT_HEADER: tenant.token})
    assert response.status_code == 500
    assert tenant.snapshot() == before and tenant.journal() == []
    [operation] = tenant.operations()
    assert (operation.status, operation.journal_rows) == (500, 0)
    assert operation.response_digest == hashlib.sha256(response.content).hexdigest()


def test_a_handler_error_still_reaches_the_server_log(client: TestClient) -> None:
    with pytest.raises(RuntimeError, match="boom after the flush"):
        client.post("/notes/explode")


def test_a_flush_outside_an_operation_raises_and_writes_nothing(tenant: Tenant) -> None:
    with TenantSession(tenant.engine) as session:
        session.add(Customer(name="Eve"))
        with pytest.raises(OutsideOperationError):
            session.commit()
    assert len(tenant.snapshot()["customer"]) == 2


def test_bulk_orm_writes_are_refused_because_they_would_bypass_the_journal(tenant: Tenant, client: TestClient) -> None:
    before = tenant.snapshot()
    with pytest.raises(OutsideOperationError, match="bypass the mutation journal"):
        client.post("/notes/bulk")
    assert tenant.snapshot() == before and tenant.journal() == []


def test_the_operation_log_records_what_was_asked_and_what_was_answered(tenant: Tenant, client: TestClient) -> None:
    response = client.post(
        "/notes/customers?via=form", data={"name": "Linus"}, headers={ACTION_HEADER: "7"}, follow_redirects=False
    )
    [operation] = tenant.operations()
    assert operation.seq == 1 and operation.action == 7
    assert (operation.method, operation.path, operation.query) == ("POST", "/notes/customers", "via=form")
    assert operation.content_type == "application/x-www-form-urlencoded"
    assert operation.body == "name=Linus"
    assert (operation.status, operation.location) == (303, "/notes/customers/3")
    assert operation.response_digest == hashlib.sha256(response.content).hexdigest()
    assert operation.journal_rows == 1


def test_an_operation_without_an_action_header_records_none(tenant: Tenant, client: TestClient) -> None:
    refused = client.get("/notes/now", headers={ACTION_HEADER: "not a number"})
    assert refused.status_code == 400, "a malformed action header is refused before any work, and not logged"
    client.get("/notes/now")
    assert [operation.action for operation in tenant.operations()] == [None]


def test_the_operation_seq_is_the_logical_time_and_seeds_the_operation_generator(
    tenant: Tenant, client: TestClient
) -> None:
    texts = [client.get("/notes/now", headers={ACTION_HEADER: "4"}).text for _ in range(3)]
    expected = [f"{seq} {now_text(seq)} {operation_rng('notes', 3, seq).random()} 4" for seq in (1, 2, 3)]
    assert texts == expected
    assert now_text(3) == "2026-03-02 09:03"


async def test_concurrent_requests_of_one_tenant_get_distinct_consecutive_seqs(
    registry: TenantRegistry, tenant: Tenant
) -> None:
    transport = httpx.ASGITransport(app=create_app(registry))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://testserver", headers={TENANT_HEADER: tenant.token}
    ) as client:
        responses = await asyncio.gather(*(client.get("/notes/now") for _ in range(8)))
    assert sorted(int(response.text.split()[0]) for response in responses) == list(range(1, 9))
    assert [operation.seq for operation in tenant.operations()] == list(range(1, 9))


def test_two_sites_keep_their_own_customer_tables(registry: TenantRegistry, tenant: Tenant) -> None:
    helpdesk = registry.create("helpdesk", 3)
    assert sorted(tenant.snapshot()) == ["customer"]
    assert set(tenant.snapshot()["customer"][0]) == {"id", "name", "tier"}
    assert helpdesk.snapshot()["customer"][0]["name"] == "Dana Reyes"


def test_a_tenant_of_one_site_cannot_reach_another_site(registry: TenantRegistry, tenant: Tenant) -> None:
    with TestClient(create_app(registry)) as client:
        response = client.get("/helpdesk/", headers={TENANT_HEADER: tenant.token})
    assert response.status_code == 403
    assert tenant.operations() == []
