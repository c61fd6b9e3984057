"""MariaDB and MySQL: the server's clock and row locks; no notifications."""

from __future__ import annotations

from typing import ClassVar

from .base import Store


class MySQLStore(Store):
    vendor = "mysql"
    has_server_clock = True
    has_row_locks = True

    # The statement's start, in UTC whatever the session's time zone.
    now_sql: ClassVar[str | None] = "SELECT UTC_TIMESTAMP(6)"
    insert_ignore: ClassVar[str] = "INSERT IGNORE"

    def token_of_id(self, id_column: str) -> str:
        return f"CONCAT(%s, {id_column})"
