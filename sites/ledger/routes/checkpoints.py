"""Checkpoints: the operator's record of what a batch has processed and what is unfinished."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, select
from starlette.responses import HTMLResponse, Response

from sites.kit.deps import OperationDep, SessionDep
from sites.kit.operation import OperationContext
from sites.kit.shown import listed
from sites.ledger.lists import period_batches
from sites.ledger.models import CHECKPOINT_STATUSES, Checkpoint
from sites.ledger.pages import PREFIX, page
from sites.ledger.procedures import record_checkpoint

router = APIRouter()


def _checkpoints_page(
    session: Session,
    operation: OperationContext,
    *,
    status: int = 200,
    notice: str | None = None,
    error: str | None = None,
    batch: str = "",
    checkpoint_status: str = "partial",
    note: str = "",
) -> HTMLResponse:
    rows = listed(session, select(Checkpoint).order_by(col(Checkpoint.id)))
    return page(
        operation,
        "checkpoints.html",
        status=status,
        title="Checkpoints",
        checkpoints=rows,
        batches=period_batches(session),
        statuses=CHECKPOINT_STATUSES,
        notice=notice,
        error=error,
        batch=batch,
        checkpoint_status=checkpoint_status,
        note=note,
    )


@router.get("/checkpoints", response_class=HTMLResponse)
def checkpoints(session: SessionDep, operation: OperationDep, recorded: str = "") -> HTMLResponse:
    """Every checkpoint, oldest first, and the form that records a new one."""
    return _checkpoints_page(session, operation, notice="Checkpoint recorded." if recorded else None)


@router.post("/checkpoints", response_model=None)
def new_checkpoint(
    session: SessionDep,
    operation: OperationDep,
    batch: Annotated[str, Form()] = "",
    status: Annotated[str, Form()] = "",
    note: Annotated[str, Form()] = "",
) -> Response:
    """Records a checkpoint of one of the current period's batches; 422 for another batch or an unknown status, or
    "complete" with unfinished events."""
    if batch not in period_batches(session) or status not in CHECKPOINT_STATUSES:
        error: str | None = "Checkpoint not recorded: choose a listed batch and status."
    else:
        error = record_checkpoint(session, batch=batch, status=status, note=note, now=operation.clock.text())
    if error is not None:
        return _checkpoints_page(
            session, operation, status=422, error=error, batch=batch, checkpoint_status=status, note=note
        )
    return RedirectResponse(f"{PREFIX}/checkpoints?recorded=1", status_code=303)
