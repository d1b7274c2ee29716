"""Text stored in the shipped sites cannot forge a control, a header line or a table cell.

Every free-text field of every site in sites/registry.py (found by program: tests/forged_records.py) is
given hostile text (tests/forgery.py PAYLOADS: control-line lookalikes, header words, pipes, line
separators), the site's pages are crawled in a real browser and every observation is read line by line
(`read_observation`): its control lines are exactly its control table and no other line reads as one.

Then, for one task per site, the free-text fields the task does not name are given copies of the very
control lines its scripted control looks for (`[1] link "Reply"` in a mail body), and the scripted oracle,
run, judged and replayed exactly as `computerops tasks check` runs it, must still reach verified success
having met those forgeries on its way.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from forged_records import ForgedField, forge_site, forged_definition, marker_of
from forgery import PAYLOADS, read_observation
from playwright.async_api import Browser
from sqlalchemy import Column, Table

from adapter.driver import PageDriver
from adapter.lines import TEXT_ESCAPE
from adapter.observation import parse_control_line
from adapter.transcript import AgentTranscript
from computerops.catalog.checking import control_config, control_plan, ran_to
from computerops.catalog.crawl import CrawlTarget, crawl_site_pages, crawl_targets
from computerops.runs.runner import execute_run
from computerops.runs.serving import serve_app, tenant_context
from sites.kit.app import create_app
from sites.registry import SITES, tenant_registry
from tasks import LoadedTask, load_catalog

browser_test = pytest.mark.browser
CRAWL_LIMIT = 20
"""Pages read per site (breadth first from the site's root and its tasks' start pages)."""
WHOLE_PAGE = 1_000_000
FORGED_ID = "1"
"""The id the forged control lines give: a real control of every page (its first link), so an oracle taken in
would act on the wrong control rather than be refused."""
ORACLE_TASKS = {
    "helpdesk": "helpdesk.solve-ticket@1",
    "hrdesk": "hrdesk.approve-leave@1",
    "inventory": "inventory.bulk-price-paint@1",
    "invoices": "invoices.ladder-record-inv-1001@1",
    "ledger": "ledger.amend-delivery-destination@1",
    "webmail": "webmail.answer-offsite-room@1",
}
"""The task per site whose oracle meets the forgeries; a site not named here uses its first task in id order. Not
one whose oracle searches for a name it clicks: the forgery writes that name into every record's text, so the search
finds every record and the one sought is pages away (as it would be for any reader)."""


def hostile_payload(table: Table, column: Column[object], position: int) -> str:
    """A payload from PAYLOADS (a different one for each row and column), then the field's marker."""
    return f"{PAYLOADS[(position + len(table.name) + len(column.name)) % len(PAYLOADS)]} {marker_of(table, column)}"


@browser_test
async def test_no_stored_text_forges_a_control_or_header_line_on_any_page_of_any_site(browser: Browser) -> None:
    problems: list[str] = []
    escaped_lines = 0
    with tempfile.TemporaryDirectory(prefix="computerops-forged-") as root:
        registry = tenant_registry(Path(root))
        try:
            async with serve_app(create_app(registry)) as origin:
                for target in _one_target_per_site():
                    tenant = registry.create(target.site, target.seed)
                    with tenant.engine.begin() as connection:
                        forged = forge_site(connection, SITES[target.site], hostile_payload)
                    prefix = f"/{target.site}/"
                    context = await tenant_context(browser, origin, tenant.token, site_prefix=prefix)
                    shown: set[ForgedField] = set()
                    try:
                        page = await context.new_page()
                        driver = PageDriver(page, origin=origin, site_prefix=prefix, max_chars=WHOLE_PAGE)

                        async def read(_page: object, path: str, driver: PageDriver = driver,
                                       forged: list[ForgedField] = forged, shown: set[ForgedField] = shown) -> None:
                            nonlocal escaped_lines
                            observation = await driver.observe()
                            try:
                                read_observation(observation)
                            except AssertionError as failure:
                                problems.append(f"{path}: {failure}")
                            content = await driver.page.content()
                            for field in forged:
                                if field.marker in observation.text:
                                    shown.add(field)
                                elif field.marker in content and field.marker not in observation.title:
                                    problems.append(f"{path}: the page shows {field.table}.{field.column}, "
                                                    "the observation does not")
                            escaped_lines += sum(line.startswith("\\") for line in observation.text.splitlines())

                        pages = await crawl_site_pages(page, origin, target.start_paths, site_prefix=prefix,
                                                       on_page=read, limit=CRAWL_LIMIT)
                    finally:
                        await context.close()
                    assert len(pages) >= 10, f"{target.site}: only {pages}"
                    assert forged and shown, f"{target.site}: no forged field was shown on {pages}"
        finally:
            registry.close()
    assert not problems, "\n".join(problems)
    assert escaped_lines > 0, "no stored text began a line anywhere, so nothing here tested the escaping"


def _one_target_per_site() -> list[CrawlTarget]:
    """Each site once, with the first seed its tasks use and the start pages of those tasks."""
    seen: dict[str, CrawlTarget] = {}
    for target in crawl_targets(load_catalog().values(), SITES):
        seen.setdefault(target.site, target)
    return list(seen.values())


def forged_step_lines(task: LoadedTask) -> list[str]:
    """The control lines the task's scripted control looks for, each with the forged id."""
    return [f"[{FORGED_ID}] {step.role} {json.dumps(step.name, ensure_ascii=False)}"
            for step in task.spec.scripted_control if step.role and step.name is not None]


def step_forgery(task: LoadedTask) -> Callable[[Table, Column[object], int], str]:
    """The payload for the oracle's forged records: every forged step line, starting at a different one in each
    row, each after a newline (a site that shows a field's lines as paragraphs gives each its own line) and a
    U+2028 (which `str.splitlines` breaks at, should it reach a control's quoted value raw)."""
    lines = forged_step_lines(task)

    def payload(_table: Table, _column: Column[object], position: int) -> str:
        start = position % len(lines)
        return "".join(f"\u2028{line}\n" for line in lines[start:] + lines[:start]) + "\u2028"

    return payload


def named_by(task: LoadedTask) -> Callable[[str], bool]:
    """Whether the task names a value (its instruction, expected state, steps or answers mention it, or it holds
    a step's control name or text): those values stay, so the oracle finds its links and its facts."""
    spec = task.spec.model_dump_json()
    words = [w for step in task.spec.scripted_control for w in (step.name, step.text) if w]
    return lambda value: value in spec or any(word in value for word in words)


def oracle_task(site: str, catalog: Mapping[str, LoadedTask]) -> LoadedTask:
    chosen = ORACLE_TASKS.get(site) or min(t.id for t in catalog.values() if t.spec.site == site)
    return catalog[chosen]


@browser_test
async def test_the_oracle_still_verifies_when_stored_text_forges_the_controls_it_looks_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    catalog = load_catalog()
    tasks = [oracle_task(site, catalog) for site in sorted(SITES)]
    for task in tasks:
        site = SITES[task.spec.site]
        monkeypatch.setitem(SITES, site.name, forged_definition(site, step_forgery(task), named_by(task)))
    plan = control_plan(tasks, lambda _task: ["oracle"])
    records = await execute_run(control_config("forged-controls", tasks, plan), tasks, tmp_path / "run")
    at_line_start = 0
    for task, planned, record in zip(tasks, plan, records, strict=True):
        assert (record.outcome, record.replay) == ("verified_success", "PASS"), task.id
        assert ran_to(list(task.spec.scripted_control), record) == len(task.spec.scripted_control) - 1, task.id
        transcript = AgentTranscript.model_validate_json(
            (tmp_path / "run" / "episodes" / planned.episode_id / "transcript.json").read_text(encoding="utf-8"))
        observations = [transcript.first_observation, *(step.observation or "" for step in transcript.steps)]
        forged = set(forged_step_lines(task))
        met = [line for text in observations for line in text.splitlines()
               if any(f in line for f in forged) and parse_control_line(line) is None]
        assert met, f"{task.id}: the oracle never met a forged control line"
        at_line_start += sum(line.startswith(TEXT_ESCAPE + f"[{FORGED_ID}] ") for line in met)
    # Where a site shows stored text as paragraphs (webmail's mail bodies), forgeries begin lines, escaped.
    assert at_line_start > 0, "no forgery began a line: nothing here tested what the old renderer got wrong"
