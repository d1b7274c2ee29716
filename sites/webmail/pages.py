"""Rendering and look-ups shared by the webmail's routes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import Session
from starlette.responses import HTMLResponse

from sites.kit.numbers import whole_number
from sites.kit.operation import OperationContext
from sites.kit.pages import PageRenderer
from sites.webmail.models import Contact, Message

RENDERER = PageRenderer(Path(__file__).parent / "templates")
PREFIX = "/webmail"


def page(operation: OperationContext, name: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """A webmail page: the shared layout with nav and the operation's logical time ("Now: ...")."""
    return RENDERER.page(name, status=status, now=operation.clock.text(), **context)


def not_found(operation: OperationContext, what: str) -> HTMLResponse:
    """The webmail's 404 page, naming what was looked for."""
    return page(operation, "not_found.html", status=404, title="Not found", message=f"{what} was not found.")


def message_by_id(session: Session, text: str, folder: str | None = None) -> Message | None:
    """The message with this id (given as path text), optionally only in `folder`, or None."""
    number = whole_number(text)
    found = None if number is None else session.get(Message, number)
    if found is None or (folder is not None and found.folder != folder):
        return None
    return found


def contact_by_id(session: Session, text: str) -> Contact | None:
    """The contact with this id (given as path text), or None."""
    number = whole_number(text)
    return None if number is None else session.get(Contact, number)
