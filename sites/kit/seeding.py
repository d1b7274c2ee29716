"""A site's seeded data for one seed, written once: the tenant template's database and the rows a task template
draws its parameters from are the same seeding, so an instance's deciding record is the tenant's record."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from sqlalchemy import Engine, create_engine, select
from sqlalchemy.pool import StaticPool

from sites.kit.bookkeeping import BOOKKEEPING, normal_row
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
    """Every row the site's seeding for `seed` writes, by table (read-only; built in memory once per process and
    (site, seed), the few most recent kept)."""
    engine = create_engine("sqlite://", poolclass=StaticPool)
    try:
        seed_database(engine, site, seed)
        with engine.connect() as connection:
            tables = {
                table.name: tuple(normal_row(row) for row in connection.execute(
                    select(table).order_by(*table.primary_key.columns)).mappings())
                for table in site.metadata.sorted_tables
            }
    finally:
        engine.dispose()
    return MappingProxyType(tables)
