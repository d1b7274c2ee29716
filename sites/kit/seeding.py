"""A site's seeded data for one seed, written once: the tenant template's database and the rows a task template
draws its parameters from are the same seeding, so an instance's deciding record is the tenant's record."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from sites.kit.bookkeeping import BOOKKEEPING
from sites.kit.journal import seeding_session
from sites.kit.operation import template_rng
from sites.kit.records import Row

if TYPE_CHECKING:
    from sites.kit.site import SiteDefinition

SeededRows = Mapping[str, tuple[Row, ...]]
"""Table name -> its seeded rows (JSON-normal values keyed by column), in primary-key order."""


def seed_database(engine: Engine, site: SiteDefinition, seed: int) -> None:
    """Creates the site's tables (and the bookkeeping tables) on `engine` and fills them with the site's seeding for
    `seed`, unjournaled (seeded data is base data, not anything an agent did)."""
    site.metadata.create_all(engine)
    BOOKKEEPING.create_all(engine)
    with seeding_session(engine) as session:
        site.seed(session, template_rng(site.name, seed))
        session.commit()


@functools.lru_cache(maxsize=32)
def seeded_rows(site: SiteDefinition, seed: int) -> SeededRows:
    """Every row the site's seeding for `seed` writes, by table in primary-key order (read-only; the few most recent
    kept): the tenant template's rows, from the process's one seeding of (site, seed), which another process may have
    kept on disk (`sites.kit.tenancy.SEEDED`)."""
    from sites.kit.tenancy import SEEDED  # late: tenancy seeds with this module

    state = SEEDED.state(site, seed)
    return MappingProxyType({table.name: tuple(state[table.name]) for table in site.metadata.sorted_tables})
