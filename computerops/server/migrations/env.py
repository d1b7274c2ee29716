"""alembic's environment for the run index: migrates the connection `RunIndex` passes (`attributes["connection"]`),
or, run by hand, the database named by the configuration's `sqlalchemy.url`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from computerops.server.index import Base

TARGET = Base.metadata


def migrate(connection: Connection) -> None:
    # render_as_batch: SQLite alters a table by copying it, which later migrations need; PostgreSQL ignores it.
    context.configure(connection=connection, target_metadata=TARGET, compare_type=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    config = context.config
    if context.is_offline_mode():
        context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=TARGET,
                          literal_binds=True, compare_type=True, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    given = config.attributes.get("connection")
    if isinstance(given, Connection):
        migrate(given)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no connection to migrate: pass one in attributes['connection'] or set sqlalchemy.url")
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            migrate(connection)
    finally:
        engine.dispose()


run()
