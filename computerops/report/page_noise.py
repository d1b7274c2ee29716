"""The page-noise study's figures (docs/noise.md): success, false completion and steps by noise arm, each arm's own
row beside the clean control, never averaged across kinds; exposure as pages fired and pages the agent saw."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from computerops.report.figures import Proportion, proportion
from computerops.report.tables import Block, Table, columns
from computerops.runs.records import EpisodeRecord

NOISE_STUDY = "page_noise"
ANSWERED = "episodes not ended by the infrastructure"


class NoiseEntry(BaseModel):
    """An episode's entry under `noise` in its record's `studies` map."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str
    pair: str
    """The task instance and repetition (and policy) the episode is one arm of: its twins share it."""
    pages: int
    fired: list[int]
    """The ordinals of the pages the noise fired on."""
    seen: list[int]
    """Of those, the pages whose noise an observation of the agent showed."""


class NoiseArmRow(BaseModel):
    """One arm's episodes over the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str
    episodes: int
    verified_success: Proportion
    false_completion: Proportion
    mean_steps: float | None
    pages: int
    pages_fired: int
    pages_seen: int
    paired_success_change: int | None
    """Over the episodes paired with a clean one (same task instance and repetition): successes here minus successes
    in their clean twins; None for the clean arm, or without a pair."""


class NoiseReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    arms: list[NoiseArmRow]


def entry_of(record: EpisodeRecord) -> NoiseEntry | None:
    raw = (record.studies or {}).get(NOISE_STUDY)
    return None if raw is None else NoiseEntry.model_validate(raw)


def noise_report(records: Sequence[EpisodeRecord]) -> NoiseReport | None:
    """The arms' rows, the clean control first and the kinds in the order they first appear; None without a noise
    episode."""
    entries = [(record, entry) for record in records if (entry := entry_of(record)) is not None]
    if not entries:
        return None
    arms = sorted({entry.arm for _, entry in entries}, key=lambda arm: (arm != "clean",
                                                                     [e.arm for _, e in entries].index(arm)))
    clean = {entry.pair: record for record, entry in entries if entry.arm == "clean"}
    rows: list[NoiseArmRow] = []
    for arm in arms:
        mine = [(record, entry) for record, entry in entries if entry.arm == arm]
        answered = [record for record, _ in mine if record.outcome != "infrastructure_failure"]
        twins = [(record, clean[entry.pair]) for record, entry in mine if entry.pair in clean]
        change = (sum(_success(r) for r, _ in twins) - sum(_success(c) for _, c in twins)
                  if arm != "clean" and twins else None)
        rows.append(NoiseArmRow(
            arm=arm, episodes=len(mine),
            verified_success=proportion(sum(_success(r) for r in answered), len(answered), ANSWERED),
            false_completion=proportion(sum(r.outcome == "false_completion" for r in answered), len(answered),
                                        ANSWERED),
            mean_steps=round(sum(r.steps for r in answered) / len(answered), 2) if answered else None,
            pages=sum(entry.pages for _, entry in mine), pages_fired=sum(len(entry.fired) for _, entry in mine),
            pages_seen=sum(len(entry.seen) for _, entry in mine), paired_success_change=change))
    return NoiseReport(arms=rows)


def _success(record: EpisodeRecord) -> int:
    return int(record.outcome == "verified_success")


def noise_blocks(report: NoiseReport) -> list[Block]:
    rows = tuple((row.arm, row.episodes, f"{row.verified_success.numerator}/{row.verified_success.denominator}",
                  f"{row.false_completion.numerator}/{row.false_completion.denominator}", row.mean_steps,
                  row.pages, row.pages_fired, row.pages_seen,
                  "" if row.paired_success_change is None else f"{row.paired_success_change:+d}")
                 for row in report.arms)
    return [Table(id="page-noise", title="Page noise by arm",
                  columns=columns("arm", "episodes", "verified", "false completion", "mean steps", "pages",
                                  "pages fired", "pages seen", "paired Δ verified"),
                  rows=rows,
                  caption="Each noise kind is its own arm beside the clean control (never averaged across kinds); "
                          "paired Δ: verified successes minus those of the clean twins (same task instance and "
                          "repetition). Pages seen: pages whose noise an observation showed the agent.")]
