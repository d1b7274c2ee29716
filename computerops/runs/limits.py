"""The bounds a run's episodes are planned with: the configured ones, changed only where the server's own word
(computerops/runs/records.py `ObservedEndpoint`: its stated context, what it did with tool schemas and tool results)
says they cannot hold. Pure: the runner plans with it and the report says what it changed."""

from __future__ import annotations

import json
import math

from adapter.actions import tool_schemas
from adapter.context import MAX_SCALE, estimate_tokens, text_tokens
from adapter.prompts import first_message, system_prompt
from adapter.transcript import Bounds
from computerops.runs.records import ObservedEndpoint

TEXT_PROTOCOL_VERDICTS = {"ignored": "drops", "refused": "refuses", "overflow": "cannot fit the context with"}
"""The tools verdicts (adapter/serverinfo.py) that plan the text protocol in auto mode, as the progress line words
what the server does with the tool schemas."""


def planned_bounds(bounds: Bounds, observed: ObservedEndpoint) -> Bounds:
    """The bounds episodes run with: the configured context or the server's own where it is smaller, in auto mode
    the text protocol for a server that drops, refuses or cannot fit tool schemas, and observations in user messages
    for a server that drops tool results."""
    update: dict[str, object] = {}
    if observed.context is not None and observed.context.tokens < bounds.context_tokens:
        update["context_tokens"] = max(observed.context.tokens, bounds.max_response_tokens + 1, 256)
    if (bounds.tool_mode == "auto" and observed.tools is not None
            and observed.tools.verdict in TEXT_PROTOCOL_VERDICTS):
        update["tool_mode"] = "text"
    if (update.get("tool_mode", bounds.tool_mode) != "text" and observed.tool_results is not None
            and observed.tool_results.verdict == "dropped"):
        update["tool_results"] = "user_message"
    return bounds.model_copy(update=update) if update else bounds


def describe_planned(configured: Bounds, planned: Bounds, observed: ObservedEndpoint) -> str:
    """What the server's own word changed in the bounds, for the progress line."""
    parts = []
    if planned.context_tokens != configured.context_tokens and observed.context is not None:
        parts.append(f"context {planned.context_tokens} tokens, not the configured {configured.context_tokens}: "
                     f"the server says {observed.context.tokens} ({observed.context.source})")
    if planned.tool_mode != configured.tool_mode and observed.tools is not None:
        does = TEXT_PROTOCOL_VERDICTS.get(observed.tools.verdict, observed.tools.verdict)
        parts.append(f"the text protocol, not native tool calls: the server {does} the tool schemas "
                     f"({observed.tools.detail})")
    if planned.tool_results != configured.tool_results and observed.tool_results is not None:
        parts.append(f"each observation in a user message after a short tool result: the server drops tool "
                     f"results ({observed.tool_results.detail})")
    return "; ".join(parts)


def initial_token_scale(observed: ObservedEndpoint) -> float:
    """Server tokens per estimated token that episodes start with: the run's tools probe's count over its estimate
    (adapter/serverinfo.py), never below 1 (planning on fewer tokens than the estimate is never safe), and 1 when
    the server did not count."""
    scale = observed.tools.token_scale if observed.tools is not None else None
    return 1.0 if scale is None else min(max(scale, 1.0), MAX_SCALE)


def first_prompt_tokens(bounds: Bounds, scale: float) -> int:
    """The server tokens the first request of an episode takes at most, planned as the loop plans it: the system
    prompt, the instruction (a short one) with an observation of `observation_chars`, the tool schemas unless in the
    text protocol, and the reply's room."""
    text = bounds.tool_mode == "text"
    messages = [{"role": "system", "content": system_prompt(text_protocol_mode=text)},
                {"role": "user", "content": first_message("", "")}]
    estimated = (sum(estimate_tokens(json.dumps(m)) for m in messages) + text_tokens("x" * bounds.observation_chars)
                 + (0 if text else estimate_tokens(json.dumps(tool_schemas()))))
    return math.ceil(estimated * scale) + bounds.max_response_tokens


def context_too_small(bounds: Bounds, scale: float) -> str | None:
    """Why the planned context cannot hold one observation (episodes would end `context_exhausted` before any reply
    reached the model), or None. In auto mode an episode goes over to the text protocol when the schemas do not
    fit, so the text protocol's size decides there."""
    fallback = bounds.model_copy(update={"tool_mode": "text"}) if bounds.tool_mode == "auto" else bounds
    needed = first_prompt_tokens(fallback, scale)
    if needed <= bounds.context_tokens:
        return None
    return (f"the context ({bounds.context_tokens} tokens) cannot hold one observation: the first prompt takes up to "
            f"{needed} tokens with its reply's room (an observation of {bounds.observation_chars} characters at "
            f"{scale:.2f} server tokens per estimated token); episodes may end context_exhausted before the model "
            f"replies once (served a larger context: llama.cpp's -c, llama-cpp-python's --n_ctx, they would)")


def endpoint_lines(configured: Bounds, planned: Bounds, observed: ObservedEndpoint) -> list[str]:
    """The run's first lines about its endpoint: what the server's word changed in the bounds, and a warning when
    the planned context cannot hold one observation."""
    lines = []
    if planned != configured:
        lines.append(f"endpoint: {describe_planned(configured, planned, observed)}")
    if (too_small := context_too_small(planned, initial_token_scale(observed))) is not None:
        lines.append(f"endpoint: WARNING {too_small}")
    return lines + unchecked_lines(planned, observed)


def unchecked_lines(planned: Bounds, observed: ObservedEndpoint) -> list[str]:
    """Loud lines for what the run's probes could not check where episodes depend on it: tool schemas in a mode that
    sends them, tool results where episodes send them in tool messages."""
    lines = []
    if planned.tool_mode != "text" and observed.tools is not None and observed.tools.verdict == "not_checked":
        lines.append(f"endpoint: WARNING tools: {not_checked_text(observed.tools.detail)}: whether the tool schemas "
                     "reach the model is unknown")
    results = observed.tool_results
    if planned.tool_mode != "text" and results is not None and results.verdict == "not_checked":
        lines.append(f"endpoint: WARNING tool results: {not_checked_text(results.detail)}: whether the model sees "
                     "each page after a tool call is unknown")
    return lines


def not_checked_text(because: str | None) -> str:
    """A probe that decided nothing, and why (the report's words too)."""
    return f"not checked, because {because}" if because else "not checked"
