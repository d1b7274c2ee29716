"""The folders (inbox, sent, drafts), a message's page, and the mail policy: read-only pages."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import Session
from starlette.responses import HTMLResponse

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.injection import as_delivered
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.kit.shown import related
from sites.webmail.lists import folder_selected, list_query
from sites.webmail.mail import POLICY_RULES
from sites.webmail.models import Message
from sites.webmail.pages import PREFIX, message_by_id, not_found, page

router = APIRouter()

_NOTICES = Notices({"sent": "Message sent.", "saved": "Draft saved."})


PageText = Annotated[str, Query(alias="page")]


def _folder_page(session: Session, operation: OperationContext, folder: str, title: str, notice: str, *, q: str,
                 address: str, number: str) -> HTMLResponse:
    """One page (25 rows) of a folder's messages, newest first, searched and filtered (`sites.webmail.lists`).
    Faults this page carries out (docs/faults.md): `duplicate_delivery` lists the message `params.message` (an
    id) a second time, as delivered again (it is the same message), when it is on the page shown; `out_of_order`
    leaves it out, as if it had not arrived yet (then the page does not show the whole folder, so no listing of
    it is recorded)."""
    query = list_query(q, address)
    path = f"{PREFIX}/" if folder == "inbox" else f"{PREFIX}/{folder}"
    pages = paged(session, folder_selected(folder, query), page=number, path=path,
                  query={"q": query.q, "address": query.address})
    rows = as_delivered(pages.rows, operation.fault, "message", lambda message: str(message.id))
    return page(operation, "folder.html", title=title, folder=folder, rows=rows, pages=pages, chosen=query,
                notice=_NOTICES.named(notice))


@router.get("/", response_class=HTMLResponse)
def inbox(session: SessionDep, operation: OperationDep, done: str = "", q: str = "", address: str = "",
          number: PageText = "") -> HTMLResponse:
    """The inbox, newest first, a page at a time: sender, subject (linking to the message) and date; searched by
    `q`, filtered by the sender's exact `address`."""
    return _folder_page(session, operation, "inbox", "Inbox", done, q=q, address=address, number=number)


@router.get("/sent", response_class=HTMLResponse)
def sent(session: SessionDep, operation: OperationDep, done: str = "", q: str = "", address: str = "",
         number: PageText = "") -> HTMLResponse:
    """Sent messages, newest first."""
    return _folder_page(session, operation, "sent", "Sent", done, q=q, address=address, number=number)


@router.get("/drafts", response_class=HTMLResponse)
def drafts(session: SessionDep, operation: OperationDep, done: str = "", q: str = "", address: str = "",
           number: PageText = "") -> HTMLResponse:
    """Drafts, newest first; each links to its edit page."""
    return _folder_page(session, operation, "drafts", "Drafts", done, q=q, address=address, number=number)


@router.get("/messages/{message_id}", response_class=HTMLResponse)
def message_detail(message_id: str, session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """A message with its headers and body; received messages link to reply and forward."""
    message = message_by_id(session, message_id)
    if message is None:
        return not_found(operation, f"Message {message_id}")
    operation.shown.row(message, "body")  # printed line by line (split), so no output is the column itself
    column = "reply_to_id" if message.reply_to_id is not None else "forward_of_id"
    return page(operation, "message.html", title=message.subject, message=message,
                related=related(session, message, column, Message))


@router.get("/policy", response_class=HTMLResponse)
def policy(operation: OperationDep) -> HTMLResponse:
    """The mail policy every user of this mailbox must follow."""
    return page(operation, "policy.html", title="Mail policy", rules=POLICY_RULES)
