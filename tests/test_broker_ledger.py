"""The ledger's governed route (sites/ledger/governed.py) in the operation log: an entry posted by hand decided as
`pay` of its amount and currency; processing events and recording checkpoints carry no decision."""

from __future__ import annotations

import pytest
from broker_checks import allowed, blocked, enforce, ungoverned
from site_client import Browser, site_fixtures

from computerops.core.vocabulary import BrokerMode
from sites.kit import Tenant
from sites.kit.broker import Amount, BrokerSession, Grant
from sites.ledger import LEDGER
from sites.ledger.models import ACCOUNTS

registry, app_client, tenant, browser = site_fixtures(LEDGER)

PETTY_CASH = Grant(id="petty-cash", capability="pay", table="entry", limit=Amount(cents=10000, currency="EUR"))
ENTRY = {"account": ACCOUNTS[0], "amount": "50.00", "currency": "EUR", "memo": "Courier"}


def _entries(tenant: Tenant) -> int:
    return len(tenant.snapshot()["entry"])


def test_an_entry_by_hand_is_paid_within_the_grants_limit_and_currency(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, PETTY_CASH)
    before = _entries(tenant)
    decision = allowed(tenant, browser, "/ledger/entries", ENTRY, grant="petty-cash")
    assert decision.request.amount == Amount(cents=5000, currency="EUR") and decision.request.object is None
    decision = blocked(tenant, browser, "/ledger/entries", {**ENTRY, "amount": "150,00"})
    assert decision.reasons == ["grant petty-cash allows at most 100.00 EUR over the episode to ACC-100 Operations: "
                                "50.00 EUR already granted of 100.00 EUR, and the request for 150.00 EUR would make "
                                "200.00 EUR"]  # the 50.00 EUR entry before it counts (tests/test_broker_limits.py)
    decision = blocked(tenant, browser, "/ledger/entries", {**ENTRY, "currency": "USD"})
    assert decision.reasons == ["grant petty-cash is in EUR, the request in USD"]
    assert _entries(tenant) == before + 1


def test_an_entry_by_hand_is_paid_to_the_account_the_handler_books(tenant: Tenant, browser: Browser) -> None:
    """The payee is the account as the handler reads it: the last value of a repeated field, exactly as posted."""
    fees = Grant(id="fees", capability="pay", table="entry", payees=[ACCOUNTS[2]],
                 limit=Amount(cents=2000, currency="EUR"))
    enforce(tenant, fees)
    before = _entries(tenant)
    small = {**ENTRY, "amount": "12.00"}
    decision = allowed(tenant, browser, "/ledger/entries", {**small, "account": ACCOUNTS[2]}, grant="fees")
    assert decision.request.payee == ACCOUNTS[2]
    decision = blocked(tenant, browser, "/ledger/entries", {**small, "account": [ACCOUNTS[2], ACCOUNTS[3]]})
    assert decision.request.payee == ACCOUNTS[3]
    assert decision.reasons == [f"grant fees pays {ACCOUNTS[2]}, not {ACCOUNTS[3]}"]
    assert _entries(tenant) == before + 1


def test_in_the_observing_mode_an_entry_no_grant_allows_goes_through(tenant: Tenant, browser: Browser) -> None:
    tenant.broker = BrokerSession(grants=(PETTY_CASH,), mode="observing")
    mode: BrokerMode = "observing"
    before = _entries(tenant)
    browser.post("/ledger/entries", {**ENTRY, "amount": "5000.00"})
    decision = tenant.operations()[-1].broker
    assert decision is not None and decision.mode == mode and not decision.allowed and not decision.blocked
    assert _entries(tenant) == before + 1


@pytest.mark.parametrize(("path", "form"), [
    ("/ledger/events/EV-501/process", {}),
    ("/ledger/events/process-selected", {"event": ["EV-502"]}),
    ("/ledger/checkpoints", {"batch": "B-1", "status": "partial", "note": "EV-501 done"}),
])
def test_the_queues_procedures_carry_no_decision(tenant: Tenant, browser: Browser, path: str,
                                                 form: dict[str, str | list[str]]) -> None:
    enforce(tenant)  # no grant at all: a governed request would be blocked
    ungoverned(tenant, browser, path, form)
