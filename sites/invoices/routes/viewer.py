"""The invoice viewer: the list of invoice documents and one document with its line items."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from sites.invoices.models import Invoice
from sites.invoices.pages import PREFIX, invoice_by_number, lines_of, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import choices, filtered, searched
from sites.kit.paging import paged

router = APIRouter()


@router.get("/viewer", response_class=HTMLResponse)
def invoice_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = "", vendor: str = "",
                 currency: str = "", number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The invoices by number, a page at a time, with vendor, date, currency and status (totals are on the
    documents): those whose number or vendor holds `q`, of the chosen status, vendor and currency."""
    statement = filtered(select(Invoice), status=(Invoice.status, status), vendor=(Invoice.vendor, vendor),
                         currency=(Invoice.currency, currency))
    statement = searched(statement, q, Invoice.number, Invoice.vendor).order_by(col(Invoice.number))
    kept = {"q": q.strip(), "status": status, "vendor": vendor, "currency": currency}
    pages = paged(session, statement, page=number, path=f"{PREFIX}/viewer", query=kept)
    return page(operation, "viewer.html", title="Invoice viewer", invoices=pages.rows, pages=pages, chosen=kept,
                statuses=choices(session, Invoice.status), vendors=choices(session, Invoice.vendor),
                currencies=choices(session, Invoice.currency))


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
