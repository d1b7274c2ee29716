"""The words a run says of its episodes (issue 43, part B): the progress line names each episode as the report
counts it, and a run with no attempted episode does not exit 0; claims of success in plain text are counted apart
from `done` claims, and tokens unknown because the server sends no usage are said to be."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from test_report import record

from adapter.claims import TextClaim
from computerops.cli import main
from computerops.report.layout import report_view
from computerops.report.outcomes import NEVER_REACHED, outcome_table, outcome_words
from computerops.report.run import report_json, run_report
from computerops.report.tables import Paragraph
from computerops.report.vocabulary import OUTCOMES
from computerops.runs.config import PlannedEpisode
from computerops.runs.records import Completeness, EpisodeOutcome, EpisodeRecord
from computerops.runs.runner import _progress_line
from computerops.server import index, progress

COUNTED_AS = {"verified_success": "verified_success", "unclaimed_success": "unclaimed_success",
              "false_completions": "false_completion", "honest_failures": "honest_failure",
              "damaging_failures": "damaging_failure", "infrastructure_failures": "infrastructure_failure",
              "never_reached_the_model": NEVER_REACHED}
"""An outcome table's count and the word for an episode counted in it."""


def never_reached(number: int) -> EpisodeRecord:
    return record(number, "m", "t", "honest_failure", None).model_copy(
        update={"stop_reason": "context_exhausted", "steps": 0})


def infrastructure(number: int) -> EpisodeRecord:
    return record(number, "m", "t", "infrastructure_failure", None).model_copy(
        update={"stop_reason": "infrastructure", "infrastructure_cause": "connection failed", "steps": 0})


EPISODES = [
    record(1, "m", "t", "verified_success", True), record(2, "m", "t", "unclaimed_success", False),
    record(3, "m", "t", "false_completion", True, kind="state"), record(4, "m", "t", "honest_failure", None),
    record(5, "m", "t", "honest_failure", False), record(6, "m", "t", "damaging_failure", None),
    infrastructure(7), never_reached(8),
    record(9, "m", "t", "honest_failure", None).model_copy(update={"stop_reason": "context_exhausted"}),
]


@pytest.mark.parametrize("episode", EPISODES, ids=[e.episode_id for e in EPISODES])
def test_the_progress_line_names_an_episode_as_the_report_counts_it(episode: EpisodeRecord) -> None:
    table = outcome_table("m", [episode])
    counted = [word for count, word in COUNTED_AS.items() if getattr(table, count) == 1]
    assert len(counted) == 1, counted
    line = _progress_line(1, 1, PlannedEpisode(episode_id=episode.episode_id, task_id="t"), episode)
    said = line.split(": ", 1)[1].split(",")[0].split(" (")[0]
    assert said == counted[0] == outcome_words(episode).split(" (")[0], line
    assert [word for word in (*OUTCOMES, NEVER_REACHED) if word in line.split(", ")[0]] == [said], line


@pytest.mark.parametrize("episode", EPISODES, ids=[e.episode_id for e in EPISODES])
def test_the_operator_servers_index_and_progress_name_an_episode_as_the_report_counts_it(
        episode: EpisodeRecord, tmp_path: Path) -> None:
    counted = outcome_words(episode).split(" (")[0]
    assert index._episode("run", episode).outcome == counted
    (tmp_path / "episodes.jsonl").write_text(episode.model_dump_json() + "\n", encoding="utf-8")
    assert [e.outcome for e in progress._admitted(tmp_path / "episodes.jsonl")] == [counted]


class _Run:
    """A run directory as `_report_complete` reads it."""

    def __init__(self, records: list[EpisodeRecord]) -> None:
        self.root = Path("runs/r1")
        self._records = records

    def records(self) -> list[EpisodeRecord]:
        return self._records

    def completeness(self) -> Completeness:
        failed = [r.episode_id for r in self._records if r.outcome == "infrastructure_failure"]
        return Completeness(planned=len(self._records), admitted=len(self._records), missing=[],
                            infrastructure_failures=failed, interrupted_attempts=0, resumes=0,
                            rerun_after_infrastructure=0)


def _exit_code(records: list[EpisodeRecord], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(main, "_report", lambda bundle, as_json: None)
    try:
        main._report_complete(_Run(records))  # type: ignore[arg-type]
    except typer.Exit as stopped:
        return stopped.exit_code
    return 0


def test_a_run_whose_every_episode_never_reached_the_model_exits_1(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code([never_reached(1), never_reached(2)], monkeypatch) == 1
    assert "no episode was attempted" in capsys.readouterr().err.replace("\n", " ")
    assert _exit_code([], monkeypatch) == 1


def test_a_run_with_an_attempted_episode_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _exit_code([never_reached(1), record(2, "m", "t", "honest_failure", None)], monkeypatch) == 0
    assert _exit_code([infrastructure(1)], monkeypatch) == 1


def claimed_in_text(number: int, outcome: EpisodeOutcome, claim: bool | None) -> EpisodeRecord:
    return record(number, "m", "t", outcome, claim).model_copy(
        update={"text_claim": TextClaim(reply=2, text="The task is completed.")})


def test_claims_in_text_are_counted_apart_from_done_claims_with_their_false_completions() -> None:
    episodes = [claimed_in_text(1, "honest_failure", None), claimed_in_text(2, "unclaimed_success", None),
                claimed_in_text(3, "honest_failure", False), claimed_in_text(4, "verified_success", True),
                record(5, "m", "t", "honest_failure", None), infrastructure(6).model_copy(
                    update={"text_claim": TextClaim(reply=1, text="Done!")})]
    table = outcome_table("m", episodes)
    assert (table.claimed_in_text, table.text_false_completions) == (3, 2)
    assert table.self_reported_success == 1 and table.taxonomy["claimed/pass"] == 1, "a text claim is no done claim"
    assert table.verified_success == 1, "a text claim is never a success"
    view = report_view(run_report("r", episodes, declared_scripted=False))
    taxonomy = next(t for t in view.tables() if t.id == "taxonomy")
    shown = dict(zip([c.header for c in taxonomy.columns], taxonomy.rows[0], strict=True))
    assert (shown["claimed in text"], shown["text false compl."]) == (3, 2)
    said = " ".join(b.text for b in view.blocks if isinstance(b, Paragraph))
    assert "Claimed success in plain text without done: 3 episode(s), 2 of them text false completions" in said


def test_a_report_without_claims_in_text_or_missing_usage_keeps_its_sealed_json_shape() -> None:
    dumped = report_json(run_report("r", [record(1, "m", "t", "honest_failure", None)], declared_scripted=False))
    assert not {"claimed_in_text", "text_false_completions"} & set(dumped["total"])
    assert "no_usage" not in dumped["total"]["tokens"]


def test_tokens_unknown_because_the_server_sends_no_usage_are_said_to_be() -> None:
    silent = [record(n, "m", "t", "honest_failure", None).model_copy(update={"no_usage": True}) for n in (1, 2)]
    episodes = [*silent, record(3, "m", "t", "honest_failure", None, tokens=(10, None))]
    view = report_view(run_report("r", episodes, declared_scripted=False))
    usage = next(t for t in view.tables() if t.id == "usage")
    shown = dict(zip([c.header for c in usage.columns], usage.rows[0], strict=True))
    assert shown["tokens known"] == 0 and shown["tokens unknown"] == "3 (2: the server sends no usage)"
    warnings = [b.text for b in view.blocks if isinstance(b, Paragraph) and b.tone == "warning"]
    assert any("the server sends no usage" in text and "2 episode(s)" in text for text in warnings), warnings
