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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter.context import text_tokens

DROPPED_STEPS = 2
"""Steps in a row whose results did not reach the prompt before the episode acts on it."""
JUDGED_RESULT_TOKENS = 60
"""The fewest estimated tokens of a step's result for the step to be judged (a one-line result alone is too small
to tell from a template's own tokens)."""
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


def step_result_tokens(added: Sequence[Mapping[str, Any]]) -> int:
    """Estimated tokens of what a step told the model: the content of the tool and user messages it added."""
    return sum(text_tokens(str(m.get("content") or "")) for m in added if m.get("role") in ("tool", "user"))


@dataclass
class DeliveryWatch:
    """The prompt counts of an episode's requests, and the judged steps since the last one that was delivered."""

    _last: tuple[str | None, list[dict[str, Any]], int] | None = None
    undelivered: list[Growth] = field(default_factory=list)
    """The judged steps in a row (the latest last) whose results did not reach the prompt."""

    def see(self, number: int, messages: Sequence[dict[str, Any]], prompt_tokens: int | None,
            upstream: str | None = None) -> None:
        """Take request `number`'s messages as sent, the server's count of its prompt (None: not reported) and which
        server counted it (`ModelCall.upstream`: None for the primary; a primary's and a fallback's counts are not
        compared)."""
        last = self._last
        self._last = (upstream, list(messages), prompt_tokens) if prompt_tokens else None
        if last is None or not prompt_tokens or last[0] != upstream:
            return
        _, before, counted = last
        if len(messages) <= len(before) or list(messages[:len(before)]) != before:
            return  # elided or refitted: the prompts are not one the other's continuation
        sent = step_result_tokens(messages[len(before):])
        if sent < JUDGED_RESULT_TOKENS:
            return
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
