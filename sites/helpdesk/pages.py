"""Rendering and look-ups shared by the helpdesk's routes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, TypeVar

from fastapi import Query
from sqlmodel import Session, col, select

from computerops.core.numbers import whole_number
from sites.helpdesk.models import Customer, Order, RefundApproval, Ticket
from sites.kit.pages import SitePages
from sites.kit.shown import listed

Keyed = TypeVar("Keyed", Customer, Order, Ticket)

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/helpdesk"
PageParam = Annotated[str, Query(alias="page")]
"""A list's `page` query parameter as text (`sites.kit.paging.page_number` reads it; anything else is page 1)."""


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


def rows_of(session: Session, model: type[Keyed], ids: Iterable[int | None]) -> dict[int, Keyed]:
    """The rows of `model` with these ids (None ignored) keyed by id, for a list page that shows its rows' related
    rows (a ticket's customer name, a follow-up's ticket number) without reading the whole table."""
    wanted = {key for key in ids if key is not None}
    query = select(model).where(col(model.id).in_(wanted))
    return {row.id: row for row in session.exec(query) if row.id is not None}


def customers_of(session: Session, customer_ids: Iterable[int]) -> dict[int, Customer]:
    """The customers with these ids keyed by id, for a list page that shows its rows' customer names."""
    return rows_of(session, Customer, customer_ids)


def approvals_of(session: Session, order: Order) -> list[RefundApproval]:
    """The refund approvals issued for an order, by code."""
    query = select(RefundApproval).where(RefundApproval.order_id == order.id).order_by(col(RefundApproval.id))
    return listed(session, query)
