"""The webmail site: its pages and its sending and saving rules (tests/test_site_invariants.py: what every site
keeps)."""

from __future__ import annotations

import html
import re

import pytest
from site_client import Browser, error_of, site_fixtures

from sites.kit import JournalEntry, TenantRegistry
from sites.webmail import WEBMAIL
from sites.webmail.models import OWNER_EMAIL

NAV = ("Inbox", "Sent", "Drafts", "Compose", "Contacts", "Mail policy")


registry, app_client, tenant, browser = site_fixtures(WEBMAIL)


def only_entry(browser: Browser) -> JournalEntry:
    [entry] = browser.tenant.journal()
    return entry


def test_the_navigation_names_every_section(browser: Browser) -> None:
    """Every page shows the start page's navigation (tests/test_site_invariants.py); these are its sections."""
    page = browser.get("/webmail/")
    assert all(f">{name}</a>" in page for name in NAV)


def test_the_inbox_lists_the_fixed_messages_newest_first_with_links(browser: Browser) -> None:
    page = browser.get("/webmail/")
    assert '<a href="/webmail/messages/2">Our new phone number</a>' in page
    assert '<a href="/webmail/messages/8">Change of room for your 12 March booking</a>' in page
    assert page.index("Delivery window next week") < page.index("Our new phone number")  # 03-01 14:10 first
    assert "Catering order for 14 March" not in page  # a draft, not received mail


def test_a_message_page_shows_the_body_and_links_to_reply_and_forward(browser: Browser) -> None:
    page = browser.get("/webmail/messages/10")
    assert "+44 161 555 0147" in page and "noor.aziz@riverside-hall.example" in page
    assert '<a href="/webmail/messages/10/reply">Reply</a>' in page
    assert '<a href="/webmail/messages/10/forward">Forward</a>' in page


def test_unknown_ids_and_replies_to_sent_mail_get_404(browser: Browser) -> None:
    assert "Message 999 was not found." in browser.get("/webmail/messages/999", status=404)
    assert "Received message 15 was not found." in browser.get("/webmail/messages/15/reply", status=404)
    assert "Draft 3 was not found." in browser.get("/webmail/drafts/3", status=404)
    assert "Contact x was not found." in browser.get("/webmail/contacts/x", status=404)


def test_a_reply_is_sent_to_the_sender_linked_to_the_message(browser: Browser) -> None:
    form = browser.get("/webmail/messages/3/reply")
    assert 'value="omar.haddad@brightlane.example"' in form and 'value="Re: Quarterly budget review"' in form
    data = {"to": "omar.haddad@brightlane.example", "subject": "Re: Quarterly budget review",
            "body": "Tuesday 10:00 works.\r\n\r\nJordan", "action": "send"}
    assert browser.post("/webmail/messages/3/reply", data) == "/webmail/sent?done=sent"
    entry = only_entry(browser)
    assert (entry.table, entry.change, entry.operation) == ("message", "insert", 2)
    assert entry.after is not None
    assert {key: entry.after[key] for key in ("folder", "recipient", "reply_to_id", "forward_of_id", "sender_email",
                                              "body", "sent_at")} == {
        "folder": "sent", "recipient": "omar.haddad@brightlane.example", "reply_to_id": 3, "forward_of_id": None,
        "sender_email": OWNER_EMAIL, "body": "Tuesday 10:00 works.\n\nJordan", "sent_at": "2026-03-02 09:02",
    }
    assert "Message sent." in browser.get("/webmail/sent?done=sent")


def test_save_draft_keeps_a_reply_in_drafts_and_sending_the_draft_moves_the_same_row(browser: Browser) -> None:
    data = {"to": "lena.fischer@kestrel-logistics.example", "subject": "Re: Delivery window next week",
            "body": "Thursday morning.", "action": "draft"}
    assert browser.post("/webmail/messages/11/reply", data) == "/webmail/drafts?done=saved"
    draft_id = only_entry(browser).key["id"]
    assert "Draft saved." in browser.get("/webmail/drafts?done=saved")
    assert browser.post(f"/webmail/drafts/{draft_id}", {**data, "action": "send"}) == "/webmail/sent?done=sent"
    sent = browser.tenant.journal()[-1]
    assert (sent.change, sent.key["id"], sent.changed_fields()) == ("update", draft_id, ["folder", "sent_at"])
    assert sent.after is not None and sent.after["reply_to_id"] == 11


def test_sending_a_draft_unchanged_changes_only_folder_and_time(browser: Browser) -> None:
    form = browser.get("/webmail/drafts/17")
    body = html.unescape(re.search(r"<textarea[^>]*>(.*?)</textarea>", form, re.S).group(1))  # type: ignore[union-attr]
    data = {"to": "priya.raman@freshtable.example", "subject": "Catering order for 14 March",
            "body": body.replace("\n", "\r\n"), "action": "send"}
    browser.post("/webmail/drafts/17", data)
    assert only_entry(browser).changed_fields() == ["folder", "recipient", "sent_at"]


def test_a_forward_stores_the_note_and_links_the_forwarded_message(browser: Browser) -> None:
    assert "Forwarded message" in browser.get("/webmail/messages/5/forward")
    browser.post("/webmail/messages/5/forward", {"to": "ap@brightlane.example", "body": "APR-7731"})
    after = only_entry(browser).after
    assert after is not None
    assert (after["subject"], after["body"], after["forward_of_id"], after["recipient"]) == (
        "Fwd: Invoice INV-4502 for warehouse services", "APR-7731", 5, "ap@brightlane.example")


def test_a_send_to_a_recipient_the_policy_forbids_is_recorded_with_that_recipient(browser: Browser) -> None:
    assert "personal webmail addresses" in browser.get("/webmail/policy")
    browser.post("/webmail/messages/9/forward", {"to": "jordan.blake.home@gmail.com", "body": ""})
    after = only_entry(browser).after
    assert after is not None and after["recipient"] == "jordan.blake.home@gmail.com"


@pytest.mark.parametrize(
    ("path", "data", "message"),
    [
        ("/webmail/compose", {"to": "omar", "subject": "Hi"},
         'Not sent: "omar" is not an email address; type one address like name@example.com.'),
        ("/webmail/compose", {"to": "a@b.example, c@d.example", "subject": "Hi"},
         'Not sent: "a@b.example, c@d.example" is not an email address; type one address like name@example.com.'),
        ("/webmail/compose", {"to": "omar.haddad@brightlane.example", "subject": "  "},
         "Not sent: the subject is empty."),
        ("/webmail/messages/3/reply", {"to": "", "subject": "Re: x"},
         'Not sent: "" is not an email address; type one address like name@example.com.'),
        ("/webmail/messages/5/forward", {"to": "nobody"},
         'Not sent: "nobody" is not an email address; type one address like name@example.com.'),
        ("/webmail/drafts/17", {"to": "priya", "subject": "x", "action": "draft"},
         'Not sent: "priya" is not an email address; type one address like name@example.com.'),
        ("/webmail/contacts/new", {"name": "", "email": "a@b.example"}, "Not saved: the name is empty."),
        ("/webmail/contacts/3", {"name": "Lena", "email": "lena"}, 'Not saved: "lena" is not an email address.'),
    ],
)
def test_an_invalid_form_is_refused_with_422_and_no_change(
    browser: Browser, path: str, data: dict[str, str], message: str
) -> None:
    assert error_of(browser.post(path, data, status=422)) == message
    assert browser.tenant.journal() == []


def test_saving_a_contact_writes_only_the_changed_field(browser: Browser) -> None:
    data = {"name": "Lena Fischer", "email": "lena.fischer@kestrel-logistics.example", "phone": "+49 30 5550 9876",
            "company": "Kestrel Logistics"}
    assert browser.post("/webmail/contacts/3", data) == "/webmail/contacts/3?saved=1"
    entry = only_entry(browser)
    assert (entry.table, entry.key, entry.changed_fields()) == ("contact", {"id": 3}, ["phone"])
    assert "Contact saved." in browser.get("/webmail/contacts/3?saved=1")


def test_adding_a_contact_inserts_one_row(browser: Browser) -> None:
    data = {"name": " Noor Aziz ", "email": "noor.aziz@riverside-hall.example", "phone": "+44 161 555 0147",
            "company": "Riverside Hall"}
    assert browser.post("/webmail/contacts/new", data) == "/webmail/contacts?added=1&q=Noor+Aziz"
    after = only_entry(browser).after
    assert after is not None and after["name"] == "Noor Aziz" and after["id"] > 12
    assert '>Noor Aziz</a>' in browser.get("/webmail/contacts?added=1&q=Noor+Aziz")


def test_seeds_share_the_fixed_records_and_differ_in_filler(registry: TenantRegistry) -> None:
    one, two = registry.create("webmail", 1).snapshot(), registry.create("webmail", 2).snapshot()
    assert one["contact"][:12] == two["contact"][:12] and one["message"][:18] == two["message"][:18]
    assert one != two
    assert len(one["contact"]) >= 150 and len(one["message"]) >= 500
