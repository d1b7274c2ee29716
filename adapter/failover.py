"""The harness's serving protocol: what the loop does when its model endpoint throttles, times out or cuts a stream.

Real deployments meet all three, and what the agent does after them is part of the system under test (the serving
study, docs/long-running.md "Serving failures"). The protocol is declared per episode and recorded with it:

- **throttled** (HTTP 429): `on_throttle` `wait` sleeps what `Retry-After` asks (else `backoff_s`), at most
  `max_wait_s` and never past the episode's wall clock, and asks the same endpoint again, up to `retries` times;
  `fallback` asks the pinned fallback endpoint at once (`ServingProtocol.fallback`).
- **timed out** before any reply: the request is sent again once to the same endpoint (`on_timeout` `retry`), or
  to the fallback (`fallback`). Nothing reached the agent, so a resend cannot act twice.
- **server error** (HTTP 5xx): asked again of the same endpoint after `backoff_s`, doubling, up to
  SERVER_ERROR_RETRIES times, as the openai client retries it for a run without the protocol (its clients' own
  retries are off); past them the episode ends as the endpoint's failure (`HTTP 500`), as it does without it.
- **stream cut** (a streamed reply that ended before its end, adapter/stream.py): nothing of it is carried out. A
  fallback after a stream has begun is refused — two models would answer one turn, the second acting on a state
  it did not create — unless the protocol declares a continuation design (`continuation`: the fallback is asked the
  whole turn again and the cut reply is discarded). Refused, the episode ends as `stream_cut`: unfinished, said so.
  A stream that began (`adapter.modelclient.StreamWatch`) and then stalled past the request bound is a cut stream:
  nothing answers that turn again without the continuation design.
- **unreachable** (no connection to the endpoint: refused, reset before any reply began, a name that does not
  resolve): the fallback is asked at once, whatever the protocol says of throttles and timeouts, and for the rest of
  the episode (a dead primary is not asked again each turn); without a fallback the episode ends as an
  infrastructure failure (`connection failed`). A reset after a stream began is a cut stream, as above.

Each of these is one `ServingEvent` in the transcript, in order; which endpoint answered each reply is its
`ModelCall.upstream` (None: the primary). The module imports no endpoint code (the transcript schema reads its
models). The protocol never decides whether a failure was injected: the run's
serving-fault layer logs what it injected, and the record sets the two side by side (computerops/serving_faults/).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # the transcript schema imports this module's models, and never the openai client
    import openai

Upstream = Literal["primary", "fallback"]
UPSTREAMS: tuple[Upstream, ...] = ("primary", "fallback")
ServingEventKind = Literal["throttled", "waited", "timed_out", "resent", "fell_back", "stream_cut",
                           "fallback_refused", "continued", "usage_unasked", "server_error", "unreachable"]
"""What happened to a model request: `throttled` (a 429), `waited` (slept before asking again), `timed_out` (no reply
within the request's bound), `resent` (asked the same endpoint again), `fell_back` (asked the fallback instead),
`stream_cut` (a streamed reply ended early), `fallback_refused` (a fallback after a stream had begun, refused),
`continued` (the same, allowed by a declared continuation design), `usage_unasked` (the server refused
`stream_options`: the request sent again without it, and so for the rest of the episode), `server_error` (an HTTP 5xx:
asked again, as the openai client's own retries ask without the protocol, up to SERVER_ERROR_RETRIES times),
`unreachable` (no connection could be made or kept: refused, reset, a name that does not resolve)."""
SERVER_ERROR_RETRIES = 2
"""Asks of the same endpoint after a 5xx (the first ask not counted): the openai client's own retries for a run
without the serving protocol (`adapter.modelclient.model_client`'s `max_retries`), whose clients have theirs off, so
that a 500 ends an episode under the protocol exactly when it ends one without it."""


class ServingProtocol(BaseModel):
    """How one episode's harness asks its model (recorded in its planned episode)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stream: bool = False
    """Ask for streamed replies (`stream: true`, with usage in the last chunk)."""
    on_throttle: Literal["wait", "fallback"] = "wait"
    on_timeout: Literal["retry", "fallback"] = "retry"
    retries: int = Field(default=2, ge=0)
    """Asks of the same endpoint after a throttle (the first ask not counted)."""
    backoff_s: float = Field(default=1.0, ge=0)
    """The wait after a 429 that names no Retry-After."""
    max_wait_s: float = Field(default=10.0, ge=0)
    """The longest wait the protocol accepts; a longer Retry-After is waited this long."""
    continuation: bool = False
    """A declared, tested continuation design: a fallback may answer a turn whose primary stream was cut (the cut
    reply discarded). Without it such a fallback is refused and the episode ends unfinished."""


class ServingEvent(BaseModel):
    """One thing the serving protocol met or did, in the transcript (`AgentTranscript.serving`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: int
    """The number of the model reply it happened while asking for."""
    request: int
    """The episode's model request it concerns (the latest sent), numbered from 1 across both endpoints as the
    serving-fault layer numbers them: a failure is set beside the layer's decision for the same request."""
    kind: ServingEventKind
    upstream: Upstream
    """The endpoint it concerns (for `fell_back`, the one fallen back to)."""
    detail: str = ""
    retry_after_s: float | None = Field(default=None, exclude_if=lambda value: value is None)
    """A 429's Retry-After, as sent (None: it named none)."""
    wait_s: float | None = Field(default=None, exclude_if=lambda value: value is None)
    emitted_chars: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """A cut stream's text content before the cut, in characters."""
    action_started: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    """Whether a cut stream had begun a tool call (an action was under way when it ended)."""


def retry_after(error: openai.APIStatusError) -> float | None:
    """The seconds a 429's `Retry-After` header asks for (a number of seconds; an HTTP date is not honoured), or
    None when it names none or something else."""
    value = error.response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if 0 <= seconds < 86400 else None


@dataclass
class Fallback:
    """The pinned fallback endpoint an episode may ask: its client and the model name it is asked for."""

    client: openai.AsyncOpenAI
    model: str


class ServingTurn:
    """The serving protocol's bookkeeping for one model reply: which endpoint is asked, and what happened."""

    def __init__(self, protocol: ServingProtocol, reply: int, events: list[ServingEvent],
                 fallback: Fallback | None, *, upstream: Upstream = "primary") -> None:
        self.protocol = protocol
        self.reply = reply
        self.events = events
        self.fallback = fallback
        self.upstream: Upstream = upstream if fallback is not None else "primary"
        """The endpoint asked: the primary, or the fallback from the start where an earlier turn found the primary
        unreachable."""
        self.request = 0
        """The episode's latest model request (the loop sets it as it sends each)."""
        self.throttles = 0
        self.timeouts = 0
        self.server_errors = 0

    def note(self, kind: ServingEventKind, detail: str = "", *, retry_after_s: float | None = None,
             wait_s: float | None = None, emitted_chars: int | None = None, action_started: bool | None = None) -> None:
        upstream: Upstream = "fallback" if kind == "fell_back" else self.upstream
        self.events.append(ServingEvent(reply=self.reply, request=self.request, kind=kind, upstream=upstream,
                                        detail=detail,
                                        retry_after_s=retry_after_s, wait_s=wait_s, emitted_chars=emitted_chars,
                                        action_started=action_started))

    def fall_back(self, why: str) -> bool:
        """Switch this reply's asking to the fallback; False when there is none or it is already asked."""
        if self.fallback is None or self.upstream == "fallback":
            return False
        self.upstream = "fallback"
        self.note("fell_back", why)
        return True

    async def after_throttle(self, error: openai.RateLimitError, left_s: float) -> bool:
        """Whether to ask again after a 429 (the endpoint to ask is `upstream`), having waited when the protocol
        waits; False: the 429 ends the episode."""
        asked = retry_after(error)
        self.note("throttled", f"HTTP 429 from the {self.upstream} endpoint", retry_after_s=asked)
        if self.protocol.on_throttle == "fallback" and self.fall_back("the primary endpoint throttled"):
            return True
        self.throttles += 1
        if self.throttles > self.protocol.retries:
            return False
        wait = min(self.protocol.backoff_s if asked is None else asked, self.protocol.max_wait_s)
        if wait >= left_s:
            return False
        await asyncio.sleep(wait)
        self.note("waited", f"{wait:.1f} s before asking the {self.upstream} endpoint again", wait_s=round(wait, 3))
        return True

    async def after_server_error(self, status: int, left_s: float) -> bool:
        """Whether to ask the same endpoint again after an HTTP 5xx, having waited `backoff_s` doubling with each
        (at most `max_wait_s`, never past the wall clock); False after SERVER_ERROR_RETRIES: the 5xx ends the
        episode as the endpoint's failure, as it does without the protocol."""
        self.note("server_error", f"HTTP {status} from the {self.upstream} endpoint")
        self.server_errors += 1
        if self.server_errors > SERVER_ERROR_RETRIES:
            return False
        wait = min(self.protocol.backoff_s * 2 ** (self.server_errors - 1), self.protocol.max_wait_s)
        if wait >= left_s:
            return False
        if wait > 0:
            await asyncio.sleep(wait)
            self.note("waited", f"{wait:.1f} s after the {self.upstream} endpoint's HTTP {status}",
                      wait_s=round(wait, 3))
        self.note("resent", f"the same request to the {self.upstream} endpoint")
        return True

    def after_timeout(self, limit_s: float, *, stream_began: bool = False) -> bool:
        """Whether to ask again after a request got no reply within `limit_s` (the request's bound, not the wall
        clock's); once per reply, to the same endpoint or the fallback. A stream that had begun and then stalled is a
        cut stream: only a declared continuation design lets the fallback answer the turn again."""
        if stream_began:
            return self.after_cut(0, False, f"the {self.upstream} endpoint's stream began, then stalled past the "
                                            f"request bound ({limit_s:.1f} s)", stalled=True)
        self.note("timed_out", f"no reply from the {self.upstream} endpoint within {limit_s:.1f} s")
        self.timeouts += 1
        if self.timeouts > 1:
            return False
        if self.protocol.on_timeout == "fallback" and self.fall_back("the primary endpoint timed out"):
            return True
        self.note("resent", f"the same request to the {self.upstream} endpoint")
        return True

    def after_unreachable(self, error: str) -> bool:
        """Whether to ask the fallback after no connection to the endpoint asked could be made or kept (before any
        reply began); False: there is none, or it is the one that cannot be reached."""
        self.note("unreachable", f"the {self.upstream} endpoint could not be reached ({error[:300]})")
        return self.fall_back("the primary endpoint could not be reached")

    def stream_options_refused(self, error: str) -> None:
        self.note("usage_unasked", f"the {self.upstream} endpoint refused stream_options ({error[:200]}); asked "
                                   "again without it")

    def after_cut(self, emitted: int, action_started: bool, detail: str, *, stalled: bool = False) -> bool:
        """Whether a fallback answers the turn again after its stream was cut (only under a declared continuation
        design); False: the episode ends unfinished. A stalled stream's text is unknown (`stalled`)."""
        self.note("stream_cut", detail, emitted_chars=None if stalled else emitted,
                  action_started=None if stalled else action_started)
        if self.fallback is None or self.upstream == "fallback":
            return False
        if not self.protocol.continuation:
            self.note("fallback_refused", "a fallback after the stream had begun, with no continuation design")
            return False
        self.note("continued", "the declared continuation design: the fallback answers the turn again")
        self.upstream = "fallback"
        self.note("fell_back", "the primary's stream was cut")
        return True
