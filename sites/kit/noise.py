"""Page noise: what real back-office pages do to an agent that the sites' clean pages do not (docs/noise.md).

Each kind is declared once (`NOISE`, its parameters and the text that shows it fired) and is a seeded, deterministic
transformation of one page's HTML (`dress`), or, for a session timeout, a page served in its place
(`session_expired_page`). Whether a kind fires on a page is a sha256 draw of (run seed, task, repetition, page
ordinal, kind), as site faults draw (sites/kit/faults.py `draw`), so a replay of the episode draws the same. No kind
changes the backend, an operation or what a form submits: what hides a control reveals it again (a click, a scroll, a
timer), and every dismissal is client-side or a plain GET of the same page.
"""

from __future__ import annotations

from html import escape
from typing import Final, Literal, get_args

from lxml import html as lxml_html
from lxml.html import HtmlElement
from pydantic import BaseModel, ConfigDict, Field

from sites.kit.faults import draw

NoiseKind = Literal["consent_banner", "interstitial", "layout_shift", "label_variation", "load_more", "lazy_rows",
                    "slow_control", "session_timeout"]
NOISE_KINDS: tuple[NoiseKind, ...] = get_args(NoiseKind)
CLEAN: Final = "clean"
"""The control's level: no noise at all."""
NoiseArm = Literal["clean", "consent_banner", "interstitial", "layout_shift", "label_variation", "load_more",
                   "lazy_rows", "slow_control", "session_timeout"]


class NoiseParams(BaseModel):
    """One kind's parameters, declared once in `NOISE`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: NoiseKind
    rate: float = Field(ge=0.0, le=1.0)
    """The share of an episode's pages it is drawn for (1: every page)."""
    page: int | None = Field(default=None, ge=1)
    """The one page ordinal it is drawn for (the n-th page of the episode), in place of the rate."""
    rows: int = Field(default=10, ge=1)
    """The rows a list shows before more are loaded (`load_more`, `lazy_rows`)."""
    seconds: float = Field(default=0.0, ge=0.0)
    """How long a control waits behind a spinner, or a banner before it pushes the page down."""
    shows: str
    """Text the kind puts on the page: an observation containing it saw the noise (`label_variation`: its labels)."""
    dismiss: str | None = None
    """The label of the control that takes it away, where one does (what a scripted control clicks)."""


NOISE: dict[NoiseKind, NoiseParams] = {p.kind: p for p in (
    NoiseParams(kind="consent_banner", rate=1.0, shows="We value your privacy", dismiss="Accept all"),
    NoiseParams(kind="interstitial", rate=0.0, page=2, shows="Quick survey", dismiss="Not now"),
    NoiseParams(kind="layout_shift", rate=0.5, seconds=0.6, shows="Scheduled maintenance"),
    NoiseParams(kind="label_variation", rate=1.0, shows=""),
    NoiseParams(kind="load_more", rate=1.0, rows=10, shows="Load more", dismiss="Load more"),
    NoiseParams(kind="lazy_rows", rate=1.0, rows=10, shows="Loading more rows"),
    NoiseParams(kind="slow_control", rate=0.5, seconds=2.0, shows="Loading…"),
    NoiseParams(kind="session_timeout", rate=0.0, page=3, shows="Your session has expired",
                dismiss="Sign in again"),
)}

BUTTON_LABELS: dict[str, tuple[str, ...]] = {
    "Save": ("Update", "Apply changes"),
    "Search": ("Find", "Go"),
    "Filter": ("Apply", "Apply filters"),
    "Send": ("Submit",),
    "Show": ("View",),
}
"""A button's whole label and what else back-office apps call it."""
BUTTON_VERBS: dict[str, tuple[str, ...]] = {
    "Save": ("Update",), "Send": ("Submit",), "Create": ("Add", "New"), "Request": ("Ask for",),
}
"""A button's leading verb and what else back-office apps call it ("Save status" / "Update status")."""
HEADER_SYNONYMS: dict[str, tuple[str, ...]] = {
    "Status": ("State",), "Amount": ("Value",), "Created": ("Created on", "Date created"), "Number": ("No.",),
    "Customer": ("Client",), "Subject": ("Title",), "Reference": ("Ref.",), "Submitted": ("Submitted on",),
    "Description": ("Details",), "Vendor": ("Supplier",), "Approver": ("Approved by",), "Queue": ("Team",),
    "Received": ("Received on",), "Total": ("Sum",), "Kind": ("Type",), "Name": ("Full name",),
}
"""A column header and what else back-office apps call it."""


def parse_noise_kinds(text: str) -> list[NoiseKind]:
    """`KIND,...` as `run --noise` takes it, in the order given; ValueError naming an unknown or repeated kind."""
    kinds: list[NoiseKind] = []
    for word in (part.strip() for part in text.split(",")):
        kind = next((known for known in NOISE_KINDS if known == word), None)
        if not word:
            continue
        if kind is None:
            raise ValueError(f"--noise: unknown noise kind {word!r} (known: {', '.join(NOISE_KINDS)})")
        if kind in kinds:
            raise ValueError(f"--noise: {word} given twice")
        kinds.append(kind)
    return kinds


def drawn(kind: NoiseKind, run_seed: int, task_id: str, repetition: int, ordinal: int) -> bool:
    """Whether `kind` is drawn for the episode's `ordinal`-th page (from 1)."""
    params = NOISE[kind]
    if params.page is not None:
        return ordinal == params.page
    return draw(run_seed, task_id, repetition, ordinal, f"noise:{kind}") < params.rate


def variant(run_seed: int, task_id: str, repetition: int, ordinal: int) -> float:
    """The draw that picks a page's variant (which synonym), fixed like the kind's own draw."""
    return draw(run_seed, task_id, repetition, ordinal, "noise:variant")


class Dressed(BaseModel):
    """A page after a kind fired on it: the HTML and the text that shows the noise on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    html: str
    shows: list[str]


def dress(kind: NoiseKind, page: str, choice: float) -> Dressed | None:
    """`page` with `kind` applied (`choice`, in [0, 1), picks its variant); None where the kind has nothing to act on
    in the page (no long list, no form, no label it varies): it did not fire. Never for `session_timeout`, which
    replaces a page rather than dressing it."""
    document = lxml_html.document_fromstring(page)
    body = document.find("body")
    if body is None:
        return None
    shows = _DRESSERS[kind](document, body, choice)
    if shows is None:
        return None
    return Dressed(html=lxml_html.tostring(document, doctype="<!DOCTYPE html>", encoding="unicode"), shows=shows)


def _fragment(markup: str) -> HtmlElement:
    return lxml_html.fragment_fromstring(markup)


def _consent_banner(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    shows = NOISE["consent_banner"].shows
    body.append(_fragment(
        '<div id="noise-consent" role="region" aria-label="Cookie consent" style="position:fixed;left:0;right:0;'
        'bottom:0;min-height:40vh;background:#fff;border-top:2px solid #333;padding:1rem;z-index:1000">'
        f"<p><strong>{shows}.</strong> We use cookies to keep you signed in, to remember your settings and for "
        "analytics. You can change your choice at any time under Settings.</p>"
        '<button type="button" data-noise-dismiss>Accept all</button> '
        '<button type="button" data-noise-dismiss>Reject non-essential</button></div>'))
    body.append(_fragment(
        "<script>(function(){var b=document.getElementById('noise-consent');"
        "if(sessionStorage.getItem('noise-consent')){b.remove();return;}"
        "b.querySelectorAll('[data-noise-dismiss]').forEach(function(x){x.addEventListener('click',function(){"
        "sessionStorage.setItem('noise-consent','1');b.remove();});});})();</script>"))
    return [shows]


def _interstitial(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    shows = NOISE["interstitial"].shows
    body.append(_fragment(
        '<div id="noise-interstitial" style="position:fixed;inset:0;background:rgba(0,0,0,0.5);z-index:1001;'
        'display:flex;align-items:center;justify-content:center">'
        '<div role="dialog" aria-modal="true" aria-labelledby="noise-interstitial-title" '
        'style="background:#fff;padding:1.5rem;max-width:30rem">'
        f'<h2 id="noise-interstitial-title">{shows}</h2>'
        "<p>How satisfied are you with the new back office? Tell us in one minute.</p>"
        '<button type="button" data-noise-dismiss>Take the survey</button> '
        '<button type="button" data-noise-dismiss>Not now</button></div></div>'))
    body.append(_fragment(
        "<script>(function(){var b=document.getElementById('noise-interstitial');"
        "b.querySelectorAll('[data-noise-dismiss]').forEach(function(x){x.addEventListener('click',function(){"
        "b.remove();});});})();</script>"))
    return [shows]


def _layout_shift(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    params = NOISE["layout_shift"]
    body.append(_fragment(
        "<script>setTimeout(function(){var d=document.createElement('div');d.setAttribute('role','status');"
        "d.style.cssText='background:#fff3cd;border:1px solid #c9a800;padding:1.5rem;margin:0 0 1rem 0';"
        f"d.textContent='{params.shows}: the back office is unavailable on Saturday from 02:00 to 04:00 UTC.';"
        "var m=document.querySelector('main')||document.body;m.insertBefore(d,m.firstChild);}"
        f",{round(params.seconds * 1000)});</script>"))
    return [params.shows]


def _relabel(element: HtmlElement, labels: dict[str, tuple[str, ...]], verbs: dict[str, tuple[str, ...]],
             choice: float) -> str | None:
    """The element's text swapped for a synonym of the whole text, or of its leading verb where the text is longer;
    None where none applies."""
    text = (element.text or "").strip()
    if len(element) or not text:
        return None
    head, _, rest = text.partition(" ")
    for word, tail, synonyms in ((text, "", labels), (head, rest, verbs if rest else {})):
        options = synonyms.get(word)
        if options:
            new = options[int(choice * len(options))] + (" " + tail if tail else "")
            element.text = new
            return new
    return None


def _label_variation(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    shows: list[str] = []
    for button in body.iter("button"):
        if (new := _relabel(button, BUTTON_LABELS, BUTTON_VERBS, choice)) is not None:
            shows.append(new)
    for header in body.iter("th"):
        if (new := _relabel(header, HEADER_SYNONYMS, {}, choice)) is not None:
            shows.append(new)
    reordered = any(_swap_columns(table) for table in body.iter("table"))
    return shows if shows or reordered else None


def _swap_columns(table: HtmlElement) -> bool:
    """Columns 2 and 3 of a plain table swapped (the first, often a selection or an id, stays first); False for a
    table with spans or rows of unequal length."""
    rows = [row for row in table.iter("tr")]
    cells = [[cell for cell in row if cell.tag in ("td", "th")] for row in rows]
    if not rows or any(len(c) != len(cells[0]) for c in cells) or len(cells[0]) < 3:
        return False
    if any(cell.get("colspan") or cell.get("rowspan") for row in cells for cell in row):
        return False
    for row in cells:
        second, third = row[1], row[2]
        second.addprevious(third)
    return True


def _long_lists(body: HtmlElement, rows: int, marker: str) -> list[tuple[HtmlElement, int]]:
    """Each table with more body rows than `rows`, those beyond hidden and marked with the `marker` attribute: the
    table and how many rows it hides."""
    hidden: list[tuple[HtmlElement, int]] = []
    for table in body.iter("table"):
        data = [row for row in table.iter("tr") if row.find("td") is not None]
        if len(data) > rows:
            for row in data[rows:]:
                row.set("hidden", "")
                row.set(marker, "")
            hidden.append((table, len(data) - rows))
    return hidden


def _load_more(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    params = NOISE["load_more"]
    hidden = _long_lists(body, params.rows, "data-noise-more")
    for table, more in hidden:
        table.addnext(_fragment(f'<p><button type="button" data-noise-load>{params.shows} ({more} more)'
                                "</button></p>"))
    if not hidden:
        return None
    body.append(_fragment(
        "<script>document.querySelectorAll('[data-noise-load]').forEach(function(b){b.addEventListener('click',"
        "function(){var t=b.parentNode.previousElementSibling;var r=t.querySelectorAll('tr[data-noise-more][hidden]');"
        f"for(var i=0;i<r.length&&i<{params.rows};i++){{r[i].removeAttribute('hidden');}}"
        "var left=r.length-Math.min(r.length," + str(params.rows) + ");"
        f"if(left<=0){{b.parentNode.remove();}}else{{b.textContent='{params.shows} ('+left+' more)';}}}});}});"
        "</script>"))
    return [params.shows]


def _lazy_rows(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    params = NOISE["lazy_rows"]
    hidden = _long_lists(body, params.rows, "data-noise-lazy")
    for table, _ in hidden:
        table.addnext(_fragment(f'<p role="status" data-noise-sentinel>{params.shows}…</p>'))
    if not hidden:
        return None
    body.append(_fragment(
        "<script>document.querySelectorAll('[data-noise-sentinel]').forEach(function(s){var t=s.previousElementSibling;"
        "var o=new IntersectionObserver(function(es){if(!es[0].isIntersecting){return;}setTimeout(function(){"
        "var r=t.querySelectorAll('tr[data-noise-lazy][hidden]');"
        f"for(var i=0;i<r.length&&i<{params.rows};i++){{r[i].removeAttribute('hidden');}}"
        f"if(r.length<={params.rows}){{o.disconnect();s.remove();}}}},400);}});o.observe(s);}});</script>"))
    return [params.shows]


def _slow_control(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    params = NOISE["slow_control"]
    slowed = 0
    for form in body.iter("form"):
        if (form.get("method") or "get").lower() != "post":
            continue
        for control in form.iter("button", "input"):
            submits = (control.tag == "button" and (control.get("type") or "submit") == "submit") or (
                control.tag == "input" and control.get("type") == "submit")
            if submits:
                control.set("hidden", "")
                control.set("data-noise-slow", "")
                control.addprevious(_fragment(f'<span role="status" data-noise-spinner>{params.shows}</span>'))
                slowed += 1
    if not slowed:
        return None
    body.append(_fragment(
        "<script>setTimeout(function(){document.querySelectorAll('[data-noise-spinner]').forEach(function(s){"
        "s.remove();});document.querySelectorAll('[data-noise-slow]').forEach(function(c){"
        f"c.removeAttribute('hidden');}});}},{round(params.seconds * 1000)});</script>"))
    return [params.shows]


def _never(document: HtmlElement, body: HtmlElement, choice: float) -> list[str] | None:
    return None  # a session timeout replaces the page: `session_expired_page`


_DRESSERS = {
    "consent_banner": _consent_banner, "interstitial": _interstitial, "layout_shift": _layout_shift,
    "label_variation": _label_variation, "load_more": _load_more, "lazy_rows": _lazy_rows,
    "slow_control": _slow_control, "session_timeout": _never,
}


def session_expired_page(path: str, query: str) -> str:
    """The page a timed-out session gets in place of `path`: signing in again is a GET of the same page with the
    query exactly as it was sent (the tenant is bound by the browser context, so it is kept)."""
    params = NOISE["session_timeout"]
    again = escape(path + ("?" + query if query else ""), quote=True)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Session expired</title></head>"
            f"<body><main><h1>{params.shows}</h1><p>For your security you were signed out after a period of "
            "inactivity. Sign in again to continue where you left off.</p>"
            f'<p><a href="{again}">{params.dismiss}</a></p></main></body></html>')
