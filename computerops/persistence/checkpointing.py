"""The checkpointer a long-running episode's loop reports to: it writes a checkpoint at the episode's start, every N
replies, right before each possibly effectful action and right after each action that committed an effect, with the
ledgers read from the site's authoritative records (the completed effects are those this harness saw commit, carried
from checkpoint to checkpoint)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from adapter.lines import text_line
from adapter.loop import LoopState, PendingStep
from adapter.prompts import compacted_message, model_summary
from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript, Step, SummaryCall
from computerops.core.vocabulary import idempotency_key
from computerops.persistence.arms import MODEL_SUMMARY, POSSIBLY_EFFECTFUL, CompactionPolicy
from computerops.persistence.checkpoint import (
    Checkpoint,
    Compaction,
    Constraints,
    Conversation,
    Ledgers,
    PendingAction,
    ResumeManifest,
    Trigger,
    WindowEntry,
    write_checkpoint,
)
from computerops.persistence.compaction import summary
from computerops.persistence.site_state import SiteState
from sites.kit.ledgers import CompletedEffect

Summarise = Callable[[LoopState], Awaitable[ModelCall | str]]
"""How a `model/1` compaction asks the model for its summary (`ModelLoop.summarise`): its reply, or why none came."""


def model_compaction(policy: CompactionPolicy, answer: ModelCall | str) -> Compaction:
    """A `model/1` compaction's record from the model's answer (its reply, or why none came): the summary is the
    reply's text, each line escaped as page text is (a line that would begin like the harness's `Observation:` or
    `Task:` does not pass for it), after `SUMMARY_MARK`. A reply that is a tool call or holds no text, or no reply,
    is a failed compaction: no summary, and why."""
    call = answer if isinstance(answer, ModelCall) else None
    failed = answer if isinstance(answer, str) else None
    text = (call.content or "").strip() if call is not None else ""
    if call is not None and call.tool_calls:
        failed = f"the reply was a tool call ({call.tool_calls[0].name or 'unnamed'}), not a summary"
    elif call is not None and not text:
        failed = "the reply held no text"
    written = "" if failed is not None else model_summary(policy, "\n".join(map(text_line, text.splitlines())))
    return Compaction(policy=policy, summary=written, call=call, failed=failed)


class Checkpointer:
    """Writes one episode process's checkpoints into `directory` (numbered on from `first_number`)."""

    def __init__(self, *, directory: Path, manifest: ResumeManifest, constraints: Constraints, site: SiteState,
                 page_url: Callable[[], str], process: int, every: int, key_prefix: str,
                 carried: list[CompletedEffect] | None = None, first_number: int = 1,
                 stop_after_first_effect: bool = False, resumed: bool = False,
                 recovered: int | None = None, compaction: CompactionPolicy | None = None,
                 key: bytes | None = None) -> None:
        self.directory = directory
        self.manifest = manifest
        self.constraints = constraints
        self.site = site
        self.page_url = page_url
        self.process = process
        self.every = every
        self.key_prefix = key_prefix
        self.carried: list[CompletedEffect] = list(carried or [])
        """The completed effects this harness knows of: seen to commit after an action, or found on recovery."""
        self.number = first_number
        self.stop_after_first_effect = stop_after_first_effect
        """The `restarted` arm's first process: killed (SIGKILL, by itself) once its first after-effect checkpoint
        is on disk."""
        self.written: list[Checkpoint] = []
        self.recovered = recovered
        """The action a resumed process recovered: what it committed is known only as its recovery found out (in
        `carried`), never read again here, so a recovery that forgets a commit is seen to forget it."""
        self.key = key
        """The episode's checkpoint key: every checkpoint is sealed with it (`Checkpoint.seal`)."""
        self.compaction = compaction
        """The `compacted` arm's policy: the older context is replaced by its summary right after the first effect."""
        self.summarise: Summarise | None = None
        """`model/1`'s way to ask the model (the episode's `ModelLoop.summarise`, set once the loop exists)."""
        self.resumed = resumed
        """A resumed process: its first step (the recovered action's answer) is followed by a `resume` checkpoint."""

    def ledgers(self) -> tuple[Ledgers, int]:
        """The four ledgers to write now, and the operation the site's were read as of."""
        found, as_of = self.site.ledgers()
        return Ledgers(constraints=self.constraints, approvals=found.approvals, completed_effects=list(self.carried),
                       unfinished_work=found.unfinished_work), as_of

    async def _compact(self, state: LoopState, at: Checkpoint, policy: CompactionPolicy) -> None:
        """Replace the older context with the policy's summary, once, and checkpoint the result: `ledgers/1` (and its
        mutants) write it from `at`'s ledgers; `model/1` asks the model (`_model_summary`), and where its reply is
        no summary the context stays as it was and the checkpoint's compaction record says why."""
        self.compaction = None
        record = (await self._model_summary(state, policy) if policy == MODEL_SUMMARY
                  else Compaction(policy=policy, summary=summary(policy, at.ledgers, state.transcript)))
        if record.failed is None:
            observation = state.transcript.steps[-1].observation or state.transcript.first_observation
            state.window.compact(compacted_message(state.transcript.instruction, record.summary, observation),
                                 observation)
        self.write(state, "compaction", compaction=record)

    async def _model_summary(self, state: LoopState, policy: CompactionPolicy) -> Compaction:
        """`model/1`: one extra request (the conversation, then `SUMMARY_REQUEST`) through the loop's own client and
        bounds (`ModelLoop.summarise`), its reply laid out by `model_compaction`. The call goes into the transcript
        (`summaries`: the episode's tokens count it; it is no step and takes nothing of the action budget) and into
        the compaction record."""
        record = model_compaction(policy, "no way to ask the model" if self.summarise is None
                                  else await self.summarise(state))
        after = state.transcript.steps[-1].number if state.transcript.steps else 0
        state.transcript.summaries.append(SummaryCall(after_step=after, call=record.call, failed=record.failed))
        return record

    def write(self, state: LoopState, trigger: Trigger, pending: PendingStep | None = None,
              compaction: Compaction | None = None) -> Checkpoint:
        window = state.window
        conversation = Conversation(
            transcript=AgentTranscript.model_validate(state.transcript.model_dump(mode="json")),
            entries=[WindowEntry.model_validate(entry) for entry in window.saved()],
            budget=window.budget, overhead=window.overhead, scale=window.scale, mode=state.mode,
            next_number=state.next_number, elapsed_s=round(time.monotonic() - state.started, 3),
            page_url=self.page_url())
        ledgers, as_of = self.ledgers()
        checkpoint = Checkpoint(
            run_id=self.manifest.run_id, episode_id=self.manifest.episode_id, number=self.number, trigger=trigger,
            process=self.process, manifest=self.manifest, manifest_sha256="", ledgers=ledgers, as_of_operation=as_of,
            conversation=conversation,
            pending=None if pending is None else PendingAction(
                number=pending.number, action=pending.action, call=pending.call, call_id=pending.call_id,
                echoed=pending.echoed, idempotency_key=idempotency_key(pending.number, self.key_prefix)),
            compaction=compaction)
        write_checkpoint(self.directory, checkpoint, self.key)
        self.number += 1
        self.written.append(checkpoint)
        return checkpoint

    async def started(self, state: LoopState) -> None:
        """At the episode's first observation, or (resumed) once the page was shown again."""
        self.write(state, "resume" if self.resumed else "start")
        self.resumed = False

    async def before_action(self, state: LoopState, pending: PendingStep) -> None:
        if pending.action.get("action") in POSSIBLY_EFFECTFUL:
            self.write(state, "before_effect", pending)

    async def after_action(self, state: LoopState, step: Step) -> None:
        seen = [] if step.number == self.recovered else self.site.effects_of_action(step.number)
        new = [effect for effect in seen if effect not in self.carried]
        self.carried.extend(new)
        if self.resumed:
            self.resumed = False
            self.write(state, "resume")
        elif new:
            written = self.write(state, "after_effect")
            if self.compaction is not None:
                await self._compact(state, written, self.compaction)
            if self.stop_after_first_effect:
                os.killpg(os.getpgid(0), signal.SIGKILL)  # the whole process group: this process, its browser
        elif step.number % self.every == 0:
            self.write(state, "every")
