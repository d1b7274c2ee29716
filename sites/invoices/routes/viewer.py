"""The invoice viewer: the list of invoice documents and one document with its line items."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.invoices.models import Invoice
from sites.invoices.pages import invoice_by_number, lines_of, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.shown import listed

router = APIRouter()


@router.get("/viewer", response_class=HTMLResponse)
def invoice_list(session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """Every invoice by number, with vendor, date, currency and status (totals are on the documents)."""
    invoices = listed(session, select(Invoice).order_by(col(Invoice.number)))
    return page(operation, "viewer.html", title="Invoice viewer", invoices=invoices)


@router.get("/viewer/{number}", response_class=HTMLResponse)
def invoice_document(number: str, session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """One invoice: header fields, line items, and the total (or a note when the scan lacks it). The total is the
    sum of the line items the page shows; whether it is printed is the invoice's `total_printed`, which the page
    reads, so only this page records that column as shown."""
    invoice = invoice_by_number(session, number)
    if invoice is None:
        return not_found(operation, f"Invoice {number}")
    lines = lines_of(session, invoice)
    total = sum(line.amount_cents for line in lines)
    return page(operation, "invoice.html", title=f"Invoice {invoice.number}", invoice=invoice, lines=lines,
                total=total)
