"""The adapter on pages no one here wrote, round 4 (issue 50): each defect's fixture page (tests/fixtures/pages/
fidelity-focus-cover.html, -hover-swap, -hover-listeners, -sortable, -nameless; tests/test_adapter_fidelity.py audits
each whole) and, around it, a family of neighbours built in the page by program (covers of several kinds and
triggers, hover swaps of src, class, style and text, listeners added by addEventListener, by on* attributes and by
delegation, sortable lists of several sizes, orientations and press events, inputs hidden in several ways), so that a
fix made for the single case and not for its mechanism fails here.

One driver for the module (one browser context): every case builds its own part of the page, and the page is loaded
again only between fixture pages.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fixture_site import FixtureSite, fixture_driver, named, open_page
from playwright.async_api import Browser

from adapter.actions import Click, Drag, Hover
from adapter.driver import PageDriver
from adapter.observation import Observation

pytestmark = pytest.mark.browser


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def driver(browser: Browser, site: FixtureSite) -> AsyncIterator[PageDriver]:
    async with fixture_driver(browser, site, max_chars=100_000) as page_driver:
        yield page_driver


async def record(driver: PageDriver) -> list[str]:
    return [str(entry) for entry in await driver.page.evaluate("() => window.record")]


async def build(driver: PageDriver, html: str, script: str = "") -> Observation:
    """Make `html` the page's whole body (in a #family part), run `script` in the page, clear its record, observe. The
    pointer is moved away first, so that the next action's pointer arrives over its target."""
    await driver.page.mouse.move(790, 590)
    await driver.page.evaluate("""([html, script]) => {
      document.body.replaceChildren();
      const family = document.createElement("div");
      family.id = "family";
      family.innerHTML = html;
      document.body.append(family);
      window.record = [];
      new Function(script)();
    }""", [html, script])
    await driver.settle()
    return await driver.observe()


# --- 1. A click the page answered is acted on, though a cover then takes its release ------------------------------

COVER_TRIGGERS = ("focus", "focusin", "mousedown", "pointerover", "mouseover")
"""When the page puts the cover over the target: once the press reached it (it takes the focus, or its mousedown
listener runs), or as the pointer comes, before anything reached it."""
COVER_KINDS = {
    "opaque": "background: #ccd;",
    "transparent": "background: transparent;",
    "a button": "",
}
TARGETS = ("input", "button")


def cover_case(trigger: str, kind: str, target: str) -> tuple[str, str]:
    control = ('<input id="target" aria-label="Target" style="width:180px;height:28px">' if target == "input"
               else '<button id="target" style="width:180px;height:28px">Target</button>')
    tag = "button" if kind == "a button" else "div"
    html = f'<section id="wrap" style="position:relative;height:40px;margin:8px">{control}</section>'
    listen_on = "wrap" if trigger == "focusin" else "target"
    script = f"""
      const target = document.getElementById("target");
      target.addEventListener("focus", () => window.record.push("focused"));
      target.addEventListener("click", () => window.record.push("clicked"));
      document.getElementById("{listen_on}").addEventListener("{trigger}", () => {{
        if (document.getElementById("cover")) return;
        const cover = document.createElement("{tag}");
        cover.id = "cover";
        cover.textContent = "{'Pay' if tag == 'button' else ''}";
        cover.style.cssText = "position:absolute;left:0;top:0;width:200px;height:36px;z-index:9;{COVER_KINDS[kind]}";
        for (const type of ["mouseup", "click"]) {{
          cover.addEventListener(type, () => window.record.push("cover:" + type));
        }}
        document.getElementById("wrap").appendChild(cover);
      }});"""
    return html, script


async def test_the_issue_s_field_that_covers_itself_on_focus_is_clicked_and_the_page_records_it(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "fidelity-focus-cover.html")
    for name, done in (("Focus me", "focused:focus-field"), ("Focus me too", "focused:css-field"),
                       ("Focus and cover", "focused:appended"), ("Press and cover", "pressed:moved")):
        outcome = await driver.act(Click(id=named(observation, name).id), 1)
        assert outcome.ok, (name, outcome)
        assert "the press reached it" in outcome.note and "held back" in outcome.note, outcome.note
        assert done in await record(driver)
        observation = await driver.observe()
    assert "focused (task done)" in observation.text
    assert not any(entry.startswith(("cover:", "clicked:")) for entry in await record(driver)), await record(driver)


@pytest.mark.parametrize("target", TARGETS)
async def test_a_cover_after_the_press_is_judged_by_what_the_page_did_and_one_before_it_is_refused(
    driver: PageDriver, target: str,
) -> None:
    await open_page(driver, "fidelity-focus-cover.html")
    for trigger, kind in itertools.product(COVER_TRIGGERS, COVER_KINDS):
        observation = await build(driver, *cover_case(trigger, kind, target))
        outcome = await driver.act(Click(id=named(observation, "Target").id), 1)
        done = await record(driver)
        case = (trigger, kind, target, outcome, done)
        if trigger in ("focus", "focusin", "mousedown"):  # the press reached it, and the page answered
            assert outcome.ok and "the press reached it and the page" in outcome.note, case
            assert done[:1] == (["focused"] if trigger != "mousedown" else done[:1]), case
        else:  # covered as the pointer came: nothing reached it
            assert outcome.rejection is not None and outcome.rejection.cause == "changed_control", case
            assert "reached nothing" in outcome.rejection.reason, case
            assert "focused" not in done, case
        assert not any(entry.startswith("cover:") or entry == "clicked" for entry in done), case


# --- 2. An icon whose hover style swaps its image is clicked the first time ---------------------------------------

SWAPS = {
    "src": ('<span id="icon" onclick="window.record.push(\'clicked\')"><img id="art" alt="" width="20" height="20" '
            'src="icons/star-outline.svg"></span>',
            "art.src = 'icons/star-filled.svg'"),
    "icon class": ('<span id="icon" onclick="window.record.push(\'clicked\')"><i id="art" class="fa fa-star-o" '
                   'style="display:inline-block;width:20px;height:20px"></i></span>',
                   "art.className = 'fa fa-star'"),
    "background": ('<div id="icon" style="width:24px;height:24px;background:url(icons/star-outline.svg)" '
                   'onclick="window.record.push(\'clicked\')"><span id="art"></span></div>',
                   "icon.style.backgroundImage = 'url(icons/star-filled.svg)'"),
    "glyph under a title": ('<span id="icon" title="Star" onclick="window.record.push(\'clicked\')">'
                            '<b id="art">☆</b></span>', "art.textContent = '★'"),
}
BINDINGS = {
    "addEventListener": 'icon.addEventListener("{event}", () => {{ {swap}; }});',
    "on* attribute": 'icon.setAttribute("on{event}", "{swap}");',
    "delegated to the document": 'document.addEventListener("mouseover", (e) => {{ if (icon.contains(e.target)) '
                                 '{{ {swap}; }} }});',
}


@pytest.mark.parametrize("swap", SWAPS)
async def test_an_icon_whose_image_swaps_under_the_pointer_is_clicked_the_first_time(
    driver: PageDriver, swap: str,
) -> None:
    observation = await open_page(driver, "fidelity-hover-swap.html")
    for name in ("star-outline", "star-o", "Star"):
        for control in [c for c in observation.controls if c.name == name]:
            outcome = await driver.act(Click(id=control.id), 1)
            assert outcome.ok, (name, outcome)
    assert sorted(await record(driver)) == sorted(
        ["clicked:img-swap", "clicked:css-swap", "clicked:class-swap", "clicked:glyph-swap"])
    html, change = SWAPS[swap]
    for (binding, template), event in itertools.product(BINDINGS.items(), ("mouseover", "mouseenter", "pointerover")):
        if binding == "delegated to the document" and event != "mouseover":
            continue
        script = ("const icon = document.getElementById('icon'); const art = document.getElementById('art');"
                  + template.format(event=event, swap=change.replace('"', "'")))
        observation = await build(driver, html, script)
        icon = [c for c in observation.controls if c.role == "clickable"]
        assert len(icon) == 1, (swap, binding, observation.text)
        outcome = await driver.act(Click(id=icon[0].id), 1)
        assert outcome.ok, (swap, binding, event, outcome)
        assert await record(driver) == ["clicked"], (swap, binding, event)


async def test_an_icon_the_page_names_as_the_pointer_comes_is_still_refused(driver: PageDriver) -> None:
    """A guess that becomes a name the page gives ("Delete all") is a change the guard refuses."""
    await open_page(driver, "fidelity-hover-swap.html")
    html, _ = SWAPS["src"]
    observation = await build(driver, html, "const icon = document.getElementById('icon'); icon.addEventListener("
                                            "'pointerover', () => icon.setAttribute('aria-label', 'Delete all'));")
    outcome = await driver.act(Click(id=observation.controls[0].id), 1)
    assert outcome.rejection is not None and outcome.rejection.cause == "changed_control", outcome
    assert await record(driver) == []


# --- 3. Targets that react only to the pointer passing over them ---------------------------------------------------

HOVER_EVENTS = ("mouseenter", "mouseover", "pointerenter", "pointerover")
HOVER_TARGET_SCRIPT = """
  const reveal = (what) => {
    if (window.record.includes(what)) return;
    window.record.push(what);
    const button = document.createElement("button");
    button.textContent = "Open " + what;
    document.getElementById("family").appendChild(button);
  };
"""


async def test_targets_revealed_by_pointer_over_listeners_are_offered_and_hovered(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-hover-listeners.html")
    for name, what in (("Account", "listener"), ("Help", "attribute"), ("Settings", "pointer"), ("South", "South")):
        outcome = await driver.act(Hover(id=named(observation, name).id), 1)
        assert outcome.ok, (name, outcome)
        observation = await driver.observe()
        assert [c.name for c in observation.controls if c.name.startswith("Open")] == [f"Open {what}"], name
    assert await record(driver) == ["listener", "attribute", "pointer", "South"]


@pytest.mark.parametrize("event", HOVER_EVENTS)
async def test_a_pointer_over_listener_makes_a_target_however_it_is_added(driver: PageDriver, event: str) -> None:
    await open_page(driver, "fidelity-hover-listeners.html")
    html = ('<div id="own" style="padding:6px">Own listener</div>'
            f'<div id="attr" style="padding:6px" on{event}="reveal(\'attr\')">Attribute</div>'
            '<ul id="list" style="display:flex;gap:8px;list-style:none">'
            + "".join(f'<li class="card" style="padding:6px">Card {n}</li>' for n in range(1, 5)) + "</ul>"
            '<div id="hidden-one" style="display:none">Hidden</div>'
            '<div id="under-body">Plain text</div>')
    script = HOVER_TARGET_SCRIPT + f"""
      window.reveal = reveal;
      document.getElementById("own").addEventListener("{event}", () => reveal("own"));
      document.getElementById("hidden-one").addEventListener("{event}", () => reveal("hidden"));
      document.getElementById("list").addEventListener("mouseover", (e) => {{
        const card = e.target.closest("li"); if (card) reveal(card.textContent); }});
      document.body.addEventListener("mouseover", () => {{}});  // an analytics listener: makes nothing a target
    """
    observation = await build(driver, html, script)
    names = [c.name for c in observation.controls]
    assert {"Own listener", "Attribute", "Card 1", "Card 4"} <= set(names), observation.text
    assert "Hidden" not in names and "Plain text" not in names, observation.text
    for name in ("Own listener", "Attribute", "Card 3"):
        assert (await driver.act(Hover(id=named(observation, name).id), 1)).ok, name
    assert await record(driver) == ["own", "attr", "Card 3"]


# --- 4. A sortable list's items are drag sources at their own points ----------------------------------------------

SORTABLE_SCRIPT = """
  const list = document.getElementById("list");
  const across = list.dataset.across === "1";
  let dragged = null;
  list.addEventListener(list.dataset.press, (e) => { dragged = e.target.closest("li"); e.preventDefault(); });
  document.addEventListener(list.dataset.release, (e) => {
    const hit = dragged && document.elementFromPoint(e.clientX, e.clientY);
    const target = hit && hit.closest("li");
    if (target && target !== dragged && target.parentElement === list) {
      const box = target.getBoundingClientRect();
      const after = across ? e.clientX > box.left + box.width / 2 : e.clientY > box.top + box.height / 2;
      list.insertBefore(dragged, after ? target.nextSibling : target);
    }
    dragged = null;
    window.record.push([...list.children].map((n) => n.textContent).join(","));
  });
"""
SORTABLE_FAMILY = [(size, across, press, evidence)
                   for size in (2, 5) for across in (False, True)
                   for press, evidence in (("mousedown", "class"), ("pointerdown", "cursor"), ("mousedown", "plain"))]


def sortable_list(size: int, across: bool, press: str, evidence: str) -> str:
    release = "mouseup" if press == "mousedown" else "pointerup"
    layout = "display:flex;gap:4px" if across else ""
    cls = ' class="ui-sortable"' if evidence == "class" else ""
    cursor = "cursor:grab;" if evidence == "cursor" else ""
    items = "".join(f'<li style="{cursor}padding:6px;margin:2px;background:#eee">Item {n}</li>'
                    for n in range(1, size + 1))
    return (f'<ul id="list"{cls} data-press="{press}" data-release="{release}" data-across="{int(across)}" '
            f'style="list-style:none;padding:4px;width:{"auto" if across else "200px"};{layout}">{items}</ul>')


async def test_the_issue_s_sortable_lists_reorder_from_any_item(driver: PageDriver) -> None:
    observation = await open_page(driver, "fidelity-sortable.html")
    for dragged, onto, expected in (("One", "Four", "down:Two,Three,One,Four,Five"),
                                    ("Blue", "Red", "across:Blue,Red,Green"),
                                    ("Gamma", "Alpha", "native:Gamma,Alpha,Beta")):
        outcome = await driver.act(Drag(id=named(observation, dragged).id, to_id=named(observation, onto).id), 1)
        assert outcome.ok, (dragged, outcome)
        assert (await record(driver))[-1] == expected
        observation = await driver.observe()


@pytest.mark.parametrize(("size", "across", "press", "evidence"), SORTABLE_FAMILY)
async def test_every_item_of_a_sortable_list_is_offered_and_drags_to_its_place(
    driver: PageDriver, size: int, across: bool, press: str, evidence: str,
) -> None:
    if driver.page.url.split("/")[-1] != "fidelity-sortable.html":
        await open_page(driver, "fidelity-sortable.html")
    observation = await build(driver, sortable_list(size, across, press, evidence), SORTABLE_SCRIPT)
    items = [f"Item {n}" for n in range(1, size + 1)]
    assert [c.name for c in observation.controls if c.name.startswith("Item")] == items, observation.text
    assert not any(c.name.startswith("Item 1 Item 2") for c in observation.controls), "the list is no target"
    order = list(items)
    for source, target in ((size, 1), (1, size)):  # the last item onto the first, then the (new) first onto the last
        dragged, onto = order[source - 1], order[target - 1]
        outcome = await driver.act(Drag(id=named(observation, dragged).id, to_id=named(observation, onto).id), 1)
        assert outcome.ok, outcome
        order.remove(dragged)
        order.insert(order.index(onto), dragged)  # released at the target's middle: put before it
        assert (await record(driver))[-1] == ",".join(order), (size, across, press, evidence)
        observation = await driver.observe()


async def test_an_app_root_listening_for_presses_does_not_offer_its_parts(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-sortable.html")
    html = ('<div id="root"><header class="top" style="padding:4px">Header text</header>'
            '<main class="body" style="padding:4px">Main text <button>Go</button></main></div>'
            '<div id="root2"><div class="a" style="padding:4px">Part A</div><div class="b">Part B</div></div>')
    script = ('for (const id of ["root", "root2"]) document.getElementById(id).addEventListener("mousedown", () => {});'
              'document.getElementById("root").addEventListener("click", () => {});')
    observation = await build(driver, html, script)
    names = [c.name for c in observation.controls]
    assert "Header text" not in names and "Part A" not in names and "Part B" not in names, observation.text


# --- 5. Names from the accessible-name rules first; hidden inputs are not offered ----------------------------------

HIDDEN_INPUTS = {
    "opacity 0, 1x1": "opacity:0;width:1px;height:1px",
    "opacity 0, 1x1, no padding or border": "opacity:0;width:1px;height:1px;padding:0;border:0",
    "opacity 0, 4px tall": "opacity:0;width:120px;height:4px;padding:0;border:0",
    "1x1, no padding or border": "width:1px;height:1px;padding:0;border:0",
    "clipped to nothing": "position:absolute;clip:rect(0,0,0,0);width:100px",
    "clip-path inset(50%)": "clip-path:inset(50%);width:100px",
    "scaled to nothing": "transform:scale(0)",
    "left of the page": "position:absolute;left:-9999px",
}


async def test_the_issue_s_nameless_controls_and_titled_icons_are_named_by_the_name_rules(
    driver: PageDriver,
) -> None:
    observation = await open_page(driver, "fidelity-nameless.html")
    lines = [line.split("] ", 1)[1] for line in observation.text.splitlines() if line.startswith("[")]
    assert lines == ['textbox "" value=""', 'checkbox "" unchecked', 'clickable "Star"', 'clickable "Delete"',
                     'clickable "send-reply" name-from=id', 'clickable "close-email" name-from=id'], lines
    assert (await driver.act(Click(id=named(observation, "Delete").id), 1)).ok
    assert await record(driver) == ["delete"]


@pytest.mark.parametrize("parent_opacity", [False, True])
async def test_an_input_hidden_in_any_of_several_ways_is_not_offered(driver: PageDriver, parent_opacity: bool) -> None:
    await open_page(driver, "fidelity-nameless.html")
    fields = "".join(
        f'<p style="position:relative"><input aria-label="ghost {n}" class="ghost-{n}" style="{style}"></p>'
        for n, style in enumerate(HIDDEN_INPUTS.values()))
    hidden_parent = ('<div style="opacity:0"><input aria-label="ghost in a transparent box" '
                     'style="width:1px;height:1px"></div>' if parent_opacity else "")
    shown = ('<p style="position:relative"><span>Fake select</span><select aria-label="Real select" '
             'style="opacity:0;position:absolute;left:0;top:0;width:120px;height:24px"><option>A</option></select></p>'
             '<p><input class="hasDatepicker"><input type="checkbox" class="toggle-all"><textarea class="editor">'
             '</textarea><select class="chooser"><option></option></select></p>')
    observation = await build(driver, fields + hidden_parent + shown)
    family = observation.controls  # the page's own nameless controls and the family's
    names = [c.name for c in family]
    assert not any(name.startswith("ghost") for name in names), (json.dumps(HIDDEN_INPUTS), observation.text)
    assert "Real select" in names, observation.text  # transparent but its size: a click there reaches it
    nameless = [c for c in family if c.role in ("textbox", "checkbox", "combobox") and c.name != "Real select"]
    assert nameless and all(c.name == "" and c.name_from is None for c in nameless), observation.text


async def test_a_titled_icon_is_named_by_its_title_not_its_glyph_nor_a_hidden_text(driver: PageDriver) -> None:
    await open_page(driver, "fidelity-nameless.html")
    for glyph in ("☆", "🗑", "×", "⋮"):
        html = (f'<span id="a" title="Remove item" onclick="window.record.push(1)">{glyph}</span>'
                f'<span id="b" onclick="window.record.push(2)">{glyph}<span style="display:none">secret</span></span>'
                '<button id="c" class="icon" title="Archive"></button>'
                '<span id="ember123" class="icon" onclick="window.record.push(3)" style="display:inline-block;'
                'width:20px;height:20px"></span>')
        observation = await build(driver, html, "")
        lines = {c.name: c for c in observation.controls if c.role in ("clickable", "button")}
        assert "Remove item" in lines and lines["Remove item"].name_from is None, observation.text
        assert glyph in lines, observation.text  # no title: its glyph, and never the hidden text
        assert "secret" not in observation.text
        assert "Archive" in lines, observation.text
        assert not any(c.name == "ember123" for c in observation.controls), "a generated id is no name"
