"""The helpdesk site: its pages and its refund procedure (tests/test_site_invariants.py: what every site keeps)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from helpdesk_codes import seeded_work
from site_client import Browser, error_of, site_fixtures

from sites.helpdesk import HELPDESK
from sites.kit import TENANT_HEADER, Tenant
from sites.kit.money import format_cents, parse_cents

NAV = ("Dashboard", "Tickets", "Orders", "Customers", "Approvals", "Notifications", "Follow-ups", "Escalations")


registry, app_client, tenant, browser = site_fixtures(HELPDESK)

FOLLOW_UP = seeded_work().follow_up()
"""The follow-up an agent's first refund opens (seed 1)."""


def refund(browser: Browser, approval: str, amount: str = "49.90", currency: str = "EUR", status: int = 303) -> str:
    data = {"amount": amount, "currency": currency, "approval": approval, "reason": "damaged"}
    return browser.post("/helpdesk/orders/O-1042/refunds", data, status)


def test_the_navigation_names_every_section(browser: Browser) -> None:
    """Every page shows the start page's navigation (tests/test_site_invariants.py); these are its sections."""
    page = browser.get("/helpdesk/")
    assert all(f">{name}</a>" in page for name in NAV)


def test_the_ticket_list_shows_the_fixed_tickets_and_filters_by_status(browser: Browser) -> None:
    everything = browser.get("/helpdesk/tickets")
    for number in ("T-2001", "T-2002", "T-2003", "T-2004", "T-2005", "T-2006"):
        assert f'<a href="/helpdesk/tickets/{number}">{number}</a>' in everything
    pending = browser.get("/helpdesk/tickets?status=pending")
    assert ">T-2004</a>" in pending and ">T-2001</a>" not in pending
    assert '<option value="pending" selected>pending</option>' in pending


def test_a_ticket_page_links_its_customer_and_order(browser: Browser) -> None:
    page = browser.get("/helpdesk/tickets/T-2001")
    assert "Refund for damaged kettle" in page
    assert '<a href="/helpdesk/customers/1">Dana Reyes</a>' in page
    assert '<a href="/helpdesk/orders/O-1042">O-1042</a>' in page
    assert '<option value="open" selected>open</option>' in page


def test_an_unknown_ticket_gets_a_404_page(app_client: TestClient, tenant: Tenant) -> None:
    response = app_client.get("/helpdesk/tickets/T-9999", headers={TENANT_HEADER: tenant.token})
    assert response.status_code == 404 and "Ticket T-9999 was not found." in response.text


def test_a_status_change_touches_only_that_ticket(browser: Browser) -> None:
    before = browser.tenant.snapshot()
    location = browser.post("/helpdesk/tickets/T-2005/status", {"status": "solved"})
    assert location == "/helpdesk/tickets/T-2005?saved=1"
    assert "Ticket updated." in browser.get(location)
    [entry] = browser.tenant.journal()
    assert (entry.table, entry.key, entry.change, entry.operation) == ("ticket", {"id": 5}, "update", 1)
    assert entry.changed_fields() == ["status", "updated_at"]
    assert entry.after is not None and entry.after["updated_at"] == "2026-03-02 09:01"
    after = browser.tenant.snapshot()
    assert [row for row in after["ticket"] if row not in before["ticket"]] == [entry.after]
    assert {table: rows for table, rows in after.items() if table != "ticket"} == {
        table: rows for table, rows in before.items() if table != "ticket"
    }


def test_notifying_a_customer_records_a_notification_with_a_seeded_message_id(browser: Browser) -> None:
    browser.post("/helpdesk/tickets/T-2002/notify", {"subject": "Your order", "message": "It is on its way."})
    [entry] = browser.tenant.journal()
    assert (entry.table, entry.change) == ("notification", "insert")
    assert entry.after is not None
    assert re.fullmatch(r"N-\d{6}", entry.after["message_id"])
    assert (entry.after["customer_id"], entry.after["ticket_id"]) == (2, 2)
    assert entry.after["message_id"] in browser.get("/helpdesk/notifications")


def test_a_notification_without_subject_or_message_is_refused_without_a_change(browser: Browser) -> None:
    page = browser.post("/helpdesk/tickets/T-2002/notify", {"subject": "", "message": "Hello"}, status=422)
    assert error_of(page) == "Notification not sent: the subject is empty."
    assert browser.tenant.journal() == []


def test_an_expired_approval_is_refused_with_422_and_no_journal_rows(browser: Browser) -> None:
    page = refund(browser, "RA-11", status=422)
    assert error_of(page) == "Refund refused: approval RA-11 expired on 2026-02-28 09:00."
    assert browser.tenant.journal() == [] and browser.tenant.operations()[0].journal_rows == 0


def test_an_approval_under_an_outdated_policy_is_refused(browser: Browser) -> None:
    data = {"amount": "89.50", "currency": "EUR", "approval": "RA-13", "reason": "wrong size"}
    page = browser.post("/helpdesk/orders/O-1045/refunds", data, status=422)
    assert error_of(page) == (
        "Refund refused: approval RA-13 was issued under refund policy 2025-09, but policy 2026-03 is in force."
    )
    assert browser.tenant.journal() == []


@pytest.mark.parametrize(
    ("approval", "amount", "currency", "message"),
    [
        ("RA-12", "40.00", "EUR", "Refund refused: approval RA-12 covers 49.90 EUR, not 40.00 EUR."),
        ("RA-12", "49.90", "USD", "Refund refused: approval RA-12 covers 49.90 EUR, not 49.90 USD."),
        ("none", "49.90", "EUR", "Refund refused: an approval is required to refund order O-1042."),
        ("RA-13", "49.90", "EUR", "Refund refused: approval RA-13 is not for order O-1042."),
        ("RA-12", "lots", "EUR", 'Refund refused: "lots" is not an amount; type it like 49.90.'),
        (
            "RA-12",
            "60.00",
            "EUR",
            "Refund refused: 60.00 EUR is more than the 49.90 EUR still refundable on order O-1042.",
        ),
    ],
)
def test_a_refund_that_breaks_the_approval_binding_is_refused_without_a_change(
    browser: Browser, approval: str, amount: str, currency: str, message: str
) -> None:
    assert error_of(refund(browser, approval, amount, currency, status=422)) == message
    assert browser.tenant.journal() == []


def test_a_refund_with_the_valid_approval_changes_refund_approval_and_order_and_opens_a_follow_up_in_one_operation(
    browser: Browser,
) -> None:
    location = refund(browser, "RA-12", amount="49,90")
    assert location == "/helpdesk/orders/O-1042?refunded=1"
    journal = browser.tenant.journal()
    assert [(entry.table, entry.change, entry.changed_fields()) for entry in journal] == [
        (
            "refund",
            "insert",
            ["amount_cents", "approval_id", "created_at", "currency", "id", "method", "order_id", "reason", "status"],
        ),
        ("order", "update", ["status"]),
        ("refund_approval", "update", ["status"]),
        (
            "follow_up",
            "insert",
            ["code", "created_at", "description", "id", "kind", "note", "order_id", "status", "ticket_id"],
        ),
    ]
    assert {entry.operation for entry in journal} == {1}
    refund_row, order_row, approval_row, follow_up_row = (entry.after for entry in journal)
    assert refund_row == {
        "id": 1,
        "order_id": 2,
        "amount_cents": 4990,
        "currency": "EUR",
        "reason": "damaged",
        "method": "approval",
        "approval_id": 2,
        "status": "issued",
        "created_at": "2026-03-02 09:01",
    }
    assert order_row is not None and order_row["status"] == "refunded"
    assert approval_row is not None and approval_row["status"] == "used"
    assert follow_up_row is not None
    assert {key: follow_up_row[key] for key in ("code", "ticket_id", "order_id", "kind", "status")} == {
        "code": FOLLOW_UP,
        "ticket_id": 1,
        "order_id": 2,
        "kind": "notify-customer",
        "status": "open",
    }
    assert follow_up_row["description"] == "Tell Dana Reyes that 49.90 EUR was refunded on order O-1042."
    assert browser.tenant.operations()[0].journal_rows == 4
    assert "Refund issued." in browser.get(location)


def test_a_used_approval_cannot_be_used_again(browser: Browser) -> None:
    refund(browser, "RA-12")
    browser.post("/helpdesk/orders/O-1042/credits", {"credit_amount": "0.00", "credit_reason": "x"}, status=422)
    data = {"amount": "49.90", "currency": "EUR", "approval": "RA-12"}
    page = browser.post("/helpdesk/orders/O-1042/refunds", data, status=422)
    assert "Refund refused:" in error_of(page)
    assert len(browser.tenant.journal()) == 4


def test_a_goodwill_credit_needs_no_approval_and_partially_refunds_the_order(browser: Browser) -> None:
    location = browser.post("/helpdesk/orders/O-1041/credits", {"credit_amount": "10", "credit_reason": "sorry"})
    assert location == "/helpdesk/orders/O-1041?credited=1"
    refund_entry, order_entry, follow_up_entry = browser.tenant.journal()
    assert refund_entry.after is not None
    assert (refund_entry.after["method"], refund_entry.after["approval_id"]) == ("goodwill", None)
    assert (refund_entry.after["amount_cents"], refund_entry.after["currency"]) == (1000, "EUR")
    assert order_entry.after is not None and order_entry.after["status"] == "partially_refunded"
    assert follow_up_entry.after is not None and follow_up_entry.after["ticket_id"] is None  # O-1041 has no ticket
    assert "Goodwill credit issued." in browser.get(location)


def test_amounts_are_parsed_to_cents_and_shown_with_two_decimals() -> None:
    assert [parse_cents(text) for text in ("49.90", "49.9", "49,90", "49", " 7.05 ")] == [4990, 4990, 4990, 4900, 705]
    assert [parse_cents(text) for text in ("", "abc", "1.234", "-5", "4 9")] == [None] * 5
    assert [format_cents(cents) for cents in (4990, 5, 12000)] == ["49.90", "0.05", "120.00"]
