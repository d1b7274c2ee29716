"""Pure tests of the action set: one definition, tool schemas and text protocol generated from it."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapter import context
from adapter.actions import (
    ACTION_TYPES,
    NO_ANSWER,
    AnswerFieldSchema,
    Click,
    Done,
    Fill,
    FinishSchema,
    Rejection,
    action_name,
    parse_action,
    parse_text_action,
    text_protocol,
    tool_schemas,
)
from adapter.context import ContextWindow
from adapter.observation import Control, controls_in_text, format_control
from adapter.prompts import OBSERVATION_MARK, UNCHANGED, latest_observation
from tasks.answers import REASONS, STATUSES


def test_tool_schemas_and_text_protocol_cover_every_action_once() -> None:
    names = [action_name(cls) for cls in ACTION_TYPES]
    assert [t["function"]["name"] for t in tool_schemas()] == names
    protocol = text_protocol()
    for name in names:
        assert protocol.count(f'- {{"action": "{name}"') == 1
    fill = next(t for t in tool_schemas() if t["function"]["name"] == "fill")["function"]["parameters"]
    assert fill["required"] == ["id", "text"] and fill["additionalProperties"] is False


def test_ids_given_as_numbers_or_in_brackets_are_accepted() -> None:
    assert parse_action("click", '{"id": 7}') == Click(id="7")
    assert parse_action("click", '{"id": "[7]"}') == Click(id="7")


def test_bad_model_output_becomes_a_rejection_with_a_reason() -> None:
    cases = {
        (None, None): "no_action",
        ("teleport", "{}"): "unknown_action",
        ("click", '{"id": 5'): "truncated_reply",  # unterminated: cut off, whatever finish_reason says
        ("click", '{"id": 5]'): "malformed_arguments",
        ("click", '{"id": ' + "1" * 5000 + "}"): "malformed_arguments",
        ("click", '{"id": ' + "[" * 5000 + "]" * 5000 + "}"): "malformed_arguments",
        ("done", '{"success": "yes"}'): "malformed_arguments",
        ("done", '{"success": 1.0}'): "malformed_arguments",
        ("check", '{"id": "3", "checked": 1}'): "malformed_arguments",
        ("fill", '{"id": "5"}'): "malformed_arguments",
        ("click", '{"id": "5", "force": true}'): "malformed_arguments",
        ("done", '["yes"]'): "malformed_arguments",
    }
    for (name, arguments), cause in cases.items():
        result = parse_action(name, arguments)
        assert isinstance(result, Rejection), (name, arguments)
        assert result.cause == cause and result.reason


def test_the_text_protocol_finds_the_action_object_in_prose() -> None:
    assert parse_text_action('Next I fill it: {"action": "fill", "id": "3", "text": "49.90"}') == Fill(
        id="3", text="49.90")
    assert parse_text_action('{"action": "done", "success": true, "message": "ok"}') == Done(success=True, message="ok")
    assert isinstance(parse_text_action("I am thinking."), Rejection)
    assert parse_text_action("").cause == "no_action"  # type: ignore[union-attr]


def test_a_control_line_reads_back_as_written() -> None:
    control = Control(id="12", role="combobox", name='Approval "A"', value="none", options=["none", "RA-12"],
                      required=True)
    line = format_control(control)
    assert line == '[12] combobox "Approval \\"A\\"" value="none" options=["none", "RA-12"] required'
    assert controls_in_text(f"# Heading\n{line}\ntext") == [("12", "combobox", 'Approval "A"')]


def test_the_context_window_elides_old_observations_first_and_keeps_the_latest() -> None:
    window = ContextWindow(budget=400)
    window.add({"role": "system", "content": "s"})
    for n in range(4):
        page = f"{n}" * 400
        window.add({"role": "user", "content": f"Result {n}\n\nObservation:\n" + page}, observation=page)
    messages = window.fit()
    assert messages is not None
    assert "omitted" in messages[1]["content"] and "3" * 400 in messages[-1]["content"]
    tight = ContextWindow(budget=50)
    tight.add({"role": "user", "content": "y" * 1000}, observation="y" * 1000)
    assert tight.fit() is None


def _step(window: ContextWindow, n: int, page: str) -> list[dict[str, object]]:
    window.add({"role": "assistant", "content": f"action {n}"})
    window.add({"role": "user", "content": f"Result {n}{OBSERVATION_MARK}{page}"}, observation=page)
    messages = window.fit()
    assert messages is not None
    return messages


def test_an_unchanged_page_is_sent_as_a_marker_and_read_back_as_the_page() -> None:
    window = ContextWindow(budget=10_000)
    window.add({"role": "system", "content": "s"})
    window.add({"role": "user", "content": f"Task: t{OBSERVATION_MARK}page A"}, observation="page A")
    messages = _step(window, 1, "page A")  # a rejected action: nothing changed
    assert str(messages[-1]["content"]).endswith(UNCHANGED)
    assert latest_observation(messages) == "page A"
    messages = _step(window, 2, "page B")
    assert latest_observation(messages) == "page B" and str(messages[-1]["content"]).endswith("page B")


def _prefix_changes(steps: int) -> int:
    """Requests of a long episode whose messages do not begin with the previous request's messages."""
    window = ContextWindow(budget=3_000)
    window.add({"role": "system", "content": "s"})
    previous: list[dict[str, object]] = []
    changes = 0
    for n in range(steps):
        messages = _step(window, n, f"page {n} " + "z" * 1200)
        changes += messages[: len(previous)] != previous
        previous = messages
    return changes


def test_trimming_in_chunks_keeps_the_prompt_prefix_unchanged_for_most_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    chunked = _prefix_changes(60)
    monkeypatch.setattr(context, "TRIM_TARGET", 1.0)  # eliding just enough, one observation each step
    one_by_one = _prefix_changes(60)
    assert one_by_one >= 45, "once full, one-by-one eliding changes the prefix of nearly every request"
    assert 0 < chunked <= one_by_one / 2


def test_the_servers_token_counts_calibrate_the_budget() -> None:
    window = ContextWindow(budget=2_000)
    window.add({"role": "system", "content": "s"})
    pages = [f"{n} " + "w" * 800 for n in range(6)]
    for n, page in enumerate(pages[:3]):
        _step(window, n, page)
    estimated = window.estimated(window.render())
    assert window.fit() is not None and not any(e.elided for e in window.entries)
    window.calibrate(server_tokens=estimated * 4, estimated_tokens=estimated)  # a tokenizer counting 4x
    assert window.scale == 4.0
    messages = window.fit()
    assert messages is not None and any(e.elided for e in window.entries)
    assert math.ceil(window.estimated(messages) * window.scale) <= window.budget
    window.calibrate(server_tokens=1, estimated_tokens=estimated)
    assert window.scale == 4.0, "never planned on an estimate the server contradicted"


FINISH = FinishSchema(fields={"total": AnswerFieldSchema(type="money", description="the invoice total"),
                              "skus": AnswerFieldSchema(type="id_list", description="the SKUs")})


def test_done_carries_the_task_answer_fields_and_every_status_and_reason_on_every_task() -> None:
    plain = next(t for t in tool_schemas() if t["function"]["name"] == "done")["function"]["parameters"]
    answered = next(t for t in tool_schemas(FINISH) if t["function"]["name"] == "done")["function"]["parameters"]
    assert "answer" not in plain["properties"] and plain["properties"]["reason"]["enum"] == list(REASONS)
    assert plain["properties"]["status"]["enum"] == list(STATUSES)
    assert answered["properties"]["answer"]["required"] == ["total", "skus"]
    assert answered["properties"]["answer"]["properties"]["skus"]["type"] == "array"
    assert plain["properties"]["status"] == answered["properties"]["status"]  # never says if a task is feasible
    protocol = text_protocol(FINISH)
    assert '"total" (string): the invoice total' in protocol and "not_allowed:" in protocol
    assert "already-done:" in protocol and "answer" not in text_protocol().split("done's status")[0].split(
        '"done"')[1].split("—")[0]


def test_a_done_that_does_not_fit_the_task_finish_is_rejected_with_what_is_wrong() -> None:
    right = '{"success": true, "answer": {"total": "4.00 EUR", "skus": ["A-1"]}}'
    assert isinstance(parse_action("done", right, FINISH), Done)
    cases = {
        '{"success": true}': "give the answer",
        '{"success": true, "answer": {"total": "4 EUR"}}': "missing skus",
        '{"success": true, "answer": {"total": "4 EUR", "skus": ["A-1"], "x": 1}}': "unknown x",
        '{"success": true, "answer": {"total": 4, "skus": ["A-1"]}}': "total must be a string",
        '{"success": true, "answer": {"total": "4 EUR", "skus": "A-1"}}': "skus must be a list",
        '{"success": true, "status": "not_found"}': "status is not_found",
        '{"success": false, "status": "success"}': "success is false",
        '{"success": false, "status": "not_allowed"}': "give its reason code",
        '{"success": false, "reason": "other"}': "refusal status only",
        '{"success": false, "status": "not_allowed", "reason": "bored"}': "reason",
    }
    for arguments, says in cases.items():
        result = parse_action("done", arguments, FINISH)
        assert isinstance(result, Rejection) and result.cause == "malformed_arguments", arguments
        assert says in result.reason, (arguments, result.reason)
    assert isinstance(parse_action("done", '{"success": true, "answer": {"a": 1}}'), Rejection)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


@given(st.dictionaries(st.sampled_from(["success", "status", "reason", "answer", "message", "x"]), JSON, max_size=6))
def test_any_done_arguments_become_a_done_or_a_rejection_never_an_exception(arguments: dict[str, object]) -> None:
    for finish in (NO_ANSWER, FINISH):
        result = parse_action("done", json.dumps(arguments), finish)
        assert isinstance(result, Done | Rejection)
        if isinstance(result, Done):
            assert finish.problem(result) is None
