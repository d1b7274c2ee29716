"""The toy site's pages: the shelf (with a form that adds an item) and each item (with a form that saves its
quantity). Its rules are the server's: an item needs a name, and a quantity is a whole number; otherwise the form
comes back with a 422 naming the problem, and nothing changes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from computerops.core.numbers import whole_number
from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.pages import SitePages
from toy_site.models import Item
from toy_site.pages import ITEM_NOTICES, LIST_NOTICES, PAGES, PREFIX

FormText = Annotated[str, Form()]


def build_router(pages: SitePages = PAGES) -> APIRouter:
    """Every page of the toy site, with paths relative to its `/toy` mount point, drawn by `pages`."""
    router = APIRouter()

    def shelf_page(session: Session, operation: OperationContext, *, values: dict[str, str],
                   notice: str | None = None, error: str | None = None) -> HTMLResponse:
        items = list(session.exec(select(Item).order_by(col(Item.name), col(Item.id))))
        return pages.page(operation, "items.html", status=200 if error is None else 422, title="Shelf",
                          items=items, values=values, notice=notice, error=error)

    def item_form(operation: OperationContext, item: Item, quantity: str, *, notice: str | None = None,
                  error: str | None = None) -> HTMLResponse:
        return pages.page(operation, "item.html", status=200 if error is None else 422, title=item.name, item=item,
                          quantity=quantity, notice=notice, error=error)

    @router.get("/", response_class=HTMLResponse)
    def shelf(session: SessionDep, operation: OperationDep, added: str = "") -> HTMLResponse:
        """Every item by name, each linking to its page, and the form that adds one."""
        return shelf_page(session, operation, values={"name": "", "quantity": ""},
                          notice=LIST_NOTICES.pick(added=added))

    @router.post("/items", response_model=None)
    def add_item(
        session: SessionDep, operation: OperationDep, name: FormText = "", quantity: FormText = ""
    ) -> Response:
        """Adds an item; 422 without a name or with a quantity that is not a whole number."""
        number = whole_number(quantity.strip())
        if not name.strip() or number is None:
            error = "Not added: the name is empty." if not name.strip() else _not_a_number(quantity)
            return shelf_page(session, operation, values={"name": name, "quantity": quantity}, error=error)
        session.add(Item(name=name.strip(), quantity=number))
        return RedirectResponse(f"{PREFIX}/?added=1", status_code=303)

    @router.get("/items/{item_id}", response_model=None)
    def item_page(item_id: str, session: SessionDep, operation: OperationDep, saved: str = "") -> Response:
        """An item with its quantity in a form."""
        item = _item(session, item_id)
        if item is None:
            return pages.not_found(operation, f"Item {item_id}")
        return item_form(operation, item, str(item.quantity), notice=ITEM_NOTICES.pick(saved=saved))

    @router.post("/items/{item_id}", response_model=None)
    def save_quantity(item_id: str, session: SessionDep, operation: OperationDep, quantity: FormText = "") -> Response:
        """Saves the item's quantity, written only when it changed (so the form saved unchanged changes nothing)."""
        item = _item(session, item_id)
        if item is None:
            return pages.not_found(operation, f"Item {item_id}")
        number = whole_number(quantity.strip())
        if number is None:
            return item_form(operation, item, quantity, error=_not_a_number(quantity))
        if number != item.quantity:
            item.quantity = number
            session.add(item)
        return RedirectResponse(f"{PREFIX}/items/{item.id}?saved=1", status_code=303)

    return router


def _not_a_number(text: str) -> str:
    return f'Not saved: "{text}" is not a whole number.'


def _item(session: Session, item_id: str) -> Item | None:
    """The item with this id (given as path text), or None."""
    number = whole_number(item_id)
    return None if number is None else session.get(Item, number)
