"""A run report as one self-contained HTML page (templates/report.html): inline CSS, an inline SVG chart, no
scripts, no external links. It renders the same `ReportView` the console prints, in one loop; Jinja2 escapes every
text value."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from computerops.report.layout import report_view
from computerops.report.run import RunReport
from computerops.report.tables import Mark, OutcomeChart, ReportView, cell_text

OUTCOME_COLOURS = {
    "verified_success": "#2e7d32",
    "unclaimed_success": "#81c784",
    "false_completion": "#c62828",
    "honest_failure": "#9e9e9e",
    "damaging_failure": "#ef6c00",
    "infrastructure_failure": "#6d4c41",
}
"""The colour of each outcome in the chart."""

_LABEL_W, _BAR_W, _ROW_H, _TOP, _LEGEND_STEP = 300, 420, 22, 30, 150


@dataclass(frozen=True)
class Segment:
    x: str
    width: str
    colour: str
    title: str


@dataclass(frozen=True)
class ChartRow:
    y: int
    label: str
    segments: tuple[Segment, ...]
    total_x: str
    total: int


@dataclass(frozen=True)
class LegendItem:
    x: int
    colour: str
    name: str


@dataclass(frozen=True)
class ChartLayout:
    """Where the chart's shapes go (SVG user units); the template only draws them."""

    width: int
    height: int
    label_x: int
    bar_height: int
    legend: tuple[LegendItem, ...]
    rows: tuple[ChartRow, ...]


def outcome_name(outcome: str) -> str:
    return outcome.replace("_", " ")


def chart_layout(chart: OutcomeChart) -> ChartLayout:
    """Horizontal bars, one per task, stacked by outcome; the bar length is the number of episodes."""
    most = max((bar.total for bar in chart.bars), default=0) or 1
    rows = []
    for index, bar in enumerate(chart.bars):
        y, offset, segments = _TOP + index * _ROW_H, float(_LABEL_W), []
        for outcome, count in zip(chart.outcomes, bar.counts, strict=True):
            if count:
                width = _BAR_W * count / most
                segments.append(Segment(x=f"{offset:.1f}", width=f"{width:.1f}", colour=OUTCOME_COLOURS[outcome],
                                        title=f"{bar.label}: {count} {outcome_name(outcome)}"))
                offset += width
        rows.append(ChartRow(y=y, label=bar.label, segments=tuple(segments), total_x=f"{offset + 4:.1f}",
                             total=bar.total))
    return ChartLayout(
        width=max(_LABEL_W + _BAR_W + 60, _LEGEND_STEP * len(chart.outcomes)),
        height=_TOP + _ROW_H * len(chart.bars) + 10, label_x=_LABEL_W - 6,
        bar_height=_ROW_H - 6,
        legend=tuple(LegendItem(x=i * _LEGEND_STEP, colour=OUTCOME_COLOURS[o], name=outcome_name(o))
                     for i, o in enumerate(chart.outcomes)),
        rows=tuple(rows))


@cache
def _environment() -> Environment:
    environment = Environment(loader=PackageLoader("computerops.report", "templates"), autoescape=True,
                              undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return with_report_blocks(environment)


def with_report_blocks(environment: Environment) -> Environment:
    """`environment` given what templates/blocks.html uses (its filters, tests and chart helpers); its loader must
    also find the report's templates. The operator server's pages render reports through it."""
    environment.filters["cell_text"] = cell_text
    environment.tests["mark"] = lambda value: isinstance(value, Mark)
    environment.globals["chart_layout"] = chart_layout
    environment.globals["heat_colour"] = heat_colour
    return environment


def render_view(view: ReportView) -> str:
    """Any report view as one HTML document (a run's, an experiment's)."""
    return _environment().get_template("report.html").render(view=view)


def heat_colour(value: float | None) -> str:
    """A heatmap cell's background: white at 0 to green at 1 (none when unshaded)."""
    if value is None:
        return ""
    return f"background: hsl(130, 45%, {round(97 - 45 * value)}%)"


def render_html(report: RunReport) -> str:
    """The whole report as one HTML document."""
    return render_view(report_view(report))


def write_html(path: Path, report: RunReport) -> None:
    """Write the report to `path` (UTF-8)."""
    path.write_text(render_html(report), encoding="utf-8")
