"""Content hashes of our code and the versions of what we run on."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from pathlib import Path

import httpx

from adapter.actions import text_protocol, tool_schemas
from adapter.prompts import system_prompt
from adapter.serverinfo import PROBE_TIMEOUT_S, fetch_json
from adapter.transcript import server_headers
from computerops.core.hashing import canonical_sha256
from computerops.runs.records import ObservedEndpoint

PACKAGES = ("sites", "adapter", "verifier", "tasks", "replays", "computerops")
_CODE_SUFFIXES = {".py", ".html", ".js", ".css", ".yaml"}
CHECKOUT_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding our packages (the checkout, or the site-packages of an install)."""


def package_sha256(package: str, root: Path = CHECKOUT_ROOT) -> str:
    """sha256 over (relative path, bytes) of every source file of a package, in path order."""
    digest = hashlib.sha256()
    base = root / package
    for path in sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in _CODE_SUFFIXES
                       and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def code_hashes() -> dict[str, str]:
    return {package: package_sha256(package) for package in PACKAGES}


def protocol_hashes() -> dict[str, str]:
    """sha256 of what the model is shown besides the pages: both system prompts and the action schemas."""
    return {
        "system_prompt": canonical_sha256(system_prompt(text_protocol_mode=False)),
        "system_prompt_text_protocol": canonical_sha256(system_prompt(text_protocol_mode=True)),
        "tool_schemas": canonical_sha256(tool_schemas()),
        "text_protocol": canonical_sha256(text_protocol()),
    }


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions(chromium: str | None) -> dict[str, str | None]:
    return {
        "computerops": _version("computerops"),
        "python": platform.python_version(),
        "playwright": _version("playwright"),
        "openai": _version("openai"),
        "chromium": chromium,
    }




def models_refusal(observed: ObservedEndpoint, base_url: str) -> str | None:
    """Why an `openai` endpoint cannot be used, from its GET /models answer: no answer, or one that is not a model
    list (an error status with a JSON body, such as a 404 {"detail": "Not Found"} at a base URL without /v1, is no
    model list either); None when it listed models. Hints /v1 where the base URL lacks it."""
    if observed.models_error is None:
        return None
    payload = observed.models_payload
    if isinstance(payload, dict) and isinstance(payload.get("data"), list):
        return None  # an error status, but a model list: the server answered what was asked
    hint = ("" if base_url.rstrip("/").endswith("/v1") else
            f" (OpenAI-compatible servers serve their API under /v1: try --base-url {base_url.rstrip('/')}/v1)")
    return f"endpoint {base_url} did not answer GET /models with a model list: {observed.models_error}{hint}"


async def observe_endpoint(base_url: str, api_key: str) -> ObservedEndpoint:
    """GET {base_url}/models as the endpoint answers it, read within bounds (`serverinfo.fetch_json`: a hostile
    answer cannot crash the run or its manifest); failures are recorded, not guessed around."""
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S) as client:
        answer = await fetch_json(client, "GET", f"{base_url}/models", headers={"Authorization": f"Bearer {api_key}"})
    if answer.status is None:
        return ObservedEndpoint(models_error=answer.error, models_unreachable=not answer.timed_out,
                                server_headers=server_headers(answer.headers))
    if answer.error:
        return ObservedEndpoint(models_error=answer.error, server_headers=server_headers(answer.headers))
    headers = server_headers(answer.headers)
    if answer.status != 200:
        return ObservedEndpoint(models_payload=answer.payload, models_error=f"HTTP {answer.status}",
                                server_headers=headers)
    return ObservedEndpoint(models_payload=answer.payload, server_headers=headers)
