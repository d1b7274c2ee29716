"""Page noise in a real run (real Chromium, the scripted oracle): one task instance clean, under a consent banner and
under a session timeout, paired. The noise is recorded (which page it fired on, whether the agent saw it), `verify`
recomputes it and names a forged draw, every episode replays PASS (the operation log keeps the site's own pages),
and the report has one row per arm. One run for the whole module."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from test_verify import reseal_checksums, rewrite_record
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, RunConfig, plan_episodes
from computerops.runs.runner import execute_run
from computerops.runs.verification import verify_run
from computerops.studies.page_noise import NOISE_FILE
from sites.kit.noise_log import NoiseLog
from tasks import load_catalog

pytestmark = pytest.mark.browser

TASK = "helpdesk.solve-ticket@1"


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    catalog = load_catalog()
    endpoint = EndpointConfig(kind="scripted", policies=["oracle"])
    plan = plan_episodes([TASK], endpoint, noise=["consent_banner", "session_timeout"])
    config = RunConfig(run_id="noise", tasks=[TASK], endpoint=endpoint, episodes=plan)
    out = tmp_path_factory.mktemp("noise") / "run"
    asyncio.run(execute_run(config, [catalog[TASK]], out, lambda _: None))
    return out


def _problems(run: Path) -> list[str]:
    return asyncio.run(verify_run(RunDirectory.open(run))).problems


def test_noise_is_recorded_by_page_seen_in_the_observations_and_every_episode_replays(noisy_run: Path) -> None:
    bundle = RunDirectory.open(noisy_run)
    records = {(r.studies or {})["page_noise"]["arm"]: r for r in bundle.records()}  # type: ignore[index,call-overload]
    assert set(records) == {"clean", "consent_banner", "session_timeout"}
    assert all(r.replay == "PASS" for r in records.values()), "the operation log keeps the site's own pages"
    assert records["clean"].outcome == "verified_success"
    banner = (records["consent_banner"].studies or {})["page_noise"]
    assert banner["fired"] and banner["fired"][0] == 1 and banner["seen"][:1] == [1], banner  # type: ignore[index,call-overload]
    timeout = (records["session_timeout"].studies or {})["page_noise"]
    assert timeout["fired"] == [3] and timeout["seen"] == [3], timeout  # type: ignore[index,call-overload]
    log = NoiseLog.model_validate_json((bundle.episode_dir(records["session_timeout"].episode_id) / NOISE_FILE)
                                       .read_text())
    expired = log.pages[2]
    operations = json.loads((bundle.episode_dir(records["session_timeout"].episode_id) / "operations.json")
                            .read_text())
    assert not [op for op in operations if op["action"] == expired.action and op["method"] == "GET"], \
        "a session-timeout page answers in place of the page and never reaches the operation log"
    assert _problems(noisy_run) == []


def test_verify_names_a_noise_log_that_contradicts_the_draw(noisy_run: Path, tmp_path: Path) -> None:
    forged = tmp_path / "forged"
    shutil.copytree(noisy_run, forged)
    record = next(r for r in RunDirectory.open(forged).records() if r.episode_id.endswith("session_timeout"))
    path = forged / "episodes" / record.episode_id / NOISE_FILE
    log = NoiseLog.model_validate_json(path.read_text())
    moved = [page.model_copy(update={"drawn": page.ordinal == 2, "fired": page.ordinal == 2}) for page in log.pages]
    path.write_text(log.model_copy(update={"pages": moved}).model_dump_json())
    rewrite_record(forged, record.episode_id, evidence_sha256={
        **record.evidence_sha256, NOISE_FILE: hashlib.sha256(path.read_bytes()).hexdigest()})
    reseal_checksums(forged)
    found = _problems(forged)
    assert any("page 2 recorded drawn=True, the draw says False" in p for p in found), found
    assert any("page 3 recorded drawn=False, the draw says True" in p for p in found), found


def test_the_report_has_one_row_per_noise_arm(noisy_run: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(noisy_run), "--json"])
    assert result.exit_code == 0, result.output
    arms = json.loads(result.output)["studies"]["page_noise"]["arms"]
    assert [row["arm"] for row in arms] == ["clean", "consent_banner", "session_timeout"]
    assert arms[0]["verified_success"]["numerator"] == 1 and arms[0]["paired_success_change"] is None
    assert all(row["episodes"] == 1 and row["paired_success_change"] is not None for row in arms[1:])
