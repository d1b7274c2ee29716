"""The replay receipt: hashes of what was compared and PASS/FAIL with reasons."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from computerops.core.formats import Versioned

RECEIPT_FORMAT: Literal["computerops.receipt/1"] = "computerops.receipt/1"


class Receipt(Versioned):
    """PASS means the saved operations, re-run on a fresh tenant, gave the same statuses, response
    digests, journal, final state and verdict. It says nothing about task success."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.receipt/1"] = RECEIPT_FORMAT
    episode_id: str
    task_id: str
    task_sha256: str
    site: str
    seed: int
    operations: int
    operations_sha256: str
    journal_sha256: str
    replayed_journal_sha256: str
    final_state_sha256: str
    replayed_final_state_sha256: str
    verdict_sha256: str
    replayed_verdict_sha256: str
    result: Literal["PASS", "FAIL"]
    mismatches: list[str]

    @property
    def first_mismatch(self) -> str | None:
        return self.mismatches[0] if self.mismatches else None
