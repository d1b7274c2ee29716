"""Real-browser tests that the catalog proves itself, and that `demo` works end to end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import get_args

import pytest
from typer.testing import CliRunner

from computerops.catalog.checking import ControlResult, TaskCheck, check_tasks
from computerops.catalog.subsets import load_subset
from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory
from computerops.runs.demo import demo_negatives
from sites.kit.faults import FaultClass
from tasks import LoadedTask, NegativeControl, ScriptedStep, load_catalog

CATALOG = load_catalog()
pytestmark = pytest.mark.browser


SITES = sorted({t.spec.site for t in CATALOG.values()})


def _fault_evidence(tasks: list[LoadedTask], run_dir: Path) -> None:
    """Fault scenarios: every scripted control recovers from a fault that really fired, and the loop detector flags
    the negatives (when they ran) that keep retrying a trapped route."""
    records = {r.episode_id.split("-", 1)[1]: r for r in RunDirectory.open(run_dir).records()}
    for task in (t for t in tasks if t.spec.faults):
        oracle = records[f"{task.id}--oracle"]
        assert oracle.faults_fired and set(oracle.faults_fired) <= set(oracle.faults_configured), task.id
    trapped = [r for key, r in records.items() if "recovery-loop-trap" in key and "--negative-" in key]
    looping = [r for r in trapped if r.loop and r.loop.loop]
    assert bool(looping) == bool(trapped) and all(r.outcome != "verified_success" for r in looping)


ALSO_SAMPLED = frozenset({"helpdesk.refund-after-delayed-approval@1"})
"""Tasks the CI tier checks whole besides each site's sample: the delayed approval (a request pending until the
logical clock reaches its answer; its negatives refund before the answer, bypass it, and ask for the wrong amount)."""


def _sample(site: str) -> list[LoadedTask]:
    """The CI tier's sample of a site for the whole check, each template's first instance only: its first task without
    faults and its recovery-loop traps (faulted tasks: the loop detector's evidence), else its first with faults, and
    `ALSO_SAMPLED`, in catalog order."""
    firsts = {f"{template.id}@{template.seeds[0]}" for template in CATALOG.templates.values() if template.seeds}
    tasks = [t for t in CATALOG.values() if t.spec.site == site and t.id in firsts]  # one instance per template
    chosen = {t.id for t in tasks if "recovery-loop-trap" in t.id or t.id in ALSO_SAMPLED}
    chosen.update([t.id for t in tasks if not t.spec.faults][:1])
    if not any(CATALOG[task_id].spec.faults for task_id in chosen):
        chosen.update([t.id for t in tasks if t.spec.faults][:1])
    return [t for t in tasks if t.id in chosen]


async def _check(tasks: list[LoadedTask], out: Path, *, negatives: bool, noop: bool = True) -> None:
    checks = await check_tasks(tasks, out, lambda _: None, concurrency=2, with_negatives=negatives, with_noop=noop)
    assert [c.task_id for c in checks] == [t.id for t in tasks]
    for check in checks:
        assert check.ok, [r for r in check.results if not r.ok]
        assert check.solvable and check.noop_rejected is (True if noop else None)
        if negatives:
            assert check.negatives_rejected == check.negatives_total >= 3
        else:
            assert check.negatives_total == 0
    _fault_evidence(tasks, out)


@pytest.mark.timeout(900)
@pytest.mark.spread
@pytest.mark.parametrize("site", SITES)
async def test_a_sample_of_each_site_rejects_every_negative_control(site: str, tmp_path: Path) -> None:
    # CI's live share of the check: in CI every template's first instance has its scripted control, no-op and a
    # negative control replayed and re-judged from the golden corpus (tests/test_corpus.py), a seeded sample of
    # instances (a fresh one among them) is checked whole (tests/test_templates.py), and each site's sample here; the
    # slow tier checks every published instance (below). One site per test (so test runners can spread them); two
    # episodes at once: the same evidence as serial (tests/test_concurrency.py).
    await _check(_sample(site), tmp_path / "check", negatives=True)


@pytest.mark.slow
@pytest.mark.timeout(14400)
@pytest.mark.spread
@pytest.mark.parametrize("site", SITES)
async def test_every_task_is_solvable_rejects_the_no_op_and_rejects_every_negative_control(
    site: str, tmp_path: Path
) -> None:
    """The whole catalog's check, every published instance, as `computerops tasks check` runs it (the slow tier:
    some 7,900 episodes, hours on two cores; a site's share in each test)."""
    await _check([t for t in CATALOG.values() if t.spec.site == site], tmp_path / "check", negatives=True)


def test_every_fault_class_is_configured_by_some_task() -> None:
    configured = {f.fault for t in CATALOG.values() for f in t.spec.faults}
    assert configured == set(get_args(FaultClass))


@pytest.fixture(scope="module")
def crafted_check(tmp_path_factory: pytest.TempPathFactory) -> TaskCheck:
    """solve-ticket's check with three crafted negative controls: one only its final message tells from success, one
    that cannot run its steps and one that declares where it stops. One check for the two tests below (each ran the
    scripted control and the no-op again for its own crafted negatives); two episodes at once: the same evidence as
    serial (tests/test_concurrency.py)."""
    solve = CATALOG["helpdesk.solve-ticket@1"]
    lenient = NegativeControl(
        id="other-words", kind="wrong-claim", description="Only the final message differs.",
        replace={"finish": [ScriptedStep(action="done", success=True, message="Solved it.")]},
    )
    # Looks at a ticket list that has no such link: the policy gives up before its success claim, which would
    # count as "rejected" although the verifier was never tested.
    missing = {"open-ticket": [ScriptedStep(id="open-missing", action="click", role="link", name="T-9999")]}
    vacuous = NegativeControl(id="vacuous", kind="wrong-value", description="Cannot run.", replace=missing)
    declared = NegativeControl(id="declared", kind="wrong-value", description="Stops where declared.",
                               replace=missing, stops_at="open-missing")
    task = LoadedTask(spec=solve.spec.model_copy(update={"negative_controls": [lenient, vacuous, declared]}),
                      path=solve.path, sha256=solve.sha256)
    [check] = asyncio.run(check_tasks([task], tmp_path_factory.mktemp("crafted") / "check", lambda _: None,
                                      concurrency=2))
    assert check.solvable and check.noop_rejected
    assert [r.control for r in check.results if r.control.startswith("negative:")] == [
        "negative:other-words", "negative:vacuous", "negative:declared"]
    return check


def _result(check: TaskCheck, control: str) -> ControlResult:
    return next(r for r in check.results if r.control == control)


def test_a_negative_control_the_verifier_cannot_tell_from_success_fails_the_check(crafted_check: TaskCheck) -> None:
    lenient = _result(crafted_check, "negative:other-words")
    assert lenient.outcome == "verified_success" and not lenient.ok
    # Not counted as rejected: only the declared stop is (the next test), so the check fails.
    assert crafted_check.negatives_rejected == 1 and not crafted_check.ok


def test_a_negative_control_that_cannot_run_its_steps_fails_the_check_unless_it_declares_where_it_stops(
    crafted_check: TaskCheck,
) -> None:
    solve = CATALOG["helpdesk.solve-ticket@1"]
    first, second = _result(crafted_check, "negative:vacuous"), _result(crafted_check, "negative:declared")
    at = next(i for i, step in enumerate(solve.spec.scripted_control, 1) if step.id == "open-ticket")
    assert first.outcome == "honest_failure" and not first.ok and first.ran.startswith(f"gave up at step {at}")
    assert second.ok and second.ran == "stopped at open-missing as declared"
    assert crafted_check.negatives_rejected == 1 and not crafted_check.ok


@pytest.mark.timeout(900)
def test_the_demo_reserves_a_subset_shows_every_kind_of_outcome_and_replays_pass(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    # Without its closing tasks check: the catalog tests above run every task's scripted and no-op controls and a
    # sample's negative controls (the slow tier runs every one). Two episodes at once: the same evidence as serial
    # (tests/test_concurrency.py), the README's table included (checked below).
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--no-tasks-check", "--concurrency", "2"])
    assert result.exit_code == 0, result.output
    assert "SCRIPTED" in result.output
    subset = load_subset(tmp_path / "demo-subset.json")
    assert subset.count == min(10, len(CATALOG)) and subset.seed == 2026
    manifest = RunDirectory.open(out).manifest()
    assert manifest.config.subset is not None and manifest.config.subset.lock_sha256 == subset.lock_sha256
    assert manifest.config.tasks == subset.task_ids
    subset_tasks = [CATALOG[task_id] for task_id in subset.task_ids]
    planned = len(subset_tasks) * 5 + len(demo_negatives(subset_tasks))
    assert f"Replayed from disk: {planned}/{planned} PASS" in result.output
    assert "tasks check of the subset skipped" in result.output
    assert not (tmp_path / "demo-tasks-check").exists()
    report = json.loads(CliRunner().invoke(app, ["report", str(out), "--json"]).stdout)
    total = report["total"]
    assert total["attempted"] == planned and total["replay_pass"] == planned
    assert total["verified_success"] > 0 and total["claimed_failure"] > 0 and total["no_finish"] > 0
    assert all(count > 0 for count in total["false_completion_kinds"].values())  # state, procedure, forbidden
    # The README's demo table is this run's `report --markdown`, so its figures cannot drift from the demo's.
    markdown = CliRunner().invoke(app, ["report", str(out), "--markdown"]).stdout
    text = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    assert markdown.count("\n") == len(report["by_endpoint"]) + 3 and markdown in text, \
        f"regenerate the README's demo table: computerops report DIR --markdown\n{markdown}"
    readme = " ".join(text.split())
    assert (f"False completions: {total['false_completions']}/{total['attempted']} attempted episodes, "
            f"{total['false_completions']}/{total['self_reported_success']} success claims") in readme
    assert f"the {total['rejected_actions']} rejected actions" in readme
