"""The ledger site: its pages, its event procedure, exactly-once dispatch and checkpoints (what every site keeps:
tests/test_site_invariants.py)."""

from __future__ import annotations

from site_client import Browser, error_of, site_fixtures

from sites.kit import Tenant
from sites.ledger import LEDGER

NAV = ("Console", "Response queue", "Deliveries", "Dispatch log", "Ledger entries", "Checkpoints")


registry, app_client, tenant, browser = site_fixtures(LEDGER)


def changes(tenant: Tenant) -> list[tuple[str, str]]:
    return [(entry.table, entry.change) for entry in tenant.journal()]


def test_the_navigation_names_every_section(browser: Browser) -> None:
    """Every page shows the start page's navigation (tests/test_site_invariants.py); these are its sections."""
    page = browser.get("/ledger/")
    assert all(f">{name}</a>" in page for name in NAV)


def test_an_unknown_event_or_delivery_gets_a_404_page(browser: Browser) -> None:
    assert "Event EV-999 was not found." in browser.get("/ledger/events/EV-999", status=404)
    assert "Delivery D-999 was not found." in browser.get("/ledger/deliveries/D-999", status=404)


def test_processing_a_payment_event_posts_its_entry_and_marks_it_processed(browser: Browser) -> None:
    location = browser.post("/ledger/events/EV-501/process")
    assert location == "/ledger/events/EV-501?processed=1"
    entry, event = browser.tenant.journal()
    assert (entry.table, entry.change, event.table, event.change) == ("entry", "insert", "event", "update")
    assert entry.after is not None and event.after is not None
    assert (entry.after["event_id"], entry.after["amount_cents"], entry.after["currency"]) == (1, 125000, "EUR")
    assert event.changed_fields() == ["processed_at", "status"]
    page = browser.get(location)
    assert "Event processed." in page and "Process event</button>" not in page


def test_a_processed_held_or_waiting_event_is_refused_without_a_change(browser: Browser) -> None:
    assert "already processed" in error_of(browser.post("/ledger/events/EV-509/process", status=409))
    assert "is held" in error_of(browser.post("/ledger/events/EV-511/process", status=409))
    waiting = error_of(browser.post("/ledger/events/EV-504/process", status=409))
    assert "depends on EV-503, which is queued" in waiting
    assert "depends on EV-511, which is held" in error_of(browser.post("/ledger/events/EV-512/process", status=409))
    assert browser.tenant.journal() == []
    browser.post("/ledger/events/EV-503/process")
    browser.post("/ledger/events/EV-504/process")
    assert changes(browser.tenant) == [("entry", "insert"), ("event", "update")] * 2


def test_process_selected_handles_queued_events_in_number_order_whole_or_not_at_all(browser: Browser) -> None:
    queue = browser.get("/ledger/events")
    assert "Select EV-501" in queue and "Select EV-509" not in queue, "only queued events can be selected"
    assert "select at least one event" in error_of(browser.post("/ledger/events/process-selected", {}, status=422))
    assert "no event EV-999" in error_of(
        browser.post("/ledger/events/process-selected", {"event": ["EV-501", "EV-999"]}, status=404))
    refused = error_of(browser.post("/ledger/events/process-selected",
                                    {"event": ["EV-501", "EV-509", "EV-512"]}, status=409))
    assert refused.startswith("Refused, nothing was processed:")
    assert "EV-509 was already processed" in refused and "depends on EV-511, which is held" in refused
    assert browser.tenant.journal() == []
    # EV-504 depends on EV-503: selected together, the dependency is processed first.
    location = browser.post("/ledger/events/process-selected", {"event": ["EV-504", "EV-503", "EV-504"]})
    assert location == "/ledger/events?processed=2"
    assert "Processed 2 event(s)." in browser.get(location)
    events = [e.after["number"] for e in browser.tenant.journal() if e.table == "event" and e.after]
    assert events == ["EV-503", "EV-504"]
    assert changes(browser.tenant) == [("entry", "insert"), ("event", "update")] * 2


def test_a_delivery_request_event_opens_a_delivery_numbered_after_the_event(browser: Browser) -> None:
    browser.post("/ledger/events/EV-505/process")
    page = browser.get("/ledger/events/EV-505")
    assert '<a href="/ledger/deliveries/D-505">D-505</a>' in page
    delivery = browser.get("/ledger/deliveries/D-505")
    assert "REQ-7105" in delivery and "Lindqvist Bakery" in delivery and "Not dispatched yet." in delivery


def test_a_delivery_is_dispatched_once_and_a_second_submission_is_recorded_as_a_duplicate(browser: Browser) -> None:
    assert browser.post("/ledger/deliveries/D-304/dispatch", {"request_id": "REQ-7004", "version": "1"}) == (
        "/ledger/deliveries/D-304?dispatched=1"
    )
    sent, delivered = browser.tenant.journal()
    assert sent.after is not None and delivered.after is not None
    assert (sent.after["outcome"], delivered.after["status"], delivered.after["version"]) == ("sent", "delivered", 2)
    again = browser.post("/ledger/deliveries/D-304/dispatch", {"request_id": "REQ-7004", "version": "2"}, status=409)
    assert "already delivered" in error_of(again) and "recorded as a duplicate" in error_of(again)
    duplicate = browser.tenant.journal()[-1]
    assert (duplicate.table, duplicate.change) == ("dispatch", "insert")
    assert duplicate.after is not None and duplicate.after["outcome"] == "duplicate"
    assert "duplicate" in browser.get("/ledger/dispatches")


def test_a_stale_record_version_is_refused_and_recorded(browser: Browser) -> None:
    stale = browser.post("/ledger/deliveries/D-307/dispatch", {"request_id": "REQ-7007", "version": "2"}, status=409)
    assert "record version 2 is stale; delivery D-307 is at version 3" in error_of(stale)
    [entry] = browser.tenant.journal()
    assert entry.after is not None and (entry.table, entry.after["outcome"]) == ("dispatch", "stale")
    wrong = browser.post("/ledger/deliveries/D-307/dispatch", {"request_id": "REQ-7001", "version": "3"}, status=422)
    assert "does not belong to delivery D-307" in error_of(wrong)
    assert len(browser.tenant.journal()) == 1


def test_an_amendment_needs_the_current_version_and_bumps_it(browser: Browser) -> None:
    stale = browser.post("/ledger/deliveries/D-306", {"destination": "Dock 4", "version": "0"}, status=409)
    assert "stale" in error_of(stale)
    assert browser.tenant.journal() == []
    browser.post("/ledger/deliveries/D-306", {"destination": "Dock 4", "version": "1"})
    browser.post("/ledger/deliveries/D-306", {"destination": "Dock 4", "version": "2"})  # same value: no change
    [entry] = browser.tenant.journal()
    assert entry.changed_fields() == ["destination", "updated_at", "version"]
    delivered = browser.post("/ledger/deliveries/D-302", {"destination": "Dock 1", "version": "2"}, status=409)
    assert "can no longer be amended" in error_of(delivered)


def test_the_generic_forms_create_records_without_a_source_event(browser: Browser) -> None:
    data = {"account": "ACC-300 Suspense", "amount": "990.00", "currency": "EUR", "memo": "by hand"}
    assert browser.post("/ledger/entries", data) == "/ledger/entries?created=1"
    new = {"request_id": "req-9001", "recipient": "Somebody", "destination": "Dock 1"}
    location = browser.post("/ledger/deliveries", new)
    entry, delivery = browser.tenant.journal()
    assert entry.after is not None and delivery.after is not None
    assert (entry.after["event_id"], delivery.after["event_id"], delivery.after["request_id"]) == (
        None,
        None,
        "REQ-9001",
    )
    assert "none (entered by hand)" in browser.get(location)
    used = browser.post("/ledger/deliveries", {**new, "request_id": "REQ-7002"}, status=422)
    assert "already used" in error_of(used)
    assert "not a positive amount" in error_of(browser.post("/ledger/entries", {**data, "amount": "x"}, status=422))
    assert len(browser.tenant.journal()) == 2


def test_a_complete_checkpoint_is_refused_while_the_batch_is_unfinished(browser: Browser) -> None:
    refused = browser.post("/ledger/checkpoints", {"batch": "B-2", "status": "complete", "note": ""}, status=422)
    assert "still has 3 unfinished event(s)" in error_of(refused)
    assert browser.tenant.journal() == []
    browser.post("/ledger/checkpoints", {"batch": "B-2", "status": "partial", "note": "started"})
    for number in ("EV-506", "EV-507", "EV-508"):
        browser.post(f"/ledger/events/{number}/process")
    browser.post("/ledger/checkpoints", {"batch": "B-2", "status": "complete", "note": "done"})
    checkpoints = [e.after for e in browser.tenant.journal() if e.table == "checkpoint"]
    assert [(c["number"], c["status"], c["processed_count"], c["unfinished_count"]) for c in checkpoints if c] == [
        ("CP-2", "partial", 1, 3),
        ("CP-3", "complete", 4, 0),
    ]


def test_seeds_differ_only_in_filler() -> None:
    import random

    from sqlmodel import Session, create_engine, select

    from sites.ledger.models import METADATA, Delivery, Event
    from sites.ledger.seed import seed_ledger

    def fixed(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str, int]], int]:
        engine = create_engine("sqlite://")
        METADATA.create_all(engine)
        with Session(engine) as session:
            seed_ledger(session, random.Random(seed))
            events = [(e.number, e.status) for e in session.exec(select(Event)) if (e.id or 0) <= 12]
            deliveries = [
                (d.number, d.request_id, d.version) for d in session.exec(select(Delivery)) if (d.id or 0) <= 8
            ]
            total = len(list(session.exec(select(Event))))
        return events, deliveries, total

    one, two = fixed(1), fixed(2)
    assert one[:2] == two[:2] and len(one[0]) == 12 and len(one[1]) == 8
    assert one[2] >= 20
