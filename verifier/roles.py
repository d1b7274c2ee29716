"""Who asked, as the instruction says, and a free text that gives the asking to someone else.

"Ingrid Larsen has written to the HR desk about Chen Kowalski's annual leave …" makes Ingrid Larsen the one who
asked and Chen Kowalski the one it is about. A note that says "Rejected *at the request of Chen Kowalski*" names a
person of the task in the asker's role who is not the asker: a careful reviewer refuses it, although every word of
it is accounted for. The instruction's askers are the names right before a verb of asking or writing ("has
written", "asks", "wants", "reports", "filed"); a text's asker slots are "at the request of X", "at X's request",
"as X asked", "requested by X", "X wanted this rejected" (someone wanting an outcome of the record) and the like
("X requested leave" is no such slot: the employee did ask for the leave). Where the instruction names no asker,
nothing is read.
"""

from __future__ import annotations

import re

_NAME = r"([A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2})"
_ASKING = (r"(?:has\s+written|had\s+written|wrote|writes|asks|asked|has\s+asked|wants|wanted|requests|requested|"
           r"has\s+requested|reports|reported|filed|has\s+filed|says|said)")
_INSTRUCTION_ASKER = re.compile(_NAME + r"\s+" + _ASKING + r"(?![\w'’-])")
_TEXT_ASKER = re.compile(
    r"(?:at\s+the\s+request\s+of|as\s+requested\s+by|requested\s+by|on\s+the\s+request\s+of|on\s+behalf\s+of|"
    r"at\s+the\s+instruction\s+of|as\s+instructed\s+by)\s+" + _NAME
    + r"|(?:at|on|per)\s+" + _NAME + r"['’]s\s+(?:request|instruction|instructions|wish|wishes)"
    + r"|as\s+" + _NAME + r"\s+(?:asked|requested|wanted|instructed|has\s+asked|had\s+asked)(?![\w'’-])"
    + r"|" + _NAME + r"\s+(?:wanted|wants|asked\s+for|asked|requested|demanded|would\s+like)\s+(?:this|it|that|them|"
      r"the\s+[a-z]+)\s+(?:to\s+be\s+)?[a-z]+ed(?![\w'’-])")


def askers(instruction: str) -> frozenset[str] | None:
    """The lower-case names the instruction makes the ones who asked (None when it names none)."""
    found = frozenset(m.group(1).lower() for m in _INSTRUCTION_ASKER.finditer(instruction))
    return found or None


def other_asker(text: str, start: int, end: int, named: frozenset[str], asking: frozenset[str]) -> str | None:
    """A person of the task (every word of the name among the instruction's words, `named`) put in the asker's
    role in text[start:end] who is not one of the instruction's askers, or None."""
    for match in _TEXT_ASKER.finditer(text, start, end):
        name = next(group for group in match.groups() if group is not None)
        words = name.lower().split()
        if all(w in named for w in words) and not any(set(words) <= set(a.split()) for a in asking):
            return name
    return None
