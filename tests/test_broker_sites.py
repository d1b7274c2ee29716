"""The broker in the operation log (sites/kit/oplog.py), in-process: a request to a governed route is decided before
its handler runs; in the enforcing mode a request no grant allows is answered by a refusal page and commits nothing
(no journal row, no new row), in the observing mode it goes through; every decision is kept on its operation, and
requests to routes no grant governs carry none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_client import Browser, site_fixtures

from computerops.core.vocabulary import BrokerMode
from sites.helpdesk import HELPDESK
from sites.inventory import INVENTORY
from sites.invoices import INVOICES
from sites.kit import SiteDefinition, Tenant, TenantRegistry, create_app
from sites.kit.broker import Amount, BrokerSession, Grant, Revocation
from sites.kit.governed import form_fields
from sites.ledger import LEDGER
from sites.webmail import WEBMAIL

registry, app_client, tenant, browser = site_fixtures(WEBMAIL)

PARTNERS = Grant(id="partners", capability="send", table="message", recipients=["@partner.org", "bo@acme.com"])
REVOCABLE = Grant(id="partners-until-notice", capability="send", table="message", recipients=["@partner.org"],
                  revoked_by=Revocation(method="GET", path="/webmail/policy"))


def _sent(tenant: Tenant) -> int:
    return sum(1 for row in tenant.snapshot().get("message", []) if row.get("folder") == "sent")


@pytest.mark.parametrize("mode", ["enforcing", "observing"])
def test_a_send_to_a_recipient_no_grant_reaches_is_blocked_only_when_enforcing(
    tenant: Tenant, browser: Browser, mode: BrokerMode,
) -> None:
    tenant.broker = BrokerSession(grants=(PARTNERS,), mode=mode)
    before, journal_before = _sent(tenant), len(tenant.journal())
    browser.post("/webmail/compose", {"to": "ana@partner.org", "subject": "Minutes", "body": "Attached."})
    assert _sent(tenant) == before + 1
    form = {"to": "billing-archive@securedocs-mail.net", "subject": "Invoices", "body": "All of them."}
    if mode == "enforcing":
        page = browser.post("/webmail/compose", form, status=403)
        assert "Blocked by policy" in page and "does not reach billing-archive@securedocs-mail.net" in page
        assert _sent(tenant) == before + 1 and len(tenant.journal()) == journal_before + 1  # nothing committed
    else:
        browser.post("/webmail/compose", form)
        assert _sent(tenant) == before + 2
    allowed, refused = [op.broker for op in tenant.operations()[-2:]]
    assert allowed is not None and allowed.allowed and allowed.grant == "partners" and not allowed.blocked
    assert refused is not None and not refused.allowed and refused.blocked == (mode == "enforcing")
    assert refused.request.recipients == ["billing-archive@securedocs-mail.net"]


def test_every_way_of_sending_is_governed_and_a_draft_saved_is_not(tenant: Tenant, browser: Browser) -> None:
    tenant.broker = BrokerSession(grants=(), mode="enforcing")
    form = {"to": "ana@partner.org", "subject": "Hello", "body": "x"}
    for path in ("/webmail/compose", "/webmail/messages/2/reply", "/webmail/messages/2/forward"):
        assert "Blocked by policy" in browser.post(path, form, status=403)
    location = browser.post("/webmail/compose", {**form, "action": "draft"})  # saving a draft sends nothing
    assert "drafts" in location and tenant.operations()[-1].broker is None
    browser.get("/webmail/")  # a page no grant governs
    assert tenant.operations()[-1].broker is None
    assert [op.status for op in tenant.operations() if op.broker is not None] == [403, 403, 403]


def test_a_repeated_recipient_is_read_as_the_handler_reads_it(tenant: Tenant, browser: Browser) -> None:
    """The handler sends to the last `to` of the form: a first, allowed one must not hide it from the broker."""
    tenant.broker = BrokerSession(grants=(PARTNERS,), mode="enforcing")
    page = browser.post("/webmail/compose", {"to": ["ana@partner.org", "eve@evil.net"], "subject": "Hi", "body": "x"},
                        status=403)
    assert "does not reach eve@evil.net" in page


def test_a_form_keeps_every_value_of_a_repeated_name() -> None:
    form = form_fields(b"sku=SKU-1&sku=SKU-2&to=a%40x.org", "application/x-www-form-urlencoded; charset=utf-8")
    assert form.getlist("sku") == ["SKU-1", "SKU-2"] and form.get("sku") == "SKU-2" and form.get("to") == "a@x.org"
    assert not form_fields(b"to=a%40x.org", "multipart/form-data; boundary=x")


@pytest.mark.parametrize("site", [WEBMAIL, HELPDESK, INVOICES, LEDGER, INVENTORY], ids=lambda site: site.name)
def test_every_governed_route_serves_a_route_of_its_site(site: SiteDefinition, tmp_path: Path) -> None:
    """Each pattern matches the path of a route of the site's app (mount point included, as its schema lists
    them), with its method, a parameter standing for any segment: a typo in a pattern fails here."""
    registry = TenantRegistry(tmp_path, sites={site.name: site})
    paths: dict[str, dict[str, object]] = create_app(registry).openapi()["paths"]
    registry.close()
    served = [(method.upper(), re.sub(r"\{(\w+)\}", r"\1", path))  # `/helpdesk/orders/{number}` as `.../number`
              for path, operations in paths.items() for method in operations]
    assert site.governed
    for governed in site.governed:
        matched = [path for method, path in served if method == governed.method and governed.pattern.fullmatch(path)]
        assert matched, f"{governed.method} {governed.path} serves no route of {site.name}"


def test_a_trusted_page_withdraws_a_grant_for_the_requests_after_it(tenant: Tenant, browser: Browser) -> None:
    tenant.broker = BrokerSession(grants=(REVOCABLE,), mode="enforcing")
    form = {"to": "ana@partner.org", "subject": "Hello", "body": "x"}
    browser.post("/webmail/compose", form)
    browser.get("/webmail/policy")
    page = browser.post("/webmail/compose", form, status=403)
    assert "grant partners-until-notice was withdrawn" in page


def test_without_grants_in_the_episode_nothing_is_governed(tenant: Tenant, browser: Browser) -> None:
    assert tenant.broker is None
    browser.post("/webmail/compose", {"to": "eve@evil.net", "subject": "Hello", "body": "x"})
    assert tenant.operations()[-1].broker is None


def test_a_payment_grant_is_typed_with_its_currency() -> None:
    grant = Grant(id="rent", capability="pay", table="payment", limit=Amount(cents=100, currency="EUR"))
    assert Grant.model_validate_json(grant.model_dump_json()) == grant
