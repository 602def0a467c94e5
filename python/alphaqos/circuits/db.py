"""The database: an engine with explicit transactions, migrated at start.

SQLite (the default) runs in WAL mode; every transaction begins with
``BEGIN IMMEDIATE``, which takes the database's write lock at once, so two
processes never both read a link's bookings and both book it (SQLite's
deferred ``BEGIN`` would let them, and fail one at commit). ``synchronous =
NORMAL`` in WAL mode loses no committed transaction when the process dies
(only on a power cut: SQLite's "WAL mode" documentation). PostgreSQL
transactions serialise admission by ``SELECT ... FOR UPDATE`` on the rows of
the links they book (see :mod:`.service`).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine

from .config import database_url

MIGRATIONS = Path(__file__).with_name("migrations")


def make_engine(url: str, *, immediate: bool = True) -> Engine:
    """An engine for ``url``; on SQLite, ``immediate=False`` gives one for
    reading, whose transactions begin deferred (a snapshot, no write lock)."""
    url = database_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False}, pool_size=8, max_overflow=8)

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection, _record):
            dbapi_connection.isolation_level = None  # the driver's own BEGIN off: ours below
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=60000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection):
            connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return engine
    return create_engine(url, pool_size=16, max_overflow=16, pool_pre_ping=True)


def is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (``migrations/versions``)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        if is_postgresql(engine):
            # Two instances starting together migrate one after the other.
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(2022001)")
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
