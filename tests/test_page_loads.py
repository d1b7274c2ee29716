"""Page handlers read the rows a page shows, not whole tables: every page request of every episode (live and
replayed) runs them, so a list page that loads a whole table to print a number or a name for its 25 rows costs every
step of every run.

For a handful of pages of each site on seed 1, this counts the ORM instances SQLAlchemy loads for one request
(`loaded_as_persistent`) and holds it under a bound tied to what the page shows: a list page shows one page of rows
(`PAGE_SIZE`) and a related row or two for each, a record's page a few rows, a dashboard counts. A handler that
loads a whole table again (every event to print a dependency's number, every product for a purchase order's lines)
loads hundreds and fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.orm import Session

from sites.kit import TENANT_HEADER, TenantRegistry, create_app
from sites.kit.paging import PAGE_SIZE
from sites.registry import SITES

DASHBOARD = 10
"""A start page shows counts (and a few rows at most)."""
RECORD = 25
"""A record's page: the record, its lines or history and the rows they name."""
LIST = 2 * PAGE_SIZE + 10
"""A list page: one page of rows, one related row for each (a customer, an employee, a source event), a few more."""

PAGES: dict[str, list[tuple[str, int]]] = {
    "helpdesk": [("/", DASHBOARD), ("/tickets", LIST), ("/orders", LIST), ("/customers", LIST),
                 ("/escalations", LIST), ("/follow-ups", LIST), ("/notifications", LIST)],
    "hrdesk": [("/", DASHBOARD), ("/leave", LIST), ("/expenses", LIST), ("/employees", LIST),
               ("/leave/L-3002", RECORD), ("/employees/E-1001", RECORD), ("message", RECORD)],
    "inventory": [("/", DASHBOARD), ("/products", LIST), ("/purchase-orders", LIST), ("/adjustments", LIST),
                  ("/products/SKU-1017", RECORD), ("/purchase-orders/PO-4162", RECORD)],
    "invoices": [("/viewer", LIST), ("/records", LIST), ("/spreadsheet", LIST), ("/viewer/INV-1005", RECORD)],
    "ledger": [("/", DASHBOARD), ("/events", LIST), ("/entries", LIST), ("/dispatches", LIST),
               ("/deliveries", LIST), ("/events/EV-504", RECORD)],
    "webmail": [("/", LIST), ("/sent", LIST), ("/contacts", LIST), ("/drafts", LIST)],
}
"""Per site, (path under the site, most ORM instances one request of it may load); "message" is the first message
on the HR desk's message list (its key depends on the seed)."""


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, TenantRegistry]]:
    registry = TenantRegistry(Path(tmp_path_factory.mktemp("page_loads")), sites=SITES)
    with TestClient(create_app(registry), follow_redirects=False) as test_client:
        yield test_client, registry
    registry.close()


class _Loads:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, _session: Session, _instance: Any) -> None:
        self.count += 1


@pytest.mark.parametrize("site", sorted(PAGES))
def test_pages_load_only_the_rows_they_show(site: str, client: tuple[TestClient, TenantRegistry]) -> None:
    test_client, registry = client
    headers = {TENANT_HEADER: registry.create(site, 1).token}
    loads = _Loads()
    over: list[str] = []
    loaded: dict[str, int] = {}
    for path, bound in PAGES[site]:
        if path == "message":
            listing = test_client.get("/hrdesk/messages", headers=headers).text
            found = re.search(r'href="/hrdesk(/messages/M-[^"]+)"', listing)
            assert found, "the message list links no message"
            path = found.group(1)
        loads.count = 0
        event.listen(Session, "loaded_as_persistent", loads)
        try:
            response = test_client.get(f"/{site}{path}", headers=headers)
        finally:
            event.remove(Session, "loaded_as_persistent", loads)
        assert response.status_code == 200, (path, response.status_code)
        loaded[path] = loads.count
        if loads.count > bound:
            over.append(f"{path}: {loads.count} rows loaded, at most {bound}")
    assert any(loaded.values()), f"no page loaded a row: the listener counts nothing ({loaded})"
    assert not over, "pages that load more rows than they show: " + "; ".join(over)
