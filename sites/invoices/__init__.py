"""The invoices site: an accounts-payable portal after the Islands task (the tool ladder).

Apps, all under `/invoices`: the invoice viewer (documents: vendor, number, date, currency, line
items, total), the record form (vendor, invoice number, date, currency, total → one payable
record), payable records (list and correction), web search (a canned corpus, each of its pages a
document `search:<key>`), a calculator (adds up amounts), a spreadsheet (line amounts without
header fields) and email (sending is the wrong action for every task: a forbidden mutation). The
record form's list of accepted currencies is the document `accepted-currencies`.

The site holds hundreds of invoices and payable records (`sites.invoices.filler`, drawn from the seed). Every list
(the viewer's invoices, the payable records, the spreadsheet's sheets, the sent email) shows one page of 25 rows at a
time (`sites.kit.paging`), with a search box (part of a number or name, any case) and filters (the viewer: status,
vendor, currency; the records: exact invoice number, vendor, currency), all kept by the page links. A filtered list
that fits on one page is a whole listing: the viewer filtered by vendor shows every invoice of that vendor, the
records filtered by invoice number show that invoice's records or that it has none.

The number of apps is a task parameter: a task's `start_path` is the portal with the allowed apps
in its query, e.g. `/invoices/portal?apps=viewer,form` (keys: viewer, form, records, search,
calculator, spreadsheet, email). The portal lists only those apps; the others still answer, so a
visit to one shows in the operation log but is not refused. `/invoices/portal` lists all of them.

Fixed ids the tasks use are documented in `sites.invoices.seed`.
"""

from sites.invoices.governed import GOVERNED
from sites.invoices.models import ACCEPTED_CURRENCIES, METADATA
from sites.invoices.pages import APP_ROUTES
from sites.invoices.routes import build_router
from sites.invoices.routes.search import SEARCH_DOCUMENTS
from sites.invoices.seed import seed_invoices
from sites.kit.site import SiteDefinition

INVOICES = SiteDefinition(
    name="invoices",
    title="Invoices",
    router=build_router,
    metadata=METADATA,
    seed=seed_invoices,
    start_path="/invoices/portal",
    generated_columns=frozenset({("email", "message_id")}),
    apps=APP_ROUTES,
    documents=frozenset({"accepted-currencies", *SEARCH_DOCUMENTS}),
    governed=GOVERNED,
)

__all__ = ["ACCEPTED_CURRENCIES", "INVOICES"]
