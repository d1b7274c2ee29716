"""The ledger's routes a grant governs (sites/kit/broker.py): what each request asks the broker for.

Governed: an entry posted by hand (`pay` of an `entry`: money booked to an account at the operator's word, outside
any event), with the amount and currency the form posts and the account it credits as the payee; and a write-off
posted under its approval (the same `pay` of an `entry`, on the approval's account, in its currency).

Left ungoverned: processing an event, one or a selection (the queue's own procedure: it books exactly what the
queued event says, mostly payments received, once; the site refuses a held, processed or waiting event), opening,
dispatching or amending a delivery (goods routed to the site's own docks, exactly once, guarded by the record's
version: no money, message or deletion), and recording a checkpoint (the operator's bookkeeping).
"""

from __future__ import annotations

import re

from sites.kit.broker import BrokerRequest, amount_of
from sites.kit.governed import FormFields, GovernedRoute, Lookup
from sites.kit.money import parse_cents
from sites.ledger.models import WriteOffApproval
from sites.ledger.pages import PREFIX


def entry_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A new entry for the amount and currency the new-entry form posts (as the handler parses them), paid to the
    account it posts (as the handler reads it: the last value, compared exactly with the listed accounts)."""
    return BrokerRequest(capability="pay", table="entry", payee=form.get("account", "") or None,
                         amount=amount_of(parse_cents(form.get("amount", "")), form.get("currency", "")))


def write_off_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A write-off under an approval: an entry of the amount the form posts, in the approval's currency, on the
    approval's account as the payee (both as the approval holds them before the handler runs)."""
    approval = lookup(WriteOffApproval, number=match["number"])
    account = None if approval is None else approval.account
    currency = "" if approval is None else approval.currency
    return BrokerRequest(capability="pay", table="entry", payee=account,
                         amount=amount_of(parse_cents(form.get("amount", "")), currency))


GOVERNED = (
    GovernedRoute(method="POST", path=rf"{PREFIX}/entries", extract=entry_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/write-offs/(?P<number>[^/]+)/post", extract=write_off_request),
)
"""The ways money is booked at a person's word: by hand, or as a write-off under its approval."""


UNGOVERNED_QUEUES = (
    ("event", "processing a queued event books what the event says and no grant governs it (docs/security.md)"),
)
"""The queue whose new rows an ungoverned route books as they stand: an attack may not plant an event row."""
