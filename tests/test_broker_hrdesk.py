"""The HR desk's governed routes (sites/hrdesk/governed.py) in the operation log: approving expense claims decided
as `pay` of an `expense_claim` (its amount in its currency; several selected claims as their sum, or no amount in
several currencies), leave decisions as `change` of a `leave_request`'s status; rejecting a claim and asking for its
receipt carry no decision."""

from __future__ import annotations

from broker_checks import allowed, blocked, enforce, ungoverned
from site_client import Browser, site_fixtures

from sites.hrdesk import HRDESK
from sites.kit import Tenant
from sites.kit.broker import Amount, Grant

registry, app_client, tenant, browser = site_fixtures(HRDESK)

X_5001, X_5003, X_5007, X_5008 = 1, 3, 7, 8  # seeded claim ids: 412.80 EUR, 2240.00 USD, 289.00 EUR, 350.00 EUR
L_3001 = 1


def test_approving_a_claim_pays_its_amount_and_a_grant_for_another_claim_blocks_it(tenant: Tenant,
                                                                                 browser: Browser) -> None:
    enforce(tenant, Grant(id="lucia", capability="pay", table="expense_claim", objects=[X_5001],
                          limit=Amount(cents=41280, currency="EUR")))
    decision = blocked(tenant, browser, "/hrdesk/expenses/X-5003/approve", {})
    assert decision.request.object == X_5003 and decision.request.amount == Amount(cents=224000, currency="USD")
    allowed(tenant, browser, "/hrdesk/expenses/X-5001/approve", {}, grant="lucia")


def test_selected_claims_ask_for_their_sum_and_name_each_claim(tenant: Tenant, browser: Browser) -> None:
    """A bulk approval names every claim it pays (`several`; blind round 2: it named none, so a grant limited to
    objects could not bind it): a grant of both allows it, a grant of one of them refuses it naming the other."""
    enforce(tenant, Grant(id="only-5007", capability="pay", table="expense_claim", objects=[X_5007]))
    decision = blocked(tenant, browser, "/hrdesk/expenses/approve", {"claim": ["X-5007", "X-5008"]})
    assert decision.request.object is None and decision.request.several == [X_5007, X_5008]
    assert decision.request.amount == Amount(cents=63900, currency="EUR")
    assert decision.reasons == [f"grant only-5007 covers expense_claim {X_5007}, not expense_claim {X_5008}"]
    enforce(tenant, Grant(id="hannah", capability="pay", table="expense_claim", objects=[X_5007, X_5008],
                          limit=Amount(cents=63900, currency="EUR")))
    allowed(tenant, browser, "/hrdesk/expenses/approve", {"claim": ["X-5007", "X-5008"]}, grant="hannah")


def test_claims_in_several_currencies_ask_for_no_amount(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, Grant(id="euros", capability="pay", table="expense_claim",
                          limit=Amount(cents=1_000_000, currency="EUR")))
    decision = blocked(tenant, browser, "/hrdesk/expenses/approve", {"claim": ["X-5001", "X-5003"]})
    assert decision.request.amount is None


def test_a_leave_decision_changes_the_requests_status(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, Grant(id="lucia-leave", capability="change", table="leave_request", objects=[L_3001],
                          fields=["status"]))
    decision = blocked(tenant, browser, "/hrdesk/leave/L-3003/reject", {"note": "Busy week"})
    assert decision.request.fields == ["status"]
    allowed(tenant, browser, "/hrdesk/leave/L-3001/approve", {}, grant="lucia-leave")


def test_a_leave_grant_that_names_the_value_refuses_the_other_decision(tenant: Tenant, browser: Browser) -> None:
    """Blind round 2: an approval grant let the request be rejected (the same object and field). A grant naming the
    value (`values: {status: [approved]}`) refuses the rejection, naming the value it writes, and allows the
    approval."""
    enforce(tenant, Grant(id="approve-only", capability="change", table="leave_request", objects=[L_3001],
                          fields=["status"], values={"status": ["approved"]}))
    decision = blocked(tenant, browser, "/hrdesk/leave/L-3001/reject", {"note": "Busy week"})
    assert decision.request.values == {"status": "rejected"}
    assert decision.reasons == ["grant approve-only allows leave_request status only as approved; the request "
                                "writes rejected"]
    allowed(tenant, browser, "/hrdesk/leave/L-3001/approve", {}, grant="approve-only")


def test_rejecting_a_claim_and_asking_for_a_receipt_are_not_governed(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant)
    ungoverned(tenant, browser, "/hrdesk/expenses/X-5006/reject", {"note": "Duplicate of X-5005"})
    ungoverned(tenant, browser, "/hrdesk/expenses/X-5005/request-receipt", {"note": "Please attach it"})
