"""The spreadsheet: one sheet per invoice document with each line's amount, and no header fields.

A sheet is named by document number (`Sheet 3` holds the lines of the third document, INV-1003),
never by invoice number, vendor, date or currency: those are only on the invoice itself.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import col, select
from starlette.responses import HTMLResponse

from computerops.core.numbers import whole_number
from sites.invoices.models import Invoice, InvoiceLine
from sites.invoices.pages import PREFIX, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import searched
from sites.kit.paging import paged
from sites.kit.shown import listed

router = APIRouter()


@router.get("/spreadsheet", response_class=HTMLResponse)
def sheet_list(session: SessionDep, operation: OperationDep, q: str = "",
               number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The sheets by number, a page at a time (a sheet's number is its invoice document's id, read off the row):
    those whose number holds the digits `q`. Sheets name no vendor, date or status, so there is nothing else to
    filter by."""
    statement = searched(select(Invoice), q, Invoice.id).order_by(col(Invoice.id))
    kept = {"q": q.strip()}
    pages = paged(session, statement, page=number, path=f"{PREFIX}/spreadsheet", query=kept)
    return page(operation, "sheets.html", title="Spreadsheet", sheets=pages.rows, pages=pages, chosen=kept)


@router.get("/spreadsheet/{sheet}", response_class=HTMLResponse)
def sheet(sheet: str, session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """One sheet: line, description, amount; 404 for a sheet that does not exist."""
    sheet_id = whole_number(sheet)
    document = None if sheet_id is None else session.get(Invoice, sheet_id)
    if document is None:
        return not_found(operation, f"Sheet {sheet}")
    query = select(InvoiceLine).where(InvoiceLine.invoice_id == document.id).order_by(col(InvoiceLine.position))
    return page(operation, "sheet.html", title=f"Sheet {document.id}", sheet=document, lines=listed(session, query))
