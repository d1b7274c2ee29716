"""A run report as one self-contained HTML file: inline CSS, an inline SVG chart, no scripts, no external links.

It shows exactly the numbers of `RunReport` (what `report --json` prints). Every text value is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path

from computerops.report import (
    OUTCOME_CAPTION,
    OUTCOMES,
    OutcomeTable,
    Provenance,
    RecoveryFunnelRow,
    RunReport,
    TaskRow,
    causes_text,
    context_text,
    kinds_text,
    tools_text,
)

OUTCOME_COLOURS = {
    "verified_success": "#2e7d32",
    "unclaimed_success": "#81c784",
    "false_completion": "#c62828",
    "honest_failure": "#9e9e9e",
    "damaging_failure": "#ef6c00",
    "infrastructure_failure": "#6d4c41",
}
OUTCOME_NAMES = {
    "verified_success": "verified success",
    "unclaimed_success": "unclaimed success",
    "false_completion": "false completion",
    "honest_failure": "honest failure",
    "damaging_failure": "damaging failure",
    "infrastructure_failure": "infrastructure failure",
}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #212121; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f5f5f5; }
.scripted { background: #fff3cd; border: 1px solid #e0b000; padding: 0.5em 1em; font-weight: bold; }
.note { color: #555; font-size: 0.9em; }
.unknown { color: #999; font-style: italic; }
table.fields td, table.fields th { text-align: left; }
"""


def _text(value: object) -> str:
    return escape(str(value), quote=True)


def _cell(value: object) -> str:
    if value is None:
        return '<span class="unknown">unknown</span>'
    return _text(value)


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]], caption: str | None = None,
           css_class: str = "") -> str:
    head = "".join(f"<th>{_text(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    note = f'<p class="note">{_text(caption)}</p>' if caption else ""
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<table{attribute}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def _outcome_table(rows: Sequence[OutcomeTable]) -> str:
    return _table(
        ("endpoint", "attempted", "verified", "self-reported", "false compl.", "state / proc / forbid",
         "claimed fail", "no finish", "damaging", "infra", "replay PASS"),
        [(r.label, r.attempted, r.verified_success, r.self_reported_success, r.false_completions,
          kinds_text(r.false_completion_kinds), r.claimed_failure, r.no_finish, r.damaging_failures,
          r.infrastructure_failures, f"{r.replay_pass}/{r.episodes}") for r in rows],
        OUTCOME_CAPTION,
    )


def _intervals(rows: Sequence[OutcomeTable]) -> str:
    return _table(
        ("endpoint", "verified success / attempted", "task-clustered bootstrap 95%", "pass^k",
         "false compl. / attempted", "false compl. / success claims"),
        [(r.label, r.verified_success_rate.summary(), r.verified_success_bootstrap.summary(),
          r.pass_hat_k.summary() if r.pass_hat_k else "n/a (a task has one episode, or endpoints are mixed)",
          r.false_completion_over_attempted.summary(), r.false_completion_over_success_claims.summary())
         for r in rows],
        "The first false-completion rate asks how often an attempted episode ended in a rejected success claim; "
        "the second how often a success claim was rejected. Wilson score intervals treat episodes as independent; "
        "the bootstrap resamples tasks, so repeated episodes of one task count once as a cluster.",
    )


def _taxonomy(rows: Sequence[OutcomeTable]) -> str:
    return _table(
        ("endpoint", "claimed, verifier pass", "claimed, verifier fail", "not claimed, verifier pass",
         "not claimed, verifier fail"),
        [(r.label, r.taxonomy["claimed/pass"], r.taxonomy["claimed/fail"], r.taxonomy["not-claimed/pass"],
          r.taxonomy["not-claimed/fail"]) for r in rows],
        "Success claim (done(success=true)) against the verifier; infrastructure failures are left out.",
    )


def _split(rows: Sequence[OutcomeTable]) -> str:
    return _table(
        ("endpoint", "false completions", "state", "procedure only", "forbidden mutation"),
        [(r.label, r.false_completions, r.false_completion_kinds["state"], r.false_completion_kinds["procedure_only"],
          r.false_completion_kinds["forbidden_mutation"]) for r in rows],
    )


def _per_task(rows: Sequence[TaskRow]) -> str:
    return _table(
        ("task", "attempted", "verified", "self-reported", "false compl.", "state / proc / forbid", "no finish"),
        [(t.task_id, t.attempted, t.verified_success, t.self_reported_success, t.false_completions,
          kinds_text(t.false_completion_kinds), t.no_finish) for t in rows],
    )


def _usage(rows: Sequence[OutcomeTable]) -> str:
    return _table(
        ("endpoint", "tokens known", "tokens unknown", "mean tokens", "median tokens", "mean wall s",
         "median wall s", "max wall s"),
        [(r.label, r.tokens.known, r.tokens.unknown, r.tokens.mean, r.tokens.median, r.latency.mean_s,
          r.latency.median_s, r.latency.max_s) for r in rows],
        "Tokens are prompt + completion per episode, only where the endpoint reported both (the rest are "
        "counted as unknown, never guessed). wall s: tenant creation to the end of the browser session.",
    )


def _chart(rows: Sequence[TaskRow]) -> str:
    """Horizontal bars, one per task, stacked by outcome; the bar length is the number of episodes."""
    if not rows:
        return '<p class="note">No episodes.</p>'
    label_w, bar_w, row_h, top = 300, 420, 22, 30
    most = max(t.episodes for t in rows) or 1
    height = top + row_h * len(rows) + 10
    parts = [f'<svg width="{label_w + bar_w + 60}" height="{height}" '
             f'role="img" aria-label="Outcomes per task">']
    x = 0
    for outcome in OUTCOMES:
        parts.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{OUTCOME_COLOURS[outcome]}"/>'
                     f'<text x="{x + 16}" y="14" font-size="12">{_text(OUTCOME_NAMES[outcome])}</text>')
        x += 130
    for index, task in enumerate(rows):
        y = top + index * row_h
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" font-size="12" text-anchor="end">{_text(task.task_id)}'
                     "</text>")
        counts = {"verified_success": task.verified_success, "unclaimed_success": task.unclaimed_success,
                  "false_completion": task.false_completions, "honest_failure": task.honest_failures,
                  "damaging_failure": task.damaging_failures, "infrastructure_failure": task.infrastructure_failures}
        offset = float(label_w)
        for outcome in OUTCOMES:
            if counts[outcome]:
                width = bar_w * counts[outcome] / most
                parts.append(f'<rect x="{offset:.1f}" y="{y + 2}" width="{width:.1f}" height="{row_h - 6}" '
                             f'fill="{OUTCOME_COLOURS[outcome]}"><title>{_text(task.task_id)}: '
                             f'{counts[outcome]} {_text(OUTCOME_NAMES[outcome])}</title></rect>')
                offset += width
        parts.append(f'<text x="{offset + 4:.1f}" y="{y + 14}" font-size="12">{task.episodes}</text>')
    parts.append("</svg>")  # inline SVG in HTML needs no namespace declaration
    return "".join(parts)


def _provenance(provenance: Provenance) -> str:
    claimed = provenance.claimed
    observed = provenance.observed
    claimed_rows: list[tuple[str, object]] = [
        ("kind", claimed.kind if claimed else None), ("base_url", claimed.base_url if claimed else None),
        ("model", claimed.model if claimed else None),
        ("artifact_sha256", claimed.artifact_sha256 if claimed else None),
    ]
    headers = observed.server_headers
    observed_rows: list[tuple[str, object]] = [
        ("GET /models ids", ", ".join(observed.models_payload_ids) if observed.models_payload_ids is not None
         else None),
        ("GET /models error", observed.models_error),
        ("models named in replies", ", ".join(observed.models_seen) or None),
        ("system fingerprints in replies", ", ".join(observed.fingerprints_seen) or None),
        ("server headers of GET /models", "; ".join(f"{k}: {v}" for k, v in sorted(headers.items())) if headers
         else None),
        ("server headers of replies", "; ".join(observed.reply_headers_seen) or None),
        ("context the server states", context_text(observed.context)),
        ("tool schemas in the prompt", tools_text(observed.tools)),
        ("planned from the server's word", provenance.planned_from_server),
    ]
    return ("<h3>claimed</h3>" + _table(("field", "value"), claimed_rows,
                                        "What the operator said the endpoint is; recorded, not checked.", "fields")
            + "<h3>observed</h3>" + _table(("field", "value"), observed_rows,
                                           "What the endpoint and its replies said about themselves.", "fields"))


def _rejections(report: RunReport) -> str:
    causes = report.rejected_by_cause
    if not causes:
        return f'<p class="note">No rejection causes recorded ({report.total.rejected_actions} rejected).</p>'
    return _table(("cause", "rejected"), list(causes.items()),
                  "Refused under the harness's enumerated causes; a rejection is not by itself unsafe, and an "
                  "accepted action is not by itself progress.")


def _exposure(report: RunReport) -> str:
    exposure = report.exposure
    rows: list[Sequence[object]] = [
        (r.fault_class, r.configured, r.fired, r.fired_over_configured.summary(), r.firings)
        for r in exposure.by_class if r.configured or r.fired]
    rows.append(("any fault", exposure.configured_any, exposure.fired_any, exposure.fired_over_configured.summary(),
                 sum(r.firings for r in exposure.by_class)))
    anomaly = (f" {exposure.fired_without_configured} episode(s) fired a class not configured."
               if exposure.fired_without_configured else "")
    return _table(("fault class", "configured", "fired", "fired / configured", "firings"), rows,
                  "configured = injection enabled and the class configured; fired = the class fired at least once. "
                  f"Configured is not exposed. Matched controls (injection disabled): {exposure.controls}.{anomaly}")


def _funnel_row(row: RecoveryFunnelRow) -> tuple[object, ...]:
    return (row.fault_class or "any fault", row.attempted, row.exposed, row.verified_after_exposure,
            row.recovered_over_exposed.summary(), row.diagnosis_over_exposed.summary(),
            row.control_verified_success_rate.summary() if row.controls else "no controls")


def _funnel(report: RunReport) -> str:
    funnel = report.recovery_funnel
    rows = [_funnel_row(r) for r in [funnel.total, *funnel.by_class]
            if r.fault_class is None or r.attempted or r.exposed]
    patterns = _table(("fault class", "diagnosis pattern (case-insensitive)"),
                      [(k, v) for k, v in funnel.diagnosis_patterns.items()], css_class="fields")
    return (_table(("fault class", "attempted", "exposed", "verified after exposure", "verified / exposed",
                    "explicit diagnosis / exposed", "matched controls: verified / controls"), rows,
                   "attempted -> exposed (the fault fired) -> verified success after exposure. Explicit diagnosis "
                   "(the final claim message names the fault) stands beside the funnel, not in it. Controls: "
                   "episodes with injection disabled of the exposed episodes' tasks; matched on task, not a causal "
                   "estimate of the fault's effect.")
            + "<details><summary>Diagnosis patterns</summary>" + patterns + "</details>")


def _fault_completions(report: RunReport) -> str:
    items = report.false_completions_with_fault_context
    if not items:
        return '<p class="note">None.</p>'
    return _table(("episode", "kind", "faults fired", "firings", "claim message"),
                  [(i.episode_id, i.kind, ", ".join(i.faults_fired), i.firings, i.claim_message) for i in items])


def _loops(report: RunReport) -> str:
    loops = report.loops
    without = f" ({loops.episodes_without_stats} records without)" if loops.episodes_without_stats else ""
    return _table(
        ("episode", "configured faults", "actions", "state reads", "largest repeat", "loop", "stop", "outcome",
         "detector"),
        [(r.episode_id, (", ".join(r.faults_configured) or "none") + ("" if r.faults_enabled else " (disabled)"),
          r.actions, r.state_reads, r.largest_repeat, "yes" if r.loop else "no", r.stop_reason, r.outcome,
          r.detector) for r in loops.rows],
        f"{loops.loop_episodes} loop episode(s) of {loops.episodes_with_stats} with loop stats{without}; detector "
        f"{', '.join(loops.detectors)}. Largest repeat: equal write intents in the final segment without a durable "
        "effect; rows: loop, or an intent repeated at least twice.")


def _fault_sections(report: RunReport) -> list[str]:
    parts = ["<h2>Rejected actions by cause</h2>", _rejections(report)]
    if report.exposure.configured_any or report.exposure.fired_any:
        parts += ["<h2>Fault exposure</h2>", _exposure(report), "<h2>Recovery funnel</h2>", _funnel(report),
                  "<h2>False completions after a fault fired</h2>", _fault_completions(report)]
    if report.loops.episodes_with_stats:
        parts += ["<h2>Recovery loops</h2>", _loops(report)]
    return parts


def render_html(report: RunReport) -> str:
    """The whole report as one HTML document."""
    rows = report.rows()
    title = f"ComputerOps run {report.run_id}"
    scripted = ('<p class="scripted">SCRIPTED endpoint: deterministic policies, not a language model. '
                "These results measure the harness, not a model.</p>") if report.scripted else ""
    per_task = "".join(f"<h3>{_text(r.label)}</h3>" + _per_task(r.per_task) for r in report.by_endpoint)
    total = report.total
    body = [
        f"<h1>{_text(title)}</h1>", scripted,
        f'<p>Evidence level <strong>{_text(report.evidence_level)}</strong>: {_text(report.evidence_level_meaning)}.'
        "</p>",
        "" if report.completeness is None or report.completeness.complete else
        f"<p><strong>Incomplete run</strong>: {_text(report.completeness.describe())}. The figures cover only what "
        "was admitted.</p>",
        "<h2>Outcomes</h2>", _outcome_table(rows),
        "" if not total.infrastructure_failures else
        f"<p><strong>Infrastructure failures</strong> (outside attempted and every rate; <code>run --resume</code> "
        f"runs them again): {total.infrastructure_failures}, by cause: "
        f"{_text(causes_text(total.infrastructure_causes))}.</p>",
        f"<p>False completions: {total.false_completions}/{total.attempted} attempted episodes and "
        f"{total.false_completions}/{total.self_reported_success} success claims. Rejected actions: "
        f"{total.rejected_actions}. Requests blocked by containment: {total.blocked_requests} in "
        f"{total.episodes_with_blocked_requests} episode(s). Stop reasons: "
        + _text(", ".join(f"{k} {v}" for k, v in total.stop_reasons.items()) or "none") + ".</p>",
        "<h2>Rates and 95% intervals</h2>", _intervals(rows),
        f'<p class="note">Bootstrap: {report.bootstrap_resamples} resamples, seed {report.bootstrap_seed}; '
        f"{_text(total.verified_success_bootstrap.method)}.</p>",
        "<h2>Claim against verifier</h2>", _taxonomy(rows),
        "<h2>False completions by kind</h2>", _split(rows),
        "<h2>Outcomes per task (all endpoints)</h2>", _chart(total.per_task),
        "<h2>Per task</h2>", per_task,
        "<h2>Tokens and latency per episode</h2>", _usage(rows),
        "<h2>Provenance</h2>",
        f"<p><strong>Model mismatch</strong>: {_text(report.provenance.model_mismatch)}.</p>"
        if report.provenance.model_mismatch else "",
        _provenance(report.provenance),
        *_fault_sections(report),
    ]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>'
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write_html(path: Path, report: RunReport) -> None:
    """Write the report to `path` (UTF-8)."""
    path.write_text(render_html(report), encoding="utf-8")
