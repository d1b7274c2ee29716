"""The portal: the start page, listing the apps a task may use.

`/invoices/portal?apps=viewer,form` lists only those apps (the task's tool ladder) and remembers them for the
episode's browser (the `invoices_apps` cookie), so the Portal link of every page (`/invoices/portal`, no query)
lists the same apps again; with neither (or no known name) it lists every app. The list is what the task grants:
the other apps still answer, so using one the portal does not list is visible in the operation log, not refused.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Cookie
from fastapi.responses import RedirectResponse
from starlette.responses import HTMLResponse

from sites.invoices.pages import APPS, APPS_BY_KEY, EXTRA_APPS, PREFIX, page
from sites.kit.deps import OperationDep

router = APIRouter()
APPS_COOKIE = "invoices_apps"
"""The apps a portal with an `apps` query listed, for its Portal links without one."""


@router.get("/", response_model=None)
def home() -> RedirectResponse:
    """The bare site root sends the browser to the portal with every app."""
    return RedirectResponse(f"{PREFIX}/portal", status_code=303)


@router.get("/portal", response_class=HTMLResponse)
def portal(operation: OperationDep, apps: str = "",
           invoices_apps: Annotated[str, Cookie()] = "") -> HTMLResponse:
    """The apps named in `apps` (comma-separated keys, in ladder order), else those the browser was given before,
    else all of them."""
    wanted = {key.strip() for key in (apps or invoices_apps).split(",")}
    shown = [app for app in (*APPS, *EXTRA_APPS) if app.key in wanted] or list(APPS)
    limited = len(shown) < len(APPS_BY_KEY)
    response = page(operation, "portal.html", title="Portal", apps=shown, limited=limited)
    if apps and limited:
        response.set_cookie(APPS_COOKIE, ",".join(app.key for app in shown), path=PREFIX, httponly=True,
                            samesite="strict")
    return response
