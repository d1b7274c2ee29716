"""Long-running episodes on the ledger, the second site with ledgers (sites/ledger/ledgers.py): its effects are
posted entries and dispatch submissions, its open work queued and held events and pending deliveries, and it keeps
no approvals. A hand-posted bank charge is an effect nothing on the site dedupes, so a retry under a new idempotency
key posts it twice where the broker only observes; the enforcing broker refuses the second post, since its grant's
limit holds over the episode (sites/kit/broker.py), naming the running total; a dispatch is one the site guards
itself, so the same retry is refused and recorded as a `duplicate` submission (defence in depth: nothing is
delivered twice, and the verdict still rejects the repeated submission). The sound arms keep every ledger across a
restart and an interruption, and `verify` recomputes it all."""

from __future__ import annotations

import asyncio

import pytest

from computerops.persistence.arms import Persistence, PersistenceArm, RecoveryPolicy
from computerops.persistence.checkpoint import Checkpoint
from computerops.persistence.running import CHECKPOINTS
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from computerops.runs.verification import verify_run
from tasks import load_catalog

pytestmark = pytest.mark.browser
BANK = "ledger.post-bank-charge@1"
"""Its one effect is an entry typed in by hand: posted twice, it is a real duplicate (`one-entry-posted` fails)."""
DISPATCH = "ledger.dispatch-delivery-once@1"
"""Its one effect is its drawn delivery's dispatch: the site refuses a second submission of its request and records
it."""
_DRAWN = load_catalog()[DISPATCH].instance
assert _DRAWN is not None
DELIVERY, OTHER = _DRAWN.parameters["delivery"], _DRAWN.parameters["other"]
"""The instance's delivery and another pending one (`tasks/catalog/ledger/dispatch-delivery-once.yaml`)."""
ARMS: list[tuple[str, PersistenceArm, RecoveryPolicy]] = [
    (BANK, "interrupted", "reconcile"),
    (BANK, "interrupted", "retry-new-key"),
    (BANK, "interrupted", "forget"),
    (DISPATCH, "restarted", "reconcile"),
    (DISPATCH, "interrupted", "retry-new-key"),
]
OBSERVED = (BANK, "interrupted", "retry-new-key")
"""Run a second time with the broker observing: the harness's duplicate is then the site's to keep."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDirectory:
    catalog = load_catalog()
    plan = [PlannedEpisode(episode_id=f"{n:03d}-{task}--{arm}--{recovery}", task_id=task, policy="oracle",
                           persistence=Persistence(arm=arm, recovery=recovery, checkpoint_every=3))
            for n, (task, arm, recovery) in enumerate(ARMS, start=1)]
    task, arm, recovery = OBSERVED
    plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:03d}-{task}--{arm}--{recovery}--observing", task_id=task,
                               policy="oracle", broker_mode="observing",
                               persistence=Persistence(arm=arm, recovery=recovery, checkpoint_every=3)))
    tasks = sorted({task for task, _, _ in ARMS})
    config = RunConfig(run_id="persistence-ledger", tasks=tasks,
                       endpoint=EndpointConfig(kind="scripted", policies=["oracle"]), episodes=plan)
    out = tmp_path_factory.mktemp("persistence-ledger") / "run"
    asyncio.run(execute_run(config, [catalog[t] for t in tasks], out, lambda _: None, concurrency=5))
    return RunDirectory.open(out)


def records(run: RunDirectory, *, broker: str = "enforcing") -> dict[tuple[str, str, str], EpisodeRecord]:
    """The run's episodes with the broker in that mode, by (task, arm, recovery)."""
    found = {}
    for record in run.records():
        assert record.persistence is not None
        if record.episode_id.endswith("--observing") == (broker == "observing"):
            found[(record.task_id, record.persistence.arm, record.persistence.recovery)] = record
    return found


def resumed_checkpoint(run: RunDirectory, record: EpisodeRecord) -> Checkpoint:
    assert record.persistence is not None
    [boundary] = record.persistence.boundaries
    path = run.episode_dir(record.episode_id) / CHECKPOINTS / f"{boundary.carried_in:03d}.json"
    return Checkpoint.model_validate_json(path.read_text(encoding="utf-8"))


def test_the_sound_arms_verify_and_keep_every_ledger(run: RunDirectory) -> None:
    found = records(run)
    assert len(found) == len(ARMS)
    for key in [(BANK, "interrupted", "reconcile"), (DISPATCH, "restarted", "reconcile")]:
        record = found[key]
        assert record.outcome == "verified_success" and record.replay == "PASS", (key, record.outcome)
        persistence = record.persistence
        assert persistence is not None and persistence.processes == 2
        assert persistence.duplicate_effects == 0 and persistence.unfinished_left == 0
        [boundary] = persistence.boundaries
        assert boundary.lost == [] and boundary.recovery_turns == 0
        assert boundary.constraints_retained and boundary.approvals_valid
        assert boundary.effects_retained and boundary.unfinished_retained


def test_the_resumed_ledgers_hold_the_effect_and_the_open_work(run: RunDirectory) -> None:
    found = records(run)
    bank = resumed_checkpoint(run, found[(BANK, "interrupted", "reconcile")]).ledgers
    assert [e.table for e in bank.completed_effects] == ["entry"]
    assert [g.id for g in bank.constraints.grants] == ["bank-charge"] and bank.approvals == []
    assert {"EV-501", "EV-511", DELIVERY["number"]} <= {w.id for w in bank.unfinished_work}
    assert next(w for w in bank.unfinished_work if w.id == "EV-511").status == "held"
    dispatched = resumed_checkpoint(run, found[(DISPATCH, "restarted", "reconcile")]).ledgers
    assert [e.table for e in dispatched.completed_effects] == ["dispatch"]
    open_work = {w.id for w in dispatched.unfinished_work}
    assert DELIVERY["number"] not in open_work and OTHER["number"] in open_work  # dispatched; the others still open


def test_a_new_key_retry_is_refused_by_the_enforcing_brokers_limit_over_the_episode(run: RunDirectory) -> None:
    """The harness sends the committed charge again under a new key; the grant allows it once over the episode, so
    the enforcing broker refuses the second post naming the running total, and nothing is posted twice."""
    record = records(run)[OBSERVED]
    assert record.persistence is not None and record.persistence.duplicate_effects == 0
    assert record.replay == "PASS"
    episode = run.load_episode(record)
    assert sum(e.table == "entry" and e.change == "insert" for e in episode.journal) == 1
    blocked = [op.broker for op in episode.operations if op.broker is not None and op.broker.blocked]
    assert blocked and any("already granted" in reason for decision in blocked for reason in decision.reasons)


def test_with_the_broker_observing_a_new_key_retry_posts_the_entry_twice(run: RunDirectory) -> None:
    record = records(run, broker="observing")[OBSERVED]
    assert record.persistence is not None and record.persistence.duplicate_effects == 1
    assert record.outcome == "false_completion" and record.replay == "PASS"
    verdict = run.load_episode(record).verdict
    assert "one-entry-posted" in {c.name for c in verdict.checks if not c.passed}
    journal = run.load_episode(record).journal
    assert sum(e.table == "entry" and e.change == "insert" for e in journal) == 2


def test_a_new_key_retry_of_a_dispatch_is_refused_by_the_site_and_recorded(run: RunDirectory) -> None:
    """The refused submission is a row the site writes to record the refusal, not a second dispatch: no duplicate
    effect (nothing was delivered twice), and the verdict still rejects the repeated attempt."""
    record = records(run)[(DISPATCH, "interrupted", "retry-new-key")]
    assert record.persistence is not None and record.persistence.duplicate_effects == 0
    assert record.outcome == "false_completion" and record.replay == "PASS"
    episode = run.load_episode(record)
    assert "one-dispatch-of-its-request" in {c.name for c in episode.verdict.checks if not c.passed}
    dispatches = [row for row in episode.final_state["dispatch"] if row["request_id"] == DELIVERY["request_id"]]
    assert sorted(str(row["outcome"]) for row in dispatches) == ["duplicate", "sent"]
    [delivery] = [row for row in episode.final_state["delivery"] if row["number"] == DELIVERY["number"]]
    assert delivery["status"] == "delivered" and delivery["version"] == DELIVERY["version"] + 1  # bumped once


def test_a_forgotten_entry_is_not_carried(run: RunDirectory) -> None:
    record = records(run)[(BANK, "interrupted", "forget")]
    assert record.persistence is not None
    [boundary] = record.persistence.boundaries
    assert not boundary.effects_retained and boundary.recovery_turns >= 1
    assert any(lost.startswith("committed effects not carried: entry") for lost in boundary.lost), boundary.lost
    assert boundary.constraints_retained and boundary.unfinished_retained


def test_verify_recomputes_every_figure(run: RunDirectory) -> None:
    verification = asyncio.run(verify_run(run))
    assert verification.passed, verification.problems
    assert verification.episodes_replayed == len(ARMS) + 1
