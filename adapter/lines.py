"""Page text as observation lines that can never pass for a control line, a header line or another table cell.

The observation says what each line is by how it begins: `[` a control (observation.format_control), `|` a
table row, `Page:` `URL:` `Dialog:` `Notice:` `Observation truncated:` the header, `Output truncated:` and
`(A later part` the part notices; and the message around it begins its parts with the harness's framing words
(`Task:` `Result:` `Observation:`, adapter/prompts.py). Page text reaches the observation only through this module,
which keeps two promises:

- page text never breaks a line: every character `str.splitlines` would split at becomes a space (or, inside
  a quoted string, its JSON escape), so only the renderer ends lines;
- a text line that would begin like one of those kinds of line is shown with a leading backslash. "Begin
  like" is read the way a model reads: after invisible characters (zero-width, bidi controls, combining
  marks, the object replacement character), in lookalike brackets and pipes, in full-width or other
  compatibility forms, in any case, and after list or heading marks (`- [3] button`, `## Task:`), where the
  backslash goes after the marks.

In a table row every cell separator of the cell's own text (and its lookalikes) is escaped the same way, so
a cell can never read as two, and so is every bracket of its text, so a cell's `[7]` is always a control. The
cost is one character on the rare lines and cells that need it.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata

from adapter.observation import CONTROL_MARK
from adapter.prompts import FRAMING_WORDS

TEXT_ESCAPE = "\\"
"""Put before a text line that would begin like a control or header line, and before a pipe inside a cell."""
RESERVED_STARTS = ("page:", "url:", "dialog:", "notice:", "observation truncated:", "output truncated:",
                   "(a later part", *(word.casefold() for word in FRAMING_WORDS))
"""How the renderer's own lines and the harness's message parts begin (case-folded): text beginning so is escaped."""
_STRUCTURE = frozenset(CONTROL_MARK + "|")
"""First characters of control lines and table rows."""
PIPE_NAMES = re.compile(
    r"^(?:(?:LIGHT|MEDIUM|HEAVY|DOUBLE|FULLWIDTH|HALFWIDTH FORMS LIGHT|MODIFIER LETTER(?: LOW)?) )?"
    r"VERTICAL (?:LINE|BAR)(?: EXTENSION)?$|^BOX DRAWINGS .*VERTICAL$|^(?:LEFT|RIGHT) ONE EIGHTH BLOCK$|PASEQ$"
    r"|^DIVIDES$|DENTAL CLICK$|^BROKEN BAR$|^KANGXI RADICAL LINE$|^PRESENTATION FORM FOR VERTICAL EM DASH$"
    r"|^(?:LEFT|RIGHT) VERTICAL BOX LINE$|^HALFWIDTH FORMS LIGHT VERTICAL$|^CURLY BRACKET EXTENSION$"
    r"|^INTEGRAL EXTENSION$|^PRESENTATION FORM FOR VERTICAL (?:EN DASH|LOW LINE|WAVY LOW LINE)$"
    r"|^BOX DRAWINGS (?:LIGHT|HEAVY) (?:UP|DOWN)$|^PARALLEL TO$|LATERAL CLICK$|^TIFINAGH LETTER YEN$"
    r"|^HANGZHOU NUMERAL ONE$|^CJK UNIFIED IDEOGRAPH-4E28$|^MUSICAL SYMBOL (?:SINGLE|DOUBLE) BARLINE$"
    r"|^COMBINING (?:LONG|SHORT) VERTICAL LINE OVERLAY$"
    r"|^(?:LEFT|RIGHT) (?:SQUARE BRACKET|PARENTHESIS|CURLY BRACKET) EXTENSION$|^DEVANAGARI (?:DOUBLE )?DANDA$")
"""Unicode names of the characters drawn as one vertical stroke (or two), which a reader could take for a cell
separator. _PIPES is every character so named (tests/test_render_forgery.py makes it again from these names and
Python's Unicode database; it is written out here because scanning the database costs half a second an import)."""
_PIPES = frozenset(
    "|\xa6\u01c0\u01c1\u02c8\u02cc\u05c0\u0964\u0965\u2016\u20d2\u20d3\u2223\u2225\u239c\u239f\u23a2\u23a5\u23aa"
    "\u23ae\u23b8\u23b9\u23d0\u23f8\u2502\u2503\u2506\u2507\u250a\u250b\u254e\u254f\u2551\u2575\u2577\u2579"
    "\u257b\u258f\u2595\u2758\u2759\u275a\u2f01\u3021\u4e28\ufe31\ufe32\ufe33\ufe34\uff5c\uffe8\U000107b6"
    "\U000107b7\U0001d100\U0001d101")
"""Cell separators and the characters a reader could take for one (`|` `｜` `│` `┆` `▏` `׀` `∣` `¦` `ǀ` `❘` ...)."""
_BRACKETS = frozenset("⎡⎢⎣")
"""Bracket lookalikes that are not Unicode open punctuation."""
_PLAIN_OPENERS = frozenset("({")
"""Open punctuation common in text that no reader takes for a control's bracket."""
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\ufffc\ufffd")
"""Fillers, blanks and placeholders that render as nothing (or a box, or a `?`) yet are letters or symbols to Unicode:
the object replacement character and the replacement character among them."""
_MARK_CHARS = 6
"""Longest run of list or heading marks looked past (`######`, `12.`)."""
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Mn", "Me", "Zl", "Zp", "Zs"})
"""Control, format (zero-width, bidi), unassigned, private, surrogate, combining and separator characters."""
_UNSEEN = _INVISIBLE_CATEGORIES - {"Zs"}
"""Characters a reader does not see between two letters (spaces it does see)."""
_COLON_NAMES = re.compile(r"\bCOLON\b|^RATIO$|^ARMENIAN FULL STOP$|^DEVANAGARI SIGN VISARGA$")
"""Unicode names of characters drawn as a colon."""
_FOLD_SPAN = 40
"""How much of a line's start is folded to compare with RESERVED_STARTS (longer than any of them)."""
_TO_SPACE = {code: " " for code in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}
"""Control characters and the Unicode line and paragraph separators, as spaces."""
_JSON_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
"""Line breaks for `str.splitlines` that `json.dumps(..., ensure_ascii=False)` leaves as they are."""


def flat(text: str) -> str:
    """The text on one line: control characters and line separators as spaces, whitespace runs as one space."""
    return " ".join(text.translate(_TO_SPACE).split())


@functools.lru_cache(maxsize=4096)
def lookalike(c: str) -> str:
    """The ASCII character a reader takes `c` for, when Unicode's confusables (UTS #39) list one (Cyrillic `Т`
    is `T`, Greek `Ο` is `O`) or its name says it is a colon (`꞉` MODIFIER LETTER COLON, `∶` RATIO); else `c`."""
    if c.isascii():
        return c
    from confusable_homoglyphs.confusables import confusables_data  # 50 ms to load: only once a line needs it

    for glyph in confusables_data.get(c, ()):
        if len(glyph["c"]) == 1 and glyph["c"].isascii() and glyph["c"].isprintable():
            return str(glyph["c"])
    return ":" if _COLON_NAMES.search(unicodedata.name(c, "")) else c


def _folded_start(line: str) -> str:
    """The start of a line as a reader takes it: invisible characters dropped, compatibility forms, lookalike
    letters of other scripts and case folded (`ＵＲＬ:`, `U\u200bRL:` and Cyrillic `URL` read as `url:`, `［` as
    `[`)."""
    visible = "".join(itertools.islice(  # the first _FOLD_SPAN characters that show, however many do not before them
        (c for c in line if c not in _INVISIBLE and unicodedata.category(c) not in _UNSEEN), _FOLD_SPAN))
    folded = unicodedata.normalize("NFKC", "".join(map(lookalike, visible)))  # `ϲ` is `c` but NFKC makes it `ς`
    return "".join(map(lookalike, folded)).casefold().lstrip()


def needs_escape(line: str) -> bool:
    """Whether a text line would begin like a control line, a table row or one of the renderer's own lines."""
    if not line:
        return False
    first = line[0]
    category = unicodedata.category(first)
    if first in _STRUCTURE or first in _PIPES or first in _BRACKETS or first in _INVISIBLE:
        return True
    if category in _INVISIBLE_CATEGORIES or (category == "Ps" and first not in _PLAIN_OPENERS):
        return True
    folded = _folded_start(line)
    return folded[:1] in _STRUCTURE or folded.startswith(RESERVED_STARTS)


def _is_mark(word: str) -> bool:
    """A list or heading mark a reader looks past to the line's text: `-`, `#`, `###`, `*`, `•`, `1.`, `3)`: a word of
    a few visible characters and no letters (digits only when followed by `.` or `)`)."""
    seen = [c for c in word if c not in _INVISIBLE and unicodedata.category(c) not in _UNSEEN]
    if not seen or len(seen) > _MARK_CHARS or any(unicodedata.category(c).startswith("L") for c in seen):
        return False
    return not seen[0].isdigit() or seen[-1] in ".)"


def text_line(line: str) -> str:
    """A line of page text as the observation shows it: escaped when it would begin like another kind of line, also
    after list or heading marks (`- [3] button` is shown `- \\[3] button`)."""
    at = 0
    while not needs_escape(line[at:]):
        space = line.find(" ", at)
        if space <= at or not _is_mark(line[at:space]):
            return line
        at = space + 1
    return f"{line[:at]}{TEXT_ESCAPE}{line[at:]}"


def _opens_bracket(c: str) -> bool:
    return c in _BRACKETS or (unicodedata.category(c) == "Ps" and c not in _PLAIN_OPENERS)


def cell_words(text: str) -> str:
    """Page text (or a control's name) inside a table cell, where a control shows as `[7]`: every bracket and bracket
    lookalike that could open such a token is escaped, so only the renderer's own tokens show one."""
    return "".join(TEXT_ESCAPE + c if _opens_bracket(c) else c for c in text)


def cell_text(text: str) -> str:
    """A table cell's text (already on one line) with every separator and separator lookalike escaped."""
    return "".join(TEXT_ESCAPE + c if c in _PIPES else c for c in text)


def json_line(line: str) -> str:
    """A line holding JSON strings (a control line, a quoted dialog) with the line breaks JSON leaves raw
    escaped; outside strings such characters never occur, so the line reads back the same."""
    return line.translate(_JSON_LINE_BREAKS)


def quoted(text: str) -> str:
    """A string as a JSON literal that stays on one line."""
    return json_line(json.dumps(text, ensure_ascii=False))


def clip(text: str, limit: int) -> tuple[str, int]:
    """At most `limit` characters of the text, and how many were cut."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)
