"""The HR desk's routes a grant governs (sites/kit/broker.py): what each request asks the broker for.

Governed: approving expense claims, one on its page or those selected on the list (`pay` of an `expense_claim`:
the approval releases the money to the employee; its amount and currency are the claim's), and deciding a leave
request, approved or rejected (`change` of a `leave_request`, field `status`: the decision is final and approval
takes days from the employee's balance).

Left ungoverned: rejecting an expense claim and asking for its receipt: no money moves and the employee can claim
again, so no grant's capability covers them.
"""

from __future__ import annotations

import re

from sites.hrdesk.models import ExpenseClaim, LeaveRequest
from sites.hrdesk.pages import PREFIX
from sites.kit.broker import BrokerRequest, amount_of
from sites.kit.governed import FormFields, GovernedRoute, Lookup, selection

STATUS = "status"
"""The leave request column a decision writes: what a `change` grant names."""


def approve_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """Paying out the claim of the path: its amount in its currency (none known for an unknown claim)."""
    claim = lookup(ExpenseClaim, number=match["number"])
    return BrokerRequest(capability="pay", table="expense_claim", object=None if claim is None else claim.id,
                         amount=None if claim is None else amount_of(claim.amount_cents, claim.currency))


def approve_selected_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """Paying out the selected claims. One claim is its object and amount; several are `several` (each must be a
    grant's object) and their sum is the amount when they share one currency (in several currencies no one amount,
    so a grant with an amount limit refuses them: the agent can approve them one by one)."""
    numbers = list(dict.fromkeys(form.getlist("claim")))  # as the handler reads its selection
    claims = [lookup(ExpenseClaim, number=number) for number in numbers]
    known = [claim for claim in claims if claim is not None]
    currencies = {claim.currency for claim in known}
    amount = (amount_of(sum(claim.amount_cents for claim in known), currencies.pop())
              if known and len(known) == len(claims) and len(currencies) == 1 else None)
    single, several = selection([None if claim is None else claim.id for claim in claims])
    return BrokerRequest(capability="pay", table="expense_claim", object=single, amount=amount, several=several)


DECIDED = {"approve": "approved", "reject": "rejected"}
"""The status each decision route writes (sites/hrdesk/decisions.py)."""


def decide_leave_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A decision on the leave request of the path: a change of its status, to the one the decision writes."""
    request = lookup(LeaveRequest, number=match["number"])
    return BrokerRequest(capability="change", table="leave_request", object=None if request is None else request.id,
                         fields=[STATUS], values={STATUS: DECIDED[match["decision"]]})


GOVERNED = (
    GovernedRoute(method="POST", path=rf"{PREFIX}/expenses/approve", extract=approve_selected_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/expenses/(?P<number>[^/]+)/approve", extract=approve_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/leave/(?P<number>[^/]+)/(?P<decision>approve|reject)",
                  extract=decide_leave_request),
)
"""Every way an expense claim is paid out, and every decision on a leave request."""
