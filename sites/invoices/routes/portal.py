"""The portal: the start page, listing the apps a task may use.

`/invoices/portal?apps=viewer,form` lists only those apps (the task's tool ladder); without `apps`
(or with no known name in it) it lists every app. The list is what the task grants: the other apps
still answer, so using one the portal does not list is visible in the operation log, not refused.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse
from starlette.responses import HTMLResponse

from sites.invoices.pages import APPS, APPS_BY_KEY, PREFIX, page
from sites.kit.deps import OperationDep

router = APIRouter()


@router.get("/", response_model=None)
def home() -> RedirectResponse:
    """The bare site root sends the browser to the portal with every app."""
    return RedirectResponse(f"{PREFIX}/portal", status_code=303)


@router.get("/portal", response_class=HTMLResponse)
def portal(operation: OperationDep, apps: str = "") -> HTMLResponse:
    """The apps named in `apps` (comma-separated keys, in ladder order), or all of them."""
    wanted = {key.strip() for key in apps.split(",")}
    shown = [app for app in APPS if app.key in wanted] or list(APPS)
    limited = len(shown) < len(APPS_BY_KEY)
    return page(operation, "portal.html", title="Portal", apps=shown, limited=limited)
