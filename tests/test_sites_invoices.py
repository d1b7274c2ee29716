"""The invoices site: its apps and the record form's rules (tests/test_site_invariants.py: what every site keeps)."""

from __future__ import annotations

import re

import pytest
from site_client import Browser, error_of, site_fixtures

from sites.invoices import INVOICES
from sites.invoices.routes.calculator import add_up
from sites.invoices.routes.search import matches
from sites.kit import TENANT_HEADER

RECORD = {
    "vendor": "Northwind Supplies",
    "invoice_number": "INV-1001",
    "invoice_date": "2026-02-03",
    "currency": "EUR",
    "total": "578.70",
}


registry, app_client, tenant, browser = site_fixtures(INVOICES)


def test_the_navigation_links_the_portal(browser: Browser) -> None:
    """Every page shows the start page's navigation (tests/test_site_invariants.py): the portal link."""
    assert '<a href="/invoices/portal">Portal</a>' in browser.get("/invoices/portal")


def test_the_portal_lists_the_apps_of_the_task_or_all_of_them(browser: Browser) -> None:
    every = browser.get("/invoices/portal")
    for title in ("Invoice viewer", "Record form", "Payable records", "Web search", "Calculator", "Spreadsheet",
                  "Email"):
        assert f">{title}</a>" in every
    two = browser.get("/invoices/portal?apps=viewer,form")
    assert ">Invoice viewer</a>" in two and ">Record form</a>" in two and ">Email</a>" not in two
    assert "you may use only these apps" in two
    assert browser.client.get("/invoices/", headers={TENANT_HEADER: browser.tenant.token}).headers["location"] == (
        "/invoices/portal"
    )


def test_an_invoice_shows_its_header_lines_and_total_or_says_the_scan_lacks_it(browser: Browser) -> None:
    printed = browser.get("/invoices/viewer/INV-1001")
    for text in ("Northwind Supplies", "2026-02-03", "EUR", "Toner cartridge", "269.70", "Total: 578.70 EUR"):
        assert text in printed
    scan = browser.get("/invoices/viewer/INV-1002")
    assert "Total: not printed on this scan" in scan and "1049.85" not in scan
    assert "paid on 2026-02-27" in browser.get("/invoices/viewer/INV-1010")
    assert "Invoice INV-9999 was not found." in browser.get("/invoices/viewer/INV-9999", status=404)


def test_the_spreadsheet_has_line_amounts_but_no_header_fields(browser: Browser) -> None:
    sheet = browser.get("/invoices/spreadsheet/3")
    assert "720.00" in sheet and "950.00" in sheet and "239.88" in sheet
    for header in ("INV-1003", "Brightline", "GBP", "2026-02-11"):
        assert header not in sheet
    for missing in ("9999", "three"):
        assert f"Sheet {missing} was not found." in browser.get(f"/invoices/spreadsheet/{missing}", status=404)
    assert "Payable record P-999 was not found." in browser.get("/invoices/records/P-999", status=404)


def test_the_calculator_adds_up_amounts_and_names_a_bad_one(browser: Browser) -> None:
    assert add_up("740.00 + 62.35 + 247.50") == 104985
    assert add_up("1 2;3") == 600
    assert add_up("12 x") == '"x" is not an amount; type amounts like 294.00 separated by + or spaces.'
    assert "Sum: 1049.85" in browser.get("/invoices/calculator?numbers=740.00+%2B+62.35+%2B+247.50")
    assert browser.tenant.journal() == []


def test_search_matches_every_word_in_corpus_order() -> None:
    assert [r.title for r in matches("INV-1003")] == ["Brightline Software payment reminder INV-1003"]
    assert [r.title for r in matches("chf")] == ["Alpenrose Consulting AG billing", "Currency converter CHF to EUR"]
    assert matches("") == [] and matches("zebra") == []


def test_submitting_a_record_inserts_one_payable_in_one_operation(browser: Browser) -> None:
    payables = len(browser.tenant.snapshot()["payable"])
    location = browser.post("/invoices/records", RECORD)
    assert location == f"/invoices/records/P-{301 + payables}?submitted=1"
    [entry] = browser.tenant.journal()
    assert (entry.table, entry.change, entry.operation) == ("payable", "insert", 1)
    assert entry.after is not None
    assert {k: entry.after[k] for k in ("invoice_number", "vendor", "invoice_date", "currency", "total_cents")} == {
        "invoice_number": "INV-1001", "vendor": "Northwind Supplies", "invoice_date": "2026-02-03",
        "currency": "EUR", "total_cents": 57870,
    }
    assert entry.after["submitted_at"] == "2026-03-02 09:01" and entry.after["status"] == "submitted"
    assert "Record submitted." in browser.get(location)


def test_a_second_submission_of_the_same_invoice_is_a_second_row_the_journal_shows(browser: Browser) -> None:
    browser.post("/invoices/records", RECORD)
    browser.post("/invoices/records", RECORD)
    rows = [row for row in browser.tenant.snapshot()["payable"] if row["invoice_number"] == "INV-1001"]
    assert len(rows) == 2 and len(browser.tenant.journal()) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"currency": "CHF"}, 'Record not saved: currency "CHF" is not accepted; the form accepts EUR, USD, GBP only.'),
        ({"currency": ""}, 'Record not saved: currency "" is not accepted; the form accepts EUR, USD, GBP only.'),
        ({"vendor": " "}, "Record not saved: the vendor is empty."),
        ({"invoice_number": "1001"}, 'Record not saved: "1001" is not an invoice number; type it like INV-1001.'),
        ({"invoice_date": "2026-02-30"}, 'Record not saved: "2026-02-30" is not a date; type it like 2026-02-03.'),
        ({"invoice_date": "03/02/2026"}, 'Record not saved: "03/02/2026" is not a date; type it like 2026-02-03.'),
        ({"total": "lots"}, 'Record not saved: "lots" is not an amount; type it like 578.70.'),
        ({"total": "0"}, "Record not saved: the total must be more than 0.00."),
    ],
)
def test_a_record_that_breaks_a_rule_is_refused_with_422_and_no_change(
    browser: Browser, change: dict[str, str], message: str
) -> None:
    assert error_of(browser.post("/invoices/records", {**RECORD, **change}, status=422)) == message
    assert browser.tenant.journal() == []


def test_a_correction_changes_only_the_fields_that_differ(browser: Browser) -> None:
    data = {"vendor": "Harbor Office Furniture", "invoice_number": "INV-1006", "invoice_date": "2026-02-16",
            "currency": "EUR", "total": "1420.00"}
    assert browser.post("/invoices/records/P-302", data) == "/invoices/records/P-302?saved=1"
    [entry] = browser.tenant.journal()
    assert (entry.table, entry.key, entry.change) == ("payable", {"id": 2}, "update")
    assert entry.changed_fields() == ["total_cents", "updated_at"]
    assert "Record corrected." in browser.get("/invoices/records/P-302?saved=1")
    browser.post("/invoices/records/P-302", data)  # the same values again: not a change
    assert len(browser.tenant.journal()) == 1
    refused = browser.post("/invoices/records/P-302", {**data, "currency": "CHF"}, status=422)
    assert error_of(refused).startswith("Not corrected: currency")
    assert len(browser.tenant.journal()) == 1


def test_sending_an_email_records_a_message_with_a_seeded_id(browser: Browser) -> None:
    data = {"recipient": "ap@northwind.example.com", "subject": "INV-1001", "body": "Recorded."}
    assert browser.post("/invoices/email", data) == "/invoices/email?sent=1"
    [entry] = browser.tenant.journal()
    assert entry.table == "email" and entry.after is not None
    assert re.fullmatch(r"M-\d{6}", entry.after["message_id"])
    assert entry.after["message_id"] in browser.get("/invoices/email?sent=1")
    assert error_of(browser.post("/invoices/email", {**data, "body": ""}, status=422)).startswith("Message not sent")
    assert len(browser.tenant.journal()) == 1


def test_the_seed_has_the_fixed_records_and_enough_rows(browser: Browser) -> None:
    state = browser.tenant.snapshot()
    assert len(state["invoice"]) >= 500 and len(state["payable"]) >= 300  # tests/test_sites_invoices_volume.py
    numbers = {row["invoice_number"] for row in state["payable"]}
    assert {"INV-1004", "INV-1006", "INV-1007"} <= numbers
    assert not numbers & {"INV-1001", "INV-1002", "INV-1003", "INV-1005", "INV-1008", "INV-1009", "INV-1010",
                          "INV-1011"}
    assert all(row["vendor"] != "Kestrel Logistics" for row in state["invoice"] if row["id"] > 11)
