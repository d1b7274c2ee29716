"""An experiment's report laid out once, in the run report's typed blocks (`computerops.report.tables`): the console
prints it with `print_view`, the HTML page renders it with the run report's template, and every header, cell and
caption is worded here only. Verdicts are quoted with their frozen rules; nothing here decides one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from computerops.experiment.analysis import ExperimentAnalysis, NoiseFloor, PersistenceCell, ServingCell, TestVerdict
from computerops.experiment.estimates import CellSummary, PairedEstimate
from computerops.experiment.gate import EvidenceLevel
from computerops.experiment.lock import ExperimentLock
from computerops.experiment.plan import arms_meaning, cells
from computerops.report.html import render_view
from computerops.report.persistence import PersistenceReport, PersistenceRow, persistence_table
from computerops.report.security import security_blocks
from computerops.report.serving import ServingReport, ServingRow, serving_table
from computerops.report.tables import Block, Cell, Mark, Paragraph, ReportView, Table, columns


def _percent(value: float | None) -> str | None:
    return None if value is None else f"{100 * value:.0f}%"


def _interval(bounds: Sequence[float | None] | None, *, percent: bool = True, digits: int = 0) -> str:
    if bounds is None:
        return "n/a"

    def end(v: float | None) -> str:
        if v is None:
            return "unbounded"
        return f"{100 * v:.{digits}f}" if percent else f"{v:.{max(digits, 2)}f}"

    return f"[{end(bounds[0])}, {end(bounds[1])}]"


def _share(count: int, total: int, bounds: Sequence[float | None] | None) -> str:
    if total == 0:
        return "-"
    return f"{count}/{total} {_percent(count / total)} {_interval(bounds)}"


def _plan(analysis: ExperimentAnalysis, lock: ExperimentLock, level: EvidenceLevel) -> list[Block]:
    counts = lock.counts
    blocks: list[Block] = [
        Paragraph(text=f"Question: {analysis.question}"),
        Table(id="plan", title="The frozen plan", columns=columns("what", "value"), rows=(
            ("cells", counts.cells), ("tasks", counts.tasks),
            ("repetitions per cell, task and arm", counts.repetitions),
            ("arms", ", ".join(lock.spec.arms)), ("what the arms are", arms_meaning(lock.spec)),
            ("arm order", lock.spec.order.kind),
            ("episodes planned", analysis.missing.planned), ("matched pairs", counts.pairs),
            ("lock", lock.lock_sha256[:16]), ("frozen at", lock.frozen_at), ("primary estimate", analysis.primary),
            ("descriptive reports", ", ".join(lock.spec.analysis.descriptive) or "none"),
            ("evidence level", Mark(text=level)),
        ), caption="Every input was hashed into the lock before the first model call; `experiment run` refuses a "
                   "changed one."),
    ]
    missing = analysis.missing
    if not missing.complete:
        blocks.append(Paragraph(tone="warning", text=(
            f"Incomplete: {len(missing.not_run)} planned episodes have no record "
            f"({', '.join(missing.not_run[:4])}{', ...' if len(missing.not_run) > 4 else ''}) and "
            f"{len(missing.infrastructure_failures)} ended in an infrastructure failure (kept out of every rate"
            + (f": {', '.join(missing.infrastructure_failures[:4])}" if missing.infrastructure_failures else "")
            + "). Nothing is added to the sample to make up for them; `experiment run LOCK --resume DIR` runs "
              "the missing ones.")))
    return blocks


def _arm_labels(lock: ExperimentLock) -> dict[tuple[str, str], str]:
    """Each (cell, arm) of a persistence experiment's plan labelled with its persistence arm, e.g. `control
    (uninterrupted)`, and of a serving experiment's with its serving arm, e.g. `treatment (throttle-fallback)`; empty
    for other experiments, whose arms read as they are."""
    labels: dict[tuple[str, str], str] = {}
    for p in lock.plan:
        if p.cell is None or p.arm is None:
            continue
        if p.persistence is not None:
            labels[(p.cell, p.arm)] = f"{p.arm} ({p.persistence.arm})"
        elif p.serving is not None:
            labels[(p.cell, p.arm)] = f"{p.arm} ({p.serving.arm})"
    return labels


def _cells(summaries: list[CellSummary], *, exposure: bool, arms: dict[tuple[str, str], str]) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for s in summaries:
        rows.append((s.cell, arms.get((s.cell, s.arm), s.arm), s.attempts,
                     _share(s.verified, s.attempts, s.verified_interval),
                     _share(s.false_completions, s.attempts, s.false_completion_rate_attempted_interval),
                     _share(s.false_completions, s.claims, s.false_completion_rate_claims_interval),
                     *((f"{s.exposed}/{s.configured}",) if exposure else ()), len(s.infrastructure_failures)))
    names = ("cell", "arm", "attempts", "verified success", "false completion / attempts", "false completion / claims",
             *(("exposed / configured",) if exposure else ()), "infrastructure failures")
    return Table(id="cells", title="Per cell and arm", rows=tuple(rows), columns=columns(*names, labels=2),
                 caption="Counts with Wilson 95% intervals (percent). Attempts exclude infrastructure failures"
                         + ("; exposed counts episodes where a configured fault actually fired, or an attack's "
                            "payload reached the model." if exposure else "."))


def _paired(estimates: list[PairedEstimate], *, per_task: bool) -> list[Block]:
    if not estimates:
        return []
    summary = Table(id="paired", title="Paired estimates: treatment minus control", columns=columns(
        "measure", "tasks", "task-level mean", "bootstrap interval", "resamples", labels=1), rows=tuple(
        (e.measure, e.n_tasks, None if e.mean is None else f"{e.mean:+.3f}",
         _interval(e.interval, percent=False, digits=3), e.resamples) for e in estimates),
        caption="Per task, the treatment's rate minus the control's; the mean weighs every task equally; the "
                "interval resamples tasks (clusters) with replacement, with the plan's seed.")
    if not per_task:
        return [summary]
    tasks = sorted({t for e in estimates for t in e.differences})
    table = Table(id="paired-tasks", title="Per task", columns=columns("task", *(e.measure for e in estimates)),
                  rows=tuple((t, *(f"{e.differences[t]:+.3f}" if t in e.differences else None
                                   for e in estimates)) for t in tasks))
    return [summary, table]


def _tests(verdicts: list[TestVerdict]) -> list[Block]:
    if not verdicts:
        return []
    rows: list[tuple[Cell, ...]] = []
    rules: dict[str, str] = {}
    for v in verdicts:
        result = v.tool_edge or v.recovery_cost
        assert result is not None
        rows.append((v.name, v.model, v.order or "all", Mark(text=result.verdict, tone="alert"), result.reason))
        rules[v.name] = result.rule_text
    blocks: list[Block] = [Table(id="verdicts", title="The verdicts, as pre-registered", rows=tuple(rows),
                                 columns=columns("test", "model", "order", "verdict", "why", labels=3),
                                 caption="survives: the prediction held; restricted: it failed by more than the "
                                         "smallest effect worth reporting; below resolution: the data cannot tell.")]
    blocks += [Paragraph(text=f"{name}, the frozen rule: {text}") for name, text in rules.items()]
    return blocks


def _grids(summaries: list[CellSummary], lock: ExperimentLock) -> list[Block]:
    """One heatmap per model and tool order: rows fault rates, columns tool counts, each cell its verified share
    with its interval."""
    spec = lock.spec
    if spec.factors.tools is None or spec.factors.order is None:
        return []
    by_key = {(s.cell, s.arm): s for s in summaries}
    blocks: list[Block] = []
    for model in spec.models:
        for order in spec.factors.order:
            grid = [c for c in cells(spec) if c.model == model and c.order == order]
            rows: list[tuple[Cell, ...]] = []
            heat: list[tuple[float | None, ...]] = []
            for rate in spec.factors.fault_rate:
                row: list[Cell] = [f"{100 * rate:g}%"]
                shade: list[float | None] = [None]
                for tools in spec.factors.tools:
                    cell = next((c for c in grid if c.tools == tools and c.factor("fault_rate") == rate), None)
                    found = by_key.get((cell.key(spec), "treatment")) if cell else None
                    if found is None or found.attempts == 0:
                        row.append(None)
                        shade.append(None)
                    else:
                        share = found.verified / found.attempts
                        row.append(f"{100 * share:.0f} {_interval(found.verified_interval)}")
                        shade.append(share)
                rows.append(tuple(row))
                heat.append(tuple(shade))
            label = spec.endpoint.model_for(model)
            blocks.append(Table(id=f"grid-{model}-{order}".replace(":", "-"), wrap=False,
                                title=f"Verified success, {label}, tool order {order}", heat=tuple(heat),
                                rows=tuple(rows),
                                columns=columns("fault rate", *(f"{t} tools" for t in spec.factors.tools)),
                                caption="Percent verified success per cell, its Wilson 95% interval beneath "
                                        "(in brackets); tool order "
                                        f"{order}: {', '.join(spec.tool_orders[order])}."))
    return blocks


Row = TypeVar("Row")
RowCo = TypeVar("RowCo", covariant=True)


class CellRows(Protocol[RowCo]):
    """One cell and arm of an experiment with a run report's rows for its episodes (`PersistenceCell`,
    `ServingCell`)."""

    @property
    def cell(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def rows(self) -> Sequence[RowCo]: ...


def _persistence(found: list[PersistenceCell] | None, arms: dict[tuple[str, str], str], lock: ExperimentLock
                 ) -> list[Block]:
    """The long-running episodes' figures per cell and arm: the run report's persistence figures, each row labelled
    with its cell (which names the endpoint and the recovery or compaction policy) and its arm (`treatment
    (compacted)`). Descriptive: no frozen rule turns them into a verdict. Every cell and arm the frozen plan names
    without figures of its episodes (each an infrastructure failure, or not run) is named in a warning, and so is
    every persistence arm of the design that no episode's figures show at all."""
    if found is None:
        return []

    def table(rows: list[PersistenceRow]) -> tuple[Table, int]:
        base = persistence_table(PersistenceReport(rows=rows))
        return base, sum(column.align == "left" for column in base.columns)  # endpoint, arm, policy: the cell's

    blocks = _per_cell(found, arms, table, "persistence-cells", "Long-running episodes per cell and arm")
    shown = {(entry.cell, entry.arm) for entry in found if entry.rows}
    if not shown:
        return blocks  # `_per_cell` said that no episode was attempted
    planned = [p for p in lock.plan if p.persistence is not None and p.cell is not None and p.arm is not None]
    named = list(dict.fromkeys((str(p.cell), str(p.arm)) for p in planned))
    unshown = [key for key in named if key not in shown]
    figured = {row.arm for entry in found for row in entry.rows}
    absent = [arm for arm in dict.fromkeys(p.persistence.arm for p in planned if p.persistence is not None)
              if arm not in figured]
    if unshown:
        text = (f"No figures for {len(unshown)} of the {len(named)} cells and arms the design names (each of their "
                "episodes ended in an infrastructure failure or has not run): "
                + "; ".join(f"{cell} {arms.get((cell, arm), arm)}" for cell, arm in unshown) + ".")
        if absent:
            text += f" The design's persistence arm(s) {', '.join(absent)} have no figures at all."
        blocks.append(Paragraph(tone="warning", text=text))
    return blocks


def _serving(found: list[ServingCell] | None, arms: dict[tuple[str, str], str]) -> list[Block]:
    """The serving episodes' figures by path per cell and arm: the run report's serving figures, each row labelled
    with its cell (which names the endpoint) and its arm (`treatment (throttle-fallback)`), then its policy path.
    Descriptive: no frozen rule turns them into a verdict."""
    if found is None:
        return []

    def table(rows: list[ServingRow]) -> tuple[Table, int]:
        return serving_table(ServingReport(rows=rows)), 2  # endpoint and serving arm: the cell's; the path stays

    return _per_cell(found, arms, table, "serving-cells", "Serving failures by path per cell and arm")


def _per_cell(found: Sequence[CellRows[Row]], arms: dict[tuple[str, str], str],
              table: Callable[[list[Row]], tuple[Table, int]], table_id: str, title: str) -> list[Block]:
    """A run report's table over an experiment's cells: each cell and arm's rows, the table's first `named` columns
    (what the cell and the labelled arm say) replaced by the cell and the arm."""
    labelled = [(entry.cell, arms.get((entry.cell, entry.arm), entry.arm), row) for entry in found
                for row in entry.rows]
    if not labelled:
        return [Paragraph(text=f"{title}: no episode was attempted by the agent.")]
    base, named = table([row for _, _, row in labelled])
    return [Table(id=table_id, title=title, columns=columns("cell", "arm", labels=2) + base.columns[named:],
                  rows=tuple((cell, arm, *cells[named:]) for (cell, arm, _), cells in zip(labelled, base.rows,
                                                                                           strict=True)),
                  caption=f"{base.caption or ''} Descriptive: no frozen rule turns these figures into a verdict "
                          "(docs/experiments.md, 'The verdict rules').")]


def _noise(floor: NoiseFloor | None) -> list[Block]:
    if floor is None:
        return []
    same, seeds = floor.identical, floor.new_seeds
    return [Table(id="noise-floor", title=f"Noise floor of cell {floor.cell}", columns=columns("measure", "value"),
                  rows=tuple((*r,) for r in same.table_rows() + seeds.table_rows()),
                  caption="Reported beside the intervals, never folded into them. Transcripts are compared with "
                          "their timings left out (latency, action and observation seconds); all else byte for byte.")]


def _gate(analysis: ExperimentAnalysis, level: EvidenceLevel) -> list[Block]:
    gate = analysis.gate
    if gate is None:
        return [Paragraph(text=f"Evidence level {level}. The plan names no quality gate, so the experiment cannot be "
                               "E3.")]
    rows = tuple((item.name, Mark(text="PASS") if item.passed else Mark(text="FAIL", tone="alert"), item.detail)
                 for item in gate.items)
    verdict = (f"Evidence level {level}, scoped to {gate.scope}." if level == "E3" else
               f"Evidence level {level}: " + ("the gate passed, but the run has not passed `computerops verify` yet."
                                             if gate.passed else
                                             "the gate failed at " + ", ".join(i.name for i in gate.items
                                                                              if not i.passed) + "."))
    return [Table(id="gate", title="E3 quality gate", columns=columns("item", "result", "detail", labels=1),
                  rows=rows), Paragraph(text=verdict, tone="plain" if gate.passed else "warning")]


def experiment_view(analysis: ExperimentAnalysis, lock: ExperimentLock, level: EvidenceLevel,
                    noise_floor: NoiseFloor | None = None) -> ReportView:
    """The whole experiment report in reading order. The descriptive reports are those the frozen plan committed
    to (`analysis.descriptive`): the grid's heatmaps, the per-cell table, its exposure column, the per-task paired
    differences, the security, persistence and serving figures; the primary estimate, the verdicts, the noise floor
    and the gate are always shown. A noise floor run of the same lock (`noise_floor`) is shown beside the intervals. A
    persistence experiment's arms read with their persistence arm (`control (uninterrupted)`), a serving
    experiment's with their serving arm (`treatment (partial-stream)`)."""
    title = f"Experiment {analysis.experiment} v{analysis.version}" + (
        " (noise floor)" if analysis.series == "noise_floor" else "")
    shown = set(lock.spec.analysis.descriptive)
    floor_only = analysis.series == "noise_floor"
    arms = _arm_labels(lock)
    blocks: list[Block] = [*_plan(analysis, lock, level)]
    if "grid" in shown and not floor_only:
        blocks += _grids(analysis.cells, lock)
    if "cells" in shown or floor_only:
        blocks.append(_cells(analysis.cells, exposure="exposure" in shown, arms=arms))
    blocks += _paired(analysis.paired, per_task="paired" in shown)
    if analysis.security is not None:
        blocks += security_blocks(analysis.security)
    blocks += _persistence(analysis.persistence, arms, lock)
    blocks += _serving(analysis.serving, arms)
    blocks += _tests(analysis.tests)
    blocks += _noise(noise_floor or analysis.noise_floor)
    blocks += _gate(analysis, level)
    return ReportView(title=title, scripted=analysis.scripted, blocks=tuple(blocks))


def experiment_html(analysis: ExperimentAnalysis, lock: ExperimentLock, level: EvidenceLevel,
                    noise_floor: NoiseFloor | None = None) -> str:
    return render_view(experiment_view(analysis, lock, level, noise_floor))
