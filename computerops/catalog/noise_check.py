"""`computerops tasks check --noise KIND,...`: every selected instance's scripted control still verifies under each page
noise kind (docs/noise.md), and the plain control, which ignores the noise, fails where the noise stands in its way.

Per instance and kind, two scripted episodes on noisy pages (`PlannedEpisode.studies["page_noise"]`): `noise-aware`
(adapter/scripted/noise_aware.py), which must reach verified success, and `oracle`, the plain control. Where the noise
stood in the way of the named steps (`blocked`, read from the noise-aware episode's own turns), the plain control,
which takes the same steps up to there, must not verify; elsewhere whatever it does is reported, not required.
Every episode must replay PASS, and `verify` over the run's evidence must pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from adapter.scripted.fallible import Turn
from adapter.scripted.noise_aware import NAME as NOISE_AWARE
from adapter.scripted.noise_aware import Handled, progress
from adapter.transcript import AgentTranscript
from computerops.catalog.checking import control_config
from computerops.core.execution import Progress
from computerops.report.page_noise import NOISE_STUDY
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import PlannedEpisode
from computerops.runs.records import EpisodeRecord, verdict_category
from computerops.runs.runner import execute_run
from computerops.runs.verification import verify_run
from sites.kit.noise import NoiseKind
from tasks import LoadedTask, ScriptedStep

PLAIN = "oracle"
"""The negative: the scripted control that follows its steps by name and ignores the noise."""
WHOLE_PAGE: tuple[NoiseKind, ...] = ("interstitial", "session_timeout")
"""Kinds that stand over every control of their page (a modal over the whole viewport; a page served in place of
the one asked for): a control acted on after one was dismissed was out of a name-following control's reach. The
consent banner covers the bottom of the viewport only: whether it covered a control is the page's geometry."""
COVERED = "covered by"
"""How the adapter words a click refused because something lies over the control (adapter/page_functions.py)."""
_CONTROL_ACTIONS = frozenset({"click", "fill", "select", "check", "press", "hover", "drag"})


class NoiseControlResult(BaseModel):
    """One instance under one kind: the noise-aware control and the plain control judged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    kind: NoiseKind
    aware_outcome: str
    """The noise-aware control's verdict category (it must be verified_success)."""
    aware_replay: str
    handled: list[str]
    """What the noise made the noise-aware control do, turn by turn, in words."""
    blocked: bool
    """The noise stood in the way of the named steps: the plain control must not verify."""
    plain_outcome: str
    plain_ended: str
    """How the plain control's episode ended, in words (its claim, or its stop and first rejection)."""
    plain_replay: str

    @property
    def aware_ok(self) -> bool:
        return self.aware_outcome == "verified_success" and self.aware_replay == "PASS"

    @property
    def plain_failed(self) -> bool:
        return self.plain_outcome != "verified_success"

    @property
    def plain_ok(self) -> bool:
        return self.plain_replay == "PASS" and (self.plain_failed or not self.blocked)

    @property
    def ok(self) -> bool:
        return self.aware_ok and self.plain_ok


class NoiseCheckReport(BaseModel):
    """`tasks check --noise`: every instance under every kind, and `verify` over the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kinds: list[NoiseKind]
    results: list[NoiseControlResult]
    verified: bool
    verify_problems: list[str]

    @property
    def ok(self) -> bool:
        return self.verified and all(r.ok for r in self.results)


class NoiseKindSummary(BaseModel):
    """One kind over the instances checked: what the noise took and where the plain control failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: NoiseKind
    instances: int
    aware_verified: int
    handled: int
    """Instances where the noise-aware control did something about the noise."""
    blocked: int
    plain_failed: int
    plain_failed_blocked: int
    plain_covered: int = 0
    """Of the plain control's failures where it was not required to fail, those with a click refused as covered."""

    @property
    def reading(self) -> str:
        """The summary in words, honest about a kind that needed nothing."""
        if not self.handled and not self.plain_failed:
            return "needed no handling: the plain control verified every instance"
        said = (f"in the named steps' way on {self.blocked}, where the plain control failed on "
                f"{self.plain_failed_blocked}" if self.blocked else "never in the named steps' way")
        elsewhere = self.plain_failed - self.plain_failed_blocked
        covered = f", {self.plain_covered} of them with a click refused as covered" if self.plain_covered else ""
        return said + (f"; the plain control also failed on {elsewhere} where the noise-aware control's turns do not "
                       f"show the noise in the way{covered} (its rows say why)" if elsewhere else "")


def kind_summaries(report: NoiseCheckReport) -> list[NoiseKindSummary]:
    """Per kind, in the order given: never averaged across kinds."""
    summaries = []
    for kind in report.kinds:
        results = [r for r in report.results if r.kind == kind]
        summaries.append(NoiseKindSummary(
            kind=kind, instances=len(results), aware_verified=sum(r.aware_ok for r in results),
            handled=sum(bool(r.handled) for r in results), blocked=sum(r.blocked for r in results),
            plain_failed=sum(r.plain_failed for r in results),
            plain_failed_blocked=sum(r.plain_failed and r.blocked for r in results),
            plain_covered=sum(r.plain_failed and not r.blocked and COVERED in r.plain_ended for r in results)))
    return summaries


def noise_plan(tasks: Sequence[LoadedTask], kinds: Sequence[NoiseKind]) -> list[PlannedEpisode]:
    """Per task and kind, the noise-aware control then the plain one on noisy pages, ids
    `NNN-<task>--<policy>--noise-<kind>`."""
    plan: list[PlannedEpisode] = []
    for task in tasks:
        for kind in kinds:
            for policy in (NOISE_AWARE, PLAIN):
                plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task.id}--{policy}--noise-{kind}",
                                           task_id=task.id, policy=policy, studies={NOISE_STUDY: kind}))
    return plan


def turns_in(transcript: AgentTranscript) -> list[Turn]:
    """A transcript's answered actions as the scripted policies read them back from a conversation."""
    turns: list[Turn] = []
    for step in transcript.steps:
        action = step.action or {}
        name = action.get("action")
        if name == "done":
            continue
        arguments = {key: value for key, value in action.items() if key != "action"}
        turns.append(Turn(name if isinstance(name, str) else None, arguments, step.rejection is None, step.note,
                          step.observation))
    return turns


def blocked_by(kind: NoiseKind, control: Sequence[ScriptedStep], handled: Sequence[Handled]) -> bool:
    """Whether the noise stood in the way of the named steps, by what the noise-aware control had to do: reveal a
    control not yet offered (load more, a scroll, a timer), find one under another name, or act on a control of a
    page a whole-page kind (`WHOLE_PAGE`) stood over until dismissed. An answer given after one is not counted: the
    verifier's own `seen` check judges whether what it states was shown (on that page or an earlier one)."""
    for item in handled:
        if item.handling in ("loaded", "revealed", "renamed"):
            return True
        step = control[item.step] if item.step < len(control) else None
        if kind in WHOLE_PAGE and step is not None and step.action in _CONTROL_ACTIONS:
            return True
    return False


def described(item: Handled, control: Sequence[ScriptedStep]) -> str:
    step = control[item.step] if item.step < len(control) else None
    before = f"step {item.step + 1} ({step.id or step.action})" if step is not None else "the end"
    if item.handling == "renamed":
        return f"step {item.step + 1}: {step.name if step else ''!r} offered as {item.control!r}"
    return f"{item.handling} {item.control!r} before {before}"


def ended(record: EpisodeRecord, transcript: AgentTranscript | None) -> str:
    """How an episode ended, in words: its claim, or its stop reason, with the first rejection's reason."""
    claim = record.claim
    said = (f"claimed {'success' if claim.success else 'failure'}: {claim.message or ''}".strip()
            if record.stop_reason == "finish" else f"stopped: {record.stop_reason}")
    first = next((s.rejection.reason for s in (transcript.steps if transcript else []) if s.rejection), None)
    if record.rejected_actions:
        said += f"; {record.rejected_actions} rejected, first: {first}"
    return said


def _transcript(run: RunDirectory, record: EpisodeRecord) -> AgentTranscript:
    return AgentTranscript.model_validate_json(run.evidence_path(record.episode_id, "transcript.json").read_bytes())


def judge_noise(task: LoadedTask, kind: NoiseKind, aware: EpisodeRecord, aware_transcript: AgentTranscript,
                plain: EpisodeRecord, plain_transcript: AgentTranscript | None) -> NoiseControlResult:
    """One instance under one kind judged from its two episodes."""
    control = list(task.spec.scripted_control)
    handled = progress(control, turns_in(aware_transcript)).handled
    return NoiseControlResult(
        task_id=task.id, kind=kind,
        aware_outcome=verdict_category(aware.outcome, aware.false_completion_kind), aware_replay=aware.replay,
        handled=[described(item, control) for item in handled], blocked=blocked_by(kind, control, handled),
        plain_outcome=verdict_category(plain.outcome, plain.false_completion_kind),
        plain_ended=ended(plain, plain_transcript), plain_replay=plain.replay)


async def check_noise(tasks: list[LoadedTask], kinds: list[NoiseKind], out: Path, progress_line: Progress, *,
                      concurrency: int = 1) -> NoiseCheckReport:
    """Run both controls of every task under every kind, judge them, and verify the run's evidence."""
    plan = noise_plan(tasks, kinds)
    records = await execute_run(control_config("tasks-check-noise", tasks, plan), tasks, out, progress_line,
                                concurrency=concurrency)
    by_episode = {r.episode_id: r for r in records}
    run = RunDirectory(out)
    results = []
    pairs = iter(zip(plan[::2], plan[1::2], strict=True))  # noise_plan's order: task, kind, then the two policies
    for task in tasks:
        for kind in kinds:
            aware, plain = (by_episode[planned.episode_id] for planned in next(pairs))
            results.append(judge_noise(task, kind, aware, _transcript(run, aware), plain, _transcript(run, plain)))
    progress_line("verify: the run's evidence, every episode replayed")
    verification = await verify_run(RunDirectory.open(out))
    return NoiseCheckReport(kinds=kinds, results=results, verified=verification.passed,
                            verify_problems=list(verification.problems))
