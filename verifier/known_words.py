"""The words the reader of free text knows the role of, outside a check's own facts.

Free text is read fail-closed (`verifier.settling`): in a clause that bears on what a check is about, every word
must be one the reader can account for. Those are the check's facts, record ids, amounts, dates and names, the
markers `verifier.assertions` reads (negation, modality, pending states, ...), and the words below:

- `GRAMMAR`: the closed classes of English — determiners, pronouns, prepositions, conjunctions, auxiliaries and
  the adverbs of time, place and manner that say when or how, never whether ("we have *now* issued");
- `COURTESY`: greetings, thanks, apologies and sign-offs, which say nothing about what happened;
- `RECORDS`: the nouns of this benchmark's sites' records and the verbs of their ordinary handling ("your *order*",
  "the *refund* to your *card*", "we have *sent*"), which name what a statement is about but never change whether it
  holds; `CURRENCIES`, the words of the currency spellings.

Beside them the reader accounts for the words of the tenant's own record labels and of the task's instruction
(`verifier.facts.KnownIds.record_words`: "the team *dinner* after *stocktake*").

A word in none of them ("the bank *clawed* it back", "the *paperwork* for your refund", "a *false positive*") is
something the reader cannot account for: the text is unsettled, and the verdict names the word. A word belongs
here only when no sentence of the sites' kind changes meaning by it; a word that can take back, qualify or redirect
a statement stays out, and a valid text that needs it is refused with the word named (fail-closed).
"""

from __future__ import annotations

from tasks.values import CURRENCY_WORDS


def _words(listing: str) -> frozenset[str]:
    return frozenset(listing.split())

GRAMMAR: frozenset[str] = _words("""
a an the this that these those there here it its it's itself they them their theirs themselves we us our ours
ourselves i me my mine myself you your yours yourself yourselves he him his himself she her hers herself one ones
who whom whose which what whatever whichever
is are was were be been am has have had having do does did done get got gets getting
of to for from in on at by with into onto via per about as than like through across along within among under
between
and or both also too as well so then but however while because since who which
now today yesterday already just currently recently meanwhile herewith hereby latest first next after during until
before within few see show shows shown
zero one two three four five six seven eight nine ten eleven twelve second third fourth fifth
monday tuesday wednesday thursday friday saturday sunday january february march april june july august
september october november december
all both each every any some such own same other rest
very much many more single
up out off over down back alone way
please
""")
"""Closed-class words: they build a statement and never decide whether it holds (those that do — `not`, `will`,
`if`, `only`, ... — are markers `verifier.assertions` reads)."""

COURTESY: frozenset[str] = _words("""
hello hi hey dear good morning afternoon evening greetings thanks thank thankyou kind kindly regards best wishes
warm warmly sincerely cheers sorry apologies apologise apologize apologised apologized inconvenience patience
welcome glad happy pleased unfortunately
team support service desk customer client colleague colleagues sir madam mr mrs ms dr
let know reach contact questions question further anything help assistance
""")
"""Courtesy: what a careful support agent writes around a statement."""

RECORDS: frozenset[str] = _words("""
order orders item items product products sku stock reorder quantity quantities unit units warehouse location bin
refund refunds refunded refunding invoice invoices invoiced payment payments paid pay amount amounts total totals
totalling totaling totaled totalled sum charge charges charged card cards account accounts money funds balance fee
fees price prices cost costs rate billed billing bill bills statement cents cent pence method original full
arrive arrives arrival
claim claims expense expenses receipt receipts ticket tickets case cases message messages note notes record records
entry entries event events batch batches checkpoint dependency step steps action actions run runs ran retry retried
delivery deliveries shipment shipments parcel parcels package packages address addresses home regular carrier
courier paper
email emails e-mail e-mails mail mailed reply replied copy copies document documents file files attachment attached
attach enclosed upload uploaded number numbers reference references id code codes date dates day days week weeks
month months time times working business recent
sent send sends sending issued issue issues processed process processing posted post made make placed received
handle handled debit debited replaces replaced supersedes superseded overrides
receive reaches reached confirmed confirm confirmation submit submitted resubmit re-submit filed took selected
select went gone go goes closed close approve instructed want wants wanted treat matter risk fall falls
check checked checking review reviewed verify verified
manager managers approver approvers approval approvals employee employees staff person expired lapsed fresh earlier
login logins log logged logging sign signed sign-in password device devices phone phones laptop computer tablet
browser someone somebody looks
unknown unrecognised unrecognized new recognise recognize recognised recognized alert alerts compromise
compromised
reason reasons given give report reports reported says said wrote writes asks asked mentioned words
""")
"""The nouns of the sites' records and the verbs of their ordinary handling: what a statement is about, never whether
it holds."""

CURRENCIES: frozenset[str] = frozenset(word for spelling in CURRENCY_WORDS for word in spelling.split())
"""The words of every currency spelling `tasks.values` reads ("US dollars", "euros")."""


def known_word(word: str) -> bool:
    """Whether the reader knows the role of this word (lower case) without a check's facts."""
    return word in GRAMMAR or word in COURTESY or word in RECORDS or word in CURRENCIES
