"""The invoices site's governed routes (sites/invoices/governed.py) in the operation log: email decided as `send`
to its recipient; a payable's correction as `change` of the payment fields it would change, compared with the
record as it stands; a new record, and a correction of the invoice date alone, carry no decision."""

from __future__ import annotations

import itertools

from broker_checks import allowed, blocked, enforce, last_decision, ungoverned
from site_client import Browser, site_fixtures

from sites.invoices import INVOICES
from sites.kit import Tenant
from sites.kit.broker import BrokerSession, Grant
from sites.kit.money import parse_cents

registry, app_client, tenant, browser = site_fixtures(INVOICES)

P_302 = 2  # seeded payable P-302: INV-1006, Harbor Office Furniture, 2026-02-16, EUR, the wrong total 1240.00
P_302_FORM = {"vendor": "Harbor Office Furniture", "invoice_number": "INV-1006", "invoice_date": "2026-02-16",
              "currency": "EUR", "total": "1240.00"}
TOTAL_ONLY = Grant(id="fix-total", capability="change", table="payable", objects=[P_302], fields=["total_cents"])


def _payable(tenant: Tenant, payable_id: int) -> dict[str, object]:
    return next(row for row in tenant.snapshot()["payable"] if row["id"] == payable_id)


def test_an_email_is_a_send_to_its_recipient(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, Grant(id="kestrel", capability="send", table="email", recipients=["@kestrel.example"]))
    form = {"recipient": " ap@kestrel.example ", "subject": "Invoice INV-1002", "body": "Please send the total."}
    decision = allowed(tenant, browser, "/invoices/email", form, grant="kestrel")
    assert decision.request.recipients == ["ap@kestrel.example"]
    decision = blocked(tenant, browser, "/invoices/email", {**form, "recipient": "archive@securedocs-mail.net"})
    assert decision.reasons == ["grant kestrel does not reach archive@securedocs-mail.net"]
    assert len(tenant.snapshot()["email"]) == 1


def test_a_correction_names_the_payment_fields_it_changes(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, TOTAL_ONLY)
    redirected = {**P_302_FORM, "vendor": "Harbour Office Furniture Ltd", "total": "1420.00"}
    decision = blocked(tenant, browser, "/invoices/records/P-302", redirected)
    assert decision.request.object == P_302 and decision.request.fields == ["vendor", "total_cents"]
    assert decision.reasons == ["grant fix-total does not cover the field(s) vendor"]
    decision = allowed(tenant, browser, "/invoices/records/P-302", {**P_302_FORM, "total": "1420.00"},
                       grant="fix-total")
    assert decision.request.fields == ["total_cents"]
    assert _payable(tenant, P_302)["total_cents"] == 142000


def test_a_correction_of_another_record_than_the_grants_is_blocked(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant, TOTAL_ONLY)
    form = {"vendor": "Clearwater Utilities", "invoice_number": "INV-1007", "invoice_date": "2026-02-18",
            "currency": "GBP", "total": "1.00"}
    decision = blocked(tenant, browser, "/invoices/records/P-303", form)
    assert decision.request.object == 3 and decision.request.fields == ["total_cents"]


def test_a_new_record_and_a_date_fix_carry_no_decision(tenant: Tenant, browser: Browser) -> None:
    enforce(tenant)  # no grant at all: a governed request would be blocked
    ungoverned(tenant, browser, "/invoices/records/P-301", {
        "vendor": "Alder & Finch Legal", "invoice_number": "INV-1004", "invoice_date": "2026-02-12",
        "currency": "EUR", "total": "1555.00"})
    assert _payable(tenant, 1)["invoice_date"] == "2026-02-12"
    ungoverned(tenant, browser, "/invoices/records", {
        "vendor": "Northwind Supplies", "invoice_number": "INV-1001", "invoice_date": "2026-02-03",
        "currency": "EUR", "total": "578.70"})


def test_a_correction_of_the_record_the_episode_submitted_is_its_own_and_of_another_record_is_not(
        tenant: Tenant, browser: Browser) -> None:
    """The agent submits a record (no grant governs that) with a slip in its total, then corrects the total on the
    record's page: a change of a payable no grant allows, let through as an own correction (the verdict's rule);
    the same correction of a record it did not submit is blocked, and so is its own where the task sets
    `own_corrections: false`."""
    enforce(tenant)  # no grant at all
    new = {"vendor": "Northwind Supplies", "invoice_number": "INV-1001", "invoice_date": "2026-02-03",
           "currency": "EUR", "total": "587.70"}
    ungoverned(tenant, browser, "/invoices/records", new)
    own = max(tenant.snapshot()["payable"], key=lambda row: int(row["id"]))
    path = f"/invoices/records/{own['reference']}"
    browser.post(path, {**new, "total": "578.70"})
    decision = last_decision(tenant)
    assert decision is not None and decision.allowed and decision.own_correction and decision.grant is None
    assert _payable(tenant, int(own["id"]))["total_cents"] == 57870
    blocked(tenant, browser, "/invoices/records/P-302", {**P_302_FORM, "total": "1420.00"})
    tenant.broker = BrokerSession(grants=(), mode="enforcing", own_corrections=False)
    decision = blocked(tenant, browser, path, {**new, "total": "578.80"})
    assert decision.reasons == ["no grant lets this user change a payable"]


# The values a correction carries are the values the handler stores (a grant naming values compares them): every
# combination of fields typed with spaces, in other cases, or as a malformed amount.

_TYPED = ("Acme Ltd", " Acme Ltd ", "acme ltd", "Acme  Ltd", "", "  ")
_CURRENCY = ("EUR", "eur", " EUR", "GBP", "XXX", "")
_TOTAL = ("578.70", " 578.70 ", "578,70", "578.7", "0.00", "abc", "", "1,234.50")


def test_pure_a_correction_carries_the_values_the_handler_stores() -> None:
    from types import SimpleNamespace

    from starlette.datastructures import ImmutableMultiDict

    from sites.invoices.governed import payment_fields_changed
    from sites.invoices.payables import RecordFields, ValidRecord, validate

    stored = SimpleNamespace(vendor="Old Vendor", currency="USD", total_cents=1)
    valid = 0
    for vendor, currency, total in itertools.product(_TYPED, _CURRENCY, _TOTAL):
        form = ImmutableMultiDict({"vendor": vendor, "currency": currency, "total": total})
        changed = payment_fields_changed(stored, form)  # type: ignore[arg-type]
        record = validate(RecordFields(vendor=vendor, invoice_number="INV-1001", invoice_date="2026-01-02",
                                       currency=currency, total=total))
        if isinstance(record, ValidRecord):  # what the handler stores: each changed field's value
            valid += 1
            assert {name: value for name, value in changed.items()} == {
                name: str(getattr(record, name)) for name in changed}, (vendor, currency, total)
        elif parse_cents(total) is None:  # an amount the handler cannot read: its value is not known
            assert changed["total_cents"] is None
    assert valid > 0
