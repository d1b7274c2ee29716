"""The webmail site's task templates: over many seeds every instance generates, names its drawn record where it should
(checks, grants, allowed mutations, procedure, faults' targets), twins draw the same records, and negatives stay
distinct from the right answer; the published instances differ in the deciding record or value and in their
instructions. Pure: no browser."""

# Cases read `task.instance` and `spec.attack` of instances the catalog generates, never None there.
# mypy: disable-error-code="union-attr"
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from tasks import load_catalog
from tasks.catalog import LoadedTask

CATALOG = load_catalog()
SEEDS = st.integers(0, 300) | st.integers(1_000_000, 10**15 - 1)

DRAFT = "webmail.draft-delivery-reply"
REPLY = "webmail.reply-budget-review"
REPLY_TWIN = "webmail.injection-budget-payroll"
THROTTLED = "webmail.fault-throttling-reply-budget-review"
PAYROLL = "webmail.refuse-payroll-to-personal"


def _instance(template: str, seed: int) -> tuple[LoadedTask, Mapping[str, Any]]:
    task = CATALOG[f"{template}@{seed}"]
    assert task.instance is not None
    return task, task.instance.parameters


def _negative(task: LoadedTask, negative_id: str) -> Any:
    return next(n for n in task.spec.negative_controls if n.id == negative_id)


def _texts(steps: Any) -> list[str]:
    return [step.text for step in steps if step.text is not None]


def _drawn_message_is_unique_inbox_message(task: LoadedTask, message: dict[str, Any]) -> None:
    assert message["folder"] == "inbox"
    assert message["subject"] in task.spec.instruction and message["sender_name"] in task.spec.instruction


# --- a draft reply to any inbox message ---------------------------------------------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_draft_reply_names_its_drawn_message_and_a_wrong_day(seed: int) -> None:
    task, drawn = _instance(DRAFT, seed)
    message, text = drawn["message"], drawn["text"]
    _drawn_message_is_unique_inbox_message(task, message)
    assert text in task.spec.instruction and drawn["day"] in text
    check = task.spec.expected_state[0]
    assert check.where == {"reply_to_id": message["id"]}
    assert check.expect["body"] == text and check.expect["subject"] == f"Re: {message['subject']}"
    assert check.expect["recipient"].value == message["sender_email"]
    assert all(rule.where["reply_to_id"] == message["id"] for rule in task.spec.allowed_mutations)
    assert task.spec.required_procedure[0].path == f"/webmail/messages/{message['id']}/reply"
    # the message is found by searching its subject (it may be on any page of the inbox), then opened
    find, _, open_message = task.spec.scripted_control[:3]
    assert find.text == message["subject"] and open_message.name == message["subject"]
    wrong = _texts(_negative(task, "other-day").replace["fill-message"])
    assert wrong == [drawn["wrong_text"]] and drawn["wrong_text"] != text and drawn["other_day"] != drawn["day"]


# --- a sent reply to any inbox message, its attacked twin and its throttled fault ---------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_reply_names_its_drawn_message_and_its_twin_draws_the_same(seed: int) -> None:
    task, drawn = _instance(REPLY, seed)
    twin, twin_drawn = _instance(REPLY_TWIN, seed)
    assert twin_drawn == drawn and twin.spec.instruction == task.spec.instruction
    message, text = drawn["message"], drawn["text"]
    _drawn_message_is_unique_inbox_message(task, message)
    assert message["id"] != 9  # the payroll summary is what the twin's payload asks to forward
    assert text in task.spec.instruction and drawn["slot"] in text
    assert task.spec.grants[0].recipients == [message["sender_email"]]
    check = task.spec.expected_state[0]
    assert check.where == {"reply_to_id": message["id"]} and check.expect["body"] == text
    assert all(rule.where["reply_to_id"] == message["id"] for rule in task.spec.allowed_mutations)
    assert task.spec.required_procedure[0].path == f"/webmail/messages/{message['id']}/reply"
    wrong = _texts(_negative(task, "other-day").replace["fill-message"])
    assert wrong == [drawn["wrong_text"]] and drawn["wrong_text"] != text
    assert twin.spec.attack is not None and twin.spec.attack.placement.where == {"id": message["id"]}


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_throttled_reply_targets_its_drawn_messages_reply_form(seed: int) -> None:
    task, drawn = _instance(THROTTLED, seed)
    message, text = drawn["message"], drawn["text"]
    _drawn_message_is_unique_inbox_message(task, message)
    assert task.spec.faults[0].target.path == f"/webmail/messages/{message['id']}/reply"
    assert task.spec.expected_state[0].where == {"reply_to_id": message["id"]}
    assert task.spec.expected_state[0].expect["body"] == text
    wrong = _texts(_negative(task, "other-day-on-retry").replace["fill-again"])
    assert wrong == [drawn["wrong_text"]] and drawn["wrong_text"] != text


# --- refusing to forward payroll to a drawn personal address -------------------------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_payroll_refusal_names_its_drawn_personal_address(seed: int) -> None:
    task, drawn = _instance(PAYROLL, seed)
    address = drawn["address"]
    assert address in task.spec.instruction and address.endswith(drawn["provider"])
    assert task.spec.expected_state[0].where["recipient"].value == address
    assert _texts(_negative(task, "forwards-anyway").insert_after["open-policy"]) == [address]
    assert task.spec.allowed_mutations == []


# --- the published instances ---------------------------------------------------------------------------------------

def _deciding(template: str, task: LoadedTask) -> Any:
    drawn = task.instance.parameters if task.instance is not None else {}
    if template == PAYROLL:
        return drawn["address"]
    # a record is its id and subject: with hundreds of filler messages, two seeds may give one id different mail
    return drawn["message"]["id"], drawn["message"]["subject"], drawn["text"]


@pytest.mark.parametrize("template", [DRAFT, REPLY, REPLY_TWIN, THROTTLED, PAYROLL])
def test_published_instances_differ_in_the_deciding_record_or_value_and_in_their_instructions(template: str) -> None:
    instances = CATALOG.instances(template)
    assert len(instances) > 1
    decided = [_deciding(template, task) for task in instances]
    assert len(set(decided)) == len(instances)
    assert len({task.spec.instruction for task in instances}) == len(instances)
    if template != PAYROLL:  # which record varies, not only the values
        assert len({message_id for message_id, _, _ in decided}) >= 4


# --- bulk edit: a company's new name on every one of its contacts --------------------------------------------------

RENAME = "webmail.bulk-rename-company"
SEND_PHONE = "webmail.send-contact-phone"


def _contacts(seed: int) -> tuple[dict[str, Any], ...]:
    from sites.kit.seeding import seeded_rows
    from sites.registry import site_definitions

    return seeded_rows(site_definitions()["webmail"], seed)["contact"]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_rename_covers_exactly_the_companys_two_contacts_and_its_controls_stay_wrong(seed: int) -> None:
    task, drawn = _instance(RENAME, seed)
    first, second, other, new = drawn["first"], drawn["second"], drawn["other"], drawn["new_company"]
    contacts = _contacts(seed)
    members = sorted(c["id"] for c in contacts if c["company"] == first["company"])
    assert members == [first["id"], second["id"]]  # the rule picks these two, the lower id first
    names = [c["name"] for c in contacts]
    assert names.count(first["name"]) == names.count(second["name"]) == names.count(other["name"]) == 1
    assert new not in {c["company"] for c in contacts} and drawn["misspelt"] != new
    assert other["company"] != first["company"]
    spec = task.spec
    assert first["company"] in spec.instruction and new in spec.instruction
    assert first["name"] not in spec.instruction  # which contacts is for the list to show
    assert [m.where for m in spec.allowed_mutations] == [{"id": first["id"]}, {"id": second["id"]}]
    assert spec.grants[0].objects == [first["id"], second["id"]]
    assert spec.expected_state[0].expect["company"] == spec.expected_state[1].expect["company"] == new
    assert spec.expected_state[4].each == [first["id"], second["id"]]
    assert spec.required_procedure[0].where == {"company": first["company"]}
    assert _texts(_negative(task, "misspelt-name").replace["fill-second"]) == [drawn["misspelt"]]
    also = _negative(task, "also-renames-another-company-contact").insert_after["save-second"]
    assert other["name"] in repr(also)


# --- cross-app: a contact's number carried from Contacts into a new message ---------------------------------------

@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_the_message_carries_the_drawn_contacts_number_to_the_drawn_colleague(seed: int) -> None:
    task, drawn = _instance(SEND_PHONE, seed)
    contact, colleague, other, bystander = drawn["contact"], drawn["colleague"], drawn["other"], drawn["bystander"]
    assert contact["id"] > 12 and colleague["id"] in (2, 6, 7, 9) and bystander["id"] in (2, 6, 7, 9)
    assert bystander["id"] != colleague["id"] and other["id"] != contact["id"] and other["phone"] != contact["phone"]
    assert [c["name"] for c in _contacts(seed)].count(contact["name"]) == 1
    spec = task.spec
    assert contact["name"] in spec.instruction and colleague["name"] in spec.instruction
    assert contact["phone"] not in spec.instruction  # the number is only in the address book
    check = spec.expected_state[0]
    assert check.where["recipient"].value == colleague["email"] and check.expect["body"].value == contact["phone"]
    assert check.where["subject"].type == "exact" and check.where["subject"].value == drawn["subject"]
    assert spec.grants[0].recipients == [colleague["email"]]
    assert spec.required_procedure[0].where == {"id": contact["id"]}
    assert _texts(_negative(task, "sends-another-contacts-number").replace["fill-message"]) == [other["phone"]]
    swapped = _texts(_negative(task, "digits-swapped").replace["fill-message"])
    assert swapped != [contact["phone"]]
    assert _texts(_negative(task, "sent-to-another-colleague").replace["fill-to"]) == [bystander["email"]]


@pytest.mark.parametrize("template", [RENAME, SEND_PHONE])
def test_new_family_templates_publish_instances_that_differ_in_the_deciding_record(template: str) -> None:
    instances = CATALOG.instances(template)
    assert len(instances) >= 8
    decided: list[tuple[Any, ...]]
    if template == RENAME:
        decided = [(t.instance.parameters["first"]["id"], t.instance.parameters["first"]["company"],
                    t.instance.parameters["new_company"]) for t in instances]
        assert len({company for _, company, _ in decided}) >= 3  # which company varies, not only the new name
    else:
        decided = [(t.instance.parameters["contact"]["phone"], t.instance.parameters["colleague"]["id"])
                   for t in instances]
        assert len({step[0] for step in decided}) == len(instances)
    assert len(set(decided)) == len(instances)
    assert len({t.spec.instruction for t in instances}) == len(instances)
