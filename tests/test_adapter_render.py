"""Rendering annotated HTML to the observation text, without a browser.

The fixtures in tests/fixtures/annotated/ named like the pages in tests/fixtures/pages/ were saved
from the live annotation (tests/test_adapter_browser.py checks they are current and regenerates
them); the `edge_*.html` ones are written by hand.
"""

from __future__ import annotations

from pathlib import Path

from adapter.observation import Control, Observation, controls_in_text, format_control
from adapter.render import CONTINUED_NOTICE, render_observation

ANNOTATED = Path(__file__).parent / "fixtures" / "annotated"


def render_file(
    name: str, *, title: str = "Fixture", max_chars: int = 6000, dialogs: list[str] | None = None
) -> Observation:
    html = (ANNOTATED / name).read_text(encoding="utf-8")
    return render_observation(html, url=f"/site/{name}", title=title, max_chars=max_chars, dialogs=dialogs)


def render(name: str, *, title: str = "Fixture", dialogs: list[str] | None = None) -> list[str]:
    return render_file(name, title=title, dialogs=dialogs).text.splitlines()


def test_the_header_names_title_and_path_and_dialogs_come_before_the_page() -> None:
    lines = render("hidden.html", title="Hidden  things", dialogs=["Ticket saved", 'Say "yes"'])
    assert lines[:5] == [
        "Page: Hidden things",
        "URL: /site/hidden.html",
        'Dialog: "Ticket saved"',
        'Dialog: "Say \\"yes\\""',
        "",
    ]


def test_form_controls_render_one_exact_line_each_in_page_order() -> None:
    lines = render("forms.html")
    assert lines[3:] == [
        "# New ticket",
        "Fields marked * are required.",
        '[1] textbox "Subject *" value="" required',
        '[2] textbox "Requester email" value="ada@example.test"',
        '[3] textbox "Phone" value=""',
        '[4] textbox "Web site" value=""',
        '[5] textbox "PIN" value=""',
        '[6] searchbox "Search tickets" value=""',
        "Amount (EUR)",
        '[7] spinbutton "Amount (EUR)" value="49.90"',
        '[8] slider "Urgency" value="3"',
        '[9] textbox "Due date" value="2024-05-01" type=date format="YYYY-MM-DD"',
        '[10] textbox "Time" value="" type=time format="HH:MM"',
        '[11] textbox "Colour" value="#336699" type=color format="#rrggbb"',
        '[12] button "Attachment"',
        '[13] combobox "Priority" value="Normal" options=["Choose…", "Low", "Normal", "High"]',
        '[14] combobox "Team" value="First line" options=["First line", "Second line", "Platform"]',
        '[15] listbox "Tags" value="billing, urgent" options=["billing", "login", "urgent"]',
        "Channel",
        '[16] radio "Email" checked',
        '[17] radio "Phone call" unchecked',
        '[18] checkbox "Notify requester" checked',
        '[19] checkbox "VIP customer" unchecked',
        '[20] textbox "Description" value="Printer on floor 2 is jammed."',
        '[21] textbox "Reference" value="T-1001" readonly',
        '[22] textbox "Legacy code" value="X9" disabled',
        '[23] textbox "Internal note" value="Call back after 3 pm"',
        '[24] checkbox "Escalate" unchecked',
        '[25] button "Create ticket"',
        '[26] button "Reset"',
        '[27] button "Preview"',
        '[28] link "All tickets"',
    ]


def test_the_control_table_matches_the_control_lines() -> None:
    observation = render_file("forms.html")
    assert [format_control(c) for c in observation.controls] == [
        line for line in observation.text.splitlines() if line.startswith("[")
    ]
    assert [(c.id, c.role, c.name) for c in observation.controls] == controls_in_text(observation.text)
    assert observation.control("15") == Control(
        id="15", role="listbox", name="Tags", value="billing, urgent", options=["billing", "login", "urgent"]
    )
    assert observation.control("22") == Control(
        id="22", role="textbox", name="Legacy code", value="X9", disabled=True
    )
    assert not observation.truncated


def test_tables_render_as_rows_with_control_ids_followed_by_their_controls() -> None:
    lines = render("table.html")
    start = lines.index("3 open tickets")
    assert lines[start - 2 : start + 12] == [
        "# Tickets",
        "## Open",
        "3 open tickets",
        "|Ticket|Subject|Status|Actions|",
        "|[3]|Printer jammed|Open|[4] [5]|",
        '[3] link "T-1"',
        '[4] button "Close"',
        '[5] link "Edit"',
        "|[6]|Cannot log in|Pending|[7] [8]|",
        '[6] link "T-2"',
        '[7] button "Close"',
        '[8] link "Edit"',
        "|[9]|Refund 49.90 EUR|Open|[10]|",
        '[9] link "T-3"',
    ]


def test_links_are_named_by_text_title_image_alt_or_their_path() -> None:
    observation = render_file("table.html")
    names = {c.name: c.href for c in observation.controls if c.role == "link"}
    assert names["Next page"] == "/site/table.html?page=2"
    assert names["Ticket 1 thumbnail"] == "/site/tickets/1"
    assert names["/site/nameless"] == "/site/nameless"
    assert names["external help"] == "https://elsewhere.test/help"
    assert names["Edit"] == "/site/tickets/2/edit"  # relative hrefs are resolved


def test_list_items_render_with_a_dash() -> None:
    lines = render("table.html")
    assert "- First item" in lines
    assert lines[lines.index("- Second item with") + 1] == '[11] link "external help"'


def test_hidden_content_is_absent_from_the_saved_annotation() -> None:
    observation = render_file("hidden.html")
    assert observation.text.splitlines()[3:] == [
        "# Visible heading",
        "Visible paragraph.",
        '[1] button "Shown button"',
        '[2] button "More details"',
        "Open dialog text",
        '[3] button "Open dialog button"',
        "Last visible line.",
    ]


def test_frames_and_shadow_roots_render_inline() -> None:
    assert render("frames.html")[3:] == [
        "# Frames and components",
        "Inside the frame",
        '[1] button "Framed button"',
        "Shadow text",
        '[2] textbox "Find" value="printer"',
    ]


def test_hand_written_edge_cases_render_compactly() -> None:
    assert render("edge_cells_and_labels.html")[3:] == [
        '[1] link "Ticket T-7"',
        "Status:Open & assigned to Grace",
        "Label of a control that is not shown",
        "Block-laid-out span",
        "inline tail",
        "Line one",
        "Line two",
        "|Item|Qty||",
        "|Toner|[2]|[3]|",
        '[2] spinbutton "Qty of Toner" value="2"',
        '[3] button "Remove"',
        "- Outer",
        "- Inner",
        '[4] textbox "Email" value="not-an-email" required invalid="Please include an \'@\' in the email address."',
        '[5] combobox "Queue \\"A\\"" value="" options=["Billing", "Ops \\"night\\""] disabled',
        '[6] switch "Dark mode" unchecked',
    ]


def test_text_around_a_control_in_a_paragraph_keeps_its_order() -> None:
    assert render("edge_dialog_frame.html")[3:] == [
        "Framed text",
        '[1] button "Framed"',
        "See",
        '[2] link "the terms"',
        "before you sign.",
    ]


def test_a_long_page_keeps_the_start_and_every_control_and_says_what_was_cut() -> None:
    full = render_file("long.html", max_chars=100_000)
    cut = render_file("long.html")
    assert not full.truncated
    assert cut.truncated and cut.chars <= 6000
    assert cut.controls == full.controls
    lines = cut.text.splitlines()
    assert lines[:5] == ["Page: Fixture", "URL: /site/long.html", "", "# Maintenance log", '[1] link "New ticket"']
    assert lines[-3:-1] == ['[2] textbox "Filter" value=""', '[3] button "Load more"']
    omitted = len(full.text) - (len(cut.text) - len(lines[-1]) - 1)
    assert lines[-1] == f"Output truncated: {omitted} characters omitted. Use the more action to see the next part."
    kept_paragraphs = [line for line in lines if line.startswith("Paragraph ")]
    assert kept_paragraphs == [line for line in full.text.splitlines() if line.startswith("Paragraph ")][
        : len(kept_paragraphs)
    ]


def _parts(html: str, max_chars: int) -> list[Observation]:
    parts = [render_observation(html, url="/site/x", title="Long", max_chars=max_chars)]
    while parts[-1].next_part is not None:
        assert len(parts) < 100, "the parts must come to an end"
        parts.append(render_observation(html, url="/site/x", title="Long", max_chars=max_chars,
                                        part=parts[-1].next_part))
    return parts


def test_more_pages_through_a_long_page_until_every_line_was_shown_once() -> None:
    html = (ANNOTATED / "long.html").read_text(encoding="utf-8")
    full = render_observation(html, url="/site/x", title="Long", max_chars=100_000)
    parts = _parts(html, 1500)
    assert len(parts) > 3 and all(p.truncated and p.chars <= 1500 for p in parts)
    assert all(p.controls == full.controls for p in parts)  # the controls fit, so every part has them all
    assert all(CONTINUED_NOTICE in p.text for p in parts[1:]) and CONTINUED_NOTICE not in parts[0].text
    assert all(p.text.splitlines()[-1].startswith("Output truncated: ") for p in parts[:-1])
    assert not parts[-1].text.splitlines()[-1].startswith("Output truncated: ")
    body = full.text.splitlines()[3:]
    text_of_parts = [
        line for p in parts for line in p.text.splitlines()[4 if p is not parts[0] else 3:]
        if not line.startswith(("[", "Output truncated: "))
    ]
    assert text_of_parts == [line for line in body if not line.startswith("[")]


def test_a_paragraph_longer_than_a_part_is_split_so_every_word_is_shown() -> None:
    words = [f"word{n}" for n in range(3000)]
    button = "<button data-co-id='1' data-co-role='button' data-co-name='Go'></button>"
    html = f"<body><p>{' '.join(words)}</p>{button}</body>"
    parts = _parts(html, 2000)
    assert len(parts) > 5
    shown = [w for p in parts for line in p.text.splitlines() if line.startswith("word") for w in line.split()]
    assert shown == words
    assert all(p.control("1") is not None for p in parts)


def test_a_bound_too_small_for_any_line_still_pages_through_everything() -> None:
    html = (ANNOTATED / "forms.html").read_text(encoding="utf-8")
    full = render_observation(html, url="/site/x", title="Long", max_chars=100_000)
    parts = _parts(html, 50)
    assert [c.id for p in parts for c in p.controls] == [c.id for c in full.controls]
    shown_text = [line for p in parts for line in _body(p) if not line.startswith("[")]
    assert shown_text == [line for line in _body(full) if not line.startswith("[")]


def _body(observation: Observation) -> list[str]:
    """The page lines of an observation: no header, no part notices."""
    return [line for line in observation.text.splitlines()[2:]
            if line and line != CONTINUED_NOTICE and not line.startswith("Output truncated: ")]


def test_when_even_the_controls_do_not_fit_the_parts_page_through_them() -> None:
    buttons = "".join(
        f'<button data-co-id="{n}" data-co-role="button" data-co-name="Action number {n}"></button>'
        for n in range(1, 201)
    )
    paragraphs = "".join(f"<p>Paragraph {n} of the long page.</p>" for n in range(300))
    parts = _parts(f"<body><p>Intro</p>{buttons}{paragraphs}</body>", 6000)
    assert [c.id for p in parts for c in p.controls] == [str(n) for n in range(1, 201)]
    shown_text = [line for p in parts for line in _body(p) if not line.startswith("[")]
    assert shown_text == ["Intro"] + [f"Paragraph {n} of the long page." for n in range(300)]


def test_when_even_the_controls_do_not_fit_the_first_ones_are_kept() -> None:
    buttons = "".join(
        f'<button data-co-id="{n}" data-co-role="button" data-co-name="Action number {n}"></button>'
        for n in range(1, 201)
    )
    observation = render_observation(f"<body><p>Intro</p>{buttons}</body>", url="/site/x", title="Many")
    assert observation.truncated and observation.chars <= 6000
    kept = [c.id for c in observation.controls]
    assert kept == [str(n) for n in range(1, len(kept) + 1)] and 100 < len(kept) < 200
    assert [(c.id, c.role, c.name) for c in observation.controls] == controls_in_text(observation.text)
    assert observation.text.splitlines()[-1].startswith("Output truncated: ")


def test_a_page_without_content_renders_only_the_header() -> None:
    observation = render_observation("<body> \n </body>", url="/site/empty", title="")
    assert observation.text == "Page: \nURL: /site/empty\n"
    assert observation.controls == []


def test_a_description_list_puts_each_term_and_its_value_on_one_line() -> None:
    html = (
        '<body><dl><dt>Total</dt><dd>49.90</dd><dt>Customer</dt><dd>'
        '<a data-co-id="7" data-co-role="link" data-co-name="Dana Reyes" href="/c/1">Dana Reyes</a></dd></dl>'
        "<p>After</p></body>"
    )
    lines = render_observation(html, url="/site/dl", title="Order").text.splitlines()
    assert lines[3:] == ["Total: 49.90", "Customer:", '[7] link "Dana Reyes"', "After"]


def test_controls_that_leave_no_room_for_the_next_text_line_page_too_so_more_always_advances() -> None:
    buttons = "".join(
        f'<button data-co-id="{n}" data-co-role="button" data-co-name="Action number {n} {"x" * 40}"></button>'
        for n in range(1, 40)
    )
    html = f"<body>{buttons}<p>{'word ' * 70}</p><p>{'more ' * 70}</p></body>"
    parts = _parts(html, 3000)
    assert len(parts) == 2 and all(p.chars <= 3000 for p in parts)
    assert [c.id for p in parts for c in p.controls] == [str(n) for n in range(1, 40)]
    assert [line for p in parts for line in _body(p) if line.startswith(("word", "more"))] == [
        ("word " * 70).strip(), ("more " * 70).strip()]
