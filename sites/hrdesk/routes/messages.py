"""The desk's messages (`sites.hrdesk.messages`): the list, newest first (searched by employee, manager, request
number or subject), and each message's page. Read-only: what a message asks is done on the request's own page."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import HTMLResponse

from sites.hrdesk.messages import desk_message, desk_messages
from sites.hrdesk.pages import PREFIX, PageQuery, not_found, page
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.paging import PAGE_SIZE, Pages, page_number

router = APIRouter()


@router.get("/messages", response_class=HTMLResponse)
def message_list(session: SessionDep, operation: OperationDep, q: str = "",
                 page_number_text: PageQuery = "") -> HTMLResponse:
    """Messages to the desk, newest first, 25 to a page: sent, from, subject (linking to the message)."""
    text = q.strip()
    messages = desk_messages(session)
    if text:
        needle = text.lower()
        messages = [m for m in messages if needle in m.subject.lower() or needle in m.sender.name.lower()]
    count = max(1, -(-len(messages) // PAGE_SIZE))
    number = min(page_number(page_number_text), count)
    rows = messages[(number - 1) * PAGE_SIZE:number * PAGE_SIZE]
    pages = Pages(rows=rows, number=number, count=count, total=len(messages), path=f"{PREFIX}/messages",
                  query=(("q", text),) if text else ())
    return page(operation, "messages.html", title="Messages to the desk", pages=pages, filters={"q": text})


@router.get("/messages/{key}", response_class=HTMLResponse)
def message_detail(key: str, session: SessionDep, operation: OperationDep) -> HTMLResponse:
    """One message with its sender, time, subject, text and a link to the leave request it is about; 404 for an
    unknown key."""
    found = desk_message(session, key)
    if found is None:
        return not_found(operation, f"Message {key}")
    return page(operation, "desk_message.html", title=found.subject, message=found)
