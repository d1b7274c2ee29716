"""The report of a run, recomputed from its episode records (and, for provenance, its manifest).

Every figure names its numerator and denominator; a rate with a zero denominator is None, never 0 or NaN.
Intervals are 95%: Wilson score intervals over episodes, and a bootstrap that resamples tasks (episodes of one
task are not independent). Unknown values (tokens an endpoint did not report, provenance nobody recorded) stay
None and are counted apart; nothing is guessed.

One concern a module: `vocabulary` (the words counted by, in report order), `figures` (proportions, intervals,
pass^k), `outcomes` (outcome tables), `faults` (exposure, recovery funnel, loops), `provenance` (claimed against
observed), `run` (`RunReport` and its JSON), `tables` + `layout` (the report laid out once as typed tables, which
`computerops.cli.console` and `computerops.report.html` render). This facade re-exports what the rest of ComputerOps
uses.
"""

from computerops.report.faults import (
    DIAGNOSIS_PATTERNS,
    Exposure,
    FaultContextFalseCompletion,
    FaultExposureRow,
    LoopRow,
    LoopTable,
    RecoveryFunnel,
    RecoveryFunnelRow,
    exposure,
    false_completions_with_fault_context,
    loop_table,
    names_fault,
    recovery_funnel,
)
from computerops.report.figures import (
    BOOTSTRAP_METHOD,
    DEFAULT_BOOTSTRAP_RESAMPLES,
    DEFAULT_BOOTSTRAP_SEED,
    BootstrapInterval,
    Interval,
    PassHatK,
    PassHatKValue,
    Proportion,
)
from computerops.report.layout import report_view
from computerops.report.markdown import outcomes_markdown, table_markdown
from computerops.report.outcomes import (
    TAXONOMY,
    LatencyStats,
    OutcomeTable,
    TaskRow,
    TokenStats,
    attempted_by_the_agent,
    causes_text,
    infrastructure_causes,
    kinds_text,
    outcome_table,
)
from computerops.report.provenance import (
    ClaimedEndpoint,
    ObservedEndpointSummary,
    Provenance,
    context_text,
    model_mismatch,
    tools_text,
)
from computerops.report.run import (
    EVIDENCE_LEVELS,
    REPORT_FORMAT,
    EvidenceLevel,
    RunReport,
    report_json,
    report_json_as,
    run_report,
    summarize,
)
from computerops.report.tables import Cell, Column, Mark, OutcomeChart, Paragraph, ReportView, Table, cell_text
from computerops.report.vocabulary import FALSE_COMPLETION_KINDS, FAULT_CLASSES, OUTCOMES, STOP_REASONS

__all__ = [
    "BOOTSTRAP_METHOD",
    "DEFAULT_BOOTSTRAP_RESAMPLES",
    "DEFAULT_BOOTSTRAP_SEED",
    "DIAGNOSIS_PATTERNS",
    "EVIDENCE_LEVELS",
    "FALSE_COMPLETION_KINDS",
    "FAULT_CLASSES",
    "OUTCOMES",
    "REPORT_FORMAT",
    "STOP_REASONS",
    "TAXONOMY",
    "BootstrapInterval",
    "Cell",
    "ClaimedEndpoint",
    "Column",
    "EvidenceLevel",
    "Exposure",
    "FaultContextFalseCompletion",
    "FaultExposureRow",
    "Interval",
    "LatencyStats",
    "LoopRow",
    "LoopTable",
    "Mark",
    "ObservedEndpointSummary",
    "OutcomeChart",
    "OutcomeTable",
    "Paragraph",
    "PassHatK",
    "PassHatKValue",
    "Proportion",
    "Provenance",
    "RecoveryFunnel",
    "RecoveryFunnelRow",
    "ReportView",
    "RunReport",
    "Table",
    "TaskRow",
    "TokenStats",
    "attempted_by_the_agent",
    "causes_text",
    "cell_text",
    "context_text",
    "exposure",
    "false_completions_with_fault_context",
    "infrastructure_causes",
    "kinds_text",
    "loop_table",
    "model_mismatch",
    "names_fault",
    "outcome_table",
    "outcomes_markdown",
    "recovery_funnel",
    "report_json",
    "report_json_as",
    "report_view",
    "run_report",
    "summarize",
    "table_markdown",
    "tools_text",
]
