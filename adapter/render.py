"""Annotated HTML (from annotate.js) → the compact text observation. Pure: no browser needed.

The text is a header (`Page:`, `URL:`, any `Dialog:` and `Notice:` lines), then the page in document order:
headings as `# ...`, text as lines, list items as `- ...`, table rows as `|a|b|`, and each
control on its own line exactly as `format_control` writes it. A control inside a table row shows in its cell as its
`[id]` (its name is not repeated there) and its line follows the row. Text of a `<label>` whose control is shown is
left out: the control line carries it.

Page text can never pass for a control or header line, nor a cell for two cells (adapter/lines.py): only
lines that begin with `[` are controls. The header takes at most a quarter of the size bound, however many
dialogs and notices came: the first few, each cut short, then how many more there were.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree

from adapter.lines import TEXT_ESCAPE, cell_text, cell_words, clip, flat, json_line, quoted, text_line
from adapter.observation import NAME_SOURCES, Control, Observation, PagePart, format_control
from adapter.page_state import PageState, page_state
from adapter.reply import clean_text
from computerops.core import defaults
from computerops.core.numbers import whole_number

# Mirrors BLOCK_TAGS in annotate.js; other elements laid out as blocks carry data-co-block.
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "legend", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})
HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}
TRUNCATION_HINT = "Use the more action to see the next part."
CONTINUED_NOTICE = "(A later part of a long page: text shown in earlier parts is left out.)"
NOTICE_ROOM = 120
MAX_LINE = 400
"""Longest text line; longer runs of text are split so the size bound never hides a whole paragraph."""
HEADER_SHARE = 4
"""The header (title, URL, dialogs, notices) takes at most max_chars // HEADER_SHARE characters."""
HEADER_ENTRIES = 3
"""Dialogs, and notices, shown in the header; the rest are counted."""
ENTRY_CHARS = 200
"""Characters of one dialog or notice shown; the rest are counted."""
TITLE_CHARS = 200
"""Characters of the page title shown (less under a small size bound: a fifth of the header's share)."""
URL_CHARS = 400
"""Characters of the URL shown (less under a small size bound: a quarter of the header's share)."""
CUT_MARK = "Observation truncated:"
"""How the header line begins that says the page was not read whole (annotate.js stopped early, or the page did not
answer in time): shown on every part, whatever the size bound."""


def _cut(text: str, *, row: bool) -> int:
    """Where to end a line of a long run: at the last space that fits (in a row, one inside a cell's text, so
    the next line never begins with a cell separator nor an escaped one), else at MAX_LINE."""
    at = MAX_LINE + 1
    while (at := text.rfind(" ", 0, at)) > 0:
        if not row or (text[at - 1] != "|" and text[at + 1: at + 2] not in ("|", TEXT_ESCAPE)):
            return at
    return MAX_LINE


def _wrap(text: str, *, row: bool = False) -> list[str]:
    """A very long run of text as lines of at most MAX_LINE characters (and an escape), split at spaces where
    possible, so a part of a long page can always show some of it. Every line is a text line (`text_line`),
    except the first of a table row's."""
    pieces = []
    while len(text) > MAX_LINE:
        cut = _cut(text, row=row)
        pieces.append(text[:cut])
        text = text[cut:].lstrip()
    pieces = [*pieces, text] if text else pieces
    return [piece if row and i == 0 else text_line(piece) for i, piece in enumerate(pieces)]


@dataclass
class _Line:
    text: str
    control: Control | None = None


@dataclass
class _Writer:
    """Collects lines; inline text is buffered until a block boundary or a control line."""

    lines: list[_Line] = field(default_factory=list)
    buffer: list[str] = field(default_factory=list)
    prefix: str = ""

    def text(self, value: str) -> None:
        self.buffer.append(value)

    def flush(self) -> None:
        text = flat("".join(self.buffer))
        self.buffer.clear()
        if text:
            self.lines.extend(_Line(piece) for piece in _wrap(self.prefix + text))
            self.prefix = ""

    def end_block(self) -> None:
        self.flush()
        self.prefix = ""

    def control(self, control: Control) -> None:
        self.flush()
        self.lines.append(_Line(json_line(format_control(control)), control))


Element = etree._Element
Node = Element | str
"""What the renderer walks: an element, or a run of text (an element's text or an element's tail: lxml keeps text
on the elements around it, and `_contents` lays it out in document order)."""


def _contents(node: Element) -> list[Node]:
    """An element's children in document order, text runs included."""
    items: list[Node] = [node.text] if node.text else []
    for child in node:
        items.append(child)
        if child.tail:
            items.append(child.tail)
    return items


def _is_element(node: object) -> bool:
    """An element, not a comment, processing instruction or entity (whose tag is not a name)."""
    return isinstance(node, Element) and isinstance(node.tag, str)


def _unread(count: str | None) -> int:
    """Characters annotate.js says it did not read of a control's name or value (0 when it read them all)."""
    return whole_number(count) or 0 if count is not None else 0


def control_from(tag: Element) -> Control:
    """The Control described by an element's data-co-* attributes."""

    def attr(name: str) -> str | None:
        return tag.get(f"data-co-{name}")

    checked = attr("checked")
    options = attr("options")
    value = attr("value")
    name_from = attr("name-from")
    return Control(
        id=attr("id") or "",
        role=attr("role") or "generic",
        name=flat(attr("name") or ""),  # the rule page text follows: control characters read as spaces
        name_from=name_from if name_from in NAME_SOURCES else None,
        value=flat(value) if tag.tag == "select" and value is not None else value,  # its options' labels, as they are
        checked=None if checked is None else checked == "true",
        options=[flat(option) for option in json.loads(options)] if options else [],  # as names: the same rule
        required="data-co-required" in tag.attrib,
        disabled="data-co-disabled" in tag.attrib,
        readonly="data-co-readonly" in tag.attrib,
        validation=attr("validation") or None,
        href=attr("href"),
        input_type=attr("type"),
        name_cut="data-co-name-cut" in tag.attrib,
        name_unread=_unread(attr("name-unread")),
        value_unread=_unread(attr("value-unread")),
        covered="data-co-covered" in tag.attrib,
    )


Step = Callable[[], None]
"""Work the renderer does after a node's children (end a block, add `: ` after a term)."""


class _Renderer:
    """Walks the annotated tree in document order with a stack of its own, never by recursion: a page nested
    thousands of elements deep renders like any other."""

    def __init__(self, shown_ids: set[str]) -> None:
        self.out = _Writer()
        self.shown_ids = shown_ids
        self._stack: list[tuple[Node, bool] | Step] = []

    def render(self, root: Element) -> None:
        self._stack.append((root, False))
        while self._stack:
            item = self._stack.pop()
            if callable(item):
                item()
            else:
                self.node(*item)
        self.out.end_block()

    def then(self, *steps: tuple[Node, bool] | Step) -> None:
        """Do these next, in this order (before what was planned already)."""
        self._stack.extend(reversed(steps))

    def node(self, node: Node, controls_only: bool) -> None:
        if isinstance(node, str):
            if not controls_only:
                self.out.text(node)
            return
        if not isinstance(node.tag, str):  # a comment or processing instruction: its tail was laid out apart
            return
        attributes, name = node.attrib, node.tag
        if "data-co-id" in attributes:
            self.out.control(control_from(node))
            self.children(node, controls_only=True)
            return
        label_for = attributes.get("data-co-label-for")
        if label_for is not None and label_for in self.shown_ids:
            self.children(node, controls_only=True)
            return
        if controls_only:
            self.children(node, controls_only=True)
        elif name == "table":
            self.table(node)
        elif name == "br":
            self.out.flush()
        elif name in HEADING_LEVELS:
            self.block(node, "#" * HEADING_LEVELS[name] + " ")
        elif name == "li":
            self.block(node, "- ")
        elif name == "dt":  # a term and its description share one line: "Total: 49.90"
            self.out.end_block()
            self.then(*self._children(node), lambda: self.out.text(": "))
        elif name == "dd":
            self.then(*self._children(node), self.out.end_block)
        elif name in BLOCK_TAGS or "data-co-block" in attributes or "data-co-frame" in attributes:
            self.block(node, "")
        else:
            self.children(node)

    @staticmethod
    def _children(node: Element, *, controls_only: bool = False) -> list[tuple[Node, bool]]:
        return [(child, controls_only) for child in _contents(node)]

    def children(self, node: Element, *, controls_only: bool = False) -> None:
        self.then(*self._children(node, controls_only=controls_only))

    def _block_steps(self, node: Element, prefix: str) -> list[tuple[Node, bool] | Step]:
        def start() -> None:
            self.out.end_block()
            self.out.prefix = prefix

        return [start, *self._children(node), self.out.end_block]

    def block(self, node: Element, prefix: str) -> None:
        self.then(*self._block_steps(node, prefix))

    def table(self, table: Element) -> None:
        self.out.end_block()
        steps: list[tuple[Node, bool] | Step] = []
        for part in _own(table, "caption"):
            steps += self._block_steps(part, "")
        for row in _own_rows(table):
            cells = [c for c in row if c.tag in ("td", "th")]
            steps.append(lambda cells=cells: self.row(cells))  # type: ignore[misc]
            for cell in cells:
                steps += self._children(cell, controls_only=True)
        steps.append(self.out.end_block)
        self.then(*steps)

    def row(self, cells: list[Element]) -> None:
        texts = [cell_text(flat("".join(_cell_text(c)))) for c in cells]
        if any(texts):
            # no padding around separators; a cell's text ending in a backslash gets a space, else `\|` would
            # read as an escaped pipe and the cell as one with the next
            line = "|" + "|".join(f"{t} " if t.endswith(TEXT_ESCAPE) else t for t in texts) + "|"
            self.out.lines.extend(_Line(piece) for piece in _wrap(line, row=True))


def _own(table: Element, name: str) -> Iterator[Element]:
    return (c for c in table if c.tag == name)


def _own_rows(table: Element) -> Iterator[Element]:
    """Rows of this table, not of tables nested in its cells, in document order (each element looked at once: the
    walk does not go into nested tables)."""
    stack = list(reversed(table))
    while stack:
        node = stack.pop()
        if not _is_element(node) or node.tag == "table":
            continue
        if node.tag == "tr":
            yield node
        stack.extend(reversed(node))


PARSED_DEPTH = 2_000
"""Annotated HTML nesting this deep was cut by the parser (libxml2 keeps about 2,040 levels; annotate.js nests at most
ReadLimits.depth, at most adapter/reading.py's MAX_DEPTH)."""
_AROUND_A_BLOCK = None
"""In a cell's walk: a space around a block or a line break."""


def _cell_text(cell: Element) -> Iterator[str]:
    """A cell's text in document order, controls as their tokens, blocks and line breaks as spaces (by a stack of
    its own, not recursion)."""
    stack: list[Node | None] = list(reversed(_contents(cell)))
    while stack:
        child = stack.pop()
        if child is _AROUND_A_BLOCK:
            yield " "
        elif isinstance(child, str):
            yield cell_words(child)
        elif child is not None and _is_element(child):
            if "data-co-id" in child.attrib:
                yield _cell_token(child)
            elif "data-co-label-for" in child.attrib:
                yield from (_cell_token(tag) for tag in child.iterdescendants() if "data-co-id" in tag.attrib)
            elif child.tag == "br" or child.tag in BLOCK_TAGS:
                stack.extend([_AROUND_A_BLOCK, *reversed(_contents(child)), _AROUND_A_BLOCK])
            else:
                stack.extend(reversed(_contents(child)))


def _cell_token(tag: Element) -> str:
    """A control inside a table cell, as its [id]: its name is on its control line, after the row."""
    return f" [{tag.get('data-co-id') or ''}] "


def _counted(root: Element, name: str) -> int:
    value = root.get(f"data-co-{name}")
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def page_cut(root: Element, *, too_deep: bool = False) -> str | None:
    """What annotate.js left out of the page, as its bounds stopped it (the counts it put on the root), in words;
    and, `too_deep`, what the parser dropped (annotated HTML nested deeper than it keeps: not from annotate.js,
    whose depth is bounded by ReadLimits)."""
    elements, deep, depth, chars = (_counted(root, name) for name in ("cut-nodes", "cut-depth", "depth", "cut-chars"))
    left_out = [
        *([f"everything after its first {elements} elements"] if elements else []),
        *([f"{deep} parts nested more than {depth} elements deep"] if deep else []),
        *([f"{chars} characters of text"] if chars else []),
        *([f"perhaps what nests over {PARSED_DEPTH} elements deep and all after it"] if too_deep else []),
    ]
    return f"the page is too large to read whole; left out: {', '.join(left_out)}." if left_out else None


def _body_lines(annotated_html: str) -> tuple[list[_Line], str | None, PageState]:
    """The page's lines, what annotate.js left out of it (None when nothing), and the state it recorded."""
    parser = etree.HTMLParser(huge_tree=True)  # no depth limit: annotate.js bounds the depth (ReadLimits)
    parser.feed(annotated_html)
    document: Element | None
    try:
        document = parser.close()
    except etree.XMLSyntaxError:
        document = None
    if document is None:  # nothing but white space and comments: an empty page
        return [], None, PageState()
    renderer = _Renderer({str(value) for value in document.xpath("//@data-co-id")})
    body = next(document.iter("body"), None)
    renderer.render(document if body is None else body)
    # libxml2 silently drops what nests deeper than about 2,000 levels, and all after it: said, never hidden
    too_deep = annotated_html.count("<") > PARSED_DEPTH and bool(
        document.xpath(f"boolean(//*[count(ancestor::*) >= {PARSED_DEPTH}])"))
    if body is None:
        return renderer.out.lines, page_cut(document, too_deep=True) if too_deep else None, PageState()
    return renderer.out.lines, page_cut(body, too_deep=too_deep), page_state(body)


def _cut_short(text: str, limit: int) -> str:
    shown, cut = clip(text, limit)
    return f"{shown}… ({cut} more characters)" if cut else shown


def _entry(kind: str, text: str) -> str:
    shown, cut = clip(flat(text), ENTRY_CHARS)
    return f"{kind}: {quoted(shown)}" + (f" ({cut} more characters)" if cut else "")


def _count(kind: str, more: int) -> str:
    return f"{kind}: ({more} more not shown)"


def _header(
    title: str, url: str, dialogs: list[str], notices: list[str], *, max_chars: int, continued: bool,
    cut: str | None = None,
) -> list[str]:
    """The header lines, ending with the blank line: title and URL (each cut short), what of the page was not read
    (`cut`), then dialogs and notices while they fit in the header's share of max_chars, at most HEADER_ENTRIES of
    each kind, each cut short, and a count of those left out. However many dialogs a page raises, the page keeps
    its room."""
    share = max_chars // HEADER_SHARE
    title_chars, url_chars = max(40, min(TITLE_CHARS, share // 5)), max(60, min(URL_CHARS, share // 4))
    lines = [f"Page: {_cut_short(flat(title), title_chars)}", f"URL: {_cut_short(flat(url), url_chars)}"]
    if cut:
        lines.append(f"{CUT_MARK} {_cut_short(flat(cut), ENTRY_CHARS)}")
    tail = [CONTINUED_NOTICE, ""] if continued else [""]
    kinds = [(kind, texts) for kind, texts in (("Dialog", dialogs), ("Notice", notices)) if texts]
    room = share - sum(len(line) + 1 for line in lines + tail)
    room -= sum(len(_count(kind, len(texts))) + 1 for kind, texts in kinds)  # every count line fits
    for kind, texts in kinds:
        shown = 0
        for text in texts[:HEADER_ENTRIES]:
            entry = _entry(kind, text)
            if len(entry) + 1 > room:
                break
            lines.append(entry)
            room -= len(entry) + 1
            shown += 1
        if shown < len(texts):
            lines.append(_count(kind, len(texts) - shown))
        else:
            room += len(_count(kind, len(texts))) + 1
    return lines + tail


def _size(lines: list[_Line]) -> int:
    return sum(len(line.text) + 1 for line in lines)


def _bound(
    head: list[_Line], body: list[_Line], max_chars: int, start: PagePart
) -> tuple[list[_Line], int, PagePart | None]:
    """One part of a long page: from `start`, as many control lines as fit, then a contiguous run of text.

    Control lines come first in the budget, so every control stays when the controls fit.
    Returns the kept lines, the characters after `start` left out, and where the next part starts.
    """
    texts = [line for line in body if not line.control][start.text_line:]
    controls = [line for line in body if line.control][start.control_line:]
    budget = max_chars - _size(head) - NOTICE_ROOM
    kept_ids: set[int] = set()
    used = 0
    for line in controls:
        if used + len(line.text) + 1 > budget:
            break
        kept_ids.add(id(line))
        used += len(line.text) + 1
    for line in texts:
        if used + len(line.text) + 1 > budget:
            break  # keep a contiguous run of the page's text, not scattered lines
        kept_ids.add(id(line))
        used += len(line.text) + 1
    kept_controls = [line for line in controls if id(line) in kept_ids]
    if texts and id(texts[0]) not in kept_ids:
        # The controls leave no room for the next text line: the last ones wait for the next part, so that
        # every part advances through the text (else `more` would show the same part for ever).
        while kept_controls and used + len(texts[0].text) + 1 > budget:
            dropped = kept_controls.pop()
            kept_ids.discard(id(dropped))
            used -= len(dropped.text) + 1
        if used + len(texts[0].text) + 1 <= budget:
            kept_ids.add(id(texts[0]))
    if not kept_ids and (controls or texts):  # a bound too small for any line: show one, so parts still advance
        kept_ids.add(id(controls[0] if controls else texts[0]))
    shown_controls = sum(id(line) in kept_ids for line in controls)
    shown_texts = sum(id(line) in kept_ids for line in texts)
    kept = [line for line in body if id(line) in kept_ids]
    omitted = _size(texts) + _size(controls) - _size(kept)
    if shown_texts == len(texts) and shown_controls == len(controls):
        return kept, omitted, None
    # Every part shows all the controls while they fit in one; otherwise the parts page through them once.
    paging_controls = start.control_line > 0 or shown_controls < len(controls)
    following = PagePart(
        text_line=start.text_line + shown_texts,
        control_line=start.control_line + shown_controls if paging_controls else 0,
    )
    return kept, omitted, following


def render_observation(
    annotated_html: str,
    *,
    url: str,
    title: str,
    max_chars: int = defaults.OBSERVATION_CHARS,
    dialogs: list[str] | None = None,
    notices: list[str] | None = None,
    part: PagePart | None = None,
    unread: str | None = None,
) -> Observation:
    """Render annotated HTML to the observation text and its control table (same order).

    A page over `max_chars` is shown in parts: `part` says where this one starts (the `more` action
    asks for `next_part` of the previous observation). What of the page was not read (annotate.js's bounds,
    recorded on its root, or `unread`: why the page could not be read at all) is said in the header.
    """
    # Page text is the page's own: lone surrogates (a script's '\ud800') are no Unicode, and neither the parser nor the
    # next request to the model can encode them. They show as U+FFFD, as everywhere else (adapter/reply.py).
    annotated_html, title, url = (clean_text(text)[0] for text in (annotated_html, title, url))
    dialogs = [clean_text(text)[0] for text in dialogs or []]
    notices = [clean_text(text)[0] for text in notices or []]
    start = part or PagePart()
    continued = start != PagePart()
    body, cut, state = _body_lines(annotated_html)
    cut = " ".join(filter(None, [unread, cut])) or None
    head = [_Line(line) for line in _header(title, url, dialogs, state.notices() + notices, max_chars=max_chars,
                                            continued=continued, cut=cut)]
    following: PagePart | None = None
    if continued or len("\n".join(line.text for line in head + body)) > max_chars:
        body, omitted, following = _bound(head, body, max_chars, start)
        if following is not None:
            body.append(_Line(f"Output truncated: {omitted} characters omitted. {TRUNCATION_HINT}"))
    text = "\n".join(line.text for line in head + body)
    controls = [line.control for line in body if line.control]
    return Observation(
        url=url, title=title, text=text, controls=controls,
        truncated=continued or following is not None or cut is not None,
        dialogs=dialogs, notices=notices, next_part=following, left_out=cut, modal=state.modal,
        loads_more=state.loads_more,
    )
