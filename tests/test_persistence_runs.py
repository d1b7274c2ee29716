"""Long-running episodes through a real Chromium in real child processes (computerops/persistence/): each arm
completes and verifies; the `interrupted` arm's harness is SIGKILLed between the commit of its first effect and the
agent seeing it, and the sound recovery policies do that effect exactly once while the mutants are caught — a retry
under a new idempotency key by the duplicate it makes (and the verdict), a forgotten commit by the resumed ledger
that lacks it. Every episode replays PASS and `verify` recomputes every figure."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapter.actions import NO_ANSWER
from adapter.transcript import AgentTranscript, Bounds
from computerops.cli.main import app
from computerops.persistence.agent import CHECKPOINT_KEY_VARIABLE, REFUSED_EXIT, AgentLaunch
from computerops.persistence.arms import CompactionPolicy, Persistence, PersistenceArm, RecoveryPolicy
from computerops.persistence.checkpoint import Checkpoint
from computerops.persistence.running import CHECKPOINTS, PERSISTENCE_LOG, PersistenceLog
from computerops.report.layout import report_view
from computerops.report.run import report_json, summarize
from computerops.report.tables import Table
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from computerops.runs.verification import verify_run
from tasks import load_catalog

pytestmark = pytest.mark.browser
NOTIFY = "helpdesk.notify-and-close-follow-up@1"
"""Its first effect is a notification: sent twice, the verdict rejects it (`the-customer-notified-once`)."""
DELAYED = "helpdesk.refund-after-delayed-approval@1"
"""Its first effect is the approval request: restarted right after it, the resumed agent finds the approval pending."""
REFUND = "helpdesk.refund-with-approval@1"
"""Its first effect is a refund bound to a one-use approval: the site itself refuses a second one."""
ARMS: list[tuple[str, PersistenceArm, RecoveryPolicy, CompactionPolicy]] = [
    (NOTIFY, "uninterrupted", "reconcile", "ledgers/1"),
    # NOTIFY's restarted arm is the command-line test's episode (test_run_persistence_from_the_command_line), which
    # checks it as `test_every_sound_arm_verifies_with_each_effect_done_once` checks these.
    (DELAYED, "restarted", "reconcile", "ledgers/1"),
    (NOTIFY, "interrupted", "reconcile", "ledgers/1"),
    (NOTIFY, "interrupted", "retry-same-key", "ledgers/1"),
    (NOTIFY, "interrupted", "retry-new-key", "ledgers/1"),
    (NOTIFY, "interrupted", "forget", "ledgers/1"),
    (REFUND, "interrupted", "retry-new-key", "ledgers/1"),
    (REFUND, "compacted", "reconcile", "ledgers/1"),
    (REFUND, "compacted", "reconcile", "ledgers/1:drop-currency"),
    (REFUND, "compacted", "reconcile", "ledgers/1:changed-amount"),
    (REFUND, "compacted", "reconcile", "model/1"),
]


def slug(policy: str) -> str:
    return policy.replace(":", "-").replace("/", "")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDirectory:
    catalog = load_catalog()
    endpoint = EndpointConfig(kind="scripted", policies=["oracle"])
    # The broker only observes, as in experiments/persistence-v1.yaml: the tasks' grants allow one effect each
    # (`count: 1`), so an enforcing broker would refuse the mutants' duplicate and hide the harness defect.
    plan = [PlannedEpisode(episode_id=f"{n:03d}-{task}--{arm}--{recovery}--{slug(compaction)}", task_id=task,
                           policy="oracle", persistence=Persistence(arm=arm, recovery=recovery, compaction=compaction,
                                                   checkpoint_every=3), broker_mode="observing")
            for n, (task, arm, recovery, compaction) in enumerate(ARMS, start=1)]
    tasks = sorted({task for task, _, _, _ in ARMS})
    config = RunConfig(run_id="persistence", tasks=tasks, endpoint=endpoint, episodes=plan)
    out = tmp_path_factory.mktemp("persistence") / "run"
    asyncio.run(execute_run(config, [catalog[t] for t in tasks], out, lambda _: None, concurrency=2))
    return RunDirectory.open(out)


def records(run: RunDirectory) -> dict[tuple[str, str, str], EpisodeRecord]:
    """The run's records by (task, arm, recovery), the compacted arm's by (task, arm, compaction policy)."""
    found = {}
    for record in run.records():
        assert record.persistence is not None
        found[(record.task_id, record.persistence.arm, record.persistence.policy)] = record
    return found


def log_of(run: RunDirectory, record: EpisodeRecord) -> PersistenceLog:
    return PersistenceLog.model_validate_json(
        (run.episode_dir(record.episode_id) / PERSISTENCE_LOG).read_text(encoding="utf-8"))


def test_every_sound_arm_verifies_with_each_effect_done_once(run: RunDirectory) -> None:
    found = records(run)
    for (_, arm, recovery), record in found.items():
        assert record.replay == "PASS", record.episode_id
        persistence = record.persistence
        assert persistence is not None and persistence.checkpoints >= 3
        if recovery in ("reconcile", "retry-same-key", "ledgers/1"):
            assert record.outcome == "verified_success", (record.episode_id, record.outcome)
            assert persistence.duplicate_effects == 0 and persistence.unfinished_left == 0
            assert all(b.effects_retained and b.constraints_retained and b.approvals_valid and b.unfinished_retained
                       for b in persistence.boundaries), persistence.boundaries
        if arm == "uninterrupted":
            assert persistence.processes == 1 and persistence.boundaries == []
        elif arm == "compacted":
            assert persistence.processes == 1 and [b.kind for b in persistence.boundaries] == ["compaction"]
        else:
            assert persistence.processes == 2 and len(persistence.boundaries) == 1
            first = log_of(run, record).processes[0]
            assert first.signal == signal.SIGKILL.name and first.killed_by_run and first.exit_status is None


def test_the_interrupted_harness_died_between_the_commit_and_the_agent_seeing_it(run: RunDirectory) -> None:
    record = records(run)[(NOTIFY, "interrupted", "reconcile")]
    episode = run.load_episode(record)
    sent = [op for op in episode.operations if op.method == "POST" and op.journal_rows]
    notification = sent[0]
    assert notification.path == "/helpdesk/tickets/T-2003/notify"
    log = log_of(run, record)
    resumed_from = log.processes[1].resumed_from
    assert resumed_from is not None
    checkpoint = (run.episode_dir(record.episode_id) / CHECKPOINTS / f"{resumed_from:03d}.json").read_text()
    assert '"trigger":"before_effect"' in checkpoint and f'"number":{notification.action}' in checkpoint
    # The agent was told of the commit by the recovery, not by the page the request answered.
    transcript = (run.episode_dir(record.episode_id) / "transcript.json").read_text()
    assert "committed its request" in transcript
    boundary = record.persistence.boundaries[0] if record.persistence else None
    assert boundary is not None and boundary.recovery_turns == 0


def test_a_retry_under_the_same_key_is_answered_from_the_commit(run: RunDirectory) -> None:
    record = records(run)[(NOTIFY, "interrupted", "retry-same-key")]
    episode = run.load_episode(record)
    repeats = [op for op in episode.operations if op.repeat_of is not None]
    assert len(repeats) == 1 and repeats[0].journal_rows == 0
    original = next(op for op in episode.operations if op.seq == repeats[0].repeat_of)
    assert original.idempotency_key == repeats[0].idempotency_key and original.journal_rows > 0


def test_the_mutants_are_caught(run: RunDirectory) -> None:
    found = records(run)
    new_key = found[(NOTIFY, "interrupted", "retry-new-key")]
    assert new_key.persistence is not None and new_key.persistence.duplicate_effects == 1
    assert new_key.outcome != "verified_success"
    verdict = run.load_episode(new_key).verdict
    assert "the-customer-notified-once" in {c.name for c in verdict.checks if not c.passed}
    forgot = found[(NOTIFY, "interrupted", "forget")]
    assert forgot.persistence is not None
    [boundary] = forgot.persistence.boundaries
    assert not boundary.effects_retained and any("notification" in lost for lost in boundary.lost)
    assert boundary.recovery_turns >= 1
    # The refund's approval is single-use: the site refuses the new-key retry, so nothing is done twice there.
    refund = found[(REFUND, "interrupted", "retry-new-key")]
    assert refund.persistence is not None and refund.persistence.duplicate_effects == 0


def test_verify_recomputes_every_figure_and_names_a_changed_one(run: RunDirectory, tmp_path: Path) -> None:
    verification = asyncio.run(verify_run(run))
    assert verification.passed, verification.problems
    assert verification.episodes_replayed == len(ARMS)


def test_run_persistence_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    result = CliRunner().invoke(app, ["run", "--tasks", NOTIFY, "--endpoint", "scripted:oracle", "--out", str(out),
                                      "--persistence", "restarted", "--checkpoint-every", "2"])
    assert result.exit_code == 0, result.output
    cli_run = RunDirectory.open(out)
    [record] = cli_run.records()
    assert record.episode_id.endswith("--restarted") and record.persistence is not None
    assert record.outcome == "verified_success" and record.persistence.processes == 2
    # The sound arm's checks (test_every_sound_arm_verifies_with_each_effect_done_once) on NOTIFY's restart.
    persistence = record.persistence
    assert record.replay == "PASS" and persistence.checkpoints >= 3
    assert persistence.duplicate_effects == 0 and persistence.unfinished_left == 0
    [boundary] = persistence.boundaries
    assert boundary.effects_retained and boundary.constraints_retained and boundary.approvals_valid
    assert boundary.unfinished_retained
    first = log_of(cli_run, record).processes[0]
    assert first.signal == signal.SIGKILL.name and first.killed_by_run and first.exit_status is None
    refused = CliRunner().invoke(app, ["run", "--tasks", "inventory.bulk-price-paint@1", "--endpoint",
                                       "scripted:oracle", "--out", str(tmp_path / "x"), "--persistence", "restarted"])
    assert refused.exit_code == 2 and "keep no ledgers" in refused.output


def test_no_harness_process_outlives_its_episode(run: RunDirectory) -> None:
    """Every harness process group was killed when its episode ended (SIGKILL leaves no browser behind)."""
    for record in run.records():
        for process in log_of(run, record).processes:
            assert process.wall_s > 0
    def command(pid: str) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:  # it ended meanwhile
            return ""

    mine = str(run.root)  # this run's only: other tests may run beside this one
    leftovers = [pid for pid in os.listdir("/proc")
                 if pid.isdigit() and "computerops.persistence.agent" in (line := command(pid)) and mine in line]
    assert leftovers == []


def _resume_with(run: RunDirectory, tmp_path: Path, change: dict[str, object], alter: bool = False,
                 key: bytes | None = None) -> tuple[int, str]:
    """Start a real harness process resuming an episode of the run from its latest checkpoint, with the launch's
    manifest changed as given (or the checkpoint altered by one byte); its exit status and refusal."""
    tmp_path.mkdir(parents=True)
    record = records(run)[(NOTIFY, "interrupted", "reconcile")]
    directory = run.episode_dir(record.episode_id)
    checkpoint = sorted((directory / CHECKPOINTS).glob("*.json"))[-1]
    copy = tmp_path / checkpoint.name
    raw = bytearray(checkpoint.read_bytes())
    if alter:  # one letter in the middle of a run of prose (still JSON: a byte of a string's text, not its syntax)
        prose = re.compile(rb"[A-Za-z ]{12}[A-Za-z]")
        found = prose.search(bytes(raw), len(raw) // 2) or prose.search(bytes(raw))
        assert found is not None, "a checkpoint holds prose (the observations)"
        raw[found.end() - 1] ^= 0x01  # a letter stays a letter (or a backquote): the text changes, the JSON does not
    copy.write_bytes(bytes(raw))
    sealed = Checkpoint.model_validate_json(checkpoint.read_text(encoding="utf-8"))
    launch = AgentLaunch(
        manifest=sealed.manifest.model_copy(update=change), process=2, origin="http://127.0.0.1:9", token="gone",
        site="helpdesk", tenant_db=str(tmp_path / "absent.sqlite"), start_path="/helpdesk/", instruction="",
        base_url="http://127.0.0.1:9/v1", bounds=Bounds(), budget=None, finish=NO_ANSWER, token_scale=1.0,
        constraints=sealed.ledgers.constraints, checkpoints=str(tmp_path / "checkpoints"),
        transcript_out=str(tmp_path / "transcript.json"), refusal_out=str(tmp_path / "refusal.txt"),
        resume_from=str(copy))
    (tmp_path / "launch.json").write_text(launch.model_dump_json(), encoding="utf-8")
    env = {**os.environ, **({CHECKPOINT_KEY_VARIABLE: key.hex()} if key is not None else {})}
    done = subprocess.run([sys.executable, "-m", "computerops.persistence.agent", str(tmp_path / "launch.json")],
                          capture_output=True, timeout=120, check=False, env=env)
    refusal = tmp_path / "refusal.txt"
    return done.returncode, refusal.read_text(encoding="utf-8") if refusal.is_file() else done.stderr.decode()


def test_a_resume_under_a_changed_manifest_or_from_an_altered_checkpoint_is_refused(run: RunDirectory,
                                                                                    tmp_path: Path) -> None:
    status, said = _resume_with(run, tmp_path / "model", {"model": "scripted:other"})
    assert status == REFUSED_EXIT and "model" in said and "'scripted:other' now" in said, said
    status, said = _resume_with(run, tmp_path / "policy", {"policies": {"recovery": "retry-new-key",
                                                                        "compaction": "ledgers/1",
                                                                        "checkpoint_every": "3"}})
    assert status == REFUSED_EXIT and "policies.recovery" in said, said
    status, said = _resume_with(run, tmp_path / "byte", {}, alter=True)
    assert status == REFUSED_EXIT and "altered" in said, said
    status, said = _resume_with(run, tmp_path / "key", {}, key=bytes(32))  # the run's key was never written
    assert status == REFUSED_EXIT and "seal" in said, said
    assert not (tmp_path / "byte" / "checkpoints").exists()  # refused before anything else was done


def test_the_report_gives_each_arm_and_recovery_its_own_row(run: RunDirectory) -> None:
    report = summarize(run.manifest(), run.records())
    assert report.persistence is not None
    rows = {(r.arm, r.policy): r for r in report.persistence.rows}
    assert set(rows) == {(arm, compaction if arm == "compacted" else recovery) for _, arm, recovery, compaction in ARMS}
    assert rows[("uninterrupted", "reconcile")].effects_retained.denominator == 0  # no boundaries, no figure
    assert rows[("interrupted", "reconcile")].effects_retained.rate == 1.0
    assert rows[("interrupted", "forget")].effects_retained.rate == 0.0
    assert rows[("interrupted", "retry-new-key")].duplicate_effects == 1
    view = report_view(report)
    [table] = [b for b in view.blocks if isinstance(b, Table) and b.id == "persistence"]
    assert len(table.rows) == len(rows)
    assert "persistence" in json.loads(json.dumps(report_json(report)))


def test_a_compaction_keeps_every_ledger_line_and_its_mutants_are_caught(run: RunDirectory) -> None:
    found = records(run)
    sound = found[(REFUND, "compacted", "ledgers/1")].persistence
    assert sound is not None
    [boundary] = sound.boundaries
    assert boundary.kind == "compaction" and boundary.lost == []
    dropped = found[(REFUND, "compacted", "ledgers/1:drop-currency")].persistence
    assert dropped is not None
    [boundary] = dropped.boundaries
    assert not boundary.constraints_retained and not boundary.approvals_valid
    assert boundary.effects_retained and boundary.unfinished_retained
    refund = load_catalog()[REFUND].instance
    assert refund is not None
    order = refund.parameters["order"]  # the grant's limit is the total of the order the instance draws
    limit = f"at most {order['total_cents'] // 100}.{order['total_cents'] % 100:02d} {order['currency']}"
    assert any(limit in lost for lost in boundary.lost), boundary.lost
    changed = found[(REFUND, "compacted", "ledgers/1:changed-amount")].persistence
    assert changed is not None
    [boundary] = changed.boundaries
    assert boundary.constraints_retained and not boundary.approvals_valid
    # The summary replaced the older context, and the agent carried on from it to a verified success.
    record = found[(REFUND, "compacted", "ledgers/1")]
    assert record.outcome == "verified_success"
    compacted = [c for c in sorted((run.episode_dir(record.episode_id) / CHECKPOINTS).glob("*.json"))
                 if '"trigger":"compaction"' in c.read_text()]
    assert len(compacted) == 1
    checkpoint = Checkpoint.model_validate_json(compacted[0].read_text())
    assert len(checkpoint.conversation.entries) == 2 and checkpoint.compaction is not None


def test_a_restart_while_the_approval_is_pending_carries_it_as_pending_and_waits_for_it(run: RunDirectory) -> None:
    record = records(run)[(DELAYED, "restarted", "reconcile")]
    assert record.outcome == "verified_success" and record.persistence is not None
    [boundary] = record.persistence.boundaries
    assert boundary.approvals_valid and boundary.lost == []
    resumed = Checkpoint.model_validate_json(
        (run.episode_dir(record.episode_id) / CHECKPOINTS / f"{boundary.carried_in:03d}.json").read_text())
    delayed = load_catalog()[DELAYED].instance
    assert delayed is not None
    order = f"order:{delayed.parameters['order']['id']}"  # the order the instance draws
    requested = [a for a in resumed.ledgers.approvals if a.id.startswith("AR-") and a.object == order]
    assert [a.status for a in requested] == ["pending"], resumed.ledgers.approvals
    assert any(w.kind == "await-review" for w in resumed.ledgers.unfinished_work)
    # One request, one refund: the resumed agent waited for the answer instead of asking again.
    journal = run.load_episode(record).journal
    assert sum(e.table == "approval_request" and e.change == "insert" for e in journal) == 1


def test_a_model_summary_is_asked_for_recorded_and_judged_and_the_agent_carries_on(run: RunDirectory) -> None:
    """`model/1`: the scripted model's summary keeps the task and the count of actions, never having seen the
    ledgers: its boundary shows the constraints, the approval and the refund lost, while the agent, carrying on from
    the count, still finishes to a verified success."""
    record = records(run)[(REFUND, "compacted", "model/1")]
    assert record.outcome == "verified_success" and record.persistence is not None
    assert record.persistence.failed_compactions == []
    [boundary] = record.persistence.boundaries
    assert boundary.kind == "compaction"
    assert not boundary.constraints_retained and not boundary.approvals_valid and not boundary.effects_retained
    assert any(lost.startswith("approval not kept: approval ") for lost in boundary.lost), boundary.lost
    directory = run.episode_dir(record.episode_id)
    [compacted] = [c for c in (Checkpoint.model_validate_json(p.read_text())
                               for p in sorted((directory / CHECKPOINTS).glob("*.json")))
                   if c.trigger == "compaction"]
    compaction = compacted.compaction
    assert compaction is not None and compaction.policy == "model/1" and compaction.failed is None
    assert compaction.call is not None and compaction.call.prompt_tokens and compaction.call.latency_s > 0
    assert compaction.summary.startswith("Summary of the conversation so far (compaction policy model/1")
    assert "Actions carried out so far: " in compaction.summary
    assert len(compacted.conversation.entries) == 2
    # The summary's call is tokens spent, no step: the episode's tokens count it, its steps and budget do not.
    transcript = AgentTranscript.model_validate_json((directory / "transcript.json").read_text(encoding="utf-8"))
    [asked] = transcript.summaries
    assert asked.call == compaction.call and asked.after_step == compacted.conversation.next_number - 1
    steps = sum(s.call.prompt_tokens or 0 for s in transcript.steps)
    assert record.prompt_tokens == steps + compaction.call.prompt_tokens
    assert record.steps == len(transcript.steps)


def test_the_episode_page_shows_each_episodes_persistence_record(run: RunDirectory) -> None:
    """The operator server's episode view carries a long-running episode's persistence record as admitted."""
    from computerops.service.episode_view import episode_view
    for record in run.records():
        view = episode_view(run, record.episode_id)
        assert view.persistence == record.persistence and view.persistence is not None


def _harnesses_of(root: Path) -> list[int]:
    """The harness processes (computerops.persistence.agent) whose launch file is under `root`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # it ended meanwhile
            continue
        if "computerops.persistence.agent" in line and str(root) in line and state != "Z":
            found.append(int(pid))
    return found


@pytest.mark.timeout(300)
def test_a_harness_ends_with_its_run_when_the_run_is_sigkilled(tmp_path: Path) -> None:
    """A SIGKILL of the run runs none of its cleanup: the harness (a session of its own, for its browser) ended with
    it only through its lifeline (computerops/core/lifeline.py); before, it lived on and could write into the run
    directory while a resume began."""
    out = tmp_path / "killed"
    run = subprocess.Popen([sys.executable, "-c", "from computerops.cli.main import main; main()", "run", "--tasks",
                            NOTIFY, "--endpoint", "scripted:oracle", "--out", str(out), "--persistence",
                            "uninterrupted"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not (harnesses := _harnesses_of(out)) and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert harnesses, "the run started no harness process"
        time.sleep(1.0)  # into the episode
        killed_at = time.time()
        run.kill()
        run.wait()
        deadline = time.monotonic() + 15
        while _harnesses_of(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _harnesses_of(out) == [], "a harness outlived the run's SIGKILL"
        time.sleep(1.0)
        # Without the lifeline the harness lived on for seconds, found the sites gone, and wrote a checkpoint and its
        # transcript into the episode's directory 0.7 to 3.5 s after the kill (measured). A quarter second of
        # margin: a write the harness began as the run died is not one it made after.
        late = [p.relative_to(out).as_posix() for p in out.rglob("*")
                if p.is_file() and p.stat().st_mtime > killed_at + 0.25]
        assert late == [], f"written into the run directory after the run's SIGKILL: {late}"
    finally:
        run.kill()
        for pid in _harnesses_of(out):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
