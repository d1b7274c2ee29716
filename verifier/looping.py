"""The recovery-loop detector `write-intent/1`: repeated equal write intents that never took effect.

A pure function of an episode's operation log (`sites.kit.records.Operation`). Its rules, version 1:

1. Only operations the agent caused count: `action` is not None and above 0 (0 is the start page the harness
   opens; None is a request no action named). `actions` is their number, `state_reads` how many are GET.
2. Every other method (POST, PUT, PATCH, DELETE, ...) is a *write/process intent*. Its fingerprint is
   (method, path, fields), where `fields` are the urlencoded form fields of the body and of the query string,
   sorted, without the fields whose name matches `IGNORED_FIELD` (request ids, idempotency keys, versions,
   tokens, nonces, CSRF): a retry with a fresh request id or a re-read version is the same intent. The path is
   kept as it is, since it names the record. A body that is not a urlencoded form (by its content type) is
   one opaque field.
3. A *durable effect* is an intent whose operation caused journal rows (`journal_rows > 0`). It ends a segment:
   every count starts again at 0, and the effect's own intent is not counted in the new segment.
4. Reads never end a segment, not even a GET that happened to write journal rows (metadata changing while the
   requested delivery does not progress is context, not recovery); nor do requests of the harness.
5. `largest_repeat` is the largest count of one fingerprint in the final segment (after the last durable
   effect; 0 when that segment has no intent), and the episode is a `loop` when it reaches `LOOP_THRESHOLD`.

The detector covers write loops only; a planning or read-only loop is not one of its findings. A changed rule
is a new `DETECTOR` version, never a silent rewrite of an old one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict

from sites.kit.records import Operation


class LoopStats(BaseModel):
    """What the loop detector (verifier/looping.py, versioned) found in an episode's operations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    detector: str
    """Detector name and version, e.g. `write-intent/1`; a changed rule is a new version, never a silent rewrite."""
    actions: int
    """Operations the agent caused (requests with an action number above 0)."""
    state_reads: int
    """GET operations among them."""
    largest_repeat: int
    """Largest count of equal write/process intents in the final segment without a durable effect."""
    loop: bool
    """largest_repeat reached the detector's threshold (3)."""


DETECTOR = "write-intent/1"
"""Name and version of the rules above."""
LOOP_THRESHOLD = 3
"""Equal intents in the final no-effect segment that make a loop."""
IGNORED_FIELD = re.compile(r"(?i)(request_?id|idempotency|version|token|nonce|csrf)")
"""Field names left out of a fingerprint: identifiers of a try, not of the intent (searched, not anchored)."""
READ_METHOD = "GET"

Fingerprint = tuple[str, str, tuple[tuple[str, str], ...]]


def agent_operations(operations: Sequence[Operation]) -> list[Operation]:
    """The operations an agent action caused (action above 0), in log order."""
    return [op for op in operations if op.action is not None and op.action > 0]


def _fields(text: str) -> list[tuple[str, str]]:
    return [(name, value) for name, value in parse_qsl(text, keep_blank_values=True)
            if not IGNORED_FIELD.search(name)]


def fingerprint(operation: Operation) -> Fingerprint:
    """(method, path, sorted fields without request ids and versions) of a write/process intent."""
    content_type = (operation.content_type or "").split(";")[0].strip().lower()
    if content_type in ("", "application/x-www-form-urlencoded"):
        body = _fields(operation.body)
    else:
        body = [("", operation.body)]
    return operation.method.upper(), operation.path, tuple(sorted(body + _fields(operation.query)))


def loop_stats(operations: Sequence[Operation]) -> LoopStats:
    """What `write-intent/1` finds in one episode's operations (in log order)."""
    agent = agent_operations(operations)
    reads = 0
    counts: Counter[Fingerprint] = Counter()
    for operation in agent:
        if operation.method.upper() == READ_METHOD:
            reads += 1
        elif operation.journal_rows > 0:
            counts = Counter()
        else:
            counts[fingerprint(operation)] += 1
    largest = max(counts.values(), default=0)
    return LoopStats(detector=DETECTOR, actions=len(agent), state_reads=reads, largest_repeat=largest,
                     loop=largest >= LOOP_THRESHOLD)
