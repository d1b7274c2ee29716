"""What the task's instruction forbids, and a free text that says it was done anyway.

An instruction that says "Do not dispatch the delivery that an event opens" forbids an act (`dispatch`) on a thing
(`delivery`). A note that then says "EV-506, EV-507 and EV-508 processed and the delivery dispatched" asserts the
forbidden act: whether or not the site holds it, the note is false or reports a breach, and a careful reviewer
refuses it. The same prohibition says what is *meant* to stay undone: "I left the delivery alone" or "the delivery
is still pending" describe the instruction followed, not unfinished work (`leaves_alone`).

Only a prohibition of a named thing is read ("do not contact *the vendor*", "do not change *its subject or
text*"); one about anything else ("do not decide *any other* claim", "do not change *anything else*") is what the
checks of other records and `no_other` already judge. A sentence that says the customer does not own a device is no
prohibition: only an imperative (the sentence's first words, or after "and" or a semicolon) is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verifier.known_words import GRAMMAR

_IMPERATIVE = re.compile(r"(?:^|(?<=[.!?:;])\s*|,?\s+and\s+|,?\s+but\s+)(?:please\s+)?(?:do\s+not|don['’]t|never)\s+"
                         r"([a-z]+)\s+([^.;,:!?]*)", re.IGNORECASE)
_OBJECT_END = re.compile(r"\s+(?:that|which|who|whose|until|unless|if|by|through|with|without|except|from|in|on|at|"
                         r"for|before|after|when|while|because|to|as|what|how|where)\b", re.IGNORECASE)
_DETERMINERS = frozenset({"the", "a", "an", "its", "their", "his", "her", "your", "our", "my", "this", "that",
                          "these", "those", "each", "every", "all", "both", "or", "and", "any", "only", "it", "them",
                          "him", "one", "ones", "yet", "again", "now"})
"""Words of a prohibition's object that name no thing (a pronoun names none the text could be matched by)."""
_ABOUT_OTHERS = frozenset({"other", "others", "else", "anything", "nothing", "everything", "something", "any",
                           "another", "further", "more", "anyone", "anybody", "everyone", "someone", "nobody"})
"""In a prohibition's object, words that make it about other records ("any *other* claim"): not read here."""
_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_LEAVING = frozenset({"left", "leave", "leaves", "leaving", "alone", "untouched", "unchanged", "pending", "kept",
                      "keep", "remains", "remain", "remained", "stays", "stay", "stayed", "asked", "instructed",
                      "told", "required", "instruction", "instructions", "still", "not", "never", "no", "nothing",
                      "didn't", "wasn't", "isn't", "hasn't", "haven't"})
"""What a text may say of a thing the instruction protects: that it was left, kept, not done."""
_SAYING_DONE = frozenset({"done", "get", "got", "gets", "getting", "out", "off", "over", "back", "up", "down"})
"""Grammar words that, said of a thing, can say something was done to it ("sent *out*", "*got* it *off*")."""


@dataclass(frozen=True)
class Prohibition:
    """An act the instruction forbids on named things: its verb and the nouns of its object."""

    verb: str
    things: frozenset[str]
    described: frozenset[str] = frozenset()
    """The words that describe the things further ("the delivery *that an event opens*")."""
    conditional: bool = False
    """An act the instruction allows only on a condition ("Escalate it only if the rules require it", "if it is
    not, refund nothing now") and the episode did not do (`verifier.facts.KnownIds.of`): a text may not say it was
    done, of anything (it has no things), in its verb, in other words (`_DONE_IN_OTHER_WORDS`) or as the record it
    makes said done ("the refund … went through")."""
    makes: str = ""
    """For a conditional act: the noun of the records it makes (its table's: `refund`, `escalation`)."""

    def __str__(self) -> str:
        if self.conditional:
            return self.verb
        return f"{self.verb} the {' or '.join(sorted(self.things))}"


def prohibitions(instruction: str) -> tuple[Prohibition, ...]:
    """The instruction's prohibitions of named things ("Do not dispatch the delivery that an event opens" ->
    dispatch / delivery)."""
    found = []
    for match in _IMPERATIVE.finditer(instruction):
        verb, rest = match.group(1).lower(), match.group(2)
        end = _OBJECT_END.search(rest)
        words = [re.sub(r"['’]s$", "", w.lower()) for w in _WORD.findall(rest[: end.start() if end else len(rest)])]
        if not words or any(w in _ABOUT_OTHERS for w in words):
            continue
        things = frozenset(w for w in words if w not in _DETERMINERS)
        if things:
            found.append(Prohibition(verb, things, frozenset(w.lower() for w in _WORD.findall(rest))))
    return tuple(found)


_CONDITIONAL = re.compile(r"(?:^|(?<=[.!?:;,])\s*|\s+and\s+)([a-z]+)\s+(?:(?:it|them|this|that|one)\s+)?only\s+"
                          r"(?:if|when|where)\b"
                          r"|(?:^|(?<=[.!?:;,])\s*)([a-z]+)\s+nothing(?!\s+(?:else|more|other)\b)", re.IGNORECASE)
"""An act the instruction makes conditional: "*Escalate* it only if …", "If it is not, *refund* nothing now" (not
"change nothing else", which is about other records)."""


def conditional_acts(instruction: str) -> tuple[str, ...]:
    """The verbs of the acts the instruction allows only on a condition ("Escalate it only if the escalation rules
    require it" -> escalate; "If it is denied, refund nothing" -> refund)."""
    return tuple(dict.fromkeys((m.group(1) or m.group(2)).lower() for m in _CONDITIONAL.finditer(instruction)))


def makes(verb: str, table_word: str) -> bool:
    """Whether an act makes records of a table its verb shares a stem with ("escalate" an escalation, "refund" a
    refund, "approve" an approval; not "issue", which makes none by its name)."""
    verb, table_word = verb.lower(), table_word.lower()
    pairs = enumerate(zip(verb, table_word, strict=False))
    shared = next((k for k, (a, b) in pairs if a != b), min(len(verb), len(table_word)))
    return shared >= max(5, len(verb) - 2)


_DONE_IN_OTHER_WORDS = {
    "refund": r"repaid|reimbursed|credited|paid\s+(?:[\w'’.,-]+\s+){0,3}?back|(?:got|gets|get|received|put|sent|given|"
              r"gave|returned|handed)\s+(?:[\w'’.,-]+\s+){0,4}?back",
    "escalate": r"(?:passed|handed|sent|forwarded|transferred|referred|routed|moved|assigned|raised|put|flagged)\s+"
                r"(?:[\w'’-]+\s+){0,3}?(?:to|with|in|into)\s+(?:the\s+|a\s+|our\s+)?(?:billing|human|humans|"
                r"[\w-]+\s+(?:queue|team|desk|disputes|security)|queue|specialists?|supervisors?|managers?|"
                r"second[\s-]line|tier\s+2|level\s+2)",
}
"""A conditional act said done in other words: money given back is a refund ("paid back", "got … back"), a ticket
handed to a queue, team or person is an escalation ("passed to billing")."""
_RECORD_DONE = (r"(?:\s+(?:of|for|under|on|to|from)\s+[\w'’.,-]+){0,2}\s+(?:(?:has|have|had)\s+)?"
                r"(?:(?:been|was|were|is|"
                r"got)\s+)?(?:went\s+through|gone\s+through|goes\s+through|made|issued|processed|raised|opened|"
                r"created|filed|completed|done|paid|sent|granted|applied|booked|logged)(?![\w'’-])")
"""After the noun of the record a conditional act makes: the record said done ("the refund under RA-25 *went
through*", "an escalation *was made*"); not "the refund request was made", whose noun is another."""


def conditional_done(clause: str, rule: Prohibition) -> str | None:
    """The words of a clause that say a conditional act was done: its verb in a done form ("escalated"), in other
    words ("paid back", "passed to billing") or the record it makes said done ("the refund went through")."""
    verb = next((w for w in words_of(clause) if w.lower().endswith("ed") and rule.verb in forms(w)), None)
    if verb is not None:
        return verb
    other = _DONE_IN_OTHER_WORDS.get(rule.verb)
    found = re.search(rf"(?<![\w'’-])(?:{other})(?![\w'’-])", clause, re.IGNORECASE) if other else None
    if found is None and rule.makes:
        found = re.search(rf"(?<![\w'’-]){re.escape(rule.makes)}s?{_RECORD_DONE}", clause, re.IGNORECASE)
    return found.group(0) if found else None


def forms(word: str) -> frozenset[str]:
    """A word and what it may be inflected from ("deliveries" -> delivery, "dispatched" -> dispatch)."""
    word = word.lower()
    found = {word}
    for suffix, instead in (("ies", "y"), ("ied", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", ""),
                            ("ing", ""), ("ing", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            found.add(word[: -len(suffix)] + instead)
    return frozenset(found)


def _names(words: Sequence[str], wanted: frozenset[str]) -> str | None:
    return next((w for w in words if forms(w) & wanted), None)


def done_anyway(clause: str, rule: Prohibition) -> str | None:
    """The words of a clause that say the forbidden act was done (its verb in any form and one of its things; a
    conditional act: `conditional_done`), or None."""
    if rule.conditional:
        return conditional_done(clause, rule)
    clause_words = words_of(clause)
    verb = _names(clause_words, frozenset({rule.verb}))
    thing = _names(clause_words, frozenset(t for w in rule.things for t in forms(w)))
    return f"{verb} … {thing}" if verb and thing else None


def words_of(text: str) -> list[str]:
    return _WORD.findall(text)


def unplaced(clause_words: Sequence[str], rules: Sequence[Prohibition]) -> list[str]:
    """The words of a clause that names only protected things which say something of them other than that they
    were left, kept, not done or not dispatched ("the delivery has been *sent* out", "it *went* out"): the
    instruction's verb (denied or in its negative form, "undispatched"), the things and their description, and the
    words of leaving are all a text may say there."""
    allowed = {f for rule in rules for word in (rule.verb, *rule.things, *rule.described) for f in forms(word)}
    allowed |= {"un" + f for rule in rules for f in forms(rule.verb)}
    found = []
    for word in clause_words:
        low = word.lower().replace("’", "'")
        if (any(c.isdigit() for c in low) or low in _LEAVING or forms(low) & allowed  # an id names the thing
                or (low in GRAMMAR and low not in _SAYING_DONE)):
            continue
        found.append(word)
    return found
