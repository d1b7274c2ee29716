"""Pure tests of the action set: one definition, tool schemas and text protocol generated from it."""

from __future__ import annotations

from adapter.actions import (
    ACTION_TYPES,
    Click,
    Done,
    Fill,
    Rejection,
    action_name,
    parse_action,
    parse_text_action,
    text_protocol,
    tool_schemas,
)
from adapter.context import ContextWindow
from adapter.observation import Control, controls_in_text, format_control


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
        ("click", '{"id": 5'): "malformed_arguments",
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
        window.add({"role": "user", "content": f"Result {n}\n\nObservation:\n" + "x" * 400}, observation="x" * 400)
    messages = window.fit()
    assert messages is not None
    assert "omitted" in messages[1]["content"] and "x" * 400 in messages[-1]["content"]
    tight = ContextWindow(budget=50)
    tight.add({"role": "user", "content": "y" * 1000}, observation="y" * 1000)
    assert tight.fit() is None
