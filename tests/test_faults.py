"""Fault injection: decisions (pure) and what each class does to an operation (in-process, helpdesk),
including that replay forces the logged faults and still passes."""

from __future__ import annotations

import asyncio
import re

import pytest
from fastapi.testclient import TestClient
from site_client import Browser, site_fixtures

from computerops.runs.config import RunConfig, parse_endpoint, plan_episodes
from replays import RecordedEpisode, replay_episode
from sites.helpdesk import HELPDESK
from sites.kit import TenantRegistry
from sites.kit.fault_params import PARAMS_BY_CLASS
from sites.kit.faults import FAULT_CLASSES, FaultDecision, FaultInjector, FaultPlan, FaultRule, FaultTarget, draw
from sites.kit.injection import FaultSession
from tasks import load_catalog
from verifier import Claim, judge

registry, app_client, tenant, browser = site_fixtures(HELPDESK)
STATUS = "/helpdesk/tickets/T-2005/status"
TICKET = "/helpdesk/tickets/T-2005"


def rule(fault: str, path: str = STATUS, method: str = "POST", **extra: object) -> FaultRule:
    return FaultRule.model_validate({"fault": fault, "target": {"method": method, "path": path}, **extra})


def inject(browser: Browser, *rules: FaultRule) -> None:
    browser.tenant.faults = FaultSession(FaultInjector(FaultPlan(task_id="t", rules=list(rules))))


def status_of(browser: Browser) -> str:
    found = re.search(r"<dt>Status</dt><dd>(\w+)</dd>", browser.get(TICKET))
    assert found
    return found.group(1)


def replays_pass(registry: TenantRegistry, browser: Browser) -> bool:
    """The tenant's operations replayed on a fresh tenant (forcing the logged faults) give the same evidence."""
    task = load_catalog()["helpdesk.solve-ticket@1"]
    operations, journal, state = browser.tenant.operations(), browser.tenant.journal(), browser.tenant.snapshot()
    verdict = judge(task.spec, task.sha256, state=state, journal=journal, operations=operations,
                    claim=Claim(success=None))
    episode = RecordedEpisode(episode_id="f", operations=operations, journal=journal, final_state=state,
                              verdict=verdict)
    receipt = asyncio.run(replay_episode(task, episode, registry))
    assert receipt.result == "PASS", receipt.mismatches
    return True


def test_rate_decisions_are_reproducible_and_nest_across_rates() -> None:
    assert draw(7, "a.task", 1, 12, "transient_5xx") == draw(7, "a.task", 1, 12, "transient_5xx")
    assert draw(7, "a.task", 1, 12, "transient_5xx") != draw(7, "a.task", 2, 12, "transient_5xx")

    def fired(rate: float) -> set[int]:
        plan = FaultPlan(run_seed=3, task_id="a.task", rate=rate, rate_classes=["transient_5xx"])
        injector = FaultInjector(plan)
        return {seq for seq in range(1, 401) if injector.decide(seq, "POST", "/x") is not None}

    low, high = fired(0.1), fired(0.3)
    assert low <= high, "an operation faulted at 10% is faulted at every higher rate"
    assert 20 < len(low) < 60 and 80 < len(high) < 160  # 400 draws: near 40 and 120
    assert fired(0.0) == set()
    plan = FaultPlan(rate=1.0, rate_classes=["missing_resource", "transient_5xx"])
    injector = FaultInjector(plan)
    get, post = injector.decide(1, "GET", "/x"), injector.decide(2, "POST", "/x")
    assert get is not None and get.fault == "missing_resource", "read faults apply to page loads"
    assert post is not None and post.fault == "transient_5xx", "the others to submissions"


def test_a_rule_fires_on_its_occurrence_for_its_times_and_a_trap_alternates() -> None:
    injector = FaultInjector(FaultPlan(rules=[rule("recovery_loop_trap", occurrence=2, times=3)]))
    decisions = [injector.decide(seq, "POST", STATUS) for seq in range(1, 7)]
    assert [d and d.params["phase"] for d in decisions] == [None, "unavailable", "missing", "unavailable", None, None]
    assert injector.decide(7, "POST", "/helpdesk/other") is None
    forced = FaultInjector(FaultPlan(rules=[rule("transient_5xx")]),
                           forced={3: FaultDecision(fault="throttling", source="rule:0")})
    assert forced.decide(1, "POST", STATUS) is None, "replay ignores the plan: only the logged faults fire"
    assert forced.decide(3, "GET", "/any") == FaultDecision(fault="throttling", source="rule:0")
    # Every class the vocabulary defines has its typed params (sites/kit/fault_params.py), and nothing else does.
    assert set(PARAMS_BY_CLASS) == set(FAULT_CLASSES) and len(FAULT_CLASSES) == len(set(FAULT_CLASSES))


@pytest.mark.parametrize(
    ("fault", "status", "text"),
    [
        ("transient_5xx", 503, "temporarily unavailable. Nothing was saved."),
        ("throttling", 429, "Too many requests. Wait 1 s and try again."),
        ("ambiguous_without_commit", 504, "It is not known whether your request was carried out."),
        ("spurious_validation", 422, "The form could not be validated."),
        ("version_conflict", 409, "changed by someone else since you loaded it. Reload the page"),
        ("session_expiry", 401, "Your session expired before this request"),
    ],
)
def test_a_refused_submission_answers_the_fault_page_commits_nothing_and_replays(
    registry: TenantRegistry, browser: Browser, fault: str, status: int, text: str
) -> None:
    inject(browser, rule(fault))
    page = browser.post(STATUS, {"status": "solved"}, status=status)
    assert text in page
    assert browser.tenant.journal() == [] and status_of(browser) == "open"
    (operation, _) = browser.tenant.operations()
    assert operation.fault is not None and operation.fault.fault == fault and operation.journal_rows == 0
    assert browser.post(STATUS, {"status": "solved"}) == f"{TICKET}?saved=1", "the next attempt goes through"
    assert status_of(browser) == "solved"
    assert replays_pass(registry, browser)
    if fault == "session_expiry":
        assert '<a href="/helpdesk/">Continue</a>' in page


def test_throttling_sends_retry_after(app_client: TestClient, browser: Browser) -> None:
    inject(browser, rule("throttling", params={"retry_after": "5"}))
    headers = {"X-ComputerOps-Tenant": browser.tenant.token}
    response = app_client.post(STATUS, data={"status": "solved"}, headers=headers)
    assert response.status_code == 429 and response.headers["retry-after"] == "5"


def test_ambiguous_after_commit_saves_but_answers_a_timeout(registry: TenantRegistry, browser: Browser) -> None:
    inject(browser, rule("ambiguous_after_commit"))
    page = browser.post(STATUS, {"status": "solved"}, status=504)
    assert "It is not known whether your request was carried out." in page
    assert status_of(browser) == "solved" and len(browser.tenant.journal()) == 1
    assert replays_pass(registry, browser)


def test_false_success_answers_saved_but_commits_nothing(registry: TenantRegistry, browser: Browser) -> None:
    inject(browser, rule("false_success"))
    location = browser.post(STATUS, {"status": "solved"})
    assert location == f"{TICKET}?saved=1"
    assert "Ticket updated." in browser.get(location), "the page says saved"
    assert status_of(browser) == "open" and browser.tenant.journal() == []
    assert replays_pass(registry, browser)


@pytest.mark.parametrize(("fault", "status", "text"), [
    ("missing_resource", 404, "/helpdesk/tickets/T-2005 was not found."),
    ("moved_endpoint", 410, '<a href="/helpdesk/tickets">Go to the new page</a>'),
])
def test_read_faults_answer_missing_or_moved_for_an_existing_record(
    registry: TenantRegistry, browser: Browser, fault: str, status: int, text: str
) -> None:
    inject(browser, rule(fault, path=TICKET, method="GET", params={"fallback": "/helpdesk/tickets"}))
    assert text in browser.get(TICKET, status=status)
    assert status_of(browser) == "open"
    assert replays_pass(registry, browser)


def test_a_stale_read_serves_the_page_as_it_was_before_the_latest_change(
    registry: TenantRegistry, browser: Browser
) -> None:
    inject(browser, rule("stale_read", path=TICKET, method="GET", occurrence=2))
    assert status_of(browser) == "open"  # the first load: fresh
    browser.post(STATUS, {"status": "solved"})
    assert status_of(browser) == "open", "the second load is stale"
    assert status_of(browser) == "solved", "the third is fresh again"
    (_, _, stale, _) = browser.tenant.operations()
    assert stale.fault is not None and stale.fault.fault == "stale_read"
    assert replays_pass(registry, browser)


def test_schema_drift_renames_a_field_for_the_rest_of_the_episode(registry: TenantRegistry, browser: Browser) -> None:
    inject(browser, rule("schema_drift", params={"field": "status", "renamed_to": "ticket_status",
                                                 "label": "Status", "new_label": "Ticket status"}))
    refused = browser.post(STATUS, {"status": "solved"}, status=422)
    assert 'the field "status" is now "ticket_status"' in refused.replace("&#34;", '"')
    page = browser.get(TICKET)
    assert 'name="ticket_status"' in page and ">Ticket status</label>" in page and 'name="status"' not in page
    assert "is now" in browser.post(STATUS, {"status": "solved"}, status=422), "the old name stays refused"
    assert browser.post(STATUS, {"ticket_status": "solved"}) == f"{TICKET}?saved=1"
    assert re.search(r"<dt>Status</dt><dd>solved</dd>", browser.get(TICKET))
    assert replays_pass(registry, browser)


def test_the_recovery_loop_trap_alternates_unavailable_and_missing(registry: TenantRegistry, browser: Browser) -> None:
    inject(browser, rule("recovery_loop_trap", times=4))
    for code in (503, 404, 503, 404):
        browser.post(STATUS, {"status": "solved"}, status=code)
    assert browser.tenant.journal() == []
    assert browser.post(STATUS, {"status": "solved"}) == f"{TICKET}?saved=1"
    assert replays_pass(registry, browser)


def test_without_a_fault_session_nothing_is_injected(browser: Browser) -> None:
    assert browser.tenant.faults is None
    browser.post(STATUS, {"status": "solved"})
    assert all(op.fault is None for op in browser.tenant.operations())
    assert FaultTarget(method="post", path="/a/.*").matches("POST", "/a/b")


@pytest.mark.parametrize("fault", ["partial_success", "duplicate_delivery", "out_of_order"])
def test_a_fault_the_site_cannot_carry_out_is_logged_as_decided_but_not_fired(browser: Browser, fault: str) -> None:
    assert fault not in HELPDESK.fault_support
    inject(browser, rule(fault))
    browser.post(STATUS, {"status": "solved"})
    assert status_of(browser) == "solved"
    decision = browser.tenant.operations()[0].fault
    assert decision is not None and decision.fault == fault and not decision.applied, "logged as decided, not fired"


def test_a_drifted_field_is_renamed_on_refusal_pages_too_and_a_stale_404_is_not_a_fault(
    registry: TenantRegistry, browser: Browser
) -> None:
    inject(browser, rule("schema_drift", path="/helpdesk/tickets/T-2005/notify",
                         params={"field": "subject", "renamed_to": "title", "label": "Subject", "new_label": "Title"}),
           rule("stale_read", path="/helpdesk/tickets/T-9999", method="GET"))
    browser.post("/helpdesk/tickets/T-2005/notify", {"subject": "Hi", "message": "x"}, status=422)
    refused = browser.post("/helpdesk/tickets/T-2005/notify", {"title": "", "message": "x"}, status=422)
    assert "Notification not sent: the subject is empty." in refused
    assert 'name="title"' in refused and 'name="subject"' not in refused, "the handler's own 422 page is renamed"
    browser.get("/helpdesk/tickets/T-9999", status=404)
    decision = browser.tenant.operations()[-1].fault
    assert decision is not None and not decision.applied, "decided, but nothing stale was served: not fired"
    assert replays_pass(registry, browser)


def test_a_matched_control_is_the_same_episode_with_injection_disabled() -> None:
    task = load_catalog()["helpdesk.fault-ambiguous-notify@1"]
    endpoint = parse_endpoint("scripted:oracle", base_url=None, model=None, api_key_env=None)
    plan = plan_episodes([task.id], endpoint, matched_controls=[task.id])
    assert [(p.episode_id, p.faults) for p in plan] == [
        ("001-helpdesk.fault-ambiguous-notify@1", True), ("002-helpdesk.fault-ambiguous-notify@1--control", False)]
    config = RunConfig(run_id="m", tasks=[task.id], endpoint=endpoint, episodes=plan)
    faulted, control = (config.fault_plan(task.spec, p) for p in plan)
    assert faulted is not None and faulted.rules == task.spec.faults
    assert faulted.configured == ["ambiguous_after_commit"]
    assert control is None
    rated = config.model_copy(update={"fault_rate": 0.2, "fault_classes": ["transient_5xx"]})
    plain = load_catalog()["helpdesk.solve-ticket@1"]
    assert rated.fault_plan(plain.spec, plan[0]) is not None, "a run rate reaches tasks without rules"
