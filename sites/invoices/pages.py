"""Rendering, the portal's apps and look-ups shared by the invoices site's routes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session, col, select

from sites.invoices.models import Invoice, InvoiceLine, Payable
from sites.kit.pages import SitePages
from sites.kit.shown import listed
from sites.kit.site import AppRoute

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/invoices"


@dataclass(frozen=True)
class App:
    """One app of the portal's tool ladder."""

    key: str
    """The name used in the portal's `apps` query (e.g. `viewer`)."""
    title: str
    path: str
    purpose: str


APPS: tuple[App, ...] = (
    App("viewer", "Invoice viewer", f"{PREFIX}/viewer", "Read invoice documents: header fields and line items."),
    App("form", "Record form", f"{PREFIX}/records/new", "Submit one payable record per invoice."),
    App("records", "Payable records", f"{PREFIX}/records", "See and correct submitted payable records."),
    App("search", "Web search", f"{PREFIX}/search", "Search a small set of vendor and policy pages."),
    App("calculator", "Calculator", f"{PREFIX}/calculator", "Add up a list of amounts."),
    App("spreadsheet", "Spreadsheet", f"{PREFIX}/spreadsheet", "Line amounts per document (no header fields)."),
    App("email", "Email", f"{PREFIX}/email", "Send email messages."),
)
APPS_BY_KEY = {app.key: app for app in APPS}
EXTRA_APPS: tuple[App, ...] = (
    App("notices", "Vendor notices", f"{PREFIX}/notices", "Credits vendors announce, to apply and mark processed."),
)
"""Apps the portal lists only when its `apps` query names them: the portal with every app lists the ladder above
as it always has."""
APP_ROUTES: tuple[AppRoute, ...] = (
    AppRoute("portal", "GET", rf"{PREFIX}(/|/portal)?"),
    AppRoute("viewer", "GET", rf"{PREFIX}/viewer(/[^/]*)?", example="/invoices/viewer/INV-1003"),
    AppRoute("form", "GET", rf"{PREFIX}/records/new"),
    AppRoute("form", "POST", rf"{PREFIX}/records"),
    AppRoute("records", "*", rf"{PREFIX}/records(/.*)?", example="/invoices/records/P-301"),
    AppRoute("search", "*", rf"{PREFIX}/search(/.*)?", example="/invoices/search?q=policy"),
    AppRoute("calculator", "*", rf"{PREFIX}/calculator(/.*)?", example="/invoices/calculator"),
    AppRoute("spreadsheet", "*", rf"{PREFIX}/spreadsheet(/.*)?", example="/invoices/spreadsheet/1"),
    AppRoute("email", "*", rf"{PREFIX}/email(/.*)?", example="/invoices/email"),
    AppRoute("notices", "*", rf"{PREFIX}/notices(/.*)?", example="/invoices/notices/N-501"),
)
"""Which app serves a request, first match wins: the record form is its page and its submission; every other
page under an app's address, sub-pages included, is that app's."""


def invoice_by_number(session: Session, number: str) -> Invoice | None:
    """The invoice numbered `number` (e.g. INV-1001), or None."""
    return session.exec(select(Invoice).where(Invoice.number == number)).first()


def lines_of(session: Session, invoice: Invoice) -> list[InvoiceLine]:
    """The invoice's line items in printed order (recorded as a listing: a page shows them all)."""
    query = select(InvoiceLine).where(InvoiceLine.invoice_id == invoice.id).order_by(col(InvoiceLine.position))
    return listed(session, query)


def payable_by_reference(session: Session, reference: str) -> Payable | None:
    """The payable record with this reference (e.g. P-301), or None."""
    return session.exec(select(Payable).where(Payable.reference == reference)).first()
