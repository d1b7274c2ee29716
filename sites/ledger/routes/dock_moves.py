"""Dock moves: the bulk form that moves the pending deliveries of one dock to another (a dock closed for repairs).

The page lists the pending deliveries bound for the dock the operator chose ("From dock"), each selected by
default; "Move selected" moves every selected one to the dock "Move to" names, whole or not at all, and bumps each
moved delivery's record version as an amendment does. A delivered delivery is final and refuses the move, as its
own amendment form does.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.shown import listed
from sites.ledger.models import DESTINATIONS, Delivery
from sites.ledger.pages import PREFIX, delivery_by_number, page

router = APIRouter()


def _page(session: Session, operation: OperationContext, source: str, *, status: int = 200,
          notice: str | None = None, error: str | None = None,
          selected: frozenset[str] | None = None) -> HTMLResponse:
    rows: list[Delivery] = []
    if source in DESTINATIONS:
        rows = listed(session, select(Delivery).where(Delivery.status == "pending", Delivery.destination == source)
                      .order_by(col(Delivery.number)))
    chosen = frozenset(row.number for row in rows) if selected is None else selected
    return page(operation, "dock_moves.html", status=status, title="Dock moves", source=source, rows=rows,
                selected=chosen, destinations=DESTINATIONS, notice=notice, error=error)


@router.get("/dock-moves", response_class=HTMLResponse)
def dock_moves(session: SessionDep, operation: OperationDep, source: str = "", moved: int = 0,
               target: str = "") -> HTMLResponse:
    """The pending deliveries bound for the dock `source`, each selected, and the form that moves them."""
    notice = f"Moved {moved} delivery(ies) to {target}." if moved > 0 and target in DESTINATIONS else None
    return _page(session, operation, source, notice=notice)


@router.post("/dock-moves", response_model=None)
def move_deliveries(
    session: SessionDep,
    operation: OperationDep,
    source: Annotated[str, Form()] = "",
    target: Annotated[str, Form()] = "",
    delivery: Annotated[list[str] | None, Form()] = None,
) -> Response:
    """Moves every selected pending delivery to the dock `target`; 422 or 409 (nothing moved) for no selection, an
    unknown dock or delivery, or a delivered one."""
    chosen = frozenset(delivery or [])
    found = [d for d in (delivery_by_number(session, number) for number in sorted(chosen)) if d is not None]
    error = None
    if not chosen:
        error = "Nothing was moved: select at least one delivery."
    elif target not in DESTINATIONS:
        error = f"Nothing was moved: the dock to move to must be one of {', '.join(DESTINATIONS)}."
    elif len(found) != len(chosen):
        unknown = sorted(chosen - {d.number for d in found})
        error = f"Nothing was moved: no delivery {', '.join(unknown)}."
    else:
        final = [d.number for d in found if d.status != "pending"]
        if final:
            error = f"Nothing was moved: {', '.join(final)} was delivered and can no longer be amended."
    if error is not None:
        return _page(session, operation, source, status=422 if not chosen else 409, error=error, selected=chosen)
    now = operation.clock.text()
    moved = 0
    for item in found:
        if item.destination != target:  # a delivery already bound for that dock is not changed
            item.destination = target
            item.version += 1
            item.updated_at = now
            session.add(item)
            moved += 1
    return RedirectResponse(f"{PREFIX}/dock-moves?source={source}&moved={moved}&target={target}", status_code=303)
