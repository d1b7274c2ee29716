"""The bounds a run's episodes are planned with: the configured ones, changed only where the server's own word
(computerops/run_records.py `ObservedEndpoint`: its stated context, what it did with tool schemas) says they cannot
hold. Pure: the runner plans with it and the report says what it changed."""

from __future__ import annotations

from adapter.context import MAX_SCALE
from adapter.transcript import Bounds
from computerops.run_records import ObservedEndpoint


def planned_bounds(bounds: Bounds, observed: ObservedEndpoint) -> Bounds:
    """The bounds episodes run with: the configured context or the server's own where it is smaller, and in auto
    mode the text protocol for a server that drops or refuses tool schemas."""
    update: dict[str, object] = {}
    if observed.context is not None and observed.context.tokens < bounds.context_tokens:
        update["context_tokens"] = max(observed.context.tokens, bounds.max_response_tokens + 1, 256)
    if bounds.tool_mode == "auto" and observed.tools is not None and observed.tools.verdict in ("ignored", "refused"):
        update["tool_mode"] = "text"
    return bounds.model_copy(update=update) if update else bounds


def describe_planned(configured: Bounds, planned: Bounds, observed: ObservedEndpoint) -> str:
    """What the server's own word changed in the bounds, for the progress line."""
    parts = []
    if planned.context_tokens != configured.context_tokens and observed.context is not None:
        parts.append(f"context {planned.context_tokens} tokens, not the configured {configured.context_tokens}: "
                     f"the server says {observed.context.tokens} ({observed.context.source})")
    if planned.tool_mode != configured.tool_mode and observed.tools is not None:
        parts.append(f"the text protocol, not native tool calls: the server {observed.tools.verdict} the tool "
                     f"schemas ({observed.tools.detail})")
    return "; ".join(parts)


def initial_token_scale(observed: ObservedEndpoint) -> float:
    """Server tokens per estimated token that episodes start with: the run's tools probe's count over its estimate
    (adapter/serverinfo.py), never below 1 (planning on fewer tokens than the estimate is never safe), and 1 when
    the server did not count."""
    scale = observed.tools.token_scale if observed.tools is not None else None
    return 1.0 if scale is None else min(max(scale, 1.0), MAX_SCALE)
