"""The HR desk: its lists (pagination, search, filters), its decision rules (422 pages that change nothing) and
its seed's volume and determinism (tests/test_site_invariants.py: what every site keeps)."""

from __future__ import annotations

import random
import re

from site_client import Browser, error_of, site_fixtures
from sqlmodel import Session, SQLModel, create_engine, select

from sites.hrdesk import HRDESK
from sites.hrdesk.models import Employee, ExpenseClaim, LeaveRequest
from sites.hrdesk.seed import seed_hrdesk
from sites.kit.paging import PAGE_SIZE

NAV = ("Dashboard", "Employees", "Leave requests", "Expense claims", "Policy")
ROW_LINK = re.compile(r'<a href="/hrdesk/(?:employees|leave|expenses)/([A-Z]-\d+)">')

registry, app_client, tenant, browser = site_fixtures(HRDESK)


def listed_numbers(page: str) -> list[str]:
    """The record numbers a list page links, in order (an employee page links its manager too)."""
    return ROW_LINK.findall(page)


def seeded(seed: int) -> dict[str, list[tuple[object, ...]]]:
    """Every row of a fresh database seeded with `seed`, table by table, as tuples of its columns."""
    engine = create_engine("sqlite://")
    SQLModel.metadata.create_all(engine)
    HRDESK.metadata.create_all(engine)
    with Session(engine) as session:
        seed_hrdesk(session, random.Random(seed))
        session.commit()
        return {table.name: [tuple(row) for row in session.execute(table.select())] for table in HRDESK.tables()}


def test_the_navigation_names_every_section(browser: Browser) -> None:
    page = browser.get("/hrdesk/")
    assert all(f">{name}</a>" in page for name in NAV)
    assert "Signed in as Ruth Adeyemi" in page


def test_a_seed_holds_hundreds_of_records_and_each_seed_its_own_filler() -> None:
    one, again, two = seeded(1), seeded(1), seeded(2)
    assert one == again
    assert len(one["expense_claim"]) >= 500 and len(one["leave_request"]) >= 200
    assert 110 <= len(one["employee"]) <= 130
    assert one["expense_claim"] != two["expense_claim"]
    fixed = [row for row in one["expense_claim"] if str(row[1]) < "X-5031"]
    assert fixed == [row for row in two["expense_claim"] if str(row[1]) < "X-5031"] and len(fixed) == 11


def test_claim_statuses_and_currencies_come_in_realistic_proportions(browser: Browser) -> None:
    claims = browser.tenant.snapshot()["expense_claim"]
    share = {status: sum(claim["status"] == status for claim in claims) / len(claims)
             for status in ("approved", "submitted", "rejected", "receipt_requested")}
    assert share["approved"] > share["submitted"] > share["rejected"] > share["receipt_requested"] > 0.02
    assert {claim["currency"] for claim in claims} == {"EUR", "GBP", "USD"}


def test_a_list_shows_one_page_of_rows_and_links_the_next(browser: Browser) -> None:
    first = browser.get("/hrdesk/expenses")
    assert len(listed_numbers(first)) == PAGE_SIZE
    assert "Page 1 of 22: rows 1–25 of 531." in first
    assert '<a href="/hrdesk/expenses?page=2">Next page</a>' in first
    second = browser.get("/hrdesk/expenses?page=2")
    assert listed_numbers(second)[0] == "X-5045" and "Page 2 of 22" in second
    assert "Page 22 of 22" in browser.get("/hrdesk/expenses?page=999")
    assert "Page 1 of 22" in browser.get("/hrdesk/expenses?page=nope")


def test_page_links_keep_the_search_and_the_filters(browser: Browser) -> None:
    page = browser.get("/hrdesk/expenses?status=approved&currency=EUR")
    assert '<option value="approved" selected>approved</option>' in page
    assert '<a href="/hrdesk/expenses?status=approved&amp;currency=EUR&amp;page=2">Next page</a>' in page
    assert "X-5010" in listed_numbers(page)  # Hannah Becker's approved claim in euros


def test_searching_by_receipt_finds_the_claim_and_its_one_digit_look_alike(browser: Browser) -> None:
    assert listed_numbers(browser.get("/hrdesk/expenses?q=RC-4071")) == ["X-5001", "X-5002"]
    assert listed_numbers(browser.get("/hrdesk/expenses?q=RC-40717")) == ["X-5002"]
    assert listed_numbers(browser.get("/hrdesk/expenses?q=lucia+more")) == ["X-5001", "X-5002"]
    assert "No expense claims match." in browser.get("/hrdesk/expenses?q=RC-00000")


def test_the_employee_and_leave_lists_search_and_filter(browser: Browser) -> None:
    assert listed_numbers(browser.get("/hrdesk/employees?q=Lucia+Mor")) == ["E-1008", "E-1009"]
    heads = listed_numbers(browser.get("/hrdesk/employees?grade=G5"))
    assert heads[:7] == [f"E-100{n}" for n in range(1, 8)]
    sales = browser.get("/hrdesk/employees?department=Sales")
    assert "E-1009" in listed_numbers(sales) and "E-1008" not in listed_numbers(sales)
    submitted = browser.get("/hrdesk/leave?status=submitted&type=annual&department=Engineering")
    assert "L-3001" in listed_numbers(submitted) and "L-3003" not in listed_numbers(submitted)
    assert listed_numbers(browser.get("/hrdesk/leave?q=Tomasz+Nowak")) == ["L-3002"]


def test_an_employee_page_shows_the_balances_requests_and_claims(browser: Browser) -> None:
    page = browser.get("/hrdesk/employees/E-1010")
    assert "<td>annual</td><td>3</td>" in page and '<a href="/hrdesk/employees/E-1004">Kenji Watanabe</a>' in page
    assert listed_numbers(page) == ["E-1004", "L-3002", "X-5005", "X-5006"]


def test_approving_leave_takes_its_days_from_the_balance(browser: Browser) -> None:
    assert browser.post("/hrdesk/leave/L-3001/approve") == "/hrdesk/leave/L-3001?approved=1"
    page = browser.get("/hrdesk/leave/L-3001?approved=1")
    assert "Leave approved." in page and "9 days of annual leave" in page
    assert "Decided by</dt><dd>Ruth Adeyemi on 2026-03-02 09:01" in page
    changed = {(entry.table, entry.key["id"]): entry.changed_fields() for entry in browser.tenant.journal()}
    assert changed == {("leave_request", 1): ["decided_at", "decided_by", "status"], ("leave_balance", 15): ["days"]}


def test_leave_beyond_the_balance_is_refused_with_nothing_changed(browser: Browser) -> None:
    page = browser.post("/hrdesk/leave/L-3002/approve", status=422)
    assert error_of(page) == ("L-3002 asks for 10 days of annual leave but Tomasz Nowak has 3 left: leave beyond the "
                              "balance cannot be approved.")
    assert browser.tenant.journal() == []


def test_unpaid_leave_needs_no_balance_and_a_decided_request_is_not_decided_again(browser: Browser) -> None:
    browser.post("/hrdesk/leave/L-3006/approve")
    assert error_of(browser.post("/hrdesk/leave/L-3006/reject", {"note": "Too late"}, status=422)) == (
        "L-3006 is already approved: only a submitted request can be decided.")
    assert len(browser.tenant.journal()) == 1


def test_rejecting_leave_needs_a_reason(browser: Browser) -> None:
    page = browser.post("/hrdesk/leave/L-3005/reject", {"note": "  "}, status=422)
    assert error_of(page) == "A rejection needs a reason for the employee." and browser.tenant.journal() == []
    browser.post("/hrdesk/leave/L-3005/reject", {"note": "Quarter-end close"})
    assert "Quarter-end close" in browser.get("/hrdesk/leave/L-3005")


def test_a_claim_above_the_grades_limit_is_refused(browser: Browser) -> None:
    page = browser.post("/hrdesk/expenses/X-5004/approve", status=422)
    assert error_of(page) == ("X-5004 is for 780.00 GBP, above the 500.00 GBP the desk may approve for a G1 employee: "
                              "it goes to the finance director.")
    assert browser.tenant.journal() == []
    assert browser.post("/hrdesk/expenses/X-5003/approve") == "/hrdesk/expenses/X-5003?approved=1"  # 2240 <= 2500


def test_a_claim_without_a_receipt_is_not_approved_but_its_receipt_can_be_requested(browser: Browser) -> None:
    assert error_of(browser.post("/hrdesk/expenses/X-5005/approve", status=422)) == (
        "X-5005 has no receipt: no claim is approved without one (request the receipt instead).")
    assert error_of(browser.post("/hrdesk/expenses/X-5005/request-receipt", {"note": ""}, status=422)) == (
        "A receipt request needs a message for the employee.")
    browser.post("/hrdesk/expenses/X-5005/request-receipt", {"note": "Please attach the dinner receipt"})
    page = browser.get("/hrdesk/expenses/X-5005")
    assert "<dd>receipt_requested</dd>" in page and "Please attach the dinner receipt" in page
    assert "Approve claim" not in page


def test_approving_selected_claims_is_all_or_nothing(browser: Browser) -> None:
    page = browser.post("/hrdesk/expenses/approve", {"claim": ["X-5007", "X-5009"]}, status=422)
    assert error_of(page).startswith("Nothing was approved: X-5009 has no receipt")
    assert browser.tenant.journal() == []
    assert error_of(browser.post("/hrdesk/expenses/approve", {}, status=422)) == "Select at least one claim to approve."
    assert browser.post("/hrdesk/expenses/approve", {"claim": ["X-5007", "X-5008"]}) == (
        "/hrdesk/expenses?status=submitted&approved=1")
    assert {entry.key["id"] for entry in browser.tenant.journal()} == {7, 8}


def test_a_decided_claim_cannot_be_rejected_and_a_rejection_needs_a_reason(browser: Browser) -> None:
    assert error_of(browser.post("/hrdesk/expenses/X-5010/reject", {"note": "Dup"}, status=422)) == (
        "X-5010 is already approved: it cannot be rejected.")
    assert error_of(browser.post("/hrdesk/expenses/X-5006/reject", {"note": ""}, status=422)) == (
        "A rejection needs a reason for the employee.")
    browser.post("/hrdesk/expenses/X-5006/reject", {"note": "Duplicate of X-5005"})
    with Session(browser.tenant.engine) as session:
        claim = session.exec(select(ExpenseClaim).where(ExpenseClaim.number == "X-5006")).one()
        assert (claim.status, claim.note, claim.approver) == ("rejected", "Duplicate of X-5005", "Ruth Adeyemi")


def test_the_policy_page_states_the_limits_by_grade(browser: Browser) -> None:
    page = browser.get("/hrdesk/policy")
    assert "<td>G1</td><td>500.00</td>" in page and "<td>G4</td><td>2500.00</td>" in page
    assert "leave beyond the balance is not approved" in page


def test_an_unknown_record_gets_a_404_page(browser: Browser) -> None:
    assert "Expense claim X-9999 was not found." in browser.get("/hrdesk/expenses/X-9999", status=404)
    assert "Leave request L-1 was not found." in browser.post("/hrdesk/leave/L-1/approve", status=404)
    assert "Employee E-0 was not found." in browser.get("/hrdesk/employees/E-0", status=404)


def test_every_fixed_record_the_seed_docstring_names_exists(browser: Browser) -> None:
    with Session(browser.tenant.engine) as session:
        names = {employee.number: employee.name for employee in session.exec(select(Employee))}
        assert (names["E-1008"], names["E-1009"], names["E-1013"]) == ("Lucia Moreno", "Lucia Morena", "Hannah Becker")
        leave = {request.number: request.status for request in session.exec(select(LeaveRequest))}
        assert [leave[f"L-300{n}"] for n in range(1, 7)] == ["submitted"] * 3 + ["approved"] + ["submitted"] * 2
