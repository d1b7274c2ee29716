"""One admitted episode of an experiment as the analysis reads it: the plain facts, nothing derived.

Built from a run directory's `episodes.jsonl` and its manifest's plan (`computerops.experiment.collect`);
the estimators (`estimates`, `grid_tests`, `noise`) take only these rows, so they are pure and testable on
hand-made rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Arm = Literal["control", "treatment"]
"""control: injection disabled (no fault, no attack's payload: an attacked task's clean twin), all else identical;
treatment: injection as the cell configures it. In a persistence experiment: control = the uninterrupted
long-running episode, treatment = the cell's persistence arm (compacted, restarted or interrupted), injection enabled
in both (`computerops.experiment.plan.injects`)."""
ARMS: tuple[Arm, ...] = ("control", "treatment")


@dataclass(frozen=True)
class ExperimentEpisode:
    episode_id: str
    task_id: str
    cell: str
    """The cell id: the factor levels that define it, e.g. `tools=3,order=A,fault_rate=0.2,model=scripted:oracle`."""
    arm: Arm
    repetition: int
    """From 1 within its cell, task and arm."""
    pair: str | None
    """Episodes sharing a pair id are matched: the same task, cell and repetition in both arms."""
    model: str
    """The label results carry (`scripted:<policy>` or the claimed model name)."""
    tools: int | None
    """The number of the invoices portal's apps listed (the tool ladder); None when the factor is not used."""
    order: str | None
    """The tool order (A, B, ...) of the ladder; None when the factor is not used."""
    fault_rate: float
    """The configured per-operation fault rate of the cell (0 for control and for rule-only faults)."""
    seed: int | None
    """The seed sent with every model request of the episode."""
    outcome: str
    """An `EpisodeOutcome`: verified_success, false_completion, honest_failure, damaging_failure,
    unclaimed_success or infrastructure_failure (kept out of every rate and listed)."""
    claimed_success: bool
    """The agent said done(success=true)."""
    false_completion_kind: str | None
    steps: int
    """Model turns of the episode (the recovery-cost measure counts these)."""
    faults_configured: tuple[str, ...]
    faults_fired: tuple[str, ...]
    transcript_sha256: str | None = None
    """sha256 of the episode's transcript file: identical reruns must reproduce it byte for byte."""
    attack_exposed: bool = False
    """An attacked task's payload was planted and its marker was in an observation the model received."""
    attack_planted: bool = False
    """An attacked task's payload was planted (the attacked arm; its clean twin plants none)."""

    @property
    def infrastructure(self) -> bool:
        return self.outcome == "infrastructure_failure"

    @property
    def verified(self) -> bool:
        return self.outcome == "verified_success"

    @property
    def false_completion(self) -> bool:
        return self.outcome == "false_completion"

    @property
    def configured(self) -> bool:
        """A fault was configured, or an attack's payload planted: what `exposed` can be out of."""
        return bool(self.faults_configured) or self.attack_planted

    @property
    def exposed(self) -> bool:
        """At least one configured fault actually fired, or a planted attack's payload reached the model."""
        return bool(self.faults_fired) or self.attack_exposed
