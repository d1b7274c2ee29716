"""The fault classes that only a site's own handlers carry out: partial success (inventory bulk edit, the
ledger's "Process selected", the HR desk's "Approve selected claims"), duplicate delivery and out-of-order events
(ledger response queue, webmail inbox)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from site_client import Browser

from sites.hrdesk import HRDESK
from sites.inventory import INVENTORY
from sites.kit import TenantRegistry, create_app
from sites.kit.faults import FaultInjector, FaultPlan, FaultRule
from sites.kit.injection import FaultSession
from sites.ledger import LEDGER
from sites.webmail import WEBMAIL


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantRegistry]:
    sites = {"hrdesk": HRDESK, "inventory": INVENTORY, "ledger": LEDGER, "webmail": WEBMAIL}
    registry = TenantRegistry(tmp_path_factory.mktemp("faults"), sites=sites)
    yield registry
    registry.close()


def browser_for(registry: TenantRegistry, site: str, rule: dict[str, object]) -> Browser:
    tenant = registry.create(site, 1)
    plan = FaultPlan(task_id="t", rules=[FaultRule.model_validate(rule)])
    tenant.faults = FaultSession(FaultInjector(plan))
    return Browser(TestClient(create_app(registry), follow_redirects=False), tenant)


def test_partial_success_commits_the_first_items_of_a_bulk_edit_then_fails(registry: TenantRegistry) -> None:
    browser = browser_for(registry, "inventory", {"fault": "partial_success", "params": {"commit": "2"},
                                                  "target": {"path": "/inventory/products/bulk"}})
    skus = ["SKU-1001", "SKU-1002", "SKU-1003"]
    page = browser.post("/inventory/products/bulk", {"sku": skus, "action": "reorder", "reorder_point": "77"},
                        status=500)
    assert "The bulk edit failed after 2 of 3 products." in page
    changed = [entry.after["sku"] for entry in browser.tenant.journal() if entry.after]
    assert changed == ["SKU-1001", "SKU-1002"], "committed before the error"
    (operation,) = browser.tenant.operations()
    assert operation.fault is not None and operation.fault.fault == "partial_success" and operation.journal_rows == 2


def test_partial_success_processes_the_first_selected_events_then_fails(registry: TenantRegistry) -> None:
    browser = browser_for(registry, "ledger", {"fault": "partial_success", "params": {"commit": "2"},
                                               "target": {"path": "/ledger/events/process-selected"}})
    page = browser.post("/ledger/events/process-selected", {"event": ["EV-504", "EV-503", "EV-501"]}, status=500)
    assert "failed after 2 of 3" in page
    processed = [entry.after["number"] for entry in browser.tenant.journal() if entry.table == "event" and entry.after]
    assert processed == ["EV-501", "EV-503"], "event-number order, committed before the error"
    again = browser.post("/ledger/events/process-selected", {"event": ["EV-501", "EV-503", "EV-504"]}, status=409)
    assert "EV-501 was already processed" in again and "EV-503 was already processed" in again
    assert browser.post("/ledger/events/process-selected", {"event": ["EV-504"]}) == "/ledger/events?processed=1"
    assert [op.fault.applied if op.fault else None for op in browser.tenant.operations()] == [True, None, None]


def test_partial_success_approves_the_first_selected_claims_then_fails(registry: TenantRegistry) -> None:
    browser = browser_for(registry, "hrdesk", {"fault": "partial_success", "params": {"commit": "1"},
                                               "target": {"path": "/hrdesk/expenses/approve"}})
    page = browser.post("/hrdesk/expenses/approve", {"claim": ["X-5008", "X-5007"]}, status=500)
    assert "The approval failed after 1 of 2 claims." in page
    approved = [entry.after["number"] for entry in browser.tenant.journal() if entry.after]
    assert approved == ["X-5008"], "in the order selected, committed before the error"
    again = browser.post("/hrdesk/expenses/approve", {"claim": ["X-5008", "X-5007"]}, status=422)
    assert "Nothing was approved: X-5008 is approved: only a submitted claim can be approved." in again
    assert browser.post("/hrdesk/expenses/approve", {"claim": ["X-5007"]}) == (
        "/hrdesk/expenses?status=submitted&approved=1")
    assert [op.fault.applied if op.fault else None for op in browser.tenant.operations()] == [True, None, None]


def test_duplicate_delivery_lists_an_event_twice_and_out_of_order_hides_a_dependency(
    registry: TenantRegistry,
) -> None:
    duplicated = browser_for(registry, "ledger", {"fault": "duplicate_delivery", "params": {"event": "EV-503"},
                                                  "target": {"method": "GET", "path": "/ledger/events"}})
    page = duplicated.get("/ledger/events")
    assert len(re.findall(r">EV-503</a>", page)) == 2 and ">EV-503</a> (delivered again)" in page
    assert len(re.findall(r">EV-503</a>", duplicated.get("/ledger/events"))) == 1, "only the faulted load"
    late = browser_for(registry, "ledger", {"fault": "out_of_order", "params": {"event": "EV-503"}, "times": 2,
                                            "target": {"method": "GET", "path": "/ledger/events"}})
    for _ in range(2):
        listed = late.get("/ledger/events")
        assert ">EV-503</a>" not in listed and ">EV-504</a>" in listed
    assert ">EV-503</a>" in late.get("/ledger/events"), "the dependency arrives after its dependent"
    refused = late.post("/ledger/events/EV-504/process", status=409)
    assert "depends on EV-503" in refused
    assert late.tenant.journal() == []


def test_the_webmail_inbox_delivers_a_message_twice_or_late(registry: TenantRegistry) -> None:
    twice = browser_for(registry, "webmail", {"fault": "duplicate_delivery", "params": {"message": "5"},
                                              "target": {"method": "GET", "path": "/webmail/"}})
    inbox = twice.get("/webmail/")
    assert inbox.count('href="/webmail/messages/5"') == 2 and "(delivered again)" in inbox
    late = browser_for(registry, "webmail", {"fault": "out_of_order", "params": {"message": "4"},
                                             "target": {"method": "GET", "path": "/webmail/"}})
    assert 'href="/webmail/messages/4"' not in late.get("/webmail/")
    assert 'href="/webmail/messages/4"' in late.get("/webmail/"), "it arrives on the next load"
