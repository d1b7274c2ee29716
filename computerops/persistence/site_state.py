"""The authoritative records of one tenant, read from another process: what a harness reads to write its ledgers
and to find out what an interrupted action did. Read-only (SQLite's `mode=ro`): the harness never writes the site."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, create_engine, func, select

from sites.kit.bookkeeping import operation_table
from sites.kit.ledgers import CompletedEffect, SiteLedgers, completed_effects, read_site_ledgers
from sites.kit.site import SiteDefinition


class SentRequest(BaseModel):
    """A request an action sent, as the site logged it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int
    method: str
    path: str
    query: str
    content_type: str | None
    body: str
    idempotency_key: str | None
    journal_rows: int
    status: int
    location: str | None


class SiteState:
    """One tenant's database, opened read-only."""

    def __init__(self, db_path: Path, site: SiteDefinition) -> None:
        if site.ledgers is None:
            raise ValueError(f"site {site.name} declares no ledgers: it has no persistence scenarios")
        self.site = site
        self.source = site.ledgers
        self.engine: Engine = create_engine(f"sqlite:///file:{db_path}?mode=ro&uri=true")

    def ledgers(self) -> tuple[SiteLedgers, int]:
        """The site's ledgers now, and the latest operation they include (read in one transaction)."""
        with self.engine.connect() as connection, connection.begin():
            last = connection.execute(select(func.coalesce(func.max(operation_table.c.seq), 0))).scalar_one()
            return read_site_ledgers(connection, self.site.metadata, self.source), int(last)

    def effects_of_action(self, number: int) -> list[CompletedEffect]:
        """The effects the requests of action `number` committed."""
        with self.engine.connect() as connection:
            return [e for e in completed_effects(connection, self.source) if e.action == number]

    def requests_of_action(self, number: int) -> list[SentRequest]:
        """Every request other than GET and HEAD that action `number` sent, in order."""
        table = operation_table
        query = (select(table.c.seq, table.c.method, table.c.path, table.c.query, table.c.content_type, table.c.body,
                        table.c.idempotency_key, table.c.journal_rows, table.c.status, table.c.location)
                 .where(table.c.action == number, table.c.method.not_in(("GET", "HEAD")))
                 .order_by(table.c.seq))
        with self.engine.connect() as connection:
            return [SentRequest.model_validate(dict(row)) for row in connection.execute(query).mappings()]

    def close(self) -> None:
        self.engine.dispose()
