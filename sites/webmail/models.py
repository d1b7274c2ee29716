"""The webmail's tables. Times are `YYYY-MM-DD HH:MM` text (see the kit's clock)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

OWNER_NAME = "Jordan Blake"
OWNER_EMAIL = "jordan.blake@brightlane.example"
"""The mailbox's owner: the sender of every message sent from this site."""

FOLDERS = ("inbox", "sent", "drafts")


class WebmailTable(SQLModel, registry=registry()):
    """Base of the webmail tables: its own registry keeps them apart from other sites' tables."""


class Contact(WebmailTable, table=True):
    __tablename__ = "contact"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    email: str
    phone: str
    company: str


class Message(WebmailTable, table=True):
    """One message in a folder: received (inbox), sent, or a draft not yet sent."""

    __tablename__ = "message"

    id: int | None = Field(default=None, primary_key=True)
    folder: str
    """inbox, sent or drafts."""
    sender_name: str
    sender_email: str
    recipient: str
    subject: str
    body: str
    reply_to_id: int | None = Field(default=None, foreign_key="message.id")
    """The message this one replies to."""
    forward_of_id: int | None = Field(default=None, foreign_key="message.id")
    """The message this one forwards (its body is the note written above the forwarded text)."""
    sent_at: str
    """When it was received, sent, or (for a draft) last saved."""


METADATA = WebmailTable.metadata
