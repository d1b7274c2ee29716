"""Order list, order details, refunds bound to an approval, and goodwill credits."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.helpdesk.approvals import (
    refusal_for_request,
    refusal_to_request,
    request_approval,
    request_views,
    requests_of,
)
from sites.helpdesk.lists import ALL, ORDER_FILTERS, list_query, orders_selected
from sites.helpdesk.models import CURRENCIES, ApprovalRequest, Customer, Order, Refund, RefundApproval
from sites.helpdesk.pages import PREFIX, PageParam, approvals_of, customers_of, not_found, order_by_number, page
from sites.helpdesk.refunds import issue_refund, refusal_for_amount, refusal_for_approval
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.money import parse_cents
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import listed, related

router = APIRouter()

_NOTICES = Notices({"refunded": "Refund issued.", "credited": "Goodwill credit issued.",
                    "requested": "Approval requested."})


@router.get("/orders", response_class=HTMLResponse)
def order_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = ALL, currency: str = ALL,
               number: PageParam = "") -> HTMLResponse:
    """One page of the orders by number, searched (number, customer) and filtered (status, currency)."""
    query = list_query(q, ORDER_FILTERS, {"status": status, "currency": currency})
    pages = paged(session, orders_selected(query), page=number, path=f"{PREFIX}/orders", query=query.params)
    customers = customers_of(session, (order.customer_id for order in pages.rows))
    return page(operation, "orders.html", title="Orders", pages=pages, query=query, customers=customers)


def _order_page(
    session: Session, operation: OperationContext, order: Order, *, status: int = 200, **context: Any
) -> HTMLResponse:
    refunds = listed(session, select(Refund).where(Refund.order_id == order.id).order_by(col(Refund.id)))
    approvals = approvals_of(session, order)
    assert order.id is not None, "a stored order has an id"
    requests = request_views(session, requests_of(session, order), {order.id: order}, operation.clock.text())
    defaults: dict[str, Any] = {
        "notice": None,
        "refund_error": None,
        "credit_error": None,
        "amount": "",
        "currency": order.currency,
        "approval_code": "none",
        "reason": "",
        "credit_amount": "",
        "credit_reason": "",
        "request_error": None,
        "request_amount": "",
        "request_currency": order.currency,
        "request_reason": "",
    }
    return page(
        operation,
        "order.html",
        status=status,
        title=f"Order {order.number}",
        order=order,
        customer=related(session, order, "customer_id", Customer),
        refunds=refunds,
        approvals=approvals,
        approvals_by_id={approval.id: approval for approval in approvals},
        requests=requests,
        requests_by_refund={view.request.refund_id: view.request for view in requests if view.request.refund_id},
        currencies=CURRENCIES,
        **{**defaults, **context},
    )


@router.get("/orders/{number}", response_class=HTMLResponse)
def order_detail(
    number: str, session: SessionDep, operation: OperationDep, refunded: str = "", credited: str = "",
    requested: str = "",
) -> HTMLResponse:
    """An order's details, its refunds, its approval requests as of now, and the refund, approval request and goodwill
    forms; 404 for an unknown number."""
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Order {number}")
    notice = _NOTICES.pick(refunded=refunded, credited=credited, requested=requested)
    return _order_page(session, operation, order, notice=notice)


@router.post("/orders/{number}/refunds", response_model=None)
def refund_order(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    amount: Annotated[str, Form()] = "",
    currency: Annotated[str, Form()] = "",
    approval: Annotated[str, Form()] = "none",
    reason: Annotated[str, Form()] = "",
) -> Response:
    """Issues a refund bound to a valid approval; any rule broken → 422 naming it, and no change."""
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Order {number}")
    cents = parse_cents(amount)
    found = session.exec(select(RefundApproval).where(RefundApproval.code == approval)).first()
    request = session.exec(select(ApprovalRequest).where(ApprovalRequest.code == approval)).first()
    refusal = refusal_for_amount(session, order, cents, amount, "Refund")
    if refusal is None and cents is not None and request is not None and currency in CURRENCIES:
        refusal = refusal_for_request(session, order=order, request=request, cents=cents, currency=currency,
                                      now=operation.clock.text(), shown=operation.shown)
    elif refusal is None and cents is not None:
        refusal = refusal_for_approval(
            order=order, approval=found, code=approval, cents=cents, currency=currency, now=operation.clock.text(),
            shown=operation.shown,
        )
    if refusal is not None or cents is None:
        return _order_page(
            session,
            operation,
            order,
            status=422,
            refund_error=refusal,
            amount=amount,
            currency=currency,
            approval_code=approval,
            reason=reason,
        )
    issue_refund(session, order=order, cents=cents, reason=reason.strip(), created_at=operation.clock.text(),
                 approval=found, request=request)
    return RedirectResponse(f"{PREFIX}/orders/{order.number}?refunded=1", status_code=303)


@router.post("/orders/{number}/credits", response_model=None)
def credit_order(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    credit_amount: Annotated[str, Form()] = "",
    credit_reason: Annotated[str, Form()] = "",
) -> Response:
    """Issues a goodwill credit (a refund without approval) in the order's currency."""
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Order {number}")
    cents = parse_cents(credit_amount)
    refusal = refusal_for_amount(session, order, cents, credit_amount, "Credit")
    if refusal is not None or cents is None:
        return _order_page(
            session,
            operation,
            order,
            status=422,
            credit_error=refusal,
            credit_amount=credit_amount,
            credit_reason=credit_reason,
        )
    issue_refund(
        session,
        order=order,
        cents=cents,
        reason=credit_reason.strip(),
        created_at=operation.clock.text(),
        approval=None,
    )
    return RedirectResponse(f"{PREFIX}/orders/{order.number}?credited=1", status_code=303)


@router.post("/orders/{number}/approval-requests", response_model=None)
def request_refund_approval(
    number: str,
    session: SessionDep,
    operation: OperationDep,
    request_amount: Annotated[str, Form()] = "",
    request_currency: Annotated[str, Form()] = "",
    request_reason: Annotated[str, Form()] = "",
) -> Response:
    """Asks the approver for a refund approval (sites/helpdesk/approvals.py); 422 naming the rule broken."""
    order = order_by_number(session, number)
    if order is None:
        return not_found(operation, f"Order {number}")
    cents = parse_cents(request_amount)
    now = operation.clock.text()
    refusal = refusal_to_request(session, order, cents, request_amount, request_currency, request_reason, now)
    if refusal is not None or cents is None:
        return _order_page(session, operation, order, status=422, request_error=refusal, request_amount=request_amount,
                           request_currency=request_currency, request_reason=request_reason)
    request_approval(session, order, cents=cents, currency=request_currency, reason=request_reason, now=now)
    return RedirectResponse(f"{PREFIX}/orders/{order.number}?requested=1", status_code=303)
