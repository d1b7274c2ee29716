"""The operation context: what one request of a tenant may know about itself.

The operation middleware builds it; handlers reach it through `request.state` (see `deps`), and
the journal hook reads it from `session.info`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sites.kit.clock import LogicalClock
from sites.kit.faults import FaultDecision
from sites.kit.shown import ShownRecorder

STATE_OPERATION = "computerops_operation"
"""Key of the `OperationContext` in the ASGI scope state (`request.state`)."""
STATE_TENANT = "computerops_tenant"
"""Key of the `Tenant` in the ASGI scope state."""


def operation_rng(site: str, seed: int, seq: int) -> random.Random:
    """The generator of one operation: the same (site, seed, seq) always draws the same values."""
    return random.Random(f"{site}:{seed}:{seq}")


def template_rng(site: str, seed: int) -> random.Random:
    """The generator that seeds the template database of (site, seed)."""
    return random.Random(f"{site}:{seed}:template")


@dataclass
class OperationContext:
    """One request of a tenant: its sequence number, logical time, randomness and adapter action."""

    site: str
    seed: int
    seq: int
    action: int | None = None
    fault: FaultDecision | None = None
    """The fault injected into this operation, for the sites that take part in one (partial success)."""
    discard: bool = False
    """Set by a false-success fault: the handler runs and answers as usual, but nothing is committed."""
    shown: ShownRecorder = field(default_factory=ShownRecorder, repr=False)
    """What the response shows, as its page renders (`sites.kit.shown`)."""
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.rng = operation_rng(self.site, self.seed, self.seq)

    @property
    def logical_time(self) -> int:
        """Logical time equals the operation's sequence number."""
        return self.seq

    @property
    def clock(self) -> LogicalClock:
        """The clock at this operation's logical time."""
        return LogicalClock(self.logical_time)
