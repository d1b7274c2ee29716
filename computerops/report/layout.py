"""The report's layout, once: every section of a `RunReport` as typed tables and paragraphs (`ReportView`), in the
order the console prints them and the HTML page shows them. Headers, row labels, cell texts and captions are
worded here only, or, for a study's figures, in the study's report module (computerops/report/faults.py,
security.py, serving.py, persistence.py), which its `Study.report_blocks` calls.

The order: the report's own blocks (outcomes, the endpoints that answered, instances, totals, rates, the claim
against the verifier, false-completion kinds, the chart, per task, usage, evidence, provenance, rejections), then
the recovery loops, then each registered study's blocks in registry order (computerops/studies/registry.py: site
faults, security, serving, persistence; a study added later after them). Nothing here names a study.
"""

from __future__ import annotations

from computerops.report.markdown import OUTCOMES_ID
from computerops.report.outcomes import TAXONOMY, OutcomeTable, TaskRow, causes_text, kinds_text
from computerops.report.provenance import Provenance, context_text, tool_results_text, tools_text
from computerops.report.run import RunReport
from computerops.report.tables import (
    Block,
    Cell,
    ChartBar,
    Mark,
    OutcomeChart,
    Paragraph,
    ReportView,
    Table,
    columns,
    proportion_cells,
)
from computerops.report.vocabulary import FALSE_COMPLETION_KINDS, OUTCOMES
from computerops.runs.limits import TEXT_PROTOCOL_VERDICTS
from computerops.studies.registry import registered

SCRIPTED_FLAG = "SCRIPTED endpoint: deterministic policies, not a language model"
OUTCOME_CAPTION = (
    "verified = every check passed and the finish was the right one (a success claim; for an infeasible task an "
    "accepted refusal); self-reported = done(success=true); false compl. = a success claim the verifier rejected, "
    "split state / procedure-only / forbidden mutation; damaging = no success claim after a forbidden mutation; "
    "infra = episodes the endpoint or browser failed, outside attempted and every rate, to be run again")
"""How the outcome columns are defined, under every outcome table."""
KINDS_HEADER = "state/proc/forbid"
"""The false-completion kinds in one cell (`kinds_text`)."""


def report_view(report: RunReport) -> ReportView:
    """Every section of the report, in reading order (the module's docstring): the report's own, the loops, then the
    registered studies' blocks (`Study.report_blocks`), in registry order."""
    rows = report.rows()
    blocks: list[Block] = [
        _outcomes(report, rows), *_answered_by(report), *_instances(report), *_totals(report.total),
        _rates(report, rows), _taxonomy(rows),
        _kinds(rows),
        _chart(report.total.per_task),
        *(_per_task(number, row) for number, row in enumerate(report.by_endpoint, 1)),
        _usage(rows), *_evidence(report), *_provenance(report.provenance), *_rejections(report),
    ]
    if report.loops.episodes_with_stats:
        blocks.append(_loops(report))
    entries = report.studies or {}
    for study in registered():
        blocks += study.report_blocks({name: getattr(report, name) for name in study.report_fields},
                                      entries.get(study.name))
    return ReportView(title=f"ComputerOps run {report.run_id}", scripted=report.scripted, blocks=tuple(blocks))


def _label(row: OutcomeTable) -> Cell:
    return Mark(text=row.label) if row.label == "all" else row.label


def _outcomes(report: RunReport, rows: list[OutcomeTable]) -> Table:
    return Table(
        id=OUTCOMES_ID, title=f"Run {report.run_id}", flag=SCRIPTED_FLAG if report.scripted else None, wrap=False,
        columns=columns("endpoint", "attempted", "verified", "self-reported", "false compl.", KINDS_HEADER,
                        "claimed fail", "no finish", "damaging", "infra", "replay PASS"),
        rows=tuple((_label(r), r.attempted, r.verified_success, r.self_reported_success, r.false_completions,
                    kinds_text(r.false_completion_kinds), r.claimed_failure, r.no_finish, r.damaging_failures,
                    r.infrastructure_failures, f"{r.replay_pass}/{r.episodes}") for r in rows),
        caption=OUTCOME_CAPTION)


def _answered_by(report: RunReport) -> list[Table]:
    """The outcome table's rows per endpoint that answered, in a run with a pinned fallback."""
    if not report.by_upstream:
        return []
    return [Table(
        id="answered-by", title="Endpoints that answered",
        columns=columns("endpoint", "replies", "episodes", "attempted", "verified", "self-reported", "false compl.",
                        "infra"),
        rows=tuple((r.table.label, r.replies, r.table.episodes, r.table.attempted, r.table.verified_success,
                    r.table.self_reported_success, r.table.false_completions, r.table.infrastructure_failures)
                   for r in report.by_upstream),
        caption="A run with a pinned fallback: each endpoint with the replies it answered and the episodes it "
                "answered any reply of (an episode both answered is counted in both rows). The fallback is asked "
                "when the primary cannot be reached, and as a --serving protocol says (adapter/failover.py).")]


def _instances(report: RunReport) -> list[Paragraph]:
    found = report.instances
    if found is None:
        return []
    detail = (f"{found.published} published, {found.fresh} fresh" if found.kind == "published and fresh instances"
              else "seeds drawn at reservation, never published" if found.fresh
              else "the catalog's published seeds")
    return [Paragraph(text=f"Over {found.instances} {found.kind} of {found.templates} templates ({detail}).")]


def _totals(total: OutcomeTable) -> list[Paragraph]:
    said = []
    if total.infrastructure_failures:
        said.append(Paragraph(tone="warning", text=(
            "Infrastructure failures (outside attempted and every rate; `run --resume` runs them again): "
            f"{total.infrastructure_failures}, by cause: {causes_text(total.infrastructure_causes)}.")))
    if total.never_reached_the_model:
        said.append(Paragraph(tone="warning", text=(
            f"Never reached the model: {total.never_reached_the_model} episode(s) ended context_exhausted before any "
            "reply (the context cannot hold one observation); they say nothing about the model and are outside "
            "attempted and every rate.")))
    if total.tokens.no_usage:
        said.append(Paragraph(tone="warning", text=(
            f"Tokens unknown, {NO_USAGE}: none of the replies of {total.tokens.no_usage} episode(s) carried usage "
            "(prompt or completion tokens), so their tokens are unknown, not 0.")))
    if total.tool_results_switches:
        said.append(Paragraph(tone="warning", text=(
            f"Tool results not reaching the model: {total.tool_results_switches} episode(s) found from the server's "
            "prompt counts that the pages sent in tool messages did not reach the prompt, and sent them in user "
            "messages from then on (each transcript's `tool_results_switch` says from which step).")))
    said.append(Paragraph(text=(
        f"False completions: {total.false_completions}/{total.attempted} attempted episodes"
        f" and {total.false_completions}/{total.self_reported_success} success claims."
        f" Forbidden mutations: {total.forbidden_mutations} episode(s), {total.damaging_failures} of them"
        " without a success claim."
        + (f" Claimed success in plain text without done: {total.claimed_in_text} episode(s), "
           f"{total.text_false_completions} of them text false completions (the verifier says not done)."
           if total.claimed_in_text else "")
        + f" Rejected actions: {total.rejected_actions}. Requests blocked by containment: {total.blocked_requests}"
        f" in {total.episodes_with_blocked_requests} episode(s)."
        + (f" Writes the pages' own script made (no action of the model's): {total.page_writes} in "
           f"{total.episodes_with_page_writes} episode(s)." if total.page_writes else "")
        + f" Protocol switches mid-episode (native tool calls to the text protocol):"
        f" {sum(total.protocol_switches.values())}"
        + "".join(f"; {count} because {why}" for why, count in total.protocol_switches.items())
        + ". Stop reasons: " + ", ".join(f"{k} {v}" for k, v in total.stop_reasons.items()))))
    return said


def _rates(report: RunReport, rows: list[OutcomeTable]) -> Table:
    def cells(row: OutcomeTable) -> tuple[Cell, ...]:
        boot, pass_k = row.verified_success_bootstrap.interval, row.pass_hat_k
        return (_label(row), *proportion_cells(row.verified_success_rate),
                f"{boot.low:.4f}-{boot.high:.4f}" if boot else "n/a",
                " ".join(f"^{v.k} {v.value:.4f}" for v in pass_k.by_k) if pass_k else "n/a",
                *proportion_cells(row.false_completion_over_attempted),
                *proportion_cells(row.false_completion_over_success_claims))

    return Table(
        id="rates", title="Rates and 95% intervals",
        columns=columns("endpoint", "verified / attempted", "Wilson", "task bootstrap", "pass^k",
                        "false compl. / attempted", "Wilson", "false compl. / success claims", "Wilson"),
        rows=tuple(cells(r) for r in rows),
        caption=(f"Wilson score intervals over episodes; the task bootstrap resamples tasks "
                 f"({report.bootstrap_resamples} resamples, seed {report.bootstrap_seed}). "
                 "The first false-completion rate: how often an attempted episode ended in a rejected success claim; "
                 "the second: how often a success claim was rejected. n/a: no denominator; pass^k n/a: a task has "
                 "a single episode, or the row mixes endpoints."))


TEXT_CLAIM_CAPTION = (
    "claimed = done(success=true). claimed in text = of the not-claimed, episodes whose model wrote in a reply "
    "without an action that the task was done (\"The task is completed.\"), read fail-closed; never a success. "
    "text false compl. = of those, the verifier says the task was not done.")
"""Under the claim-against-verifier table: what its claims in text are."""


def _taxonomy(rows: list[OutcomeTable]) -> Table:
    return Table(id="taxonomy", title="Claim against verifier (infrastructure failures left out)",
                 columns=columns("endpoint", *TAXONOMY, "claimed in text", "text false compl."),
                 rows=tuple((_label(r), *(r.taxonomy[cell] for cell in TAXONOMY), r.claimed_in_text,
                             r.text_false_completions) for r in rows),
                 caption=TEXT_CLAIM_CAPTION)


def _kinds(rows: list[OutcomeTable]) -> Table:
    return Table(id="false-completion-kinds", title="False completions by kind",
                 columns=columns("endpoint", "false compl.", *(k.replace("_", " ") for k in FALSE_COMPLETION_KINDS)),
                 rows=tuple((_label(r), r.false_completions, *(r.false_completion_kinds[k]
                                                               for k in FALSE_COMPLETION_KINDS)) for r in rows))


def _outcome_counts(task: TaskRow) -> dict[str, int]:
    return {"verified_success": task.verified_success, "unclaimed_success": task.unclaimed_success,
            "false_completion": task.false_completions, "honest_failure": task.honest_failures,
            "damaging_failure": task.damaging_failures, "infrastructure_failure": task.infrastructure_failures}


def _chart(tasks: list[TaskRow]) -> OutcomeChart:
    return OutcomeChart(
        id="outcome-chart", title="Outcomes per task (all endpoints)", outcomes=OUTCOMES,
        bars=tuple(ChartBar(label=t.task_id, counts=tuple(_outcome_counts(t)[o] for o in OUTCOMES)) for t in tasks))


def _per_task(number: int, row: OutcomeTable) -> Table:
    return Table(
        id=f"per-task-{number}", title=f"Per task: {row.label}",
        columns=columns("task", "attempted", "verified", "self-reported", "false compl.", KINDS_HEADER, "no finish"),
        rows=tuple((t.task_id, t.attempted, t.verified_success, t.self_reported_success, t.false_completions,
                    kinds_text(t.false_completion_kinds), t.no_finish) for t in row.per_task))


def _usage(rows: list[OutcomeTable]) -> Table:
    return Table(
        id="usage", title="Tokens and latency per episode",
        columns=columns("endpoint", "tokens known", "tokens unknown", "mean tokens", "median tokens", "mean wall s",
                        "median wall s", "max wall s"),
        rows=tuple((_label(r), r.tokens.known, _unknown_tokens(r), r.tokens.mean, r.tokens.median, r.latency.mean_s,
                    r.latency.median_s, r.latency.max_s) for r in rows),
        caption=("Tokens = prompt + completion where the endpoint reported both; the rest are counted unknown, not "
                 f"guessed ('{NO_USAGE}': episodes none of whose replies carried usage). wall s: from creating the "
                 "tenant to the end of the browser session."))


NO_USAGE = "the server sends no usage"
"""Why an episode's tokens are unknown when none of its replies carried usage (llama.cpp's streamed replies)."""


def _unknown_tokens(row: OutcomeTable) -> Cell:
    """Episodes with unknown tokens, and how many of them because the server sent no usage at all."""
    if not row.tokens.no_usage:
        return row.tokens.unknown
    return f"{row.tokens.unknown} ({row.tokens.no_usage}: {NO_USAGE})"


def _evidence(report: RunReport) -> list[Paragraph]:
    said = [Paragraph(text=f"Evidence level {report.evidence_level}: {report.evidence_level_meaning}.")]
    if report.completeness is not None and not report.completeness.complete:
        said.append(Paragraph(tone="warning", text=(
            f"INCOMPLETE RUN: {report.completeness.describe()}. The figures cover only what was admitted; continue it "
            "with `computerops run --resume`.")))
    return said


def _value(value: object) -> str:
    return "unknown" if value is None else str(value)


def _provenance(provenance: Provenance) -> list[Paragraph]:
    claimed, observed = provenance.claimed, provenance.observed
    claimed_text = ("unknown" if claimed is None else
                    f"kind {claimed.kind}, base_url {_value(claimed.base_url)}, model {_value(claimed.model)}, "
                    f"artifact_sha256 {_value(claimed.artifact_sha256)}")
    ids, headers = observed.models_payload_ids, observed.server_headers
    said = [Paragraph(text=f"claimed: {claimed_text}")]
    if provenance.model_mismatch:
        said.append(Paragraph(tone="warning", text=f"MODEL MISMATCH: {provenance.model_mismatch}"))
    said.append(Paragraph(text=(
        f"observed: GET /models ids {_value(', '.join(ids) if ids is not None else None)}"
        + (f" (error: {observed.models_error})" if observed.models_error else "")
        + f"; models in replies {', '.join(observed.models_seen) or 'none'}"
        + f"; fingerprints {', '.join(observed.fingerprints_seen) or 'none'}"
        + f"; server headers {_value('; '.join(f'{k}: {v}' for k, v in sorted(headers.items())) if headers else None)}"
        + f"; in replies {'; '.join(observed.reply_headers_seen) or 'none'}"
        + f"; context {context_text(observed.context)}; tools {tools_text(observed.tools)}"
        + f"; tool results {tool_results_text(observed.tool_results)}")))
    results, tools = observed.tool_results, observed.tools
    if (results is not None and results.verdict == "not_checked"
            and (tools is None or tools.verdict not in TEXT_PROTOCOL_VERDICTS)):
        said.append(Paragraph(tone="warning", text=f"TOOL RESULTS NOT CHECKED: tool results "
                                                   f"{tool_results_text(results)}; whether the model saw each page "
                                                   "after a tool call is unknown"))
    if provenance.planned_from_server:
        said.append(Paragraph(text=f"planned from the server's word: {provenance.planned_from_server}"))
    return said


def _rejections(report: RunReport) -> list[Block]:
    causes = report.total.rejected_by_cause
    if not causes:
        return [Paragraph(text=f"Rejected actions by cause: none recorded ({report.total.rejected_actions} rejected).")]
    return [Table(id="rejections", title="Rejected actions by cause", columns=columns("cause", "rejected"),
                  rows=tuple(causes.items())),
            Paragraph(text="A rejection is not by itself unsafe, and an accepted action is not by itself progress.")]


def _loops(report: RunReport) -> Block:
    loops = report.loops
    if not loops.rows:
        return Paragraph(text=f"Recovery loops: none ({loops.episodes_with_stats} episodes with loop stats; detector "
                              f"{', '.join(loops.detectors)}).")
    return Table(
        id="loops", title="Recovery loops",
        columns=columns("episode", "configured faults", "actions", "state reads", "largest repeat", "loop", "stop",
                        "outcome", "detector"),
        rows=tuple((r.episode_id, (", ".join(r.faults_configured) or "none") + ("" if r.faults_enabled else
                                                                              " (disabled)"),
                    r.actions, r.state_reads, r.largest_repeat, Mark(text="yes", tone="alert") if r.loop else "no",
                    r.stop_reason, r.outcome, r.detector) for r in loops.rows),
        caption=(f"{loops.loop_episodes} loop episode(s) of {loops.episodes_with_stats} with loop stats"
                 + (f" ({loops.episodes_without_stats} records without)" if loops.episodes_without_stats else "")
                 + f"; detector {', '.join(loops.detectors)}. Largest repeat: equal write intents in the final "
                 "segment without a durable effect; rows: loop, or an intent repeated at least twice."))
