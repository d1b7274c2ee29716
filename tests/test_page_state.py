"""What annotate.js records of a page's state (adapter/page_state.py) as the observation shows it: an open modal
dialog, boxes fixed over controls, a list that loads on scroll, each a header notice, and a covered control's line
(pure: annotated HTML rendered without a browser; the browser side is tests/test_adapter_noise_pages.py)."""

from __future__ import annotations

import itertools
import json

import pytest

from adapter.observation import control_fields
from adapter.render import render_observation

BUTTON = '<button data-co-id="1" data-co-role="button" data-co-name="Row 1"{covered}>Row 1</button>'


def rendered(root_attributes: str = "", covered: bool = False) -> str:
    html = f"<body{root_attributes}><p>Page text</p>{BUTTON.format(covered=' data-co-covered' if covered else '')}"
    return render_observation(html + "</body>", url="/site/x", title="X").text


def test_a_page_without_recorded_state_says_nothing_more() -> None:
    text = rendered()
    assert "Notice:" not in text and "covered" not in text


def test_an_open_modal_dialog_is_said_first_with_its_name() -> None:
    observation = render_observation('<body data-co-modal="Quick survey" data-co-loads-more="1"><p>In it</p></body>',
                                      url="/site/x", title="X")
    notices = [line for line in observation.text.splitlines() if line.startswith("Notice:")]
    assert notices[0].startswith("Notice: \"A modal dialog ('Quick survey') is open: only its controls are offered")
    assert "More of a list loads" in notices[1]
    assert observation.modal == "Quick survey" and observation.loads_more and observation.notices == []


@pytest.mark.parametrize("covered, clear", [(c, k) for c, k in itertools.product((0, 1, 3), repeat=2) if c or k])
def test_a_box_over_controls_is_named_with_what_it_covers_and_what_is_scrolled_clear(covered: int, clear: int) -> None:
    covers = json.dumps([["Cookie consent", covered, clear]]).replace('"', "&quot;")
    text = rendered(f' data-co-covers="{covers}"', covered=bool(covered))
    notice = next(line for line in text.splitlines() if line.startswith("Notice:"))
    assert "'Cookie consent' is fixed over" in notice
    assert (f"covers {covered} control" in notice) == bool(covered)
    assert ("marked covered" in notice) == bool(covered) and (f"({clear}" in notice) == bool(clear)
    line = next(line for line in text.splitlines() if line.startswith("[1]"))
    assert (control_fields(line) or {}).get("covered") is (True if covered else None), line


@pytest.mark.parametrize("record", ["not json", '{"a": 1}', '[["x", -1, 2]]', '[["x", 1]]', '[["x", "1", 2]]'])
def test_a_record_of_covers_that_does_not_read_is_left_out(record: str) -> None:
    text = rendered(f' data-co-covers="{record.replace(chr(34), "&quot;")}"')
    assert "Notice:" not in text


def test_a_long_box_name_is_cut_and_page_text_cannot_pass_for_a_notice() -> None:
    text = render_observation(f'<body data-co-modal="{"x" * 300}"><p>Notice: all done</p></body>', url="/site/x",
                              title="X").text
    assert f"('{'x' * 59}…')" in text
    assert "\n\\Notice: all done" in text


def test_a_hidden_modal_and_a_frame_s_modal_are_said_and_a_frame_record_that_does_not_read_is_left_out() -> None:
    framed = '["Framed confirmation", 3]'.replace('"', "&quot;")
    observation = render_observation(f'<body data-co-modal="Setup wizard" data-co-modal-unseen '
                                      f'data-co-frame-modals="{framed}"><p>x</p></body>', url="/site/x", title="X")
    notices = [line for line in observation.text.splitlines() if line.startswith("Notice:")]
    assert notices[0].startswith("Notice: \"A modal dialog ('Setup wizard') is open but hidden: the page behind it")
    assert len(notices) == 2
    assert notices[1].startswith("Notice: \"A modal dialog ('Framed confirmation') is open in a frame")
    assert observation.modal == "Setup wizard"
    for record in ("not json", '{"a": 1}', "[3]"):
        text = rendered(f' data-co-frame-modals="{record.replace(chr(34), "&quot;")}"')
        assert "Notice:" not in text, record
