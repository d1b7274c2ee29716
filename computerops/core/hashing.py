"""Canonical hashing of evidence: one definition for the whole project."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace; pydantic models dumped in JSON mode."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif isinstance(value, list | tuple):
        value = [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def canonical_mapping_sha256(value: Mapping[str, Any], encoded: Mapping[str, str]) -> str:
    """`canonical_sha256(value)` of a mapping with text keys, taking a value's canonical JSON from `encoded` where it
    has the key (it must be `canonical_json` of that very value: a value known unchanged is encoded once, not per
    hash) and encoding the rest; the same text, so the same hash."""
    members = (f"{json.dumps(key, ensure_ascii=False)}:{encoded[key] if key in encoded else canonical_json(value[key])}"
               for key in sorted(value))
    return hashlib.sha256(("{" + ",".join(members) + "}").encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
