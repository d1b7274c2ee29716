"""What the helpdesk's lists select: each list's search box and filters as one statement, in the list's order.

Search is a case-insensitive substring match over what a person would type to find a record (a ticket's number,
subject or customer's name; an order's number or customer's name; a customer's name or email); blank searches
nothing. Filters are equalities on one column each (status, priority, currency, tier), "all" (or anything that is not
one of the column's values) meaning no filter; search and filters combine. So a list that is only filtered is
read as a whole listing when it fits on one page (`sites.kit.paging.paged`), and a searched one is not: a substring
match is no statement about which rows exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, or_
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from sites.helpdesk.models import (
    CARRIER_EVENTS,
    CARRIER_UPDATE_STATUSES,
    CURRENCIES,
    CUSTOMER_TIERS,
    ESCALATION_QUEUES,
    ESCALATION_STATUSES,
    FOLLOW_UP_KINDS,
    FOLLOW_UP_STATUSES,
    ORDER_STATUSES,
    TICKET_PRIORITIES,
    TICKET_STATUSES,
    CarrierUpdate,
    Customer,
    Escalation,
    FollowUp,
    Notification,
    Order,
    Ticket,
)

ALL = "all"
"""The option of a filter that keeps every row."""


@dataclass(frozen=True)
class Filter:
    """One labelled select of a list: its query parameter, label, the column values it offers and the chosen one
    (`ALL` when none applies)."""

    name: str
    label: str
    values: tuple[str, ...]
    selected: str

    @property
    def options(self) -> tuple[str, ...]:
        return (ALL, *self.values)

    @property
    def value(self) -> str | None:
        """The value the rows must have, or None for no filter."""
        return self.selected if self.selected != ALL else None


@dataclass(frozen=True)
class ListQuery:
    """A list's search text and filters as the query string gave them."""

    search: str
    filters: tuple[Filter, ...]

    @property
    def params(self) -> dict[str, str]:
        """The query parameters that apply (blank search and `ALL` filters left out), for the page links."""
        kept = {"q": self.search} if self.search else {}
        kept.update({f.name: f.selected for f in self.filters if f.value is not None})
        return kept

    def value(self, name: str) -> str | None:
        return next(f.value for f in self.filters if f.name == name)


def list_query(search: str, specs: Sequence[tuple[str, str, tuple[str, ...]]], given: Mapping[str, str]) -> ListQuery:
    """The search (trimmed) and, for each (name, label, values) filter, the value `given` chose if it is one of
    `values`, else `ALL`."""
    filters = tuple(Filter(name, label, values, given.get(name, ALL) if given.get(name) in values else ALL)
                    for name, label, values in specs)
    return ListQuery(search=search.strip(), filters=filters)


def _contains(column: Any, text: str) -> Any:
    return col(column).icontains(text, autoescape=True)


def _exact_first(column: Any, text: str) -> Any:
    """An ordering that puts the record whose number is the search itself (case aside) before the others that
    merely contain it, as a desk's search by number does."""
    return case((func.upper(col(column)) == text.strip().upper(), 0), else_=1)


def _customers_named(text: str) -> Any:
    return select(Customer.id).where(_contains(Customer.name, text))


TICKET_FILTERS = (("status", "Status", TICKET_STATUSES), ("priority", "Priority", TICKET_PRIORITIES))
ORDER_FILTERS = (("status", "Status", ORDER_STATUSES), ("currency", "Currency", CURRENCIES))
CUSTOMER_FILTERS = (("tier", "Tier", CUSTOMER_TIERS),)
FOLLOW_UP_FILTERS = (("status", "Status", FOLLOW_UP_STATUSES), ("kind", "Kind", FOLLOW_UP_KINDS))
ESCALATION_FILTERS = (("status", "Status", ESCALATION_STATUSES), ("queue", "Queue", ESCALATION_QUEUES))
CARRIER_FILTERS = (("status", "Status", CARRIER_UPDATE_STATUSES), ("event", "Event", CARRIER_EVENTS))
NOTIFICATION_FILTERS: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


def tickets_selected(query: ListQuery) -> SelectOfScalar[Ticket]:
    """Tickets by number whose number, subject or customer's name contains the search (the ticket numbered as
    searched first), with the status and priority chosen."""
    first = () if not query.search else (_exact_first(Ticket.number, query.search),)
    statement = select(Ticket).order_by(*first, col(Ticket.number))
    if query.search:
        statement = statement.where(or_(_contains(Ticket.number, query.search), _contains(Ticket.subject, query.search),
                                        col(Ticket.customer_id).in_(_customers_named(query.search))))
    if (status := query.value("status")) is not None:
        statement = statement.where(Ticket.status == status)
    if (priority := query.value("priority")) is not None:
        statement = statement.where(Ticket.priority == priority)
    return statement


def orders_selected(query: ListQuery) -> SelectOfScalar[Order]:
    """Orders by number whose number or customer's name contains the search (the order numbered as searched first),
    with the status and currency chosen."""
    first = () if not query.search else (_exact_first(Order.number, query.search),)
    statement = select(Order).order_by(*first, col(Order.number))
    if query.search:
        statement = statement.where(or_(_contains(Order.number, query.search),
                                        col(Order.customer_id).in_(_customers_named(query.search))))
    if (status := query.value("status")) is not None:
        statement = statement.where(Order.status == status)
    if (currency := query.value("currency")) is not None:
        statement = statement.where(Order.currency == currency)
    return statement


def customers_selected(query: ListQuery) -> SelectOfScalar[Customer]:
    """Customers by id whose name or email contains the search, with the tier chosen."""
    statement = select(Customer).order_by(col(Customer.id))
    if query.search:
        statement = statement.where(or_(_contains(Customer.name, query.search),
                                        _contains(Customer.email, query.search)))
    if (tier := query.value("tier")) is not None:
        statement = statement.where(Customer.tier == tier)
    return statement


def _tickets_numbered(text: str) -> Any:
    return select(Ticket.id).where(_contains(Ticket.number, text))


def follow_ups_selected(query: ListQuery) -> SelectOfScalar[FollowUp]:
    """Follow-ups by id whose code, work or ticket's number contains the search, with the status and kind chosen."""
    statement = select(FollowUp).order_by(col(FollowUp.id))
    if query.search:
        statement = statement.where(or_(_contains(FollowUp.code, query.search),
                                        _contains(FollowUp.description, query.search),
                                        col(FollowUp.ticket_id).in_(_tickets_numbered(query.search))))
    if (status := query.value("status")) is not None:
        statement = statement.where(FollowUp.status == status)
    if (kind := query.value("kind")) is not None:
        statement = statement.where(FollowUp.kind == kind)
    return statement


def escalations_selected(query: ListQuery) -> SelectOfScalar[Escalation]:
    """Escalations by id whose code, reason or ticket's number contains the search, with the status and queue
    chosen."""
    statement = select(Escalation).order_by(col(Escalation.id))
    if query.search:
        statement = statement.where(or_(_contains(Escalation.code, query.search),
                                        _contains(Escalation.reason, query.search),
                                        col(Escalation.ticket_id).in_(_tickets_numbered(query.search))))
    if (status := query.value("status")) is not None:
        statement = statement.where(Escalation.status == status)
    if (queue := query.value("queue")) is not None:
        statement = statement.where(Escalation.queue == queue)
    return statement


def notifications_selected(query: ListQuery) -> SelectOfScalar[Notification]:
    """Notifications oldest first whose message id, subject or customer's name contains the search."""
    statement = select(Notification).order_by(col(Notification.id))
    if query.search:
        statement = statement.where(or_(_contains(Notification.message_id, query.search),
                                        _contains(Notification.subject, query.search),
                                        col(Notification.customer_id).in_(_customers_named(query.search))))
    return statement


def _orders_numbered(text: str) -> Any:
    return select(Order.id).where(_contains(Order.number, text))


def carrier_updates_selected(query: ListQuery) -> SelectOfScalar[CarrierUpdate]:
    """Carrier updates in the order they were received whose code or order's number contains the search, with the
    status and event chosen."""
    statement = select(CarrierUpdate).order_by(col(CarrierUpdate.id))
    if query.search:
        statement = statement.where(or_(_contains(CarrierUpdate.code, query.search),
                                        col(CarrierUpdate.order_id).in_(_orders_numbered(query.search))))
    if (status := query.value("status")) is not None:
        statement = statement.where(CarrierUpdate.status == status)
    if (event := query.value("event")) is not None:
        statement = statement.where(CarrierUpdate.event == event)
    return statement
