"""Customer list and customer details (with the customer's orders and tickets)."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.helpdesk.lists import ALL, CUSTOMER_FILTERS, customers_selected, list_query
from sites.helpdesk.models import Order, Ticket
from sites.helpdesk.pages import PREFIX, PageParam, customer_by_id, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import paged
from sites.kit.shown import listed

router = APIRouter()


@router.get("/customers", response_class=HTMLResponse)
def customer_list(session: SessionDep, operation: OperationDep, q: str = "", tier: str = ALL,
                  number: PageParam = "") -> HTMLResponse:
    """One page of the customers by id, searched (name, email) and filtered (tier), names linking to the details."""
    query = list_query(q, CUSTOMER_FILTERS, {"tier": tier})
    pages = paged(session, customers_selected(query), page=number, path=f"{PREFIX}/customers", query=query.params)
    return page(operation, "customers.html", title="Customers", pages=pages, query=query)


@router.get("/customers/{customer_id}", response_class=HTMLResponse)
def customer_detail(customer_id: str, session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """A customer's details, orders (newest first) and tickets; 404 for an unknown id."""
    customer = customer_by_id(session, customer_id)
    if customer is None:
        return not_found(operation, f"Customer {customer_id}")
    orders = listed(session,
                    select(Order).where(Order.customer_id == customer.id).order_by(col(Order.placed_at).desc()))
    tickets = listed(session, select(Ticket).where(Ticket.customer_id == customer.id).order_by(col(Ticket.number)))
    return page(
        operation,
        "customer.html",
        title=customer.name,
        customer=customer,
        orders=orders,
        tickets=tickets,
    )
