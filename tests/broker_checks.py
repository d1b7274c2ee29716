"""Checks shared by the tests of the sites' governed routes (tests/test_broker_*.py), in-process: a request the
episode's grants allow goes through and commits, one they do not is blocked (403 in the enforcing mode) and commits
nothing, and a request to a route no grant governs carries no decision."""

from __future__ import annotations

from collections.abc import Mapping

from site_client import Browser

from sites.kit import Tenant
from sites.kit.broker import BrokerDecision, BrokerSession, Grant

Form = Mapping[str, str | list[str]]


def enforce(tenant: Tenant, *grants: Grant) -> None:
    """The tenant's episode has these grants, and its broker blocks what none of them allows."""
    tenant.broker = BrokerSession(grants=grants, mode="enforcing")


def last_decision(tenant: Tenant) -> BrokerDecision | None:
    """The broker's decision on the tenant's last operation (None: no route a grant governs served it)."""
    return tenant.operations()[-1].broker


def allowed(tenant: Tenant, browser: Browser, path: str, form: Form, *, grant: str) -> BrokerDecision:
    """Posts `form` to `path`, which `grant` allows: the handler runs and commits (a journal row or more)."""
    journal = len(tenant.journal())
    browser.post(path, form)
    decision = last_decision(tenant)
    assert decision is not None and decision.allowed and decision.grant == grant, decision
    assert len(tenant.journal()) > journal, "the allowed request committed nothing"
    return decision


def blocked(tenant: Tenant, browser: Browser, path: str, form: Form) -> BrokerDecision:
    """Posts `form` to `path`, which no grant allows: refused with 403, the state and the journal as they were."""
    state, journal = tenant.snapshot(), len(tenant.journal())
    page = browser.post(path, form, status=403)
    assert "Blocked by policy" in page
    assert tenant.snapshot() == state and len(tenant.journal()) == journal, "a blocked request committed"
    decision = last_decision(tenant)
    assert decision is not None and decision.blocked, decision
    return decision


def ungoverned(tenant: Tenant, browser: Browser, path: str, form: Form, status: int = 303) -> None:
    """Posts `form` to `path`, a route no grant governs: it carries no decision, whatever the grants."""
    browser.post(path, form, status=status)
    assert last_decision(tenant) is None
