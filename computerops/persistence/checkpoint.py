"""The checkpoint: what a long-running agent's harness writes so that a new process can carry on, and the contract a
resume must keep.

A checkpoint holds the run and episode it belongs to, its number, the resume manifest (model, protocol, policies,
code) and its hash, the four ledgers — constraints (from the task), approvals, completed effects and unfinished work
(read from the site's authoritative records, `sites/kit/ledgers.py`) — the conversation state needed to continue,
the action it was written before (if any), and a content hash over all of it. It is written as canonical JSON
(`computerops.core.hashing.canonical_json`) and fsync'd: a reader refuses a file that is not exactly the canonical
form of its content, or whose content hash or manifest hash does not match, so one altered byte is refused; and a
resume under another manifest is refused naming the first difference (a resume under another model, prompt, tool
schema or policy is a new experimental condition, not a continuation).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapter.reply import ModelCall
from adapter.transcript import AgentTranscript
from computerops.core.difference import first_difference
from computerops.core.durable import write_durably
from computerops.core.formats import Versioned
from computerops.core.hashing import canonical_json, canonical_sha256
from computerops.core.vocabulary import ToolMode
from sites.kit.broker import Grant
from sites.kit.ledgers import ApprovalRecord, CompletedEffect, UnfinishedWork
from tasks.spec import MutationRule

CHECKPOINT_FORMAT: Literal["computerops.checkpoint/1"] = "computerops.checkpoint/1"

Trigger = Literal["start", "every", "before_effect", "after_effect", "resume", "compaction"]
"""Why a checkpoint was written: the episode's first observation, every N actions, right before an action that may
have an effect (a click, a key press, a dialog's answer), right after an action that committed one, and by a resumed
process once it has recovered the action its checkpoint was written before (what it carries on with), and right after
a compaction replaced the older context with a summary."""


class Constraints(BaseModel):
    """The constraints ledger: what the user may do (the task's grants: objects, recipients, limits with their
    currency) and the only changes allowed. Preserved exactly or made stricter across every boundary."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grants: list[Grant] = Field(default_factory=list)
    allowed_mutations: list[MutationRule] = Field(default_factory=list)


class Ledgers(BaseModel):
    """The four ledgers of a checkpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    constraints: Constraints
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    completed_effects: list[CompletedEffect] = Field(default_factory=list)
    unfinished_work: list[UnfinishedWork] = Field(default_factory=list)


class ResumeManifest(BaseModel):
    """What a resume must run under to be the same condition: compared field by field, the first difference named."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    episode_id: str
    task_sha256: str
    model: str
    protocol_sha256: dict[str, str]
    """The system prompts and action schemas (`computerops.runs.provenance.protocol_hashes`)."""
    code_sha256: dict[str, str]
    """The harness's own code (`computerops.runs.provenance.code_hashes`)."""
    policies: dict[str, str]
    """The declared persistence policies: `recovery` (after an interrupted action), `compaction`, `checkpoint_every`."""


class WindowEntry(BaseModel):
    """One message of the context window as the loop held it (adapter/context.py `_Entry`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    message: dict[str, Any]
    observation: str | None = None
    rejected_reply: bool = False
    elided: bool = False


class PendingAction(BaseModel):
    """The action a checkpoint was written before: the model's reply is in the conversation, its result is not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    action: dict[str, Any]
    call: ModelCall
    call_id: str
    echoed: bool
    """The reply's tool call is echoed in the conversation (a tool message must answer it)."""
    idempotency_key: str


class Conversation(BaseModel):
    """The loop's state: enough for a new process to send the next request exactly as this one would have."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    transcript: AgentTranscript
    entries: list[WindowEntry]
    budget: int
    overhead: int
    scale: float
    mode: ToolMode
    next_number: int
    """The number of the next model reply (the pending action's, when there is one)."""
    elapsed_s: float
    """Seconds of the episode's wall clock used so far (a resumed process starts its clock there)."""
    page_url: str
    """The page the agent was on."""


class Compaction(BaseModel):
    """A compaction a checkpoint records: the policy and the summary that replaced the older context; for `model/1`
    also the model's call for it, and why it was not used where it was not (the context then stays uncompacted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: str
    summary: str
    """The summary as it replaced the older context ('' for a failed compaction, which replaced nothing)."""
    call: ModelCall | None = Field(default=None, exclude_if=lambda value: value is None)
    """`model/1`: the request for the summary as read (tokens, latency, the reply); None when no reply came."""
    failed: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """`model/1`: why the model's reply did not become the summary (no reply, a tool call, no text)."""


class Checkpoint(Versioned):
    """One durable checkpoint of an episode (`checkpoints/NNN.json` in its evidence)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.checkpoint/1"] = CHECKPOINT_FORMAT
    run_id: str
    episode_id: str
    number: int = Field(ge=1)
    trigger: Trigger
    process: int = Field(ge=1)
    """Which process of the episode wrote it (1 for the first; each resume starts the next)."""
    manifest: ResumeManifest
    manifest_sha256: str
    ledgers: Ledgers
    as_of_operation: int = Field(ge=0)
    """The site's latest operation when the ledgers were read: their moment in the episode's journal."""
    conversation: Conversation
    pending: PendingAction | None = None
    compaction: Compaction | None = Field(default=None, exclude_if=lambda value: value is None)
    """For a `compaction` checkpoint: the policy and the summary the conversation now holds instead of its past."""
    content_sha256: str = ""
    """sha256 of the canonical JSON of every other field (but `seal`)."""
    seal: str = ""
    """HMAC-SHA256 of the content hash under the episode's checkpoint key, which the run hands its harness
    processes and writes nowhere: a checkpoint altered and given a matching content hash again is still refused on
    resume. Empty when written without a key."""

    def sealed(self, key: bytes | None = None) -> Checkpoint:
        """This checkpoint with its manifest and content hashes set, and its seal under `key`."""
        body = self.model_copy(update={"manifest_sha256": canonical_sha256(self.manifest.model_dump(mode="json")),
                                       "content_sha256": "", "seal": ""})
        digest = content_hash(body)
        return body.model_copy(update={"content_sha256": digest, "seal": "" if key is None else seal_of(key, digest)})


def content_hash(checkpoint: Checkpoint) -> str:
    body = checkpoint.model_dump(mode="json")
    body.pop("content_sha256")
    body.pop("seal")
    return canonical_sha256(body)


def seal_of(key: bytes, content_sha256: str) -> str:
    return hmac.new(key, content_sha256.encode("ascii"), hashlib.sha256).hexdigest()


class CheckpointRefused(RuntimeError):
    """A checkpoint that cannot be resumed from: unreadable, altered, or under another manifest."""


def checkpoint_path(directory: Path, number: int) -> Path:
    return directory / f"{number:03d}.json"


def write_checkpoint(directory: Path, checkpoint: Checkpoint, key: bytes | None = None) -> Path:
    """Write a sealed checkpoint durably: canonical JSON to a temporary file, fsync'd, renamed into place, and the
    directory fsync'd, so a kill at any moment leaves the previous checkpoint or this one, never a torn file."""
    directory.mkdir(parents=True, exist_ok=True)
    sealed = checkpoint.sealed(key)
    path = checkpoint_path(directory, sealed.number)
    write_durably(path, canonical_json(sealed.model_dump(mode="json")), sync_directory=True)
    return path


def read_checkpoint(path: Path, key: bytes | None = None) -> Checkpoint:
    """A checkpoint read back and checked: the file must be exactly the canonical JSON of its content, both its hashes
    must match and, given the episode's key, its seal (CheckpointRefused names what does not)."""
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointRefused(f"checkpoint {name} cannot be read: {exc}") from exc
    try:
        checkpoint = Checkpoint.model_validate(data)
    except (ValidationError, ValueError) as exc:
        raise CheckpointRefused(f"checkpoint {name} is not a checkpoint: {exc}") from exc
    # Exactly what the writer writes for this checkpoint: not merely canonical JSON, but that of the checkpoint the
    # text reads as (a "15" for 15, a field left to its default or added as null reads the same, and is refused).
    if canonical_json(checkpoint.model_dump(mode="json")) != text:
        raise CheckpointRefused(f"checkpoint {name} was altered: it is not the canonical JSON it was written as")
    if path.name != checkpoint_path(path.parent, checkpoint.number).name:
        raise CheckpointRefused(f"checkpoint {name} holds checkpoint {checkpoint.number:03d}: it was moved or copied")
    if content_hash(checkpoint) != checkpoint.content_sha256:
        raise CheckpointRefused(f"checkpoint {name} was altered: its content does not match its content hash")
    if canonical_sha256(checkpoint.manifest.model_dump(mode="json")) != checkpoint.manifest_sha256:
        raise CheckpointRefused(f"checkpoint {name} was altered: its manifest does not match its manifest hash")
    if key is not None and not hmac.compare_digest(seal_of(key, checkpoint.content_sha256), checkpoint.seal):
        raise CheckpointRefused(f"checkpoint {name} was altered: its seal is not one this episode's harness wrote")
    return checkpoint


def manifest_refusal(checkpoint: Checkpoint, now: ResumeManifest) -> str | None:
    """Why `checkpoint` cannot be resumed under the manifest `now`: the first field that differs, or None."""
    found = first_difference(checkpoint.manifest.model_dump(mode="json"), now.model_dump(mode="json"))
    if found is None:
        return None
    return (f"resume of episode {checkpoint.episode_id} from checkpoint {checkpoint.number:03d} refused: the manifest "
            f"differs at {found}; a resume under another manifest is a new condition, not a continuation")


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest checkpoint file of a directory (by number), or None."""
    found = sorted(directory.glob("[0-9][0-9][0-9].json"))
    return found[-1] if found else None
