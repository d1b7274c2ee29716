"""Write-off approvals: the register, each approval's page and its "Post write-off" form (the approval-bound action)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.money import parse_cents
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.ledger.models import WriteOffApproval
from sites.ledger.pages import PREFIX, not_found, page
from sites.ledger.procedures import refusal_to_write_off, write_off, write_off_state

router = APIRouter()


def approval_by_number(session: Session, number: str) -> WriteOffApproval | None:
    """The write-off approval numbered `number` (e.g. AP-603), or None."""
    return session.exec(select(WriteOffApproval).where(WriteOffApproval.number == number)).first()


@router.get("/write-offs", response_class=HTMLResponse)
def approval_list(session: SessionDep, operation: OperationDep,
                  number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The write-off approvals by number, a page at a time, with invoice, customer, account, limit, status and last
    day."""
    pages = paged(session, select(WriteOffApproval).order_by(col(WriteOffApproval.number)), page=number,
                  path=f"{PREFIX}/write-offs")
    now = operation.clock.text()
    return page(operation, "write_offs.html", title="Write-off approvals", approvals=pages.rows, pages=pages,
                states={row.number: write_off_state(row, now) for row in pages.rows})


def _approval_page(operation: OperationContext, approval: WriteOffApproval, *, status: int = 200,
                   notice: str | None = None, error: str | None = None, amount: str = "") -> HTMLResponse:
    return page(operation, "write_off.html", status=status, title=f"Write-off approval {approval.number}",
                approval=approval, state=write_off_state(approval, operation.clock.text()), notice=notice,
                error=error, amount=amount)


@router.get("/write-offs/{number}", response_class=HTMLResponse)
def approval_detail(number: str, session: SessionDep, operation: OperationDep, posted: str = "") -> HTMLResponse:
    """An approval's details and, while it may be used, the form that posts the write-off under it."""
    approval = approval_by_number(session, number)
    if approval is None:
        return not_found(operation, f"Write-off approval {number}")
    return _approval_page(operation, approval, notice="Write-off posted." if posted else None)


@router.post("/write-offs/{number}/post", response_model=None)
def post_write_off(number: str, session: SessionDep, operation: OperationDep,
                   amount: Annotated[str, Form()] = "") -> Response:
    """Posts the write-off under the approval; 409 (nothing changed) when the approval or the amount is refused."""
    approval = approval_by_number(session, number)
    if approval is None:
        return not_found(operation, f"Write-off approval {number}")
    cents = parse_cents(amount)
    refusal = refusal_to_write_off(approval, cents, operation.clock.text(), operation.shown)
    if refusal is not None or cents is None:
        return _approval_page(operation, approval, status=409, error=refusal, amount=amount)
    write_off(session, approval, cents, operation.clock.text())
    return RedirectResponse(f"{PREFIX}/write-offs/{approval.number}?posted=1", status_code=303)
