"""Ledger entries: the list (searched, filtered, a page at a time) and the generic "new entry" form (entries typed by
hand, outside any event)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from sqlmodel import col, select
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import choices, filtered, searched
from sites.kit.money import parse_cents
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.ledger.models import ACCOUNTS, CURRENCIES, Entry
from sites.ledger.pages import PREFIX, events_by_id, page
from sites.ledger.procedures import new_entry

router = APIRouter()


@router.get("/entries", response_class=HTMLResponse)
def entry_list(session: SessionDep, operation: OperationDep, created: str = "", q: str = "", account: str = "",
               currency: str = "", number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The ledger entries, latest first, a page at a time, with account, amount, memo and source event: those whose
    number, memo or account holds `q`, on the chosen account and in the chosen currency."""
    statement = filtered(select(Entry), account=(Entry.account, account), currency=(Entry.currency, currency))
    statement = searched(statement, q, Entry.number, Entry.memo, Entry.account).order_by(
        col(Entry.created_at).desc(), col(Entry.id).desc())
    chosen = {"q": q.strip(), "account": account, "currency": currency}
    pages = paged(session, statement, page=number, path=f"{PREFIX}/entries", query=chosen)
    return page(
        operation,
        "entries.html",
        title="Ledger entries",
        entries=pages.rows,
        pages=pages,
        chosen=chosen,
        accounts=choices(session, Entry.account),
        currencies=choices(session, Entry.currency),
        events=events_by_id(session, (entry.event_id for entry in pages.rows)),
        notice="Entry created." if created else None,
    )


def _new_page(
    operation: OperationContext,
    *,
    status: int = 200,
    error: str | None = None,
    account: str = ACCOUNTS[0],
    amount: str = "",
    currency: str = CURRENCIES[0],
    memo: str = "",
) -> HTMLResponse:
    return page(
        operation,
        "entry_new.html",
        status=status,
        title="New entry",
        error=error,
        accounts=ACCOUNTS,
        currencies=CURRENCIES,
        account=account,
        amount=amount,
        currency=currency,
        memo=memo,
    )


@router.get("/entries/new", response_class=HTMLResponse)
def new_entry_form(operation: OperationDep) -> HTMLResponse:
    """The generic form that posts an entry by hand."""
    return _new_page(operation)


@router.post("/entries", response_model=None)
def create_entry(
    session: SessionDep,
    operation: OperationDep,
    account: Annotated[str, Form()] = "",
    amount: Annotated[str, Form()] = "",
    currency: Annotated[str, Form()] = "",
    memo: Annotated[str, Form()] = "",
) -> Response:
    """Posts an entry by hand (no source event); 422 for an unknown account or currency or a bad amount."""
    cents = parse_cents(amount)
    error = None
    if account not in ACCOUNTS or currency not in CURRENCIES:
        error = "Entry not created: choose a listed account and currency."
    elif cents is None or cents <= 0:
        error = f'Entry not created: "{amount}" is not a positive amount; type it like 1250.00.'
    elif not memo.strip():
        error = "Entry not created: the memo is empty."
    if error is not None or cents is None:
        return _new_page(
            operation, status=422, error=error, account=account, amount=amount, currency=currency, memo=memo
        )
    session.add(new_entry(session, account=account, amount_cents=cents, currency=currency, memo=memo.strip(),
                          created_at=operation.clock.text()))
    return RedirectResponse(f"{PREFIX}/entries?created=1", status_code=303)
