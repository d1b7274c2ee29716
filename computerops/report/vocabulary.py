"""The words a report counts by, in the order reports show them. Each is defined once elsewhere; this module only
orders them: the fault classes (`sites.kit.faults`), the stop reasons (`computerops.core.vocabulary`), the
false-completion kinds (`verifier`) and an episode's outcomes (`computerops.runs.records.EpisodeOutcome`)."""

from __future__ import annotations

from typing import get_args

from computerops.core.vocabulary import STOP_REASONS
from computerops.runs.records import EpisodeOutcome
from sites.kit.faults import FAULT_CLASSES
from verifier import FalseCompletionKind

__all__ = ["FALSE_COMPLETION_KINDS", "FAULT_CLASSES", "OUTCOMES", "STOP_REASONS"]

FALSE_COMPLETION_KINDS: tuple[FalseCompletionKind, ...] = get_args(FalseCompletionKind)
"""state, procedure only, forbidden mutation: the definition's order is the report's."""
OUTCOMES: tuple[EpisodeOutcome, ...] = (
    "verified_success", "unclaimed_success", "false_completion", "honest_failure", "damaging_failure",
    "infrastructure_failure",
)
"""Every outcome an episode can have (`EpisodeOutcome`: the verifier's `Outcome` and `infrastructure_failure`), in
the order reports show them: passes first, then failures of the agent, then the endpoint's or browser's. The
definitions list them in another order; tests/test_report_tables.py checks this is a permutation of them."""
