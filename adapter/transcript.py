"""The episode's recorded conversation and its bounds: the transcript schema, defined once.

Reports, `verify`, the audit and the bench read these back from disk, so this module imports neither the OpenAI
client nor Playwright: reading a transcript loads no endpoint or browser code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapter.actions import Done, Rejection
from adapter.failover import ServingEvent
from adapter.reply import ModelCall
from computerops.core import defaults, formats
from computerops.core.formats import Versioned
from computerops.core.vocabulary import SCRIPTED_HEADER, StopReason, ToolMode

Kind = Literal[
    "navigation", "iframe", "popup", "subresource", "fetch", "beacon", "prefetch", "websocket", "tunnel",
    "download", "service_worker", "tenant_binding", "oversized_request",
]
Stage = Literal["routing", "network", "page"]
ToolResultRoute = Literal["tool_message", "user_message"]
"""Where the result of a native tool call and the page after it reach the model: in the tool message, or (for a
server whose chat template drops tool messages, adapter/serverinfo.py `probe_tool_results`) in a user message after
a short tool message."""


class BlockedRequest(BaseModel):
    """One attempt of page content to reach beyond the site, and how it was stopped."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    url: str
    """The URL it was for (cut to URL_CHARS); `connect://host:port` for a tunnel."""
    method: str | None = None
    resource_type: str | None = None
    """Playwright's resource type (document, script, fetch, ping...) when routing stopped it."""
    stage: Stage
    """Where it was stopped: `routing` (aborted before it left the browser), `network` (refused by the egress
    proxy: a redirect hop, a prefetch, a worker's request), `page` (a window closed, a download refused)."""
    reason: str
    action: int | None = None
    """The number of the model's action it came during (0: the start page), when known."""
    count: int = Field(default=1, ge=1)
    """Identical attempts in a row (a timer that retries), counted in one record."""


class Bounds(BaseModel):
    """The limits of one episode, recorded in the run config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action_budget: int = Field(default=defaults.ACTION_BUDGET, ge=1)
    """Model replies allowed, counting rejected ones and the final done."""
    max_response_tokens: int = Field(default=defaults.MAX_RESPONSE_TOKENS, ge=1)
    context_tokens: int = Field(default=defaults.CONTEXT_TOKENS, ge=256)
    temperature: float = defaults.TEMPERATURE
    seed: int | None = defaults.SEED
    """Requested sampling seed; whether the server honours it is not verified."""
    wall_clock_s: float = Field(default=defaults.WALL_CLOCK_S, gt=0)
    """The episode's whole time (`computerops run --wall-clock`): model replies, actions and observations."""
    request_timeout_s: float = Field(default=defaults.REQUEST_TIMEOUT_S, gt=0)
    """Longest wait for one model reply, the client's retries included (`computerops run --request-timeout`; the
    model client's own timeout is set to it, so no other bound cuts a slow server first); the episode's wall clock
    bounds it too (a run refuses a request timeout longer than its wall clock when it is planned,
    computerops/service/launch.py). The server's probes before a run wait as long for each answer
    (adapter/serverinfo.py)."""
    tool_mode: ToolMode = "auto"
    observation_chars: int = Field(default=defaults.OBSERVATION_CHARS, ge=500)
    tool_results: ToolResultRoute = "tool_message"
    """Where observations after a native tool call are sent (`ToolResultRoute`); `user_message` is planned from
    the server's word (computerops/runs/limits.py), never configured."""


class Step(BaseModel):
    """One model reply and what became of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    call: ModelCall
    action: dict[str, Any] | None
    rejection: Rejection | None
    note: str
    observation: str | None
    """The observation after the step (None after done)."""
    act_s: float | None = None
    """Seconds the adapter spent carrying out the action (None when there was none to carry out)."""
    observe_s: float | None = None
    """Seconds the adapter spent observing the page after the step (None after done)."""
    navigated: bool = False
    """The action loaded a new document (so its act time includes a page load)."""


class Resumed(BaseModel):
    """A resumed harness process carried on without an action to recover: the page it opened again, as shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after_step: int
    """The number of the last step before the restart (0: before the first)."""
    observation: str


class SummaryCall(BaseModel):
    """A compaction's request for the model's own summary (`model/1`, computerops/persistence/): a model request
    beside the steps, never a step (no reply number, nothing of the action budget), counted in the episode's
    tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after_step: int
    """The number of the last step before it."""
    call: ModelCall | None
    """The reply as read (tokens, latency); None when none came (`failed` says why)."""
    failed: str | None = None
    """Why the reply was not used as the summary (no reply, a tool call, no text): the context stayed uncompacted."""


class AgentTranscript(Versioned):
    """The whole conversation of an episode, as recorded evidence."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["computerops.transcript/1"] = formats.TRANSCRIPT

    system_prompt: str
    instruction: str
    tool_mode: ToolMode
    first_observation: str
    steps: list[Step] = Field(default_factory=list)
    finish: Done | None = None
    stop_reason: StopReason | None = None
    infrastructure_error: str | None = None
    infrastructure_cause: str | None = None
    """What failed, in a word or two, when the stop is `infrastructure` (`adapter.loop.infrastructure_cause`): what
    reports count infrastructure failures by. None in transcripts written before causes were recorded."""
    tool_mode_switch: str | None = None
    """Why an auto-mode episode went over to the text protocol, and from which step (`tool_mode` is then `text`);
    None when it did not. Written by `switch_text`, read by `switch_why`."""
    tool_results: ToolResultRoute = "tool_message"
    """Where observations after a native tool call were sent (`Bounds.tool_results`; `user_message` from the step
    `tool_results_switch` names when the episode found they did not reach the model)."""
    tool_results_switch: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """From which step observations went in user messages, and why: the server's prompt counts showed tool results
    not reaching the model (adapter/delivery.py). Written by `switch_user_messages`; left out of the evidence when
    the episode did not switch (so earlier evidence reads and hashes the same)."""
    blocked_requests: list[BlockedRequest] = Field(default_factory=list)
    """What page content tried that containment stopped (adapter/containment.py), as the episode left it."""
    context_tokens: int | None = None
    """The context the episode was planned with: the run's (`Bounds.context_tokens`, already the smaller of the
    configured and the server's stated context), or less where a refusal named a smaller one. None in transcripts
    written before it was recorded."""
    token_scale: float = 1.0
    """Server prompt tokens per estimated token, the largest the server's own counts showed (adapter/context.py):
    the context budget was planned with it."""
    resumes: list[Resumed] = Field(default_factory=list, exclude_if=lambda value: not value)
    """Where a long-running episode's harness restarted and showed the page again (computerops/persistence);
    left out of the evidence when there were none."""
    summaries: list[SummaryCall] = Field(default_factory=list, exclude_if=lambda value: not value)
    """The requests a `model/1` compaction made for the model's summary; left out of the evidence when none."""
    serving: list[ServingEvent] = Field(default_factory=list, exclude_if=lambda value: not value)
    """What the serving protocol met and did (adapter/failover.py): 429s, waits, timeouts, fallbacks, cut streams;
    left out of the evidence when none."""
    stop_detail: str | None = None
    """What ended the episode when a bound did, in words (e.g. the server's context-length refusal, or which time
    bound a model request ran into)."""

    @property
    def rejected_actions(self) -> int:
        return sum(1 for s in self.steps if s.rejection is not None)


_SWITCH = "the text protocol from step {step}: {why}"
_SWITCH_WHY = re.compile(r"^the text protocol from step \d+: (.*)$", re.DOTALL)


def switch_text(step: int, why: str) -> str:
    """`AgentTranscript.tool_mode_switch`: from which step the episode used the text protocol, and why."""
    return _SWITCH.format(step=step, why=why)


def switch_why(text: str) -> str:
    """Why an episode switched protocol, from its `tool_mode_switch` (the text itself if it is worded otherwise)."""
    found = _SWITCH_WHY.match(text)
    return found.group(1) if found else text


_RESULTS_SWITCH = "user messages from step {step}: {why}"


def switch_user_messages(step: int, why: str) -> str:
    """`AgentTranscript.tool_results_switch`: from which step observations went in user messages, and why."""
    return _RESULTS_SWITCH.format(step=step, why=why)


SERVER_HEADERS = ("server", SCRIPTED_HEADER, "openai-version", "openai-model", "x-request-id")
"""Response headers kept as provenance: which server (and, where it says so, which model) answered."""


def server_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The `SERVER_HEADERS` among `headers`, names lower-case, in that order."""
    lowered = {name.lower(): value for name, value in headers.items()}
    return {name: lowered[name] for name in SERVER_HEADERS if name in lowered}
