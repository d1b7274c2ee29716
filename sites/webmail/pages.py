"""Rendering and look-ups shared by the webmail's routes."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session

from computerops.core.numbers import whole_number
from sites.kit.pages import SitePages
from sites.webmail.models import Contact, Message

PAGES = SitePages(Path(__file__).parent / "templates")
"""The kit's pages drawn in this site's templates: `page` answers with one, `not_found` with the 404 page."""
page = PAGES.page
not_found = PAGES.not_found
PREFIX = "/webmail"


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
