"""The record form and the payable records: submit one record per invoice, see and correct records."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from sqlmodel import col, select
from starlette.responses import HTMLResponse, Response

from sites.invoices.models import ACCEPTED_CURRENCIES, Payable
from sites.invoices.pages import PREFIX, not_found, page, payable_by_reference
from sites.invoices.payables import RecordFields, correct, submit, validate
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import choices, filtered, searched
from sites.kit.money import format_cents
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged

router = APIRouter()

FormText = Annotated[str, Form()]
_NOTICES = Notices({"submitted": "Record submitted.", "saved": "Record corrected."})


def _form_page(operation: OperationContext, fields: RecordFields, *, status: int = 200,
               error: str | None = None) -> HTMLResponse:
    return page(operation, "record_form.html", status=status, title="Record form", fields=fields,
                currencies=ACCEPTED_CURRENCIES, error=error)


@router.get("/records", response_class=HTMLResponse)
def record_list(session: SessionDep, operation: OperationDep, q: str = "", invoice: str = "", vendor: str = "",
                currency: str = "", number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The payable records by reference, a page at a time: those whose reference, invoice number or vendor holds
    `q`, recorded for exactly the invoice number `invoice` (the question "has this invoice a record?"), of the
    chosen vendor and currency."""
    statement = filtered(select(Payable), invoice=(Payable.invoice_number, invoice.strip()),
                         vendor=(Payable.vendor, vendor), currency=(Payable.currency, currency))
    statement = searched(statement, q, Payable.reference, Payable.invoice_number, Payable.vendor)
    kept = {"q": q.strip(), "invoice": invoice.strip(), "vendor": vendor, "currency": currency}
    pages = paged(session, statement.order_by(col(Payable.id)), page=number, path=f"{PREFIX}/records", query=kept)
    return page(operation, "records.html", title="Payable records", payables=pages.rows, pages=pages, chosen=kept,
                vendors=choices(session, Payable.vendor), currencies=choices(session, Payable.currency))


@router.get("/records/new", response_class=HTMLResponse)
def record_form(operation: OperationDep) -> HTMLResponse:
    """The empty record form."""
    return _form_page(operation, RecordFields())


@router.post("/records", response_model=None)
def submit_record(
    session: SessionDep,
    operation: OperationDep,
    vendor: FormText = "",
    invoice_number: FormText = "",
    invoice_date: FormText = "",
    currency: FormText = "",
    total: FormText = "",
) -> Response:
    """Creates one payable record; a broken rule → 422 naming it, and no change."""
    fields = RecordFields(vendor, invoice_number, invoice_date, currency, total)
    record = validate(fields)
    if isinstance(record, str):
        return _form_page(operation, fields, status=422, error=record)
    payable = submit(session, record, operation.clock.text())
    return RedirectResponse(f"{PREFIX}/records/{payable.reference}?submitted=1", status_code=303)


def _record_page(operation: OperationContext, payable: Payable, *, status: int = 200, **context: Any) -> HTMLResponse:
    fields = RecordFields(payable.vendor, payable.invoice_number, payable.invoice_date, payable.currency,
                          format_cents(payable.total_cents))
    defaults: dict[str, Any] = {"notice": None, "error": None, "fields": fields}
    return page(operation, "record.html", status=status, title=f"Payable {payable.reference}", payable=payable,
                currencies=ACCEPTED_CURRENCIES, **{**defaults, **context})


@router.get("/records/{reference}", response_class=HTMLResponse)
def record_detail(reference: str, session: SessionDep, operation: OperationDep, submitted: str = "",
                  saved: str = "") -> HTMLResponse:
    """One payable record with its correction form; 404 for an unknown reference."""
    payable = payable_by_reference(session, reference)
    if payable is None:
        return not_found(operation, f"Payable record {reference}")
    return _record_page(operation, payable, notice=_NOTICES.pick(submitted=submitted, saved=saved))


@router.post("/records/{reference}", response_model=None)
def correct_record(
    reference: str,
    session: SessionDep,
    operation: OperationDep,
    vendor: FormText = "",
    invoice_number: FormText = "",
    invoice_date: FormText = "",
    currency: FormText = "",
    total: FormText = "",
) -> Response:
    """Corrects a payable record in place (only the fields that differ); a broken rule → 422, no change."""
    payable = payable_by_reference(session, reference)
    if payable is None:
        return not_found(operation, f"Payable record {reference}")
    fields = RecordFields(vendor, invoice_number, invoice_date, currency, total)
    record = validate(fields)
    if isinstance(record, str):
        return _record_page(operation, payable, status=422, error=record.replace("Record not saved", "Not corrected"),
                            fields=fields)
    correct(session, payable, record, operation.clock.text())
    return RedirectResponse(f"{PREFIX}/records/{payable.reference}?saved=1", status_code=303)
