"""Rendering results for people: rich tables on the terminal. The only module that formats output."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from computerops.audit import FATES, AuditReport, Fate, kill_rate
from computerops.bench import BenchReport
from computerops.checking import ControlResult, TaskCheck
from computerops.observing import ObservedPage
from computerops.report import (
    OUTCOME_CAPTION,
    OutcomeTable,
    Proportion,
    RecoveryFunnelRow,
    RunReport,
    causes_text,
    context_text,
    kinds_text,
    tools_text,
)
from computerops.subsets import ReservedSubset
from replays import Receipt
from tasks import LoadedTask

# Piped output (CI, files) gets a wide fixed width so tables and progress lines are not wrapped.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
errors = Console(highlight=False, stderr=True, width=None if sys.stderr.isatty() else 200)


def scripted_note(scripted: bool) -> str:
    return " [bold yellow](SCRIPTED endpoint: deterministic policies, not a language model)[/]" if scripted else ""


def _label(row: OutcomeTable) -> str:
    return "[bold]all[/]" if row.label == "all" else escape(row.label)


def _proportion(proportion: Proportion) -> tuple[str, str]:
    """`n/d = rate` and its Wilson interval; `n/0` and n/a without a denominator."""
    if proportion.rate is None or proportion.wilson95 is None:
        return f"{proportion.numerator}/{proportion.denominator}", "n/a"
    return (f"{proportion.numerator}/{proportion.denominator} = {proportion.rate:.4f}",
            f"{proportion.wilson95.low:.4f}-{proportion.wilson95.high:.4f}")


def _value(value: object) -> str:
    return "unknown" if value is None else str(value)


def _plain_table(title: str, columns: Sequence[str], caption: str | None = None) -> Table:
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=index == 0)
    return table


def print_report(report: RunReport) -> None:
    table = Table(title=f"Run {escape(report.run_id)}" + scripted_note(report.scripted), title_justify="left")
    table.caption = OUTCOME_CAPTION
    table.caption_justify = "left"
    for column in ("endpoint", "attempted", "verified", "self-reported", "false compl.", "state/proc/forbid",
                   "claimed fail", "no finish", "damaging", "infra", "replay PASS"):
        table.add_column(column, justify="left" if column == "endpoint" else "right", no_wrap=True,
                         min_width=len(column))
    rows = report.rows()
    for row in rows:
        table.add_row(
            _label(row), str(row.attempted), str(row.verified_success),
            str(row.self_reported_success), str(row.false_completions), kinds_text(row.false_completion_kinds),
            str(row.claimed_failure), str(row.no_finish), str(row.damaging_failures),
            str(row.infrastructure_failures), f"{row.replay_pass}/{row.episodes}",
        )
    console.print(table)
    total = report.total
    if total.infrastructure_failures:
        console.print(f"Infrastructure failures (outside attempted and every rate; `run --resume` runs them "
                      f"again): {total.infrastructure_failures}, by cause: "
                      f"{causes_text(total.infrastructure_causes)}.", markup=False)
    console.print(
        f"False completions: {total.false_completions}/{total.attempted} attempted episodes"
        f" and {total.false_completions}/{total.self_reported_success} success claims."
        f" Forbidden mutations: {total.forbidden_mutations} episode(s), {total.damaging_failures} of them"
        " without a success claim."
        f" Rejected actions: {total.rejected_actions}. Requests blocked by containment: {total.blocked_requests}"
        f" in {total.episodes_with_blocked_requests} episode(s). Stop reasons: "
        + ", ".join(f"{k} {v}" for k, v in total.stop_reasons.items())
    )
    intervals = _plain_table(
        "Rates and 95% intervals",
        ("endpoint", "verified / attempted", "Wilson", "task bootstrap", "pass^k", "false compl. / attempted",
         "Wilson", "false compl. / success claims", "Wilson"),
        f"Wilson score intervals over episodes; the task bootstrap resamples tasks ({report.bootstrap_resamples} "
        f"resamples, seed {report.bootstrap_seed}). The first false-completion rate: how often an attempted episode "
        "ended in a rejected success claim; the second: how often a success claim was rejected. n/a: no denominator.")
    for row in rows:
        boot = row.verified_success_bootstrap.interval
        pass_k = row.pass_hat_k
        intervals.add_row(
            _label(row), *_proportion(row.verified_success_rate),
            f"{boot.low:.4f}-{boot.high:.4f}" if boot else "n/a",
            " ".join(f"^{v.k} {v.value:.4f}" for v in pass_k.by_k) if pass_k else "n/a",
            *_proportion(row.false_completion_over_attempted), *_proportion(row.false_completion_over_success_claims))
    console.print(intervals)
    taxonomy = _plain_table("Claim against verifier (infrastructure failures left out)",
                            ("endpoint", "claimed/pass", "claimed/fail", "not-claimed/pass", "not-claimed/fail"))
    split = _plain_table("False completions by kind",
                         ("endpoint", "false compl.", "state", "procedure only", "forbidden mutation"))
    usage = _plain_table(
        "Tokens and latency per episode", ("endpoint", "tokens known", "unknown", "mean", "median", "wall s mean",
                                           "median", "max"),
        "Tokens = prompt + completion where the endpoint reported both; the rest are counted unknown, not guessed.")
    for row in rows:
        taxonomy.add_row(_label(row), *(str(row.taxonomy[k]) for k in
                                       ("claimed/pass", "claimed/fail", "not-claimed/pass", "not-claimed/fail")))
        kinds = row.false_completion_kinds
        split.add_row(_label(row), str(row.false_completions), str(kinds["state"]), str(kinds["procedure_only"]),
                      str(kinds["forbidden_mutation"]))
        usage.add_row(_label(row), str(row.tokens.known), str(row.tokens.unknown), _value(row.tokens.mean),
                      _value(row.tokens.median), _value(row.latency.mean_s), _value(row.latency.median_s),
                      _value(row.latency.max_s))
    console.print(taxonomy)
    console.print(split)
    for row in report.by_endpoint:
        per_task = _plain_table(f"Per task: {escape(row.label)}", ("task", "attempted", "verified", "self-reported",
                                                                   "false compl.", "state/proc/forbid", "no finish"))
        for task in row.per_task:
            per_task.add_row(escape(task.task_id), str(task.attempted), str(task.verified_success),
                             str(task.self_reported_success), str(task.false_completions),
                             kinds_text(task.false_completion_kinds), str(task.no_finish))
        console.print(per_task)
    console.print(usage)
    console.print(f"Evidence level {report.evidence_level}: {report.evidence_level_meaning}.", markup=False)
    if report.completeness is not None and not report.completeness.complete:
        console.print(f"INCOMPLETE RUN: {report.completeness.describe()}. The figures cover only what was admitted; "
                      "continue it with `computerops run --resume`.", markup=False)
    claimed, observed = report.provenance.claimed, report.provenance.observed
    claimed_text = ("unknown" if claimed is None else
                    f"kind {claimed.kind}, base_url {_value(claimed.base_url)}, model {_value(claimed.model)}, "
                    f"artifact_sha256 {_value(claimed.artifact_sha256)}")
    ids = observed.models_payload_ids
    headers = observed.server_headers
    console.print(f"claimed: {claimed_text}", markup=False)
    if report.provenance.model_mismatch:
        console.print(f"MODEL MISMATCH: {report.provenance.model_mismatch}", markup=False)
    console.print(
        f"observed: GET /models ids {_value(', '.join(ids) if ids is not None else None)}"
        + (f" (error: {observed.models_error})" if observed.models_error else "")
        + f"; models in replies {', '.join(observed.models_seen) or 'none'}"
        + f"; fingerprints {', '.join(observed.fingerprints_seen) or 'none'}"
        + f"; server headers {_value('; '.join(f'{k}: {v}' for k, v in sorted(headers.items())) if headers else None)}"
        + f"; in replies {'; '.join(observed.reply_headers_seen) or 'none'}"
        + f"; context {context_text(observed.context)}; tools {tools_text(observed.tools)}",
        markup=False,
    )
    if report.provenance.planned_from_server:
        console.print(f"planned from the server's word: {report.provenance.planned_from_server}", markup=False)
    _print_rejections(report)
    if report.exposure.configured_any or report.exposure.fired_any:
        _print_faults(report)
    if report.loops.episodes_with_stats:
        _print_loops(report)


def _print_rejections(report: RunReport) -> None:
    causes = report.rejected_by_cause
    if not causes:
        console.print(f"Rejected actions by cause: none recorded ({report.total.rejected_actions} rejected).")
        return
    table = _plain_table("Rejected actions by cause", ("cause", "rejected"))
    for cause, count in causes.items():
        table.add_row(escape(cause), str(count))
    console.print(table)
    console.print("A rejection is not by itself unsafe, and an accepted action is not by itself progress.")


def _funnel_label(row: RecoveryFunnelRow) -> str:
    return "[bold]any fault[/]" if row.fault_class is None else escape(row.fault_class)


def _print_faults(report: RunReport) -> None:
    exposure = report.exposure
    table = _plain_table(
        "Fault exposure", ("fault class", "configured", "fired", "fired / configured", "Wilson", "firings"),
        f"configured = injection enabled and the class configured; fired = the class fired at least once. "
        f"Configured is not exposed. Matched controls (injection disabled): {exposure.controls}."
        + (f" {exposure.fired_without_configured} episode(s) fired a class not configured."
           if exposure.fired_without_configured else ""))
    for fault in exposure.by_class:
        if fault.configured or fault.fired:
            table.add_row(escape(fault.fault_class), str(fault.configured), str(fault.fired),
                          *_proportion(fault.fired_over_configured), str(fault.firings))
    table.add_row("[bold]any fault[/]", str(exposure.configured_any), str(exposure.fired_any),
                  *_proportion(exposure.fired_over_configured), str(sum(r.firings for r in exposure.by_class)))
    console.print(table)
    funnel = report.recovery_funnel
    steps = _plain_table(
        "Recovery funnel", ("fault class", "attempted", "exposed", "verified after exposure", "verified / exposed",
                            "Wilson", "explicit diagnosis", "matched controls verified"),
        "attempted -> exposed (fault fired) -> verified success after exposure. Explicit diagnosis (the final "
        "claim message names the fault) is beside the funnel, not a step of it. Controls: episodes with injection "
        "disabled of the exposed episodes' tasks; matched on task, not a causal estimate of the fault's effect.")
    for row in [funnel.total, *funnel.by_class]:
        if row.fault_class is not None and not (row.attempted or row.exposed):
            continue
        steps.add_row(_funnel_label(row), str(row.attempted), str(row.exposed), str(row.verified_after_exposure),
                      *_proportion(row.recovered_over_exposed), f"{row.explicit_diagnosis}/{row.exposed}",
                      _proportion(row.control_verified_success_rate)[0] if row.controls else "no controls")
    console.print(steps)
    fault_completions = report.false_completions_with_fault_context
    if not fault_completions:
        console.print("False completions after a fault fired: none.")
        return
    table = _plain_table("False completions after a fault fired", ("episode", "kind", "faults fired", "firings"))
    for item in fault_completions:
        table.add_row(escape(item.episode_id), escape(item.kind), escape(", ".join(item.faults_fired)),
                      str(item.firings))
    console.print(table)


def _print_loops(report: RunReport) -> None:
    loops = report.loops
    if not loops.rows:
        console.print(f"Recovery loops: none ({loops.episodes_with_stats} episodes with loop stats; detector "
                      f"{', '.join(loops.detectors)}).", markup=False)
        return
    table = _plain_table(
        "Recovery loops", ("episode", "configured faults", "actions", "state reads", "largest repeat", "loop",
                           "stop", "outcome", "detector"),
        f"{loops.loop_episodes} loop episode(s) of {loops.episodes_with_stats} with loop stats"
        + (f" ({loops.episodes_without_stats} records without)" if loops.episodes_without_stats else "")
        + f"; detector {', '.join(loops.detectors)}. Largest repeat: equal write intents in the final segment "
        "without a durable effect; rows: loop, or an intent repeated at least twice.")
    for row in loops.rows:
        table.add_row(escape(row.episode_id), escape(", ".join(row.faults_configured) or "none")
                      + ("" if row.faults_enabled else " (disabled)"), str(row.actions), str(row.state_reads),
                      str(row.largest_repeat), "[bold red]yes[/]" if row.loop else "no", escape(row.stop_reason),
                      escape(row.outcome), escape(row.detector))
    console.print(table)


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
                   "problems"):
        table.add_column(column, no_wrap=column == "task")
    for check in checks:
        problems = "; ".join(f"{r.control}: expected {r.expected}, got {r.outcome}, ran {r.ran}, replay {r.replay}"
                             for r in check.results if not r.ok)
        oracle, noop = check.results[0], check.results[1]
        negatives = [r for r in check.results if r.control.startswith("negative:")]
        table.add_row(check.task_id, f"{_mark(oracle.ok)} {oracle.outcome}", f"{_mark(noop.ok)} {noop.outcome}",
                      f"{check.negatives_rejected}/{check.negatives_total}", _categories(negatives),
                      f"{check.equivalents_accepted}/{check.equivalents_total}", problems)
    console.print(table)
    solvable = sum(c.solvable for c in checks)
    noop_rejected = sum(c.noop_rejected for c in checks)
    rejected = sum(c.negatives_rejected for c in checks)
    total = sum(c.negatives_total for c in checks)
    accepted = sum(c.equivalents_accepted for c in checks)
    equivalents = sum(c.equivalents_total for c in checks)
    every = [r for c in checks for r in c.results if r.control.startswith("negative:")]
    console.print(f"Total: solvable {solvable}/{len(checks)}, no-op rejected {noop_rejected}/{len(checks)}, "
                  f"negative controls rejected {rejected}/{total} ({_categories(every)}), "
                  f"equivalent solutions accepted {accepted}/{equivalents}")


def print_audit(report: AuditReport) -> None:
    """The mutation audit: fates by operator and by task, then every defect (survivor or rejected equivalent)."""
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
            console.print(f"  [red]missing[/] {missing.role} {missing.name!r}", markup=True)
        for extra in fidelity.extra:
            console.print(f"  [red]extra[/] {extra!r}")


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


def print_subset(subset: ReservedSubset, path: object) -> None:
    table = Table(title=f"Reserved subset: {subset.count} of {subset.catalog_size} tasks, seed {subset.seed} "
                        f"(lock {subset.lock_sha256[:12]})", title_justify="left")
    for column in ("id", "sha256"):
        table.add_column(column, no_wrap=True)
    for task in subset.tasks:
        table.add_row(task.id, task.sha256[:12])
    console.print(table)
    console.print(f"Draw: {subset.method}. Written to {path}; run it with `computerops run --tasks {path} ...`.")
