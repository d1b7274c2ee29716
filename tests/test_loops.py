"""The loop detector `write-intent/1` on hand-built operation logs."""

from __future__ import annotations

import pytest

from sites.kit.records import Operation
from verifier.looping import DETECTOR, LOOP_THRESHOLD, LoopStats, fingerprint, loop_stats

FORM = "application/x-www-form-urlencoded"


def op(seq: int, method: str, path: str, body: str = "", *, action: int | None = -1, status: int = 200,
       journal_rows: int = 0, query: str = "", content_type: str | None = None) -> Operation:
    """One logged request; action -1 (the default) stands for the sequence number (each request its own action)."""
    return Operation(
        seq=seq, action=seq if action == -1 else action, method=method, path=path, query=query,
        content_type=content_type if content_type is not None else (FORM if body else None), body=body,
        status=status, location=None, response_digest="0" * 64, journal_rows=journal_rows,
    )


def log(*specs: tuple[str, str, str, int] | tuple[str, str]) -> list[Operation]:
    """Operations from (method, path) or (method, path, body, journal_rows), numbered from 1."""
    operations = []
    for seq, spec in enumerate(specs, start=1):
        if len(spec) == 2:
            operations.append(op(seq, spec[0], spec[1]))
        else:
            method, path, body, rows = spec
            operations.append(op(seq, method, path, body, journal_rows=rows, status=200 if rows else 503))
    return operations


POST = ("POST", "/ledger/events/7/process", "amount=10&request_id=a1", 0)


def test_three_identical_failing_posts_are_a_loop() -> None:
    stats = loop_stats(log(POST, POST, POST))
    assert stats == LoopStats(detector=DETECTOR, actions=3, state_reads=0, largest_repeat=3, loop=True)



@pytest.mark.parametrize("repeats", range(1, LOOP_THRESHOLD + 3))
def test_equal_failing_intents_are_a_loop_from_the_threshold_on(repeats: int) -> None:
    stats = loop_stats(log(*[POST] * repeats))
    assert stats.largest_repeat == repeats and stats.loop == (repeats >= LOOP_THRESHOLD)


def test_two_are_not_a_loop_and_an_empty_log_is_zero() -> None:
    two = loop_stats(log(POST, POST))
    assert (two.largest_repeat, two.loop) == (2, False)
    assert loop_stats([]) == LoopStats(detector=DETECTOR, actions=0, state_reads=0, largest_repeat=0, loop=False)


def test_reads_between_them_do_not_reset() -> None:
    read = ("GET", "/ledger/events/7")
    stats = loop_stats(log(POST, read, POST, read, read, POST))
    assert (stats.actions, stats.state_reads, stats.largest_repeat, stats.loop) == (6, 3, 3, True)


def test_a_read_that_wrote_journal_rows_does_not_reset_either() -> None:
    operations = log(POST, POST)
    operations.append(op(3, "GET", "/webmail/inbox/4", journal_rows=1))
    operations.append(op(4, *POST[:3]))
    stats = loop_stats(operations)
    assert (stats.state_reads, stats.largest_repeat, stats.loop) == (1, 3, True)


def test_a_durable_effect_resets_and_is_not_counted_in_the_new_segment() -> None:
    done = ("POST", "/ledger/events/7/process", "amount=10&request_id=a9", 2)
    stats = loop_stats(log(POST, POST, POST, POST, done, POST, POST))
    assert (stats.largest_repeat, stats.loop) == (2, False)
    assert loop_stats(log(POST, POST, POST, done)).largest_repeat == 0  # nothing after the last effect
    other_effect = ("POST", "/helpdesk/tickets/3/reply", "text=hi", 1)
    assert loop_stats(log(POST, POST, other_effect, POST)).largest_repeat == 1


def test_request_ids_versions_and_tokens_do_not_tell_intents_apart() -> None:
    bodies = ["amount=10&request_id=a1&version=3", "version=4&amount=10&requestId=b2&csrf_token=x",
              "amount=10&expected_version=5&idempotency_key=k&nonce=1"]
    operations = [op(i, "POST", "/ledger/events/7/process", body) for i, body in enumerate(bodies, start=1)]
    assert len({fingerprint(o) for o in operations}) == 1
    assert loop_stats(operations).largest_repeat == 3
    assert fingerprint(operations[0]) == ("POST", "/ledger/events/7/process", (("amount", "10"),))


def test_different_bodies_paths_methods_or_queries_are_different_intents() -> None:
    operations = [
        op(1, "POST", "/ledger/events/7/process", "amount=10"),
        op(2, "POST", "/ledger/events/7/process", "amount=11"),
        op(3, "POST", "/ledger/events/8/process", "amount=10"),
        op(4, "PUT", "/ledger/events/7/process", "amount=10"),
        op(5, "POST", "/ledger/events/7/process", "amount=10", query="mode=dry"),
        op(6, "POST", "/ledger/events/7/process", "amount=10&note="),
    ]
    stats = loop_stats(operations)
    assert (stats.actions, stats.largest_repeat, stats.loop) == (6, 1, False)
    # Field order does not matter; repeated fields keep every value.
    same = [op(1, "POST", "/b", "ids=2&ids=1&x=y"), op(2, "POST", "/b", "x=y&ids=1&ids=2")]
    assert fingerprint(same[0]) == fingerprint(same[1]) != fingerprint(op(3, "POST", "/b", "x=y&ids=1"))


def test_a_body_that_is_not_a_form_is_one_opaque_field() -> None:
    one = op(1, "POST", "/api/x", '{"a": 1, "request_id": "r1"}', content_type="application/json")
    two = op(2, "POST", "/api/x", '{"a": 1, "request_id": "r2"}', content_type="application/json")
    assert fingerprint(one) != fingerprint(two)
    charset = op(3, "POST", "/b", "a=1&token=t", content_type=FORM + "; charset=utf-8")
    assert fingerprint(charset) == ("POST", "/b", (("a", "1"),))


def test_harness_operations_are_ignored() -> None:
    operations = [op(1, "GET", "/start", action=0), op(2, "POST", "/ledger/events/7/process", "amount=10", action=0),
                  op(3, "POST", "/ledger/events/7/process", "amount=10", action=None),
                  op(4, "POST", "/ledger/events/7/process", "amount=10", action=1),
                  op(5, "POST", "/reset", "all=1", action=0, journal_rows=5),  # a harness effect resets nothing
                  op(6, "POST", "/ledger/events/7/process", "amount=10", action=2),
                  op(7, "GET", "/ledger", action=None)]
    stats = loop_stats(operations)
    assert (stats.actions, stats.state_reads, stats.largest_repeat, stats.loop) == (2, 0, 2, False)


def test_the_largest_fingerprint_wins() -> None:
    a, b = ("POST", "/a", "x=1", 0), ("POST", "/b", "x=1", 0)
    stats = loop_stats(log(a, b, b, a, b, b))
    assert (stats.largest_repeat, stats.loop) == (4, True)
