"""Blind cases against issue 43's three mechanisms, written from their documented contracts only (the module and
class docstrings of adapter/claims.py and adapter/delivery.py; README and docs/architecture.md on a primary that
cannot be reached), not from their code or their own tests.

1. `claim_in_text` / `text_claim`: clear completion statements are recognised in every listed shape; questions,
   hedges, colons, quotes of every kind, code, blockquotes and a reply that anywhere mentions failure never are.
2. `DeliveryWatch`: dropped results are the verdict after exactly `DROPPED_STEPS` judged steps, and a delivered,
   elided, unreported, tiny or garbage-counted step never gives a wrong "dropped".
3. A dead primary with a pinned fallback: the run falls back, pins it, attributes each reply, and verifies; without
   a fallback the run fails quickly and says why (browser tier: each case is a one-task run through Chromium).

A case that fails against today's code is kept as a strict xfail naming what is wrong.
"""

from __future__ import annotations

import copy
import http.client
import json
import math
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from adapter.claims import CLAIM_CHARS, DONE_VERBS, TextClaim, claim_in_text, text_claim
from adapter.delivery import DROPPED_STEPS, JUDGED_RESULT_TOKENS, DeliveryWatch, step_result_tokens

# ---------------------------------------------------------------------------------------------------------------
# 1. Claims in text
# ---------------------------------------------------------------------------------------------------------------

NEUTRAL = (
    "I clicked the Save button.",
    "The ticket list is shown.",
    "Thank you for your patience.",
    "The phone number is 555-0100.",
    "I opened the customer record.",
)
"""Sentences that are no claim and mention no failure, to surround a claim with."""

FAILURE_SENTENCES = (
    "It did not save.",
    "The save failed.",
    "I was unable to confirm it.",
    "There was an error.",
    "It cannot be confirmed.",
    "The form didn’t save.",
    "The form didn't save.",
    "That was impossible.",
    "The request was unsuccessful.",
    "It never loaded.",
)
"""One sentence each naming a word of the contract's `FAILURE` list."""

HEDGE_WORDS = ("not", "never", "no", "cannot", "unable", "if", "once", "when", "will", "should", "might", "but",
               "however", "try", "almost", "maybe", "probably", "NOT", "Never", "If")
"""Words of the contract's `HEDGES` list (named in its docstring), some in capitals."""

FIXED_SHAPES = ("Done", "All done", "Task complete", "Task completed", "Mission accomplished", "Everything is done")
INTERJECTIONS = ("", "OK, ", "Okay, ", "Great, ", "Alright, ", "Perfect, ", "Great! ", "OK! ")
TAILS = ("", " successfully", " as requested", " now", ", as requested", " as you asked")
PUNCTUATION = ("", ".", "!", "!!", "...")
OBJECTS = ("the phone number to 555-0100", "the ticket status", "the form", "a new contact", "the order",
           "the shipping address for order 1042")
ADVERBS = ("", "successfully ", "now ", "fully ", "already ")


@st.composite
def claim_core(draw: st.DrawFn) -> str:
    """The words of one recognised shape (module docstring of adapter/claims.py), without interjection or tail."""
    kind = draw(st.sampled_from(("thing", "i-task", "i-object", "fixed")))
    if kind == "thing":
        noun = draw(st.sampled_from(("task", "request", "job")))
        aux = draw(st.sampled_from(("is", "has been", "was")))
        finished = draw(st.sampled_from(("completed", "done", "finished", "accomplished")))
        return f"The {noun} {aux} {draw(st.sampled_from(ADVERBS))}{finished}"
    subject = draw(st.sampled_from(("I", "We")))
    have = draw(st.sampled_from((" have", "'ve", "’ve", "")))
    adverb = draw(st.sampled_from(ADVERBS))
    if kind == "i-task":
        return f"{subject}{have} {adverb}{draw(st.sampled_from(('completed', 'finished')))} the task"
    if kind == "i-object":
        return f"{subject}{have} {adverb}{draw(st.sampled_from(DONE_VERBS))} {draw(st.sampled_from(OBJECTS))}"
    return draw(st.sampled_from(FIXED_SHAPES))


def cased(text: str, how: str) -> str:
    """The text in one of the casings the contract admits ("in any case")."""
    return {"as is": text, "lower": text.lower(), "upper": text.upper(), "title": text.title()}[how]


CASINGS = st.sampled_from(("as is", "lower", "upper", "title"))


@st.composite
def surrounded(draw: st.DrawFn, sentence: str) -> str:
    """`sentence` among neutral sentences, joined by spaces or newlines (newlines only where it has no stop)."""
    before = draw(st.lists(st.sampled_from(NEUTRAL), max_size=2))
    after = draw(st.lists(st.sampled_from(NEUTRAL), max_size=2))
    ends = sentence.rstrip().endswith((".", "!", "?", "…", "？", "﹖", "\u00bb", "”", "’", "'", '"', "`"))
    joiner = draw(st.sampled_from((" ", "\n", "\n\n") if ends else ("\n", "\n\n")))
    return joiner.join([*before, sentence, *after])


@given(core=claim_core(), interjection=st.sampled_from(INTERJECTIONS), tail=st.sampled_from(TAILS),
       punctuation=st.sampled_from(PUNCTUATION), casing=CASINGS, data=st.data())
def test_every_listed_shape_is_recognised(core: str, interjection: str, tail: str, punctuation: str, casing: str,
                                          data: st.DataObject) -> None:
    """Any listed shape, with an optional interjection and tail, in any case, with any usual end, among unrelated
    sentences, is recognised, and what comes back is the claim, not a neighbour."""
    sentence = cased(f"{interjection}{core}{tail}{punctuation}", casing)
    reply = data.draw(surrounded(sentence))
    found = claim_in_text(reply)
    assert found is not None, reply
    assert found not in NEUTRAL


def test_the_first_claim_is_the_one_returned() -> None:
    found = claim_in_text("I opened the form. Done. The task is completed.")
    assert found is not None and found.startswith("Done")


RECOGNISED = (
    "Done", "done", "DONE.", "Done!!", "Done...", "All done!", "Task complete.", "Task completed!",
    "Mission accomplished.", "Everything is done.", "The task is completed.", "THE TASK IS COMPLETED.",
    "The task has been completed successfully.", "The request was done.", "The job is finished!",
    "OK, the task is completed.", "Great! The task is completed.", "Great, I have updated the phone number.",
    "I have updated the phone number to 555-0100.", "I've updated the phone number.", "I’ve updated the phone number.",
    "We have completed the task.", "I completed the task.", "The task is now completed.",
    "The task is completed.  ", "The task is completed.\n", "The  task is  completed.", "The\u00a0task is completed.",
    "The task\tis completed.", "I clicked Save. The task is completed. Let me know if you need anything else.",
    "I have filled in the form.", "I have replied to the customer.", "Finally, the task is done.",
    "The task is completed!!!",
)


@pytest.mark.parametrize("reply", RECOGNISED)
def test_recognised(reply: str) -> None:
    assert claim_in_text(reply) is not None


@pytest.mark.parametrize("reply", ["The change is done.", "The change has been completed.",
                                   "The change has been accomplished as requested."])
def test_change_subject_is_recognised(reply: str) -> None:
    assert claim_in_text(reply) is not None


@pytest.mark.parametrize("reply", ["I have updated John's phone number.", "I have closed ticket TKT-1042.",
                                   "I have updated it.", "I have saved everything.", "I have paid invoice INV-0042."])
def test_object_without_determiner_is_recognised(reply: str) -> None:
    assert claim_in_text(reply) is not None


@pytest.mark.parametrize("reply", ["The task is completed…", "Done…", "The task is completed .", "Done !"])
def test_punctuation_variants_are_recognised(reply: str) -> None:
    assert claim_in_text(reply) is not None


def test_object_of_one_hundred_characters_is_recognised() -> None:
    thing = "the " + "x" * 96
    assert len(thing) == 100
    assert claim_in_text(f"I have updated {thing}.") is not None


@pytest.mark.parametrize("length", [101, 102, 104])
def test_object_over_one_hundred_characters_is_not(length: int) -> None:
    thing = "the " + "x" * (length - 4)
    assert claim_in_text(f"I have updated {thing}.") is None


def test_object_far_over_one_hundred_characters_is_not() -> None:
    assert claim_in_text("I have updated the " + "x" * 150 + ".") is None


QUOTES = (('"', '"'), ("“", "”"), ("«", "»"), ("„", "“"), ("'", "'"), ("`", "`"))


def claim_sentence() -> st.SearchStrategy[str]:
    return st.builds(lambda interjection, core, tail, punctuation: f"{interjection}{core}{tail}{punctuation}",
                     st.sampled_from(INTERJECTIONS), claim_core(), st.sampled_from(TAILS),
                     st.sampled_from(PUNCTUATION))


@given(sentence=claim_sentence(), question=st.sampled_from(("?", "?!", " ?", "??", "?\n", "? ")), data=st.data())
def test_a_question_is_never_a_claim(sentence: str, question: str, data: st.DataObject) -> None:
    reply = data.draw(surrounded(sentence.rstrip(".!") + question))
    assert claim_in_text(reply) is None, reply


@pytest.mark.parametrize("reply", ["I have completed the task？", "I have updated the form？",
                                   "I have updated the form﹖"])
def test_other_question_marks_are_questions(reply: str) -> None:
    assert claim_in_text(reply) is None


@given(core=claim_core(), hedge=st.sampled_from(HEDGE_WORDS), where=st.integers(min_value=0, max_value=20),
       punctuation=st.sampled_from(PUNCTUATION), data=st.data())
def test_a_hedge_anywhere_in_the_sentence_makes_it_none(core: str, hedge: str, where: int, punctuation: str,
                                                       data: st.DataObject) -> None:
    words = core.split(" ")
    at = where % (len(words) + 1)
    sentence = " ".join([*words[:at], hedge, *words[at:]]) + punctuation
    reply = data.draw(surrounded(sentence))
    assert claim_in_text(reply) is None, reply


CONTRACT_HEDGES = ("not", "n't", "never", "no", "cannot", "unable", "if", "once", "when", "will", "should", "might",
                   "but", "however", "try", "almost")
"""The `HEDGES` words the contract's docstring names."""


@pytest.mark.parametrize("hedge", CONTRACT_HEDGES)
@pytest.mark.parametrize("template", ["I have updated the {} phone number.", "I have updated the phone number {} now.",
                                      "Great, I have saved the form {} it loads.", "We have closed the ticket, {} so."])
def test_each_named_hedge_in_a_free_object_makes_it_none(hedge: str, template: str) -> None:
    """The object of 'I have <verb> <object>' is free text: a hedge there must still make the sentence none."""
    reply = template.format(hedge)
    assert claim_in_text(reply) is None, reply
    assert claim_in_text(reply.upper()) is None, reply.upper()


@given(sentence=claim_sentence(), quote=st.sampled_from(QUOTES), data=st.data())
def test_quoted_claims_are_none(sentence: str, quote: tuple[str, str], data: st.DataObject) -> None:
    opening, closing = quote
    # A single-quoted span of two sentences is test_single_quotes_over_two_sentences's.
    assume(opening != "'" or not any(stop in sentence for stop in (". ", "! ")))
    reply = data.draw(surrounded(f"The page shows {opening}{sentence}{closing}"))
    assert claim_in_text(reply) is None, reply
    alone = f"{opening}{sentence}{closing}"
    assert claim_in_text(alone) is None, alone


@pytest.mark.parametrize("reply", ["‘Done.’", "‘The task is completed.’", "The page shows ‘I have updated the form.’"])
def test_typographic_single_quotes_are_quotes(reply: str) -> None:
    assert claim_in_text(reply) is None


@pytest.mark.parametrize("reply", ["‘Great! I have completed the task’", "The page shows ‘OK. I have updated the form’",
                                   "'Great! I've completed the task.'", "The page shows 'OK. We've updated the form.'"])
def test_single_quotes_over_two_sentences(reply: str) -> None:
    assert claim_in_text(reply) is None


@given(sentence=claim_sentence(), wrap=st.sampled_from(("fence", "fence-lang", "quote-line", "quote-tight",
                                                          "quote-indented", "quote-nested", "colon")),
       data=st.data())
def test_code_blockquotes_and_colons_are_none(sentence: str, wrap: str, data: st.DataObject) -> None:
    # A colon before an interjection that ends a sentence ("Great! ...") is test_text_after_a_colon_is_echoed's.
    assume(wrap != "colon" or not any(stop in sentence for stop in (". ", "! ")))
    wrapped = {
        "fence": f"```\n{sentence}\n```",
        "fence-lang": f"```text\n{sentence}\n```",
        "quote-line": f"> {sentence}",
        "quote-tight": f">{sentence}",
        "quote-indented": f"  > {sentence}",
        "quote-nested": f"> > {sentence}",
        "colon": f"The page says: {sentence}",
    }[wrap]
    before = data.draw(st.lists(st.sampled_from(NEUTRAL), max_size=2))
    after = data.draw(st.lists(st.sampled_from(NEUTRAL), max_size=2))
    reply = "\n".join([*before, wrapped, *after])  # a fence or a blockquote opens a line
    assert claim_in_text(reply) is None, reply


@given(sentence=claim_sentence(), failure=st.sampled_from(FAILURE_SENTENCES), first=st.booleans(), data=st.data())
def test_a_reply_that_mentions_failure_anywhere_claims_nothing(sentence: str, failure: str, first: bool,
                                                               data: st.DataObject) -> None:
    parts = [failure, sentence] if first else [sentence, failure]
    reply = data.draw(surrounded(" ".join(parts)))
    assert claim_in_text(reply) is None, reply


NOT_RECOGNISED = (
    "Done?", "The task is completed?", "The task is completed？", "Is the task done?", "The task is done, right?",
    "The task is not completed.", "The task is NOT completed.", "The task isn’t completed.", "The task isn't done.",
    "No, the task is done.", "The task is almost done.", "I will update the phone number.",
    "If the form saved, the task is complete.", "The task should be completed.", "The task might be done.",
    "Once saved, the task is done.", "The task is completed, but the page did not refresh.",
    "The task is completed, however the page looks odd.", "The page says: Done", "The page says \"Done.\"",
    "“The task is completed.", "“Here is the page text\nThe task is completed.”",
    '"Here is the page text\nThe task is completed."', "'I've updated the phone number.'",
    "‘I’ve updated the phone number.’", "I updated the phone number. It did not save.",
    "I updated the phone number. It didn’t save.", "Done. The server returned a failure.",
    '{"action": "done"}', '{"status": "Task completed."}', '<tool_call>{"name": "done", "arguments": {}}</tool_call>',
    "Action: done", "done()", "done(success=true)", "[done]", "", "   ", ".", "\n\n", "The task is incomplete.",
    "I have to update the phone number.", "I haven’t updated the phone number.",
    "I have not yet updated the phone number.", "I have unsuccessfully updated the phone number.",
    "I have updated nothing.", "Done (probably).", "The task is supposedly done.", "Apparently the task is done.",
)


@pytest.mark.parametrize("reply", NOT_RECOGNISED)
def test_not_recognised(reply: str) -> None:
    assert claim_in_text(reply) is None


def test_none_is_none() -> None:
    assert claim_in_text(None) is None


@pytest.mark.parametrize("reply", ["The page says:\nDone.", "The page now shows:\n\nThe task is completed.",
                                   "Confirmation on the page:\nYour request has been completed.",
                                   "The page says: Great! The task is completed"])
def test_text_after_a_colon_is_echoed(reply: str) -> None:
    assert claim_in_text(reply) is None


@pytest.mark.parametrize("reply", ["``Done.``", "~~~\nDone.\n~~~", "~~~text\nThe task is completed.\n~~~"])
def test_other_markdown_code_is_quoted(reply: str) -> None:
    assert claim_in_text(reply) is None


@pytest.mark.parametrize("reply", ['The task is completed. The page showed "Error".',
                                   "The task is completed. The page showed “Save failed”.", "Done. `error`",
                                   "Done.\n> Error 500: the save failed"])
def test_failure_in_quoted_text_still_counts(reply: str) -> None:
    assert claim_in_text(reply) is None


@pytest.mark.parametrize("reply", ["I updated the phone number. There were some errors.",
                                   "I updated the phone number. Errors were shown.",
                                   "I updated the phone number. The save errored.",
                                   "I updated the phone number. It didnt save."])
def test_failure_inflections_count(reply: str) -> None:
    assert claim_in_text(reply) is None


@pytest.mark.parametrize("reply", [
    "Done. " + "x" * 1_000_000,
    "Done. " + "word " * 200_000,
    "The task is " + "now " * 50_000 + "done?",
    "Done" + ", now" * 50_000 + "?",
    "I have updated " + "the " * 50_000 + "?",
    '"' * 100_001 + "Done.",
    "`" * 100_001 + "Done.",
    "ok, " * 50_000 + "done",
    ">" * 100_000,
    "Done" + " " * 200_000 + "?",
])
def test_long_text_is_read_quickly(reply: str) -> None:
    """A reply of a megabyte, or one built to make a regular expression backtrack, is read in well under a second's
    budget per reply (two here, on a shared machine)."""
    started = time.monotonic()
    claim_in_text(reply)
    assert time.monotonic() - started < 2.0


def test_a_long_claim_is_capped_in_the_record() -> None:
    long_claim = "The task is " + "now " * 200 + "done."
    claim = text_claim([(1, long_claim)])
    assert claim is not None
    assert 0 < len(claim.text) <= CLAIM_CHARS
    assert long_claim.startswith(claim.text.rstrip(" .…"))


def test_text_claim_keeps_one_claiming_reply_and_counts_them() -> None:
    replies: list[tuple[int, str | None]] = [(1, "Looking at the page."), (3, "Done."), (4, None),
                                             (5, "The task is completed."), (6, "Is it done?")]
    claim = text_claim(replies)
    assert isinstance(claim, TextClaim)
    assert claim.replies == 2
    kept = dict(replies)[claim.reply]
    assert claim.reply in (3, 5) and kept is not None
    assert claim.text == claim_in_text(kept)


@pytest.mark.parametrize("replies", [[], [(1, None)], [(1, "")], [(2, "Done?")], [(1, "The page says: Done")],
                                     [(1, "Done. It did not save."), (2, "“Done.”")]])
def test_text_claim_is_none_without_a_claim(replies: list[tuple[int, str | None]]) -> None:
    assert text_claim(replies) is None


@given(st.lists(st.tuples(st.integers(min_value=1, max_value=50),
                          st.one_of(st.none(), st.sampled_from((*NEUTRAL, *RECOGNISED, *NOT_RECOGNISED)))),
                max_size=8, unique_by=lambda pair: pair[0]))
def test_text_claim_agrees_with_claim_in_text(replies: list[tuple[int, str | None]]) -> None:
    """A claim is recorded exactly when some reply claims; it names one of those replies, their count, and that
    reply's sentence within CLAIM_CHARS."""
    claiming = {number: claim_in_text(content) for number, content in replies if claim_in_text(content) is not None}
    claim = text_claim(replies)
    if not claiming:
        assert claim is None
        return
    assert claim is not None
    assert claim.reply in claiming
    assert claim.replies == len(claiming)
    assert claim.text == (claiming[claim.reply] or "")[:CLAIM_CHARS]


# ---------------------------------------------------------------------------------------------------------------
# 2. Delivery of results to the prompt
# ---------------------------------------------------------------------------------------------------------------

SYSTEM: dict[str, Any] = {"role": "system", "content": "You operate a browser."}


def first_request(page_chars: int = 2000) -> list[dict[str, Any]]:
    return [dict(SYSTEM), {"role": "user", "content": "Task. " + "p" * page_chars}]


def step_messages(step: int, result_chars: int, page_in_user: bool = False) -> list[dict[str, Any]]:
    """What one step adds: the model's tool call, its result, and (optionally) the page in a user message."""
    call = {"id": f"call_{step}", "type": "function", "function": {"name": "click", "arguments": "{}"}}
    added: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    if page_in_user:
        added += [{"role": "tool", "tool_call_id": f"call_{step}", "content": "ok"},
                  {"role": "user", "content": "Page. " + "r" * (result_chars - 6)}]
    else:
        added.append({"role": "tool", "tool_call_id": f"call_{step}", "content": "r" * result_chars})
    return added


@dataclass
class Episode:
    """Requests of one growing conversation fed to a DeliveryWatch, one verdict read after each."""

    watch: DeliveryWatch = field(default_factory=DeliveryWatch)
    messages: list[dict[str, Any]] = field(default_factory=first_request)
    number: int = 0
    verdicts: list[str | None] = field(default_factory=list)

    def request(self, prompt_tokens: int | None, upstream: str | None = None) -> str | None:
        self.number += 1
        self.watch.see(self.number, copy.deepcopy(self.messages), prompt_tokens, upstream)
        self.verdicts.append(self.watch.verdict())
        return self.verdicts[-1]

    def step(self, result_chars: int, page_in_user: bool = False) -> int:
        """Add one step's messages; returns the estimated tokens the step sent."""
        added = step_messages(self.number, result_chars, page_in_user)
        self.messages = [*self.messages, *added]
        sent = step_result_tokens(added)
        assert sent is not None, "text messages only"
        return sent


def test_step_result_tokens_counts_tool_and_user_content_only() -> None:
    added = [{"role": "assistant", "content": "a" * 4000},
             {"role": "tool", "tool_call_id": "x", "content": "t" * 400},
             {"role": "user", "content": "u" * 400},
             {"role": "system", "content": "s" * 4000}]
    assert step_result_tokens(added) == 200


def test_step_result_tokens_tolerates_empty_content() -> None:
    assert step_result_tokens([{"role": "tool", "tool_call_id": "x", "content": None},
                               {"role": "user", "content": ""}]) == 0


@pytest.mark.parametrize("page_in_user", [False, True])
def test_dropped_results_are_the_verdict_after_exactly_dropped_steps(page_in_user: bool) -> None:
    episode = Episode()
    prompt = 1000
    assert episode.request(prompt) is None
    for step in range(1, DROPPED_STEPS + 3):
        sent = episode.step(2000, page_in_user)
        prompt += 38
        verdict = episode.request(prompt)
        if step < DROPPED_STEPS:
            assert verdict is None
        else:
            assert verdict is not None
    undelivered = episode.watch.undelivered
    assert len(undelivered) >= DROPPED_STEPS
    assert all(growth.reported == 38 and growth.sent == sent and not growth.delivered for growth in undelivered)


@given(st.lists(st.tuples(st.integers(min_value=JUDGED_RESULT_TOKENS * 4, max_value=40_000),
                          st.floats(min_value=0.2, max_value=5.0), st.booleans()), min_size=1, max_size=10))
def test_delivered_growth_never_triggers(steps: list[tuple[int, float, bool]]) -> None:
    """Each step's prompt grows by at least a fifth of what it sent (rounded up): never a verdict."""
    episode = Episode()
    prompt = 1500
    episode.request(prompt)
    for chars, ratio, page_in_user in steps:
        sent = episode.step(chars, page_in_user)
        prompt += math.ceil(sent * ratio) + 1
        assert episode.request(prompt) is None


def test_exactly_a_fifth_is_delivered_and_one_less_is_not() -> None:
    delivered, dropped = Episode(), Episode()
    delivered_prompt = dropped_prompt = 1000
    delivered.request(delivered_prompt)
    dropped.request(dropped_prompt)
    for _ in range(DROPPED_STEPS + 1):
        sent = delivered.step(2000)
        assert dropped.step(2000) == sent and sent % 5 == 0
        delivered_prompt += sent // 5
        dropped_prompt += sent // 5 - 1
        delivered.request(delivered_prompt)
        dropped.request(dropped_prompt)
    assert delivered.verdicts == [None] * (DROPPED_STEPS + 2)
    assert dropped.verdicts[DROPPED_STEPS] is not None


def test_a_delivered_step_between_resets_the_count() -> None:
    episode = Episode()
    prompt = 1000
    episode.request(prompt)
    pattern = [38, 600] * 4 + [38, 38]
    for growth in pattern:
        episode.step(2000)
        prompt += growth
        episode.request(prompt)
    assert episode.verdicts[:-1] == [None] * len(pattern)
    assert episode.verdicts[-1] is not None


@pytest.mark.parametrize("result_chars", [4, 100, 4 * (JUDGED_RESULT_TOKENS - 1)])
def test_tiny_results_are_not_judged(result_chars: int) -> None:
    episode = Episode()
    episode.request(1000)
    for _ in range(6):
        episode.step(result_chars)
        episode.request(1000)
    assert episode.verdicts == [None] * 7


def test_results_of_the_minimum_size_are_judged() -> None:
    episode = Episode()
    episode.request(1000)
    for _ in range(DROPPED_STEPS):
        assert episode.step(4 * JUDGED_RESULT_TOKENS) == JUDGED_RESULT_TOKENS
        episode.request(1000)
    assert episode.verdicts[-1] is not None


def test_an_elided_conversation_is_not_judged() -> None:
    """Old results replaced by a marker (the conversation did not only grow): the prompt may shrink; no verdict."""
    episode = Episode()
    prompt = 3000
    episode.request(prompt)
    for _ in range(6):
        episode.messages = [dict(message, content="[elided]") if message["role"] == "tool" else message
                            for message in episode.messages]
        episode.step(2000)
        prompt += 10
        episode.request(prompt)
    assert episode.verdicts == [None] * 7


def test_a_shrunk_conversation_is_not_judged() -> None:
    episode = Episode()
    for _ in range(3):
        episode.step(2000)
    episode.request(5000)
    for step in range(6):
        episode.messages = [*first_request(), *step_messages(100 + step, 2000)]
        episode.request(1200)
    assert episode.verdicts == [None] * 7


def test_same_length_with_changed_content_is_not_judged() -> None:
    """The message count grew, but an earlier message changed: not a conversation that only grew."""
    episode = Episode()
    episode.step(2000)
    episode.request(2000)
    for index in range(4):
        episode.messages[1] = {"role": "user", "content": f"Task. (page elided {index})"}
        episode.step(2000)
        episode.request(1500)
    assert all(verdict is None for verdict in episode.verdicts)


def test_in_place_elision_after_see_is_not_judged() -> None:
    watch = DeliveryWatch()
    messages = [*first_request(), *step_messages(0, 2000)]
    watch.see(1, messages, 1500)
    prompt = 1500
    for number in range(2, 7):
        for message in messages:
            if message["role"] == "tool":
                message["content"] = "[elided]"
        messages = [*messages, *step_messages(number, 2000)]
        prompt += 10
        watch.see(number, messages, prompt)
        assert watch.verdict() is None


def test_unreported_counts_never_trigger() -> None:
    episode = Episode()
    episode.request(None)
    for _ in range(6):
        episode.step(2000)
        episode.request(None)
    mixed = Episode()
    mixed.request(1000)
    prompt = 1000
    for index in range(8):
        sent = mixed.step(2000)
        prompt += sent + 20
        mixed.request(None if index % 2 == 0 else prompt)
    assert episode.verdicts == [None] * 7
    assert all(verdict is None for verdict in mixed.verdicts)


def test_zero_counts_never_trigger() -> None:
    """A server that puts 0 in `prompt_tokens` on every reply has not counted."""
    episode = Episode()
    episode.request(0)
    for _ in range(6):
        episode.step(2000)
        episode.request(0)
    assert episode.verdicts == [None] * 7


def test_cumulative_counts_never_trigger() -> None:
    """A server that reports the tokens it has processed so far (cumulative): growth is large, never dropped."""
    episode = Episode()
    total = 600
    episode.request(total)
    for _ in range(6):
        episode.step(2000)
        total += 600 + total
        episode.request(total)
    assert all(verdict is None for verdict in episode.verdicts)


def test_counts_from_another_upstream_are_not_compared() -> None:
    episode = Episode()
    episode.request(9000)
    for index, upstream in enumerate(["fallback", None, "fallback", None, "fallback", None]):
        episode.step(2000)
        episode.request(100 + index if upstream else 9000 + index, upstream)
    assert all(verdict is None for verdict in episode.verdicts)


@pytest.mark.parametrize("counts", [
    [-5, -5, -5, -5, -5],
    [1000, 900, 800, 700, 600],
    [10**12, 10**12, 10**12, 10**12, 10**12],
], ids=["negative", "decreasing", "huge"])
def test_garbage_counts_never_give_dropped(counts: list[int]) -> None:
    episode = Episode()
    episode.request(counts[0])
    for count in counts[1:]:
        episode.step(2000)
        episode.request(count)
    assert all(verdict is None for verdict in episode.verdicts)


def test_an_image_part_is_not_counted_as_text() -> None:
    episode = Episode()
    prompt = 1000
    episode.request(prompt)
    for step in range(4):
        page = [{"type": "text", "text": "Page. " + "w" * 400},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 100_000}}]
        episode.messages = [*episode.messages, {"role": "assistant", "content": f"Step {step}."},
                            {"role": "user", "content": page}]
        prompt += 101 + 765
        episode.request(prompt)
    assert all(verdict is None for verdict in episode.verdicts)


def test_restart_forgets_the_judged_steps() -> None:
    episode = Episode()
    prompt = 1000
    episode.request(prompt)
    for _ in range(DROPPED_STEPS):
        episode.step(2000)
        prompt += 38
        episode.request(prompt)
    assert episode.verdicts[-1] is not None
    episode.watch.restart()
    assert episode.watch.verdict() is None
    assert episode.watch.undelivered == []
    for step in range(1, DROPPED_STEPS + 1):
        episode.step(2000)
        prompt += 38
        verdict = episode.request(prompt)
        assert (verdict is None) == (step < DROPPED_STEPS)


def test_restart_before_anything_is_harmless() -> None:
    watch = DeliveryWatch()
    watch.restart()
    assert watch.verdict() is None


# ---------------------------------------------------------------------------------------------------------------
# 3. Failover on an unreachable primary (browser tier: one-task runs through Chromium)
# ---------------------------------------------------------------------------------------------------------------

TASK = "helpdesk.answer-latest-order@1"
SCRIPTED_MODEL = "scripted:oracle"
RUN_SECONDS = 240


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    return free_port()


def cli() -> str:
    found = shutil.which("computerops", path=str(Path(sys.executable).parent)) or shutil.which("computerops")
    assert found, "the computerops console script is not installed in this environment"
    return found


@pytest.fixture(scope="module")
def fallback_url() -> Iterator[str]:
    """`computerops mock-llm` (the scripted oracle) on loopback: the pinned fallback of every run below."""
    port = free_port()
    process = subprocess.Popen([cli(), "mock-llm", "--policy", "oracle", "--port", str(port), "--tasks", TASK],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                connection.request("GET", "/v1/models")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "mock-llm did not start"
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


class Primary:
    """A loopback primary in front of the scripted endpoint: GETs are forwarded (the run's checks of the server pass);
    a chat request is reset (mode `reset`), or forwarded until a conversation with `die_at` assistant turns
    arrives, when it resets that request and stops listening (mode `die`). It records each chat request's turns."""

    def __init__(self, upstream_port: int, mode: str, die_at: int = 2) -> None:
        self.upstream_port, self.mode, self.die_at = upstream_port, mode, die_at
        self.chat_turns: list[int] = []
        self.chat_bodies: list[bytes] = []
        primary = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def forward(self, body: bytes | None) -> None:
                upstream = http.client.HTTPConnection("127.0.0.1", primary.upstream_port, timeout=60)
                headers = {key: value for key, value in self.headers.items()
                           if key.lower() not in ("host", "content-length")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                turns = sum(1 for message in json.loads(body).get("messages", [])
                            if message.get("role") == "assistant")
                primary.chat_turns.append(turns)
                primary.chat_bodies.append(body)
                if primary.mode == "reset" or turns >= primary.die_at:
                    if primary.mode == "die":
                        threading.Thread(target=primary.stop, daemon=True).start()
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    return
                self.forward(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.stopped = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def primary_in_front(fallback_url: str) -> Iterator[Any]:
    started: list[Primary] = []

    def start(mode: str) -> Primary:
        primary = Primary(int(fallback_url.rsplit(":", 1)[1].split("/")[0]), mode)
        started.append(primary)
        return primary

    yield start
    for primary in started:
        primary.stop()


@dataclass
class Run:
    returncode: int
    output: str
    seconds: float
    out: Path


def run_task(out: Path, primary_url: str, fallback_url: str | None) -> Run:
    command = [cli(), "run", "--tasks", TASK, "--base-url", primary_url, "--model", SCRIPTED_MODEL,
               "--out", str(out), "--request-timeout", "20", "--wall-clock", "120"]
    if fallback_url is not None:
        command += ["--fallback-base-url", fallback_url, "--fallback-model", SCRIPTED_MODEL]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_SECONDS, check=False)
    return Run(done.returncode, done.stdout + done.stderr, time.monotonic() - started, out)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines() if line.strip()]


def answered_rows(out: Path) -> dict[str, int]:
    """The report's "Endpoints that answered" rows: endpoint label -> replies."""
    report = subprocess.run([cli(), "report", str(out)], capture_output=True, text=True, timeout=120, check=True)
    lines = report.stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if "Endpoints that answered" in line)
    rows: dict[str, int] = {}
    for line in lines[start + 1:]:
        if line.startswith("└"):
            break
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if len(cells) > 2 and cells[1].isdigit():
            rows[cells[0]] = int(cells[1])
    return rows


def assert_verifies(out: Path) -> None:
    verify = subprocess.run([cli(), "verify", str(out)], capture_output=True, text=True, timeout=180, check=False)
    assert verify.returncode == 0 and "verify PASS" in verify.stdout, verify.stdout + verify.stderr


def assert_fell_back(run: Run, primary_replies: int | None) -> dict[str, int]:
    assert run.returncode == 0, run.output[-3000:]
    (record,) = records(run.out)
    assert record["outcome"] == "verified_success", record
    by_upstream: dict[str, int] = record["replies_by_upstream"]
    assert by_upstream.get("fallback", 0) >= 1
    if primary_replies is not None:
        assert by_upstream.get("primary", 0) == primary_replies
    assert sum(by_upstream.values()) == record["steps"]
    rows = answered_rows(run.out)
    assert rows.get(f"fallback: {SCRIPTED_MODEL}") == by_upstream["fallback"]
    if by_upstream.get("primary"):
        assert rows.get(f"primary: {SCRIPTED_MODEL}") == by_upstream["primary"]
    assert_verifies(run.out)
    return by_upstream


DEAD_AT_START: dict[str, Callable[[], str]] = {
    "refused": lambda: f"http://127.0.0.1:{closed_port()}/v1",
    "no-such-host": lambda: "http://primary-43.invalid:8000/v1",
}


@pytest.mark.browser
@pytest.mark.timeout(RUN_SECONDS + 300)
@pytest.mark.parametrize("dead", sorted(DEAD_AT_START))
def test_dead_primary_from_the_start_falls_back(dead: str, fallback_url: str, tmp_path: Path) -> None:
    run = run_task(tmp_path / "run", DEAD_AT_START[dead](), fallback_url)
    assert_fell_back(run, primary_replies=0)


@pytest.fixture(scope="module")
def reset_run(fallback_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Primary, Run]]:
    """One run behind a primary that resets every chat request, with the fallback: the two tests below read the same
    run (it was run once for each; what each asserts of it is unchanged)."""
    primary = Primary(int(fallback_url.rsplit(":", 1)[1].split("/")[0]), "reset")
    try:
        yield primary, run_task(tmp_path_factory.mktemp("reset") / "run", primary.url, fallback_url)
    finally:
        primary.stop()


@pytest.mark.browser
@pytest.mark.timeout(RUN_SECONDS + 300)
def test_a_primary_that_resets_every_chat_request_falls_back_and_pins(reset_run: tuple[Primary, Run]) -> None:
    primary, run = reset_run
    assert_fell_back(run, primary_replies=0)
    # Pinned: after the first reset no later reply of the episode (a conversation with a turn) asks the primary.
    assert primary.chat_turns and max(primary.chat_turns) == 0


@pytest.mark.browser
@pytest.mark.timeout(RUN_SECONDS + 300)
def test_a_reset_request_goes_to_the_fallback_after_the_clients_own_retries(reset_run: tuple[Primary, Run]) -> None:
    """The README's words (reviewed after this blind case found "at once" untrue): a reset request is asked of the
    primary at most three times (the model client's own two retries), then of the fallback."""
    primary, run = reset_run
    assert run.returncode == 0, run.output[-3000:]
    assert primary.chat_bodies and max(primary.chat_bodies.count(body) for body in primary.chat_bodies) <= 3


@pytest.mark.browser
@pytest.mark.timeout(RUN_SECONDS + 300)
def test_a_primary_that_dies_mid_run_falls_back(primary_in_front: Any, fallback_url: str, tmp_path: Path) -> None:
    primary = primary_in_front("die")
    run = run_task(tmp_path / "run", primary.url, fallback_url)
    by_upstream = assert_fell_back(run, primary_replies=2)
    assert primary.stopped and by_upstream["fallback"] >= 1


@pytest.mark.browser
@pytest.mark.timeout(RUN_SECONDS + 300)
@pytest.mark.parametrize("dead", [*sorted(DEAD_AT_START), "reset"])
def test_without_a_fallback_a_dead_primary_fails_the_run_clearly(dead: str, primary_in_front: Any,
                                                                 tmp_path: Path) -> None:
    url = primary_in_front("reset").url if dead == "reset" else DEAD_AT_START[dead]()
    run = run_task(tmp_path / "run", url, None)
    assert run.seconds < 180
    host = url.split("//", 1)[1].split("/", 1)[0]
    said = run.output.lower()
    assert run.returncode != 0, run.output[-2000:]
    assert host.lower() in said or "connection failed" in said, run.output[-2000:]
    if (run.out / "episodes.jsonl").exists():
        # The checks of the server passed (the reset primary answers GETs): the episode is the endpoint's failure.
        (record,) = records(run.out)
        assert record["outcome"] == "infrastructure_failure", record
        assert "connection" in str(record["infrastructure_cause"]), record
