"""`tasks check --noise` in real Chromium (computerops/catalog/noise_check.py): one instance whose approvals list runs
past its tenth row, under a survey interstitial, a load-more list and label variation. The noise-aware scripted
control verifies under each (dismissing the survey, loading more rows, finding the renamed submit), the plain
control fails under each (the noise stood in its named steps' way), every episode replays PASS and `verify` passes.
One run for the module."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from computerops.catalog.noise_check import NoiseCheckReport, check_noise, kind_summaries
from sites.kit.noise import NOISE, NoiseKind
from tasks import load_catalog

pytestmark = pytest.mark.browser

TASK = "helpdesk.approval-expired@10"
"""Its order is past the tenth row of the approvals list, and its submit is `Request approval` (`Ask for approval`
under label variation)."""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> NoiseCheckReport:
    task = load_catalog()[TASK]
    out = tmp_path_factory.mktemp("noise-check") / "run"
    return asyncio.run(check_noise([task], ["interstitial", "load_more", "label_variation"], out, lambda _: None,
                                   concurrency=2))


def test_the_noise_aware_control_verifies_under_each_kind_by_what_the_kind_declares(report: NoiseCheckReport) -> None:
    by_kind = {r.kind: r for r in report.results}
    assert all(r.aware_ok for r in report.results), [(r.kind, r.aware_outcome) for r in report.results]
    assert by_kind["interstitial"].handled[0].startswith("dismissed 'Not now'")
    assert by_kind["load_more"].handled[0].startswith("loaded 'Load more (")
    assert any("offered as 'Ask for approval'" in h for h in by_kind["label_variation"].handled)


def test_the_plain_control_fails_where_the_noise_stood_in_its_way(report: NoiseCheckReport) -> None:
    assert all(r.blocked and r.plain_failed and r.plain_ok for r in report.results)
    assert [k.plain_failed_blocked for k in kind_summaries(report)] == [1, 1, 1]


def test_every_noisy_episode_replays_and_verify_passes(report: NoiseCheckReport) -> None:
    assert all(r.aware_replay == r.plain_replay == "PASS" for r in report.results)
    assert report.verified, report.verify_problems
    assert report.ok


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
@pytest.mark.spread
@pytest.mark.parametrize("kind", sorted(NOISE))
def test_every_templates_first_instance_verifies_under_each_kind(kind: NoiseKind, tmp_path: Path) -> None:
    """The whole catalog's prequalification under noise (the slow tier: each template's first published instance,
    the noise-aware control and the plain one, one kind a test so that runners can spread them; some 370 episodes a
    kind): `computerops tasks check --noise KIND --per-template 1` as a test."""
    catalog = load_catalog()
    firsts = [catalog[f"{t.id}@{t.seeds[0]}"] for t in catalog.templates.values() if t.seeds]
    checked = asyncio.run(check_noise(firsts, [kind], tmp_path / "run", lambda _: None, concurrency=2))
    assert all(r.aware_ok for r in checked.results), [(r.task_id, r.aware_outcome) for r in checked.results
                                                      if not r.aware_ok]
    assert all(r.plain_ok for r in checked.results), [r.task_id for r in checked.results if not r.plain_ok]
    assert checked.verified, checked.verify_problems
    assert checked.ok
