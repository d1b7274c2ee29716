"""What a response showed, as the sites kit records it: the columns a template reads, whole lists with their
filter, documents, nothing for a page the handler never rendered, an older page's data for a stale copy."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from bs4 import BeautifulSoup, Comment
from sqlmodel import Field, Session, SQLModel, col, create_engine, select
from sqlmodel.sql.expression import SelectOfScalar

from computerops.core.binding import TENANT_HEADER
from sites.kit.app import create_app
from sites.kit.faults import FaultDecision, FaultInjector, FaultPlan
from sites.kit.injection import FaultSession
from sites.kit.records import Operation, Shown, ShownListing
from sites.kit.shown import RECORDER_INFO, RecordingEnvironment, ShownRecorder, listed, recording
from sites.kit.tenancy import Tenant, TenantRegistry
from sites.registry import site_definitions, tenant_registry
from tasks import load_catalog


class Gadget(SQLModel, table=True):
    __tablename__ = "gadget_shown_test"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    colour: str
    secret: str = "hidden"


@pytest.fixture()
def session() -> Iterator[Session]:
    engine = create_engine("sqlite://")
    Gadget.metadata.create_all(engine, tables=[SQLModel.metadata.tables["gadget_shown_test"]])
    with Session(engine) as db:
        db.add_all([Gadget(name="cup", colour="red"), Gadget(name="jug", colour="blue"),
                    Gadget(name="mug", colour="red")])
        db.commit()
        db.info[RECORDER_INFO] = ShownRecorder()
        yield db


def _render(template: str, session: Session, **context: object) -> Shown:
    """The template rendered as a site page is, with what it read recorded into the session's recorder."""
    recorder = session.info[RECORDER_INFO]
    assert isinstance(recorder, ShownRecorder)
    with recording(recorder):
        RecordingEnvironment(autoescape=True).from_string(template).render(**context)
    return recorder.shown()


def test_a_page_records_the_columns_its_template_reads_and_no_other(session: Session) -> None:
    rows = listed(session, select(Gadget).where(Gadget.colour == "red").order_by(col(Gadget.id)))
    shown = _render("{% for g in rows %}{{ g.name }}{% endfor %}", session, rows=rows)
    assert [(g.table, g.fields, g.rows) for g in shown.records] == [("gadget_shown_test", ["name"], [[1], [3]])]
    assert [(lst.table, lst.where) for lst in shown.listings] == [("gadget_shown_test", {"colour": "red"})]


def test_a_list_the_page_does_not_show_whole_is_no_listing(session: Session) -> None:
    rows = listed(session, select(Gadget).order_by(col(Gadget.id)))
    skipped = _render("{% for g in rows if g.id != 2 %}{{ g.name }}{% endfor %}", session, rows=rows)
    assert skipped.listings == []  # the template left jug out: the page does not show the whole list


@pytest.mark.parametrize("statement", [select(Gadget).limit(2), select(Gadget).offset(1)])
def test_a_list_cut_by_a_limit_or_an_offset_shows_no_absence(
        session: Session, statement: SelectOfScalar[Gadget]) -> None:
    rows = listed(session, statement)
    shown = _render("{% for g in rows %}{{ g.name }}{% endfor %}", session, rows=rows)
    assert shown.listings == [] and shown.records


@pytest.mark.parametrize("statement", [
    select(Gadget).where(Gadget.colour != "blue"),
    select(Gadget).where(col(Gadget.name).like("%ug")),
])
def test_a_list_with_a_filter_the_kit_cannot_state_is_a_searched_listing(
        session: Session, statement: SelectOfScalar[Gadget]) -> None:
    rows = listed(session, statement)
    shown = _render("{% for g in rows %}{{ g.name }}{% endfor %}", session, rows=rows)
    assert [(lst.where, lst.searched) for lst in shown.listings] == [({}, True)] and shown.records
    assert "searched" not in ShownListing(table="t", where={}).model_dump()  # older evidence's bytes stay


def test_a_limit_the_list_does_not_reach_still_shows_it_whole(session: Session) -> None:
    rows = listed(session, select(Gadget).limit(10))
    shown = _render("{% for g in rows %}{{ g['name'] }}{% endfor %}", session, rows=rows)
    assert [lst.where for lst in shown.listings] == [{}]


def test_documents_are_recorded_where_they_render(session: Session) -> None:
    shown = _render('{{ shows("house-rules") }}{% if False %}{{ shows("never") }}{% endif %}', session)
    assert shown.documents == ["house-rules"] and shown.records == []


async def _get(registry: TenantRegistry, tenant: Tenant, *paths: str, method: str = "GET",
               data: dict[str, str] | None = None) -> list[Operation]:
    transport = httpx.ASGITransport(app=create_app(registry))
    async with httpx.AsyncClient(transport=transport, base_url="http://test.invalid") as client:
        for path in paths:
            await client.request(method, path, headers={TENANT_HEADER: tenant.token}, data=data)
    return tenant.operations()


def _facts(shown: Shown | None) -> set[tuple[str, int, str]]:
    assert shown is not None
    return {(g.table, int(r[0]), f) for g in shown.records for r in g.rows for f in g.fields}  # type: ignore[arg-type]


async def test_a_filtered_list_and_a_record_page_show_what_they_show(tmp_path: Path) -> None:
    registry = tenant_registry(tmp_path)
    try:
        tenant = registry.create("helpdesk", 1)
        # Pending tickets of low priority fit on one page of seed 1's data (a list cut over pages is no whole listing).
        ops = await _get(registry, tenant, "/helpdesk/tickets?status=pending&priority=low", "/helpdesk/tickets/T-2004",
                         "/helpdesk/nothing-here")
        pending, ticket, missing = ops
        assert pending.shown is not None and [lst.where for lst in pending.shown.listings] == [
            {"status": "pending", "priority": "low"}]
        assert ("ticket", 4, "status") in _facts(pending.shown) and ("ticket", 1, "status") not in _facts(pending.shown)
        assert ("escalation", 1, "queue") in _facts(ticket.shown)  # "Waiting in Account security since ..."
        assert ("ticket", 4, "created_at") not in _facts(ticket.shown)  # the page never reads it
        assert missing.status == 404 and missing.shown == Shown()
    finally:
        registry.close()


async def test_a_fault_page_shows_nothing_and_a_stale_copy_shows_its_older_data(tmp_path: Path) -> None:
    registry = tenant_registry(tmp_path)
    try:
        tenant = registry.create("helpdesk", 1)
        forced = {1: FaultDecision(fault="transient_5xx", source="rule:0"),
                  4: FaultDecision(fault="stale_read", source="rule:1")}
        tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
        await _get(registry, tenant, "/helpdesk/notifications", "/helpdesk/notifications")
        await _get(registry, tenant, "/helpdesk/tickets/T-2005/notify", method="POST",
                   data={"subject": "s", "message": "A copy was sent by post."})
        ops = await _get(registry, tenant, "/helpdesk/notifications", "/helpdesk/notifications")
        refused, first, *_, stale, fresh = ops
        assert refused.status >= 500 and refused.shown == Shown()
        assert stale.fault is not None and stale.fault.applied
        assert stale.shown is not None and stale.shown.as_of == first.seq and not stale.shown.records
        assert fresh.shown is not None and fresh.shown.as_of is None and ("notification", 1, "subject") in _facts(
            fresh.shown)
    finally:
        registry.close()


def _templates(site_name: str) -> Path:
    module = importlib.import_module(f"sites.{site_name}")
    assert module.__file__ is not None
    return Path(module.__file__).parent / "templates"


def test_every_document_a_template_renders_is_declared_by_its_site() -> None:
    for name, site in site_definitions().items():
        templates = _templates(name)
        used = {m for path in templates.rglob("*.html") for m in re.findall(r'shows\("([^"]+)"\)', path.read_text())}
        assert used == set(site.documents), name


_DISTINCT = re.compile(r"(?<![\w-])(?:[A-Z]{1,5}-\d+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)(?![\w-])")


async def _crawl(registry: TenantRegistry, site_name: str, seed: int) -> list[tuple[str, str, Operation]]:
    """(path, HTML, operation) of every page the site's links reach on a fresh tenant."""
    site = registry.site(site_name)
    tenant = registry.create(site_name, seed)
    found: list[tuple[str, str, Operation]] = []
    transport = httpx.ASGITransport(app=create_app(registry))
    async with httpx.AsyncClient(transport=transport, base_url="http://test.invalid") as client:
        queue, queued = [site.start_path], {site.start_path}
        while queue and len(found) < 120:
            path = queue.pop(0)
            response = await client.get(path, headers={TENANT_HEADER: tenant.token})
            if response.status_code != 200 or "text/html" not in response.headers.get("content-type", ""):
                continue
            found.append((path, response.text, tenant.operations()[-1]))
            for anchor in BeautifulSoup(response.text, "lxml").find_all("a", href=True):
                target = urlsplit(str(anchor["href"]))
                page = target.path + (f"?{target.query}" if target.query else "")
                if not target.netloc and site.owns_path(target.path) and page not in queued:
                    queued.add(page)
                    queue.append(page)
    return found


@pytest.mark.parametrize("site_name", sorted(site_definitions()))
async def test_no_page_shows_a_record_s_value_without_recording_it(site_name: str, tmp_path: Path) -> None:
    """Every id or e-mail address of a row that a page's visible text holds is among what the page recorded as
    shown (of some row with that value), or inside free text of a row it showed: a site cannot display tenant data
    past the kit. Not read: a form's choices (a select's options name values, not facts of a row), static text of
    the site's templates, and pages that render a document (static text that may name an address)."""
    registry = tenant_registry(tmp_path)
    try:
        # The site's pages over two of its instances' seeds, the lowest and the highest: what a page records is the
        # site's code, which every seed runs (a crawl per published seed took minutes at two dozen seeds a site).
        used = sorted({t.spec.seed for t in load_catalog().values() if t.spec.site == site_name}) or [1]
        seeds = sorted({used[0], used[-1]})
        templates = _templates(site_name)
        static = {token for path in templates.rglob("*.html") for token in _DISTINCT.findall(path.read_text())}
        for seed in seeds:
            state = registry.create(site_name, seed).snapshot()
            holders: dict[str, set[tuple[str, int, str]]] = {}
            for table, table_rows in state.items():
                for row in table_rows:
                    for column, value in row.items():
                        if isinstance(value, str) and _DISTINCT.fullmatch(value) and isinstance(row.get("id"), int):
                            holders.setdefault(value, set()).add((table, row["id"], column))
            values = {(table, row["id"], column): value for table, table_rows in state.items() for row in table_rows
                      for column, value in row.items() if isinstance(value, str) and isinstance(row.get("id"), int)}
            for path, html, operation in await _crawl(registry, site_name, seed):
                soup = BeautifulSoup(html, "lxml")
                for element in soup(["script", "style", "template", "select", "textarea"]):
                    element.decompose()  # a form's choices and defaults state nothing about a row
                text = soup.get_text(" ")
                if operation.shown is not None and operation.shown.documents:
                    continue  # a document is static text of the site (a policy may name an address): not a row
                shown = _facts(operation.shown)
                said = [values[fact] for fact in shown if fact in values]  # shown free text may name other rows
                unrecorded = sorted({token for token in _DISTINCT.findall(text)
                                     if token in holders and token not in static and not holders[token] & shown
                                     and not any(token in value for value in said)})
                assert not unrecorded, f"{site_name} seed {seed} {path} shows {unrecorded} without recording them"
    finally:
        registry.close()


def _visible(html: str) -> str:
    """What a reader of the page is shown: its text and the values of its visible inputs (no script, style,
    template, comment, hidden input or hidden element), spacing and case aside."""
    soup = BeautifulSoup(html, "lxml")
    for element in [*soup(["script", "style", "template"]), *soup.find_all(hidden=True),
                    *soup.find_all(style=re.compile(r"display:\s*none|visibility:\s*hidden"))]:
        element.decompose()
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    values = [str(i["value"]) for i in soup.find_all("input", value=True) if str(i.get("type", "")).lower() != "hidden"]
    return " ".join(" ".join([soup.get_text(" "), *values]).split()).lower()


@pytest.mark.parametrize("site_name", sorted(site_definitions()))
async def test_no_page_records_a_value_it_does_not_show(site_name: str, tmp_path: Path) -> None:
    """The converse: every text value a page recorded as shown is in what a reader of the page sees, not only in
    an attribute, a hidden input, a comment or a hidden element — so `seen` never credits what the agent could not
    have read. (Numbers and dates are displayed formatted; text values are displayed as they are.)"""
    registry = tenant_registry(tmp_path)
    try:
        state = registry.create(site_name, 1).snapshot()
        values = {(table, row["id"], column): value for table, table_rows in state.items() for row in table_rows
                  for column, value in row.items() if isinstance(value, str) and isinstance(row.get("id"), int)}
        checked = 0
        for path, html, operation in await _crawl(registry, site_name, 1):
            seen = _visible(html)
            for fact in _facts(operation.shown) if operation.shown is not None else set():
                value = " ".join(values.get(fact, "").split()).lower()
                if len(value) >= 3:
                    checked += 1
                    assert value[:60] in seen, f"{site_name} {path} records {fact} = {value!r} but does not show it"
        assert checked > 50
    finally:
        registry.close()
