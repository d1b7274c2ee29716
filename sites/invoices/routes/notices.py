"""The vendor notices inbox: the notices a page at a time, one notice, and marking it processed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import RedirectResponse
from sqlmodel import col, select
from starlette.responses import HTMLResponse, Response

from sites.invoices.models import VendorNotice
from sites.invoices.pages import PREFIX, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import choices, filtered, searched
from sites.kit.notices import Notices
from sites.kit.paging import paged

router = APIRouter()
_NOTICES = Notices({"processed": "Notice marked processed."})


@router.get("/notices", response_class=HTMLResponse)
def notice_list(session: SessionDep, operation: OperationDep, q: str = "", status: str = "", vendor: str = "",
                number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The notices in the order received, a page at a time: those whose number, invoice number or vendor holds
    `q`, of the chosen status and vendor."""
    statement = filtered(select(VendorNotice), status=(VendorNotice.status, status),
                         vendor=(VendorNotice.vendor, vendor))
    statement = searched(statement, q, VendorNotice.number, VendorNotice.invoice_number, VendorNotice.vendor)
    kept = {"q": q.strip(), "status": status, "vendor": vendor}
    pages = paged(session, statement.order_by(col(VendorNotice.id)), page=number, path=f"{PREFIX}/notices",
                  query=kept)
    return page(operation, "notices.html", title="Vendor notices", notices=pages.rows, pages=pages, chosen=kept,
                statuses=choices(session, VendorNotice.status), vendors=choices(session, VendorNotice.vendor))


def _notice(session: SessionDep, number: str) -> VendorNotice | None:
    return session.exec(select(VendorNotice).where(VendorNotice.number == number)).first()


@router.get("/notices/{number}", response_class=HTMLResponse)
def notice_detail(number: str, session: SessionDep, operation: OperationDep, processed: str = "") -> HTMLResponse:
    """One notice: its vendor, invoice, credit and status, with the button that marks it processed."""
    notice = _notice(session, number)
    if notice is None:
        return not_found(operation, f"Notice {number}")
    return page(operation, "notice.html", title=f"Notice {notice.number}", notice=notice,
                message=_NOTICES.pick(processed=processed))


@router.post("/notices/{number}", response_model=None)
def mark_processed(number: str, session: SessionDep, operation: OperationDep) -> Response:
    """Marks the notice processed (a notice already processed stays as it was: 409, no change). It changes no
    payable: applying the credit is the record page's correction."""
    notice = _notice(session, number)
    if notice is None:
        return not_found(operation, f"Notice {number}")
    if notice.status == "processed":
        return page(operation, "notice.html", status=409, title=f"Notice {notice.number}", notice=notice,
                    message=f"Notice {notice.number} was already processed on {notice.processed_at}.")
    notice.status = "processed"
    notice.processed_at = operation.clock.text()
    session.add(notice)
    return RedirectResponse(f"{PREFIX}/notices/{notice.number}?processed=1", status_code=303)
