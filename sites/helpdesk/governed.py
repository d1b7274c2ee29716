"""The helpdesk's routes a grant governs (sites/kit/broker.py): what each request asks the broker for.

Governed: a refund bound to an approval and a goodwill credit (`refund` of an `order`: money returned to the
customer), and a notification to the ticket's customer (`send` of a `notification`: a message that leaves the
company).

Left ungoverned: a ticket's status, an escalation to a human queue, and marking a follow-up done or cancelling it:
they change only the desk's own bookkeeping (no money moves, nothing leaves the company, no record is deleted), so
no grant's capability covers them.
"""

from __future__ import annotations

import re

from sites.helpdesk.models import Customer, Order, Ticket
from sites.helpdesk.pages import PREFIX
from sites.kit.broker import BrokerRequest, amount_of
from sites.kit.governed import FormFields, GovernedRoute, Lookup
from sites.kit.money import parse_cents


def refund_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A refund on the order of the path: its amount and currency as the refund form posts them."""
    order = lookup(Order, number=match["number"])
    return BrokerRequest(capability="refund", table="order", object=None if order is None else order.id,
                         amount=amount_of(parse_cents(form.get("amount", "")), form.get("currency", "")))


def credit_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A goodwill credit on the order of the path: its amount, in the order's currency (the form posts none)."""
    order = lookup(Order, number=match["number"])
    cents = parse_cents(form.get("credit_amount", ""))
    return BrokerRequest(capability="refund", table="order", object=None if order is None else order.id,
                         amount=None if order is None else amount_of(cents, order.currency))


def notify_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A new notification to the customer of the ticket of the path (none known for an unknown ticket)."""
    ticket = lookup(Ticket, number=match["number"])
    customer = None if ticket is None else lookup(Customer, id=ticket.customer_id)
    return BrokerRequest(capability="send", table="notification",
                         recipients=[] if customer is None else [customer.email])


GOVERNED = (
    GovernedRoute(method="POST", path=rf"{PREFIX}/orders/(?P<number>[^/]+)/refunds", extract=refund_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/orders/(?P<number>[^/]+)/credits", extract=credit_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/tickets/(?P<number>[^/]+)/notify", extract=notify_request),
)
"""Every way money goes back to a customer, and every message sent to one."""
