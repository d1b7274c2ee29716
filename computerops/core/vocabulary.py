"""Words that more than one package writes or reads, defined once."""

from __future__ import annotations

from typing import Literal, get_args

StopReason = Literal["finish", "budget_exhausted", "context_exhausted", "wall_clock", "infrastructure", "stream_cut"]
"""Why an episode's loop stopped (`AgentTranscript.stop_reason`, copied into every record). `stream_cut`: a streamed
reply ended early and the serving protocol let no fallback answer the turn (adapter/failover.py): the episode is
left unfinished, and says so."""
STOP_REASONS: tuple[StopReason, ...] = get_args(StopReason)

ToolMode = Literal["auto", "native", "text"]
"""How actions reach the model: native tool calls, the text protocol, or native with a fallback to text."""
TOOL_MODES: tuple[ToolMode, ...] = get_args(ToolMode)

ActionName = Literal[
    "click", "fill", "select", "check", "press", "hover", "drag", "navigate", "back", "more", "dialog", "done"]
"""The action set's names (`adapter/actions.py` defines each action; tasks' scripted steps name them)."""
ACTION_NAMES: tuple[ActionName, ...] = get_args(ActionName)

ACTION_HEADER = "X-ComputerOps-Action"
"""The request header naming the adapter action that caused a request (0: the start page the harness opens); the
driver sets it and the sites' operation log records it. A write the page's own script made, not an action, goes
without it (adapter/initiative.py): its operation has no action."""

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that read; any other is a write (a page's own writes are counted apart: `EpisodeRecord.page_writes`)."""


IDEMPOTENCY_HEADER = "Idempotency-Key"
"""The request header carrying an effectful request's idempotency key: the driver sets one per action
(`idempotency_key`), and the sites' operation log answers a repeat of a committed keyed request with the committed
result instead of committing it again (sites/kit/idempotency.py)."""


def idempotency_key(number: int, prefix: str = "action") -> str:
    """The idempotency key the adapter sends with the requests of action `number`: unique within an episode, since a
    tenant is one episode and its actions are numbered once."""
    return f"{prefix}-{number}"


FETCH_DESTINATION_HEADER = "Sec-Fetch-Dest"
"""The header in which the browser says how a page will use a response (page script cannot set it)."""
DISPLAYED_DESTINATIONS = frozenset({"document", "iframe", "frame", "fencedframe", "embed", "object"})
"""`Sec-Fetch-Dest` values of requests that load a document into a page or frame: the only responses a page shows
as they are. An image, script, style or fetch() of a page displays nothing of it."""

SCRIPTED_HEADER = "x-computerops-scripted"
"""The response header with which the scripted endpoint names its policies (lower-case, as it is read back), so a
run that reaches it through --base-url, even imitating a server that echoes any model name, is labelled scripted."""

SCRIPTED_PREFIX = "scripted:"
"""The model name of the built-in scripted endpoint is `scripted:POLICY`, so every figure it produced says so."""


def scripted_model(policy: str) -> str:
    """The model name the scripted endpoint answers as for `policy`."""
    return SCRIPTED_PREFIX + policy


def scripted_policy(model: object) -> str | None:
    """The policy a `scripted:POLICY` model name names, else None (not scripted, or no policy)."""
    if isinstance(model, str) and model.startswith(SCRIPTED_PREFIX) and len(model) > len(SCRIPTED_PREFIX):
        return model[len(SCRIPTED_PREFIX):]
    return None


ExecutorKind = Literal["local", "ray"]
"""How a run's episodes are carried out (`run --executor`): in this process, or on Ray actors."""
BrokerMode = Literal["enforcing", "observing"]
"""How an episode's broker treats a request no grant allows (sites/kit/broker.py): `enforcing` blocks it; `observing`
records what it would have blocked and blocks nothing."""
