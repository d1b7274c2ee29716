"""Rendering and look-ups shared by the helpdesk's routes."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, col, select

from computerops.core.numbers import whole_number
from sites.helpdesk.models import Customer, Order, RefundApproval, Ticket
from sites.kit.pages import SitePages
from sites.kit.shown import listed

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/helpdesk"


def ticket_by_number(session: Session, number: str) -> Ticket | None:
    """The ticket numbered `number` (e.g. T-2001), or None."""
    return session.exec(select(Ticket).where(Ticket.number == number)).first()


def order_by_number(session: Session, number: str) -> Order | None:
    """The order numbered `number` (e.g. O-1042), or None."""
    return session.exec(select(Order).where(Order.number == number)).first()


def customer_by_id(session: Session, customer_id: str) -> Customer | None:
    """The customer with this id (given as path text), or None when it is not a known id."""
    number = whole_number(customer_id)
    return None if number is None else session.get(Customer, number)


def customers_by_id(session: Session) -> dict[int, Customer]:
    """Every customer keyed by id, for tables that show customer names."""
    return {customer.id: customer for customer in session.exec(select(Customer)) if customer.id is not None}


def orders_by_id(session: Session) -> dict[int, Order]:
    """Every order keyed by id, for tables that show order numbers."""
    return {order.id: order for order in session.exec(select(Order)) if order.id is not None}


def tickets_by_id(session: Session) -> dict[int, Ticket]:
    """Every ticket keyed by id, for tables that show ticket numbers."""
    return {ticket.id: ticket for ticket in session.exec(select(Ticket)) if ticket.id is not None}


def approvals_of(session: Session, order: Order) -> list[RefundApproval]:
    """The refund approvals issued for an order, by code."""
    query = select(RefundApproval).where(RefundApproval.order_id == order.id).order_by(col(RefundApproval.id))
    return listed(session, query)
