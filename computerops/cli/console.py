"""Rendering results for people: rich tables on the terminal. Every table, report and listing is formatted here; a
command prints at most a one-line status of its own (computerops/cli/main.py)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from computerops.bench.measure import BenchReport, TargetCheck
    from computerops.bench.scaling import ExecutorFigures
    from computerops.catalog.audit import AuditReport
    from computerops.catalog.blind import BlindResults
    from computerops.catalog.checking import ControlResult, TaskCheck
    from computerops.catalog.noise_check import NoiseCheckReport
    from computerops.catalog.observing import ObservedPage
    from computerops.catalog.stats import CatalogStats
    from computerops.catalog.subsets import ReservedSubset
    from computerops.experiment.lock import ExperimentLock
    from computerops.experiment.measure import Timing
    from computerops.report.compare import RunComparison
    from computerops.report.grouping import GroupedOutcomes
    from computerops.report.run import RunReport
    from computerops.report.tables import Cell, ReportView
    from computerops.report.tables import Table as ReportTable
    from computerops.runs.demo import DemoPlan, PhaseTimes
    from computerops.runs.verification import Verification
    from replays import Receipt
    from tasks import LoadedTask

# Piped output (CI, files) gets a wide fixed width so tables and progress lines are not wrapped.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
errors = Console(highlight=False, stderr=True, width=None if sys.stderr.isatty() else 200)


def print_error(message: str) -> None:
    """`error: MESSAGE` on stderr, the message as plain text: one naming `computerops[ray]`, or quoting an endpoint's
    answer with `[/x]` in it, is shown as it is (as markup it lost its brackets, or raised MarkupError). Never wrapped:
    an error is one line however long (the terminal folds it, not rich)."""
    errors.print(f"[red]error:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True)

_TONES = {"strong": "bold", "alert": "bold red"}
"""How the terminal shows a marked cell (`computerops.report.tables.Mark`)."""


def _cell(cell: Cell) -> Text:
    from computerops.report.tables import Mark, cell_text
    text = Text(cell_text(cell))
    if isinstance(cell, Mark):
        text.stylize(_TONES[cell.tone])
    return text


def _rich_table(table: ReportTable) -> Table:
    title = Text(table.title, style="table.title")
    if table.flag:
        title.append(" ").append(f"({table.flag})", style="bold yellow")
    shown = Table(title=title, title_justify="left", caption_justify="left",
                  caption=Text(table.caption, style="table.caption") if table.caption else None)
    for index, column in enumerate(table.columns):
        shown.add_column(Text(column.header), justify=column.align, no_wrap=not table.wrap or index == 0,
                         min_width=None if table.wrap else len(column.header))
    for row in table.rows:
        shown.add_row(*(_cell(cell) for cell in row))
    return shown


def print_view(view: ReportView, out: Console | None = None) -> None:
    """Every table and paragraph of a report, in order, to `out` (the terminal by default). Charts are the HTML
    page's: the per-task tables carry the same counts."""
    from computerops.report.tables import Paragraph
    from computerops.report.tables import Table as ReportTable
    out = console if out is None else out
    for block in view.blocks:
        if isinstance(block, ReportTable):
            out.print(_rich_table(block))
        elif isinstance(block, Paragraph):
            out.print(Text(block.text, style="bold yellow" if block.tone == "warning" else ""))


def print_comparison(comparison: RunComparison) -> None:
    """Two runs task by task (`compare`): what changed, and how many stayed the same."""
    from computerops.report.compare import comparison_table
    console.print(_rich_table(comparison_table(comparison)))


def print_report(report: RunReport) -> None:
    from computerops.report.layout import report_view
    print_view(report_view(report))


def print_receipts(receipts: Sequence[Receipt]) -> None:
    table = Table(title="Replay receipts", title_justify="left")
    for column in ("episode", "operations", "journal sha256", "verdict sha256", "result", "first mismatch"):
        table.add_column(column, no_wrap=column == "episode")
    for receipt in receipts:
        colour = "green" if receipt.result == "PASS" else "red"
        table.add_row(receipt.episode_id, str(receipt.operations), receipt.replayed_journal_sha256[:12],
                      receipt.replayed_verdict_sha256[:12], f"[{colour}]{receipt.result}[/]",
                      receipt.first_mismatch or "")
    console.print(table)


def print_grouped(grouped: GroupedOutcomes, *, scripted: bool) -> None:
    title = f"Outcomes by {grouped.by}" + (" (SCRIPTED endpoint: not a language model)" if scripted else "")
    table = Table(title=title, title_justify="left")
    for column in (grouped.by, "instances", "verified / attempted", "Wilson 95%", "false compl. / attempted"):
        table.add_column(column)
    for row in grouped.rows:
        interval = row.verified.wilson95
        table.add_row(row.value, str(row.instances), f"{row.verified.numerator}/{row.verified.denominator}",
                      "n/a" if interval is None else f"{interval.low:.3f}-{interval.high:.3f}",
                      f"{row.false_completions.numerator}/{row.false_completions.denominator}")
    console.print(table)


def print_catalog_stats(stats: CatalogStats) -> None:
    console.print(f"{stats.templates} templates ({stats.varying_templates} varying), {stats.instances} published "
                  f"instances, {stats.sites} sites")
    for title, counts in (("site", stats.per_site), ("family", stats.per_family),
                          ("difficulty", stats.per_difficulty)):
        table = Table(title=f"per {title}", title_justify="left")
        for column in (title, "templates", "instances"):
            table.add_column(column)
        for name, count in counts.items():
            table.add_row(name, str(count.templates), str(count.instances))
        console.print(table)
    if stats.fixed_unexplained:
        console.print(f"{len(stats.fixed_unexplained)} task files are not templates yet (one instance, no reason "
                      "given).", markup=False)
    for site, families in stats.families_missing.items():
        console.print(f"{site} has no template of: {', '.join(families)}", markup=False)


def print_tasks(tasks: Sequence[LoadedTask]) -> None:
    table = Table(title=f"{len(tasks)} tasks", title_justify="left")
    for column in ("id", "site", "family", "difficulty", "checks", "negative controls", "sha256"):
        table.add_column(column, no_wrap=column == "id")
    for task in tasks:
        spec = task.spec
        checks = len(spec.expected_state) + len(spec.required_procedure) + 1
        table.add_row(task.id, spec.site, spec.family, spec.difficulty, str(checks),
                      str(len(spec.negative_controls)), task.sha256[:12])
    console.print(table)


def _categories(results: Sequence[ControlResult]) -> str:
    counts = Counter(r.outcome for r in results)
    return ", ".join(f"{outcome} {n}" for outcome, n in sorted(counts.items())) or "—"


def print_task_checks(checks: Sequence[TaskCheck]) -> None:
    table = Table(title="tasks check (SCRIPTED controls through the browser and the scripted endpoint)",
                  title_justify="left")
    for column in ("task", "scripted", "no-op", "negatives rejected", "their verdicts", "equivalents accepted",
                   "attack prequalified", "problems"):
        table.add_column(column, no_wrap=column == "task")
    for check in checks:
        problems = "; ".join(f"{r.control}: expected {r.expected}, got {r.outcome}, ran {r.ran}, replay {r.replay}"
                             for r in check.results if not r.ok)
        oracle = check.results[0]
        noop = next((r for r in check.results if r.control == "no-op"), None)
        negatives = [r for r in check.results if r.control.startswith("negative:")]
        table.add_row(check.task_id, f"{_mark(oracle.ok)} {oracle.outcome}",
                      "—" if noop is None else f"{_mark(noop.ok)} {noop.outcome}",
                      f"{check.negatives_rejected}/{check.negatives_total}", _categories(negatives),
                      f"{check.equivalents_accepted}/{check.equivalents_total}",
                      "—" if check.prequalified is None else _mark(check.prequalified), problems)
    console.print(table)
    solvable = sum(c.solvable for c in checks)
    noop_rejected = sum(bool(c.noop_rejected) for c in checks)
    rejected = sum(c.negatives_rejected for c in checks)
    total = sum(c.negatives_total for c in checks)
    accepted = sum(c.equivalents_accepted for c in checks)
    equivalents = sum(c.equivalents_total for c in checks)
    every = [r for c in checks for r in c.results if r.control.startswith("negative:")]
    attacked = [c for c in checks if c.prequalified is not None]
    console.print(f"Total: solvable {solvable}/{len(checks)}, no-op rejected {noop_rejected}/{len(checks)}, "
                  f"negative controls rejected {rejected}/{total} ({_categories(every)}), "
                  f"equivalent solutions accepted {accepted}/{equivalents}"
                  + (f", attacks prequalified {sum(bool(c.prequalified) for c in attacked)}/{len(attacked)}"
                     if attacked else ""))


def print_noise_checks(report: NoiseCheckReport) -> None:
    """`tasks check --noise`: each instance under each kind, then each kind's summary, then verify's word."""
    from computerops.catalog.noise_check import kind_summaries
    table = Table(title="tasks check --noise (SCRIPTED controls on noisy pages: noise-aware, and the plain control "
                        "as the negative)", title_justify="left")
    for column in ("task", "kind", "noise-aware", "what the noise took", "in the way", "plain control", "ok"):
        table.add_column(column, no_wrap=column in ("task", "kind"))
    for r in report.results:
        table.add_row(r.task_id, r.kind, f"{_mark(r.aware_ok)} {r.aware_outcome}, replay {r.aware_replay}",
                      escape("; ".join(r.handled) or "nothing"), "yes" if r.blocked else "no",
                      escape(f"{r.plain_outcome}, replay {r.plain_replay}: {r.plain_ended}"), _mark(r.ok))
    console.print(table)
    kinds = Table(title="By kind (never averaged across kinds)", title_justify="left")
    for column in ("kind", "noise-aware verified", "handled", "in the way", "plain failed", "reading"):
        kinds.add_column(column, no_wrap=column == "kind")
    for k in kind_summaries(report):
        kinds.add_row(k.kind, f"{k.aware_verified}/{k.instances}", f"{k.handled}/{k.instances}",
                      f"{k.blocked}/{k.instances}", f"{k.plain_failed}/{k.instances}", k.reading)
    console.print(kinds)
    console.print("verify: " + ("PASS" if report.verified else "FAIL: " + escape("; ".join(report.verify_problems))))


def print_audit(report: AuditReport) -> None:
    """The mutation audit: fates by operator and by task, then every defect (survivor or rejected equivalent)."""
    from computerops.catalog.audit import FATES, kill_rate
    from computerops.catalog.mutants import Fate
    def table(title: str, rows: Sequence[tuple[str, Mapping[Fate, int]]]) -> None:
        shown = Table(title=title, title_justify="left")
        for column in ("", *(f.replace("_", " ") for f in FATES), "kill rate"):
            shown.add_column(column, justify="left" if not column else "right", no_wrap=not column)
        for label, counts in rows:
            rate = kill_rate(counts)
            shown.add_row(label, *(str(counts[f]) for f in FATES), "—" if rate is None else f"{rate:.0%}")
        console.print(shown)

    table("tasks audit by operator (SCRIPTED mutants of the scripted controls)",
          [*report.by_class().items(), ("all", report.totals())])
    table("tasks audit by task", [(t.task_id + ("" if t.scripted_ok else " (scripted control failed)"),
                                   {f: t.count(f) for f in FATES}) for t in report.tasks])
    for task_id, result in report.defects():
        console.print(f"[red]{result.fate}[/] {task_id} {result.mutant.id}: {result.mutant.description} "
                      f"(verdict {result.outcome})", markup=True, highlight=False)
    totals = report.totals()
    rate = kill_rate(totals)
    console.print(f"Total: {sum(totals.values())} mutants, killed {totals['killed']}, survived {totals['survived']}, "
                  f"equivalent {totals['equivalent']} + declared {totals['declared_equivalent']}, rejected "
                  f"equivalent {totals['rejected_equivalent']}, not run {totals['not_run']}; kill rate "
                  + ("—" if rate is None else f"{rate:.1%}"))


def print_blind(results: BlindResults) -> None:
    """Blind cases: each case's fate and verdict category (not which checks failed: the authors write without them),
    then the counts."""
    from computerops.catalog.blind import DEFECT_FATES
    table = Table(title="tasks blind (SCRIPTED runs of blind cases)", title_justify="left")
    for column in ("task", "case", "expect", "fate", "verdict", "attack (written / judged)", "skipped"):
        table.add_column(column, no_wrap=column in ("task", "case"))
    for r in results.results:
        colour = "red" if r.fate in DEFECT_FATES else "yellow" if r.fate == "not_run" else "green"
        attack = "" if r.attack is None else Text(f"{r.attack} / {r.attack_judged}",
                                                   style="red" if r.attack_defect else "green")
        table.add_row(r.task_id, r.case_id, r.expect, Text(r.fate, style=colour), r.outcome, attack,
                      str(r.skipped or ""))
    console.print(table)
    wrong = sum(1 for r in results.results if r.expect == "wrong")
    valid = len(results.results) - wrong
    apart = results.count("out_of_contract")
    wrong -= results.count("out_of_contract", "wrong")
    valid -= results.count("out_of_contract", "valid")
    console.print(f"Wrong cases: {results.count('rejected')} of {wrong} rejected, {results.count('survived')} "
                  f"survived; valid cases: {results.count('accepted')} of {valid} accepted, "
                  f"{results.count('refused')} refused; not run: {results.count('not_run')}; out of contract "
                  f"(what is never judged: the done message, form input never sent): {apart}"
                  + (f"; attacks judged otherwise than written: {sum(r.attack_defect for r in results.results)} of "
                     f"{sum(r.attack is not None for r in results.results)}"
                     if any(r.attack is not None for r in results.results) else ""))


def _mark(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[red]NO[/]"


def print_observed(page: ObservedPage) -> None:
    """The observation text as the model reads it, its control table, and with --compare the ai snapshot."""
    status = f", HTTP {page.status}" if page.status is not None else ""
    console.rule(f"Observation of {page.target} ({page.kind}{status})", align="left")
    console.print(page.text, markup=False)
    table = Table(title=f"{len(page.controls)} controls", title_justify="left")
    for column in ("id", "role", "name", "value / state", "flags", "href"):
        table.add_column(column, no_wrap=column in ("id", "role"))
    for control in page.controls:
        state = "checked" if control.checked else "unchecked" if control.checked is not None else control.value or ""
        flags = [f for f in ("required", "disabled", "readonly") if getattr(control, f)]
        if control.validation:
            flags.append(f"invalid: {control.validation}")
        table.add_row(control.id, control.role, control.name, state, ", ".join(flags), control.href or "",
                      style="dim" if control.disabled else None)
    console.print(table)
    if page.ai_snapshot is not None:
        console.rule('Playwright page.aria_snapshot(mode="ai") of the same page', align="left")
        console.print(page.ai_snapshot.text, markup=False)
    sizes = Table(title="Sizes", title_justify="left")
    for column in ("", "characters", "estimated tokens", "ms"):
        sizes.add_column(column, justify="left" if not column else "right")
    sizes.add_row("observation", str(page.chars), str(page.estimated_tokens), f"{page.observe_ms:.1f}")
    if page.ai_snapshot is not None:
        sizes.add_row("ai snapshot", str(page.ai_snapshot.chars), str(page.ai_snapshot.estimated_tokens),
                      f"{page.ai_snapshot.ms:.1f}")
        sizes.add_row("ratio", f"{page.chars_ratio:.2f}" if page.chars_ratio is not None else "-", "", "")
    console.print(sizes)
    if page.truncated:
        console.print("[yellow]The observation is cut at the size bound; the model gets the rest with `more`.[/]")
    if page.accessibility is not None:
        fidelity = page.accessibility
        console.print(f"Controls against Chromium's accessibility tree: recall {fidelity.recall:.0%} "
                      f"({fidelity.matched}/{fidelity.expected}), offered {fidelity.offered}, "
                      f"missing {len(fidelity.missing)}, offered but not in the tree {len(fidelity.extra)}")
        for missing in fidelity.missing:
            console.print(f"  [red]missing[/] {escape(missing.role)} {escape(repr(missing.name))}", markup=True)
        for extra in fidelity.extra:
            console.print(f"  [red]extra[/] {escape(repr(extra))}")  # a page's names: text, never markup


def print_bench(report: BenchReport) -> None:
    pages = Table(title=f"Catalog pages ({len(report.pages)})", title_justify="left")
    for column in ("page", "observe ms", "chars", "~tokens", "ai snapshot chars", "ratio", "recall", "extra",
                   "problems"):
        pages.add_column(column, justify="left" if column in ("page", "problems") else "right", no_wrap=True)
    for page in report.pages:
        pages.add_row(page.path, f"{page.observe_ms.median:.1f}", str(page.chars), str(page.estimated_tokens),
                      str(page.ai_snapshot_chars), f"{page.chars_ratio:.2f}", f"{page.recall:.0%}",
                      str(page.offered_not_in_tree), "; ".join(page.control_problems))
    console.print(pages)
    fixtures = Table(title=f"Fidelity fixture pages ({len(report.fixture_pages)})", title_justify="left")
    for column in ("page", "open ms", "expected", "recall", "extra", "clickable", "listeners not offered", "problems"):
        fixtures.add_column(column, justify="left" if column in ("page", "problems") else "right", no_wrap=True)
    for fixture in report.fixture_pages:
        fixtures.add_row(fixture.page, f"{fixture.open_ms:.0f}", str(fixture.accessibility_expected),
                         f"{fixture.recall:.0%}", str(fixture.offered_not_in_tree), str(fixture.clickables),
                         str(fixture.unoffered_listeners), "; ".join(fixture.control_problems))
    console.print(fixtures)
    levels = Table(title="SCRIPTED episodes by concurrency (one browser, one context and tenant per episode)",
                   title_justify="left")
    for column in ("concurrency", "episodes", "wall s", "episodes/min", "peak MiB", "verified", "identical"):
        levels.add_column(column, justify="right")
    for level in report.levels:
        levels.add_row(str(level.concurrency), str(level.episodes), f"{level.wall_s:.1f}",
                       f"{level.episodes_per_minute:.1f}", f"{level.peak_rss_mib:.0f}", str(level.verified_success),
                       "yes" if level.identical_to_first_level else "[red]NO[/]")
    console.print(levels)
    figures = Table(title="Figures against targets", title_justify="left")
    for column in ("figure", "measured", "target", "met"):
        figures.add_column(column)
    for target in report.targets:
        figures.add_row(target.figure, target.measured, target.target, _mark(target.met))
    splits = [("steps that load a page", report.page_load_step_ms), ("steps within a page", report.in_page_step_ms)]
    for name, dist in [("observe", report.observe_ms), ("act", report.act_ms),
                       ("step overhead", report.step_overhead_ms),
                       *[(n, d) for n, d in splits if d is not None], ("reset", report.reset_ms),
                       ("visual settle", report.visual_settle_ms)]:
        figures.add_row(f"{name} (n={dist.n})", f"median {dist.median} {dist.unit}, p95 {dist.p95} {dist.unit}",
                        "", "")
    console.print(figures)
    if report.executors is not None:
        print_executors(report.executors, [])


def print_executors(figures: ExecutorFigures, targets: Sequence[TargetCheck]) -> None:
    """The local executor against Ray at W workers, then the scaling model (marked as a model); `targets` (the
    executor target, for `bench --only executors`) are printed last."""
    runs = Table(title=f"SCRIPTED episodes: local executor at concurrency {figures.workers} against Ray at "
                       f"{figures.workers} workers (same plan)", title_justify="left")
    for column in ("executor", "episodes", "wall s", "start-up s", "steady s", "episodes/min", "steady episodes/min",
                   "peak MiB", "verified"):
        runs.add_column(column, justify="left" if column == "executor" else "right")
    for run in (figures.local, figures.ray):
        runs.add_row(run.executor, str(run.episodes), f"{run.wall_s:.1f}", f"{run.startup_s:.1f}",
                     f"{run.steady_s:.1f}", f"{run.episodes_per_minute:.1f}", f"{run.steady_episodes_per_minute:.1f}",
                     f"{run.peak_rss_mib:.0f}", str(run.verified_success))
    console.print(runs)
    console.print(f"Ray / local: {figures.ratio:.2f} x steady state (compared with the target: start-up is paid once "
                  f"per run), {figures.ratio_including_startup:.2f} x start-up included; evidence identical: "
                  + ("yes" if figures.identical_evidence else f"[red]NO[/] ({', '.join(figures.differing[:5])})"))
    model = figures.scaling
    console.print(f"MODEL, not a measurement (computerops/bench/scaling.py): {model.formula} episodes/s, with "
                  f"W = {model.workers_per_node}, t_episode {model.episode_s:.3f} s, t_dispatch {model.dispatch_s:.3f} "
                  f"s and t_admit {model.admit_s * 1000:.2f} ms measured in this run", markup=False)
    table = Table(title=f"Modelled episodes/min on N nodes of {model.workers_per_node} workers",
                  title_justify="left")
    for column in ("nodes", "workers", "episodes/min", "bound by"):
        table.add_column(column, justify="right")
    for point in model.points:
        table.add_row(str(point.nodes), str(point.workers), f"{point.episodes_per_minute:.1f}", point.bound)
    console.print(table)
    console.print(f"The driver admits at most {model.driver_cap_per_minute:.0f} episodes/min (admission mean "
                  f"{model.admit_s * 1000:.2f} ms, median {model.admit_median_ms:.2f} ms, p95 "
                  f"{model.admit_p95_ms:.2f} ms, n={model.admit_samples}); in the model it is the bottleneck from "
                  f"{model.driver_bound_from} nodes of {model.workers_per_node} workers (N = "
                  f"{model.crossover_nodes:.1f}).")
    for target in targets:
        console.print(f"{target.figure}: {target.measured}; target {target.target}: {_mark(target.met)}")


def print_subset(subset: ReservedSubset, path: object) -> None:
    table = Table(title=f"Reserved subset: {subset.count} {subset.instances} instances (the catalog publishes "
                        f"{subset.catalog_size}), seed {subset.seed} (lock {subset.lock_sha256[:12]})",
                  title_justify="left")
    for column in ("id", "sha256"):
        table.add_column(column, no_wrap=True)
    for task in subset.tasks:
        table.add_row(task.id, task.sha256[:12])
    console.print(table)
    console.print(f"Draw: {subset.method}. Written to {path}; run it with `computerops run --tasks {path} ...`.")
    if subset.undefined:
        console.print(f"Redrawn ({len(subset.undefined)}, in the file as `undefined`): "
                      + ", ".join(subset.undefined) + " (the template defines no instance at that seed).",
                      markup=False, highlight=False)


def print_verification(verification: Verification, root: Path, *, recorded: bool = True) -> None:
    """`computerops verify`'s outcome: the first mismatch and the rest on stderr, or the PASS line (with where the
    pass is recorded, or that it is not: a read-only copy)."""
    from computerops.runs.bundle import VERIFICATION
    if not verification.passed:
        errors.print(f"FAIL: {verification.first_mismatch}", markup=False, highlight=False)
        if len(verification.problems) > 1:
            errors.print(f"({len(verification.problems) - 1} more problems:)", markup=False)
            for problem in verification.problems[1:]:
                errors.print(f"  {problem}", markup=False, highlight=False)
        return
    console.print(f"verify PASS: {verification.files_checked} files match their checksums, "
                  f"{verification.episodes_replayed} episodes re-judged and replayed PASS, the summary recomputed "
                  "exactly. " + (f"Evidence level E2 (recorded in {root / VERIFICATION})." if recorded else
                                 "Not recorded, so this copy's report stays at evidence level E1."), markup=False)


def print_demo_plan(plan: DemoPlan) -> None:
    from computerops.runs.demo import DEMO_POLICIES
    console.print(f"[bold]ComputerOps demo[/] — a reserved subset of {len(plan.tasks)} tasks, SCRIPTED policies "
                  f"{','.join(DEMO_POLICIES)} on each, plus the negative controls "
                  f"{', '.join(p for _, p in plan.negatives)}; writing {plan.target}")
    print_subset(plan.subset, plan.subset_file)
    print_tasks(plan.tasks)


def print_demo_replays(receipts: Sequence[Receipt], episodes: int, target: Path) -> None:
    print_receipts(receipts)
    passed = sum(r.result == "PASS" for r in receipts)
    console.print(f"Replayed from disk: {passed}/{episodes} PASS. Evidence in {target}/")


def print_demo_check(checks: Sequence[TaskCheck] | None) -> None:
    """The demo's closing tasks check: its results, or None when it was skipped."""
    if checks is None:
        console.print("tasks check of the subset skipped (--no-tasks-check): `computerops tasks check` runs it.")
        return
    print_task_checks(checks)


def print_demo_times(times: PhaseTimes) -> None:
    """How long each phase of the demo took, and in all (wall clock)."""
    phases = "; ".join(f"{name} {seconds:.0f} s" for name, seconds in times.seconds.items())
    console.print(f"Demo phases (wall clock): {phases}; in all {times.total:.0f} s", markup=False)


def print_demo_check_start(check_dir: Path) -> None:
    console.print(f"[bold]tasks check[/]: every control of every task of the subset, evidence in {check_dir}/")


def print_experiment_plan(lock: ExperimentLock) -> None:
    """What `experiment freeze` fixed: the design's counts, what its arms are and its cells, before any model call."""
    from computerops.experiment.plan import arms_meaning

    counts = lock.counts
    spec = lock.spec
    console.print(f"Experiment {spec.id} v{spec.version}: {counts.cells} cells x {counts.tasks} tasks x "
                  f"{counts.repetitions} repetitions x {counts.arms} arms = {counts.episodes} episodes, "
                  f"{counts.pairs} matched pairs; arm order {spec.order.kind}", markup=False)
    console.print(f"Arms: {arms_meaning(spec)}", markup=False)
    table = Table(title="Cells", title_justify="left")
    for column in ("cell", "episodes", "of which control"):
        table.add_column(column, no_wrap=column == "cell")
    per_cell = Counter(p.cell for p in lock.plan)
    controls = Counter(p.cell for p in lock.plan if p.arm == "control")
    for cell, count in per_cell.items():
        table.add_row(Text(str(cell)), str(count), str(controls.get(cell, 0)))
    console.print(table)


def print_analysis_timings(episodes: int, timings: Sequence[Timing]) -> None:
    table = Table(title=f"Experiment analysis of {episodes} synthetic episodes (wall clock, one run)",
                  title_justify="left")
    table.add_column("step")
    table.add_column("seconds", justify="right")
    for timing in timings:
        table.add_row(timing.step, f"{timing.seconds:.2f}")
    table.add_row(Text("total", style="bold"), f"{sum(t.seconds for t in timings):.2f}")
    console.print(table)
