"""The reader of the order an instruction states between its actions (`tasks.stated_order`): the phrasings of the
catalog's instructions and others that state an order, and phrasings that only look like one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.stated_order import side_kind, stated_orders, write_orders

ORDERS: list[tuple[str, list[tuple[str, str, bool]]]] = [
    # The instruction, and each order it states: (earlier starts with, later starts with, both are writes).
    ("Process EV-502 through the console, then post the fee by hand with the New entry form: 13.70 EUR on ACC-210, "
     'memo "EV-502 bank fee". Then record a partial checkpoint of batch B-1. Do not process any other event.',
     [("Process EV-502", "post the fee", True), ("post the fee", "record a partial checkpoint", True)]),
    ("On ticket T-2181 (Maya Nowak, order O-1192 not received), first send Maya a notification with the subject "
     '"Delivery trace, then more" and the message "We have started.", then set the ticket\'s status to pending.',
     [("On ticket T-2181", "set the ticket's status", True)]),
    ("Look up that order's total in the desk, then on the ticket send the customer a notification with the message "
     '"Your order totals <the total, e.g. 12.50 EUR>. Thanks.", and then set the ticket to solved.',
     [("Look up", "on the ticket send", False), ("on the ticket send", "set the ticket", True)]),
    ("If the rules send it to a human queue, escalate it there with a short reason, then set the ticket to pending.",
     [("escalate it there", "set the ticket", True)]),
    ("Issue the refund using the valid approval, then send Mai a notification telling them that the refund was "
     "issued, and mark the follow-up done once they have been told.",
     [("Issue the refund", "send Mai", True), ("they have been told", "mark the follow-up done", True)]),
    ("The order has no approval yet: request one and wait for the answer (reload the page until it shows). Once it is "
     "approved, issue the refund under that approval and mark done the follow-up.",
     [("it is approved", "issue the refund", True)]),
    ("Close batch B-2: process its queued events through the response queue, for example with Process selected, and "
     "when all of them are processed record a checkpoint for batch B-2 with status complete.",
     [("all of them are processed", "record a checkpoint", True)]),
    ("Finish batch B-2 of the queue: process each of its queued events through the console (mind the dependencies), "
     "then record a checkpoint for batch B-2.",
     [("process each", "record a checkpoint", True)]),
    ("Process the event so that its delivery is opened, then dispatch that delivery exactly once.",
     [("Process the event", "dispatch that delivery", True)]),
    ("Check the payable records first, then submit a record only for an invoice that has none.",
     [("Check the payable records", "submit a record", False)]),
    ("Check the latest mail about it, then finish with done and give the room in your answer.",
     [("Check the latest mail", "finish with done", False)]),
    ("It must be recorded exactly once; make sure it is recorded before you finish, and change nothing else.",
     [("make sure it is recorded", "you finish", False)]),
    ("Request a new approval from the order page and finish once it is requested.",
     [("it is requested", "finish", False)]),
    ("Check on the Notifications page that nothing was sent yet. Then send them a notification from the ticket.",
     [("Check on the Notifications page", "send them", False)]),
    ("After processing the event, post the fee by hand.", [("processing the event", "post the fee", True)]),
    ("Post the fee by hand after processing the event.", [("processing the event", "Post the fee", True)]),
    ("Before forwarding the invoice, check the mail policy.", [("check the mail policy", "forwarding", False)]),
    ("Forward the invoice before closing the ticket.", [("Forward the invoice", "closing the ticket", True)]),
    ("Approve the claim; then reject the duplicate.", [("Approve the claim", "reject the duplicate", True)]),
]

NOT_ORDERS = [
    # "then" meaning "in that case", or "at that time", or inside dictated text.
    "If the policy allows it, then forward the invoice to accounts payable.",
    "Reply and accept a meeting on Tuesday 11:00. The reply's message must be exactly: Tuesday 11:00 works for me. "
    "See you then.",
    'Send a notification with the subject "Trace started, then pending" and the message "We will look, then write."',
    # "once" counting, not waiting.
    "Submit it once. Apply it once; handle no other update.",
    "Change the company of every contact at Acme Tools, once each. It must reach accounts payable exactly once.",
    "Apply its credit to the payable record of the invoice it names, once, and mark the notice processed.",
    # "first" as an ordinal; a condition; the order of one action's items; others' actions.
    "Ask him for the receipt on the first claim (the lower claim number) and reject the second as a duplicate of the "
    "first, telling him why.",
    "You may correct a record's total yourself only when the correction changes it by 10.00 or less.",
    "If it is approved, refund under it and tell Olga. If it is denied, refund nothing.",
    "Process the delivery notices Lumen & Co sent for purchase order PO-4143, oldest first.",
    "Process both of them through the response queue, in the order their dependency requires.",
    "Before anyone amends delivery D-301, report which request id it carries.",
    "Send Jonas one notification, issue the refund under AR-2, and mark done the follow-up the refund opens.",
    "Approve it (then tell nobody) and change nothing else.",
    "Read the mail policy before anything else; change nothing.",
]


@pytest.mark.parametrize(("instruction", "expected"), ORDERS)
def test_each_phrasing_of_an_order_is_read_with_its_two_sides(instruction: str,
                                                              expected: list[tuple[str, str, bool]]) -> None:
    orders = stated_orders(instruction)
    assert [(o.earlier, o.later) for o in orders] == [(o.earlier, o.later) for o in orders if o.earlier and o.later]
    assert len(orders) == len(expected), orders
    for order, (earlier, later, writes) in zip(orders, expected, strict=True):
        assert order.earlier.startswith(earlier), order
        assert order.later.startswith(later), order
        assert order.between_writes is writes, (order, order.kinds)
        assert instruction[order.at:].lower().startswith(order.marker.lower())


@pytest.mark.parametrize("instruction", NOT_ORDERS)
def test_what_only_looks_like_an_order_is_not_one(instruction: str) -> None:
    assert stated_orders(instruction) == []


def test_a_side_is_the_kind_of_its_first_verb() -> None:
    assert side_kind("on the ticket send the customer a notification") == "write"
    assert side_kind("they have been told") == "write"
    assert side_kind("processing the event") == "write"
    assert side_kind("Check on the Notifications page that nothing was sent") == "read"
    assert side_kind("you finish") == "finish"
    assert side_kind('the subject "Send it"') is None  # quoted text is dictated, not an action


WRITES = ["process", "post", "send", "set", "mark", "issue", "escalate", "record", "approve", "dispatch", "submit"]
READS = ["check", "look up", "read", "open", "find"]
OBJECTS = ["the event", "the fee of 4.50 EUR", "ticket T-2004", "a notification to Mei", "FU-3", "the record"]


@given(st.sampled_from(WRITES), st.sampled_from(OBJECTS), st.sampled_from(WRITES), st.sampled_from(OBJECTS),
       st.sampled_from([", then ", ", and then ", ". Then ", "; then "]))
def test_two_writes_joined_by_then_are_one_order_between_writes(first: str, one: str, second: str, other: str,
                                                                 joint: str) -> None:
    instruction = f"{first.capitalize()} {one}{joint}{second} {other}. Change nothing else."
    [order] = stated_orders(instruction)
    assert order.earlier == f"{first.capitalize()} {one}" and order.later == f"{second} {other}"
    assert order.between_writes


@given(st.sampled_from(READS), st.sampled_from(OBJECTS), st.sampled_from(WRITES), st.sampled_from(OBJECTS))
def test_a_read_before_a_write_is_an_order_but_not_one_between_writes(read: str, one: str, write: str,
                                                                      other: str) -> None:
    orders = stated_orders(f"{read.capitalize()} {one} first, then {write} {other}.")
    assert len(orders) == 1 and orders[0].kinds == ("read", "write") and write_orders(orders[0].earlier) == []


@given(st.sampled_from(WRITES), st.sampled_from(OBJECTS), st.sampled_from(WRITES), st.sampled_from(OBJECTS),
       st.sampled_from(["exactly once", "once", "once each"]))
def test_once_that_counts_and_a_condition_state_no_order(first: str, one: str, second: str, other: str,
                                                        count: str) -> None:
    assert stated_orders(f"{first.capitalize()} {one} {count}, and {second} {other}.") == []
    assert stated_orders(f"If it is needed, then {first} {one} and {second} {other}.") == []
