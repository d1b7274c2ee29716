"""Blind tests for `computerops export` and `computerops compare`, written from the README rows, the module
docstrings and the public signatures only."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.report.compare import RunComparison, compare_episodes, compare_runs
from computerops.runs.bundle import BundleError, RunDirectory
from computerops.runs.export import ExportedEpisode, export_run, exported_episodes

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
EPISODE_IDS = sorted(p.name for p in (FIXTURE / "episodes").iterdir() if p.is_dir())
EVIDENCE_NAMES = sorted({p.name for d in (FIXTURE / "episodes").iterdir() if d.is_dir() for p in d.iterdir()})
# Every file of an episode, the receipt and start marker included (found blind: they were once exported unchecked).
EVIDENCE_PARAMS = EVIDENCE_NAMES
runner = CliRunner()


def _record_order() -> list[str]:
    lines = (FIXTURE / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line)["episode_id"] for line in lines if line.strip()]


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture(scope="module")
def episodes() -> list[ExportedEpisode]:
    return exported_episodes(RunDirectory.open(FIXTURE))


def _tamper(run: Path, episode_id: str, name: str) -> None:
    path = run / "episodes" / episode_id / name
    path.write_bytes(path.read_bytes() + b" ")


# --- export ---------------------------------------------------------------------------------------------------


def test_every_episode_exported_once_in_record_order(episodes: list[ExportedEpisode]) -> None:
    order = _record_order()
    assert len(order) >= 2
    assert [e.record.episode_id for e in episodes] == order
    assert all(e.format == "computerops.exported_episode/1" for e in episodes)
    assert all(e.verdict.task_id == e.record.task_id for e in episodes)


@pytest.mark.parametrize("episode_id", EPISODE_IDS)
@pytest.mark.parametrize("name", EVIDENCE_PARAMS)
def test_altered_evidence_refuses_whole_export(run_copy: Path, tmp_path: Path, episode_id: str, name: str) -> None:
    _tamper(run_copy, episode_id, name)
    out = tmp_path / "out.jsonl"
    with pytest.raises(BundleError, match=episode_id):
        export_run(RunDirectory.open(run_copy), out)
    assert not out.exists()
    with pytest.raises(BundleError, match=episode_id):
        exported_episodes(RunDirectory.open(run_copy))


@pytest.mark.parametrize("fmt", ["jsonl", "inspect"])
@pytest.mark.parametrize("episode_id", EPISODE_IDS)
def test_cli_altered_evidence_writes_nothing(run_copy: Path, tmp_path: Path, fmt: str, episode_id: str) -> None:
    _tamper(run_copy, episode_id, "verdict.json")
    out = tmp_path / ("out.eval" if fmt == "inspect" else "out.jsonl")
    result = runner.invoke(app, ["export", str(run_copy), "--out", str(out), "--format", fmt])
    assert result.exit_code != 0
    assert not out.exists()
    assert episode_id in result.output.replace("\n", "")
    assert list(tmp_path.iterdir()) == [run_copy]  # no stray temporary file left beside it


@pytest.mark.parametrize("fmt", ["jsonl", "inspect"])
def test_cli_existing_out_is_never_overwritten(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / ("out.eval" if fmt == "inspect" else "out.jsonl")
    out.write_text("keep me")
    result = runner.invoke(app, ["export", str(FIXTURE), "--out", str(out), "--format", fmt])
    assert result.exit_code != 0
    assert out.read_text() == "keep me"


def test_cli_unknown_format_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    result = runner.invoke(app, ["export", str(FIXTURE), "--out", str(out), "--format", "csv"])
    assert result.exit_code != 0
    assert not out.exists()


def test_jsonl_lines_round_trip(tmp_path: Path, episodes: list[ExportedEpisode]) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["export", str(FIXTURE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == len(episodes)
    parsed = [ExportedEpisode.model_validate_json(line) for line in lines]
    assert parsed == episodes
    for line, episode in zip(lines, parsed, strict=True):
        data = json.loads(line)
        assert data["format"] == "computerops.exported_episode/1"
        assert data["run_id"] == "run"
        assert data["scripted"] is True
        assert [c["name"] for c in data["verdict"]["checks"]] == [c.name for c in episode.verdict.checks]
        assert "receipt" in data


def test_jsonl_reads_with_pandas(tmp_path: Path) -> None:
    pandas = pytest.importorskip("pandas")
    out = tmp_path / "out.jsonl"
    assert export_run(RunDirectory.open(FIXTURE), out) == len(_record_order())
    frame = pandas.read_json(out, lines=True)
    assert len(frame) == len(_record_order())
    assert [r["episode_id"] for r in frame["record"]] == _record_order()
    assert isinstance(frame["verdict"][0], dict)  # nested stays nested


def test_inspect_log_one_sample_per_episode(tmp_path: Path, episodes: list[ExportedEpisode]) -> None:
    log_mod = pytest.importorskip("inspect_ai.log")
    out = tmp_path / "run.eval"
    result = runner.invoke(app, ["export", str(FIXTURE), "--out", str(out), "--format", "inspect"])
    assert result.exit_code == 0, result.output
    log = log_mod.read_eval_log(str(out))
    samples = log.samples or []
    assert [s.id for s in samples] == [e.record.episode_id for e in episodes]
    for sample, episode in zip(samples, episodes, strict=True):
        scores = sample.scores or {}
        assert next(iter(scores)) == "verified"  # the main score comes first
        expected = "C" if episode.verdict.outcome == "verified_success" else "I"
        assert scores["verified"].value == expected
        for check in episode.verdict.checks:
            assert check.name in (scores["verified"].explanation or "")
        assert scores["claim"].value == "success"
        kind = episode.verdict.false_completion_kind or "none"
        assert scores["false_completion"].value == kind
        assert sample.metadata["task_sha256"] == episode.record.task_sha256 or (
            episode.record.task_sha256 in json.dumps(sample.metadata))
        assert sample.messages, "the conversation is carried"
    assert {e.verdict.outcome for e in episodes} == {"verified_success", "false_completion"}


# --- compare --------------------------------------------------------------------------------------------------


def test_compare_identical_copy_has_no_changes(run_copy: Path) -> None:
    comparison = compare_runs(RunDirectory.open(FIXTURE), RunDirectory.open(run_copy))
    assert isinstance(comparison, RunComparison)
    assert len(comparison.episodes) == len(_record_order())
    assert {e.change for e in comparison.episodes} == {"same"}
    assert comparison.count("changed") == 0
    assert [(e.a, e.b) for e in comparison.episodes] == [(i, i) for i in _record_order()]


def test_compare_refuses_altered_evidence(run_copy: Path) -> None:
    _tamper(run_copy, EPISODE_IDS[-1], "verdict.json")
    with pytest.raises(BundleError, match=EPISODE_IDS[-1]):
        compare_runs(RunDirectory.open(FIXTURE), RunDirectory.open(run_copy))
    result = runner.invoke(app, ["compare", str(FIXTURE), str(run_copy)])
    assert result.exit_code != 0


def test_cli_compare_json_identical(run_copy: Path) -> None:
    result = runner.invoke(app, ["compare", str(FIXTURE), str(run_copy), "--json"])
    assert result.exit_code == 0, result.output
    comparison = RunComparison.model_validate_json(result.output)
    assert comparison.format == "computerops.comparison/1"
    assert {e.change for e in comparison.episodes} == {"same"}


def _as(episode: ExportedEpisode, episode_id: str, task_id: str, sha: str | None = None) -> ExportedEpisode:
    sha = sha or episode.record.task_sha256
    record = episode.record.model_copy(update={"episode_id": episode_id, "task_id": task_id, "task_sha256": sha})
    verdict = episode.verdict.model_copy(update={"task_id": task_id, "task_sha256": sha})
    return episode.model_copy(update={"record": record, "verdict": verdict})


def test_changed_outcome_names_first_differing_check(episodes: list[ExportedEpisode]) -> None:
    good, bad = episodes  # verified_success, false_completion
    comparison = compare_episodes("A", [good], "B", [bad])
    (only,) = comparison.episodes
    assert only.change == "changed"
    assert (only.outcome_a, only.outcome_b) == (good.verdict.outcome, bad.verdict.outcome)
    differing = [a.name for a, b in zip(good.verdict.checks, bad.verdict.checks, strict=True) if a.passed != b.passed]
    assert only.why is not None and differing[0] in only.why
    for later in differing[1:]:
        assert later not in only.why


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_why_follows_which_check_differs(episodes: list[ExportedEpisode], index: int) -> None:
    good = episodes[0]
    checks = [c.model_copy(update={"passed": not c.passed}) if i == index else c
              for i, c in enumerate(good.verdict.checks)]
    verdict = good.verdict.model_copy(update={"checks": checks, "outcome": "verified_failure"})
    worse = good.model_copy(update={"verdict": verdict,
                                    "record": good.record.model_copy(update={"outcome": "verified_failure"})})
    (only,) = compare_episodes("A", [good], "B", [worse]).episodes
    assert only.change == "changed"
    assert only.why is not None and good.verdict.checks[index].name in only.why
    others = [c.name for i, c in enumerate(good.verdict.checks) if i != index]
    assert not any(name in only.why for name in others)


def test_task_hash_change_is_task_changed(episodes: list[ExportedEpisode]) -> None:
    a = [_as(e, f"a{i}", "t") for i, e in enumerate(episodes)]
    b = [_as(e, f"b{i}", "t", sha="0" * 64) for i, e in enumerate(episodes)]
    comparison = compare_episodes("A", a, "B", b)
    assert [e.change for e in comparison.episodes] == ["task_changed"] * len(a)
    assert comparison.count("task_changed") == len(a)


def test_unpartnered_episodes_are_listed(episodes: list[ExportedEpisode]) -> None:
    good = episodes[0]
    a = [_as(good, "a1", "x"), _as(good, "a2", "x"), _as(good, "a3", "y")]
    b = [_as(good, "b1", "x"), _as(good, "b2", "z")]
    comparison = compare_episodes("A", a, "B", b)
    by = {(e.a, e.b): e.change for e in comparison.episodes}
    assert by == {("a1", "b1"): "same", ("a2", None): "only_in_a", ("a3", None): "only_in_a", (None, "b2"): "only_in_b"}
    assert comparison.count("only_in_a") == 2 and comparison.count("only_in_b") == 1


def test_order_of_other_tasks_does_not_matter(episodes: list[ExportedEpisode]) -> None:
    good, bad = episodes
    a = [_as(good, "a1", "x"), _as(bad, "a2", "y"), _as(bad, "a3", "x")]
    b = [_as(bad, "b1", "y"), _as(good, "b2", "x"), _as(bad, "b3", "x")]  # interleaved differently
    comparison = compare_episodes("A", a, "B", b)
    assert {(e.a, e.b, e.change) for e in comparison.episodes} == {
        ("a1", "b2", "same"), ("a3", "b3", "same"), ("a2", "b1", "same")}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from("pqr"), st.booleans()), max_size=6),
    st.lists(st.tuples(st.sampled_from("pqr"), st.booleans()), max_size=6),
)
def test_matching_is_by_task_and_occurrence(episodes: list[ExportedEpisode], spec_a: list[tuple[str, bool]],
                                            spec_b: list[tuple[str, bool]]) -> None:
    good, bad = episodes
    a = [_as(good if ok else bad, f"a{i}", t) for i, (t, ok) in enumerate(spec_a)]
    b = [_as(good if ok else bad, f"b{i}", t) for i, (t, ok) in enumerate(spec_b)]
    comparison = compare_episodes("A", a, "B", b)
    per_a: dict[str, list[ExportedEpisode]] = defaultdict(list)
    per_b: dict[str, list[ExportedEpisode]] = defaultdict(list)
    for e in a:
        per_a[e.record.task_id].append(e)
    for e in b:
        per_b[e.record.task_id].append(e)
    expected = set()
    for task in set(per_a) | set(per_b):
        xs, ys = per_a[task], per_b[task]
        for n in range(max(len(xs), len(ys))):
            x = xs[n] if n < len(xs) else None
            y = ys[n] if n < len(ys) else None
            if x and y:
                change = "same" if x.verdict.outcome == y.verdict.outcome else "changed"
            else:
                change = "only_in_a" if x else "only_in_b"
            expected.add((task, x and x.record.episode_id, y and y.record.episode_id, change))
    got = [(e.task_id, e.a, e.b, e.change) for e in comparison.episodes]
    assert len(got) == len(set(got)) == len(expected)
    assert set(got) == expected
    for task in set(per_a) | set(per_b):
        occ = [e.occurrence for e in comparison.episodes if e.task_id == task]
        assert len(set(occ)) == len(occ)
    assert sum(comparison.count(c) for c in ("same", "changed", "task_changed", "only_in_a", "only_in_b")) == len(got)


# --- options --------------------------------------------------------------------------------------------------


def _walk(command: Any, path: str = "") -> Iterator[tuple[str, Any]]:  # typer vendors its own click: duck-typed
    yield path or "computerops", command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _walk(sub, f"{path} {name}".strip())


def test_every_option_name_keeps_one_kind_across_commands() -> None:
    root = typer.main.get_command(app)
    kinds: dict[str, dict[bool, list[str]]] = defaultdict(lambda: defaultdict(list))
    for where, command in _walk(root):
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option":
                for name in [*param.opts, *param.secondary_opts]:
                    kinds[name][bool(param.is_flag)].append(where)
    assert "--json" in kinds and "--out" in kinds and "--format" in kinds
    mixed = {name: dict(by) for name, by in kinds.items() if len(by) > 1}
    assert mixed == {}
    assert set(kinds["--json"]) == {True} and set(kinds["--out"]) == {False}
