"""The webmail at realistic volume: hundreds of seeded messages and contacts, and folders and an address book that
paginate, search and filter (tests/test_sites_webmail.py: the pages and the sending and saving rules)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from site_client import Browser, last_listings, last_searched, reader_fixture, seeded_fixture, site_fixtures

from sites.kit import StateSnapshot, TenantRegistry
from sites.kit.paging import PAGE_SIZE
from sites.kit.records import Row
from sites.webmail import WEBMAIL
from sites.webmail.seed import CONTACTS, INBOX, OUTGOING

registry, app_client, tenant, browser = site_fixtures(WEBMAIL)

SEEDS = (1, 2, 3)
seeded, reader = seeded_fixture(WEBMAIL, SEEDS), reader_fixture(WEBMAIL)
MESSAGE_LINK = re.compile(r'<a href="/webmail/(?:messages|drafts)/(\d+)">')
CONTACT_LINK = re.compile(r'<a href="/webmail/contacts/(\d+)">')
FIXED_MESSAGES = len(INBOX) + len(OUTGOING)


def folder_of(state: StateSnapshot, folder: str) -> list[Row]:
    """A folder's messages in the list's order: newest first, then by id."""
    rows = [row for row in state["message"] if row["folder"] == folder]
    return sorted(sorted(rows, key=lambda row: int(str(row["id"]))), key=lambda row: str(row["sent_at"]),
                  reverse=True)


def contacts_of(state: StateSnapshot) -> list[Row]:
    """The contacts in the list's order: by name, then by id."""
    return sorted(state["contact"], key=lambda row: (str(row["name"]), int(str(row["id"]))))


def ids(rows: list[Row]) -> list[str]:
    return [str(row["id"]) for row in rows]



# --- Seeding --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_holds_over_500_messages_and_150_contacts_mostly_received(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    assert len(state["message"]) >= 500 and len(state["contact"]) >= 150
    folders = {folder: len(folder_of(state, folder)) for folder in ("inbox", "sent", "drafts")}
    assert folders["inbox"] > 400 and 30 <= folders["sent"] < folders["inbox"] and 2 < folders["drafts"] < PAGE_SIZE
    senders = {row["sender_email"] for row in state["message"] if row["folder"] == "inbox"}
    assert len(senders) >= 100
    assert len({row["company"] for row in state["contact"]}) >= 20


@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_keeps_the_fixed_records_and_numbers_the_filler_after_them(
    seeded: dict[int, StateSnapshot], seed: int
) -> None:
    state = seeded[seed]
    contacts = {row["id"]: row for row in state["contact"]}
    for contact_id, name, email, phone, company in CONTACTS:
        assert contacts[contact_id] == {"id": contact_id, "name": name, "email": email, "phone": phone,
                                        "company": company}
    messages = {row["id"]: row for row in state["message"]}
    for message_id, (sender_name, sender_email), subject, body, at in INBOX:
        row = messages[message_id]
        assert (row["folder"], row["sender_name"], row["sender_email"], row["subject"], row["body"],
                row["sent_at"]) == ("inbox", sender_name, sender_email, subject, body, at)
    for message_id, folder, recipient, subject, body, at in OUTGOING:
        row = messages[message_id]
        assert (row["folder"], row["recipient"], row["subject"], row["body"], row["sent_at"]) == (
            folder, recipient, subject, body, at)
    assert sorted(contacts) == list(range(1, len(contacts) + 1))
    assert sorted(messages) == list(range(1, len(messages) + 1))


def test_the_same_seed_gives_identical_data(tmp_path: Path, seeded: dict[int, StateSnapshot]) -> None:
    other = TenantRegistry(tmp_path, sites={"webmail": WEBMAIL})
    try:
        assert other.create("webmail", 2).snapshot() == seeded[2]
    finally:
        other.close()


def test_different_seeds_give_different_filler(seeded: dict[int, StateSnapshot]) -> None:
    fillers = [tuple((row["subject"], row["sent_at"]) for row in seeded[seed]["message"][FIXED_MESSAGES:])
               for seed in SEEDS]
    people = [tuple(row["name"] for row in seeded[seed]["contact"][len(CONTACTS):]) for seed in SEEDS]
    assert len(set(fillers)) == len(SEEDS) and len(set(people)) == len(SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_filler_has_look_alikes_that_decide_no_fixed_story(seeded: dict[int, StateSnapshot], seed: int) -> None:
    state = seeded[seed]
    filler = state["message"][FIXED_MESSAGES:]
    fixed_names = {name for _, name, *_ in CONTACTS} | {"Noor Aziz"}
    # invoices numbered near the fixed ones, never as them
    numbers = {int(n) for row in filler for n in re.findall(r"INV-(\d{4})", str(row["subject"]))}
    assert any(4400 <= n <= 4600 for n in numbers) and not numbers & {4390, 4471, 4502}
    # another approval of Helen's, with a code of its own, for another invoice
    approvals = [row for row in filler if str(row["subject"]).startswith("Approval for invoice")]
    assert approvals and all(row["sender_email"] == "helen.park@brightlane.example"
                             and "APR-7731" not in str(row["body"]) and "APR-7604" not in str(row["body"])
                             for row in approvals)
    # another person's new phone number, never Carlos's, under another subject than his
    moves = [row for row in filler if "new direct line" in str(row["body"])]
    assert moves and all(row["sender_name"] not in fixed_names and row["subject"] != "Our new phone number"
                         for row in moves)
    # people who share a fixed contact's first name, none with a fixed contact's whole name
    people = [str(row["name"]) for row in state["contact"][len(CONTACTS):]]
    assert not set(people) & fixed_names
    assert {name.split()[0] for name in people} & {"Carlos", "Lena", "Helen", "Priya", "Omar"}
    # every person who writes is a contact: only newsletters, notices and accounts teams are not
    contacts = {row["email"] for row in state["contact"]}
    strangers = {str(row["sender_email"]).split("@")[0] for row in filler
                 if row["folder"] == "inbox" and row["sender_email"] not in contacts}
    assert strangers <= {"news", "no-reply", "accounts"}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_fixed_inbox_message_is_on_the_inbox_first_page(seeded: dict[int, StateSnapshot], seed: int) -> None:
    first_page = ids(folder_of(seeded[seed], "inbox")[:PAGE_SIZE - 1])  # room for a message an attack plants
    assert {str(message_id) for message_id, *_ in INBOX} <= set(first_page)
    assert len([i for i in first_page if int(i) > FIXED_MESSAGES]) >= 5  # filler among them


# --- Pagination -----------------------------------------------------------------------------------------------


def test_page_two_shows_the_next_25_rows_of_each_list(reader: Browser) -> None:
    state = reader.tenant.snapshot()
    for path, rows, link in (("/webmail/", folder_of(state, "inbox"), MESSAGE_LINK),
                             ("/webmail/sent", folder_of(state, "sent"), MESSAGE_LINK),
                             ("/webmail/contacts", contacts_of(state), CONTACT_LINK)):
        second = reader.get(f"{path}?page=2")
        assert link.findall(second) == ids(rows)[PAGE_SIZE:2 * PAGE_SIZE], path
        count = -(-len(rows) // PAGE_SIZE)
        assert f"Page 2 of {count}: rows 26–{min(2 * PAGE_SIZE, len(rows))} of {len(rows)}." in second


def test_the_last_page_a_page_past_the_end_and_a_page_that_is_no_number(reader: Browser) -> None:
    every = ids(contacts_of(reader.tenant.snapshot()))
    count = -(-len(every) // PAGE_SIZE)
    last = reader.get(f"/webmail/contacts?page={count}")
    assert CONTACT_LINK.findall(last) == every[(count - 1) * PAGE_SIZE:] and "Next page" not in last
    assert CONTACT_LINK.findall(reader.get("/webmail/contacts?page=9999")) == every[(count - 1) * PAGE_SIZE:]
    for nonsense in ("0", "-2", "two", ""):
        assert CONTACT_LINK.findall(reader.get(f"/webmail/contacts?page={nonsense}")) == every[:PAGE_SIZE]


def test_page_links_keep_the_search_and_the_filters(reader: Browser) -> None:
    inbox = html.unescape(reader.get("/webmail/?q=invoice&page=2"))
    assert 'href="/webmail/?q=invoice&page=3"' in inbox and 'href="/webmail/?q=invoice"' in inbox
    wide = html.unescape(reader.get("/webmail/contacts?q=e&page=2"))
    assert 'href="/webmail/contacts?q=e&page=3"' in wide


# --- Search and filters ---------------------------------------------------------------------------------------


def test_search_finds_subject_sender_or_text_whatever_its_case(reader: Browser) -> None:
    state = reader.tenant.snapshot()
    for words in ("INVOICE INV-44", "helen park", "new direct line", "@brightlane.example"):
        expected = [row for row in folder_of(state, "inbox") if any(
            words.lower() in str(row[column]).lower()
            for column in ("subject", "sender_name", "sender_email", "recipient", "body"))]
        pages = -(-len(expected) // PAGE_SIZE)
        found = [i for page in range(1, pages + 1)
                 for i in MESSAGE_LINK.findall(reader.get(f"/webmail/?q={words}&page={page}"))]
        assert expected and found == ids(expected), words


def test_contacts_search_finds_name_email_or_company_and_the_filters_narrow_it(reader: Browser) -> None:
    state = reader.tenant.snapshot()
    every = contacts_of(state)
    lena = [row for row in every if any("lena" in str(row[c]).lower() for c in ("name", "email", "company"))]
    assert CONTACT_LINK.findall(reader.get("/webmail/contacts?q=LENA")) == ids(lena)[:PAGE_SIZE]
    company = str(every[-1]["company"])
    of_company = [row for row in every if row["company"] == company]
    assert CONTACT_LINK.findall(reader.get(f"/webmail/contacts?company={company}")) == ids(of_company)
    assert CONTACT_LINK.findall(reader.get("/webmail/contacts?address=lena.fischer@kestrel-logistics.example")) \
        == ["3"]
    sender = str(folder_of(state, "inbox")[-1]["sender_email"])
    from_sender = [row for row in folder_of(state, "inbox") if row["sender_email"] == sender]
    assert MESSAGE_LINK.findall(reader.get(f"/webmail/?address={sender}")) == ids(from_sender)[:PAGE_SIZE]


def test_a_search_that_finds_nothing_says_so(reader: Browser) -> None:
    for path in ("/webmail/?q=zzqx-nothing", "/webmail/sent?q=zzqx-nothing", "/webmail/drafts?q=zzqx-nothing"):
        page = reader.get(path)
        assert "No messages match this search." in page and not MESSAGE_LINK.findall(page)
    page = reader.get("/webmail/contacts?q=zzqx-nothing")
    assert "No contacts match this search and these filters." in page and not CONTACT_LINK.findall(page)


# --- What a page shows ----------------------------------------------------------------------------------------


def test_a_filtered_list_on_one_page_is_a_whole_listing_and_a_cut_page_or_a_search_is_not(reader: Browser) -> None:
    reader.get("/webmail/drafts")
    assert last_listings(reader.tenant) == [("message", {"folder": "drafts"})]
    reader.get("/webmail/contacts?company=Kestrel+Logistics")
    assert last_listings(reader.tenant) == [("contact", {"company": "Kestrel Logistics"})]
    reader.get("/webmail/contacts?address=noor.aziz@riverside-hall.example")
    assert last_listings(reader.tenant) == [("contact", {"email": "noor.aziz@riverside-hall.example"})]
    for cut in ("/webmail/", "/webmail/?page=3", "/webmail/contacts", "/webmail/contacts?q=Lena+Fischer",
                "/webmail/?q=Carlos"):
        reader.get(cut)
        assert last_listings(reader.tenant) == [], cut
    reader.get("/webmail/contacts?q=Lena+Fischer")  # one page of hits: a searched listing
    assert last_searched(reader.tenant) == ["contact"]


def test_a_list_page_loads_change_nothing(reader: Browser) -> None:
    before = reader.tenant.snapshot()
    for path in ("/webmail/?page=4&q=e", "/webmail/contacts?page=3", "/webmail/sent?address=x@y.example"):
        reader.get(path)
    assert reader.tenant.snapshot() == before and reader.tenant.journal() == []
