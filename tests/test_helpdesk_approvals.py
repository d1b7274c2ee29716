"""Human approval is state (issue 27): approval requests, the simulated approver, and the refund route validating
the record at the action boundary (sites/helpdesk/approvals.py)."""

from __future__ import annotations

from helpdesk_codes import seeded_work
from site_client import Browser, error_of, site_fixtures
from sqlmodel import Session, select

from sites.helpdesk import HELPDESK
from sites.helpdesk.approvals import ANSWER_DELAY_MINUTES
from sites.helpdesk.ledgers import LEDGERS
from sites.helpdesk.models import ApprovalRequest

registry, app_client, tenant, browser = site_fixtures(HELPDESK)

WORK = seeded_work()
REQUEST, REVIEW = WORK.request, WORK.follow_up()
"""The request an agent's first approval request makes and the await-review follow-up it opens (seed 1)."""

LENA = "/helpdesk/orders/O-1090"


def request(browser: Browser, order: str = LENA, amount: str = "64.00", currency: str = "EUR",
            reason: str = "Blender stopped working", status: int = 303) -> str:
    return browser.post(f"{order}/approval-requests", {"request_amount": amount, "request_currency": currency,
                                                        "request_reason": reason}, status=status)


def refund(browser: Browser, approval: str, order: str = LENA, amount: str = "64.00", currency: str = "EUR",
           status: int = 303) -> str:
    return browser.post(f"{order}/refunds", {"amount": amount, "currency": currency, "approval": approval,
                                             "reason": "Broken"}, status=status)


def wait(browser: Browser, minutes: int = ANSWER_DELAY_MINUTES, page: str = LENA) -> str:
    """Reloads `page` `minutes` times (every request advances the logical clock a minute)."""
    text = ""
    for _ in range(minutes):
        text = browser.get(page)
    return text


def changes(browser: Browser) -> list[tuple[str, str]]:
    return [(entry.table, entry.change) for entry in browser.tenant.journal()]


def row_of(browser: Browser, code: str) -> ApprovalRequest:
    with Session(browser.tenant.engine) as session:
        found = session.exec(select(ApprovalRequest).where(ApprovalRequest.code == code)).one()
        session.expunge(found)
        return found


def test_a_request_writes_the_request_its_follow_up_and_its_future_answer_in_one_operation(browser: Browser) -> None:
    assert request(browser) == f"{LENA}?requested=1"
    assert changes(browser) == [("follow_up", "insert"), ("approval_request", "insert"),
                                ("approval_answer", "insert")]
    assert {entry.operation for entry in browser.tenant.journal()} == {1}
    made = row_of(browser, REQUEST)
    assert (made.amount_cents, made.currency, made.status, made.order_status, made.order_total_cents) == (
        6400, "EUR", "requested", "delivered", 6400)
    page = browser.get(LENA)
    assert REQUEST in page and "pending" in page and "none yet" in page and "Approved:" not in page
    follow_up = browser.get(f"/helpdesk/follow-ups/{REVIEW}")
    assert "await-review" in follow_up and REQUEST in follow_up


def test_a_pending_request_is_refused_until_the_answer_time_then_pays_once(browser: Browser) -> None:
    request(browser, amount="40.00")
    assert error_of(refund(browser, REQUEST, amount="40.00", status=422)) == (
        f"Refund refused: approval request {REQUEST} is still pending; Sam Patel has not answered.")
    page = wait(browser, ANSWER_DELAY_MINUTES - 2)  # the request was operation 1, the refused refund 2
    assert "pending" in page and "Approved:" not in page
    page = browser.get(LENA)  # the answer time: logical minute 1 + the delay
    assert "approved on" in page and "Approved: refund 40.00 EUR on order O-1090." in page
    before = len(browser.tenant.journal())
    assert refund(browser, REQUEST, amount="40.00") == f"{LENA}?refunded=1"
    assert [c for c in changes(browser)[before:]] == [("refund", "insert"), ("approval_request", "update"),
                                                      ("order", "update"), ("follow_up", "insert")]
    used = row_of(browser, REQUEST)
    assert used.status == "used" and used.refund_id is not None
    assert error_of(refund(browser, REQUEST, amount="10.00", status=422)) == (
        f"Refund refused: approval {REQUEST} has already been used.")


def test_the_approver_denies_more_than_is_still_refundable(browser: Browser) -> None:
    request(browser, "/helpdesk/orders/O-1091", amount="95.00", reason="Lamp flickers")
    page = wait(browser, ANSWER_DELAY_MINUTES, "/helpdesk/orders/O-1091")
    assert "denied on" in page and "95.00 EUR is more than the 80.00 EUR still refundable" in page
    assert error_of(refund(browser, REQUEST, "/helpdesk/orders/O-1091", "80.00", status=422)) == (
        f"Refund refused: approval request {REQUEST} was denied.")


def test_a_request_in_another_currency_is_denied(browser: Browser) -> None:
    request(browser, currency="USD")
    assert "was paid in EUR, not USD" in wait(browser)


def test_the_await_review_follow_up_can_be_marked_done_once_answered(browser: Browser) -> None:
    request(browser)
    assert error_of(browser.post(f"/helpdesk/follow-ups/{REVIEW}/done", status=422)) == (
        f"Follow-up {REVIEW} waits for a review; only the reviewer can mark it done.")
    wait(browser, ANSWER_DELAY_MINUTES - 2)
    assert browser.post(f"/helpdesk/follow-ups/{REVIEW}/done") == f"/helpdesk/follow-ups/{REVIEW}?saved=1"
    # A review follow-up of an escalation still waits for its reviewer.
    browser.post("/helpdesk/follow-ups/FU-3/done", status=422)


def test_a_second_request_waits_for_the_first_answer(browser: Browser) -> None:
    request(browser)
    assert error_of(request(browser, status=422)) == (
        f"Approval not requested: {REQUEST} for order O-1090 is still waiting for an answer.")
    not_an_amount = 'Approval not requested: "abc" is not an amount; type it like 49.90.'
    for fields, message in [(("abc", "EUR", "x"), not_an_amount),
                            (("0", "EUR", "x"), "Approval not requested: the amount must be more than 0.00."),
                            (("1.00", "GBP", "x"), "Approval not requested: choose a currency (EUR, USD)."),
                            (("1.00", "EUR", " "), "Approval not requested: say why the refund is needed.")]:
        amount, currency, reason = fields
        page = request(browser, "/helpdesk/orders/O-1093", amount, currency, reason, status=422)
        assert error_of(page) == message


def test_an_expired_approval_is_refused(browser: Browser) -> None:
    page = browser.get("/helpdesk/orders/O-1092")
    assert "expired (expires 2026-03-01 12:00)" in page
    assert error_of(refund(browser, "AR-1", "/helpdesk/orders/O-1092", "45.00", "USD", status=422)) == (
        "Refund refused: approval AR-1 expired on 2026-03-01 12:00.")
    assert browser.tenant.journal() == []


def test_an_approval_for_the_order_as_it_was_is_refused_once_the_order_changed(browser: Browser) -> None:
    page = browser.get("/helpdesk/orders/O-1094")
    assert "invalidated: the order changed since (total 90.00 → 75.00)" in page
    assert error_of(refund(browser, "AR-3", "/helpdesk/orders/O-1094", "60.00", status=422)) == (
        "Refund refused: approval AR-3 was given for order O-1094 as it was (delivered, 90.00 EUR); "
        "the order has changed since (total 90.00 → 75.00).")
    assert browser.tenant.journal() == []


def test_a_goodwill_credit_after_the_request_invalidates_its_approval(browser: Browser) -> None:
    request(browser, amount="40.00")
    browser.post(f"{LENA}/credits", {"credit_amount": "5.00", "credit_reason": "Sorry"})
    page = wait(browser)
    assert "invalidated" in page
    assert "the order has changed since (status delivered → partially_refunded)" in error_of(
        refund(browser, REQUEST, amount="40.00", status=422))


def test_a_duplicate_answer_is_shown_ignored_and_the_approval_pays_once(browser: Browser) -> None:
    order = "/helpdesk/orders/O-1093"
    page = browser.get(order)
    assert "Ignored duplicate answer: approved on 2026-02-27 15:00" in page
    assert "(a duplicate answer was ignored)" in browser.get("/helpdesk/approvals")
    refund(browser, "AR-2", order, "59.00")
    assert row_of(browser, "AR-2").status == "used"
    refund(browser, "AR-2", order, "59.00", status=422)  # the second answer pays nothing more
    assert [c for c in changes(browser) if c[0] == "refund"] == [("refund", "insert")]


def test_amount_currency_order_and_unknown_codes_are_refused(browser: Browser) -> None:
    order = "/helpdesk/orders/O-1093"
    assert error_of(refund(browser, "AR-2", order, "50.00", status=422)) == (
        "Refund refused: approval AR-2 covers 59.00 EUR, not 50.00 EUR.")
    assert error_of(refund(browser, "AR-2", order, "59.00", "USD", status=422)) == (
        "Refund refused: approval AR-2 covers 59.00 EUR, not 59.00 USD.")
    assert error_of(refund(browser, "AR-2", LENA, "59.00", status=422)) == (
        "Refund refused: approval AR-2 is not for order O-1090.")
    assert error_of(refund(browser, "AR-99", order, "59.00", status=422)) == (
        "Refund refused: approval AR-99 does not exist.")
    assert browser.tenant.journal() == []


def test_the_ledgers_carry_requests_as_they_stand_at_the_moment_read(browser: Browser) -> None:
    request(browser)
    with browser.tenant.engine.connect() as connection:
        from sites.kit.ledgers import read_site_ledgers

        ledgers = read_site_ledgers(connection, HELPDESK.metadata, LEDGERS)
    by_id = {a.id: a for a in ledgers.approvals}
    assert by_id[REQUEST].status == "pending" and by_id[REQUEST].amount.cents == 6400  # not yet answered
    assert by_id[REQUEST].invalidated_by == ["order.status", "order.total_cents", "order.currency"]
    assert {"AR-1", "AR-2", "AR-3", "RA-11"} <= set(by_id)
    # The seeded requests as they stand: expired, answered (its duplicate answer ignored), invalidated by the order.
    assert (by_id["AR-1"].status, by_id["AR-2"].status, by_id["AR-3"].status) == ("expired", "approved", "invalidated")
    assert REVIEW in {w.id for w in ledgers.unfinished_work}


def test_a_request_under_another_policy_version_is_refused(browser: Browser) -> None:
    from sites.helpdesk.approvals import refusal_for_request
    from sites.helpdesk.models import Order

    with Session(browser.tenant.engine) as session:
        made = session.exec(select(ApprovalRequest).where(ApprovalRequest.code == "AR-2")).one()
        made.policy_version = "2025-09"  # in memory only: nothing is committed
        order = session.exec(select(Order).where(Order.number == "O-1093")).one()
        assert refusal_for_request(session, order=order, request=made, cents=5900, currency="EUR",
                                   now="2026-03-02 09:00") == (
            "Refund refused: approval AR-2 was issued under refund policy 2025-09, but policy 2026-03 is in force.")
        session.rollback()
