"""Tenancy: tokens bind requests to exactly one tenant database, and nothing leaks between them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import event, select, text

from sites.kit import BOOKKEEPING_TABLES, TENANT_COOKIE, TENANT_HEADER, Tenant, TenantRegistry, create_app
from sites.kit.bookkeeping import normal_row
from sites.kit.tenancy import _COMPILED
from sites.registry import tenant_registry


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[TenantRegistry]:
    registry = tenant_registry(tmp_path)
    yield registry
    registry.close()


@pytest.fixture
def client(registry: TenantRegistry) -> Iterator[TestClient]:
    with TestClient(create_app(registry)) as client:
        yield client


def as_tenant(tenant: Tenant) -> dict[str, str]:
    return {TENANT_HEADER: tenant.token}


def test_a_site_request_without_a_token_gets_401_and_no_tenant_data(
    registry: TenantRegistry, client: TestClient
) -> None:
    tenant = registry.create("helpdesk", 1)
    response = client.get("/helpdesk/tickets")
    assert response.status_code == 401
    assert "tenant token" in response.text
    assert "T-2001" not in response.text and "Dana Reyes" not in response.text
    assert tenant.token not in response.text
    assert tenant.operations() == []


def test_a_site_request_with_an_unknown_token_gets_403_and_no_tenant_data(
    registry: TenantRegistry, client: TestClient
) -> None:
    tenant = registry.create("helpdesk", 1)
    response = client.get("/helpdesk/tickets", headers={TENANT_HEADER: "not-a-token"})
    assert response.status_code == 403
    assert "not known" in response.text
    assert "T-2001" not in response.text and "not-a-token" not in response.text
    assert tenant.operations() == []


def test_a_prefix_of_a_valid_token_does_not_resolve(registry: TenantRegistry, client: TestClient) -> None:
    tenant = registry.create("helpdesk", 1)
    assert registry.resolve(tenant.token[:-1]) is None
    assert registry.resolve("") is None
    assert client.get("/helpdesk/", headers={TENANT_HEADER: tenant.token[:10]}).status_code == 403


def test_entering_sets_an_httponly_strict_cookie_for_the_site_path_and_redirects_to_the_start_page(
    registry: TenantRegistry, client: TestClient
) -> None:
    tenant = registry.create("helpdesk", 1)
    assert client.get(f"/_enter/{tenant.token}", follow_redirects=False).status_code == 403  # a token is no code
    response = client.get(f"/_enter/{registry.entry_code(tenant)}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/helpdesk/"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{TENANT_COOKIE}={tenant.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/helpdesk;" in cookie
    page = client.get("/helpdesk/")  # the client now carries the cookie
    assert page.status_code == 200 and "<h1>Helpdesk</h1>" in page.text


def test_entering_with_an_unknown_token_gets_403_and_sets_no_cookie(client: TestClient) -> None:
    response = client.get("/_enter/nobody", follow_redirects=False)
    assert response.status_code == 403
    assert "set-cookie" not in response.headers


def test_tenant_b_does_not_see_a_change_made_in_tenant_a(registry: TenantRegistry, client: TestClient) -> None:
    tenant_a, tenant_b = registry.create("helpdesk", 1), registry.create("helpdesk", 1)
    changed = client.post(
        "/helpdesk/tickets/T-2001/status",
        data={"status": "solved"},
        headers=as_tenant(tenant_a),
        follow_redirects=False,
    )
    assert changed.status_code == 303
    page_b = client.get("/helpdesk/tickets?status=solved", headers=as_tenant(tenant_b))
    assert "T-2001" not in page_b.text
    page_a = client.get("/helpdesk/tickets?status=solved", headers=as_tenant(tenant_a))
    assert ">T-2001</a>" in page_a.text


def test_a_token_only_ever_reaches_its_own_tenant_database(registry: TenantRegistry, client: TestClient) -> None:
    tenant_a, tenant_b = registry.create("helpdesk", 1), registry.create("helpdesk", 1)
    client.post("/helpdesk/tickets/T-2002/status", data={"status": "pending"}, headers=as_tenant(tenant_a))
    assert [op.path for op in tenant_a.operations()] == ["/helpdesk/tickets/T-2002/status", "/helpdesk/tickets/T-2002"]
    assert tenant_b.operations() == [] and tenant_b.journal() == []
    assert tenant_a.db_path != tenant_b.db_path


def test_paths_outside_site_prefixes_are_served_without_a_tenant_and_not_logged(
    registry: TenantRegistry, client: TestClient
) -> None:
    tenant = registry.create("helpdesk", 1)
    assert client.get("/healthz").json() == {"ok": True}
    assert client.get("/favicon.ico").status_code == 204
    index = client.get("/")
    assert index.status_code == 200 and "/helpdesk/" in index.text and "_enter" in index.text
    assert tenant.operations() == []


def test_creating_a_tenant_of_an_unknown_site_names_the_known_sites(registry: TenantRegistry) -> None:
    with pytest.raises(ValueError, match=r"unknown site 'shop'; known sites: helpdesk"):
        registry.create("shop", 1)


def test_the_template_is_built_once_and_each_tenant_is_a_fresh_copy(registry: TenantRegistry) -> None:
    first = registry.create("helpdesk", 7)
    template = registry.template("helpdesk", 7)
    built = template.stat().st_mtime_ns
    second = registry.create("helpdesk", 7)
    assert template.stat().st_mtime_ns == built
    assert template.parent == registry.root / "templates"
    assert first.db_path != second.db_path and first.token != second.token
    assert first.snapshot() == second.snapshot()


def test_dropping_a_tenant_deletes_its_database_and_forgets_its_token(registry: TenantRegistry) -> None:
    tenant = registry.create("helpdesk", 1)
    assert tenant.db_path.exists()
    registry.drop(tenant)
    assert not tenant.db_path.exists()
    assert registry.resolve(tenant.token) is None


def test_a_snapshot_holds_every_site_table_sorted_by_key_and_no_bookkeeping(registry: TenantRegistry) -> None:
    snapshot = registry.create("helpdesk", 1).snapshot()
    assert sorted(snapshot) == [
        "approval_answer",
        "approval_request",
        "carrier_update",
        "customer",
        "escalation",
        "follow_up",
        "notification",
        "order",
        "refund",
        "refund_approval",
        "ticket",
    ]
    assert not BOOKKEEPING_TABLES & set(snapshot)
    ids = [row["id"] for row in snapshot["ticket"]]
    assert ids == sorted(ids)


def test_seeds_share_the_fixed_records_and_differ_in_filler(registry: TenantRegistry) -> None:
    one, two = registry.create("helpdesk", 1).snapshot(), registry.create("helpdesk", 2).snapshot()
    assert one["customer"][:4] == two["customer"][:4]
    assert one["order"][:5] == two["order"][:5]
    assert one["ticket"][:6] == two["ticket"][:6]
    assert one["refund_approval"][:3] == two["refund_approval"][:3]  # the fixed RA-11..RA-13; returns differ
    assert one != two
    assert one == registry.create("helpdesk", 1).snapshot()


def test_tenants_share_compiled_statements(registry: TenantRegistry, client: TestClient) -> None:
    # Each tenant has an engine of its own; the second and third compile nothing the first did not.
    sizes = []
    for _ in range(3):
        tenant = registry.create("helpdesk", 1)
        assert client.get("/helpdesk/tickets/T-2001", headers=as_tenant(tenant)).status_code == 200
        tenant.snapshot()
        sizes.append(len(_COMPILED))
        registry.drop(tenant)
    assert sizes[0] > 0 and sizes[1] == sizes[0] and sizes[2] == sizes[0]


def _read_whole(tenant: Tenant) -> dict[str, list[dict[str, object]]]:
    """Every site table read from the tenant's database, as a snapshot reads one it must read."""
    with tenant.engine.connect() as connection:
        return {table.name: [normal_row(row) for row in connection.execute(
            select(table).order_by(*table.primary_key.columns)).mappings()] for table in tenant.definition.tables()}


def _tables_read(tenant: Tenant) -> list[str]:
    """The site tables a snapshot of the tenant reads from its database (SELECTs counted as they are sent)."""
    read: list[str] = []
    names = {table.name for table in tenant.definition.tables()}

    def note(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        found = re.search(r'\bFROM "?(\w+)"?', statement)
        if statement.startswith("SELECT") and found and found.group(1) in names:
            read.append(found.group(1))

    event.listen(tenant.engine, "before_cursor_execute", note)
    try:
        tenant.snapshot()
    finally:
        event.remove(tenant.engine, "before_cursor_execute", note)
    return sorted(read)


def test_a_snapshot_reads_only_the_tables_a_statement_wrote_and_equals_a_whole_read(
    registry: TenantRegistry, client: TestClient,
) -> None:
    tenant = registry.create("helpdesk", 1)
    assert _tables_read(tenant) == []  # nothing written: the template's rows
    assert tenant.snapshot() == _read_whole(tenant) == registry.create("helpdesk", 1).snapshot()
    changed = client.post("/helpdesk/tickets/T-2001/status", data={"status": "solved"}, headers=as_tenant(tenant),
                          follow_redirects=False)
    assert changed.status_code == 303
    assert "ticket" in _tables_read(tenant)
    snapshot = tenant.snapshot()
    assert snapshot == _read_whole(tenant)
    assert next(row for row in snapshot["ticket"] if row["number"] == "T-2001")["status"] == "solved"


def test_a_write_the_journal_never_saw_and_a_cascade_are_in_the_snapshot(registry: TenantRegistry) -> None:
    tenant = registry.create("helpdesk", 1)
    with tenant.engine.begin() as connection:  # plain SQL, outside every session and journal
        connection.execute(text("UPDATE customer SET name = 'Changed Behind' WHERE id = 1"))
    snapshot = tenant.snapshot()
    assert snapshot == _read_whole(tenant)
    assert next(row for row in snapshot["customer"] if row["id"] == 1)["name"] == "Changed Behind"
    # A table whose foreign key points at a written one may follow it (ON DELETE/UPDATE actions): it is read too.
    followers = {t.name for t in tenant.definition.tables()
                 if any(key.column.table.name == "customer" for key in t.foreign_keys)}
    assert followers and followers <= set(_tables_read(tenant))
    assert tenant.template_state == registry.create("helpdesk", 1).snapshot()  # the template's rows are untouched


def test_a_hashed_snapshot_is_the_whole_states_hash_encoding_only_the_tables_it_read(
    registry: TenantRegistry, client: TestClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import computerops.core.hashing as hashing

    encoded: list[int] = []
    real = hashing.canonical_json

    def counted(value: object) -> str:
        encoded.append(1)
        return real(value)

    tenant = registry.create("helpdesk", 1)
    client.post("/helpdesk/tickets/T-2001/status", data={"status": "solved"}, headers=as_tenant(tenant))
    monkeypatch.setattr(hashing, "canonical_json", counted)
    snapshot, sha256 = tenant.hashed_snapshot()
    assert len(encoded) == len(_tables_read(tenant)) < len(snapshot)  # the template's tables: their JSON, kept
    monkeypatch.undo()
    assert snapshot == tenant.snapshot() and sha256 == hashing.canonical_sha256(snapshot)
    assert next(row for row in snapshot["ticket"] if row["number"] == "T-2001")["status"] == "solved"


@given(st.dictionaries(st.text(max_size=4), st.lists(st.dictionaries(
    st.text(max_size=3), st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    max_size=3), max_size=3), max_size=4), st.data())
def test_a_mappings_hash_from_known_members_json_is_its_canonical_hash(
    state: dict[str, list[dict[str, object]]], data: st.DataObject,
) -> None:
    from computerops.core.hashing import canonical_json, canonical_mapping_sha256, canonical_sha256

    known = data.draw(st.sets(st.sampled_from(sorted(state))) if state else st.just(set[str]()))
    assert canonical_mapping_sha256(state, {key: canonical_json(state[key]) for key in known}) \
        == canonical_sha256(state)
