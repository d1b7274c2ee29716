"""Whether what a step tells the model reaches its prompt, judged from the episode itself (ComputerOps issue 43).

The run's probe (adapter/serverinfo.py `probe_tool_results`) may not run, or not finish, on a slow server; the
episode still has the server's own prompt-token count of every request. Between two requests whose conversation only
grew (nothing elided, so the earlier request's messages begin the later one's), the server's count must grow by at
least a fifth of what the step sent after the model's reply: its result and the page after it (the same threshold
the probes use: tokenisers differ about 4x from the 4-characters-a-token estimate either way, and a dropped message
adds a few template tokens at most). A chat template that drops tool messages grew the prompt by +38 tokens a step
where about +490 were sent (the issue's llama-cpp-python server); `DROPPED_STEPS` such steps in a row are the
verdict, and the loop (adapter/loop.py) then sends observations in user messages, or, where they already go there,
ends the episode as the endpoint's failure (the model never saw the pages).

Only counts that can be the prompt's are judged: a count that fell while the conversation grew (not the prompt's),
a count past `PLAUSIBLE_TOKENS_PER_CHAR` tokens a character, a zero or negative one, and a step whose result holds a
part that is not text (an image) are not judged (a count that stays the same is: a server that drops or truncates
what it is sent reports just that); a wrong "dropped"
would send the pages another way or end the episode, so the watch errs towards judging nothing. It keeps a copy of
each request's messages, so an old result elided in place later is seen as a change of the prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter.context import text_tokens

DROPPED_STEPS = 2
"""Steps in a row whose results did not reach the prompt before the episode acts on it."""
JUDGED_RESULT_TOKENS = 60
"""The fewest estimated tokens of a step's result for the step to be judged (a one-line result alone is too small
to tell from a template's own tokens)."""
PLAUSIBLE_TOKENS_PER_CHAR = 2
"""The most prompt tokens a server may count per character sent (tokenisers give at most about one a character;
twice that leaves room for templates) before its count is taken as something other than the prompt's."""
PLAUSIBLE_BASE = 4096
"""Tokens a chat template and tool schemas may add to a prompt of any length."""
NOT_DELIVERED_CAUSE = "observations not in prompt"
"""The infrastructure cause of an episode ended because observations in user messages did not reach the prompt."""


@dataclass(frozen=True)
class Growth:
    """One judged step: how much the server's prompt count grew against what the step sent."""

    step: int
    """The number of the request whose count showed it (the step after the one whose result was sent)."""
    reported: int
    """Prompt tokens the server counted over its count of the request before."""
    sent: int
    """Estimated tokens of the results sent between the two requests (tool and user messages)."""

    @property
    def delivered(self) -> bool:
        return self.reported >= max(8, self.sent // 5)


def step_result_tokens(added: Sequence[Mapping[str, Any]]) -> int | None:
    """Estimated tokens of what a step told the model: the content of the tool and user messages it added; None when
    one of them holds a part that is not text (an image: its tokens cannot be estimated from its characters)."""
    total = 0
    for message in added:
        if message.get("role") not in ("tool", "user"):
            continue
        content = message.get("content") or ""
        if isinstance(content, list):
            if any(not isinstance(part, Mapping) or part.get("type") != "text" for part in content):
                return None
            total += sum(text_tokens(str(part.get("text") or "")) for part in content)
        else:
            total += text_tokens(str(content))
    return total


def _chars(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(len(str(message.get("content") or "")) + len(str(message.get("tool_calls") or ""))
               for message in messages)


def _digest(message: dict[str, Any]) -> str:
    """A message's fingerprint (its canonical JSON's sha256)."""
    return hashlib.sha256(json.dumps(message, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class DeliveryWatch:
    """The prompt counts of an episode's requests, and the judged steps since the last one that was delivered."""

    _last: tuple[str | None, list[str], int] | None = None
    undelivered: list[Growth] = field(default_factory=list)
    """The judged steps in a row (the latest last) whose results did not reach the prompt."""

    def see(self, number: int, messages: Sequence[dict[str, Any]], prompt_tokens: int | None,
            upstream: str | None = None) -> None:
        """Take request `number`'s messages as sent, the server's count of its prompt (None: not reported) and which
        server counted it (`ModelCall.upstream`: None for the primary; a primary's and a fallback's counts are not
        compared)."""
        last = self._last
        counts = isinstance(prompt_tokens, int) and prompt_tokens > 0
        # Digests, not the messages: the loop may later elide an old result in place, and the next request must be
        # compared with what this one was when it was sent (without keeping a copy of the whole conversation).
        digests = [_digest(m) for m in messages] if counts else []
        self._last = (upstream, digests, prompt_tokens) if counts and prompt_tokens else None
        if last is None or not counts or not prompt_tokens or last[0] != upstream:
            return
        _, before, counted = last
        if len(messages) <= len(before) or digests[:len(before)] != before:
            return  # elided or refitted: the prompts are not one the other's continuation
        sent = step_result_tokens(messages[len(before):])
        if sent is None or sent < JUDGED_RESULT_TOKENS:
            return
        if prompt_tokens < counted or prompt_tokens > PLAUSIBLE_TOKENS_PER_CHAR * _chars(messages) + PLAUSIBLE_BASE:
            return  # a count that fell while the conversation grew, or past any tokeniser: not the prompt's
        growth = Growth(step=number, reported=prompt_tokens - counted, sent=sent)
        self.undelivered = [] if growth.delivered else [*self.undelivered, growth]

    def verdict(self) -> str | None:
        """Why the results are taken as not reaching the model, once `DROPPED_STEPS` judged steps in a row show it;
        else None."""
        if len(self.undelivered) < DROPPED_STEPS:
            return None
        shown = self.undelivered[-DROPPED_STEPS:]
        grew = ", ".join(f"+{g.reported}" for g in shown)
        sent = ", ".join(f"+{g.sent}" for g in shown)
        steps = ", ".join(str(g.step) for g in shown)
        return (f"the server's prompt grew by {grew} tokens at requests {steps} where the results sent were about "
                f"{sent} estimated tokens")

    def restart(self) -> None:
        """Forget the judged steps (after the loop changed how results are sent)."""
        self.undelivered = []
