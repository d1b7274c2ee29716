"""The agent's harness process of a long-running episode: `python -m computerops.persistence.agent LAUNCH.json`.

It runs the browser and the model loop of one episode against a tenant another process serves (the run's own
process, which holds the sites, the tenant and the evidence), writing checkpoints as it goes. Started without a
checkpoint it opens the start page; started with one it checks it (altered: refused; another manifest: refused naming
the difference), rebuilds the loop's state from it, finds out what became of the action the checkpoint was written
before (by its recovery policy), opens the page again and carries on. It writes its transcript when the episode
ends. It may be SIGKILLed at any moment; nothing it leaves half-written is ever read (checkpoints are renamed into
place, the transcript too).

Exit status: 0 the episode ended (the transcript says how), 3 the resume was refused (the refusal file says why).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Literal

import httpx
from playwright.async_api import async_playwright
from pydantic import BaseModel, ConfigDict

from adapter.actions import FinishSchema, Rejection
from adapter.browser import launch_browser
from adapter.containment import containment_of
from adapter.context import ContextWindow
from adapter.driver import PageDriver
from adapter.loop import LoopState, ModelLoop, PendingStep, RecoveredStep
from adapter.modelclient import model_client
from adapter.transcript import AgentTranscript, Bounds
from computerops.core.binding import TENANT_HEADER
from computerops.core.durable import write_durably
from computerops.core.formats import Versioned
from computerops.core.lifeline import hold_lifeline
from computerops.core.vocabulary import ACTION_HEADER, IDEMPOTENCY_HEADER, idempotency_key
from computerops.persistence.arms import CompactionPolicy, RecoveryPolicy
from computerops.persistence.checkpoint import (
    Checkpoint,
    CheckpointRefused,
    Constraints,
    ResumeManifest,
    manifest_refusal,
    read_checkpoint,
)
from computerops.persistence.checkpointing import Checkpointer
from computerops.persistence.site_state import SiteState
from computerops.runs.serving import tenant_context
from sites.kit.ledgers import CompletedEffect
from sites.registry import SITES

API_KEY_VARIABLE = "COMPUTEROPS_AGENT_API_KEY"
"""The environment variable through which the run hands its harness process the endpoint's key (never written)."""
CHECKPOINT_KEY_VARIABLE = "COMPUTEROPS_CHECKPOINT_KEY"
"""The environment variable through which the run hands its harness processes the episode's checkpoint key (hex; never
written): each seals its checkpoints with it and a resume refuses one whose seal does not match."""
REFUSED_EXIT = 3
AGENT_LAUNCH_FORMAT: Literal["computerops.agent_launch/1"] = "computerops.agent_launch/1"


class AgentLaunch(Versioned):
    """What one harness process is started with (written by the run into the episode's evidence directory)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.agent_launch/1"] = AGENT_LAUNCH_FORMAT
    manifest: ResumeManifest
    """The manifest this process runs under (a resume compares the checkpoint's with it)."""
    process: int
    origin: str
    token: str
    site: str
    tenant_db: str
    start_path: str
    instruction: str
    base_url: str
    bounds: Bounds
    budget: int | None
    finish: FinishSchema
    token_scale: float
    constraints: Constraints
    checkpoints: str
    """The directory the episode's checkpoints go in."""
    transcript_out: str
    refusal_out: str
    resume_from: str | None = None
    recovery: RecoveryPolicy = "reconcile"
    checkpoint_every: int = 5
    stop_after_first_effect: bool = False
    compaction: CompactionPolicy | None = None
    """The `compacted` arm's policy (None: no compaction)."""
    key_prefix: str = "action"
    """The prefix of this process's idempotency keys (`idempotency_key`)."""


class RecoveredStepData(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rejection: Rejection | None
    note: str


class Recovery(BaseModel):
    """What a resumed process found of its checkpoint's pending action, and where it reopened the page."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: RecoveredStepData | None
    page: str
    found: list[CompletedEffect]


def _same_origin_path(location: str | None, origin: str) -> str | None:
    """A redirect target the page may open (a path of the site, or a URL of its origin), else None."""
    if not location:
        return None
    if location.startswith(origin):
        location = location[len(origin):]
    return location if location.startswith("/") and not location.startswith("//") else None


async def recover(checkpoint: Checkpoint, policy: RecoveryPolicy, site: SiteState, launch: AgentLaunch) -> Recovery:
    """Find out, by `policy`, what became of the action `checkpoint` was written before; the page to open again."""
    page = checkpoint.conversation.page_url
    pending = checkpoint.pending
    if pending is None:
        return Recovery(step=None, page=page, found=[])
    lost = ("The harness restarted before this action's result arrived; it was not done. The page was opened "
            "again: do it again if it is still needed.")
    if policy == "forget":
        return Recovery(step=RecoveredStepData(rejection=Rejection(cause="interrupted", reason=lost), note=""),
                        page=page, found=[])
    sent = site.requests_of_action(pending.number)
    if policy == "reconcile":
        committed = [r for r in sent if r.idempotency_key == pending.idempotency_key and r.journal_rows > 0]
        if not committed:
            reason = ("The harness restarted before this action's result arrived, and the site holds nothing "
                      "committed under its idempotency key: it was not done. The page was opened again: do it again "
                      "if it is still needed.")
            return Recovery(step=RecoveredStepData(rejection=Rejection(cause="interrupted", reason=reason), note=""),
                            page=page, found=[])
        last = committed[-1]
        note = (f"done before the harness restarted: the site committed its request ({last.method} {last.path}, "
                f"status {last.status}) under the action's idempotency key, so it was not sent again")
        opened = _same_origin_path(last.location, launch.origin) if 300 <= last.status < 400 else None
        return Recovery(step=RecoveredStepData(rejection=None, note=note), page=opened or page,
                        found=site.effects_of_action(pending.number))
    # retry-same-key / retry-new-key: send the action's requests again, as the site logged them.
    if not sent:
        return Recovery(step=RecoveredStepData(rejection=Rejection(cause="interrupted", reason=lost), note=""),
                        page=page, found=[])
    key = pending.idempotency_key if policy == "retry-same-key" else f"{pending.idempotency_key}.retry"
    target: str | None = None
    statuses = []
    async with httpx.AsyncClient(base_url=launch.origin, timeout=30.0) as client:
        for request in sent:
            headers = {TENANT_HEADER: launch.token, ACTION_HEADER: str(pending.number), IDEMPOTENCY_HEADER: key}
            if request.content_type:
                headers["content-type"] = request.content_type
            url = request.path + (f"?{request.query}" if request.query else "")
            response = await client.request(request.method, url, content=request.body.encode("utf-8"),
                                            headers=headers)
            statuses.append(response.status_code)
            if response.is_redirect:
                target = _same_origin_path(response.headers.get("location"), launch.origin) or target
    note = (f"sent again after the harness restarted, under {'the same' if key == pending.idempotency_key else 'a new'}"
            f" idempotency key (status {', '.join(map(str, statuses))})")
    return Recovery(step=RecoveredStepData(rejection=None, note=note), page=target or page,
                    found=site.effects_of_action(pending.number))


def restored_state(checkpoint: Checkpoint) -> LoopState:
    """The loop's state as the checkpoint holds it, its wall clock set back by the time already used."""
    conversation = checkpoint.conversation
    window = ContextWindow.restored([entry.model_dump() for entry in conversation.entries],
                                    budget=conversation.budget, overhead=conversation.overhead,
                                    scale=conversation.scale)
    transcript = AgentTranscript.model_validate(conversation.transcript.model_dump(mode="json"))
    return LoopState(transcript=transcript, window=window, mode=conversation.mode,
                     next_number=conversation.next_number, started=time.monotonic() - conversation.elapsed_s)


def checkpoint_key() -> bytes | None:
    """The episode's checkpoint key from the environment (None when the run gave none)."""
    given = os.environ.get(CHECKPOINT_KEY_VARIABLE)
    return bytes.fromhex(given) if given else None


async def run_agent(launch: AgentLaunch) -> int:
    """Run (or resume) the episode; the exit status."""
    checkpoint: Checkpoint | None = None
    key = checkpoint_key()
    if launch.resume_from is not None:
        try:
            checkpoint = read_checkpoint(Path(launch.resume_from), key)
            refusal = manifest_refusal(checkpoint, launch.manifest)
            if refusal is not None:
                raise CheckpointRefused(refusal)
        except CheckpointRefused as refused:
            write_durably(Path(launch.refusal_out), str(refused))
            return REFUSED_EXIT
    site = SiteState(Path(launch.tenant_db), SITES[launch.site])
    prefix = f"/{launch.site}/"
    async with async_playwright() as playwright:
        browser = await launch_browser(playwright)
        context = await tenant_context(browser, launch.origin, launch.token, site_prefix=prefix)
        page = await context.new_page()
        driver = PageDriver(page, origin=launch.origin, site_prefix=prefix, max_chars=launch.bounds.observation_chars,
                            idempotency_prefix=launch.key_prefix)
        client = model_client(launch.base_url, os.environ.get(API_KEY_VARIABLE, "not-needed"), max_retries=2,
                              timeout=launch.bounds.request_timeout_s)
        recovered: RecoveredStep | None = None
        carried: list[CompletedEffect] = []
        number = 1
        if checkpoint is None:
            path, opened_by = launch.start_path, 0
        else:
            recovery = await recover(checkpoint, launch.recovery, site, launch)
            carried = [*checkpoint.ledgers.completed_effects,
                       *(e for e in recovery.found if e not in checkpoint.ledgers.completed_effects)]
            number = checkpoint.number + 1
            path = recovery.page
            pending = checkpoint.pending
            opened_by = checkpoint.conversation.next_number - (0 if pending is not None else 1)
            if pending is not None and recovery.step is not None:
                recovered = RecoveredStep(
                    pending=PendingStep(number=pending.number, action=pending.action, call=pending.call,
                                        call_id=pending.call_id, echoed=pending.echoed),
                    rejection=recovery.step.rejection, note=recovery.step.note)
        checkpointer = Checkpointer(
            directory=Path(launch.checkpoints), manifest=launch.manifest, constraints=launch.constraints, site=site,
            page_url=lambda: page.url.removeprefix(launch.origin), process=launch.process,
            every=launch.checkpoint_every, key_prefix=launch.key_prefix, carried=carried, first_number=number,
            stop_after_first_effect=launch.stop_after_first_effect, resumed=checkpoint is not None,
            recovered=None if recovered is None else recovered.pending.number,
            compaction=launch.compaction if checkpoint is None else None, key=key)
        loop = ModelLoop(client, launch.manifest.model, launch.bounds, budget=launch.budget, finish=launch.finish,
                         token_scale=launch.token_scale, checkpoints=checkpointer)
        checkpointer.summarise = loop.summarise
        await context.set_extra_http_headers({ACTION_HEADER: str(opened_by),
                                              IDEMPOTENCY_HEADER: idempotency_key(opened_by, launch.key_prefix)})
        await page.goto(launch.origin + path, wait_until="domcontentloaded")
        await driver.settle()
        if checkpoint is None:
            transcript = await loop.run(driver, launch.instruction)
        else:
            transcript = await loop.resume(driver, restored_state(checkpoint), recovered)
        guard = containment_of(context)
        transcript.blocked_requests = [*transcript.blocked_requests, *(guard.records if guard is not None else [])]
        await client.close()
        await context.close()
        await browser.close()
    site.close()
    write_durably(Path(launch.transcript_out), transcript.model_dump_json())
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m computerops.persistence.agent LAUNCH.json", file=sys.stderr)
        return 2
    hold_lifeline()  # the run that started this harness ended (a SIGKILL): so does the harness, browser and all
    launch = AgentLaunch.model_validate_json(Path(args[0]).read_text(encoding="utf-8"))
    return asyncio.run(run_agent(launch))


if __name__ == "__main__":
    sys.exit(main())
