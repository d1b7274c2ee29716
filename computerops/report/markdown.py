"""A report table as GitHub Markdown: how the README shows the demo's outcome table (`computerops report DIR
--markdown`), generated like the bench table so the README cannot drift from what the demo printed."""

from __future__ import annotations

from computerops.report.tables import ReportView, Table, cell_text


def _cell(text: str) -> str:
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").split())


def table_markdown(table: Table) -> str:
    """The table's header row, its alignment row and one row per row of cells; the flag and caption left out."""
    lines = ["| " + " | ".join(_cell(c.header) for c in table.columns) + " |",
             "|" + "|".join(":---" if c.align == "left" else "---:" for c in table.columns) + "|"]
    lines += ["| " + " | ".join(_cell(cell_text(cell)) for cell in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


OUTCOMES_ID = "outcomes"


def outcomes_markdown(view: ReportView) -> str:
    """The view's outcome table, as Markdown."""
    return table_markdown(next(table for table in view.tables() if table.id == OUTCOMES_ID))
