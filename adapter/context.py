"""Fitting a conversation into the model's context budget.

Tokens are estimated (4 characters a token, plus a small overhead per message) because the
adapter cannot see every server's tokenizer; the estimate is recorded beside the server's own
counts. When the conversation is too long, the oldest observations are replaced by a short
marker first; the system prompt, the instruction and the latest observation are never dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from adapter.prompts import OBSERVATION_MARK, OMITTED

_PER_MESSAGE = 4


def text_tokens(text: str) -> int:
    """Estimated tokens of a text: one per 4 characters, rounded up."""
    return (len(text) + 3) // 4


def estimate_tokens(text: str) -> int:
    """Estimated tokens of one message of the conversation."""
    return text_tokens(text) + _PER_MESSAGE


@dataclass
class _Entry:
    message: dict[str, Any]
    observation: str | None
    elided: bool = False

    def render(self) -> dict[str, Any]:
        if not self.elided or self.observation is None:
            return self.message
        content = str(self.message.get("content") or "")
        head = content.split(OBSERVATION_MARK, 1)[0]
        return {**self.message, "content": f"{head}{OBSERVATION_MARK}{OMITTED}"}


@dataclass
class ContextWindow:
    """The messages of an episode and the token budget they must fit in."""

    budget: int
    entries: list[_Entry] = field(default_factory=list)

    def add(self, message: dict[str, Any], *, observation: str | None = None) -> None:
        self.entries.append(_Entry(message=message, observation=observation))

    def replace_system(self, content: str) -> None:
        self.entries[0] = _Entry(message={"role": "system", "content": content}, observation=None)

    def _size(self) -> int:
        return sum(estimate_tokens(json.dumps(e.render(), ensure_ascii=False)) for e in self.entries)

    def fit(self) -> list[dict[str, Any]] | None:
        """The messages to send, eliding old observations as needed; None if even that is too long."""
        with_observation = [e for e in self.entries if e.observation is not None and not e.elided]
        for entry in with_observation[:-1]:
            if self._size() <= self.budget:
                break
            entry.elided = True
        if self._size() > self.budget:
            return None
        return [e.render() for e in self.entries]
