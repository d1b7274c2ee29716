"""The toy site's seed data: three fixed items, the same for every seed (the task names item 2, the Blue mug)."""

from __future__ import annotations

import random

from sqlmodel import Session

from toy_site.models import Item

ITEMS = [(1, "Red cup", 12), (2, "Blue mug", 3), (3, "Green bowl", 5)]
"""(id, name, quantity)."""


def seed_toy(session: Session, rng: random.Random) -> None:
    """The fixed items; a site with filler would draw it from `rng` only, so that each seed is reproducible."""
    del rng  # nothing drawn: every seed holds the same three items
    for item_id, name, quantity in ITEMS:
        session.add(Item(id=item_id, name=name, quantity=quantity))
