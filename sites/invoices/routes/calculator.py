"""The calculator: a form that adds up a list of amounts (a GET form; it changes nothing)."""

from __future__ import annotations

import re

from fastapi import APIRouter
from starlette.responses import HTMLResponse

from sites.invoices.pages import page
from sites.kit.deps import OperationDep
from sites.kit.money import format_cents, parse_cents

router = APIRouter()


def add_up(numbers: str) -> int | str:
    """The sum in cents of amounts separated by spaces, `+` or `;`; or a message naming a bad amount."""
    total = 0
    for token in (t for t in re.split(r"[\s+;]+", numbers) if t):
        cents = parse_cents(token)
        if cents is None:
            return f'"{token}" is not an amount; type amounts like 294.00 separated by + or spaces.'
        total += cents
    return total


@router.get("/calculator", response_class=HTMLResponse)
def calculator(operation: OperationDep, numbers: str = "") -> HTMLResponse:
    """The calculator, with the sum of `numbers` when given."""
    result = add_up(numbers) if numbers.strip() else None
    return page(
        operation, "calculator.html", title="Calculator", numbers=numbers,
        total=format_cents(result) if isinstance(result, int) else None,
        error=result if isinstance(result, str) else None,
    )
