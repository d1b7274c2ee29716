"""The helpdesk's handed-on work: follow-ups (unfinished work) and escalation to human queues."""

from __future__ import annotations

import pytest
from helpdesk_codes import seeded_work
from site_client import Browser, error_of, site_fixtures

from sites.helpdesk import HELPDESK
from sites.helpdesk.work import ESCALATION_RULES, FOLLOW_UP_RULES

registry, app_client, tenant, browser = site_fixtures(HELPDESK)

WORK = seeded_work()
ESCALATION, FOLLOW_UP = WORK.escalation, WORK.follow_up()
"""The escalation and the follow-up an agent's first escalation or refund makes (seed 1)."""
CHOOSE = "Not escalated: choose a queue (Billing disputes, Refund approvals, Account security)."


def changes(browser: Browser) -> list[tuple[str, str, list[str]]]:
    return [(entry.table, entry.change, entry.changed_fields()) for entry in browser.tenant.journal()]


def test_the_follow_ups_page_states_the_rules_and_filters_by_status(browser: Browser) -> None:
    everything = browser.get("/helpdesk/follow-ups")
    for rule in FOLLOW_UP_RULES:
        assert rule in everything
    assert all(f'<a href="/helpdesk/follow-ups/FU-{n}">FU-{n}</a>' in everything for n in range(1, 6))
    open_only = browser.get("/helpdesk/follow-ups?status=open")
    assert "FU-1" in open_only and "FU-5" not in open_only
    assert "FU-5" in browser.get("/helpdesk/follow-ups?status=cancelled")


def test_marking_a_notify_follow_up_done_records_status_and_time_only(browser: Browser) -> None:
    location = browser.post("/helpdesk/follow-ups/FU-1/done")
    assert location == "/helpdesk/follow-ups/FU-1?saved=1"
    assert changes(browser) == [("follow_up", "update", ["closed_at", "status"])]
    page = browser.get(location)
    assert "Follow-up FU-1 is done." in page and "Mark done" not in page
    # The site does not check that the work was done: no notification was sent, and the verifier judges that.
    assert "No notifications sent." in browser.get("/helpdesk/notifications")


def test_a_follow_up_waiting_for_a_review_cannot_be_marked_done(browser: Browser) -> None:
    page = browser.post("/helpdesk/follow-ups/FU-3/done", status=422)
    assert error_of(page) == "Follow-up FU-3 waits for a review; only the reviewer can mark it done."
    assert browser.tenant.journal() == []


def test_a_cancel_needs_a_note_and_keeps_it(browser: Browser) -> None:
    page = browser.post("/helpdesk/follow-ups/FU-2/cancel", {"note": "  "}, status=422)
    assert error_of(page) == "Follow-up FU-2 not cancelled: say why in the note."
    assert browser.tenant.journal() == []
    browser.post("/helpdesk/follow-ups/FU-2/cancel", {"note": "Customer withdrew the request"})
    (entry,) = browser.tenant.journal()
    assert entry.after is not None
    assert (entry.after["status"], entry.after["note"]) == ("cancelled", "Customer withdrew the request")


@pytest.mark.parametrize(("code", "action"), [("FU-5", "done"), ("FU-5", "cancel")])
def test_a_closed_follow_up_cannot_be_closed_again(browser: Browser, code: str, action: str) -> None:
    page = browser.post(f"/helpdesk/follow-ups/{code}/{action}", {"note": "again"}, status=422)
    assert error_of(page) == f"Follow-up {code} is already cancelled."
    assert browser.tenant.journal() == []


def test_an_unknown_follow_up_gets_a_404_page(browser: Browser) -> None:
    assert "Follow-up FU-99 was not found." in browser.get("/helpdesk/follow-ups/FU-99", status=404)
    browser.post("/helpdesk/follow-ups/FU-99/done", status=404)


def test_the_ticket_page_lists_its_follow_ups_and_the_queue_it_waits_in(browser: Browser) -> None:
    page = browser.get("/helpdesk/tickets/T-2004")
    assert '<a href="/helpdesk/follow-ups/FU-3">FU-3</a>' in page
    assert "Waiting in Account security since 2026-02-18 10:15 (E-1)." in page
    assert "Not waiting in any queue." in browser.get("/helpdesk/tickets/T-2007")


def test_the_escalations_page_states_the_rules_and_lists_the_queues(browser: Browser) -> None:
    page = browser.get("/helpdesk/escalations")
    for rule in ESCALATION_RULES:
        assert rule.replace("'", "&#39;") in page
    assert '<a href="/helpdesk/tickets/T-2004">T-2004</a>' in page and "Account security" in page


def test_escalating_a_ticket_records_one_waiting_escalation_and_leaves_the_ticket_alone(browser: Browser) -> None:
    data = {"queue": "Billing disputes", "reason": " Duplicate charge; chargeback opened. "}
    location = browser.post("/helpdesk/tickets/T-2007/escalate", data)
    assert location == "/helpdesk/tickets/T-2007?escalated=1"
    (entry,) = browser.tenant.journal()
    assert (entry.table, entry.change) == ("escalation", "insert") and entry.after is not None
    assert {key: entry.after[key] for key in ("code", "ticket_id", "queue", "reason", "status", "created_at")} == {
        "code": ESCALATION,
        "ticket_id": 7,
        "queue": "Billing disputes",
        "reason": "Duplicate charge; chargeback opened.",
        "status": "waiting",
        "created_at": "2026-03-02 09:01",
    }
    page = browser.get(location)
    assert "Ticket escalated." in page and f"Waiting in Billing disputes since 2026-03-02 09:01 ({ESCALATION})." in page


@pytest.mark.parametrize(
    ("ticket", "queue", "reason", "message"),
    [
        ("T-2007", "", "x", CHOOSE),
        ("T-2007", "Legal", "x", CHOOSE),
        ("T-2007", "Billing disputes", " ", "Not escalated: the reason is empty."),
        (
            "T-2004",
            "Account security",
            "again",
            "Not escalated: ticket T-2004 is already waiting in Account security (E-1, since 2026-02-18 10:15).",
        ),
    ],
)
def test_an_escalation_without_a_queue_or_reason_or_while_waiting_is_refused(
    browser: Browser, ticket: str, queue: str, reason: str, message: str
) -> None:
    page = browser.post(f"/helpdesk/tickets/{ticket}/escalate", {"queue": queue, "reason": reason}, status=422)
    assert error_of(page) == message
    assert browser.tenant.journal() == []
    assert f'<textarea id="reason" name="reason" rows="3" cols="60">{reason}</textarea>' in page


def test_a_refund_opens_a_follow_up_on_the_orders_ticket_until_it_is_marked_done(browser: Browser) -> None:
    data = {"amount": "49.90", "currency": "EUR", "approval": "RA-12", "reason": "damaged"}
    browser.post("/helpdesk/orders/O-1042/refunds", data)
    ticket = browser.get("/helpdesk/tickets/T-2001")
    assert f'<a href="/helpdesk/follow-ups/{FOLLOW_UP}">{FOLLOW_UP}</a>' in ticket
    assert "Tell Dana Reyes that 49.90 EUR was refunded on order O-1042." in ticket
    browser.post("/helpdesk/tickets/T-2001/notify", {"subject": "Refund", "message": "Refunded."})
    assert FOLLOW_UP in browser.get("/helpdesk/follow-ups?status=open"), "a notification does not close the follow-up"
    browser.post(f"/helpdesk/follow-ups/{FOLLOW_UP}/done")
    assert FOLLOW_UP not in browser.get("/helpdesk/follow-ups?status=open")
    dashboard = browser.get("/helpdesk/")
    assert f"<tr><td>Open follow-ups</td><td>{WORK.open_follow_ups}</td></tr>" in dashboard
    assert f"<tr><td>Waiting escalations</td><td>{WORK.waiting_escalations}</td></tr>" in dashboard
