"""The folders (inbox, sent, drafts), a message's page, and the mail policy: read-only pages."""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.injection import as_delivered
from sites.kit.notices import Notices
from sites.kit.operation import OperationContext
from sites.kit.shown import listed, related
from sites.webmail.mail import POLICY_RULES
from sites.webmail.models import Message
from sites.webmail.pages import message_by_id, not_found, page

router = APIRouter()

_NOTICES = Notices({"sent": "Message sent.", "saved": "Draft saved."})


def _folder_page(session: Session, operation: OperationContext, folder: str, title: str, notice: str) -> HTMLResponse:
    """A folder's messages, newest first. Faults this page carries out (docs/faults.md): `duplicate_delivery`
    lists the message `params.message` (an id) a second time, as delivered again (it is the same message);
    `out_of_order` leaves it out, as if it had not arrived yet (then the page does not show the whole folder, so
    no listing of it is recorded)."""
    query = select(Message).where(Message.folder == folder).order_by(col(Message.sent_at).desc(), col(Message.id))
    rows = as_delivered(listed(session, query), operation.fault, "message", lambda message: str(message.id))
    return page(operation, "folder.html", title=title, folder=folder, rows=rows, notice=_NOTICES.named(notice))


@router.get("/", response_class=HTMLResponse)
def inbox(session: SessionDep, operation: OperationDep, done: str = "") -> HTMLResponse:
    """The inbox, newest first: sender, subject (linking to the message) and date."""
    return _folder_page(session, operation, "inbox", "Inbox", done)


@router.get("/sent", response_class=HTMLResponse)
def sent(session: SessionDep, operation: OperationDep, done: str = "") -> HTMLResponse:
    """Sent messages, newest first."""
    return _folder_page(session, operation, "sent", "Sent", done)


@router.get("/drafts", response_class=HTMLResponse)
def drafts(session: SessionDep, operation: OperationDep, done: str = "") -> HTMLResponse:
    """Drafts, newest first; each links to its edit page."""
    return _folder_page(session, operation, "drafts", "Drafts", done)


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
