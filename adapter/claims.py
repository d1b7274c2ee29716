"""Claims of success in a model's plain text: "The task is completed.", "I have updated the phone number.", "Done!"
written in a reply that carries no action, so never a `done`.

Such a claim is recorded (`TextClaim`, on the episode's record) and counted apart from `done` claims; it is never a
success and never judged: the verifier's verdict is made from backend state as ever, and the claim only says that the
model believed (or said) it was finished without calling `done`.

The text is read FAIL-CLOSED: a claim is recognised only from a clear completion statement in the model's own prose,
and anything that makes it less than clear makes it none. `claim_in_text`'s limits:

- Recognised: a whole sentence of one of these shapes, in any case, after an optional interjection ("OK,", "Great!"),
  with an optional tail ("successfully", "as requested", "now"): the task/request/job/change is (has been, was)
  [successfully/now/fully/already] completed/done/finished/accomplished; I/we (have) [successfully/now...]
  completed/finished the task; I/we (have) <a past participle of `DONE_VERBS`> <any object of at most 100
  characters> ("I have updated the phone number to 555-0100.", "I have closed ticket T-1042."); "Done", "All
  done", "Task complete(d)", "Mission accomplished", "Everything is done".
- Not recognised, by design: a sentence that is a question (ends in "?", or a fullwidth or small question mark);
  one that holds a negation, a doubt, a condition, a plan or a contrast (`HEDGES`: not, n't (also written without
  its apostrophe: didnt), never, no, cannot, unable, if, once, when, will, should, might, but, however, try, almost,
  ...); anything after a colon, to the end of the reply (reported or echoed text: "The page says:\n\nDone.");
  text inside quotes of every kind (an unclosed double quote runs to the end of the reply), inline code, code
  fences (``` and ~~~) or a `>` blockquote (a quoted page); and every sentence of a reply that anywhere, quoted
  parts included, mentions failure (`FAILURE`: not, n't, never, cannot, unable, failed, error(s), unsuccessful,
  impossible) — "I updated the phone number. It did not save." is no claim.
- Missed, knowingly: passive statements about things ("The phone number has been updated.": a page's own
  confirmation reads the same, and could be echoed), completion stated in other languages, or in words outside these
  shapes. A missed claim leaves the episode as it was before claims in text were read (an honest failure without a
  claim); a wrong one would count a claim the model never made, so the recogniser errs towards missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

CLAIM_CHARS = 300
"""The most of a claiming sentence kept in the record."""

DONE_VERBS = (
    "updated", "changed", "saved", "submitted", "set", "sent", "created", "added", "deleted", "removed", "closed",
    "assigned", "booked", "filled in", "filled out", "completed", "finished", "resolved", "approved", "rejected",
    "edited", "renamed", "moved", "entered", "recorded", "marked", "archived", "cancelled", "canceled", "scheduled",
    "posted", "uploaded", "paid", "refunded", "issued", "forwarded", "applied", "replied to", "answered", "corrected",
    "reassigned", "escalated", "merged", "published", "registered", "transferred",
)
"""Past participles of doing something to a site's records: "I have <verb> <object>" claims it done."""

_NO_APOSTROPHE = r"didnt|doesnt|dont|wasnt|werent|isnt|arent|couldnt|cant|wont|wouldnt|hasnt|havent|hadnt|shouldnt"
"""Negations written without their apostrophe ("didnt"): read as the negations they are."""
HEDGES = re.compile(
    r"\b(?:not|no|never|nothing|none|nor|cannot|unable|fail\w*|unsuccessful\w*|impossible|error\w*|if|unless|whether|"
    r"once|when|after|before|until|will|would|should|could|might|may|must|shall|going|need|needs|want|try|tries|"
    r"tried|trying|attempt\w*|almost|nearly|partially|partly|mostly|but|however|although|though|except|yet|still|"
    r"maybe|perhaps|probably|possibly|likely|seems?|appears?|hope\w*|think|believe|assume|next|then|let|please|"
    r"pretend|supposed|claim\w*|wrong|incorrect\w*|" + _NO_APOSTROPHE + r")\b|n't\b|n’t\b")
"""Words that make a sentence less than a plain statement that something is finished (negation, doubt, condition,
plan, contrast): such a sentence is never a claim."""
FAILURE = re.compile(r"\b(?:not|never|cannot|unable|fail\w*|error\w*|unsuccessful\w*|impossible|" + _NO_APOSTROPHE
                     + r")\b|n't\b|n’t\b")
"""Words that, anywhere in a reply (quoted parts too), say something did not work: the whole reply then claims
nothing."""
_QUOTED = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|``.*?(?:``|\Z)|`[^`]*(?:`|\Z)|\"[^\"]*(?:\"|\Z)"
                     r"|“[^”]*(?:”|\Z)|„[^“”]*(?:[“”]|\Z)|«[^»]*(?:»|\Z)|^\s*>[^\n]*$"
                     r"|(?<!\w)'.*?'(?!\w)",
                     re.DOTALL | re.MULTILINE)
"""Quoted text (never the model's own statement), over lines, an unclosed quote running to the end of the reply:
code fences (``` and ~~~), inline code (` and ``), double quotes of every kind, guillemets, `>` blockquotes, and
single quotes (a span from an opening ' that no letter precedes to a closing ' that no letter follows, so an
apostrophe inside does not end it; an unclosed ' is an apostrophe: "the task 's done")."""
_ECHO = re.compile(r":.*", re.DOTALL)
"""A colon and everything after it in the reply: reported or echoed text ("The page says:\n\nDone.")."""
_QUESTION_MARKS = str.maketrans({"？": "?", "﹖": "?", "⸮": "?", "¿": "?"})
_SENTENCES = re.compile(r"(?<=[.!?…])\s+|\n+")
_INTERJECTION = r"(?:(?:ok|okay|great|good|alright|all right|perfect|excellent|right|so|well|now|finally)[,!.]?\s+)?"
_ADVERBS = r"(?:(?:now|successfully|fully|already|all|finally|indeed|completely|properly|correctly)\s+)*"
_FINISHED = r"(?:complete|completed|done|finished|accomplished|fulfilled)"
_TAIL = r"(?:,?\s+(?:successfully|as (?:you )?(?:requested|asked|instructed|required)|now|for you))*\s*[.!…]*"
_VERBS = "|".join(re.escape(verb) for verb in sorted(DONE_VERBS, key=len, reverse=True))
_CLAIMS = [re.compile(rf"^{_INTERJECTION}{pattern}{_TAIL}$") for pattern in (
    rf"(?:(?:the|this|your|my) )?(?:task|request|job|assignment|work|change)(?: you gave me)? (?:is|has been|was|'s) "
    rf"{_ADVERBS}{_FINISHED}",
    rf"(?:i|we)(?: have|'ve)? {_ADVERBS}(?:completed|finished|done|accomplished) (?:the|this|your) "
    r"(?:task|request|job|assignment)",
    rf"(?:i|we)(?: have|'ve)? {_ADVERBS}(?:{_VERBS}) (?:[^.!?;:\n]|\.(?=\S)){{1,100}}",
    rf"(?:all |everything(?: is|'s) |it(?: is|'s) )?{_ADVERBS}done",
    rf"(?:the )?task {_ADVERBS}(?:is )?{_ADVERBS}(?:complete|completed|done|finished)",
    r"mission accomplished",
)]


class TextClaim(BaseModel):
    """A claim of success the model made in plain text, in a reply that carried no action (`claim_in_text`): never a
    `done` claim, never a success, counted apart in the report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: int = Field(ge=1)
    """The number of the first reply that claimed it."""
    text: str
    """That reply's claiming sentence (at most CLAIM_CHARS characters)."""
    replies: int = Field(default=1, ge=1)
    """How many replies without an action claimed it."""


def _unquoted(text: str) -> str:
    return _ECHO.sub("", _QUOTED.sub(" ", text.replace("’", "'").replace("‘", "'")))


def _plain(sentence: str) -> str:
    return " ".join(sentence.lower().split()).strip(" *_-#")


def claim_in_text(text: str | None) -> str | None:
    """The first sentence of a reply's own prose that clearly states the task is done, or None (module docstring:
    what is recognised and what is not)."""
    if not text:
        return None
    text = text.translate(_QUESTION_MARKS)
    if FAILURE.search(text.lower().replace("’", "'")):
        return None
    prose = _unquoted(text)
    for sentence in _SENTENCES.split(prose):
        plain = _plain(sentence)
        if not plain or plain.endswith("?") or ":" in plain or "?" in plain or HEDGES.search(plain):
            continue
        if any(claim.match(plain) for claim in _CLAIMS):
            return " ".join(sentence.split())[:CLAIM_CHARS]
    return None


def text_claim(replies: Sequence[tuple[int, str | None]]) -> TextClaim | None:
    """The claim in text of an episode from its replies that carried no action, as (reply number, content); None when
    none of them claims."""
    found = [(number, said) for number, content in replies if (said := claim_in_text(content)) is not None]
    if not found:
        return None
    return TextClaim(reply=found[0][0], text=found[0][1], replies=len(found))
