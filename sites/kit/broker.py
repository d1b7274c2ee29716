"""The broker: the sites' policy enforcement point for effectful requests (docs/security.md).

A site declares which of its routes a grant governs (`GovernedRoute`: sending mail, paying or refunding, deleting,
changing a contact's phone or a payee's bank account, exporting data) and what each request asks for
(`BrokerRequest`: the capability, the object, the recipients, the fields, the amount). The operation log asks the
broker before the handler runs (sites/kit/oplog.py); `decide` answers from the episode's grants alone, which are
typed in the task file and the same for a clean task and its attacked twin:

- a grant allows a request when its capability and table are the request's, it is neither expired (an operation
  after `expires_after`) nor revoked (a trusted page event: `Revocation`), and every limit it sets holds: the
  object is one of its objects, every recipient one of its recipients (an address, or every address of a domain),
  every field one of its fields, the amount in its currency and, with what the grant already granted to the same
  payee (all its objects together on a route that names none) in that currency, at most its limit, and the effects
  it already granted fewer than its `count`;
- one grant must allow the whole request (grants are not combined), and without such a grant the request is not
  allowed, unless it is an own correction: a change or deletion of a row the episode itself inserted (`own_correction`,
  the verifier's rule too: `TaskSpec.own_corrections`), which the task allows unless it sets `own_corrections: false`.

Limits hold over the episode (`granted`): an amount limit caps the sum of the amounts a grant granted per payee (the
request's `payee`; on a route that names none, over all the grant's objects together) and currency, and `count` caps the
number of effects it granted. What a grant granted is what committed under it: an operation it allowed (or, in the
observing mode, one that went through over its limit: `BrokerDecision.exceeded`) with journal rows. A refused or blocked
request, one that committed nothing (a fault before the handler, a false success) and a repeat under the same
idempotency key (answered from the log, sites/kit/idempotency.py, with no decision) add nothing, so a retry after a
fault counts once.

In the `enforcing` mode a request that is not allowed is blocked: the handler never runs, nothing commits, the agent
sees a refusal page. In the `observing` mode nothing is blocked and the decision records what would have been. Every
decision is kept on its operation (`Operation.broker`), never as a mutation, and replay recomputes it from the same
grants and the operations before it, so it reproduces every decision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from computerops.core.vocabulary import BrokerMode

Capability = Literal["send", "pay", "refund", "delete", "change", "export"]
"""What a grant lets the user do; each governed route asks for one."""

_ID = r"^[a-z0-9][a-z0-9-]{0,63}$"
_CURRENCY = r"^[A-Z]{3}$"


class Amount(BaseModel):
    """An amount of money in one currency, in cents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cents: int = Field(ge=0)
    currency: str = Field(pattern=_CURRENCY)


class Revocation(BaseModel):
    """A trusted page event that withdraws a grant: the first operation that requests `method` `path` (a page the
    site serves as a trusted notice, such as an administrator's withdrawal of a permission) and succeeds. From the
    operation after it on, the grant allows nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["GET", "POST"]
    path: str = Field(pattern=r"^/[^\s?#]*$")


StoredValue = Annotated[str, Field(coerce_numbers_to_str=True)]
"""A value a field may be changed to, as text: a number a task's template renders (a price in cents) is read as its
digits, as a request carries it."""


class Grant(BaseModel):
    """What the episode's user may do through one capability (the task file's `grants`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=_ID)
    capability: Capability
    table: str = Field(pattern=r"^[a-z_]{1,64}$")
    """The kind of object the capability acts on (the site's table: message, payment, contact...)."""
    objects: list[int] | None = None
    """The rows it covers; None: any."""
    recipients: list[str] | None = None
    """For `send`: the addresses it may reach (`ana@example.com`), or every address of a domain (`@example.com`);
    None: any. A send that names no recipient is not allowed by a grant that names them."""
    fields: list[str] | None = None
    """For `change`: the fields it may change; None: any."""
    values: dict[str, list[StoredValue]] | None = Field(default=None, exclude_if=lambda value: value is None)
    """For `change`: the values a field may be changed to, as the site stores them, written as text (`{status:
    [approved]}`: the request may be approved, not rejected; `{price_cents: ["1990"]}`); a field it does not name
    takes any value. A request to a route that does
    not know the value before its handler runs is not allowed by a grant that names values for its field."""
    limit: Amount | None = None
    """For `pay` and `refund`: the largest amount, and its currency, over the episode: the amounts it grants to one
    payee (on a route that names none, to all its objects together) are summed, and a request that would take the sum
    past it is refused."""
    payees: list[str] | None = None
    """For `pay` and `refund`: who may be paid (the site's name for the account credited, exactly as its form posts
    it, e.g. `ACC-210 Harbor Freight`); None: anyone. A request that names no payee is not allowed by a grant that
    names them."""
    count: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)
    """The most effects it grants over the episode (1: one payment, one message, one change); None: any number. An
    effect is a request it allowed that committed."""
    expires_after: int | None = Field(default=None, ge=0)
    """The last operation (by its number in the episode) it covers; None: the whole episode."""
    revoked_by: Revocation | None = None

    @model_validator(mode="after")
    def _limits_fit_the_capability(self) -> Grant:
        if self.recipients is not None and self.capability != "send":
            raise ValueError(f"grant {self.id}: recipients limit only a send grant")
        if self.limit is not None and self.capability not in ("pay", "refund"):
            raise ValueError(f"grant {self.id}: an amount limits only a pay or refund grant")
        if self.payees is not None and self.capability not in ("pay", "refund"):
            raise ValueError(f"grant {self.id}: payees limit only a pay or refund grant")
        if self.fields is not None and self.capability != "change":
            raise ValueError(f"grant {self.id}: fields limit only a change grant")
        if self.values is not None and self.capability != "change":
            raise ValueError(f"grant {self.id}: values limit only a change grant")
        outside = sorted(set(self.values or {}) - set(self.fields if self.fields is not None else self.values or {}))
        if outside:
            raise ValueError(f"grant {self.id}: values name field(s) {', '.join(outside)} its fields do not allow")
        for recipient in self.recipients or []:
            if address_of(recipient) is None and domain_of(recipient) is None:
                raise ValueError(f"grant {self.id}: {recipient!r} is neither an address nor @domain")
        return self


class BrokerRequest(BaseModel):
    """What one request to a governed route asks the broker for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    capability: Capability
    table: str
    object: int | None = None
    """The row acted on; None for a new one (a message composed from scratch, a new payment) or for several."""
    several: list[int] = Field(default_factory=list, exclude_if=lambda value: not value)
    """The rows acted on when one request acts on several (a bulk approval or price change: `object` None), every
    one known; a grant limited to `objects` allows the request only when it covers each of them. Empty: one row, a
    new one, or a selection holding a row the site does not have (no grant limited to objects allows that)."""
    recipients: list[str] = Field(default_factory=list)
    fields: list[str] = Field(default_factory=list)
    values: dict[str, str] = Field(default_factory=dict, exclude_if=lambda value: not value)
    """For a `change`: the value each of its fields is changed to, as the site will store it, where the route knows it
    before the handler runs (a leave decision's status); empty: not known."""
    amount: Amount | None = None
    payee: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """For a payment: the account it credits, as the site names it (None: not named, or a route without one)."""


class BrokerDecision(BaseModel):
    """The broker's answer to one request, kept on its operation (`Operation.broker`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request: BrokerRequest
    mode: BrokerMode
    allowed: bool
    """Whether a grant allows the request (the same in both modes)."""
    grant: str | None = None
    """The grant that allows it (the first, in the task file's order)."""
    own_correction: bool = Field(default=False, exclude_if=lambda value: not value)
    """Allowed, with no grant that allows it, as a correction of a row the episode inserted (`own_correction`)."""
    reasons: list[str] = Field(default_factory=list)
    """Why no grant allows it: one line per grant of its capability and table, or that there is none."""
    exceeded: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The grant that would allow it but for what it already granted in the episode (its running total or its count
    of effects, named in `reasons`): the first such grant, in the task file's order. Set in both modes; in the
    observing mode the request goes through and counts toward that grant's total."""

    @property
    def blocked(self) -> bool:
        """The request was stopped: not allowed, in the enforcing mode."""
        return self.mode == "enforcing" and not self.allowed


def amount_of(cents: int | None, currency: str) -> Amount | None:
    """The amount a request asks for: `cents` (as the site's handler parsed them) in `currency`; None when either
    cannot be read (no amount, or not a three-letter code), which an amount-limited grant refuses."""
    if cents is None or cents < 0 or re.fullmatch(_CURRENCY, currency) is None:
        return None
    return Amount(cents=cents, currency=currency)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
"""Case is folded for ASCII letters only: Unicode's folding makes the Kelvin sign a `k`, so `\u212aim@acme.com`
would pass for `kim@acme.com` although a mail server keeps it a mailbox of its own."""


def address_of(text: str) -> str | None:
    """`text` as a mail address compared without ASCII case (`Ana@Example.com` → `ana@example.com`), white space at
    its ends dropped as the sites' forms drop it; None when it is not one address (no `@`, two of them, an empty
    part, white space or a control character inside)."""
    value = text.strip().translate(_ASCII_LOWER)
    local, at, domain = value.partition("@")
    if not at or not local or not domain or "@" in domain or not _DOMAIN.fullmatch(domain):
        return None
    if any(c.isspace() or not c.isprintable() for c in local):
        return None
    return value


def domain_of(text: str) -> str | None:
    """The domain of a grant's `@domain` entry, without case; None when `text` is not one."""
    value = text.strip().translate(_ASCII_LOWER)
    if not value.startswith("@") or not _DOMAIN.fullmatch(value[1:]):
        return None
    return value[1:]


_DOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+")


def _reaches(grant: Grant, recipient: str) -> bool:
    address = address_of(recipient)
    if address is None:
        return False
    for allowed in grant.recipients or []:
        if address_of(allowed) == address:
            return True
        domain = domain_of(allowed)
        if domain is not None and address.rpartition("@")[2] == domain:  # the whole domain, never a longer one
            return True
    return False


def _refusal(grant: Grant, request: BrokerRequest, seq: int, revoked: frozenset[str], granted: Granted) -> str | None:
    """Why `grant` does not allow `request` (None when it does)."""
    if grant.id in revoked:
        return f"grant {grant.id} was withdrawn"
    if grant.expires_after is not None and seq > grant.expires_after:
        return f"grant {grant.id} expired after operation {grant.expires_after}"
    if grant.objects is not None:
        rows: list[int | None] = [*request.several] or [request.object]
        beyond = [row for row in rows if row not in grant.objects]
        if beyond:
            which = ("a new one" if beyond == [None] else
                     ", ".join(f"{request.table} {row}" for row in beyond if row is not None))
            return f"grant {grant.id} covers {request.table} {', '.join(map(str, grant.objects))}, not {which}"
    if grant.recipients is not None:
        if not request.recipients:
            return f"grant {grant.id} names its recipients, and the request names none"
        outside = [r for r in request.recipients if not _reaches(grant, r)]
        if outside:
            return f"grant {grant.id} does not reach {', '.join(outside)}"
    if grant.fields is not None:
        outside = sorted(set(request.fields) - set(grant.fields))
        if outside:
            return f"grant {grant.id} does not cover the field(s) {', '.join(outside)}"
    for name, allowed in (grant.values or {}).items():
        if name in request.fields and request.values.get(name) not in allowed:
            value = request.values.get(name)
            wanted = "the request's value is not known" if value is None else f"the request writes {value}"
            return f"grant {grant.id} allows {request.table} {name} only as {', '.join(allowed)}; {wanted}"
    if grant.payees is not None and request.payee not in grant.payees:
        return f"grant {grant.id} pays {', '.join(grant.payees)}, not {request.payee or 'an unnamed payee'}"
    if grant.limit is not None:
        amount = request.amount
        if amount is None:
            return (f"grant {grant.id} limits the amount, and the request's amount is not known (an unknown row, "
                    f"or rows in several currencies at once)")
        if amount.currency != grant.limit.currency:
            return f"grant {grant.id} is in {grant.limit.currency}, the request in {amount.currency}"
        if amount.cents > grant.limit.cents and not granted.cents(grant, request):
            return f"grant {grant.id} allows at most {_money(grant.limit)}, the request is for {_money(amount)}"
    return None


def _over_episode(grant: Grant, request: BrokerRequest, granted: Granted) -> str | None:
    """Why `grant`, which allows `request` on its own, does not allow it after what it already granted in the
    episode (None when it does): the request would take its running total past its limit, or it already granted
    its count of effects."""
    if grant.limit is not None and request.amount is not None:
        already = granted.cents(grant, request)
        total = already + request.amount.cents
        if already and total > grant.limit.cents:
            currency = grant.limit.currency
            return (f"grant {grant.id} allows at most {_money(grant.limit)} over the episode{_payee_words(request)}: "
                    f"{_money(Amount(cents=already, currency=currency))} already granted of "
                    f"{_money(grant.limit)}, and the request for {_money(request.amount)} would make "
                    f"{_money(Amount(cents=total, currency=currency))}")
    if grant.count is not None:
        effects = granted.effects.get(grant.id, 0)
        if effects >= grant.count:
            return (f"grant {grant.id} allows {_effects(grant.count)} over the episode: {effects} already granted "
                    f"of {grant.count}")
    return None


def _effects(count: int) -> str:
    return "one effect" if count == 1 else f"{count} effects"


def _payee_words(request: BrokerRequest) -> str:
    if request.payee is not None:
        return f" to {request.payee}"
    if request.object is not None:
        return f" on {request.table} {request.object}"
    return ""


def _money(amount: Amount) -> str:
    units, cents = divmod(amount.cents, 100)
    return f"{units}.{cents:02d} {amount.currency}"


PayeeKey = tuple[str, str | None, str]
"""What an amount limit sums over: the grant, the payee (the request's `payee`; None on a route that names none) and
the currency. The objects a grant covers share its limit: a goodwill grant of at most 10.00 EUR with no `objects`
grants 10.00 EUR in all, not 10.00 EUR on every order (a grant per object gives each its own)."""


def payee_key(grant: Grant, request: BrokerRequest, currency: str) -> PayeeKey:
    """The running total `request` counts toward under `grant`: the grant's, to its payee, in `currency`."""
    return grant.id, request.payee, currency


@dataclass(frozen=True)
class Granted:
    """What the grants already granted in the episode: the amount per grant, payee and currency, and
    the number of effects per grant (`granted`)."""

    amounts: Mapping[PayeeKey, int] = field(default_factory=dict)
    effects: Mapping[str, int] = field(default_factory=dict)

    def cents(self, grant: Grant, request: BrokerRequest) -> int:
        """What `grant` already granted to `request`'s payee (all its objects on a route without one), in the
        request's currency (0 without an amount)."""
        if request.amount is None:
            return 0
        return self.amounts.get(payee_key(grant, request, request.amount.currency), 0)


NOTHING_GRANTED = Granted()


def granted(grants: Sequence[Grant], earlier: Iterable[tuple[BrokerDecision | None, bool]]) -> Granted:
    """The running totals of the episode's `earlier` operations (each its broker decision and whether it committed:
    journal rows): every committed request a grant allowed, or went through over its limit in the observing mode
    (`BrokerDecision.exceeded`), counts once toward that grant. A blocked or refused request, one that committed
    nothing, and a repeat under an idempotency key (no decision of its own) count nothing."""
    by_id = {grant.id: grant for grant in grants}
    amounts: dict[PayeeKey, int] = {}
    effects: dict[str, int] = {}
    for decision, committed in earlier:
        if decision is None or not committed:
            continue
        grant = by_id.get(decision.grant or decision.exceeded or "")
        if grant is None:
            continue
        effects[grant.id] = effects.get(grant.id, 0) + 1
        amount = decision.request.amount
        if amount is not None:
            key = payee_key(grant, decision.request, amount.currency)
            amounts[key] = amounts.get(key, 0) + amount.cents
    return Granted(amounts=amounts, effects=effects)


def tallied(grants: Sequence[Grant], request: BrokerRequest) -> bool:
    """Whether a decision on `request` depends on what was granted before it (a grant of its capability and table
    with an amount limit or a count): only then are the earlier operations read."""
    return any(g.capability == request.capability and g.table == request.table
               and (g.limit is not None or g.count is not None) for g in grants)


RowKey = tuple[str, str]
"""A row as own corrections name it: its table and its primary key (`row_key`)."""


class RowChange(Protocol):
    """What own corrections read of a change the episode made (a `sites.kit.records.JournalEntry`)."""

    @property
    def table(self) -> str: ...

    @property
    def key(self) -> Mapping[str, object]: ...

    @property
    def change(self) -> str: ...


def row_key(table: str, key: Mapping[str, object]) -> RowKey:
    """The row of `table` with this primary key (`{"id": 7}`), the same however the mapping is ordered."""
    return table, repr(sorted(key.items()))


def inserted_rows(changes: Iterable[RowChange]) -> frozenset[RowKey]:
    """The rows the episode itself inserted, among its `changes` (the journal so far): the rows it may correct. One
    definition for the broker (`own_correction`) and the verifier (`verifier.checks.check_mutations`)."""
    return frozenset(row_key(c.table, c.key) for c in changes if c.change == "insert")


CORRECTIONS: frozenset[Capability] = frozenset({"change", "delete"})
"""The capabilities whose request on a row the episode inserted is an own correction."""


def own_correction(request: BrokerRequest, inserted: frozenset[RowKey]) -> bool:
    """The request changes or deletes a row the episode inserted (its object, the row's `id`, among `inserted`): the
    agent correcting its own write (a typo in the contact or the payable record it has just added), allowed whatever
    the grants, as the verdict allows it (`TaskSpec.own_corrections`). It gains nothing a grant withholds: `inserted`
    holds only rows inserted through a route no grant governs (`sites.kit.oplog._corrigible`: a new contact, a new
    payable record), so the agent could have written those values in the first place, and a row a governed request
    inserted (a payment within a limit) stays governed; a send of its own draft is a `send`, never a correction."""
    return (request.capability in CORRECTIONS and request.object is not None
            and row_key(request.table, {"id": request.object}) in inserted)


def decide(grants: Sequence[Grant], request: BrokerRequest, *, seq: int, revoked: frozenset[str],
           mode: BrokerMode, inserted: frozenset[RowKey] | None = None,
           already: Granted = NOTHING_GRANTED) -> BrokerDecision:
    """The broker's decision on `request`, the operation numbered `seq`, given the grants withdrawn before it, the
    rows the episode inserted before it (`inserted_rows`; None: the task allows no own correction) and what the
    grants already granted in the episode (`granted`)."""
    relevant = [g for g in grants if g.capability == request.capability and g.table == request.table]
    reasons: list[str] = []
    exceeded: str | None = None
    for grant in relevant:
        refusal = _refusal(grant, request, seq, revoked, already)
        if refusal is None:
            refusal = _over_episode(grant, request, already)
            if refusal is None:
                return BrokerDecision(request=request, mode=mode, allowed=True, grant=grant.id)
            exceeded = exceeded or grant.id
        reasons.append(refusal)
    if inserted is not None and own_correction(request, inserted):
        return BrokerDecision(request=request, mode=mode, allowed=True, own_correction=True)
    if not relevant:
        reasons.append(f"no grant lets this user {request.capability} a {request.table}")
    return BrokerDecision(request=request, mode=mode, allowed=False, reasons=reasons, exceeded=exceeded)


@dataclass(frozen=True)
class RequestSeen:
    """What revocation needs of an earlier operation."""

    method: str
    path: str
    status: int


def withdrawn(grants: Iterable[Grant], earlier: Iterable[RequestSeen]) -> frozenset[str]:
    """The grants a trusted page event withdrew among the `earlier` operations (one that succeeded: 2xx or 3xx)."""
    seen = {(o.method, o.path) for o in earlier if 200 <= o.status < 400}
    return frozenset(g.id for g in grants if g.revoked_by is not None
                     and (g.revoked_by.method, g.revoked_by.path) in seen)


@dataclass(frozen=True)
class BrokerSession:
    """The broker of one episode's tenant: its grants (the task's), its mode (the run's arm) and whether it allows the
    agent's corrections of rows the episode inserted (the task's `own_corrections`: `own_correction`)."""

    grants: tuple[Grant, ...]
    mode: BrokerMode
    own_corrections: bool = True
