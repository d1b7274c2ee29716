"""The report laid out once: the console and the HTML page render the same typed tables (titles, headers, cells,
captions) and paragraphs, in the same order; the vocabularies a report counts by are the definitions' own; the JSON
names its format and a summary sealed in format 1 still compares exactly."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import pytest
from bs4 import BeautifulSoup, Tag
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from rich.console import Console
from test_report import INFRA_CAUSES, faulted, infrastructure, manifest, record

from computerops.cli import console as console_module
from computerops.core import vocabulary
from computerops.core.difference import first_difference
from computerops.report.html import OUTCOME_COLOURS, render_html
from computerops.report.layout import report_view
from computerops.report.markdown import table_markdown
from computerops.report.run import RunReport, report_json, report_json_as, run_report, summarize
from computerops.report.tables import Column, Mark, Paragraph, ReportView, Table, cell_text
from computerops.report.tables import Table as ViewTable
from computerops.report.tables import columns as view_columns
from computerops.report.vocabulary import FALSE_COMPLETION_KINDS, FAULT_CLASSES, OUTCOMES, STOP_REASONS
from computerops.runs.bundle import RunDirectory
from computerops.runs.records import EpisodeOutcome, EpisodeRecord
from sites.kit import faults
from verifier import FalseCompletionKind

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TITLE, CAPTION = "\x1b[3m", "\x1b[2;3m"
"""rich's default styles of a table's title (italic) and caption (dim italic), as exported with styles."""
WIDTH = 2000
"""Wide enough that no paragraph, header or cell wraps (titles and captions wrap at their table's width)."""


@dataclass
class Shown:
    """A block as a renderer showed it: a table (title, headers, rows of cell texts, caption) or a paragraph."""

    title: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    table: bool = True


def words(text: str) -> str:
    return " ".join(text.split())


def cells(line: str, bar: str) -> list[str]:
    return [words(cell) for cell in line.strip()[1:-1].split(bar)]


def from_console(text: str) -> list[Shown]:
    """The blocks of a recorded rich rendering, read back from its lines and their styles."""
    shown: list[Shown] = []
    title: list[str] = []
    for line in text.splitlines():
        plain = ANSI.sub("", line).strip()
        if line.startswith(TITLE):
            title.append(plain)
        elif plain.startswith("┏"):
            shown.append(Shown(title=words(" ".join(title))))
            title = []
        elif plain.startswith("┃"):
            shown[-1].headers = cells(plain, "┃")
        elif plain.startswith("│"):
            shown[-1].rows.append(cells(plain, "│"))
        elif line.startswith(CAPTION):
            shown[-1].caption = words(f"{shown[-1].caption} {plain}")
        elif plain and not plain.startswith(("┡", "└")):
            shown.append(Shown(title=words(plain), table=False))
    assert not title, f"a title without its table: {title}"
    return shown


def from_html(page: str) -> list[Shown]:
    """The blocks of the HTML page, but its chart and the banner that repeats the title's SCRIPTED flag."""
    body = BeautifulSoup(page, "html.parser").body
    assert body is not None
    shown: list[Shown] = []
    for element in body.find_all(["section", "p"], recursive=False):
        assert isinstance(element, Tag)
        if element.name == "p":
            if "scripted" not in (element.get("class") or []):
                shown.append(Shown(title=words(element.get_text()), table=False))
        elif "table" in (element.get("class") or []):
            heading, note = element.find("h2"), element.find("p", class_="note")
            assert heading is not None
            shown.append(Shown(
                title=words(heading.get_text()), headers=[words(th.get_text()) for th in element.find_all("th")],
                rows=[[words(td.get_text()) for td in tr.find_all("td")] for tr in element.find_all("tr")
                      if tr.find("td") is not None],
                caption=words(note.get_text()) if note is not None else ""))
    return shown


def from_view(view: ReportView) -> list[Shown]:
    """What both renderings must show: every block of the view but its charts."""
    shown = []
    for block in view.blocks:
        if isinstance(block, Table):
            shown.append(Shown(title=words(block.title + (f" ({block.flag})" if block.flag else "")),
                               headers=[words(c.header) for c in block.columns],
                               rows=[[words(cell_text(c)) for c in row] for row in block.rows],
                               caption=words(block.caption or "")))
        elif isinstance(block, Paragraph):
            shown.append(Shown(title=words(block.text), table=False))
    return shown


def printed(result: RunReport) -> str:
    out = Console(record=True, width=WIDTH, force_terminal=True, color_system="truecolor", highlight=False,
                  file=open("/dev/null", "w", encoding="utf-8"))  # noqa: SIM115 (closed with the console)
    try:
        console_module.print_view(report_view(result), out)
        return out.export_text(styles=True)
    finally:
        out.file.close()


TEXT = st.sampled_from(["[b]x[/b]", "<i>&amp;</i>", "[red]r"]) | st.text(
    alphabet=st.sampled_from("ab z<>&\"'[]/é"), min_size=1, max_size=8).filter(lambda t: t.strip())
"""Texts that would break a renderer that did not escape (HTML) or that read markup (rich)."""
FAULTS = ["transient_5xx", "throttling", "false_success", "new_kind"]
OUTCOMES_AND_CLAIMS: list[tuple[EpisodeOutcome, bool | None, str | None]] = [
    ("verified_success", True, None), ("unclaimed_success", False, None), ("false_completion", True, "state"),
    ("false_completion", True, "procedure_only"), ("false_completion", True, "forbidden_mutation"),
    ("honest_failure", None, None), ("honest_failure", False, None), ("damaging_failure", None, None),
]


@st.composite
def episodes(draw: st.DrawFn) -> list[EpisodeRecord]:
    tasks = draw(st.lists(TEXT, min_size=1, max_size=3, unique=True))
    endpoints = draw(st.lists(st.sampled_from(["model-x", "scripted:oracle", "m<1>&"]), min_size=1, max_size=2,
                              unique=True))
    made = []
    for number in range(draw(st.integers(0, 7))):
        task, endpoint = draw(st.sampled_from(tasks)), draw(st.sampled_from(endpoints))
        if draw(st.integers(0, 5)) == 0:
            made.append(infrastructure(number, task, draw(st.sampled_from(INFRA_CAUSES))).model_copy(
                update={"endpoint": endpoint}))
            continue
        outcome, claim, kind = draw(st.sampled_from(OUTCOMES_AND_CLAIMS))
        configured = draw(st.lists(st.sampled_from(FAULTS[:3]), max_size=2, unique=True))
        made.append(record(
            number, endpoint, task, outcome, claim, kind=kind,
            tokens=draw(st.sampled_from([(None, None), (10, 5), (7, None), (300, 41)])),
            wall_s=draw(st.sampled_from([0.25, 1.0, 3.5])),
            message=draw(st.none() | TEXT | st.sampled_from(["the server was unavailable", "rate limited"])),
            rejections=draw(st.dictionaries(st.sampled_from(["stale_id", "disabled", "<odd>"]), st.integers(1, 3),
                                            max_size=2)),
            faults=faulted(draw(st.booleans()), configured, draw(st.lists(st.sampled_from(FAULTS), max_size=3))),
            loop=draw(st.none() | st.tuples(st.integers(0, 20), st.integers(0, 5), st.integers(0, 5)))))
    return made


@given(episodes(), st.booleans())
def test_the_console_and_the_html_show_the_same_tables_and_paragraphs(recs: list[EpisodeRecord],
                                                                     with_manifest: bool) -> None:
    result = run_report("r<1>&", recs, declared_scripted=False, bootstrap_resamples=50,
                        manifest=manifest(recs) if with_manifest and recs else None)
    expected = from_view(report_view(result))
    on_console, on_page = from_console(printed(result)), from_html(render_html(result))
    assert on_console == expected
    assert on_page == expected
    tables = [s for s in expected if s.table]
    assert tables and all(len(row) == len(s.headers) for s in tables for row in s.rows), "a row per column each"
    assert all(len(row) == len(s.headers) for s in on_page if s.table for row in s.rows)


def test_the_terminal_prints_the_view_and_nothing_else() -> None:
    recs = [record(1, "m", "t", "honest_failure", False, loop=(4, 1, 3))]
    result = run_report("r", recs, declared_scripted=False)
    out = Console(record=True, width=console_module.console.width, highlight=False,
                  file=open("/dev/null", "w", encoding="utf-8"))  # noqa: SIM115
    with console_module.console.capture() as captured:
        console_module.print_report(result)
    console_module.print_view(report_view(result), out)
    assert captured.get() == out.export_text()
    out.file.close()


def test_a_table_refuses_a_row_that_does_not_fit_its_columns() -> None:
    with pytest.raises(ValidationError, match="row 2 has 1 cells for 2 columns"):
        Table(id="t", title="T", columns=(Column(header="a"), Column(header="b")), rows=(("x", 1), ("y",)))
    with pytest.raises(ValidationError, match="duplicate block ids"):
        table = Table(id="t", title="T", columns=(Column(header="a"),), rows=())
        ReportView(title="v", scripted=False, blocks=(table, table))
    assert [cell_text(c) for c in (None, 3, 0.5, "x", Mark(text="all"))] == ["unknown", "3", "0.5", "x", "all"]


def test_the_vocabularies_are_the_definitions() -> None:
    assert FAULT_CLASSES is faults.FAULT_CLASSES and STOP_REASONS is vocabulary.STOP_REASONS
    assert get_args(FalseCompletionKind) == FALSE_COMPLETION_KINDS
    defined = [value for literal in get_args(EpisodeOutcome) for value in get_args(literal)]
    assert sorted(OUTCOMES) == sorted(defined) and len(set(OUTCOMES)) == len(OUTCOMES), "a permutation"
    assert set(OUTCOME_COLOURS) == set(OUTCOMES)


def test_the_chart_draws_every_outcome_of_every_task() -> None:
    recs = [record(1, "m", "a<b>", "verified_success", True), record(2, "m", "a<b>", "damaging_failure", None),
            record(3, "m", "c", "unclaimed_success", False)]
    page = BeautifulSoup(render_html(run_report("r", recs, declared_scripted=False)), "html.parser")
    chart = page.find("section", id="outcome-chart")
    assert chart is not None
    titles = [t.get_text() for t in chart.find_all("title")]
    assert titles == ["a<b>: 1 verified success", "a<b>: 1 damaging failure", "c: 1 unclaimed success"]
    assert [t.get_text() for t in chart.find_all("text")][-4:] == ["a<b>", "2", "c", "1"]
    widths = [float(str(r["width"])) for r in chart.find_all("rect") if r.find("title") is not None]
    assert widths == [210.0, 210.0, 210.0], "a bar's length is its episodes: 2 episodes are the full 420"
    empty = BeautifulSoup(render_html(run_report("r", [], declared_scripted=False)), "html.parser")
    chart = empty.find("section", id="outcome-chart")
    assert chart is not None and chart.find("svg") is None and "No episodes." in chart.get_text()


FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
"""A run sealed before the report named its format (summary.json in format 1)."""


def test_a_summary_sealed_in_format_1_compares_exactly_in_its_own_format(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, run)
    bundle = RunDirectory.open(run)
    stored: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    result = summarize(bundle.manifest(), bundle.records())
    assert "format" not in stored and "rejected_by_cause" in stored
    assert report_json_as(result, stored) == stored
    current = report_json(result)
    assert first_difference(stored, current) is not None, "format 2 is another shape"
    assert report_json_as(result, current) == current
    forged = {**stored, "total": {**stored["total"], "verified_success": 9}}
    assert first_difference(forged, report_json_as(result, forged)) == "total.verified_success: 9 recorded, 1 now"


@given(st.lists(st.lists(st.text(max_size=12), min_size=3, max_size=3), max_size=4))
def test_a_markdown_table_keeps_every_cell_in_its_column_whatever_the_text(cells: list[list[str]]) -> None:
    table = ViewTable(id="t", title="t", columns=view_columns("a", "b", "c"), rows=tuple(tuple(row) for row in cells))
    lines = table_markdown(table).splitlines()
    assert len(lines) == 2 + len(cells)
    for line, row in zip(lines[2:], cells, strict=True):
        found = [c.strip().replace("\\|", "|").replace("\\\\", "\\") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        assert len(found) == 3
        assert found == [" ".join(text.split()) for text in row]
