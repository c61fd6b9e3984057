"""Where the engine's *now* comes from.

Only the engine reads a clock; every decision takes ``now`` as an argument. On PostgreSQL and
MariaDB the database server is the clock, so workers on hosts with skewed clocks agree on
what is due; on SQLite (one engine, one host) the local clock is the clock.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from django.db import connections


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


class SystemClock:
    """The local clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


_NOW_SQL = {
    "postgresql": "SELECT CURRENT_TIMESTAMP(6)",
    "mysql": "SELECT UTC_TIMESTAMP(6)",
}


class DatabaseClock:
    """The database server's clock: one cheap query per reading."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    def now(self) -> datetime:
        connection = connections[self.using]
        sql = _NOW_SQL.get(connection.vendor)
        if sql is None:
            return datetime.now(UTC)
        with connection.cursor() as cursor:
            cursor.execute(sql)
            (value,) = cursor.fetchone()
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def default_clock(using: str = "default") -> Clock:
    """The database clock where the server has one worth trusting over ours, else the local."""
    if connections[using].vendor in _NOW_SQL:
        return DatabaseClock(using)
    return SystemClock()
