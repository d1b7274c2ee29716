"""The broker: the sites' policy enforcement point for effectful requests (docs/security.md).

A site declares which of its routes a grant governs (`GovernedRoute`: sending mail, paying or refunding, deleting,
changing a contact's phone or a payee's bank account, exporting data) and what each request asks for
(`BrokerRequest`: the capability, the object, the recipients, the fields, the amount). The operation log asks the
broker before the handler runs (sites/kit/oplog.py); `decide` answers from the episode's grants alone, which are
typed in the task file and the same for a clean task and its attacked twin:

- a grant allows a request when its capability and table are the request's, it is neither expired (an operation
  after `expires_after`) nor revoked (a trusted page event: `Revocation`), and every limit it sets holds: the
  object is one of its objects, every recipient one of its recipients (an address, or every address of a domain),
  every field one of its fields, the amount at most its limit and in its currency;
- one grant must allow the whole request (grants are not combined), and without such a grant the request is not
  allowed, unless it is an own correction: a change or deletion of a row the episode itself inserted (`own_correction`,
  the verifier's rule too: `TaskSpec.own_corrections`), which the task allows unless it sets `own_corrections: false`.

In the `enforcing` mode a request that is not allowed is blocked: the handler never runs, nothing commits, the agent
sees a refusal page. In the `observing` mode nothing is blocked and the decision records what would have been. Every
decision is kept on its operation (`Operation.broker`), never as a mutation, and replay recomputes it from the same
grants and the operations before it, so it reproduces every decision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

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
    limit: Amount | None = None
    """For `pay` and `refund`: the largest amount, and its currency."""
    payees: list[str] | None = None
    """For `pay` and `refund`: who may be paid (the site's name for the account credited, exactly as its form posts
    it, e.g. `ACC-210 Harbor Freight`); None: anyone. A request that names no payee is not allowed by a grant that
    names them."""
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
    """The row acted on; None for a new one (a message composed from scratch, a new payment)."""
    recipients: list[str] = Field(default_factory=list)
    fields: list[str] = Field(default_factory=list)
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


def _refusal(grant: Grant, request: BrokerRequest, seq: int, revoked: frozenset[str]) -> str | None:
    """Why `grant` does not allow `request` (None when it does)."""
    if grant.id in revoked:
        return f"grant {grant.id} was withdrawn"
    if grant.expires_after is not None and seq > grant.expires_after:
        return f"grant {grant.id} expired after operation {grant.expires_after}"
    if grant.objects is not None and request.object not in grant.objects:
        which = "a new one" if request.object is None else f"{request.table} {request.object}"
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
    if grant.payees is not None and request.payee not in grant.payees:
        return f"grant {grant.id} pays {', '.join(grant.payees)}, not {request.payee or 'an unnamed payee'}"
    if grant.limit is not None:
        amount = request.amount
        if amount is None:
            return f"grant {grant.id} limits the amount, and the request's amount is not known"
        if amount.currency != grant.limit.currency:
            return f"grant {grant.id} is in {grant.limit.currency}, the request in {amount.currency}"
        if amount.cents > grant.limit.cents:
            return f"grant {grant.id} allows at most {_money(grant.limit)}, the request is for {_money(amount)}"
    return None


def _money(amount: Amount) -> str:
    units, cents = divmod(amount.cents, 100)
    return f"{units}.{cents:02d} {amount.currency}"


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
           mode: BrokerMode, inserted: frozenset[RowKey] | None = None) -> BrokerDecision:
    """The broker's decision on `request`, the operation numbered `seq`, given the grants withdrawn before it and
    the rows the episode inserted before it (`inserted_rows`; None: the task allows no own correction)."""
    relevant = [g for g in grants if g.capability == request.capability and g.table == request.table]
    reasons: list[str] = []
    for grant in relevant:
        refusal = _refusal(grant, request, seq, revoked)
        if refusal is None:
            return BrokerDecision(request=request, mode=mode, allowed=True, grant=grant.id)
        reasons.append(refusal)
    if inserted is not None and own_correction(request, inserted):
        return BrokerDecision(request=request, mode=mode, allowed=True, own_correction=True)
    if not relevant:
        reasons.append(f"no grant lets this user {request.capability} a {request.table}")
    return BrokerDecision(request=request, mode=mode, allowed=False, reasons=reasons)


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
