"""MariaDB and MySQL: the server's clock and row locks; no notifications."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper

from . import bounds
from .base import Store


class MySQLStore(Store):
    vendor = "mysql"
    has_server_clock = True
    has_row_locks = True
    has_session_locks = True

    # The statement's start, in UTC whatever the session's time zone.
    now_sql: ClassVar[str | None] = "SELECT UTC_TIMESTAMP(6)"
    insert_ignore: ClassVar[str] = "INSERT IGNORE"

    # ER_LOCK_DEADLOCK: InnoDB rolled the whole transaction back to break a deadlock.
    DEADLOCK = 1213

    def lost_to_a_deadlock(self, error: DatabaseError) -> bool:
        return bool(error.args) and error.args[0] == self.DEADLOCK

    def token_of_id(self, id_column: str) -> str:
        return f"CONCAT(%s, {id_column})"

    def _autocommit(self, raw: Any) -> None:
        raw.autocommit(True)
        if bounds.active():
            bounds.keepalive_socket(raw.fileno())  # the session lock's connection

    def socket_options(self) -> dict[str, Any]:
        return {"connect_timeout": bounds.CONNECT_TIMEOUT}  # keepalives: ``limit_session``

    def driver_socket(self, raw: Any) -> int | None:
        return int(raw.fileno())

    def limit_session(self, connection: BaseDatabaseWrapper, limits: Any) -> None:
        """TCP keepalives on the socket (mysqlclient takes no option for them), then one
        statement: MariaDB's idle-transaction limit where the session has none, and its
        statement and lock-wait limits where they are looser. MySQL has neither of the
        first two: there only the lock wait is bounded."""
        raw = connection.connection
        if raw is None:
            return
        bounds.keepalive_socket(raw.fileno())
        assignments, params = [], []
        mariadb = bool(getattr(connection, "mysql_is_mariadb", False))
        if mariadb:
            assignments.append(
                "idle_transaction_timeout = IF(@@SESSION.idle_transaction_timeout = 0, %s, "
                "@@SESSION.idle_transaction_timeout)"
            )
            params.append(math.ceil(limits.idle_in_transaction))
            if limits.statement is not None:
                assignments.append(
                    "max_statement_time = IF(@@SESSION.max_statement_time = 0, %s, "
                    "LEAST(@@SESSION.max_statement_time, %s))"
                )
                params += [limits.statement, limits.statement]
        if limits.lock_wait is not None:
            assignments.append(
                "innodb_lock_wait_timeout = LEAST(@@SESSION.innodb_lock_wait_timeout, %s)"
            )
            params.append(math.ceil(limits.lock_wait))
        if assignments:
            with raw.cursor() as cursor:
                cursor.execute("SET SESSION " + ", ".join(assignments), params)

    @property
    def database(self) -> str:
        return str(self.connection.settings_dict["NAME"])

    def take_session_lock(self, raw: Any, name: str) -> bool:
        cursor = raw.cursor()
        try:
            cursor.execute("SELECT GET_LOCK(%s, 0)", [lock_name(name, self.database)])
            return cursor.fetchone()[0] == 1
        finally:
            cursor.close()

    def held_session_locks(self, names: Sequence[str]) -> set[str]:
        if not names:
            return set()
        columns = ", ".join(["IS_USED_LOCK(%s)"] * len(names))
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT {columns}", [lock_name(n, self.database) for n in names])
            owners = cursor.fetchone()
        return {name for name, owner in zip(names, owners, strict=True) if owner is not None}


def lock_name(name: str, database: str) -> str:
    """A user lock's name for ``name`` in ``database`` (user locks are server-wide): at most
    64 characters, as MariaDB requires."""
    key = f"{database}\0{name}".encode()
    return "cadence:" + hashlib.sha1(key, usedforsecurity=False).hexdigest()
