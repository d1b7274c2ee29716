"""Writing mail: a new message, a reply, a forward, and editing or sending a draft.

Every form posts back here; a valid "Send" stores the message in `sent`, a valid "Save draft"
stores it in `drafts`, then the browser is redirected (303) to that folder. An invalid form is
shown again with status 422 naming the problem, and nothing changes.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.webmail.mail import clean, outgoing, refusal
from sites.webmail.models import Message
from sites.webmail.pages import PREFIX, message_by_id, not_found, page

router = APIRouter()

FormText = Annotated[str, Form()]


def _form(
    operation: OperationContext,
    *,
    title: str,
    action: str,
    recipient: str = "",
    subject: str = "",
    body: str = "",
    original: Message | None = None,
    forward: bool = False,
    draft: Message | None = None,
    error: str | None = None,
) -> HTMLResponse:
    """The message form; filled from `draft` (read off the row, so the page records its fields as shown) or else
    from `recipient`, `subject` and `body` (what was typed, shown again after a refusal). Below it, the `original`
    message replied to or forwarded, whose body the page quotes in full."""
    if original is not None:
        operation.shown.row(original, "body")  # quoted line by line (split), so no output is the column itself
    return page(operation, "compose.html", status=200 if error is None else 422, title=title, action=action,
                recipient=recipient, subject=subject, body=body, original=original, forward=forward, draft=draft,
                error=error)


def _done(folder: str) -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}/{folder}?done={'sent' if folder == 'sent' else 'saved'}", status_code=303)


def _folder_of(choice: str) -> str:
    return "drafts" if choice == "draft" else "sent"


@router.get("/compose", response_class=HTMLResponse)
def compose_form(operation: OperationDep) -> HTMLResponse:
    """An empty new-message form."""
    return _form(operation, title="New message", action=f"{PREFIX}/compose")


@router.post("/compose", response_model=None)
def compose(
    session: SessionDep, operation: OperationDep, to: FormText = "", subject: FormText = "",
    body: FormText = "", action: FormText = "send",
) -> Response:
    """Sends a new message (or saves it as a draft)."""
    error = refusal(to, subject)
    if error is not None:
        return _form(operation, title="New message", action=f"{PREFIX}/compose", recipient=to, subject=subject,
                     body=body, error=error)
    folder = _folder_of(action)
    session.add(outgoing(operation, folder=folder, recipient=to, subject=subject, body=body))
    return _done(folder)


@router.get("/messages/{message_id}/reply", response_model=None)
def reply_form(message_id: str, session: SessionDep, operation: OperationDep) -> Response:
    """A reply to a received message, addressed to its sender, subject "Re: ..."."""
    original = message_by_id(session, message_id, "inbox")
    if original is None:
        return not_found(operation, f"Received message {message_id}")
    return _form(operation, title=f"Reply: {original.subject}", action=f"{PREFIX}/messages/{original.id}/reply",
                 recipient=original.sender_email, subject=f"Re: {original.subject}", original=original)


@router.post("/messages/{message_id}/reply", response_model=None)
def reply(
    message_id: str, session: SessionDep, operation: OperationDep, to: FormText = "", subject: FormText = "",
    body: FormText = "", action: FormText = "send",
) -> Response:
    """Sends the reply (or saves it as a draft), linked to the message it answers."""
    original = message_by_id(session, message_id, "inbox")
    if original is None:
        return not_found(operation, f"Received message {message_id}")
    error = refusal(to, subject)
    if error is not None:
        return _form(operation, title=f"Reply: {original.subject}", action=f"{PREFIX}/messages/{original.id}/reply",
                     recipient=to, subject=subject, body=body, original=original, error=error)
    folder = _folder_of(action)
    session.add(outgoing(operation, folder=folder, recipient=to, subject=subject, body=body, reply_to_id=original.id))
    return _done(folder)


@router.get("/messages/{message_id}/forward", response_model=None)
def forward_form(message_id: str, session: SessionDep, operation: OperationDep) -> Response:
    """A forward of a received message: a recipient and a note above the forwarded text."""
    original = message_by_id(session, message_id, "inbox")
    if original is None:
        return not_found(operation, f"Received message {message_id}")
    return _form(operation, title=f"Forward: {original.subject}",
                 action=f"{PREFIX}/messages/{original.id}/forward", original=original, forward=True)


@router.post("/messages/{message_id}/forward", response_model=None)
def forward(
    message_id: str, session: SessionDep, operation: OperationDep, to: FormText = "", body: FormText = "",
) -> Response:
    """Sends the forward, subject "Fwd: ...", the note as its body, linked to the forwarded message."""
    original = message_by_id(session, message_id, "inbox")
    if original is None:
        return not_found(operation, f"Received message {message_id}")
    subject = f"Fwd: {original.subject}"
    error = refusal(to, subject)
    if error is not None:
        return _form(operation, title=f"Forward: {original.subject}",
                     action=f"{PREFIX}/messages/{original.id}/forward", recipient=to, body=body, original=original,
                     forward=True, error=error)
    session.add(outgoing(operation, folder="sent", recipient=to, subject=subject, body=body,
                         forward_of_id=original.id))
    return _done("sent")


@router.get("/drafts/{message_id}", response_model=None)
def draft_form(message_id: str, session: SessionDep, operation: OperationDep) -> Response:
    """A draft in the message form, to edit, save again or send."""
    draft = message_by_id(session, message_id, "drafts")
    if draft is None:
        return not_found(operation, f"Draft {message_id}")
    return _form(operation, title=f"Draft: {draft.subject}", action=f"{PREFIX}/drafts/{draft.id}", draft=draft)


@router.post("/drafts/{message_id}", response_model=None)
def save_or_send_draft(
    message_id: str, session: SessionDep, operation: OperationDep, to: FormText = "", subject: FormText = "",
    body: FormText = "", action: FormText = "send",
) -> Response:
    """Saves the draft's new text, or sends it: the same row moves from `drafts` to `sent`."""
    draft = message_by_id(session, message_id, "drafts")
    if draft is None:
        return not_found(operation, f"Draft {message_id}")
    error = refusal(to, subject)
    if error is not None:
        return _form(operation, title=f"Draft: {draft.subject}", action=f"{PREFIX}/drafts/{draft.id}",
                     recipient=to, subject=subject, body=body, error=error)
    draft.recipient, draft.subject, draft.body = clean(to), clean(subject), clean(body)
    draft.folder = _folder_of(action)
    draft.sent_at = operation.clock.text()
    session.add(draft)
    return _done(draft.folder)
