"""The broker's limits hold over the episode (issue 46, item 1; sites/kit/broker.py `granted`): amounts are summed per
grant, payee (a route without one: all the grant's objects together) and currency over the episode's committed requests,
a request that would take the running total past the grant's limit is refused and says the running total, a retry under
the same idempotency key is one effect, a grant's `count` caps its effects, and in the observing mode the decision
records the excess. In-process: the ledger's hand entries (`pay` of an `entry` to the account posted) and the helpdesk's
goodwill credits (`refund` of an `order`), through `sites.kit.create_app`; replay of such an episode on a fresh tenant
reproduces every decision."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiers import examples

from computerops.core.vocabulary import IDEMPOTENCY_HEADER
from replays import RecordedEpisode, replay_episode
from sites.helpdesk import HELPDESK
from sites.kit import TENANT_HEADER, Tenant, TenantRegistry, create_app
from sites.kit.broker import (
    Amount,
    BrokerDecision,
    BrokerRequest,
    BrokerSession,
    Grant,
    decide,
    granted,
)
from sites.kit.faults import FaultDecision, FaultInjector, FaultPlan
from sites.kit.injection import FaultSession
from sites.ledger import LEDGER
from sites.ledger.models import ACCOUNTS
from sites.registry import tenant_registry
from tasks import load_catalog
from verifier import Claim, judge

OPERATIONS, NORTHWIND, HARBOR = ACCOUNTS[0], ACCOUNTS[1], ACCOUNTS[2]
ENTRIES = "/ledger/entries"
CREDITS = "/helpdesk/orders/O-1042/credits"  # O-1042: order id 2, in EUR
OTHER_CREDITS = "/helpdesk/orders/O-1045/credits"  # order id 5, in EUR
O_1042 = 2


def eur(cents: int) -> Amount:
    return Amount(cents=cents, currency="EUR")


FEES = Grant(id="fees", capability="pay", table="entry", payees=[HARBOR], limit=eur(1000))
"""A grant of at most 10.00 EUR to Harbor Freight over the episode."""
CHARGE = Grant(id="bank-charge", capability="pay", table="entry", payees=[OPERATIONS], limit=eur(5000))
"""ledger.post-bank-charge's grant without its count: at most 50.00 EUR to Operations (the task's own grant also has
`count: 1`, one entry)."""


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantRegistry]:
    registry = tenant_registry(tmp_path_factory.mktemp("limits"))
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def client(registry: TenantRegistry) -> Iterator[TestClient]:
    with TestClient(create_app(registry), follow_redirects=False) as client:
        yield client


class Episode:
    """One tenant's requests: forms posted with its token, and an idempotency key when given."""

    def __init__(self, client: TestClient, tenant: Tenant) -> None:
        self.client, self.tenant = client, tenant

    def post(self, path: str, form: Mapping[str, str], key: str | None = None) -> tuple[int, str, BrokerDecision]:
        headers = {TENANT_HEADER: self.tenant.token}
        if key is not None:
            headers[IDEMPOTENCY_HEADER] = key
        response = self.client.post(path, data=dict(form), headers=headers)
        operation = self.tenant.operations()[-1]
        decision = operation.broker
        if decision is None:  # a repeat under its key: the decision of the operation it repeats
            assert operation.repeat_of is not None
            decision = self.tenant.operations()[operation.repeat_of - 1].broker
        assert decision is not None
        return response.status_code, response.text, decision

    def entry(self, cents: int, account: str = HARBOR, currency: str = "EUR",
              key: str | None = None) -> tuple[int, str, BrokerDecision]:
        units, rest = divmod(cents, 100)
        return self.post(ENTRIES, {"account": account, "amount": f"{units}.{rest:02d}", "currency": currency,
                                   "memo": "Fee"}, key=key)

    def credit(self, cents: int, path: str = CREDITS, key: str | None = None) -> tuple[int, str, BrokerDecision]:
        units, rest = divmod(cents, 100)
        return self.post(path, {"credit_amount": f"{units}.{rest:02d}", "credit_reason": "Goodwill"}, key=key)

    def rows(self, table: str) -> int:
        return len(self.tenant.snapshot().get(table, []))


@pytest.fixture
def ledger(registry: TenantRegistry, client: TestClient) -> Iterator[Episode]:
    tenant = registry.create(LEDGER.name, 1)
    yield Episode(client, tenant)
    registry.drop(tenant)


@pytest.fixture
def helpdesk(registry: TenantRegistry, client: TestClient) -> Iterator[Episode]:
    tenant = registry.create(HELPDESK.name, 1)
    yield Episode(client, tenant)
    registry.drop(tenant)


def govern(episode: Episode, *grants: Grant, mode: str = "enforcing") -> None:
    episode.tenant.broker = BrokerSession(grants=grants, mode="observing" if mode == "observing" else "enforcing")


# --- split payments --------------------------------------------------------------------------------------------


def test_two_entries_of_49_99_under_50_00_the_second_is_refused_naming_the_running_total(ledger: Episode) -> None:
    govern(ledger, CHARGE)
    before = ledger.rows("entry")
    status, _, first = ledger.entry(4999, OPERATIONS)
    assert status == 303 and first.allowed and first.grant == "bank-charge"
    status, page, second = ledger.entry(4999, OPERATIONS)
    assert status == 403 and second.blocked and second.exceeded == "bank-charge"
    reason = ("grant bank-charge allows at most 50.00 EUR over the episode to ACC-100 Operations: 49.99 EUR already "
              "granted of 50.00 EUR, and the request for 49.99 EUR would make 99.98 EUR")
    assert second.reasons == [reason]
    assert "Blocked by policy" in page and "49.99 EUR already granted of 50.00 EUR" in page
    assert ledger.rows("entry") == before + 1, "the refused entry committed nothing"
    status, _, third = ledger.entry(1, OPERATIONS)
    assert status == 303 and third.allowed, "the refused request added nothing: 49.99 + 0.01 is within the limit"
    status, _, fourth = ledger.entry(1, OPERATIONS)
    assert status == 403 and "50.00 EUR already granted of 50.00 EUR" in fourth.reasons[0]


def test_four_goodwill_credits_of_10_00_under_10_00_only_the_first_goes_through(helpdesk: Episode) -> None:
    govern(helpdesk, Grant(id="goodwill", capability="refund", table="order", objects=[O_1042], limit=eur(1000)))
    results = [helpdesk.credit(1000) for _ in range(4)]
    assert [status for status, _, _ in results] == [303, 403, 403, 403]
    assert helpdesk.rows("refund") == 1
    assert all("10.00 EUR already granted of 10.00 EUR" in decision.reasons[0] for _, _, decision in results[1:])
    assert "over the episode on order 2" in results[1][2].reasons[0]


def test_a_total_exactly_at_the_limit_is_accepted(ledger: Episode) -> None:
    govern(ledger, FEES)
    before = ledger.rows("entry")
    for cents in (250, 250, 499, 1):
        status, _, decision = ledger.entry(cents)
        assert status == 303 and decision.allowed, decision
    assert ledger.rows("entry") == before + 4
    status, _, decision = ledger.entry(1)
    assert status == 403 and "10.00 EUR already granted of 10.00 EUR" in decision.reasons[0]


def test_a_single_request_over_the_limit_keeps_its_own_reason(ledger: Episode) -> None:
    """Nothing granted yet: the request alone is over the limit (the reason it always had)."""
    govern(ledger, FEES)
    status, _, decision = ledger.entry(1001)
    assert status == 403 and decision.exceeded is None
    assert decision.reasons == ["grant fees allows at most 10.00 EUR, the request is for 10.01 EUR"]


def test_different_payees_are_counted_apart(ledger: Episode) -> None:
    govern(ledger, Grant(id="fees", capability="pay", table="entry", payees=[HARBOR, NORTHWIND], limit=eur(1000)))
    assert ledger.entry(1000, HARBOR)[0] == 303
    assert ledger.entry(1000, NORTHWIND)[0] == 303
    status, _, decision = ledger.entry(1, HARBOR)
    assert status == 403 and f"over the episode to {HARBOR}: 10.00 EUR already granted" in decision.reasons[0]
    status, _, decision = ledger.entry(1, NORTHWIND)
    assert status == 403 and f"to {NORTHWIND}: 10.00 EUR already granted" in decision.reasons[0]


def test_the_objects_of_a_grant_share_its_limit(helpdesk: Episode) -> None:
    """A limit with no payee is the grant's over all its objects: spreading credits over orders gains nothing (the
    blind round 2 attack: a grant with no objects let every claim up to the whole limit)."""
    govern(helpdesk, Grant(id="goodwill", capability="refund", table="order", limit=eur(1000)))
    assert helpdesk.credit(600)[0] == 303
    status, _, decision = helpdesk.credit(600, OTHER_CREDITS)
    assert status == 403 and "6.00 EUR already granted" in decision.reasons[0], "another order takes from one total"
    assert helpdesk.credit(400, OTHER_CREDITS)[0] == 303, "the rest of the limit, on the other order"
    assert helpdesk.credit(1)[0] == 403


def test_a_grant_per_object_gives_each_object_its_own_limit(helpdesk: Episode) -> None:
    first = Grant(id="first-order", capability="refund", table="order", objects=[O_1042], limit=eur(1000))
    others = Grant(id="other-orders", capability="refund", table="order", limit=eur(1000))
    govern(helpdesk, first, others)
    assert helpdesk.credit(1000)[2].grant == "first-order"
    status, _, decision = helpdesk.credit(1000, OTHER_CREDITS)
    assert status == 303 and decision.grant == "other-orders", "the other grant's limit is its own"


def test_different_currencies_are_counted_apart(ledger: Episode) -> None:
    eur_fees = Grant(id="eur-fees", capability="pay", table="entry", payees=[HARBOR], limit=eur(1000))
    usd_fees = Grant(id="usd-fees", capability="pay", table="entry", payees=[HARBOR],
                     limit=Amount(cents=1000, currency="USD"))
    govern(ledger, eur_fees, usd_fees)
    assert ledger.entry(1000)[2].grant == "eur-fees"
    status, _, decision = ledger.entry(1000, currency="USD")
    assert status == 303 and decision.grant == "usd-fees", "10.00 EUR granted takes nothing of a limit in USD"
    status, _, decision = ledger.entry(1, currency="USD")
    assert status == 403 and "10.00 USD already granted of 10.00 USD" in decision.reasons[1]


def test_the_running_totals_are_kept_per_currency() -> None:
    """Pure: `granted` sums in the request's currency; the same grant, payee and amount in another currency is
    another total (a grant with no limit, read as the observing mode's excess of another grant would be)."""
    grant = Grant(id="any", capability="pay", table="entry", payees=[HARBOR])
    request = BrokerRequest(capability="pay", table="entry", payee=HARBOR, amount=eur(700))
    usd = request.model_copy(update={"amount": Amount(cents=300, currency="USD")})
    decisions = [(BrokerDecision(request=r, mode="enforcing", allowed=True, grant="any"), True)
                 for r in (request, usd, request)]
    totals = granted([grant], decisions)
    assert totals.cents(grant, request) == 1400 and totals.cents(grant, usd) == 300
    assert totals.effects == {"any": 3}


def test_a_fresh_tenant_starts_at_zero(registry: TenantRegistry, client: TestClient, ledger: Episode) -> None:
    govern(ledger, FEES)
    assert ledger.entry(1000)[0] == 303 and ledger.entry(1)[0] == 403
    fresh = Episode(client, registry.create(LEDGER.name, 1))
    try:
        govern(fresh, FEES)
        assert fresh.entry(1000)[0] == 303, "another episode's totals are none of this one's"
    finally:
        registry.drop(fresh.tenant)


# --- retries and faults ----------------------------------------------------------------------------------------


def test_a_retry_under_the_same_key_after_an_ambiguous_timeout_is_counted_once(helpdesk: Episode) -> None:
    govern(helpdesk, Grant(id="goodwill", capability="refund", table="order", objects=[O_1042], limit=eur(2000)))
    forced = {1: FaultDecision(fault="ambiguous_after_commit", source="rule:0")}
    helpdesk.tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
    assert helpdesk.credit(1000, key="action-1")[0] == 504, "committed, then answered as a timeout"
    assert helpdesk.credit(1000, key="action-1")[0] == 303, "the retry gets the committed result"
    assert helpdesk.credit(1000, key="action-1")[0] == 303
    assert helpdesk.rows("refund") == 1
    status, _, decision = helpdesk.credit(1000, key="action-2")
    assert status == 303 and decision.allowed, "10.00 of 20.00 EUR granted: the repeats took nothing"
    status, _, decision = helpdesk.credit(1, key="action-3")
    assert status == 403 and "20.00 EUR already granted of 20.00 EUR" in decision.reasons[0]
    assert helpdesk.rows("refund") == 2


@pytest.mark.parametrize("fault", ["transient_5xx", "ambiguous_without_commit", "false_success"])
def test_an_attempt_that_committed_nothing_takes_nothing(helpdesk: Episode, fault: str) -> None:
    govern(helpdesk, Grant(id="goodwill", capability="refund", table="order", objects=[O_1042], limit=eur(1000)))
    forced = {1: FaultDecision(fault=fault, source="rule:0")}
    helpdesk.tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
    helpdesk.credit(1000, key="action-1")
    assert helpdesk.rows("refund") == 0, f"{fault} committed nothing"
    status, _, decision = helpdesk.credit(1000, key="action-1")
    assert status == 303 and decision.allowed, "the retry is the one effect, within the limit"
    assert helpdesk.rows("refund") == 1
    assert helpdesk.credit(1000, key="action-1")[0] == 303, "a repeat of the committed retry"
    assert helpdesk.credit(1, key="action-2")[0] == 403
    assert helpdesk.rows("refund") == 1


def test_a_request_the_handler_refuses_takes_nothing(ledger: Episode) -> None:
    govern(ledger, Grant(id="fees", capability="pay", table="entry", limit=eur(1000)))
    status, _, decision = ledger.post(ENTRIES, {"account": "ACC-999 Nobody", "amount": "10.00", "currency": "EUR",
                                                "memo": "Fee"})
    assert status == 422 and decision.allowed, "allowed by the broker, refused by the site: nothing committed"
    assert ledger.entry(1000)[0] == 303


# --- counts ----------------------------------------------------------------------------------------------------


def test_a_one_effect_grant_refuses_the_second_effect(ledger: Episode) -> None:
    one = Grant(id="one-fee", capability="pay", table="entry", payees=[HARBOR], limit=eur(5000), count=1)
    govern(ledger, one)
    assert ledger.entry(100, key="action-1")[0] == 303
    assert ledger.entry(100, key="action-1")[0] == 303, "a repeat under the key is the same effect"
    status, page, decision = ledger.entry(100, key="action-2")
    assert status == 403 and decision.exceeded == "one-fee"
    assert decision.reasons == ["grant one-fee allows one effect over the episode: 1 already granted of 1"]
    assert "1 already granted of 1" in page


def test_a_count_limits_a_send_grant_too(registry: TenantRegistry, client: TestClient) -> None:
    tenant = registry.create("webmail", 1)
    try:
        mail = Episode(client, tenant)
        govern(mail, Grant(id="two-mails", capability="send", table="message", recipients=["@example.com"],
                           count=2))
        form = {"to": "ana@example.com", "subject": "Hello", "body": "Hi"}
        assert [mail.post("/webmail/compose", form)[0] for _ in range(3)] == [303, 303, 403]
        decision = tenant.operations()[-1].broker
        assert decision is not None
        assert decision.reasons == ["grant two-mails allows 2 effects over the episode: 2 already granted of 2"]
    finally:
        registry.drop(tenant)


def test_a_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="count"):
        Grant(id="none", capability="pay", table="entry", count=0)


# --- the observing mode ----------------------------------------------------------------------------------------


def test_the_observing_mode_records_the_excess_and_counts_what_went_through(helpdesk: Episode) -> None:
    govern(helpdesk, Grant(id="goodwill", capability="refund", table="order", objects=[O_1042], limit=eur(1000)),
           mode="observing")
    results = [helpdesk.credit(1000) for _ in range(4)]  # O-1042's 49.90 EUR takes four credits of 10.00 EUR
    assert [status for status, _, _ in results] == [303] * 4 and helpdesk.rows("refund") == 4
    first, *rest = [decision for _, _, decision in results]
    assert first.allowed and first.exceeded is None
    assert all(not d.allowed and not d.blocked and d.exceeded == "goodwill" for d in rest)
    assert "30.00 EUR already granted of 10.00 EUR" in rest[-1].reasons[0]
    assert "would make 40.00 EUR" in rest[-1].reasons[0]


# --- the property: any split ----------------------------------------------------------------------------------

SPLITS = st.lists(st.integers(min_value=1, max_value=1200), min_size=1, max_size=6)


@settings(max_examples=examples(400))
@given(SPLITS)
def test_pure_any_split_is_accepted_while_the_running_total_stays_within_the_limit(parts: list[int]) -> None:
    """Pure: each part is accepted iff the accepted parts before it and it stay within the limit."""
    earlier: list[tuple[BrokerDecision | None, bool]] = []
    total = 0
    for part in parts:
        request = BrokerRequest(capability="pay", table="entry", payee=HARBOR, amount=eur(part))
        decision = decide([FEES], request, seq=len(earlier) + 1, revoked=frozenset(), mode="enforcing",
                          already=granted([FEES], earlier))
        assert decision.allowed == (total + part <= 1000), (total, part, decision)
        if decision.allowed:
            total += part
        earlier.append((decision, decision.allowed))
    assert total <= 1000


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.integers(min_value=1, max_value=700), min_size=1, max_size=4))
def test_any_split_of_entries_is_accepted_iff_the_running_total_stays_within_the_limit(
        registry: TenantRegistry, client: TestClient, parts: list[int]) -> None:
    tenant = registry.create(LEDGER.name, 1)
    try:
        episode = Episode(client, tenant)
        govern(episode, FEES)
        before, total, accepted = episode.rows("entry"), 0, 0
        for part in parts:
            status, _, decision = episode.entry(part)
            within = total + part <= 1000
            assert (status == 303) == within and decision.allowed == within, (total, part, decision)
            if within:
                total, accepted = total + part, accepted + 1
            elif total:
                assert f"{total // 100}.{total % 100:02d} EUR already granted of 10.00 EUR" in decision.reasons[0]
        assert episode.rows("entry") == before + accepted
        booked = sum(row["amount_cents"] for row in tenant.snapshot()["entry"][before:])
        assert booked == total <= 1000
    finally:
        registry.drop(tenant)


# --- replay ----------------------------------------------------------------------------------------------------


async def test_an_episode_with_refused_splits_and_a_keyed_retry_replays_pass(registry: TenantRegistry) -> None:
    """The running totals are the tenant's own log: replay, on a fresh tenant with the task's grants, reproduces
    every decision (the split refused, the retry after a timeout counted once)."""
    import httpx

    task = load_catalog()["ledger.post-bank-charge@1"]
    assert task.spec.grants == [CHARGE.model_copy(update={"count": 1})]
    tenant = registry.create(task.spec.site, task.spec.seed)
    tenant.broker = BrokerSession(grants=tuple(task.spec.grants), mode="enforcing")
    forced = {1: FaultDecision(fault="ambiguous_after_commit", source="rule:0")}
    tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
    form = "application/x-www-form-urlencoded"
    body = "account=ACC-100+Operations&amount=30.00&currency=EUR&memo=Bank+charges"
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(registry)),
                                     base_url="http://t") as http:
            for key in ("a1", "a1", "a2", "a3"):
                headers = {TENANT_HEADER: tenant.token, IDEMPOTENCY_HEADER: key, "content-type": form}
                await http.post(ENTRIES, content=body.encode(), headers=headers)
        operations, journal, state = tenant.operations(), tenant.journal(), tenant.snapshot()
        assert [(op.status, op.repeat_of) for op in operations] == [(504, None), (303, 1), (403, None), (403, None)]
        assert operations[2].broker is not None and "30.00 EUR already granted of 50.00 EUR" in (
            operations[2].broker.reasons[0])
        verdict = judge(task.spec, task.sha256, state=state, journal=journal, operations=operations,
                        claim=Claim(success=False))
        recorded = RecordedEpisode(episode_id="e", operations=operations, journal=journal, final_state=state,
                                   verdict=verdict)
    finally:
        registry.drop(tenant)
    receipt = await replay_episode(task, recorded, registry)
    assert receipt.result == "PASS", receipt.mismatches


# A request acting on several rows at once (blind round 2: a bulk approval or price change named no one row, so a
# grant limited to objects refused it with "not a new one", and a grant without objects could not bind it).

@given(granted=st.sets(st.integers(1, 12), min_size=1, max_size=6), acted=st.sets(st.integers(1, 12), min_size=2,
                                                                                  max_size=6))
def test_pure_a_request_on_several_rows_is_allowed_iff_the_grant_covers_each(granted: set[int],
                                                                            acted: set[int]) -> None:
    grant = Grant(id="these", capability="pay", table="expense_claim", objects=sorted(granted))
    request = BrokerRequest(capability="pay", table="expense_claim", several=sorted(acted))
    decision = decide([grant], request, seq=1, revoked=frozenset(), mode="enforcing")
    assert decision.allowed == (acted <= granted)
    if not decision.allowed:
        named = decision.reasons[0]
        assert all(f"expense_claim {row}" in named.split(", not ", 1)[1] for row in acted - granted), named
        assert "a new one" not in named


def test_the_bulk_routes_name_each_row_they_act_on() -> None:
    """hrdesk's bulk approval and inventory's bulk price edit name every selected row (`several`); one row is the
    object, and a selection holding a row the site does not have names none."""
    from sites.hrdesk.governed import approve_selected_request
    from sites.inventory.governed import bulk_request

    class Form(dict[str, list[str]]):
        def get(self, key: str, default: str = "") -> str:  # type: ignore[override]
            values = super().get(key) or [default]
            return values[-1]

        def getlist(self, key: str) -> list[str]:
            return list(super().get(key) or [])

    class Row:
        def __init__(self, id: int, amount_cents: int = 100, currency: str = "EUR") -> None:
            self.id, self.amount_cents, self.currency = id, amount_cents, currency

    claims = {"X-5007": Row(7, 28900), "X-5008": Row(8, 35000)}
    products = {"SKU-1011": Row(11), "SKU-1012": Row(12)}

    def lookup(model: object, **where: str) -> Row | None:
        return claims.get(where.get("number", "")) or products.get(where.get("sku", ""))

    both = approve_selected_request(None, Form(claim=["X-5007", "X-5008"]), lookup)  # type: ignore[arg-type]
    assert both.several == [7, 8] and both.object is None and both.amount == Amount(cents=63900, currency="EUR")
    one = approve_selected_request(None, Form(claim=["X-5007"]), lookup)  # type: ignore[arg-type]
    assert one.object == 7 and one.several == []
    unknown = approve_selected_request(None, Form(claim=["X-5007", "X-9999"]), lookup)  # type: ignore[arg-type]
    assert unknown.several == [] and unknown.object is None
    priced = bulk_request(None, Form(action=["price"], sku=["SKU-1011", "SKU-1012"]), lookup)  # type: ignore[arg-type]
    assert priced is not None and priced.several == [11, 12] and priced.object is None
