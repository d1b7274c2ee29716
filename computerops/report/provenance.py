"""Provenance: what the operator claimed the endpoint is (the run's config) beside what the endpoint and its replies
said about themselves. Unknown values (provenance nobody recorded) stay None; nothing is guessed, and a claim is not
checked by being recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from adapter.serverinfo import ObservedContext, ToolResultsProbe, ToolsProbe
from computerops.report.figures import FROZEN
from computerops.runs.limits import describe_planned, not_checked_text, planned_bounds
from computerops.runs.records import EpisodeRecord, RunManifest


class ClaimedEndpoint(BaseModel):
    """What the operator said the endpoint is (the run's config); None where nothing was given."""

    model_config = FROZEN

    kind: str
    base_url: str | None
    model: str | None
    artifact_sha256: str | None


class ObservedEndpointSummary(BaseModel):
    """What the endpoint and its replies said about themselves; None where nothing was recorded."""

    model_config = FROZEN

    models_payload_ids: list[str] | None
    """The ids in the endpoint's GET /models answer, when it answered in the OpenAI shape."""
    models_error: str | None
    models_seen: list[str]
    """Every `model` the replies named, over all episodes."""
    fingerprints_seen: list[str]
    """Every `system_fingerprint` the replies carried, over all episodes."""
    reply_headers_seen: list[str]
    """Every `name: value` server header of the replies (x-request-id left out), over all episodes."""
    server_headers: dict[str, str] | None
    context: ObservedContext | None = None
    """The context the server said it serves, and where (adapter/serverinfo.py)."""
    tools: ToolsProbe | None = None
    """What the server did with tool schemas in the run's probe."""
    tool_results: ToolResultsProbe | None = None
    """What the server did with a tool message's content in the run's probe."""


def context_text(context: ObservedContext | None) -> str:
    return "not stated" if context is None else f"{context.tokens} tokens ({context.source})"


def _probe_text(verdict: str, detail: str | None, counts: tuple[tuple[int | None, str], tuple[int | None, str]]) -> str:
    """A probe's verdict, with its two prompt counts (each with what it counted) when both are known; a probe that
    decided nothing says why (`not checked, because ...`)."""
    if verdict == "not_checked":
        return not_checked_text(detail)
    (first, first_words), (second, second_words) = counts
    said = "" if first is None or second is None else f", {first} prompt tokens {first_words}, {second} {second_words}"
    return verdict.replace("_", " ") + said + (f": {detail}" if detail else "")


def tools_text(tools: ToolsProbe | None) -> str:
    if tools is None:
        return "not probed"
    return _probe_text(tools.verdict, tools.detail, ((tools.with_tools_prompt_tokens, "with the schemas"),
                                                     (tools.without_tools_prompt_tokens, "without")))


def tool_results_text(probe: ToolResultsProbe | None) -> str:
    if probe is None:
        return "not probed"
    return _probe_text(probe.verdict, probe.detail, ((probe.long_result_prompt_tokens, "with a long result"),
                                                     (probe.short_result_prompt_tokens, "with a short one")))


class Provenance(BaseModel):
    """Claimed and observed kept apart: a claim is not checked by being recorded."""

    model_config = FROZEN

    claimed: ClaimedEndpoint | None
    observed: ObservedEndpointSummary
    model_mismatch: str | None = None
    """Set when the claimed model is not among those the endpoint's GET /models lists: servers that serve one
    model file (llama.cpp, LM Studio) echo whatever model name a request gives, so replies naming the claim prove
    nothing."""
    planned_from_server: str | None = None
    """What the server's own word changed in the bounds the episodes ran with (computerops/runs/limits.py), or None."""



def _payload_ids(payload: Any) -> list[str] | None:
    """The model ids of an OpenAI-shaped GET /models answer ({"data": [{"id": ...}]}); None for any other shape."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    ids = [item.get("id") for item in payload["data"] if isinstance(item, dict)]
    return [i for i in ids if isinstance(i, str)] if all(isinstance(i, str) for i in ids) else None


MODEL_FILE_SUFFIXES = (".gguf", ".ggml", ".bin", ".safetensors", ".llamafile")
"""File suffixes of model files: a server that serves one file (llama.cpp, llama-cpp-python) lists it by its path."""


def names_served(claim: str, served: str) -> bool:
    """Whether a claimed model name names a served id: the id itself, or the file it lists (`tiny` or `tiny.gguf`
    for `/models/tiny.gguf`)."""
    if claim == served:
        return True
    base = served.replace("\\", "/").rsplit("/", 1)[-1]
    stem = next((base[: -len(s)] for s in MODEL_FILE_SUFFIXES if base.lower().endswith(s)), None)
    return claim in (base, stem)


def model_mismatch(claimed: ClaimedEndpoint | None, served: list[str] | None, in_replies: list[str]) -> str | None:
    """Why the claimed model is not shown to be the one that answered, or None (no claim or no list to compare)."""
    if claimed is None or claimed.kind != "openai" or not claimed.model or served is None:
        return None
    if any(names_served(claimed.model, s) for s in served):
        return None
    echoed = f"; the replies named {', '.join(in_replies)}" if in_replies else ""
    return (f"the run claimed model {claimed.model!r}, but the endpoint's GET /models lists "
            f"{', '.join(served) or 'no model'}{echoed} (a server that serves one model file echoes any name asked)")


def provenance(records: Sequence[EpisodeRecord], manifest: RunManifest | None) -> Provenance:
    """Claimed (the run config's endpoint) beside observed (what the endpoint and its replies said); what the
    manifest would say is None without it."""
    claimed = None
    observed_endpoint = manifest.endpoint_observed if manifest is not None else None
    if manifest is not None:
        endpoint = manifest.config.endpoint
        claimed = ClaimedEndpoint(kind=endpoint.kind, base_url=endpoint.base_url, model=endpoint.model,
                                  artifact_sha256=endpoint.artifact_sha256)
    served = _payload_ids(observed_endpoint.models_payload) if observed_endpoint else None
    return Provenance(
        claimed=claimed,
        model_mismatch=model_mismatch(claimed, served, sorted({m for r in records for m in r.models_seen})),
        observed=ObservedEndpointSummary(
            models_payload_ids=_payload_ids(observed_endpoint.models_payload) if observed_endpoint else None,
            models_error=observed_endpoint.models_error if observed_endpoint else None,
            models_seen=sorted({m for r in records for m in r.models_seen}),
            fingerprints_seen=sorted({f for r in records for f in r.fingerprints_seen}),
            reply_headers_seen=sorted({h for r in records for h in r.reply_headers_seen}),
            server_headers=dict(observed_endpoint.server_headers) if observed_endpoint else None,
            context=observed_endpoint.context if observed_endpoint else None,
            tools=observed_endpoint.tools if observed_endpoint else None,
            tool_results=observed_endpoint.tool_results if observed_endpoint else None,
        ),
        planned_from_server=(describe_planned(manifest.config.bounds,
                                              planned_bounds(manifest.config.bounds, observed_endpoint),
                                              observed_endpoint) or None)
        if manifest is not None and observed_endpoint is not None else None,
    )
