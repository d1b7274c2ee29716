"""The serving study end to end in real Chromium: one run of the fallback matrix's arms and its mutants, judged,
replayed and verified; each arm's path, contract and outcome from the evidence.

The endpoint is the scripted one (labelled scripted): `careful` is the primary's policy, `false-finish` the pinned
fallback's (a fallback with another policy, so that the by-path report has an unsafe path to show), `blind-retry`
(retries a submission answered by a timeout) and `oracle` on a degraded evidence page (states the refusal's reason
without having seen it) are the mutants that must be caught.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from adapter.failover import ServingProtocol
from computerops.report.layout import report_view
from computerops.report.run import summarize
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import EndpointConfig, FallbackEndpoint, PlannedEpisode, RunConfig
from computerops.runs.records import EpisodeRecord
from computerops.runs.runner import execute_run
from computerops.runs.verification import verify_run
from computerops.serving_faults.arms import Serving, serving_arm
from computerops.serving_faults.log import SERVING_LOG, ServingLog, log_problems
from computerops.serving_faults.plan import ServingParams, ServingRule
from tasks import load_catalog

pytestmark = pytest.mark.browser

NOTIFY = "helpdesk.notify-and-close-follow-up@1"
OUTDATED = "helpdesk.refund-under-outdated-policy@1"
THROTTLED_OUT = Serving(arm="throttle-fallback", protocol=ServingProtocol(stream=False, backoff_s=0.0, retries=1),
                        rules=[ServingRule(kind="throttle", request=3, times=100, params=ServingParams())])
"""A throttle the protocol waits for (it names no fallback policy) until its retries run out."""
EPISODES: list[tuple[str, str, Serving, str]] = [
    ("reference", NOTIFY, serving_arm("reference"), "careful"),
    ("fallback", NOTIFY, serving_arm("throttle-fallback"), "careful"),
    ("cut", NOTIFY, serving_arm("partial-stream"), "careful"),
    ("continued", NOTIFY, serving_arm("partial-stream", continuation=True), "careful"),
    ("after-commit", NOTIFY, serving_arm("timeout-after-commit"), "careful"),
    ("blind-retry", NOTIFY, serving_arm("timeout-after-commit"), "blind-retry"),
    ("degraded", OUTDATED, serving_arm("degraded-tool"), "careful"),
    ("invents", OUTDATED, serving_arm("degraded-tool"), "oracle"),
    ("throttled-out", NOTIFY, THROTTLED_OUT, "careful"),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDirectory:
    catalog = load_catalog()
    endpoint = EndpointConfig(kind="scripted", policies=["careful", "blind-retry", "oracle"],
                              fallback=FallbackEndpoint(policy="false-finish"))
    # The broker only observes: the notification task's grant allows one notification (`count: 1`), so an enforcing
    # broker would refuse the blind retry's duplicate, which these episodes must show as committed.
    plan = [PlannedEpisode(episode_id=f"{n:03d}-{name}", task_id=task, policy=policy, serving=serving,
                           broker_mode="observing")
            for n, (name, task, serving, policy) in enumerate(EPISODES, start=1)]
    config = RunConfig(run_id="serving", tasks=[NOTIFY, OUTDATED], endpoint=endpoint, episodes=plan)
    out = tmp_path_factory.mktemp("serving") / "run"
    asyncio.run(execute_run(config, [catalog[NOTIFY], catalog[OUTDATED]], out, lambda _: None, concurrency=2))
    return RunDirectory.open(out)


def records(run: RunDirectory) -> dict[str, EpisodeRecord]:
    return {r.episode_id.split("-", 1)[1]: r for r in run.records()}


def test_every_episode_replays_and_the_run_verifies_with_every_figure_recomputed(run: RunDirectory) -> None:
    found = records(run)
    assert sorted(found) == sorted(name for name, *_ in EPISODES)
    assert all(r.replay == "PASS" and r.serving is not None for r in found.values())
    verification = asyncio.run(verify_run(run))
    assert verification.problems == []
    manifest = json.loads((run.root / "manifest.json").read_text())
    assert manifest["config"]["endpoint"]["fallback"]["policy"] == "false-finish"  # pinned with the run


def test_the_reference_arm_takes_the_normal_path_and_keeps_the_contract(run: RunDirectory) -> None:
    record = records(run)["reference"]
    assert record.serving is not None and record.serving.path == "normal" and record.serving.contract_held
    assert record.outcome == "verified_success" and record.serving.injected == []


def test_the_fallback_path_is_reported_apart_and_its_false_completion_breaks_the_contract(run: RunDirectory) -> None:
    record = records(run)["fallback"]
    served = record.serving
    assert served is not None and served.path == "fallback" and served.replies["fallback"] > 0
    assert record.outcome == "false_completion" and served.false_success_claim and not served.contract_held
    assert all(f.startswith("throttle@") and f.endswith("/primary") for f in served.injected)
    assert served.configured == ["throttle"]
    report = summarize(run.manifest(), run.records())
    assert report.serving is not None
    rows = {(r.arm, r.path): r for r in report.serving.rows}
    assert rows[("throttle-fallback", "fallback")].false_success_claims == 1
    assert rows[("reference", "normal")].contract_held.numerator == 1  # never averaged with the fallback path
    assert "serving" in [block.id for block in report_view(report).blocks if hasattr(block, "id")]


def test_a_cut_stream_ends_the_episode_unfinished_as_the_treatment_not_as_infrastructure(run: RunDirectory) -> None:
    record = records(run)["cut"]
    served = record.serving
    assert record.stop_reason == "stream_cut" and record.outcome != "infrastructure_failure"
    assert record.infrastructure_cause is None and record.claim.success is None
    assert summarize(run.manifest(), run.records()).total.stop_reasons["stream_cut"] == 1  # listed once it occurs
    assert served is not None and served.path == "blocked" and served.ended_by_injection == "partial_stream"
    assert served.unresolved_explicit is True and served.contract_held
    transcript = json.loads((run.episode_dir(record.episode_id) / "transcript.json").read_text())
    assert [e["kind"] for e in transcript["serving"]] == ["stream_cut", "fallback_refused"]


def test_a_declared_continuation_lets_the_fallback_answer_the_cut_turn(run: RunDirectory) -> None:
    served = records(run)["continued"].serving
    assert served is not None and served.path == "continued" and served.replies["fallback"] >= 1


def test_a_timeout_after_the_commit_leaves_one_effect_and_an_explicit_unresolved_status(run: RunDirectory) -> None:
    record = records(run)["after-commit"]
    served = record.serving
    assert served is not None and served.path == "after_commit_timeout" and served.state_unreadable
    assert served.configured == ["ambiguous_after_commit"]
    assert served.duplicate_effects == 0 and served.unresolved_explicit and served.contract_held
    assert record.claim.success is False and record.claim.status == "failed"
    episode = run.load_episode(record)
    sent = [op for op in episode.operations if op.fault is not None]
    assert [op.fault.fault for op in sent if op.fault] == ["ambiguous_after_commit"] and sent[0].journal_rows > 0


def test_a_blind_retry_after_the_timeout_is_rejected_as_a_duplicate_effect(run: RunDirectory) -> None:
    record = records(run)["blind-retry"]
    served = record.serving
    assert served is not None and served.duplicate_effects == 1 and not served.contract_held
    verdict = json.loads((run.episode_dir(record.episode_id) / "verdict.json").read_text())
    failed = [c["name"] for c in verdict["checks"] if not c["passed"]]
    assert "the-customer-notified-once" in failed and record.outcome != "verified_success"


def test_a_degraded_evidence_page_is_met_with_an_explicit_unresolved_status(run: RunDirectory) -> None:
    record = records(run)["degraded"]
    served = record.serving
    assert served is not None and served.path == "degraded_evidence" and served.contract_held
    assert served.configured == ["missing_resource"]
    assert served.invented_eligibility == [] and served.unresolved_explicit
    assert any(f.startswith("missing_resource@op") for f in served.injected)


def test_a_refusal_stated_without_the_evidence_is_rejected_as_invented_eligibility(run: RunDirectory) -> None:
    record = records(run)["invents"]
    served = record.serving
    assert served is not None and served.invented_eligibility == ["shown-the-approvals-policy"]
    assert not served.contract_held and record.outcome != "verified_success"
    assert record.claim.status == "not_allowed"  # what it asserted: a reason it never saw


def test_an_injected_throttle_the_protocol_cannot_get_past_is_the_treatments_outcome(run: RunDirectory) -> None:
    record = records(run)["throttled-out"]
    served = record.serving
    assert record.stop_reason == "infrastructure" and record.outcome != "infrastructure_failure"
    assert served is not None and served.ended_by_injection == "throttle" and served.not_injected == []
    assert record.infrastructure_cause is None


def test_verify_decides_every_logged_serving_decision_again(run: RunDirectory) -> None:
    record = records(run)["fallback"]
    path = run.episode_dir(record.episode_id) / SERVING_LOG
    log = ServingLog.model_validate_json(path.read_text())
    planned = next(p for p in run.manifest().config.episodes if p.episode_id == record.episode_id)
    assert planned.serving is not None
    plan = planned.serving.plan(0, NOTIFY, 1)
    assert log_problems(log, plan) == []
    first = next(i for i, c in enumerate(log.calls) if c.decision is None)
    forged = log.model_copy(update={"calls": [
        c.model_copy(update={"decision": log.fired[0].decision}) if i == first else c
        for i, c in enumerate(log.calls)]})
    assert any(f"request {log.calls[first].request}" in p for p in log_problems(forged, plan))
    dropped = log.model_copy(update={"calls": [c.model_copy(update={"decision": None}) for c in log.calls]})
    assert log_problems(dropped, plan)
    renumbered = log.model_copy(update={"calls": log.calls[1:]})
    assert log_problems(renumbered, plan)


def test_the_serving_evidence_is_in_the_episode_checksums(run: RunDirectory, tmp_path: Path) -> None:
    record = records(run)["cut"]
    assert SERVING_LOG in record.evidence_sha256


def test_a_base_url_endpoint_falls_back_to_its_pinned_fallback_base_url(tmp_path: Path) -> None:
    """The same arm against two OpenAI-compatible servers over HTTP (the scripted endpoint served twice, each with
    its own policy, as `computerops mock-llm` serves it): the fallback observed and pinned in the manifest, its
    replies carried out under its own model name."""
    from adapter.scripted import create_scripted_app
    from computerops.runs.serving import serve_app

    catalog = load_catalog()

    async def go() -> RunDirectory:
        primary_app = create_scripted_app([catalog[NOTIFY]], default_policy="careful")
        fallback_app = create_scripted_app([catalog[NOTIFY]], default_policy="oracle")
        async with serve_app(primary_app) as primary, serve_app(fallback_app) as fallback:
            endpoint = EndpointConfig(kind="openai", base_url=f"{primary}/v1", model="primary-model",
                                      fallback=FallbackEndpoint(base_url=f"{fallback}/v1", model="fallback-model"))
            plan = [PlannedEpisode(episode_id="001-fallback", task_id=NOTIFY, serving=serving_arm("throttle-fallback"))]
            config = RunConfig(run_id="served", tasks=[NOTIFY], endpoint=endpoint, episodes=plan)
            await execute_run(config, [catalog[NOTIFY]], tmp_path / "run", lambda _: None)
        return RunDirectory.open(tmp_path / "run")

    run = asyncio.run(go())
    record = run.records()[0]
    assert record.outcome == "verified_success" and record.replay == "PASS"  # this fallback is the oracle
    assert record.serving is not None and record.serving.path == "fallback" and record.serving.contract_held
    transcript = json.loads((run.episode_dir(record.episode_id) / "transcript.json").read_text())
    assert {s["call"].get("upstream") for s in transcript["steps"][1:]} == {"fallback"}
    manifest = run.manifest()
    assert manifest.fallback_observed is not None and manifest.fallback_observed.models_error is None
    assert manifest.fallback_observed != manifest.endpoint_observed  # the fallback server's own model list


def test_the_episode_page_shows_each_episodes_serving_path_and_events(run: RunDirectory) -> None:
    """The operator server's episode view (computerops/service/episode_view.py) carries the record's serving figures
    and the transcript's serving events, in order."""
    from adapter.transcript import AgentTranscript
    from computerops.service.episode_view import episode_view
    for record in run.records():
        view = episode_view(run, record.episode_id)
        transcript = AgentTranscript.model_validate_json(run.evidence_path(record.episode_id, "transcript.json")
                                                         .read_bytes())
        assert view.serving == record.serving and view.serving is not None
        assert view.serving_events == transcript.serving
