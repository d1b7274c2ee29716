"""Customer list and customer details (with the customer's orders and tickets)."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.helpdesk.models import Customer, Order, Ticket
from sites.helpdesk.pages import customer_by_id, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.shown import listed

router = APIRouter()


@router.get("/customers", response_class=HTMLResponse)
def customer_list(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every customer by id, name linking to the details."""
    rows = listed(session, select(Customer).order_by(col(Customer.id)))
    return page(operation, "customers.html", title="Customers", customers=rows)


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
