"""The settings each fault class takes (a rule's `params`), typed per class; `docs/faults.md` says what they do.

A task writes params as text (`{retry_after: "2"}`), and the text is what the rule hands on to its decisions and
what the operation log records. These models say which keys a class takes and what their values must read as, so
a misspelt or misplaced key is an error when the task loads instead of a setting that silently falls back to its
default. `sites/kit/injection.py` (and the sites that carry out a class) read the values; the defaults here are
theirs (`tests/test_task_schema_checks.py` holds the two together).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from computerops.core.numbers import whole_number
from sites.kit.faults import FaultClass


def _whole(value: object) -> object:
    if isinstance(value, str):
        number = whole_number(value)
        if number is None:
            raise ValueError(f"{value!r} is not a whole number in ASCII digits")
        return number
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole)]
"""A whole number written in ASCII digits, as `computerops.core.numbers` reads them."""
SitePath = Annotated[str, Field(pattern=r"^/\S*$")]
"""A path on the server, such as `/inventory/`."""
Name = Annotated[str, Field(min_length=1, pattern=r"^\S(.*\S)?$")]
"""A non-empty name or text without leading or trailing space."""


class FaultParams(BaseModel):
    """The params of one fault class; the base class takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PartialSuccessParams(FaultParams):
    commit: WholeNumber = Field(default=1, ge=1)
    """How many items of the batch the site commits before it answers an error page."""


class ThrottlingParams(FaultParams):
    retry_after: WholeNumber = Field(default=1, ge=0)
    """The seconds the 429 page and its `Retry-After` header ask to wait."""


class MovedEndpointParams(FaultParams):
    fallback: SitePath | None = None
    """Where the 410 page links to; by default the site's start page."""


class SchemaDriftParams(FaultParams):
    field: Name
    """The form field's name before the drift."""
    renamed_to: Name
    """Its name from the drift on."""
    label: Name | None = None
    """The field's label text before the drift; with `new_label`, the text pages show instead."""
    new_label: Name | None = None

    @model_validator(mode="after")
    def _a_real_rename(self) -> SchemaDriftParams:
        if self.field == self.renamed_to:
            raise ValueError(f"renamed_to {self.renamed_to!r} is the field's own name")
        if (self.label is None) != (self.new_label is None):
            raise ValueError("label and new_label go together: give both or neither")
        return self


class DeliveryParams(FaultParams):
    """The queued item delivered twice or late: one of the keys, the one the site's queue reads. Without one the
    rule names no item, and the queue is delivered as it is."""

    event: Name | None = None
    """An event number in the ledger's response queue (`EV-502`)."""
    message: Name | None = None
    """A message id in the webmail inbox (`5`)."""

    @model_validator(mode="after")
    def _one_item(self) -> DeliveryParams:
        if self.event is not None and self.message is not None:
            raise ValueError("name one queued item: event (the ledger's queue) or message (the webmail inbox)")
        return self


PARAMS_BY_CLASS: Mapping[FaultClass, type[FaultParams]] = {
    "partial_success": PartialSuccessParams,
    "false_success": FaultParams,
    "ambiguous_after_commit": FaultParams,
    "ambiguous_without_commit": FaultParams,
    "duplicate_delivery": DeliveryParams,
    "out_of_order": DeliveryParams,
    "schema_drift": SchemaDriftParams,
    "moved_endpoint": MovedEndpointParams,
    "transient_5xx": FaultParams,
    "throttling": ThrottlingParams,
    "stale_read": FaultParams,
    "session_expiry": FaultParams,
    "spurious_validation": FaultParams,
    "version_conflict": FaultParams,
    "missing_resource": FaultParams,
    "recovery_loop_trap": FaultParams,  # its phase (unavailable, missing) is the injector's, never the task's
}
"""Every fault class's params model."""


def _problem(error: ErrorDetails, takes: list[str]) -> str:
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(where, takes, n=1)
        return f"unknown key {where!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    if error["type"] == "missing":
        return f"{where!r} is required"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def fault_params(fault: FaultClass, params: Mapping[str, str]) -> FaultParams:
    """The typed params of a rule of class `fault`; ValueError naming the class, each wrong key and what the class
    takes, when they do not fit."""
    model = PARAMS_BY_CLASS[fault]
    try:
        return model.model_validate(dict(params))
    except ValidationError as exc:
        takes = list(model.model_fields)
        errors = sorted(exc.errors(), key=lambda error: error["type"] != "extra_forbidden")  # misspellings first
        problems = "; ".join(_problem(error, takes) for error in errors)
        offered = ", ".join(takes) if takes else "no params"
        raise ValueError(f"{fault} params: {problems}; {fault} takes {offered}") from None
