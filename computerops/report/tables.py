"""A report as its readers see it, laid out once: typed tables, paragraphs and a chart, in reading order.

`computerops.cli.console` renders a `ReportView` with rich and `computerops.report.html` as one HTML page, each in one
loop over its blocks; neither computes or words a figure of its own. A cell's text is `cell_text` in both.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, Field, model_validator

from computerops.report.figures import FROZEN, Proportion

UNKNOWN = "unknown"
"""How a value nobody recorded (a None cell) reads."""


class Mark(BaseModel):
    """A cell shown with emphasis: `strong` (a total row's label), `alert` (a finding to look at)."""

    model_config = FROZEN

    text: str
    tone: Literal["strong", "alert"] = "strong"


Cell = str | int | float | Mark | None
"""A table cell: a figure, a text, an emphasised text, or None for a value nobody recorded."""


def cell_text(cell: Cell) -> str:
    """What a cell reads, in every rendering."""
    if cell is None:
        return UNKNOWN
    if isinstance(cell, Mark):
        return cell.text
    return str(cell)


class Column(BaseModel):
    model_config = FROZEN

    header: str
    align: Literal["left", "right"] = "right"


def columns(*headers: str, labels: int = 1) -> tuple[Column, ...]:
    """Columns with these headers: the first `labels` left-aligned (they name the row), the rest right-aligned."""
    return tuple(Column(header=h, align="left" if i < labels else "right") for i, h in enumerate(headers))


class Table(BaseModel):
    """One table: every row has one cell per column."""

    model_config = FROZEN

    kind: Literal["table"] = "table"
    id: str
    """An anchor, unique within its view (the HTML section's id)."""
    title: str
    flag: str | None = None
    """A warning that belongs to the title (e.g. that a scripted endpoint produced the figures)."""
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str | None = None
    """What the columns mean, under the table."""
    wrap: bool = True
    """False: no cell wraps and no column is narrower than its header (a table people copy, like the outcomes)."""
    heat: tuple[tuple[float | None, ...], ...] | None = None
    """A heatmap's shading, one value in [0, 1] (or None: unshaded) per cell: the HTML page colours the cells by it;
    the text of every cell is the same in every rendering."""

    @model_validator(mode="after")
    def _rows_fit_the_columns(self) -> Self:
        for number, row in enumerate(self.rows, 1):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.id}: row {number} has {len(row)} cells for {len(self.columns)} columns")
        if self.heat is not None:
            if [len(r) for r in self.heat] != [len(r) for r in self.rows]:
                raise ValueError(f"table {self.id}: its shading is not one value per cell")
            if any(v is not None and not 0.0 <= v <= 1.0 for r in self.heat for v in r):
                raise ValueError(f"table {self.id}: a shading value outside [0, 1]")
        return self


class Paragraph(BaseModel):
    """A sentence or two between the tables; `warning` for what a reader must not miss (an incomplete run)."""

    model_config = FROZEN

    kind: Literal["paragraph"] = "paragraph"
    text: str
    tone: Literal["plain", "warning"] = "plain"


class ChartBar(BaseModel):
    model_config = FROZEN

    label: str
    counts: tuple[int, ...]
    """Episodes of each of the chart's outcomes, in its order."""

    @property
    def total(self) -> int:
        return sum(self.counts)


class OutcomeChart(BaseModel):
    """Stacked horizontal bars, one per task, one segment per outcome. Only the HTML page draws it; the per-task
    tables carry the same counts."""

    model_config = FROZEN

    kind: Literal["chart"] = "chart"
    id: str
    title: str
    outcomes: tuple[str, ...]
    """The outcome of each segment, legend order."""
    bars: tuple[ChartBar, ...]

    @model_validator(mode="after")
    def _bars_fit_the_outcomes(self) -> Self:
        if any(len(bar.counts) != len(self.outcomes) for bar in self.bars):
            raise ValueError(f"chart {self.id}: a bar without one count per outcome")
        return self


Block = Annotated[Table | Paragraph | OutcomeChart, Field(discriminator="kind")]


class ReportView(BaseModel):
    """A whole report in reading order."""

    model_config = FROZEN

    title: str
    scripted: bool
    """The figures came from the scripted endpoint (deterministic policies, not a language model)."""
    blocks: tuple[Block, ...]

    @model_validator(mode="after")
    def _ids_are_unique(self) -> Self:
        ids = [b.id for b in self.blocks if not isinstance(b, Paragraph)]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate block ids in {ids}")
        return self

    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]


def proportion_cells(proportion: Proportion) -> tuple[str, str]:
    """`n/d = rate` and its Wilson interval; `n/0` and n/a without a denominator."""
    if proportion.rate is None or proportion.wilson95 is None:
        return f"{proportion.numerator}/{proportion.denominator}", "n/a"
    return (f"{proportion.numerator}/{proportion.denominator} = {proportion.rate:.4f}",
            f"{proportion.wilson95.low:.4f}-{proportion.wilson95.high:.4f}")
