"""The helpdesk's seed-dependent filler: a desk at realistic volume, drawn only from the seed's generator.

Some two hundred customers, about five hundred orders and five hundred and more tickets, numbered above every fixed
record (customers from id 45, orders from O-1095, tickets from T-2095), so that the fixed records the tasks name keep
their ids and numbers and stay on the first page of every list in its default order. Numbers follow time (an older
order has a lower number); dates spread over the six months before the logical clock's epoch; tickets older than
three weeks are mostly solved, recent ones mostly open or pending; most customers pay in one currency.

Look-alikes, so that finding the right record takes reading: for every fixed customer two filler customers whose
names differ from theirs by a letter or a suffix (Dana Reyes, Dana Reyez, Dana Reyes-Ortiz), each with an order of
about the same total in the same currency and a ticket with the same subject as the fixed customer's; and some
customers with two orders of nearly the same total a few days apart, each with a ticket of the same subject. Ticket
and order numbers that differ from a fixed one by one digit (T-2101 beside T-2001) come with the volume.

Words are hand-written lists drawn with the seeded generator (no Faker: its output changes between versions).
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session

from sites.helpdesk.models import Customer, Order, Ticket
from sites.kit.clock import EPOCH, format_time

FIRST_CUSTOMER_ID = 45
"""Above the approval scenarios' customers 40-44; orders and tickets take the same ids from here."""
FIRST_ORDER_NUMBER = 1095
FIRST_TICKET_NUMBER = 2095
SINCE = datetime(2025, 9, 1, 8, 0)
"""The desk's history starts here; the last order is placed a day before the clock's epoch."""

FIRST_NAMES = [
    "Ana", "Ben", "Chloé", "David", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Keiko", "Liam", "Maya",
    "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wen", "Yusuf", "Zoe", "Amara",
    "Bruno", "Carla", "Dmitri", "Emma", "Felix", "Hana", "Ivan", "Julia", "Kofi", "Lucía", "Marco", "Nadia",
    "Oscar", "Leila",
]
LAST_NAMES = [
    "Okafor", "Lindqvist", "Moreau", "Silva", "Kowalski", "Haddad", "Brennan", "Ito", "Novak", "Duarte", "Schmidt",
    "Andersen", "Rahman", "Costa", "Petrov", "Nakamura", "O'Brien", "García", "Müller", "Dubois", "Jensen", "Kaur",
    "Mwangi", "Romano", "Virtanen", "Yilmaz", "Walsh", "Park", "Ferreira", "Hughes", "Nowak", "Bianchi", "Adeyemi",
    "Horvat", "Larsen", "Singh", "Tanaka", "Vasquez", "Weber", "Zhou",
]
EMAIL_DOMAINS = ["example.com", "example.org", "example.net", "mail.example.com"]
LOOK_ALIKE_NAMES = {
    "Dana Reyes": ["Dana Reyez", "Dana Reyas", "Dana Reyes-Ortiz", "Diana Reyes"],
    "Priya Natarajan": ["Priya Natrajan", "Priya Nataraj", "Priya Natarajan-Iyer", "Priyah Natarajan"],
    "Tomás Herrera": ["Tomas Herrera", "Tomás Herrero", "Tomás Herrera Jr.", "Tomás Ferrera"],
    "Mei Chen": ["Mei Chan", "Mei Cheng", "Mai Chen", "Mei Chen-Liu"],
    "Lena Fischer": ["Lena Fisher", "Lina Fischer", "Lena Fischer-Braun", "Lena Fischler"],
    "Kwame Mensah": ["Kwame Mensa", "Kwami Mensah", "Kwame Mensah Jr.", "Kwame Menshah"],
    "Sofia Rossi": ["Sofia Rosso", "Sofía Rossi", "Sofia Rossini", "Sophia Rossi"],
    "Jonas Berg": ["Jonas Berger", "Jonas Borg", "Jonah Berg", "Jonas Bergh"],
    "Aiko Sato": ["Aiko Saito", "Aika Sato", "Aiko Satou", "Aiko Sato-Kim"],
}
"""Names a letter or a suffix away from each fixed customer's; two of each are drawn per seed."""

PRODUCTS = [
    "kettle", "blender", "desk lamp", "jacket", "side table", "office chair", "toaster", "headphones", "rain boots",
    "coffee grinder", "backpack", "bookshelf", "duvet cover", "frying pan", "wall clock", "yoga mat", "table lamp",
    "phone case", "water bottle", "winter coat", "espresso machine", "bath towels", "garden hose", "desk",
    "cutlery set", "floor rug", "travel mug", "bike helmet", "sofa cushion", "laptop stand",
]
ORDER_SUBJECTS = [
    ("Refund for damaged {product}", "The {product} from order {order} arrived damaged. I would like a refund."),
    ("{Product} arrived broken", "The {product} from order {order} was broken when I opened the box."),
    ("Where is my order?", "My order {order} shows as shipped but I have not received it yet."),
    ("Late delivery", "Order {order} is {days} days late. When will it arrive?"),
    ("Item missing from parcel", "The {product} was not in the parcel for order {order}."),
    ("Wrong item delivered", "I ordered a {product} (order {order}) and received something else."),
    ("Charged twice for one order", "My card was charged twice for order {order}."),
    ("Cancel my order", "Please cancel order {order} if it has not shipped yet."),
    ("Return label request", "Could you send me a return label for the {product} from order {order}?"),
    ("Question about warranty", "How long is the warranty on the {product} from order {order}?"),
    ("Invoice needed for order", "Please send an invoice for order {order} with my company's address."),
    ("Refund not received", "You confirmed a refund for order {order} but it has not reached my account."),
]
ACCOUNT_SUBJECTS = [
    ("Password reset", "I cannot log in; the password reset email never arrives."),
    ("Change delivery address", "Please deliver future orders to my new address."),
    ("Update billing details", "My card has expired; how do I add the new one?"),
    ("Invoice copy request", "Could you send me a copy of my last invoice for my records?"),
    ("Close my account", "Please close my account and delete my saved addresses."),
    ("Unsubscribe from newsletter", "I keep receiving the newsletter although I unsubscribed."),
    ("Login from a device I do not own", "I got a login alert from a device I do not own."),
]
PRICE_ENDINGS = [0, 0, 0, 50, 90, 95, 99]


@dataclass(frozen=True)
class Mimic:
    """What a look-alike copies from the fixed customer it resembles: their ticket's subject and body (`{order}` in
    the body stands for the look-alike's own order number), and the total and currency of that ticket's order."""

    subject: str
    body: str
    total_cents: int
    currency: str


@dataclass
class _Customer:
    id: int
    name: str
    home_currency: str
    mimic: Mimic | None = None
    twin: bool = False
    """Whether the customer has two orders of nearly the same total a few days apart."""
    orders: list[_Order] = field(default_factory=list)


@dataclass
class _Order:
    customer: _Customer
    total_cents: int
    currency: str
    placed: datetime
    product: str
    number: str = ""
    id: int = 0


@dataclass
class _Ticket:
    customer: _Customer
    order: _Order | None
    subject: str
    body: str
    opened: datetime
    updated: datetime


def _moment(rng: random.Random, start: datetime, end: datetime) -> datetime:
    """A time between `start` and `end`, on a quarter hour, in office hours (08:00-18:45)."""
    days = max(0, (end - start).days)
    day = (start + timedelta(days=rng.randint(0, days))).replace(hour=rng.randint(8, 18), minute=rng.choice(
        [0, 15, 30, 45]))
    return min(max(day, start), end)


def _price(rng: random.Random) -> int:
    """A shop price in cents: mostly under 100.00, some up to 400.00, ending like 49.90 or 129.00."""
    units = rng.randint(8, 99) if rng.random() < 0.7 else rng.randint(100, 400)
    ending = rng.choice(PRICE_ENDINGS)
    return units * 100 + ending if ending else units * 100


def _near(rng: random.Random, cents: int) -> int:
    """A total that reads almost like `cents`: the same, or one digit changed."""
    text = str(cents)
    if rng.random() < 0.3:
        return cents
    position = rng.randrange(len(text))
    digit = rng.choice([d for d in "0123456789" if d != text[position] and (position or d != "0")])
    return int(text[:position] + digit + text[position + 1:])


def _other(currency: str) -> str:
    return "USD" if currency == "EUR" else "EUR"


def _ascii(text: str) -> str:
    """A name part as an email address writes it: lower case, accents dropped, only letters, digits and hyphens."""
    plain = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in plain if ch.isascii() and (ch.isalnum() or ch == "-"))


def _customers(rng: random.Random, mimics: dict[str, Mimic]) -> list[_Customer]:
    """The filler customers in id order: plain names, and two look-alikes of each fixed customer among them."""
    names: list[tuple[str, Mimic | None]] = []
    for _ in range(rng.randint(190, 215)):
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        while name in mimics:  # a plain name never equals a fixed customer's: only look-alikes come close
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        names.append((name, None))
    for fixed, variants in LOOK_ALIKE_NAMES.items():
        names.extend((variant, mimics[fixed]) for variant in rng.sample(variants, 2))
    rng.shuffle(names)
    return [_Customer(id=FIRST_CUSTOMER_ID + index, name=name, mimic=mimic,
                      home_currency="EUR" if rng.random() < 0.6 else "USD")
            for index, (name, mimic) in enumerate(names)]


def _orders(rng: random.Random, customers: list[_Customer]) -> list[_Order]:
    """One to five orders per customer, a look-alike's first like the order of the customer it resembles; some
    customers get a second order of nearly the same total a few days after one of theirs."""
    last = EPOCH - timedelta(days=1)
    orders: list[_Order] = []
    for customer in customers:
        count = rng.choices([1, 2, 3, 4, 5], weights=[30, 30, 20, 12, 8])[0]
        for index in range(count):
            if index == 0 and customer.mimic is not None:
                total, currency = _near(rng, customer.mimic.total_cents), customer.mimic.currency
            else:
                total = _price(rng)
                currency = customer.home_currency if rng.random() < 0.9 else _other(customer.home_currency)
            order = _Order(customer, total, currency, _moment(rng, SINCE, last), rng.choice(PRODUCTS))
            customer.orders.append(order)
        if customer.mimic is None and rng.random() < 0.08:
            first = customer.orders[0]
            again = first.placed + timedelta(days=rng.randint(1, 4), hours=rng.randint(0, 5))
            customer.orders.append(_Order(customer, _near(rng, first.total_cents), first.currency,
                                          min(again, last), first.product))
            customer.twin = True
        orders.extend(customer.orders)
    orders.sort(key=lambda order: (order.placed, order.customer.id))
    for index, order in enumerate(orders):
        order.id = FIRST_CUSTOMER_ID + index
        order.number = f"O-{FIRST_ORDER_NUMBER + index}"
    return orders


def _ticket_about(rng: random.Random, order: _Order, subjects: list[tuple[str, str]] | None = None) -> _Ticket:
    subject, body = rng.choice(subjects or ORDER_SUBJECTS)
    opened = _moment(rng, order.placed + timedelta(days=1), order.placed + timedelta(days=rng.randint(2, 21)))
    return _ticket(rng, order.customer, order, subject, body, opened)


def _ticket(rng: random.Random, customer: _Customer, order: _Order | None, subject: str, body: str,
            opened: datetime) -> _Ticket:
    latest = EPOCH - timedelta(minutes=5)
    opened = min(opened, latest)
    updated = _moment(rng, opened, min(opened + timedelta(days=rng.randint(0, 4)), latest))
    words = {"product": order.product if order else "", "Product": (order.product if order else "").capitalize(),
             "order": order.number if order else "", "days": str(rng.randint(3, 9))}
    return _Ticket(customer, order, subject.format(**words), body.format(**words), opened, updated)


def _tickets(rng: random.Random, customers: list[_Customer], orders: list[_Order]) -> list[_Ticket]:
    """Tickets about orders and about accounts: a look-alike's like the fixed ticket it resembles; a customer with two
    nearly equal orders asks about each with the same subject."""
    tickets: list[_Ticket] = []
    for customer in customers:
        if customer.mimic is not None:
            order = customer.orders[0]
            opened = _moment(rng, order.placed + timedelta(days=1), order.placed + timedelta(days=10))
            tickets.append(_ticket(rng, customer, order, customer.mimic.subject, customer.mimic.body, opened))
        elif customer.twin:
            same = [rng.choice(ORDER_SUBJECTS)]
            tickets.extend(_ticket_about(rng, order, same) for order in (customer.orders[0], customer.orders[-1]))
    for _ in range(rng.randint(530, 570) - len(tickets)):
        if rng.random() < 0.85:
            tickets.append(_ticket_about(rng, rng.choice(orders)))
        else:
            customer = rng.choice(customers)
            about, text = rng.choice(ACCOUNT_SUBJECTS)
            tickets.append(_ticket(rng, customer, None, about, text, _moment(rng, SINCE, EPOCH)))
    tickets.sort(key=lambda ticket: (ticket.opened, ticket.customer.id))
    return tickets


def _status(rng: random.Random, ticket: _Ticket) -> str:
    """Old tickets are mostly solved; recent ones mostly open or pending."""
    if EPOCH - ticket.updated > timedelta(days=21):
        return rng.choices(["solved", "open", "pending"], weights=[85, 10, 5])[0]
    return rng.choices(["open", "pending", "solved"], weights=[50, 25, 25])[0]


def seed_filler(session: Session, rng: random.Random, mimics: dict[str, Mimic]) -> None:
    """Adds the filler customers, orders and tickets, drawn from `rng` only; `mimics` says what each fixed customer's
    look-alikes copy (keyed by the fixed customer's name)."""
    customers = _customers(rng, mimics)
    orders = _orders(rng, customers)
    tickets = _tickets(rng, customers, orders)
    emails: set[str] = set()
    customer_rows: list[dict[str, Any]] = []
    for customer in customers:
        first, _, last = customer.name.partition(" ")
        local = f"{_ascii(first)}.{_ascii(last.replace(' ', '-'))}"
        email = f"{local}@{rng.choice(EMAIL_DOMAINS)}"
        while email in emails:
            email = f"{local}{rng.randint(2, 99)}@{rng.choice(EMAIL_DOMAINS)}"
        emails.add(email)
        customer_rows.append({"id": customer.id, "name": customer.name, "email": email,
                              "tier": "premium" if rng.random() < 0.2 else "standard"})
    order_rows = [{"id": order.id, "number": order.number, "customer_id": order.customer.id,
                   "total_cents": order.total_cents, "currency": order.currency, "status": "delivered",
                   "placed_at": format_time(order.placed)} for order in orders]
    ticket_rows = [{"id": FIRST_CUSTOMER_ID + index, "number": f"T-{FIRST_TICKET_NUMBER + index}",
                    "customer_id": ticket.customer.id, "order_id": ticket.order.id if ticket.order else None,
                    "subject": ticket.subject, "body": ticket.body, "status": _status(rng, ticket),
                    "priority": rng.choices(["low", "normal", "high"], weights=[25, 60, 15])[0],
                    "updated_at": format_time(ticket.updated)} for index, ticket in enumerate(tickets)]
    # Bulk inserts: one statement per table keeps the template build fast at this volume.
    session.execute(insert(Customer), customer_rows)
    session.execute(insert(Order), order_rows)
    session.execute(insert(Ticket), ticket_rows)
