"""The write path's SQL on the driver's own connection (sqlite3 or psycopg 3),
without SQLAlchemy's execution layer.

A reserve is a handful of short statements (the links' versions, the
reservation, its bookings, the versions bumped, the log, the event); run
through SQLAlchemy Core their execution cost more than SQLite running them
(profiled in docs/circuits.md, "Tests and figures"). Here each statement is
a fixed text in qmark style (``?``), turned into psycopg's ``%s`` once; the
drivers keep them prepared: sqlite3 caches the compiled statements of a
connection (``cached_statements``, 128), psycopg 3 prepares a statement on
the server after its fifth execution (``prepare_threshold``).

SQLAlchemy stays for the schema (Alembic), the engine and its pool, and the
cold paths (lists, admin routes); a :class:`Raw` also wraps the driver
connection under a SQLAlchemy session, so that both share one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

_PG_SQL: dict[str, str] = {}


def placeholders(n: int) -> str:
    """``?, ?, ?`` for an ``IN (...)`` of ``n`` values."""
    return ", ".join("?" * n)


class Raw:
    """A DBAPI connection (``sqlite3.Connection`` or ``psycopg.Connection``)
    with qmark-style SQL."""

    __slots__ = ("conn", "postgresql")

    def __init__(self, conn: Any, postgresql: bool) -> None:
        self.conn, self.postgresql = conn, postgresql

    def _sql(self, text: str) -> str:
        if not self.postgresql:
            return text
        sql = _PG_SQL.get(text)
        if sql is None:
            sql = _PG_SQL[text] = text.replace("%", "%%").replace("?", "%s")
        return sql

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        cursor = self.conn.cursor()
        cursor.execute(self._sql(text), params)
        return cursor

    def rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.execute(text, params).fetchall()

    def one(self, text: str, params: Sequence[Any] = ()) -> tuple | None:
        return self.execute(text, params).fetchone()

    def executemany(self, text: str, params: Iterable[Sequence[Any]]) -> None:
        self.conn.cursor().executemany(self._sql(text), list(params))

    def begin(self) -> None:
        """SQLite: take the database's write lock now (``BEGIN IMMEDIATE``);
        psycopg begins a transaction by itself at the first statement."""
        if not self.postgresql:
            self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        if self.postgresql:
            self.conn.commit()
        else:
            self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.postgresql:
            self.conn.rollback()
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
