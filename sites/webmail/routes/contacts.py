"""The address book: list, add, and edit a contact."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query
from fastapi.responses import RedirectResponse
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.paging import paged
from sites.webmail.lists import companies, contacts_selected, list_query
from sites.webmail.mail import is_address
from sites.webmail.models import Contact
from sites.webmail.pages import PREFIX, contact_by_id, not_found, page

router = APIRouter()

FormText = Annotated[str, Form()]


def _problem(name: str, email: str) -> str | None:
    if not name.strip():
        return "Not saved: the name is empty."
    if not is_address(email):
        return f'Not saved: "{email}" is not an email address.'
    return None


def _contact_form(
    operation: OperationContext, *, title: str, action: str, button: str, values: Contact | dict[str, str],
    error: str | None = None, notice: str | None = None,
) -> HTMLResponse:
    return page(operation, "contact.html", status=200 if error is None else 422, title=title, action=action,
                button=button, values=values, error=error, notice=notice)


@router.get("/contacts", response_class=HTMLResponse)
def contact_list(session: SessionDep, operation: OperationDep, added: str = "", q: str = "", company: str = "",
                 address: str = "", number: Annotated[str, Query(alias="page")] = "") -> HTMLResponse:
    """The contacts by name, a page at a time: name (linking to the contact), email, phone, company; searched by
    `q` (name, email, company), filtered by `company` and by the exact email `address`."""
    query = list_query(q, address, company)
    pages = paged(session, contacts_selected(query), page=number, path=f"{PREFIX}/contacts", query=query.params)
    return page(operation, "contacts.html", title="Contacts", contacts=pages.rows, pages=pages, chosen=query,
                companies=companies(session), notice="Contact added." if added else None)


@router.get("/contacts/new", response_class=HTMLResponse)
def new_contact_form(operation: OperationDep) -> HTMLResponse:
    """An empty new-contact form."""
    values = {"name": "", "email": "", "phone": "", "company": ""}
    return _contact_form(operation, title="New contact", action=f"{PREFIX}/contacts/new", button="Add contact",
                         values=values)


@router.post("/contacts/new", response_model=None)
def add_contact(
    session: SessionDep, operation: OperationDep, name: FormText = "", email: FormText = "",
    phone: FormText = "", company: FormText = "",
) -> Response:
    """Adds a contact; 422 without a name or with an address that is not one. Then the contact list shows the
    contacts of the new one's name (the new one among them)."""
    values = {"name": name, "email": email, "phone": phone, "company": company}
    error = _problem(name, email)
    if error is not None:
        return _contact_form(operation, title="New contact", action=f"{PREFIX}/contacts/new",
                             button="Add contact", values=values, error=error)
    session.add(Contact(name=name.strip(), email=email.strip(), phone=phone.strip(), company=company.strip()))
    return RedirectResponse(f"{PREFIX}/contacts?{urlencode({'added': '1', 'q': name.strip()})}", status_code=303)


@router.get("/contacts/{contact_id}", response_model=None)
def contact_detail(contact_id: str, session: SessionDep, operation: OperationDep, saved: str = "") -> Response:
    """A contact in its edit form, filled with its stored fields (the form reads them off the row, so the page
    records them as shown)."""
    contact = contact_by_id(session, contact_id)
    if contact is None:
        return not_found(operation, f"Contact {contact_id}")
    return _contact_form(operation, title=contact.name, action=f"{PREFIX}/contacts/{contact.id}",
                         button="Save contact", values=contact, notice="Contact saved." if saved else None)


@router.post("/contacts/{contact_id}", response_model=None)
def save_contact(
    contact_id: str, session: SessionDep, operation: OperationDep, name: FormText = "", email: FormText = "",
    phone: FormText = "", company: FormText = "",
) -> Response:
    """Saves the contact's fields; only fields whose value changed are written."""
    contact = contact_by_id(session, contact_id)
    if contact is None:
        return not_found(operation, f"Contact {contact_id}")
    values = {"name": name, "email": email, "phone": phone, "company": company}
    error = _problem(name, email)
    if error is not None:
        return _contact_form(operation, title=contact.name, action=f"{PREFIX}/contacts/{contact.id}",
                             button="Save contact", values=values, error=error)
    for key, value in values.items():
        if getattr(contact, key) != value.strip():
            setattr(contact, key, value.strip())
    session.add(contact)
    return RedirectResponse(f"{PREFIX}/contacts/{contact.id}?saved=1", status_code=303)
