"""What the webmail's lists select: a folder's or the address book's search box and filters as one statement.

Search is a case-insensitive substring match over what a person would type to find a message (its subject, the
sender's name or address, the recipient, words of its text) or a contact (name, email, company); blank searches
nothing. Filters are equalities on one column (a message's sender or recipient address, a contact's company or
address), so a list that is only filtered is read as a whole listing when it fits on one page
(`sites.kit.paging.paged`), and a searched one is not: a substring match is no statement about which rows exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from sites.webmail.models import Contact, Message


@dataclass(frozen=True)
class ListQuery:
    """A list's search text and filters as the query string gave them (trimmed)."""

    q: str = ""
    address: str = ""
    """The exact address filter: a message's sender (inbox) or recipient (sent, drafts), a contact's email."""
    company: str = ""

    @property
    def params(self) -> dict[str, str]:
        """The parameters that apply, for the page links (`paged` drops the empty ones)."""
        return {"q": self.q, "address": self.address, "company": self.company}


def list_query(q: str = "", address: str = "", company: str = "") -> ListQuery:
    """The query with blanks trimmed."""
    return ListQuery(q=q.strip(), address=address.strip(), company=company.strip())


def _contains(column: Any, text: str) -> Any:
    return col(column).icontains(text, autoescape=True)


def folder_selected(folder: str, query: ListQuery) -> SelectOfScalar[Message]:
    """A folder's messages newest first, those whose subject, sender, recipient or text holds the search, from
    (inbox) or to (sent, drafts) exactly the address chosen."""
    statement = select(Message).where(Message.folder == folder)
    if query.address:
        party = Message.sender_email if folder == "inbox" else Message.recipient
        statement = statement.where(col(party) == query.address)
    if query.q:
        statement = statement.where(or_(*(_contains(column, query.q) for column in (
            Message.subject, Message.sender_name, Message.sender_email, Message.recipient, Message.body))))
    return statement.order_by(col(Message.sent_at).desc(), col(Message.id))


def contacts_selected(query: ListQuery) -> SelectOfScalar[Contact]:
    """Contacts by name whose name, email or company holds the search, of the company chosen, with exactly the
    address chosen."""
    statement = select(Contact)
    if query.company:
        statement = statement.where(Contact.company == query.company)
    if query.address:
        statement = statement.where(Contact.email == query.address)
    if query.q:
        statement = statement.where(or_(*(_contains(column, query.q)
                                          for column in (Contact.name, Contact.email, Contact.company))))
    return statement.order_by(col(Contact.name), col(Contact.id))


def companies(session: Session) -> list[str]:
    """The companies the address book names, sorted: the company filter's options."""
    return sorted({str(name) for name in session.exec(select(Contact.company).distinct()) if name})
