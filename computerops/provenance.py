"""Content hashes of our code and the versions of what we run on."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from pathlib import Path
from typing import Any

import httpx

from adapter.actions import text_protocol, tool_schemas
from adapter.loop import server_headers
from adapter.prompts import system_prompt
from computerops.records import ObservedEndpoint
from replays import canonical_sha256

PACKAGES = ("sites", "adapter", "verifier", "tasks", "replays", "computerops")
_CODE_SUFFIXES = {".py", ".html", ".js", ".css", ".yaml"}
_ROOT = Path(__file__).resolve().parent.parent


def package_sha256(package: str, root: Path = _ROOT) -> str:
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




async def observe_endpoint(base_url: str, api_key: str) -> ObservedEndpoint:
    """GET {base_url}/models as the endpoint answers it; failures are recorded, not guessed around."""
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            response = await client.get(f"{base_url}/models", headers={"Authorization": f"Bearer {api_key}"})
    except httpx.HTTPError as exc:
        return ObservedEndpoint(models_error=f"{type(exc).__name__}: {exc}")
    headers = server_headers(response.headers)
    payload: Any
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.status_code != 200:
        return ObservedEndpoint(models_payload=payload, models_error=f"HTTP {response.status_code}",
                                server_headers=headers)
    return ObservedEndpoint(models_payload=payload, server_headers=headers)
