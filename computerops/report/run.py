"""The report of a run: its outcome tables (the total and one per endpoint), evidence level, provenance and loops,
each registered study's figures (computerops/studies/registry.py; `run_report` names no study), and its JSON form
(`computerops report --json`, and `summary.json` when a run seals itself)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, Field, JsonValue

from adapter.failover import UPSTREAMS, Upstream
from computerops.core.formats import Versioned
from computerops.report.faults import Exposure, FaultContextFalseCompletion, LoopTable, RecoveryFunnel, loop_table
from computerops.report.figures import DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_BOOTSTRAP_SEED, FROZEN
from computerops.report.instances import InstancesJudged, instances_judged
from computerops.report.outcomes import OutcomeTable, outcome_table
from computerops.report.persistence import PersistenceReport
from computerops.report.provenance import Provenance, provenance
from computerops.report.security import SecurityReport
from computerops.report.serving import ServingReport
from computerops.runs.records import Completeness, EpisodeRecord, RunManifest
from computerops.studies.base import Study
from computerops.studies.registry import registered
from computerops.studies.rules import RUN_REPORT_FIELDS, study_parts

REPORT_FORMAT: Final = "computerops.report/3"
"""3 (since issue 26 also `security`, only in reports of runs with attacked tasks): every outcome table (and task
row) counts the episodes that never reached the model apart
(`never_reached_the_model`, outside attempted and every rate, like infrastructure failures) and the protocol switches
(`protocol_switches`). 2: each figure once (the total's keys only under `total`; rates only in their
proportions). Format 1, written without a `format` field, also had the total's `rejected_by_cause` at the top
and each outcome table's `false_completion_rate_over_attempted` and `false_completion_rate_over_success_claims`;
`report --json` printed the total's keys at the top level besides."""

EvidenceLevel = Literal["E1", "E2"]
EVIDENCE_LEVELS: dict[str, str] = {
    "E1": "observed executions with raw provenance, without a fresh-generation reproducibility claim",
    "E2": "E1, plus `computerops verify` passed: recorded-action replay and raw-to-aggregate re-derivation",
}


class UpstreamRow(BaseModel):
    """The episodes one endpoint of a run with a pinned fallback answered (`EpisodeRecord.replies_by_upstream`):
    the primary, the fallback, each with the replies it answered. An episode both answered is in both rows."""

    model_config = FROZEN

    upstream: Upstream
    endpoint: str
    """The model it was asked for (the fallback's `FallbackEndpoint.label`)."""
    replies: int
    """Model replies it answered, over the run."""
    table: OutcomeTable
    """The outcomes of the episodes it answered at least one reply of."""


def upstream_rows(records: list[EpisodeRecord], fallback: str | None, *, bootstrap_seed: int,
                  bootstrap_resamples: int) -> list[UpstreamRow]:
    """One row per endpoint that answered a reply, in a run with a pinned fallback (`fallback`: its label, when
    known); none for a run without one."""
    split = [r for r in records if r.replies_by_upstream is not None]
    rows = []
    for upstream in UPSTREAMS:
        answered = [r for r in split if (r.replies_by_upstream or {}).get(upstream)]
        if not answered:
            continue
        primary = ", ".join(sorted({r.endpoint for r in answered}))
        label = (fallback or "fallback") if upstream == "fallback" else primary
        rows.append(UpstreamRow(
            upstream=upstream, endpoint=label, replies=sum((r.replies_by_upstream or {})[upstream] for r in answered),
            table=outcome_table(f"{upstream}: {label}", answered, bootstrap_seed=bootstrap_seed,
                                bootstrap_resamples=bootstrap_resamples, with_pass_hat_k=False)))
    return rows


class RunReport(Versioned):
    """The report of one run: the total and one row per endpoint label (scripted policy or model)."""

    model_config = FROZEN
    format: Literal["computerops.report/3"] = REPORT_FORMAT

    run_id: str
    scripted: bool
    total: OutcomeTable
    by_endpoint: list[OutcomeTable]
    by_upstream: list[UpstreamRow] = Field(default_factory=list, exclude_if=lambda value: not value)
    """In a run with a pinned fallback: one row per endpoint that answered (`UpstreamRow`); left out otherwise."""
    evidence_level: EvidenceLevel = "E1"
    evidence_level_meaning: str = EVIDENCE_LEVELS["E1"]
    completeness: Completeness | None = None
    """Planned against admitted (None when the report was made without the run directory)."""
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES
    provenance: Provenance
    exposure: Exposure
    recovery_funnel: RecoveryFunnel
    loops: LoopTable
    false_completions_with_fault_context: list[FaultContextFalseCompletion]
    """False completions of episodes where a fault fired, in episode id order."""
    security: SecurityReport | None = Field(default=None, exclude_if=lambda value: value is None)
    """The attacked tasks' figures (`computerops.report.security`); left out of reports of runs without them."""
    persistence: PersistenceReport | None = Field(default=None, exclude_if=lambda value: value is None)
    """The long-running episodes' figures by arm (`computerops.report.persistence`); left out of reports of runs
    without them."""
    instances: InstancesJudged | None = Field(default=None, exclude_if=lambda value: value is None)
    """How many templates and instances the figures are over, published or fresh (`computerops.report.instances`;
    left out of reports of runs made before instance ids)."""
    serving: ServingReport | None = Field(default=None, exclude_if=lambda value: value is None)
    """The serving study's figures by arm and path (`computerops.report.serving`); left out of reports of runs
    without serving episodes."""
    studies: dict[str, JsonValue] | None = Field(default=None, exclude_if=lambda value: not value)
    """The figures of each registered study that keeps no field of its own here (`Study.report`), under its name;
    left out of reports of runs without any (so every report made before the map stays byte for byte the same)."""

    def rows(self) -> list[OutcomeTable]:
        """The rows every view shows: one per endpoint label, plus the total when there are several."""
        return [*self.by_endpoint, self.total] if len(self.by_endpoint) > 1 else self.by_endpoint or [self.total]


def run_report(
    run_id: str, records: list[EpisodeRecord], *, declared_scripted: bool, manifest: RunManifest | None = None,
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED, bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    verified_by_reviewer: bool = False, completeness: Completeness | None = None,
) -> RunReport:
    """The report of a run. It is scripted when the manifest declares it or any episode's replies came
    from the scripted endpoint (e.g. `computerops mock-llm` reached through --base-url).

    The evidence level is E1 (observed, with raw provenance) unless `verified_by_reviewer` says that
    `computerops verify` passed on this run directory (E2). Without `manifest` the claimed provenance and the
    endpoint's own answers are unknown (None); what the replies said is still taken from the records.
    """
    labels = sorted({r.endpoint for r in records})
    total = outcome_table("all", records, bootstrap_seed=bootstrap_seed, bootstrap_resamples=bootstrap_resamples,
                          with_pass_hat_k=len(labels) <= 1)
    complete = completeness is None or completeness.complete
    level: EvidenceLevel = "E2" if verified_by_reviewer and complete else "E1"
    return RunReport(
        run_id=run_id, scripted=declared_scripted or total.scripted, total=total,
        by_endpoint=[outcome_table(label, [r for r in records if r.endpoint == label], bootstrap_seed=bootstrap_seed,
                                   bootstrap_resamples=bootstrap_resamples) for label in labels],
        evidence_level=level, evidence_level_meaning=EVIDENCE_LEVELS[level], completeness=completeness,
        bootstrap_seed=bootstrap_seed, bootstrap_resamples=bootstrap_resamples,
        provenance=provenance(records, manifest), loops=loop_table(records), instances=instances_judged(records),
        by_upstream=upstream_rows(records, _fallback_label(manifest), bootstrap_seed=bootstrap_seed,
                                  bootstrap_resamples=bootstrap_resamples),
        **study_figures(records, registered()),
    )


def study_figures(records: list[EpisodeRecord], studies: tuple[Study, ...]) -> dict[str, Any]:
    """Each registered study's part of the report: the `RunReport` fields it fills (`report_fields`), and the
    `studies` entries of the others (each under its study's name, where it gives one); ValueError, naming the study,
    where one fills a field that is not its own (computerops/studies/rules.py `study_parts`)."""
    filled, entries = study_parts(studies, "report", lambda study: study.report_fields,
                                  lambda study: study.report_figures(records), lambda study: study.report(records),
                                  RUN_REPORT_FIELDS)
    return {**filled, "studies": entries or None}


def _fallback_label(manifest: RunManifest | None) -> str | None:
    fallback = None if manifest is None else manifest.config.endpoint.fallback
    return None if fallback is None else fallback.label


def summarize(manifest: RunManifest, records: list[EpisodeRecord]) -> RunReport:
    """The report of a run directory's manifest and records with the default bootstrap settings, at E1: the
    summary a run seals beside its evidence, which `computerops verify` recomputes from the records."""
    return run_report(manifest.config.run_id, records, declared_scripted=manifest.scripted, manifest=manifest)


def report_json(report: RunReport) -> dict[str, Any]:
    """The report as JSON data (`report --json`, and summary.json): the whole model, its format first."""
    return report.model_dump(mode="json")


NEW_IN_3 = ("never_reached_the_model", "protocol_switches")
"""The keys format 3 added to every outcome table and task row (`never_reached_the_model` only to task rows); it
also added the tool results probe to the observed provenance (`provenance.observed.tool_results`)."""


def _as_format_2(data: dict[str, Any]) -> dict[str, Any]:
    """Format 3's JSON without what format 3 added: a run sealed in format 2 compares in its own shape (its
    figures then differ only where it had episodes that never reached the model)."""
    data["format"] = "computerops.report/2"
    data["provenance"]["observed"].pop("tool_results", None)
    for table in (data["total"], *data["by_endpoint"]):
        for key in NEW_IN_3:
            table.pop(key, None)
        for row in table["per_task"]:
            row.pop("never_reached_the_model", None)
    return data


def report_json_as(report: RunReport, stored: object) -> dict[str, Any]:
    """The report's JSON in the format `stored` (a summary.json read back) was written in, so the two compare
    exactly: format 1 when it names no format (a run sealed before the report carried one), format 2 when it names
    that, else the current format (so a format that is none of these is the first difference)."""
    data = report_json(report)
    if not isinstance(stored, dict) or stored.get("format") not in (None, "computerops.report/2"):
        return data
    data = _as_format_2(data)
    if "format" in stored:
        return data
    del data["format"]
    data["rejected_by_cause"] = data["total"]["rejected_by_cause"]
    for table in (data["total"], *data["by_endpoint"]):
        table["false_completion_rate_over_attempted"] = table["false_completion_over_attempted"]["rate"]
        table["false_completion_rate_over_success_claims"] = table["false_completion_over_success_claims"]["rate"]
    return data
