"""Pure verifiers: (final state, journal, operations, claim) -> `Verdict`."""

from verifier.judge import classify, judge, rejudge, run_checks
from verifier.verdict import VERIFIER_VERSION, CheckResult, Claim, FalseCompletionKind, Outcome, Verdict

__all__ = [
    "VERIFIER_VERSION",
    "CheckResult",
    "Claim",
    "FalseCompletionKind",
    "Outcome",
    "Verdict",
    "classify",
    "judge",
    "rejudge",
    "run_checks",
]
