"""What the helpdesk seeds for a seed, counted from its seeded rows: the codes the site gives what an agent creates
next (codes follow the highest id, and the seed has fixed and per-seed follow-ups, approval requests and
escalations), and the dashboard's counts of open work. Tests name these instead of spelling FU-6 or AR-4."""

from __future__ import annotations

from dataclasses import dataclass

from sites.kit.seeding import seeded_rows
from sites.registry import site_definitions


@dataclass(frozen=True)
class SeededWork:
    """The next codes and the open work of one seed's helpdesk."""

    follow_ups: int
    requests: int
    answers: int
    escalations: int
    open_follow_ups: int
    waiting_escalations: int

    def follow_up(self, nth: int = 1) -> str:
        """The code of the `nth` follow-up an agent's operations open."""
        return f"FU-{self.follow_ups + nth}"

    @property
    def request(self) -> str:
        return f"AR-{self.requests + 1}"

    @property
    def escalation(self) -> str:
        return f"E-{self.escalations + 1}"


def seeded_work(seed: int = 1) -> SeededWork:
    rows = seeded_rows(site_definitions()["helpdesk"], seed)
    return SeededWork(
        follow_ups=len(rows["follow_up"]),
        requests=len(rows["approval_request"]),
        answers=len(rows["approval_answer"]),
        escalations=len(rows["escalation"]),
        open_follow_ups=sum(row["status"] == "open" for row in rows["follow_up"]),
        waiting_escalations=sum(row["status"] == "waiting" for row in rows["escalation"]),
    )
