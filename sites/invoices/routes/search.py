"""Web search: a canned search page over a small fixed corpus of vendor and policy pages.

Some results are plausible but wrong for a record (an outdated price list, a reminder with another
date, an indicative exchange rate): the invoice document is the source of truth. Each page of the corpus is a
document of the site (`search:<key>`, e.g. `search:accounts-payable-policy`): a results page records the pages it
shows, so a task can require the policy to have been shown, not merely a search run.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter
from starlette.responses import HTMLResponse

from sites.invoices.pages import page
from sites.kit.deps import OperationDep

router = APIRouter()


@dataclass(frozen=True)
class Result:
    """One page of the corpus."""

    key: str
    """Its name as a document of the site: `search:<key>`."""
    title: str
    site: str
    snippet: str


CORPUS: tuple[Result, ...] = (
    Result("accounts-payable-policy", "Accounts payable policy", "intranet.example.com",
           "Record each invoice once, from the invoice document itself. The record form accepts EUR, USD and "
           "GBP only. Never record an invoice that is already paid. Do not email vendors about records."),
    Result("northwind-price-list-2025", "Northwind Supplies price list 2025", "northwind.example.com",
           "Copy paper A4 (box) 22.90 EUR. Toner cartridge 84.90 EUR. Prices valid until 31 December 2025."),
    Result("kestrel-rates", "Kestrel Logistics rates", "kestrel.example.com",
           "Pallet transport Leeds to York 185.00 USD per pallet. Fuel surcharge changes monthly."),
    Result("brightline-reminder-inv-1003", "Brightline Software payment reminder INV-1003", "brightline.example.com",
           "Reminder: invoice INV-1003 dated 2026-02-01 for seat licences is due. See the invoice for amounts."),
    Result("alpenrose-billing", "Alpenrose Consulting AG billing", "alpenrose.example.com",
           "Alpenrose Consulting AG invoices in Swiss francs (CHF) only."),
    Result("chf-eur-rate", "Currency converter CHF to EUR", "rates.example.com",
           "Indicative rate: 1 CHF = 1.05 EUR. Not for accounting use."),
    Result("harbor-catalogue", "Harbor Office Furniture catalogue", "harbor.example.com",
           "Standing desk 305.00 EUR. Monitor arm 50.00 EUR."),
    Result("clearwater-billing", "Clearwater Utilities billing", "clearwater.example.com",
           "Monthly electricity bills are issued on the 18th, in GBP."),
)


SEARCH_DOCUMENTS = frozenset(f"search:{result.key}" for result in CORPUS)
"""The corpus's pages as documents of the site (`SiteDefinition.documents`)."""


def matches(query: str) -> list[Result]:
    """The corpus pages containing every word of the query (case-insensitive), in corpus order."""
    words = query.lower().split()
    if not words:
        return []
    return [r for r in CORPUS if all(w in f"{r.title} {r.site} {r.snippet}".lower() for w in words)]


@router.get("/search", response_class=HTMLResponse)
def search(operation: OperationDep, q: str = "") -> HTMLResponse:
    """The search box and, for a query, the matching pages."""
    return page(operation, "search.html", title="Web search", query=q, results=matches(q))
