"""Whether a free text is settled: the reader can account for everything it says about what its check is about.

A text check passes only when the reader establishes what the check requires *and* finds nothing it cannot
account for (fail-closed). `verifier.assertions` reads the text into clauses and marks every word or sign that
makes a statement something other than the writer's plain assertion; here a clause **bears on the check** when it
holds one of the check's facts (any of its `states`, `never_states` or `may_state` values, words included), names a
record (an id), or refers to part of a whole ("the rest", "the remaining ones", "another"); and a marker in a clause
that bears on the check leaves the text **unsettled**:

- in both readings: a concession (`although`, `even though`, `despite`: the sentence grants what it then takes
  back), a double negation (a negation or reversal governing another: "declined to block", "did not fail to"), a
  degree or part ("more than 30.50 USD", "two of the three", "nearly complete", "bar EV-508"), a retraction, a
  required name in the possessive ("Fatima Haddad's manager");
- in an outcome reading also: futurity, modality or a pending state of any wording (`will`, `to follow`, `later`,
  `still`, `is processing`), a condition, a question, a reported failure or reversal (`declined`, `wrong`), a
  quotation that holds a fact, a report of someone else's words (`you wrote`, `the customer says`), a negation with
  a required fact after it, a further instance of what it says (`another`, `a second`, `again`: a notice of one
  refund "and another refund of 59.00 EUR" says two were made).

A negation whose clause holds no required fact after it ("issued, not delayed", "nothing left") agrees with the
check and is accounted for; so is any clause that bears on nothing the check is about ("it should reach your card
within 3 days", "kind regards"). In a `circumstance` reading (a reason describing a situation) reported speech,
modality and single negations are what is meant. A text the reader cannot read as English (letters of another
script, or fewer than `_ENGLISH_SHARE` of its words in an English lexicon) is unsettled as a whole.

Markers are a list, and no list is complete. So where the text says what happened (the check states a fact or must
not deny one) every word of a clause that bears on the check must also be one the reader can account for
(`unaccounted`: the check's facts, ids, numbers, names, markers, `verifier.known_words`, the tenant's record labels
and the instruction); for this rule a clause also bears when it holds a word sharing a stem with a fact, is set
against one that bears ("…, but …") or refers back to one ("…; it came straight back"). Any other word leaves the
text unsettled, and the verdict names it.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from verifier.assertions import MARKER_WORDS, Clause, Marker, Reading, scope_end
from verifier.known_words import known_word
from verifier.prohibitions import Prohibition, done_anyway, forms, words_of
from verifier.roles import other_asker

_PARTITIVE = re.compile(r"(?<![\w'’-])(?:the\s+rest|the\s+remainder|remainder|remaining|the\s+others|another|"
                        r"one\s+more|two\s+more|the\s+last\s+ones?|leftovers?|the\s+balance\s+of)(?![\w'’-])",
                        re.IGNORECASE)
"""Words that refer to part of a whole the text is about ("the rest later today")."""
_SENTENCE_KINDS = frozenset({"condition", "question", "concession", "failure", "retraction"})
_CONTRASTS = frozenset({"but", "however", "yet", "though", "although", "whereas", "while"})
"""Words that open a clause set against the one before it: what it takes back is the sentence's."""
_POLITE = re.compile(r"^\W*(?:(?:hi|hello|hey|dear|good\s+(?:morning|afternoon|evening))\b[^,.!?:]{0,40}[,!:]\s*)?"
                     r"(?:(?:could|would|can|will|may)\s+(?:you|i|we)\b|(?:please|kindly)\b)", re.IGNORECASE)
"""A question that is a polite request ("Could you attach the receipt?"), which asserts nothing to take back."""
"""Markers whose scope is their sentence: they bear on the check when the sentence does."""
_GOVERNING_GAP = re.compile(r"^(?:\s+|\s*(?:to|be|been|have|has|had|being|the|your|its|this|that|a|an)\s+){1,4}$",
                            re.IGNORECASE)
"""What may stand between a negation and the reversal it governs ("declined *to* block", "not rejected")."""
_ADJUNCT = re.compile(
    r"(?<![\w'’-])(?:after|before|since|until|during|while|when|in|because|due\s+to)(?![\w'’-])", re.IGNORECASE)
_TEXT_RETRACTIONS = frozenset({"correction", "scratch that", "strike that", "disregard", "ignore the above",
                               "ignore this", "ignore this message",
                               "ignore my previous", "actually", "on second thought", "i take that back", "retract",
                               "retracted"})
"""Retractions whose scope is the whole text: "Correction: it has not gone out yet" takes back what came before."""
_BARE_DENIAL = re.compile(r"(?:^|(?<=[.!?…]))\s*(?:(?:well|ok|okay|so|er|um|or|and|but)\s*,?\s*)?"
                          r"(?:not|nope|not really|not yet|not quite|almost|nearly|sort of|kind of|more or less|partly|"
                          r"in part|in theory|on paper|just about|mostly|hardly)\s*[.!…]*\s*(?=$|\n)",
                          re.IGNORECASE | re.MULTILINE)
"""A sentence that is nothing but a denial or a degree ("…issued... NOT.", "Well, almost."): it takes back the
sentence before it."""
_STRANGE_IN_CLAUSE = 2
_CLAUSE_SHARE = 0.85
"""A preposition that starts an adjunct (when, where, why) rather than the object of what precedes it."""
_ENGLISH_SHARE = 0.7
_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:[-'’][^\W\d_]+)*")
_SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("d", ""), ("es", ""),
             ("s", ""), ("ly", ""), ("'s", ""), ("’s", ""), ("er", ""), ("est", ""))
_COMMON = frozenset({"email", "emailed", "emails", "e-mail", "e-mailed", "login", "logins", "logged", "ok", "okay",
                     "hi", "thanks", "regards", "online", "cheers", "chargeback", "chargebacks", "checkpoint",
                     "checkpoints", "todo", "via", "re", "fyi", "asap", "eur", "usd", "gbp", "chf", "iban", "euro",
                     "euros", "cent", "cents", "pence", "dollars", "pounds", "francs", "kronor", "zloty"})
"""Words of this benchmark's sites that an older dictionary lacks."""


@lru_cache(maxsize=1)
def _lexicon() -> frozenset[str]:
    from english_words import get_english_words_set

    return frozenset(get_english_words_set(["web2", "gcide"], lower=True)) | _COMMON


def _english_word(word: str) -> bool:
    lexicon = _lexicon()
    word = word.lower()
    if word in lexicon or all(part in lexicon for part in re.split(r"[-'’]", word) if part):
        return True
    if any(word.endswith(suffix) and word[: -len(suffix)] + instead in lexicon for suffix, instead in _SUFFIXES):
        return True
    prefix = re.match(r"(?:un|non|re|pre|mis|dis|over|under|out)(?=[a-z]{3,})", word)
    return prefix is not None and _english_word(word[prefix.end():])


def not_english(text: str, exempt: Sequence[tuple[int, int]] = ()) -> str | None:
    """Why the text cannot be read as English (None when it can): letters of another script, or too few of its
    words in an English lexicon (the check's own facts and capitalised names inside a sentence aside)."""
    for char in text:
        if char.isalpha() and "LATIN" not in unicodedata.name(char, ""):
            return f"written in another script ({char!r})"
    words = [m for m in _WORD.finditer(text) if len(m.group(0)) > 1
             and not any(a <= m.start() < b for a, b in exempt)
             and not (m.group(0)[0].isupper() and m.start() > 0 and not re.search(r"(?:^|[.!?:\n]\s*)$",
                                                                                   text[: m.start()]))]
    strange = [m.group(0) for m in words if not _english_word(m.group(0))]
    if len(strange) >= 2 and len(words) - len(strange) < _ENGLISH_SHARE * len(words):
        return (f"not read as English ({len(words) - len(strange)} of {len(words)} words known; not: "
                f"{', '.join(strange[:4])})")
    return None


@dataclass(frozen=True)
class Unsettled:
    """One thing the reader cannot account for: what (a marker, or the text's language) and in which words."""

    what: str
    words: str

    def __str__(self) -> str:
        return f"unsettled: {self.what}" + (f" in {self.words!r}" if self.words else "")


def _strange_words(text: str, clause: Clause, exempt: Sequence[tuple[int, int]]) -> str | None:
    """Words of a clause the lexicon does not know, when there are enough of them to be another language inside an
    English text ("has noch nicht been issued")."""
    words = [m.group(0) for m in _WORD.finditer(text, clause.start, clause.end) if len(m.group(0)) > 1
             and not any(a <= m.start() < b for a, b in exempt) and not m.group(0)[0].isupper()]
    strange = [w for w in words if not _english_word(w)]
    if len(strange) >= _STRANGE_IN_CLAUSE and len(words) - len(strange) < _CLAUSE_SHARE * len(words):
        return f"words not read as English ({', '.join(strange[:4])})"
    return None


_CONTRACTION = re.compile(r"['’](?:ve|re|ll|d|s|m)$|n['’]t$", re.IGNORECASE)
_ANAPHOR = re.compile(r"(?<![\w'’-])(?:it|its|they|them|their|this|that|these|those|which)(?![\w'’-])", re.IGNORECASE)
"""Words that refer back: a clause holding one says something of what an earlier clause named ("…issued, and our
bank has since clawed *it* back")."""
_REPEATS = frozenset({"two times", "2 times", "three times", "3 times", "several times", "on top", "on top of that",
                      "the same amount", "double", "doubled"})
"""Further instances that need no fact beside them: in a clause that bears on the check they repeat what it says
("issued … and then the same amount on top")."""
_HOLDING_WORDS = frozenset({"progressive", "quoted"})
"""Markers whose span holds words of any kind ("was *bumming*", a quotation): each of those words is read too."""
_READER_ACTS = re.compile(r"(?<![\w'’-])(?:you|you['’]ve|you\s+have|you\s+had)\s+"
                          r"(?:\w+ly\s+|just\s+|already\s+)?$", re.IGNORECASE)
"""Right before a required fact, the reader as its subject in the active voice ("*You declined* the refund"): what
the reader did, not what was done for them ("you have been refunded" is passive, and no subject of the fact)."""
_STEM_SUFFIXES = ("ments", "ment", "ings", "ing", "ions", "ion", "ed", "es", "s", "d", "e")


def _bare(word: str) -> str:
    """The word in lower case without a contraction or possessive ("We've" -> "we", "Larsen's" -> "larsen")."""
    return _CONTRACTION.sub("", word.lower().replace("’", "'"))


def _accounted(word: str, fact_words: frozenset[str]) -> bool:
    """Whether the reader knows the role of a word (any letter case; a plural or past form, or a contraction of a
    known one, too; a compound when it knows each part: "short-*staffed*" but not "short-*tempered*")."""
    word = _bare(word)
    if "-" in word.strip("-") and word not in fact_words and not known_word(word):  # a compound: "short-staffed"
        return all(_accounted(part, fact_words) for part in word.split("-") if part)
    forms = {word, *(word[: -len(suffix)] + instead for suffix, instead in _SUFFIXES if word.endswith(suffix))}
    if any(form in fact_words or form in MARKER_WORDS or known_word(form) for form in forms):
        return True
    negative = re.match(r"(?:un|non)-?(?=[a-z]{4,})", word)  # "undispatched": a known word, denied
    return negative is not None and _accounted(word[negative.end():], fact_words)


def stem(word: str) -> str:
    """A word without its inflection or derivation ("attachment", "attached" -> "attach"), for relatedness only."""
    word = word.lower()
    for suffix in _STEM_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def related(text: str, fact_words: frozenset[str]) -> list[tuple[int, int]]:
    """The spans of words that share a stem with a word of the check's facts ("the *attachment*" beside the fact
    "attached"; "did not *recognise*" beside "unrecognised"): such a word is about what the check is about."""
    stems = _fact_stems(fact_words)
    return [(m.start(), m.end()) for m in _WORD.finditer(text) if len(m.group(0)) >= 4 and stem(m.group(0)) in stems]


@lru_cache(maxsize=256)
def _fact_stems(fact_words: frozenset[str]) -> frozenset[str]:
    """The stems of a check's fact words, with and without a negating prefix (a check's facts are read many times)."""
    stems = {stem(re.sub(r"^(?:un|non)-?(?=[a-z]{4,})", "", w)) for w in fact_words if len(w) >= 4}  # "unrecognised"
    stems |= {stem(w) for w in fact_words if len(w) >= 4}                                               # "recognise"
    return frozenset(stems)


def unaccounted(text: str, clause: Clause, exempt: Sequence[tuple[int, int]], fact_words: frozenset[str],
                names: frozenset[str] | None = None, labels: frozenset[str] = frozenset()) -> list[str]:
    """The words of a clause the reader cannot account for: not a fact of the check, a record id, a number, a name
    (a capitalised word inside a sentence, when it is one of `names`, the instruction's words, or no names are
    given), a marker or inside one's span, a word a negation takes back ("*not a
    delivery problem*": what is denied need not be understood, only that it is denied), or a word of
    `verifier.known_words` or of the tenant's record labels."""
    negated = [(m.start, scope_end(text, m, clause.end)) for m in clause.markers if m.kind == "negation"
               and clause.start <= m.start < clause.end]
    covered = [*exempt, *((m.start, m.end) for m in clause.markers if m.kind not in _HOLDING_WORDS), *negated]
    found = []
    for match in _WORD.finditer(text, clause.start, clause.end):
        word = match.group(0)
        after_digit = text[match.start() - 1:match.start()].isdigit()  # a suffix or unit: "2nd", "3x", "5kg"
        if any(a <= match.start() and match.end() <= b for a, b in covered) or len(word) < 2 or after_digit:
            continue
        if word[0].isupper() and re.search(r"(?:^|[.!?:;\n]\s*|[\"“(]\s*)$", text[: match.start()]) is None:
            if names is None or _bare(word) in names or _accounted(word, fact_words):
                continue  # a name inside a sentence: one the task names, or a word the reader knows capitalised
            found.append(word)
            continue
        if not _accounted(word, fact_words | labels | (names or frozenset())):
            found.append(word)
    return found


def _bearing_clauses(text: str, found: Sequence[Clause], about: Sequence[tuple[int, int]]) -> list[Clause]:
    """The clauses that bear on the check: those holding something it is about, a clause set against one that
    does ("…, *but* the bank statement shows a single charge"), and a clause that refers back to one in its
    sentence or the one before ("…; it came straight back")."""
    bearing: list[Clause] = []
    order = {sentence: k for k, sentence in enumerate(dict.fromkeys(clause.sentence for clause in found))}
    for clause in found:
        if (_bears(about, *clause.sentence)
                or (bearing and order[bearing[-1].sentence] >= order[clause.sentence] - 1
                    and _ANAPHOR.search(text, clause.start, clause.end))):
            bearing.append(clause)
    return bearing


_PLACES = (("first", "1st", "earliest", "oldest", "original", "initial"),
           ("last", "latest", "newest", "most recent", "final"),
           ("previous", "prior", "earlier", "preceding", "former"),
           ("second", "2nd"), ("third", "3rd"), ("next", "following", "subsequent"), ("other",))
"""Words that pick a record by its place in a series, with the words that pick the same place."""
_AFTER_A_NOUN = frozenset({"is", "was", "are", "were", "has", "had", "have", "said", "says", "asked", "asks", "wrote",
                           "writes", "went", "came", "got", "of", "for", "to", "from", "by", "on", "in", "at", "with",
                           "and", "or", "but", "which", "that", "who", "as", "about", "you", "we", "he", "she",
                           "they", "it", "so", "then", "also", "still", "now", "again", "too", "will", "would",
                           "can", "could", "should", "may", "might", "must"})
"""Words that may follow the head of a noun phrase (a verb, a preposition, a conjunction): the word before them is
the head ("your first *invoice* was sent")."""
_PLACE = re.compile(r"(?<![\w'’-])(?:the|your|her|his|their|its|our|my|this|that|a|[A-Za-z]+['’]s|per|in|from|on|"
                    r"by|at|under|with)\s+("
                    + "|".join(w.replace(" ", r"\s+") for group in _PLACES for w in group)
                    + r"|\d+(?:st|nd|rd|th))\s+(?!(?:of|time|times|thing|things|and|or|to|by|in|on|at|for|with|from|as|"
                      r"than|is|was|are|were|be|been|week|weeks|day|days|month|year)(?![\w'’-]))([a-z][a-z-]*)",
                    re.IGNORECASE)
_SUPERSEDED = re.compile(r"(?<![\w'’-])(?:replaces|replaced|supersedes|superseded|overrides|overrode|overridden|"
                         r"takes\s+precedence\s+over|took\s+precedence\s+over|wins\s+over)\s+$", re.IGNORECASE)
"""Right before a place, a verb that names the record there as replaced ("her newest message *replaces* her earlier
one"): a mention of a superseded record, not another record acted on."""
_SHIFTED = re.compile(r"(?<![\w'’-])(?:[Bb]efore|[Aa]fter|[Pp]rior\s+to|[Pp]receding|[Pp]revious\s+to|other\s+than|"
                      r"instead\s+of)\s+(?:[A-Z][a-z]+\s+)?$")
"""Right before a place, a relation that picks the record beside it ("the message *before* Ingrid Larsen's latest
one"), not the one it names."""
_OWNER = re.compile(r"(?:(?<=[Ii]t)['’]s|(?<=[Tt]hat)['’]s|(?<![\w'’-])(?:is|was|are|were|turned\s+out\s+to\s+be|"
                    r"belongs\s+to|belonged\s+to))\s+(?:(?:in\s+fact|actually|just|simply|really|only|all|clearly)\s+)?"
                    r"(?:hers|his|theirs|ours|mine|yours|her|him|them|their|our|my|your|us|we|me|"
                    r"the\s+customer(?:['’]s)?|[A-Z][a-z]+['’]s)(?![\w'’-])"
                    r"|(?<![\w'’-])(?:her|his|their|our|my|the\s+customer['’]s|[A-Z][a-z]+['’]s)\s+own(?![\w'’-])"
                    r"|(?<![\w'’-])(?:her|his|their|our|my|the\s+customer['’]s|(?-i:[A-Z][a-z]+)['’]s)\s+"
                    r"(?:[a-z]+\s+){0,2}(?:phones?|devices?|laptops?|tablets?|computers?|mobile|pc)(?![\w'’-])",
                    re.IGNORECASE)
"""In a reason describing a situation, a clause that says whose the thing is ("it is *her* new phone", "the device
is *hers*", "it was *our* own support team", "the customer's *second* phone"): it explains the situation away (an
unknown device, someone else)."""
_VERBAL_NEGATION = re.compile(r"(?<![\w'’-])(?:did|does|do|was|were|is|are|has|have|had|could|would)\s+not\b"
                              r"|(?:didn|doesn|don|wasn|weren|isn|aren|hasn|haven|hadn|couldn|wouldn)['’]t\b",
                              re.IGNORECASE)
"""A negated verb ("did *not* go through", "wasn't run"): in a note that must not deny completion, an event of the
batch denied in words the check does not forbid is one the reader cannot place."""
_APPOSED_AFTER = re.compile(r"\s*(?:,|\(|—|–|\s-\s)")
"""Right after a record's id, what opens words said of it: an apposition, a parenthesis, a dash."""
_TOWARD_THE_WRITER = re.compile(r"(?<![\w'’-])(?:to|into|in|for)\s+our\s+(?:own\s+)?(?:account|accounts|bank|"
                                r"books|balance|company|business|shop|store|till|favou?r)(?![\w'’-])"
                                r"|(?<![\w'’-])from\s+your\s+[a-z]+\s+(?:to|into)\s+(?:us|our)(?![\w'’-])",
                                re.IGNORECASE)
"""Money that moves toward the writer ("a refund … from your card *to our account*"): the opposite of a refund."""


_PAYING = r"(?:paid|paid\s+out|repaid|overpaid|refunded|credited|reimbursed|transferred|wired|compensated)"
_FROM_THE_WRITER = re.compile(
    r"(?<![\w'’-])(?:we|i|our\s+(?:shop|store|team|company|side|bank))\s+(?:(?:have|has|had|already|then|also|"
    r"accidentally|mistakenly|wrongly|just)\s+){0,3}(?:" + _PAYING + r"|(?:sent|gave|given|returned|transferred)\s+"
    r"(?:[\w'’]+\s+){0,3}(?:money|amount|amounts|funds|sum|payment|payments|payout|payouts))(?![\w'’-])"
    r"|(?<![\w'’-])(?:the\s+customer|the\s+employee|you|they|he|she)\s+(?:was|were|has\s+been|have\s+been|got)\s+"
    r"(?:(?:already|also|then|accidentally|mistakenly|wrongly)\s+){0,2}" + _PAYING + r"(?![\w'’-])", re.IGNORECASE)
"""In a circumstance, money the writer's side paid out ("we paid the customer twice", "you were refunded"): the
opposite of a charge, or a reason that explains the situation away."""


def _place_group(word: str) -> str:
    word = re.sub(r"\s+", " ", word.lower())
    found = next((group[0] for group in _PLACES if word in group), None)
    return found or word


def _places(text: str, clause: Clause, allowed: frozenset[str], records: frozenset[str],
            named: Sequence[tuple[int, int]] = ()) -> tuple[str | None, list[tuple[int, int]]]:
    """A word that picks a record by its place ("your *first* invoice", "her *earlier* message") other than every
    place the task's instruction and facts pick (its "last invoice", "the latest message"): it names another record.
    Only a place after a determiner and right before the head of a noun the task names (`records`: its kinds of
    record and the instruction's words) picks a record: "the first *batch action* failed", "the first *Process
    selected*", "was first sent" pick none. A place the reader reads as one of the task's records (`named`: "your
    *earlier* claim" is X-5005, `verifier.facts.ordinal_ids`) is checked as that record's id, not here. Returns the
    first such other place, and the spans of the places that pick the instruction's record (accounted for: "per
    *last* message from Ingrid Larsen")."""
    told = {_place_group(w) for w in allowed}
    nouns = frozenset(f for word in records for f in forms(word))
    right: list[tuple[int, int]] = []
    for match in _PLACE.finditer(text, clause.start, clause.end):
        noun = match.group(2)
        after = re.match(r"\s+([A-Za-z][\w-]*)", text[match.end():clause.end])
        head = after is None or after.group(1).lower() in _AFTER_A_NOUN or after.group(1).lower().endswith("ed")
        one = noun.lower() in ("one", "ones")  # "your last *one*": the record the clause names
        if noun[0].isupper() or not (one or forms(_bare(noun)) & nouns) or not head:
            continue
        if any(a <= match.start(1) < b for a, b in named) or _SUPERSEDED.search(text, clause.start, match.start()):
            right.append(match.span(1))  # a record of the task, or one named as replaced ("replaces her earlier one")
            continue
        shifted = _SHIFTED.search(text, max(clause.start, match.start() - 24), match.start())
        if _place_group(match.group(1)) not in told or shifted is not None:  # "the invoice *before* your last one"
            return (f"{shifted.group(0).strip()} … {match.group(1)}" if shifted else match.group(1)), right
        right.append(match.span(1))
    return None, right


def _forbidden_done(text: str, found: Sequence[Clause], prohibited: Sequence[Prohibition]) -> list[Unsettled]:
    """A clause that asserts what the instruction forbids ("… and the delivery dispatched"), neither denied nor
    taken back."""
    reasons = []
    for clause in found:
        taken_back = clause.whole_clause_taken_back is not None or any(
            m.kind in ("condition", "question") or (m.kind in ("negation", "modality", "hedge")
                                                    and clause.start <= m.start < clause.end)
            for m in clause.markers)
        for rule in () if taken_back else prohibited:
            if done_anyway(text[clause.start:clause.end], rule) is not None:
                what = ("what the instruction allows only on a condition and this episode did not do"
                        if rule.conditional else "what the instruction forbids")
                reasons.append(Unsettled(f"says done {what} ({rule})",
                                         text[clause.start:clause.end].strip()))
    return reasons


def _toward_the_writer(text: str, found: Sequence[Clause], about: Sequence[tuple[int, int]]) -> list[Unsettled]:
    """Clauses that bear on the check and move money toward the writer ("… from your card to our account")."""
    return [Unsettled(f"money toward the writer ({toward.group(0)!r})", text[clause.start:clause.end].strip())
            for clause in found if _bears(about, clause.start, clause.end)
            and (toward := _TOWARD_THE_WRITER.search(text, clause.start, clause.end)) is not None]


def _from_the_writer(text: str, found: Sequence[Clause], about: Sequence[tuple[int, int]]) -> list[Unsettled]:
    """Clauses whose sentence bears on the check and that say the writer's side paid the other (a circumstance)."""
    return [Unsettled(f"money from the writer's side ({paid.group(0)!r})", text[clause.start:clause.end].strip())
            for clause in found if _bears(about, *clause.sentence)
            and (paid := _FROM_THE_WRITER.search(text, clause.start, clause.end)) is not None
            and not any(m.kind == "negation" and clause.start <= m.start < paid.end() for m in clause.markers)]


def _relative_reversals(text: str, found: Sequence[Clause], bearing: Sequence[tuple[int, int]]) -> list[Unsettled]:
    """A reversal or failure, not denied, in a `which` or `who` clause right after something the check names, or in
    an apposition or a parenthesis right after it ("Duplicate of X-5005, which we also rejected", "X-5005, the claim
    we declined", "X-5005 (also rejected)"): said of that record."""
    reasons = []
    for previous, clause in itertools.pairwise([None, *found]):
        own = [m for m in clause.markers if clause.start <= m.start < clause.end] if clause else []
        reversal = next((m for m in own if m.kind in ("reversal", "failure")), None)
        if clause is None or reversal is None or any(m.kind == "negation" and m.start < reversal.start for m in own):
            continue
        if previous is not None and clause.opened_by in ("which", "who") and clause.sentence == previous.sentence:
            named = any(not text[b:previous.end].strip(" ,") for _, b in bearing)  # "X-5005, which we rejected"
        else:  # "X-5005, the claim we declined", "X-5005 (also rejected)", "X-5005, that we rejected as well"
            named = any(clause.start <= a and b <= reversal.start and _APPOSED_AFTER.match(text, b) for a, b in bearing)
        if named:
            reasons.append(Unsettled(f"a reversal of the record it names ({reversal.words!r})",
                                     text[(previous or clause).start:clause.end].strip()))
    return reasons


def _owners(text: str, found: Sequence[Clause], about: Sequence[tuple[int, int]]) -> list[Unsettled]:
    """Clauses that say whose the thing is ("it is her new phone", "the customer's own phone logged in"), not
    denied, where their sentence or one beside it bears on the check."""
    reasons = []
    sentences = list(dict.fromkeys(clause.sentence for clause in found))
    order = {sentence: k for k, sentence in enumerate(sentences)}
    for clause in found if about else ():
        here = order[clause.sentence]
        owner = _OWNER.search(text, clause.start, clause.end)
        if owner is None or not any(_bears(about, *sentence) for sentence in sentences[max(here - 1, 0):here + 2]):
            continue
        if not any(m.kind == "negation" and clause.start <= m.start < owner.end() for m in clause.markers):
            reasons.append(Unsettled(f"says whose it is, which explains the circumstance away ({owner.group(0)!r})",
                                     text[clause.start:clause.end].strip()))
    return reasons


def _double_negations(clause: Clause, text: str) -> list[Marker]:
    """A negation or reversal of the clause that governs the next one ("declined to block")."""
    own = sorted((m for m in clause.markers if m.kind in ("negation", "reversal") and clause.start <= m.start
                  < clause.end), key=lambda m: m.start)
    distinct = [m for k, m in enumerate(own) if k == 0 or m.start >= own[k - 1].end]
    return [second for first, second in itertools.pairwise(distinct)
            if _GOVERNING_GAP.match(text[first.end:second.start]) or first.end == second.start]


def _bears(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return any(start <= a < end for a, _ in spans)


def _beside(spans: Sequence[tuple[int, int]], text: str, marker: Marker, clause_start: int) -> bool:
    """Whether a further instance is of something the check is about: a fact in the word right after the marker
    ("another refund", "a second 59.00 EUR"; "a second *run* processed EV-507" is a second run) or right before it
    ("refunded again", "issued twice")."""
    after = re.match(r"\W*[\w'’.,-]+", text[marker.end:])
    reach = marker.end + (after.end() if after else 0)
    before = re.search(r"[\w'’-]+\W*$", text[clause_start:marker.start])
    back = clause_start + before.start() if before else marker.start
    return any(marker.end <= a <= reach for a, _ in spans) or any(back <= b <= marker.start for _, b in spans)


def _governs(spans: Sequence[tuple[int, int]], text: str, found: Sequence[Clause], marker: Marker) -> bool:
    """Whether a reversal or failure is said of what the check is about: its subject (the words of its clause
    before it) or its object (the words after it, up to a preposition that starts an adjunct) holds something the
    check is about. "The first batch action failed after EV-506" says nothing failed of EV-506; "the refund for
    O-1042 failed" and "declined to block your refund" do."""
    own = next((c for c in found if c.start <= marker.start < c.end), None)
    if own is None:
        return False
    adjunct = _ADJUNCT.search(text, marker.end, own.end)
    # "all processed: the first run stopped", "EV-508 processed (the first run stopped …": the subject is after
    breaks = [at + len(sign) for sign in (": ", "(", " – ", " — ")
              if (at := text.rfind(sign, own.start, marker.start)) >= 0]
    subject = max(breaks, default=own.start)
    if len(re.findall(r"[\w'’-]+", text[subject:marker.start])) <= 1:  # no subject of its own: "…, then recalled"
        return _bears(spans, *own.sentence)
    return _bears(spans, subject, marker.start) or _bears(spans, marker.end, adjunct.start() if adjunct else own.end)


def unsettled(text: str, found: Sequence[Clause], reading: Reading, bearing: Sequence[tuple[int, int]],
              stated: Sequence[tuple[int, int]], fact_words: frozenset[str] = frozenset(),
              every_word: bool = False, names: frozenset[str] | None = None,
              labels: frozenset[str] = frozenset(), prohibited: Sequence[Prohibition] = (),
              records: frozenset[str] = frozenset(), askers: frozenset[str] | None = None,
              denying: bool = False, true_states: Sequence[tuple[int, int]] = ()) -> list[Unsettled]:
    """Why the text is unsettled for its check, one reason per marker (empty: it is settled). `bearing` are the
    spans of everything the check is about (its facts' occurrences, every record id), `stated` those of the facts it
    requires (a negation before one of these in its clause takes the requirement back); `true_states` those of the
    state words said truly of a record (`verifier.record_states`), which are accounted for."""
    reasons: list[Unsettled] = []
    foreign = not_english(text, bearing)
    if foreign is not None:
        reasons.append(Unsettled(foreign, ""))
    if bearing and (denial := _BARE_DENIAL.search(text)) is not None:
        reasons.append(Unsettled(f"retraction {denial.group(0).strip()!r}", ""))
    for clause in found:
        strange = _strange_words(text, clause, bearing)
        if strange is not None and _bears(bearing, clause.start, clause.end):
            reasons.append(Unsettled(strange, text[clause.start:clause.end].strip()))
    about = [*bearing, *((m.start(), m.end()) for m in _PARTITIVE.finditer(text))]
    for start, end in stated:
        name = all(w[:1].isupper() for w in text[start:end].split()) and (
            " " in text[start:end].strip() or re.search(r"(?:^|[.!?:;\n]\s*)$", text[:start]) is None)
        if name and re.match(r"['’]s(?![\w'’-])", text[end:end + 3]):  # "Fatima Haddad's", not "someone else's"
            reasons.append(Unsettled("possessive: it names whose, not who or what", text[start:end + 2]))
        if reading == "outcome" and (actor := _READER_ACTS.search(text[:start])) is not None:
            reasons.append(Unsettled("the reader as the one who did it", text[actor.start():end].strip()))
    reasons += _forbidden_done(text, found, prohibited)
    for clause in _bearing_clauses(text, found, [*about, *related(text, fact_words)]) if every_word else ():
        place, right = (_places(text, clause, fact_words | names, records | names, bearing) if names is not None
                        else (None, []))
        if strangers := unaccounted(text, clause, [*bearing, *right, *true_states], fact_words, names, labels):
            reasons.append(Unsettled(f"words not accounted for ({', '.join(dict.fromkeys(strangers))})",
                                     text[clause.start:clause.end].strip()))
        if place is not None:
            reasons.append(Unsettled(f"names which record by a place the task does not ({place!r})",
                                     text[clause.start:clause.end].strip()))
    for clause in found if names is not None and askers is not None else ():
        if (asker := other_asker(text, clause.start, clause.end, names or frozenset(), askers or frozenset())):
            reasons.append(Unsettled(f"gives the asking to {asker}, whom the instruction does not make the one who "
                                     f"asked", text[clause.start:clause.end].strip()))
    reasons += _owners(text, found, about) if reading == "circumstance" else []
    reasons += _from_the_writer(text, found, about) if reading == "circumstance" else []
    reasons += _relative_reversals(text, found, bearing) if reading == "circumstance" else []
    reasons += _toward_the_writer(text, found, about) if reading == "outcome" else []
    kin = related(text, fact_words)
    seen: set[int] = set()
    referring = {id(c) for c in _bearing_clauses(text, found, about)} if every_word else set()
    for clause in found:
        words = text[clause.start:clause.end].strip()
        clause_bears = _bears(about, clause.start, clause.end)
        sentence_bears = _bears(about, *clause.sentence)
        doubles = _double_negations(clause, text) if clause_bears else []
        for marker in clause.markers:
            if marker.kind == "retraction" and _no_longer_unrequired(text, marker, bearing, stated):
                continue  # "RA-25 is no longer valid": a fact the check does not require, denied
            if marker.kind in ("reversal", "failure"):
                bears = (_governs(about, text, found, marker) or (clause.opened_by in _CONTRASTS and sentence_bears)
                         or (id(clause) in referring and not clause_bears))  # "…. Sam Patel stopped it."
            elif marker.kind == "retraction" and marker.words.lower() in _TEXT_RETRACTIONS:
                bears = bool(about)
            elif marker.kind in _SENTENCE_KINDS:  # a retraction of a sentence about a fact in other words too
                bears = sentence_bears or (marker.kind == "retraction" and _bears(kin, *clause.sentence))
            elif marker.kind == "quoted":
                bears = _bears(about, marker.start, marker.end)
            elif marker.kind == "reported":
                bears = _bears(about, marker.end, scope_end(text, marker, clause.sentence[1]))
            elif marker.kind == "additive":
                bears = _beside(about, text, marker, clause.start) or (
                    marker.words.lower() in _REPEATS and sentence_bears)
            elif marker.kind == "negation":
                reach = scope_end(text, marker, clause.end)
                bears = _bears(about, marker.end, reach) or (clause.opened_by in _CONTRASTS and sentence_bears)
                if (denying and (clause_bears or id(clause) in referring) and marker.start not in seen
                        and _denied_event(text, clause, marker, reach, bearing, prohibited)):
                    seen.add(marker.start)  # "…; the one after them did not go through"
                    reasons.append(Unsettled(f"a denied event the reader cannot place ({marker.words!r})", words))
                    continue
            else:
                bears = clause_bears or (clause.opened_by in _CONTRASTS and sentence_bears)
            if not bears or marker.start in seen or not _unsettles(marker, clause, reading, stated, doubles, text):
                continue
            seen.add(marker.start)
            double = "double negation " if marker in doubles else ""
            scope = text[slice(*clause.sentence)].strip() if marker.kind in _SENTENCE_KINDS else words
            reasons.append(Unsettled(f"{double}{marker}", scope))
    return reasons


def _no_longer_unrequired(text: str, marker: Marker, bearing: Sequence[tuple[int, int]],
                          stated: Sequence[tuple[int, int]]) -> bool:
    """Whether a "no longer" denies the fact right after it, one the check does not require ("RA-25 is *no longer
    valid*" where `valid` may not be stated): a negation that agrees with the check, not a retraction of what it
    requires ("no longer issued")."""
    if marker.words.lower() != "no longer":
        return False
    after = marker.end + len(text[marker.end:]) - len(text[marker.end:].lstrip())
    return any(a == after for a, _ in bearing) and not any(a == after for a, _ in stated)


def _denied_event(text: str, clause: Clause, marker: Marker, reach: int, bearing: Sequence[tuple[int, int]],
                  prohibited: Sequence[Prohibition]) -> bool:
    """A negated verb in a note that must not deny completion, whose scope holds nothing the check forbids ("is not
    *pending*" agrees) and not the instruction's own prohibition ("was not *dispatched*" follows it)."""
    as_told = any(forms(w) & {rule.verb for rule in prohibited} for w in words_of(text[marker.end:reach]))
    return (not as_told and not _bears(bearing, marker.end, reach)
            and _VERBAL_NEGATION.search(text, max(clause.start, marker.start - 12), marker.end) is not None)


def _unsettles(marker: Marker, clause: Clause, reading: Reading, stated: Sequence[tuple[int, int]],
               doubles: list[Marker], text: str) -> bool:
    if marker.kind in ("concession", "retraction", "degree") or marker in doubles:
        return True
    if reading != "outcome":
        if marker.kind == "question":  # a reason posed as a question asserts nothing, unless it asks politely
            return _POLITE.search(text[clause.sentence[0]:clause.sentence[1]]) is None
        if marker.kind == "condition":  # a condition in a sentence that states what the reason must
            return any(clause.sentence[0] <= a < clause.sentence[1] for a, _ in stated)
        return False
    if marker.kind == "negation":
        if clause.opened_by in _CONTRASTS:  # "…was issued, but it was not."
            return True
        return any(marker.start < a < scope_end(text, marker, clause.end) for a, _ in stated)
    # "request" names a thing ("your refund request for O-1528"): it takes a required fact back (a request is no
    # refund) but leaves nothing open by itself.
    return not (marker.kind == "pending" and marker.words.lower() in ("request", "requests"))
