"""Fitting a conversation into the model's context budget.

Tokens are estimated (4 characters a token, plus a small overhead per message) because the adapter cannot see every
server's tokenizer. The estimate is calibrated as the episode goes by the prompt-token counts the server returns
(`calibrate`): a server whose tokenizer counts 3.5x the estimate gets a 3.5x scale, so the window is never planned on
an estimate the server contradicted. The estimate and the server's counts are both recorded.

When the conversation is too long, the oldest observations are replaced by a short marker, in one chunk down to
TRIM_TARGET of the budget rather than one per step: the earlier messages then stay unchanged for several steps, so a
server's prompt cache keeps matching (eliding one observation every step would change the prompt's prefix on every
request). An observation identical to the last one shown in full (a rejected action changes nothing) is sent as the
short `UNCHANGED` marker. Rejected replies are elided the same way (`OMITTED_REPLY`, their tool call's arguments
`{}`), in the same order, after the observations before them: a malformed reply runs to thousands of tokens and would
otherwise stay in every later prompt. The system prompt, the instruction and the latest observation are never
dropped.

A request's estimate counts the tool schemas where they are sent (`overhead`), as the server counts them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter.prompts import OBSERVATION_MARK, OMITTED, OMITTED_REPLY, UNCHANGED

_PER_MESSAGE = 4
TRIM_TARGET = 0.7
"""When the conversation overflows, old observations are elided until it fills at most this share of the budget."""
MAX_SCALE = 8.0
"""The largest calibration accepted (a server reporting more is taken at this)."""


def text_tokens(text: str) -> int:
    """Estimated tokens of a text: one per 4 characters, rounded up."""
    return (len(text) + 3) // 4


def estimate_tokens(text: str) -> int:
    """Estimated tokens of one message of the conversation."""
    return text_tokens(text) + _PER_MESSAGE


def conversation_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Estimated tokens of the messages of a request, each as the JSON it is sent as."""
    return sum(estimate_tokens(json.dumps(m)) for m in messages)


@dataclass
class _Entry:
    message: dict[str, Any]
    observation: str | None
    rejected_reply: bool = False
    """A model reply the adapter rejected: elidable like an observation."""
    elided: bool = False

    def render(self, shown: str | None) -> tuple[dict[str, Any], str | None]:
        """The message as sent, and the observation the model has last seen in full after it."""
        if self.rejected_reply and self.elided:
            calls = [{**c, "function": {**c["function"], "arguments": "{}"}}
                     for c in self.message.get("tool_calls", [])]
            return {**self.message, "content": OMITTED_REPLY, **({"tool_calls": calls} if calls else {})}, shown
        if self.observation is None:
            return self.message, shown
        content = str(self.message.get("content") or "")
        head = content.split(OBSERVATION_MARK, 1)[0]
        if self.elided:
            return {**self.message, "content": f"{head}{OBSERVATION_MARK}{OMITTED}"}, shown
        if self.observation == shown:
            return {**self.message, "content": f"{head}{OBSERVATION_MARK}{UNCHANGED}"}, shown
        return self.message, self.observation


@dataclass
class ContextWindow:
    """The messages of an episode and the token budget they must fit in."""

    budget: int
    """Estimated tokens the prompt may take (the context less the reply's room)."""
    overhead: int = 0
    """Estimated tokens every request carries besides the messages (the tool schemas in native mode)."""
    entries: list[_Entry] = field(default_factory=list)
    scale: float = 1.0
    """Server tokens per estimated token, from the server's own prompt counts (1.0 until it reports one)."""

    def add(self, message: dict[str, Any], *, observation: str | None = None, rejected_reply: bool = False) -> None:
        """Add a message; `observation`: the page text it carries, `rejected_reply`: a model reply the adapter
        rejected (both elidable when the conversation must shrink)."""
        self.entries.append(_Entry(message=message, observation=observation, rejected_reply=rejected_reply))

    def saved(self) -> list[dict[str, Any]]:
        """Every entry as plain data (message, observation, rejected_reply, elided): what a checkpoint keeps."""
        return [{"message": e.message, "observation": e.observation, "rejected_reply": e.rejected_reply,
                 "elided": e.elided} for e in self.entries]

    @classmethod
    def restored(cls, entries: Sequence[Mapping[str, Any]], *, budget: int, overhead: int,
                 scale: float) -> ContextWindow:
        """A window holding the entries `saved` gave, with its budget, overhead and calibration."""
        return cls(budget=budget, overhead=overhead, scale=scale,
                   entries=[_Entry(message=dict(e["message"]), observation=e["observation"],
                                   rejected_reply=e["rejected_reply"], elided=e["elided"]) for e in entries])

    def compact(self, content: str, observation: str) -> None:
        """Replace everything but the system prompt with one user message (a compaction's summary and the page)."""
        self.entries = [self.entries[0], _Entry(message={"role": "user", "content": content}, observation=observation)]

    def replace_system(self, content: str) -> None:
        self.entries[0] = _Entry(message={"role": "system", "content": content}, observation=None)

    def calibrate(self, server_tokens: int | None, estimated_tokens: int) -> None:
        """Take the server's prompt-token count for a prompt estimated at `estimated_tokens`: the scale becomes the
        largest ratio seen (never planning on an estimate a server has contradicted)."""
        if server_tokens is None or server_tokens <= 0 or estimated_tokens <= 0:
            return
        self.scale = min(max(self.scale, server_tokens / estimated_tokens), MAX_SCALE)

    def render(self) -> list[dict[str, Any]]:
        """The messages as they would be sent now."""
        shown: str | None = None
        messages = []
        for entry in self.entries:
            message, shown = entry.render(shown)
            messages.append(message)
        return messages

    def estimated(self, messages: list[dict[str, Any]]) -> int:
        """Estimated tokens of these messages, before calibration."""
        return sum(estimate_tokens(json.dumps(m, ensure_ascii=False)) for m in messages)

    def _size(self) -> int:
        return math.ceil((self.estimated(self.render()) + self.overhead) * self.scale)

    def fit(self) -> list[dict[str, Any]] | None:
        """The messages to send, eliding old observations as needed; None if even that is too long."""
        if self._size() > self.budget:
            with_observation = [e for e in self.entries if e.observation is not None and not e.elided]
            elidable = set(map(id, with_observation[:-1])) | {id(e) for e in self.entries if e.rejected_reply}
            for entry in [e for e in self.entries if id(e) in elidable and not e.elided]:
                if self._size() <= self.budget * TRIM_TARGET:
                    break
                entry.elided = True
        if self._size() > self.budget:
            return None
        return self.render()
