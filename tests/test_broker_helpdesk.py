"""The helpdesk's governed routes (sites/helpdesk/governed.py) in the operation log: refunds and goodwill credits
decided as `refund` of an `order` (its amount, in the form's or the order's currency), notifications as `send` to
the ticket's customer; status changes, escalations and follow-ups carry no decision."""

from __future__ import annotations

from broker_checks import allowed, blocked, enforce, ungoverned
from site_client import Browser, site_fixtures

from sites.helpdesk import HELPDESK
from sites.kit import Tenant
from sites.kit.broker import Amount, Grant

registry, app_client, tenant, browser = site_fixtures(HELPDESK)

O_1042, O_1043 = 2, 3  # seeded order ids: O-1042 (49.90 EUR, approval RA-12), O-1043 (35.00 USD)
REFUND = {"amount": "49.90", "currency": "EUR", "approval": "RA-12", "reason": "Cracked lid"}


def _refunds(tenant: Tenant) -> int:
    return len(tenant.snapshot().get("refund", []))


def test_a_refund_above_the_grants_limit_is_blocked_and_within_it_goes_through(tenant: Tenant,
                                                                               browser: Browser) -> None:
    enforce(tenant, Grant(id="small", capability="refund", table="order", objects=[O_1042],
                          limit=Amount(cents=2000, currency="EUR")))
    decision = blocked(tenant, browser, "/helpdesk/orders/O-1042/refunds", REFUND)
    assert decision.request.object == O_1042 and decision.request.amount == Amount(cents=4990, currency="EUR")
    assert "grant small allows at most 20.00 EUR, the request is for 49.90 EUR" in decision.reasons
    assert _refunds(tenant) == 0
    enforce(tenant, Grant(id="kettle", capability="refund", table="order", objects=[O_1042],
                          limit=Amount(cents=4990, currency="EUR")))
    allowed(tenant, browser, "/helpdesk/orders/O-1042/refunds", REFUND, grant="kettle")
    assert _refunds(tenant) == 1


def test_a_refund_whose_amount_cannot_be_read_is_refused_by_an_amount_limited_grant(tenant: Tenant,
                                                                                     browser: Browser) -> None:
    enforce(tenant, Grant(id="kettle", capability="refund", table="order", limit=Amount(cents=4990, currency="EUR")))
    decision = blocked(tenant, browser, "/helpdesk/orders/O-1042/refunds", {**REFUND, "amount": "all of it"})
    assert decision.request.amount is None


def test_a_goodwill_credit_is_a_refund_in_the_orders_currency(tenant: Tenant, browser: Browser) -> None:
    form = {"credit_amount": "10.00", "credit_reason": "Late delivery"}
    enforce(tenant, Grant(id="euros", capability="refund", table="order", limit=Amount(cents=5000, currency="EUR")))
    decision = blocked(tenant, browser, "/helpdesk/orders/O-1043/credits", form)
    assert decision.request.object == O_1043 and decision.request.amount == Amount(cents=1000, currency="USD")
    assert decision.reasons == ["grant euros is in EUR, the request in USD"]
    enforce(tenant, Grant(id="dollars", capability="refund", table="order", limit=Amount(cents=1000, currency="USD")))
    allowed(tenant, browser, "/helpdesk/orders/O-1043/credits", form, grant="dollars")
    assert _refunds(tenant) == 1


def test_a_notification_is_a_send_to_the_tickets_customer(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, Grant(id="dana", capability="send", table="notification", recipients=["dana.reyes@example.com"]))
    form = {"subject": "Your refund", "message": "It is on its way."}
    decision = allowed(tenant, browser, "/helpdesk/tickets/T-2001/notify", form, grant="dana")
    assert decision.request.recipients == ["dana.reyes@example.com"]
    decision = blocked(tenant, browser, "/helpdesk/tickets/T-2002/notify", form)  # Priya's ticket
    assert decision.reasons == ["grant dana does not reach priya.natarajan@example.com"]
    assert len(tenant.snapshot()["notification"]) == 1


def test_status_changes_and_escalations_carry_no_decision(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant)  # no grant at all: a governed request would be blocked
    ungoverned(tenant, browser, "/helpdesk/tickets/T-2001/status", {"status": "pending"})
    ungoverned(tenant, browser, "/helpdesk/tickets/T-2001/escalate",
               {"queue": "Refund approvals", "reason": "Needs a new approval"})
    blocked(tenant, browser, "/helpdesk/tickets/T-2001/notify", {"subject": "s", "message": "m"})
