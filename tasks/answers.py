"""The vocabulary of final answers, defined once: statuses, refusal reasons and answer field types.

`done` carries, besides its free-text message (for people, never scored), a status from `STATUSES`,
for a refusal a reason code from `REASONS`, and for a read-and-answer task the task's typed answer
fields. The model is shown every status and every reason code on every task, so the shape of `done`
never tells it whether a task is feasible; the task's answer check names which of them are right.
"""

from __future__ import annotations

from typing import Literal, get_args

AnswerStatus = Literal["success", "not_found", "not_allowed", "permission_denied", "invalid_data", "failed"]
STATUSES: dict[AnswerStatus, str] = {
    "success": "the task is complete as asked",
    "not_found": "what the task names does not exist on the site",
    "not_allowed": "the site's rules or policies do not allow what the task asks",
    "permission_denied": "you lack the rights to do it",
    "invalid_data": "the task's data is invalid or contradicts the site's records",
    "failed": "you could not complete the task for another reason",
}
"""Every status `done` may carry (as WebArena-Verified's closed set), with what the model is told it means."""
REFUSAL_STATUSES: frozenset[AnswerStatus] = frozenset({"not_found", "not_allowed", "permission_denied",
                                                        "invalid_data"})
"""The statuses that say the task must not or cannot be done (each needs a reason code)."""

ReasonCode = Literal[
    "already-done", "policy-forbids", "approval-invalid", "needs-someone-else", "value-not-accepted",
    "beyond-a-limit", "blocked-by-dependency", "not-found", "other",
]
REASONS: dict[ReasonCode, str] = {
    "already-done": "what the task asks for was already done (already paid, delivered or processed)",
    "policy-forbids": "a written policy of the site forbids it",
    "approval-invalid": "a required approval is missing, expired, or not valid for it",
    "needs-someone-else": "only another person or team may do it (for example a reviewer)",
    "value-not-accepted": "the site does not accept a value the task requires (for example a currency)",
    "beyond-a-limit": "it would take a quantity or amount past a limit the site enforces (for example below zero)",
    "blocked-by-dependency": "it depends on something that is not done or cannot be done (held, open, pending)",
    "not-found": "what the task names does not exist",
    "other": "another reason (say it in the message)",
}
"""The reason codes a refusal may give, the same on every task, with what the model is told each means."""

AnswerType = Literal["money", "date", "id", "id_list", "integer", "text"]
ANSWER_TYPES: tuple[AnswerType, ...] = get_args(AnswerType)
JsonShape = Literal["string", "integer", "string_list"]
SHAPES: dict[AnswerType, JsonShape] = {
    "money": "string", "date": "string", "id": "string", "text": "string", "integer": "integer",
    "id_list": "string_list",
}
"""How each answer type travels in `done`'s JSON arguments."""
FORMATS: dict[AnswerType, str] = {
    "money": "an amount with its currency, e.g. \"1,234.50 EUR\"",
    "date": "a calendar date, e.g. \"2031-12-24\"",
    "id": "an identifier exactly as the site writes it, e.g. \"AB-123\"",
    "id_list": "a list of identifiers exactly as the site writes them",
    "integer": "a whole number",
    "text": "a short text as the site writes it, e.g. a name",
}
"""What the model is told about each answer type (beside the task's own description of the field)."""

assert set(STATUSES) == set(get_args(AnswerStatus)) and set(REASONS) == set(get_args(ReasonCode))
assert set(SHAPES) == set(ANSWER_TYPES) == set(FORMATS)
