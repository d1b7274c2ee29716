"""The email app: an outbox and a compose form. Sending is never the right action for these tasks:
every task leaves the `email` table out of its allowed mutations, so a sent message is forbidden."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.invoices.models import Email
from sites.invoices.pages import PREFIX, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.listing import searched
from sites.kit.operation import OperationContext
from sites.kit.paging import paged

router = APIRouter()

Text = Annotated[str, Form()]


def _email_page(session: Session, operation: OperationContext, *, status: int = 200, notice: str | None = None,
                error: str | None = None, recipient: str = "", subject: str = "", body: str = "", q: str = "",
                number: str = "") -> HTMLResponse:
    statement = searched(select(Email), q, Email.recipient, Email.subject).order_by(col(Email.id))
    kept = {"q": q.strip()}
    sent = paged(session, statement, page=number, path=f"{PREFIX}/email", query=kept)
    return page(operation, "email.html", status=status, title="Email", sent=sent.rows, pages=sent, chosen=kept,
                notice=notice, error=error, recipient=recipient, subject=subject, body=body)


@router.get("/email", response_class=HTMLResponse)
def outbox(session: SessionDep, operation: OperationDep, sent: str = "", q: str = "",
           number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The compose form and the messages sent, a page at a time: those whose recipient or subject holds `q`."""
    return _email_page(session, operation, notice="Message sent." if sent else None, q=q, number=number)


@router.post("/email", response_model=None)
def send(session: SessionDep, operation: OperationDep, recipient: Text = "", subject: Text = "",
         body: Text = "") -> Response:
    """Sends (records) a message; 422 when the recipient, subject or message is empty."""
    if not (recipient.strip() and subject.strip() and body.strip()):
        return _email_page(session, operation, status=422, error="Message not sent: fill in To, Subject and Message.",
                           recipient=recipient, subject=subject, body=body)
    session.add(
        Email(message_id=f"M-{operation.rng.randint(100000, 999999)}", recipient=recipient.strip(),
              subject=subject.strip(), body=body.strip(), sent_at=operation.clock.text())
    )
    return RedirectResponse(f"{PREFIX}/email?sent=1", status_code=303)
