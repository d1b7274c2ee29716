"""The broker's decisions (sites/kit/broker.py), pure: each grant kind by hand, and properties over generated grants
and requests (Hypothesis): no grant allows nothing, more grants never block what fewer allowed, one grant allows a
request whole, a withdrawn or expired grant allows nothing, limits hold exactly at their edge, a domain is that domain
and no longer one, and the observing mode decides as the enforcing one and blocks nothing."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tiers import examples

from computerops.core.vocabulary import BrokerMode
from sites.kit.broker import (
    Amount,
    BrokerRequest,
    Capability,
    Grant,
    RequestSeen,
    Revocation,
    address_of,
    decide,
    inserted_rows,
    own_correction,
    row_key,
    withdrawn,
)
from sites.kit.records import JournalEntry
from tasks.spec import MutationRule
from verifier.checks import check_mutations

CAPABILITIES: tuple[Capability, ...] = get_args(Capability)
MODES: tuple[BrokerMode, ...] = get_args(BrokerMode)
TABLES = ("message", "payment", "contact")
ADDRESSES = ("ana@acme.com", "bo@acme.com", "eve@evil.net", "ana@acme.com.evil.net", "x@sub.acme.com",
             "ana@acmе.com")  # the last with a Cyrillic е: another domain
DOMAINS = ("@acme.com", "@evil.net")
CURRENCIES = ("EUR", "USD")
PAYEES = ("ACC-100 Operations", "ACC-210 Harbor Freight")


def _amounts() -> st.SearchStrategy[Amount]:
    return st.builds(Amount, cents=st.integers(0, 100_000), currency=st.sampled_from(CURRENCIES))


@st.composite
def grants(draw: st.DrawFn, index: int = 0) -> Grant:
    capability = draw(st.sampled_from(CAPABILITIES))
    return Grant(
        id=f"g{index}-{draw(st.integers(0, 9))}", capability=capability, table=draw(st.sampled_from(TABLES)),
        objects=draw(st.none() | st.lists(st.integers(1, 5), max_size=3)),
        recipients=draw(st.none() | st.lists(st.sampled_from(ADDRESSES[:3] + DOMAINS), max_size=3))
        if capability == "send" else None,
        fields=draw(st.none() | st.lists(st.sampled_from(["phone", "iban", "name"]), max_size=2))
        if capability == "change" else None,
        limit=draw(st.none() | _amounts()) if capability in ("pay", "refund") else None,
        payees=draw(st.none() | st.lists(st.sampled_from(PAYEES), max_size=2)) if capability in ("pay", "refund")
        else None,
        expires_after=draw(st.none() | st.integers(0, 20)),
        revoked_by=draw(st.none() | st.just(Revocation(method="GET", path="/site/notice"))),
    )


GRANT_LISTS = st.integers(0, 4).flatmap(lambda n: st.tuples(*(grants(i) for i in range(n))).map(list))
REQUESTS = st.builds(
    BrokerRequest, capability=st.sampled_from(CAPABILITIES), table=st.sampled_from(TABLES),
    object=st.none() | st.integers(1, 6), recipients=st.lists(st.sampled_from(ADDRESSES), max_size=3),
    fields=st.lists(st.sampled_from(["phone", "iban", "name"]), max_size=2), amount=st.none() | _amounts(),
    payee=st.none() | st.sampled_from([*PAYEES, "ACC-100 operations", "ACC-100 Operations "]))
REVOKED = st.frozensets(st.sampled_from([f"g{i}-{j}" for i in range(4) for j in range(10)]), max_size=3)


@settings(max_examples=examples(400))
@given(GRANT_LISTS, REQUESTS, st.integers(1, 30), REVOKED, st.sampled_from(MODES))
def test_decisions_follow_the_rules_of_the_grants(
    grant_list: list[Grant], request: BrokerRequest, seq: int, revoked: frozenset[str], mode: BrokerMode,
) -> None:
    decision = decide(grant_list, request, seq=seq, revoked=revoked, mode=mode)
    # the same in both modes, and only the enforcing one blocks
    other = decide(grant_list, request, seq=seq, revoked=revoked, mode="observing" if mode == "enforcing" else
                   "enforcing")
    assert decision.allowed == other.allowed and decision.grant == other.grant
    assert decision.blocked == (mode == "enforcing" and not decision.allowed)
    if decision.allowed:
        grant = next(g for g in grant_list if g.id == decision.grant)
        # one grant allows the request whole: alone, it still does; and it is neither withdrawn nor expired
        assert decide([grant], request, seq=seq, revoked=revoked, mode=mode).allowed
        assert grant.id not in revoked and (grant.expires_after is None or seq <= grant.expires_after)
        assert (grant.capability, grant.table) == (request.capability, request.table)
        if grant.limit is not None:
            assert request.amount is not None and request.amount.currency == grant.limit.currency
            assert request.amount.cents <= grant.limit.cents
        if grant.objects is not None:
            assert request.object in grant.objects
        if grant.fields is not None:
            assert set(request.fields) <= set(grant.fields)
        if grant.recipients is not None:
            assert request.recipients and all(address_of(r) is not None for r in request.recipients)
        if grant.payees is not None:
            assert request.payee in grant.payees  # exactly as the site names it: no case or space folded
    else:
        assert decision.grant is None and decision.reasons
    # more grants never block what fewer allowed; without grants nothing is allowed
    assert not decide([], request, seq=seq, revoked=revoked, mode=mode).allowed
    for cut in range(len(grant_list)):
        if decide(grant_list[:cut], request, seq=seq, revoked=revoked, mode=mode).allowed:
            assert decision.allowed


def _send(*to: str) -> BrokerRequest:
    return BrokerRequest(capability="send", table="message", recipients=list(to))


def _decide(grant: Grant, request: BrokerRequest, seq: int = 1, revoked: frozenset[str] = frozenset()) -> bool:
    return decide([grant], request, seq=seq, revoked=revoked, mode="enforcing").allowed


def test_a_send_grant_reaches_its_addresses_and_its_domain_and_nothing_that_only_looks_like_them() -> None:
    grant = Grant(id="mail", capability="send", table="message", recipients=["bo@acme.com", "@partner.org"])
    assert _decide(grant, _send("BO@Acme.com"))
    assert _decide(grant, _send("anyone@partner.org", "bo@acme.com"))
    for outside in ("ana@acme.com", "bo@acme.com.evil.net", "x@sub.partner.org", "x@partner.org.evil",
                    "x@evilpartner.org", "bo@acmе.com", "bo@acme.com, eve@evil.net", "bo", ""):
        assert not _decide(grant, _send(outside)), outside
    kelvin = Grant(id="k", capability="send", table="message", recipients=["kim@acme.com", "@kit.org"])
    assert _decide(kelvin, _send("KIM@acme.com")) and _decide(kelvin, _send("x@KIT.org"))
    for folded in ("\u212aim@acme.com", "x@\u212ait.org"):  # the Kelvin sign, which Unicode folds to k
        assert not _decide(kelvin, _send(folded)), folded
    assert not _decide(grant, _send("bo@acme.com", "eve@evil.net"))  # one recipient outside blocks the whole send
    assert not _decide(grant, _send())  # a send to nobody the grant names
    reasons = decide([grant], _send("eve@evil.net"), seq=1, revoked=frozenset(), mode="enforcing").reasons
    assert reasons == ["grant mail does not reach eve@evil.net"]


def test_a_payment_grant_holds_at_its_limit_and_in_its_currency_only() -> None:
    grant = Grant(id="pay-rent", capability="pay", table="payment", objects=[7],
                  limit=Amount(cents=120_000, currency="EUR"))

    def pay(cents: int, currency: str = "EUR", payee: int | None = 7) -> BrokerRequest:
        return BrokerRequest(capability="pay", table="payment", object=payee,
                             amount=Amount(cents=cents, currency=currency))
    assert _decide(grant, pay(120_000)) and _decide(grant, pay(0))
    assert not _decide(grant, pay(120_001))
    assert not _decide(grant, pay(100, "USD"))
    assert not _decide(grant, pay(100, payee=8)) and not _decide(grant, pay(100, payee=None))
    assert not _decide(grant, BrokerRequest(capability="pay", table="payment", object=7))  # amount not known
    assert not _decide(grant, BrokerRequest(capability="refund", table="payment", object=7,
                                            amount=Amount(cents=1, currency="EUR")))  # another capability


def test_a_payment_grant_naming_payees_pays_them_only() -> None:
    grant = Grant(id="fee", capability="pay", table="entry", payees=["ACC-210 Harbor Freight"],
                  limit=Amount(cents=2000, currency="EUR"))

    def pay(payee: str | None) -> BrokerRequest:
        return BrokerRequest(capability="pay", table="entry", payee=payee, amount=Amount(cents=1200, currency="EUR"))
    assert _decide(grant, pay("ACC-210 Harbor Freight"))
    for other in ("ACC-300 Suspense", "ACC-210 harbor freight", " ACC-210 Harbor Freight", None):
        assert not _decide(grant, pay(other)), other
    assert decide([grant], pay("ACC-300 Suspense"), seq=1, revoked=frozenset(), mode="enforcing").reasons == [
        "grant fee pays ACC-210 Harbor Freight, not ACC-300 Suspense"]
    with pytest.raises(ValueError, match="payees limit only a pay or refund grant"):
        Grant(id="x", capability="send", table="message", payees=["ACC-1"])


def test_a_change_grant_covers_its_fields_and_a_delete_grant_its_rows() -> None:
    phone = Grant(id="phone", capability="change", table="contact", objects=[4], fields=["phone"])
    assert _decide(phone, BrokerRequest(capability="change", table="contact", object=4, fields=["phone"]))
    assert not _decide(phone, BrokerRequest(capability="change", table="contact", object=4, fields=["phone", "iban"]))
    assert not _decide(phone, BrokerRequest(capability="change", table="contact", object=5, fields=["phone"]))
    delete = Grant(id="drafts", capability="delete", table="message", objects=[3, 9])
    assert _decide(delete, BrokerRequest(capability="delete", table="message", object=9))
    assert not _decide(delete, BrokerRequest(capability="delete", table="message", object=2))
    assert not _decide(delete, BrokerRequest(capability="delete", table="contact", object=9))


def test_a_grant_expires_after_its_operation_and_a_trusted_event_withdraws_it() -> None:
    notice = Revocation(method="GET", path="/webmail/notices/2")
    grant = Grant(id="export", capability="export", table="contact", expires_after=10, revoked_by=notice)
    request = BrokerRequest(capability="export", table="contact")
    assert _decide(grant, request, seq=10) and not _decide(grant, request, seq=11)
    earlier = [RequestSeen("GET", "/webmail/notices/1", 200), RequestSeen("POST", "/webmail/notices/2", 303),
               RequestSeen("GET", "/webmail/notices/2", 404)]
    assert withdrawn([grant], earlier) == frozenset()  # another page, another method, a page that failed
    revoked = withdrawn([grant], [*earlier, RequestSeen("GET", "/webmail/notices/2", 200)])
    assert revoked == {"export"} and not _decide(grant, request, seq=5, revoked=revoked)
    assert decide([grant], request, seq=5, revoked=revoked, mode="enforcing").reasons == ["grant export was withdrawn"]


def _change(table: str, key: int, change: str, after: dict[str, object] | None, seq: int = 1) -> JournalEntry:
    return JournalEntry(seq=seq, operation=seq, logical_time=seq, table=table, key={"id": key}, change=change,
                        before=None if change == "insert" else {"id": key}, after=after)


def test_a_change_or_deletion_of_a_row_the_episode_inserted_is_an_own_correction_whatever_the_grants() -> None:
    """A typo in the contact the agent has just added, fixed on its page: no grant needed, as the verdict allows it;
    a row it did not insert, another table's row of that id, a send of its own draft and a new row are not."""
    journal = [_change("contact", 9, "insert", {"id": 9, "phone": "+44 161 555 0174"}),
               _change("contact", 3, "update", {"id": 3}, seq=2), _change("message", 4, "insert", {"id": 4}, seq=3)]
    inserted = inserted_rows(journal)
    assert inserted == inserted_rows(reversed(journal)) and len(inserted) == 2
    fix = BrokerRequest(capability="change", table="contact", object=9, fields=["phone"])
    phone = Grant(id="phone", capability="change", table="contact", objects=[3], fields=["phone"],
                  revoked_by=Revocation(method="POST", path="/webmail/contacts/3"))
    for grants, revoked in (([], frozenset[str]()), ([phone], frozenset({"phone"}))):  # none, or one withdrawn
        decision = decide(grants, fix, seq=4, revoked=revoked, mode="enforcing", inserted=inserted)
        assert decision.allowed and decision.own_correction and decision.grant is None
    assert own_correction(BrokerRequest(capability="delete", table="contact", object=9), inserted)
    for other in (BrokerRequest(capability="change", table="contact", object=3, fields=["phone"]),
                  BrokerRequest(capability="change", table="payable", object=9, fields=["total_cents"]),
                  BrokerRequest(capability="send", table="message", object=4, recipients=["ana@acme.com"]),
                  BrokerRequest(capability="change", table="contact", fields=["phone"])):
        assert not own_correction(other, inserted)
        assert decide([], other, seq=4, revoked=frozenset(), mode="enforcing", inserted=inserted).blocked
    # a task that sets own_corrections: false (the session passes no inserted rows): only a grant allows it
    refused = decide([phone], fix, seq=4, revoked=frozenset(), mode="enforcing")
    assert refused.blocked and not refused.own_correction
    # one definition: the verdict takes the same rows for the agent's own (`_own_correction`)
    rules = [MutationRule(table="contact", change=["insert"])]
    assert check_mutations(rules, [journal[0], _change("contact", 9, "update", {"id": 9, "phone": "x"}, 2)]).passed
    assert not check_mutations(rules, [journal[0], journal[1]]).passed


def test_an_own_correction_keeps_the_decisions_dump_as_before_unless_it_allowed_one() -> None:
    """A decision a grant made dumps as it did before own corrections (recorded episodes replay unchanged)."""
    plain = decide([], _send("ana@acme.com"), seq=1, revoked=frozenset(), mode="observing", inserted=frozenset())
    assert "own_correction" not in plain.model_dump(mode="json")
    fix = BrokerRequest(capability="change", table="contact", object=9, fields=["phone"])
    own = decide([], fix, seq=2, revoked=frozenset(), mode="enforcing",
                 inserted=frozenset({row_key("contact", {"id": 9})}))
    assert own.model_dump(mode="json")["own_correction"] is True


def test_no_grant_of_the_capability_says_so_and_observing_blocks_nothing() -> None:
    decision = decide([], _send("ana@acme.com"), seq=1, revoked=frozenset(), mode="observing")
    assert not decision.allowed and not decision.blocked
    assert decision.reasons == ["no grant lets this user send a message"]
    assert decide([], _send("ana@acme.com"), seq=1, revoked=frozenset(), mode="enforcing").blocked


@pytest.mark.parametrize("bad", [
    {"id": "x", "capability": "pay", "table": "payment", "recipients": ["a@b.co"]},
    {"id": "x", "capability": "send", "table": "message", "limit": {"cents": 1, "currency": "EUR"}},
    {"id": "x", "capability": "delete", "table": "message", "fields": ["phone"]},
    {"id": "x", "capability": "send", "table": "message", "recipients": ["not an address"]},
    {"id": "x", "capability": "pay", "table": "payment", "limit": {"cents": -1, "currency": "EUR"}},
    {"id": "x", "capability": "pay", "table": "payment", "limit": {"cents": 1, "currency": "euro"}},
    {"id": "X Y", "capability": "pay", "table": "payment"},
    {"id": "x", "capability": "transfer", "table": "payment"},
])
def test_a_malformed_grant_is_refused_when_the_task_file_is_read(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Grant.model_validate(bad)


def test_a_row_a_governed_request_inserted_stays_governed_and_is_no_own_correction() -> None:
    """A payment inserted within a grant's limit cannot be raised past the limit as an "own correction": only rows
    inserted through a route no grant governs are the agent's to correct (`sites.kit.oplog._corrigible`)."""
    import asyncio
    from types import SimpleNamespace

    from sites.kit.oplog import _corrigible, in_place

    journal = [SimpleNamespace(table="entry", key={"id": 7}, change="insert", operation=3),
               SimpleNamespace(table="contact", key={"id": 9}, change="insert", operation=5)]
    operations = [SimpleNamespace(seq=3, broker=object()), SimpleNamespace(seq=5, broker=None)]
    tenant = SimpleNamespace(journal=lambda: journal, operations=lambda: operations)
    for table, row, corrigible in (("entry", 7, False), ("contact", 9, True)):
        request = BrokerRequest(capability="change", table=table, object=row)
        rows = asyncio.run(_corrigible(tenant, request, in_place))  # type: ignore[arg-type]
        assert own_correction(request, rows) is corrigible, table


# A grant naming the values a field may take (blind round 2: an approval grant let the decision be flipped).

_VALUE = st.sampled_from(["approved", "rejected", "cancelled", "submitted", "Approved", "approved "])


@settings(max_examples=examples(200), deadline=None)
@given(allowed=st.lists(_VALUE, min_size=1, max_size=3, unique=True), written=st.one_of(st.none(), _VALUE),
       other=st.booleans())
def test_a_change_is_allowed_iff_each_named_field_takes_a_named_value(allowed: list[str], written: str | None,
                                                                      other: bool) -> None:
    grant = Grant(id="g", capability="change", table="leave_request", fields=["status", "note"],
                  values={"status": allowed})
    fields = ["note"] if other else ["status"]
    request = BrokerRequest(capability="change", table="leave_request", object=1, fields=fields,
                            values={} if written is None else {fields[0]: written})
    decision = decide([grant], request, seq=1, revoked=frozenset(), mode="enforcing")
    # A field the grant names no values for takes any value (exactly: "Approved" and "approved " are other values).
    assert decision.allowed == (other or written in allowed), decision
    if not decision.allowed:
        assert decision.reasons == [f"grant g allows leave_request status only as {', '.join(allowed)}; " + (
            "the request's value is not known" if written is None else f"the request writes {written}")]


def test_values_limit_only_a_change_grant_and_only_fields_it_allows() -> None:
    with pytest.raises(ValidationError, match="values limit only a change grant"):
        Grant(id="g", capability="send", table="message", values={"status": ["sent"]})
    with pytest.raises(ValidationError, match="values name field\\(s\\) status its fields do not allow"):
        Grant(id="g", capability="change", table="leave_request", fields=["note"], values={"status": ["approved"]})
    assert Grant(id="g", capability="change", table="leave_request", values={"status": ["approved"]}).values
    unnamed = BrokerRequest(capability="change", table="leave_request", object=1, fields=["status"])
    assert "values" not in unnamed.model_dump(), "a request without values serialises as before"
