"""The typed task schema. A task file is data: instruction, checks, controls. No code per task.

One module (over 400 lines): the task schema is one vocabulary, and its cross-field rules refer to each other.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from computerops.core.vocabulary import ActionName
from sites.kit.fault_params import fault_params
from sites.kit.faults import FaultClass, FaultRule, PathPattern
from tasks.answers import REFUSAL_STATUSES, AnswerStatus, AnswerType, ReasonCode
from tasks.values import parse_date, parse_money, phone_number, read_value

Scalar = str | int | float | bool | None
ChangeKind = Literal["insert", "update", "delete"]
_ALL_CHANGES: tuple[ChangeKind, ...] = ("insert", "update", "delete")
_TASK_ID = r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)*(@[0-9]{1,15})?$"
"""A task instance's id, `TEMPLATE@SEED` (`tasks.templates`); a bare template id where a file is read alone."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Typed(_Spec):
    """A column value compared by what it means, written as a one-key mapping: `{email: ap@brightlane.example}`
    (case and surrounding space aside), `{phone: "+49 30 5550 9876"}` (compared as a number, however spaced or
    punctuated), `{text: Orchard Room}` (case, repeated white space and surrounding punctuation aside), or
    `{exact: "+44 161 555 0147"}` (character for character: where the instruction asks for the value exactly as
    written). A plain value compares exactly; an e-mail address or phone number must be written typed (a load error
    otherwise), so that no check compares one by its spelling without saying so."""

    type: Literal["email", "phone", "text", "exact"]
    value: str

    @model_validator(mode="before")
    @classmethod
    def _one_key(cls, data: Any) -> Any:
        return one_key_mapping(data, "a typed value", "{email: a@b.example}")

    @model_validator(mode="after")
    def _reads(self) -> Typed:
        if self.type == "phone" and phone_number(self.value) is None:
            raise ValueError(f"{self.value!r} is not a phone number with its country code")
        if self.type == "email" and not _EMAIL.fullmatch(self.value.strip()):
            raise ValueError(f"{self.value!r} is not an e-mail address")
        return self

    def __str__(self) -> str:
        return self.value


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_PHONE_LIKE = re.compile(r"\+\d[\d\s().-]{6,}")


def _untyped(values: dict[str, Any]) -> dict[str, Any]:
    for column, value in values.items():
        if isinstance(value, str) and _EMAIL.fullmatch(value.strip()):
            raise ValueError(f"{column}: {value!r} is an e-mail address: write it {{email: {value}}} so that it "
                             "compares as an address, case aside")
        if isinstance(value, str) and _PHONE_LIKE.fullmatch(value.strip()):
            raise ValueError(f"{column}: {value!r} is a phone number: write it {{phone: {value!r}}} so that it "
                             "compares as a number, however it is spaced")
    return values


Where = Annotated[dict[str, Scalar | Typed], AfterValidator(_untyped)]
"""Column values a row must have: plain values compare exactly, typed ones by what they mean."""


class RowSelector(_Spec):
    """Selects journal entries: a table, the kinds of change, and values the changed row has."""

    table: str
    change: list[ChangeKind] = Field(default_factory=lambda: list(_ALL_CHANGES))
    where: Where = Field(default_factory=dict)


def one_key_mapping(data: Any, what: str, example: str) -> Any:
    """`{kind: value}` as `{type: kind, value: value}` (how task files write facts and typed values)."""
    if isinstance(data, dict) and "type" not in data:
        if len(data) != 1:
            raise ValueError(f"{what} is a one-key mapping such as {example}, got {data!r}")
        ((kind, value),) = data.items()
        return {"type": kind, "value": value}
    return data


FactType = Literal["money", "date", "id", "integer", "words", "denies"]
FactValue = str | int | bool | list[str]


class Fact(_Spec):
    """One typed value a free text states, written as a one-key mapping: `{money: 49.90 EUR}`, `{id: O-1042}`,
    `{date: 2026-03-31}`, `{integer: 3}`, `{words: refund issued}` (whole words in order; a list means any of
    them) or `{denies: [complete, done]}` (the words taken back: "not complete", and in an outcome reading also
    "will be done", "once complete", "pending completion"). Read by `verifier.facts`:
    a fact is stated only where the text asserts it (`verifier.assertions`)."""

    type: FactType
    value: FactValue

    @model_validator(mode="before")
    @classmethod
    def _one_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "negation" in data:
            raise ValueError("{negation: true} is gone: a fact is stated only where the text asserts it (not "
                             "negated, not future, not conditional), so give the facts the text must assert; "
                             "{denies: [...]} names words the text must not deny")
        return one_key_mapping(data, "a fact", "{money: 49.90 EUR}")

    @model_validator(mode="after")
    def _value_fits(self) -> Fact:
        value, kind = self.value, self.type
        words = (isinstance(value, str) and bool(value.split())) or (
            isinstance(value, list) and bool(value) and all(v.split() for v in value))
        fits = {
            "money": isinstance(value, str) and parse_money(value) is not None,
            "date": isinstance(value, str) and parse_date(value) is not None,
            "id": isinstance(value, str) and bool(value.strip()) and value == value.strip(),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "words": words,
            "denies": words,
        }[kind]
        if not fits:
            raise ValueError(f"{value!r} is not a {kind} fact")
        return self


class TextCheck(_Spec):
    """What a free-text column must assert and must not assert. `states` facts must each be asserted (the `words`
    facts together, in one clause: they describe one event); a `never_states` fact must not be asserted anywhere.
    `no_other` also refuses any value of those types that is neither stated nor in `may_state` (a second,
    contradicting amount; another record, by id or by a bare number that names it), so a text may leave a fact out
    but never get it wrong. `reading` says what takes an assertion back: `outcome` (a notice that something was
    done: negation, modality, futurity, a condition, a pending state, a reported failure) or `circumstance` (a
    reason describing a situation, where "suspected" is what is meant: negation only)."""

    states: list[Fact] = Field(default_factory=list)
    never_states: list[Fact] = Field(default_factory=list)
    may_state: list[Fact] = Field(default_factory=list)
    """Values the text may state without having to (used by `no_other`)."""
    no_other: list[Literal["money", "date", "id", "integer"]] = Field(default_factory=list)
    nothing_else: list[str] | None = None
    """When given, the text holds nothing but its stated (and may_state) id and words facts and these label
    words, punctuation and white space aside: `Approval code: APR-7731` is the code "and nothing else"."""
    reading: Literal["outcome", "circumstance"] = "outcome"
    apposed: bool = False
    """The `words` facts name one thing and stand side by side, in apposition ("your manager, Fatima Haddad",
    "Fatima Haddad (your manager)", "your manager is Fatima Haddad"): one clause holding both is not enough where
    they may name two people ("Fatima Haddad is to submit it through your manager")."""
    currency: Literal["optional", "required"] = "optional"
    """`required`: a `money` fact is stated only with its currency written next to the amount (where the instruction
    asks for the amount and its currency); `optional` also reads a bare amount with two decimals as the fact's."""

    @model_validator(mode="after")
    def _checks_something(self) -> TextCheck:
        if not (self.states or self.never_states):
            raise ValueError("a text check must say what the text means: give states or never_states (no_other "
                             "alone says only which values it may name)")
        if self.nothing_else is not None and any(f.type not in ("id", "words")
                                                 for f in [*self.states, *self.may_state]):
            raise ValueError("nothing_else works with id and words facts only")
        missing = sorted(set(self.no_other) - {f.type for f in [*self.states, *self.may_state]})
        if missing:
            raise ValueError(f"no_other {missing} needs a stated or allowed fact of that type")
        if self.may_state and not self.no_other:
            raise ValueError("may_state only matters with no_other")
        if any(f.type == "denies" for f in self.may_state):
            raise ValueError("denies facts go in states or never_states")
        if self.apposed and sum(f.type == "words" for f in self.states) < 2:
            raise ValueError("apposed needs two or more words facts in states: it says they stand side by side")
        return self

    @model_serializer(mode="wrap")
    def _added_later_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`apposed` came after instances were hash-locked: it is written only when set, so the hash of every
        instance that does not use it (`tasks.catalog.instance_sha256`) stays what it was."""
        data: dict[str, Any] = handler(self)
        if not self.apposed:
            data.pop("apposed", None)
        return data


class RowCheck(_Spec):
    """Expected state: exactly `count` rows of `table` match `where`, each with the `expect` values and, in
    each free-text column of `text`, the facts its check asks for."""

    kind: Literal["row"] = "row"
    name: str
    table: str
    where: Where = Field(default_factory=dict)
    count: int = Field(default=1, ge=0)
    expect: Where = Field(default_factory=dict)
    text: dict[str, TextCheck] = Field(default_factory=dict)
    """Column -> the facts its free text (a message, a reason, a note the agent writes) must and must not state."""

    @model_validator(mode="after")
    def _checks_something(self) -> RowCheck:
        if self.count > 0 and not self.where and not self.expect and not self.text:
            raise ValueError(f"row check {self.name!r} checks nothing: give where, expect or text")
        return self


class AnswerField(_Spec):
    """One typed field of a read-and-answer task's answer: the model is shown its name, type and description."""

    type: AnswerType
    description: str
    expected: str | int | list[str]
    order: Literal["set", "sequence"] = "set"
    """For `id_list`: compare as a set (no item missing, extra or repeated) or as a sequence."""
    match: Literal["exact", "with_qualifiers"] = "exact"
    """For `text`: the name exactly (case, spacing and a leading article aside), or the name followed by a
    qualifier set off by punctuation (`Orchard Room (2nd floor)`, `Orchard Room, 2nd floor`): declare the latter
    where the question asks for a name and more detail about the same thing is harmless. `Orchard Room annex`,
    a longer name, is another thing either way."""
    qualifier: TextCheck | None = None
    """What a qualifier may not assert (read as free text): `Orchard Room (ground floor)` names the right room and a
    wrong floor."""

    @model_validator(mode="after")
    def _expected_reads(self) -> AnswerField:
        if read_value(self.type, self.expected) is None:
            raise ValueError(f"expected {self.expected!r} is not a {self.type}")
        if self.type == "id_list" and len(set(self.expected)) != len(self.expected):  # type: ignore[arg-type]
            raise ValueError("an expected id_list repeats an item")
        if self.match != "exact" and self.type != "text":
            raise ValueError("match applies to text fields only")
        if self.qualifier is not None and self.match != "with_qualifiers":
            raise ValueError("a qualifier check needs match: with_qualifiers")
        return self


_FIELD_NAME = r"^[a-z][a-z0-9_]*$"


class AnswerCheck(_Spec):
    """The agent's structured final answer (never its free-text message): a status from the accepted ones; for a
    refusal, a reason code from the accepted ones; for success, exactly the declared fields with the expected
    values after type-aware normalisation (`verifier.answers`)."""

    kind: Literal["answer"] = "answer"
    name: str
    status: list[AnswerStatus] = Field(min_length=1)
    reasons: list[ReasonCode] = Field(default_factory=list)
    """The refusal reason codes accepted (each a true reason for this task)."""
    fields: dict[Annotated[str, Field(pattern=_FIELD_NAME)], AnswerField] = Field(default_factory=dict)

    @field_validator("status", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> AnswerCheck:
        refusal = [s for s in self.status if s in REFUSAL_STATUSES]
        if "failed" in self.status:
            raise ValueError("status failed is never a right answer")
        if "success" in self.status and refusal:
            raise ValueError("an answer check accepts success or refusal statuses, not both")
        if refusal and not self.reasons:
            raise ValueError("a refusal answer check must name the accepted reason codes")
        if refusal and self.fields:
            raise ValueError("a refusal answer has no fields")
        if not refusal and self.reasons:
            raise ValueError("reasons belong to refusal statuses only")
        return self


class EffectsCheck(_Spec):
    """Checked over the journal (every change the episode made), not the final rows: how many changes the
    selector picks, in all or for each value of a column. An effect applied twice and patched back by hand is
    still two effects; a value set and set back still was set (`at_most: 0` on a selector of it: never)."""

    kind: Literal["effects"] = "effects"
    name: str
    rows: RowSelector
    fields: list[str] | None = None
    """For updates: count only those that change one of these columns."""
    count: int | None = Field(default=None, ge=0)
    at_least: int | None = Field(default=None, ge=0)
    at_most: int | None = Field(default=None, ge=0)
    per: str | None = None
    """A column of the changed row: the bounds hold for the changes of each of its values."""
    each: list[Scalar] = Field(default_factory=list)
    """Values of `per` that must each be present (with at least `at_least`, or `count`, changes)."""

    @model_validator(mode="after")
    def _bounded(self) -> EffectsCheck:
        if self.count is not None and (self.at_least is not None or self.at_most is not None):
            raise ValueError("give count, or at_least/at_most, not both")
        if self.count is None and self.at_most is None and not self.at_least:
            raise ValueError(f"effects check {self.name!r} checks nothing: give count, at_least or at_most")
        if self.each and self.per is None:
            raise ValueError("each needs per")
        return self

    @property
    def bounds(self) -> tuple[int, int | None]:
        if self.count is not None:
            return self.count, self.count
        return self.at_least or 0, self.at_most


StateCheck = Annotated[RowCheck | AnswerCheck | EffectsCheck, Field(discriminator="kind")]


class MutationRule(_Spec):
    """One kind of row change the task allows. Any journal entry no rule allows is forbidden."""

    table: str
    change: list[ChangeKind] = Field(min_length=1)
    where: Where = Field(default_factory=dict)
    """Matched against the row after the change (before it, for a delete)."""
    fields: list[str] | None = None
    """For updates: the only columns that may change. None allows any column."""
    created_in_episode: bool = False
    """Only rows the episode itself inserted (an agent may re-save or delete its own new draft)."""
    unbounded: str | None = Field(default=None, min_length=10, exclude_if=lambda value: value is None)
    """For a rule that allows inserts: why no check counts them, where that is right (the instruction lets the
    agent add as many as it needs; the site itself inserts them, once per request another check counts). Without
    it, some check must count them (`tasks.bounds`)."""

    @model_validator(mode="after")
    def _unbounded_inserts(self) -> MutationRule:
        if self.unbounded is not None and "insert" not in self.change:
            raise ValueError("unbounded says why a rule's inserts are not counted: give it to a rule that allows "
                             "insert")
        return self


class _RouteCheck(_Spec):
    """A procedure check about requests: a method and a path pattern."""

    name: str
    method: str = "POST"
    path: PathPattern


class Route(_Spec):
    """Another route that runs the same procedure, with what makes it equivalent."""

    method: str = "POST"
    path: PathPattern
    why: str


class ViaRoute(_RouteCheck):
    """Required procedure: the selected changes exist and every one was made by a matching request (this route
    or one of its `alternatives`)."""

    kind: Literal["via_route"] = "via_route"
    rows: RowSelector
    alternatives: list[Route] = Field(default_factory=list)


class Ordered(_Spec):
    """Required procedure: every change selected by `first` happens before every change selected by `then` (both
    exist). "Do A, then B": a B before the last A fails, though some A came first. An instruction that states an order
    between two writes has one of these for it (`tasks.stated_order.order_problems`)."""

    kind: Literal["ordered"] = "ordered"
    name: str
    first: RowSelector
    then: RowSelector


class FaultFired(_Spec):
    """A moment: the last operation on which this fault class fired (an out-of-order item arrives after it)."""

    fault_fired: FaultClass


class Page(_Spec):
    """Another page a `visited` check accepts: a path, and a query when only some loads of it show the fact."""

    method: str = "GET"
    path: PathPattern
    query: PathPattern | None = None
    why: str


class Visited(_RouteCheck):
    """Required procedure: the agent requested a page — some request with this method and path succeeded (2xx),
    and, when given, did so before the first change (`first-write`) or before the first change `before` selects,
    and after the first change `after` selects or after the last operation a fault fired on. Only for a page the
    instruction names; what the agent must have been *shown* is a `seen` check."""

    kind: Literal["visited"] = "visited"
    method: str = "GET"
    query: PathPattern | None = None
    """A regular expression searched in the request's URL-decoded query string (a search for the policy, not
    any search)."""
    alternatives: list[Page] = Field(default_factory=list)
    """Other pages that show the same, each with why."""
    before: Literal["first-write"] | RowSelector | None = None
    after: RowSelector | FaultFired | None = None


class ShownFact(_Spec):
    """A fact a response may have shown (see `Seen`): a row's columns, a whole list, or a document."""

    table: str | None = None
    where: Where = Field(default_factory=dict)
    fields: list[str] = Field(default_factory=list)
    per: str | None = None
    each: list[Scalar] = Field(default_factory=list)
    listing: bool = False
    document: str | None = None

    @model_validator(mode="after")
    def _one_fact(self) -> ShownFact:
        modes = [bool(self.fields) or self.listing, self.document is not None]
        if sum(modes) != 1:
            raise ValueError("a shown fact is fields, listing: true (with or without fields) or a document")
        if (self.fields or self.listing) and self.table is None:
            raise ValueError("fields and listing need a table")
        if self.document is not None and (self.table is not None or self.where):
            raise ValueError("a document has no table or where")
        if (self.per is not None or self.each) and not (self.fields and self.per is not None and self.each
                                                         and not self.listing):
            raise ValueError("per and each go together, with fields and no listing")
        return self


class OtherShownFact(ShownFact):
    """Another fact that tells the agent the same, with why."""

    why: str = Field(min_length=10)


class Seen(ShownFact):
    """Required procedure: the agent was *shown* a fact — some response's record of what it displayed
    (`Operation.shown`, written by the sites kit as pages render) holds it, within the window `before`/`after` set.
    Which page showed it does not matter; a page that did not show it (a list filtered so the row is not on it, a
    sibling record, another tab) does not count. The fact is one of:

    - `fields`: a row of `table` matching `where` (as the row was when the page was rendered) was shown with every
      one of these columns; with `per`/`each`, such a row for each value of `each` in column `per`;
    - `listing: true`: a whole list of `table` whose filter covers `where` was shown, so the page showed every row
      matching `where` *or their absence* (reading state back after a timeout that may or may not have committed);
      with `fields`, every such row on it was shown with those columns (all of Priya's orders, with their dates);
    - `document`: the named static text (a policy, the escalation rules) was rendered (`shows(...)` in a template).

    `alternatives` are other facts that tell the agent the same (an order's status that only the credit sets, beside
    the list of its credits), each with why. `before` (`first-write` or a change selector) bounds the operation that
    showed it; `after` (a change selector, or the last operation a fault fired on) bounds the moment its data was
    current: a stale copy of an older page is as old as the page it copies.
    """

    kind: Literal["seen"] = "seen"
    name: str
    alternatives: list[OtherShownFact] = Field(default_factory=list)
    before: Literal["first-write"] | RowSelector | None = None
    after: RowSelector | FaultFired | None = None


class NotUsed(_Spec):
    """Required procedure: no request was served by these apps of the site (`SiteDefinition.apps`: every page and
    form of an app, sub-pages included), apart from the site's own redirect into a page of one after a request of
    another app (submitting the record form shows the new record)."""

    kind: Literal["not_used"] = "not_used"
    name: str
    apps: list[str] = Field(min_length=1)


ProcedureCheck = Annotated[ViaRoute | Ordered | Visited | Seen | NotUsed, Field(discriminator="kind")]

StepAction = ActionName
_TARGETED: frozenset[str] = frozenset({"click", "fill", "select", "check", "press", "hover"})


class ScriptedStep(_Spec):
    """One action of a scripted control, addressed by role and accessible name, never by id."""

    id: str | None = None
    action: StepAction
    role: str | None = None
    name: str | None = None
    text: str | None = None
    option: str | None = None
    checked: bool | None = None
    key: str | None = None
    url: str | None = None
    accept: bool | None = None
    """For a dialog step: true answers the page's dialog with OK (Leave), false with Cancel (Stay)."""
    success: bool | None = None
    message: str | None = None
    status: AnswerStatus | None = None
    reason: ReasonCode | None = None
    answer: dict[str, str | int | list[str]] | None = None

    @model_validator(mode="after")
    def _arguments_fit_the_action(self) -> ScriptedStep:
        needs: dict[str, tuple[str, ...]] = {
            "fill": ("text",), "select": ("option",), "press": ("key",), "navigate": ("url",),
            "dialog": ("accept",), "done": ("success",),
        }
        if self.action == "drag":
            raise ValueError("a scripted step cannot drag (a step names one control; no task needs it yet)")
        if self.action in _TARGETED and not (self.role and self.name is not None):
            raise ValueError(f"a {self.action} step needs role and name")
        for field in needs.get(self.action, ()):
            if getattr(self, field) is None:
                raise ValueError(f"a {self.action} step needs {field}")
        if self.action != "done" and (self.status or self.reason or self.answer is not None):
            raise ValueError("only a done step has status, reason or answer")
        if self.action == "done" and self.status is not None and (self.status == "success") != bool(self.success):
            raise ValueError(f"a done step with success={self.success} cannot have status {self.status}")
        return self


NegativeKind = Literal[
    "drop-step", "wrong-value", "unrelated-write", "duplicate-submission", "bypass-procedure",
    "wrong-answer", "wrong-claim",
]


class Variant(_Spec):
    """A variant of the scripted control, derived from it by dropping, replacing and inserting steps."""

    id: str
    description: str
    drop: list[str] = Field(default_factory=list)
    """Step ids of the scripted control to leave out."""
    replace: dict[str, list[ScriptedStep]] = Field(default_factory=dict)
    """Step id -> the steps that take its place."""
    insert_after: dict[str, list[ScriptedStep]] = Field(default_factory=dict)
    """Step id -> steps added right after it."""

    @model_validator(mode="after")
    def _changes_something(self) -> Variant:
        if not (self.drop or self.replace or self.insert_after):
            raise ValueError(f"variant {self.id!r} changes nothing (give drop, replace or insert_after)")
        return self

    def derive(self, control: list[ScriptedStep]) -> list[ScriptedStep]:
        """The step list of this variant, derived from the scripted control."""
        steps: list[ScriptedStep] = []
        for step in control:
            if step.id is not None and step.id in self.replace:
                steps.extend(self.replace[step.id])
            elif step.id is None or step.id not in self.drop:
                steps.append(step)
            if step.id is not None and step.id in self.insert_after:
                steps.extend(self.insert_after[step.id])
        return steps

    def named_steps(self) -> set[str]:
        return {*self.drop, *self.replace, *self.insert_after}


class NegativeControl(Variant):
    """A variant of the scripted control that the verifier must reject. It must run to its own final step
    (`tasks check` proves it did) unless `stops_at` names the step where it is expected to stop."""

    kind: NegativeKind
    rejected_as: Literal["state", "procedure_only", "forbidden_mutation"] | None = None
    """When given, `tasks check` also requires this false-completion category (e.g. a blind retry after an
    ambiguous timeout must be a *state* false completion: the effect is duplicated)."""
    stops_at: str | None = None
    """The id of the step at which the variant is expected to stop (its control is not offered, so it gives up
    there); the verdict must then still reject it."""


class EquivalentSolution(Variant):
    """Another way to do the task that the site offers and the verifier must accept; `description` says why it
    is equivalent. `tasks check` proves it runs to its end and is verified success."""


class EquivalentMutant(_Spec):
    """Mutants of `computerops tasks audit` that are truly equivalent to success, with the reason: `mutant` is a
    mutant id or a shell-style pattern of ids (`perturb:fill-reason:*`)."""

    mutant: str
    reason: str = Field(min_length=10)

    def matches(self, mutant_id: str) -> bool:
        return fnmatch.fnmatchcase(mutant_id, self.mutant)


def _params_fit_the_class(rule: FaultRule) -> FaultRule:
    fault_params(rule.fault, rule.params)
    return rule


TaskFault = Annotated[FaultRule, AfterValidator(_params_fit_the_class)]
"""A task's fault rule: its params are the keys its class takes, with values that read as the class says
(`sites.kit.fault_params`), so a misspelt key is refused at load instead of silently falling back."""


class Budgets(_Spec):
    """Per-task overrides of the run's bounds."""

    actions: int | None = Field(default=None, ge=1)
