"""Server-rendered pages: one Jinja2 environment per site, layered over the kit's templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, FileSystemLoader, StrictUndefined
from starlette.responses import HTMLResponse

from sites.kit.money import format_cents
from sites.kit.operation import OperationContext
from sites.kit.shown import RecordingEnvironment, ShownRecorder, recording

KIT_TEMPLATES = Path(__file__).parent / "templates"


_RENDERERS: list[PageRenderer] = []
"""Every renderer made in this process (the kit's and one per site: module-level, made once)."""


def compile_pages() -> int:
    """Every template of every renderer made so far, compiled now: a process that renders pages once each, as replay
    does a site's first episode, pays Jinja2's compilation up front instead of in its first requests. The number
    compiled."""
    return sum(len(renderer.compile_all()) for renderer in _RENDERERS)


class PageRenderer:
    """Renders a site's templates; `kit/...` names reach the shared layout and error page."""

    def __init__(self, site_templates: Path | None = None) -> None:
        directories = [KIT_TEMPLATES] if site_templates is None else [site_templates, KIT_TEMPLATES]
        self.env = RecordingEnvironment(
            loader=ChoiceLoader([FileSystemLoader(directory) for directory in directories]),
            autoescape=True,
            undefined=StrictUndefined,  # a misspelt variable fails a test instead of rendering blank
            keep_trailing_newline=True,
        )
        self.env.add_filter("money", format_cents)
        _RENDERERS.append(self)

    def compile_all(self) -> list[str]:
        """Every template this renderer can load, compiled now and kept in its environment's cache (Jinja2 compiles
        a template on its first render otherwise); their names."""
        names = self.env.list_templates(extensions=["html"])
        for name in names:
            self.env.get_template(name)
        return names

    def text(self, name: str, *, recorder: ShownRecorder | None = None, **context: Any) -> str:
        """The rendered template as text; the row columns it reads go to `recorder` (`sites.kit.shown`)."""
        with recording(recorder):
            return self.env.get_template(name).render(**context)

    def page(self, name: str, *, status: int = 200, recorder: ShownRecorder | None = None,
             **context: Any) -> HTMLResponse:
        """The rendered template as an HTML response with the given status."""
        return HTMLResponse(self.text(name, recorder=recorder, **context), status_code=status)


class SitePages:
    """One site's pages: its own templates over the kit's, each page showing the operation's logical time.

    The site's templates hold `base.html`, its layout over `kit/base.html`, which shows the page's `title`
    and the logical time `now`; the kit's `kit/not_found.html` is drawn in that layout.
    """

    def __init__(self, site_templates: Path) -> None:
        self.renderer = PageRenderer(site_templates)

    def page(self, operation: OperationContext, name: str, *, status: int = 200, **context: Any) -> HTMLResponse:
        """A page of the site: its layout with nav and the operation's logical time ("Now: ..."); what it shows of
        the tenant's rows is recorded on the operation (`sites.kit.shown`)."""
        return self.renderer.page(name, status=status, recorder=operation.shown, now=operation.clock.text(), **context)

    def not_found(self, operation: OperationContext, what: str) -> HTMLResponse:
        """The site's 404 page, naming what was looked for ("Ticket T-9999 was not found.")."""
        message = f"{what} was not found."
        return self.page(operation, "kit/not_found.html", status=404, title="Not found", message=message)


KIT_PAGES = PageRenderer()


def message_page(*, status: int, title: str, message: str) -> HTMLResponse:
    """A plain kit page (errors, refusals) that shows no tenant data."""
    return KIT_PAGES.page("kit/message.html", status=status, title=title, message=message)
