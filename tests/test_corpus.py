"""The golden replay corpus (replays/corpus/): it replays clean, it catches changed behaviour and changed
tasks, and re-recording unchanged behaviour gives the same bytes."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from computerops.catalog.corpus_recording import corpus_policies, record_corpus
from computerops.cli.main import app
from replays import replay_episode
from replays.corpus import CORPUS_ROOT, CorpusEntry, check_corpus, entry_files, load_entry, write_entry
from sites.registry import tenant_registry
from tasks import load_catalog

CATALOG = load_catalog()
SOLVE = "helpdesk.solve-ticket@1"
SOLVE_DIR = CORPUS_ROOT / "helpdesk" / SOLVE
ORACLE = SOLVE_DIR / "scripted-oracle.json"


def copy_task(tmp_path: Path, task_id: str = SOLVE) -> Path:
    """A corpus root in tmp_path holding a copy of one task's committed entries."""
    root = tmp_path / "corpus"
    site = CATALOG[task_id].spec.site
    shutil.copytree(CORPUS_ROOT / site / task_id, root / site / task_id)
    return root


def tamper(root: Path, name: str, **update: object) -> CorpusEntry:
    path = root / "helpdesk" / SOLVE / name
    entry = load_entry(path).model_copy(update=update)
    path.unlink()
    write_entry(root, entry)
    return entry


async def test_the_committed_corpus_replays_clean_and_covers_every_task() -> None:
    covered = CATALOG.first_instances()  # each template's first published instance
    assert len(covered) == len(CATALOG.templates)
    result = await check_corpus(CORPUS_ROOT, covered)
    assert result.messages() == []
    assert result.ok and not result.uncovered
    assert len(result.results) == sum(len(corpus_policies(t)) for t in covered.values())
    by_task: dict[str, dict[str, str]] = {}
    for path in entry_files(CORPUS_ROOT):
        entry = load_entry(path)
        by_task.setdefault(entry.task_id, {})[entry.policy] = entry.outcome
    assert sorted(by_task) == sorted(covered)
    for task_id, outcomes in by_task.items():
        assert outcomes["scripted:oracle"] == "verified_success", task_id
        assert sum(o != "verified_success" for o in outcomes.values()) >= 2, (task_id, outcomes)


def test_entries_are_written_in_their_canonical_form() -> None:
    from replays.corpus import dump_entry

    for path in entry_files(CORPUS_ROOT):
        assert path.read_text(encoding="utf-8") == dump_entry(load_entry(path)), path


async def test_a_changed_operation_status_fails_naming_the_task_policy_and_operation(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    entry = load_entry(root / "helpdesk" / SOLVE / "scripted-oracle.json")
    index = next(i for i, op in enumerate(entry.operations) if op.method == "POST")
    op = entry.operations[index]
    operations = list(entry.operations)
    operations[index] = op.model_copy(update={"status": 200})
    tamper(root, "scripted-oracle.json", operations=operations)
    result = await check_corpus(root, {SOLVE: CATALOG[SOLVE]})
    assert not result.ok
    [failure] = result.failures
    assert failure.task_id == SOLVE and failure.policy == "scripted:oracle"
    assert failure.message is not None
    assert failure.message.startswith(
        f"{SOLVE} [scripted:oracle]: operation #{op.seq} POST {op.path}: status recorded 200, replayed {op.status}")
    assert "computerops corpus record --tasks helpdesk.solve-ticket@1" in failure.message


async def test_a_changed_response_digest_fails_naming_the_operation(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    entry = load_entry(root / "helpdesk" / SOLVE / "scripted-noop.json")
    first = entry.operations[0]
    digest = ("1" if first.response_digest[0] != "1" else "2") + first.response_digest[1:]
    tamper(root, "scripted-noop.json",
           operations=[first.model_copy(update={"response_digest": digest}), *entry.operations[1:]])
    [failure] = (await check_corpus(root, {SOLVE: CATALOG[SOLVE]})).failures
    assert failure.message is not None
    assert failure.message.startswith(
        f"{SOLVE} [scripted:noop]: operation #1 {first.method} {first.path}: response_digest recorded '{digest}'")


async def test_when_operations_agree_the_first_state_or_verdict_difference_is_named(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    entry = load_entry(root / "helpdesk" / SOLVE / "scripted-oracle.json")
    tickets = [dict(row) for row in entry.final_state["ticket"]]
    tickets[4]["priority"] = "urgent"
    tamper(root, "scripted-oracle.json", final_state={**entry.final_state, "ticket": tickets})
    noop = load_entry(root / "helpdesk" / SOLVE / "scripted-noop.json")
    assert noop.verdict.outcome == "false_completion"
    tamper(root, "scripted-noop.json", verdict=noop.verdict.model_copy(update={"outcome": "honest_failure"}))
    messages = {f.policy: f.message for f in (await check_corpus(root, {SOLVE: CATALOG[SOLVE]})).failures}
    assert messages["scripted:oracle"] is not None
    assert messages["scripted:oracle"].startswith(
        f"{SOLVE} [scripted:oracle]: final state differs on replay: table ticket, row 5: row differs in priority")
    assert messages["scripted:noop"] is not None
    assert messages["scripted:noop"].startswith(
        f"{SOLVE} [scripted:noop]: verdict differs on replay: recorded honest_failure, replayed false_completion "
        "(first difference: outcome recorded 'honest_failure', replayed 'false_completion')")


async def test_an_entry_recorded_against_another_version_of_the_task_asks_to_re_record(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    tamper(root, "scripted-oracle.json", task_sha256="0" * 64)
    [failure] = (await check_corpus(root, {SOLVE: CATALOG[SOLVE]})).failures
    assert failure.policy == "scripted:oracle" and failure.message is not None
    assert "changed since the entry was recorded" in failure.message
    assert "re-record it with `computerops corpus record --tasks helpdesk.solve-ticket@1`" in failure.message


async def test_uncovered_tasks_and_entries_of_unknown_tasks_fail(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    other = "helpdesk.answer-latest-order@1"
    result = await check_corpus(root, {other: CATALOG[other]})
    assert result.uncovered == [other]
    assert all("not in the catalog" in (f.message or "") for f in result.failures) and len(result.failures) == 3
    assert any(m.startswith(f"{other}: no corpus entries") for m in result.messages())


def test_corpus_check_command_exits_1_naming_the_difference_and_0_when_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A one-task catalog and its entries, so the command does not replay the whole corpus a second time.
    monkeypatch.setattr("tasks.load_catalog", lambda: {SOLVE: CATALOG[SOLVE]})
    runner = CliRunner()
    root = copy_task(tmp_path)
    clean = runner.invoke(app, ["corpus", "check", "--dir", str(root)])
    assert clean.exit_code == 0, clean.output
    assert "3/3 corpus entries replay PASS" in clean.output and "1 tasks covered, 0 uncovered" in clean.output
    tamper(root, "scripted-oracle.json", task_sha256="0" * 64)
    failed = runner.invoke(app, ["corpus", "check", "--dir", str(root)])
    assert failed.exit_code == 1
    assert "helpdesk.solve-ticket@1 [scripted:oracle]: task file solve-ticket.yaml changed" in failed.output


@pytest.mark.browser
async def test_re_recording_unchanged_behaviour_gives_byte_identical_files(tmp_path: Path) -> None:
    task = CATALOG[SOLVE]
    first, second = tmp_path / "first", tmp_path / "second"
    await record_corpus([task], first)
    await record_corpus([task], second)
    files = [p.relative_to(first) for p in entry_files(first)]
    assert [p.name for p in files] == ["scripted-negative-wrong-status.json", "scripted-noop.json",
                                       "scripted-oracle.json"]
    assert files == [p.relative_to(second) for p in entry_files(second)]
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative
        # ... and the same bytes as the committed corpus: the reference behaviour has not changed.
        assert (first / relative).read_bytes() == (CORPUS_ROOT / relative).read_bytes(), relative
    # Re-recording into a corpus replaces the task's entries and removes stale ones.
    stale = first / "helpdesk" / SOLVE / "scripted-negative-renamed.json"
    stale.write_text("{}", encoding="utf-8")
    recording = await record_corpus([task], first)
    assert recording.removed == [stale] and not any(r.changed for r in recording.entries)


async def test_an_entry_keeps_the_tables_its_episode_changed_and_the_whole_states_hash(tmp_path: Path) -> None:
    root = copy_task(tmp_path)
    entry = load_entry(root / "helpdesk" / SOLVE / "scripted-oracle.json")
    assert entry.final_state_sha256 is not None
    assert set(entry.final_state) == {row.table for row in entry.journal}  # only what the episode changed
    tamper(root, "scripted-oracle.json", final_state_sha256="0" * 64)  # a change outside the kept tables
    [failure] = (await check_corpus(root, {SOLVE: CATALOG[SOLVE]})).failures
    assert failure.message is not None and "in a table the episode did not change" in failure.message


def _first_oracle_with_a_post(site: str) -> CorpusEntry:
    return next(entry for path in sorted((CORPUS_ROOT / site).glob("*/scripted-oracle.json"))
                for entry in [load_entry(path)] if any(op.method == "POST" for op in entry.operations))


@pytest.mark.parametrize("site", sorted({task.spec.site for task in CATALOG.values()}))
async def test_on_every_site_a_tampered_digest_or_a_mutated_operation_fails_replay(site: str, tmp_path: Path) -> None:
    # Replay's shortcuts (the app of one site, the handlers in place, the template's tables hashed once) must keep
    # every comparison: the last response's digest or a form post's status altered fails on the operation named, and
    # the post left out fails too (what it wrote is missing).
    entry = _first_oracle_with_a_post(site)
    task, episode = CATALOG[entry.task_id], entry.episode()
    last = episode.operations[-1]
    digest = ("1" if last.response_digest[0] != "1" else "2") + last.response_digest[1:]
    post = next(op for op in episode.operations if op.method == "POST")
    registry = tenant_registry(tmp_path)
    try:
        assert (await replay_episode(task, episode, registry)).result == "PASS"
        for operations, named in (
            ([*episode.operations[:-1], last.model_copy(update={"response_digest": digest})],
             f"operation #{last.seq} {last.method} {last.path}: response_digest"),
            ([post.model_copy(update={"status": 299}) if op is post else op for op in episode.operations],
             f"operation #{post.seq} {post.method} {post.path}: status"),
            ([op for op in episode.operations if op is not post], ""),
        ):
            receipt = await replay_episode(task, dataclasses.replace(episode, operations=operations), registry)
            assert receipt.result == "FAIL" and any(m.startswith(named) for m in receipt.mismatches), receipt.mismatches
    finally:
        registry.close()


async def test_after_prepare_replay_a_sites_first_replay_compiles_no_page_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jinja2 import Environment

    from replays import prepare_replay
    from sites.kit.pages import _RENDERERS

    for renderer in _RENDERERS:  # as in a new process: nothing compiled yet
        assert renderer.env.cache is not None
        renderer.env.cache.clear()
    entry = _first_oracle_with_a_post("ledger")
    task = CATALOG[entry.task_id]
    registry = tenant_registry(tmp_path)
    try:
        prepare_replay(registry, [task])
        compiled: list[str | None] = []
        real = Environment.compile

        def counted(self: Environment, source: str, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
            compiled.append(name)
            return real(self, source, name, *args, **kwargs)

        monkeypatch.setattr(Environment, "compile", counted)
        assert (await replay_episode(task, entry.episode(), registry)).result == "PASS"
        assert compiled == []
    finally:
        registry.close()
