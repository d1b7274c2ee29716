"""The invoices site's routes a grant governs (sites/kit/broker.py): what each request asks the broker for.

Governed: sending email (`send` of an `email`: a message that leaves the company), and correcting a payable record
(`change` of a `payable`) when the correction would change who is paid or how much: its vendor, currency or total.

Left ungoverned: submitting a new payable record (the clerk's transcription of an invoice, the tasks' own work:
it pays nobody, and the verifier checks it against the invoice), and a correction that changes only the invoice
number or date (a transcription fix that redirects no money).
"""

from __future__ import annotations

import re

from sites.invoices.models import Payable
from sites.invoices.pages import PREFIX
from sites.kit.broker import BrokerRequest
from sites.kit.governed import FormFields, GovernedRoute, Lookup
from sites.kit.money import parse_cents

PAYMENT_FIELDS = ("vendor", "currency", "total_cents")
"""The columns of a payable that decide who is paid and how much: what a `change` grant names."""


def send_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest:
    """A new email to the recipient the compose form posts (stripped, as the handler stores it)."""
    return BrokerRequest(capability="send", table="email", recipients=[form.get("recipient", "").strip()])


def payment_fields_changed(payable: Payable, form: FormFields) -> dict[str, str | None]:
    """Which of `PAYMENT_FIELDS` the correction form would change, and to what (as the record stores it), read as
    the record form's rules read them (a total that is not an amount counts as changed, to a value not known)."""
    proposed = {"vendor": form.get("vendor", "").strip(), "currency": form.get("currency", ""),
                "total_cents": parse_cents(form.get("total", ""))}
    return {name: None if proposed[name] is None else str(proposed[name])
            for name in PAYMENT_FIELDS if proposed[name] is None or proposed[name] != getattr(payable, name)}


def correction_request(match: re.Match[str], form: FormFields, lookup: Lookup) -> BrokerRequest | None:
    """A change of the payable record of the path, naming the payment fields it would change and the values it
    writes (where known); None when it
    changes none of them (or the record does not exist: the handler answers 404 and changes nothing)."""
    payable = lookup(Payable, reference=match["reference"])
    if payable is None:
        return None
    fields = payment_fields_changed(payable, form)
    if not fields:
        return None
    return BrokerRequest(capability="change", table="payable", object=payable.id, fields=list(fields),
                         values={name: value for name, value in fields.items() if value is not None})


GOVERNED = (
    GovernedRoute(method="POST", path=rf"{PREFIX}/email", extract=send_request),
    GovernedRoute(method="POST", path=rf"{PREFIX}/records/(?P<reference>[^/]+)", extract=correction_request),
)
"""Every message the site sends, and every correction that redirects or resizes a payment."""
