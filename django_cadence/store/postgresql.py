"""PostgreSQL: the server's clock, ``LISTEN``/``NOTIFY`` wake-ups, arrays for batches, and
psycopg's native ``timestamptz`` loader on the engine's own connection."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from django.db import DatabaseError, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from ..exceptions import UnsupportedConnection
from ..executors.log_text import log_value
from . import bounds, identity_guard, pooling
from .base import Store

logger = logging.getLogger("django_cadence.wakeup")

CHANNEL = "django_cadence"


class PostgreSQLStore(Store):
    vendor = "postgresql"
    has_server_clock = True
    has_notifications = True
    has_row_locks = True
    has_session_locks = True
    has_identity_trigger = True  # the table's owner may create it

    # The time at the moment of the query: CURRENT_TIMESTAMP is the transaction's start, and
    # an atomic job's commit reads the clock late in its transaction.
    now_sql: ClassVar[str | None] = "SELECT clock_timestamp()"
    # The ready attempts are counted from statistics that predate a burst: a thousand
    # one-shots planned at one instant, or a backlog after an outage, look like a handful of
    # rows, and the planner then reads, joins and sorts every ready attempt to lock the first
    # dozen. With sorting off for the claim's transaction the ready index's order is read and
    # the read stops at the window. (MariaDB already reads that index in order.)
    claim_setup_sql: ClassVar[str] = "SET LOCAL enable_sort = off"
    insert_ignore: ClassVar[str] = "INSERT"

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """One array parameter, whatever the number of values."""
        if all(type(v) is int for v in values):
            return f"{column} = ANY(%s::bigint[])", [array_literal(values)]
        return f"{column} = ANY(%s)", [list(values)]

    # deadlock_detected, serialization_failure: the transaction was rolled back whole.
    DEADLOCK_STATES = frozenset({"40P01", "40001"})

    def lost_to_a_deadlock(self, error: DatabaseError) -> bool:
        return getattr(error.__cause__, "sqlstate", None) in self.DEADLOCK_STATES

    def token_of_id(self, id_column: str) -> str:
        return f"(%s || {id_column}::text)"

    def json_value(self, sql: str) -> str:
        return f"CAST({sql} AS jsonb)"

    def insert_rows(
        self,
        table: str,
        fields: Sequence[Any],
        columns: Sequence[str],
        values: Sequence[tuple[Any, ...]],
        defaults: Sequence[str],
    ) -> None:
        """One array per column that varies, unnested into rows, and one parameter per column
        that holds the same value in every row. The statement's text depends only on which
        columns vary, not on the batch size: a ``VALUES`` list with a placeholder per value
        is new text for every batch, and the driver splits and quotes every placeholder."""
        connection = self.connection
        selected, arrays, names, params, array_params = [], [], [], [], []
        by_column = zip(fields, zip(*values, strict=True), strict=True)
        for i, (field, column_values) in enumerate(by_column):
            is_json = field.name == "outcome"
            sql_type = "text" if is_json else field.db_type(connection)
            first = column_values[0]
            if all(v == first for v in column_values):
                expression = f"%s::{sql_type}"
                params.append(first)
            else:
                name = f"c{i}"
                names.append(name)
                arrays.append(f"%s::{sql_type}[]")
                literal = sql_type in ("bigint", "integer", "timestamp with time zone")
                array_params.append(
                    array_literal(column_values) if literal else list(column_values)
                )
                expression = name
            selected.append(self.json_value(expression) if is_json else expression)
        source = (
            f"FROM unnest({', '.join(arrays)}) AS planned({', '.join(names)}) " if arrays else ""
        )
        sql = (
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"SELECT {', '.join(selected + list(defaults))} "
            f"{source}ON CONFLICT DO NOTHING"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params + array_params)  # the SELECT's scalars, then the arrays

    def identity_trigger_sql(self, table: str) -> list[str]:
        name = identity_guard.NAME
        checks = "".join(
            f'IF NEW."{c}" IS DISTINCT FROM OLD."{c}" THEN RAISE EXCEPTION USING ERRCODE = '
            f"'integrity_constraint_violation', MESSAGE = '{identity_guard.message(table, c)}'; "
            "END IF; "
            for c in identity_guard.COLUMNS
        )
        columns = ", ".join(f'"{c}"' for c in identity_guard.COLUMNS)
        function = (
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {checks}RETURN NEW; END $$"
        )
        # "UPDATE OF": the engine's writes, which never name these columns, skip it entirely.
        trigger = (
            f'CREATE TRIGGER {name} BEFORE UPDATE OF {columns} ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION {name}()"
        )
        return [function, trigger]

    def drop_identity_trigger_sql(self, table: str) -> list[str]:
        name = identity_guard.NAME
        return [f'DROP TRIGGER IF EXISTS {name} ON "{table}"', f"DROP FUNCTION IF EXISTS {name}()"]

    def notify_change(self) -> None:
        connection = self.connection

        def send() -> None:
            with contextlib.suppress(Exception), connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, '')", [CHANNEL])

        transaction.on_commit(send, using=self.using)

    def start_listener(self, wake: Callable[[], None]) -> NotificationListener | None:
        if self.transaction_pooled():
            logger.info(
                "wake-ups: no LISTEN through a transaction-pooling proxy (database %s): "
                "changes made elsewhere are seen within the maximum tick (--max-tick)",
                log_value(self.using),
            )
            return None
        listener = NotificationListener(wake, self.using)
        listener.start()
        return listener

    def transaction_pooled(self) -> bool:
        return self._pooling() is not pooling.Pooling.NONE

    def check_connections(self, concurrency: int) -> None:
        settings = self.connection.settings_dict
        where = f"the database {self.using!r}"
        if settings.get("HOST"):
            where += f" at {settings['HOST']}:{settings.get('PORT') or 5432}"
        why = pooling.refusal(self._pooling(), where) or pooling.pool_refusal(
            self.connection, concurrency
        )
        if why:
            raise UnsupportedConnection(why)

    def outside_pool(self) -> None:
        pooling.use_no_pool(self.connection)

    def _pooling(self) -> pooling.Pooling:
        # Fresh sessions, not ``open_session``: what that sets up may itself ask this.
        with self.connection.wrap_database_errors:
            return pooling.found(self.connection, self._session_in_autocommit)

    def _session_in_autocommit(self) -> Any:
        raw = self._new_session()
        self._autocommit(raw)
        return raw

    def _new_session(self) -> Any:
        """Opened directly, never drawn from Django's pool: a pool's connection goes back
        to it, to another thread, with whatever its session holds (a session lock)."""
        connection = self.connection
        driver = connection.Database  # type: ignore[attr-defined]  # psycopg or psycopg2
        with connection.wrap_database_errors:
            return driver.connect(**connection.get_connection_params())

    def set_up_engine_session(self) -> None:
        use_native_loader(self.connection)
        super().set_up_engine_session()

    def socket_options(self) -> dict[str, Any]:
        # libpq's own parameters: the listener and the session lock's connection take them too.
        return {
            "connect_timeout": bounds.CONNECT_TIMEOUT,
            "keepalives": 1,
            "keepalives_idle": bounds.KEEPALIVE_IDLE,
            "keepalives_interval": bounds.KEEPALIVE_INTERVAL,
            "keepalives_count": bounds.KEEPALIVE_COUNT,
            "tcp_user_timeout": bounds.TCP_USER_TIMEOUT * 1000,
        }

    def driver_socket(self, raw: Any) -> int | None:
        pgconn = getattr(raw, "pgconn", None)  # psycopg 3; psycopg2 has fileno()
        return int(pgconn.socket if pgconn is not None else raw.fileno())

    def limit_session(self, connection: BaseDatabaseWrapper, limits: Any) -> None:
        """One statement: each limit set where the session has none (0), and the statement
        and lock-wait limits where theirs is looser too (``pg_settings`` shows them in ms)."""
        if not self.session_state_is_private or connection.connection is None:
            return
        wanted = [("idle_in_transaction_session_timeout", limits.idle_in_transaction, False)]
        if limits.statement is not None:
            wanted.append(("statement_timeout", limits.statement, True))
        if limits.lock_wait is not None:
            wanted.append(("lock_timeout", limits.lock_wait, True))
        rows = ", ".join(["(%s, %s::bigint, %s::boolean)"] * len(wanted))
        params = [v for name, s, tighter in wanted for v in (name, bounds.milliseconds(s), tighter)]
        sql = (  # the VALUES rows are placeholders only
            "SELECT set_config(s.name, CASE WHEN s.setting = '0' OR (v.tighter AND "  # noqa: S608
            "s.setting::bigint > v.ms) THEN v.ms::text ELSE s.setting END, false) "
            f"FROM pg_settings s JOIN (VALUES {rows}) AS v(name, ms, tighter) "
            "ON s.name = v.name"
        )
        with connection.connection.cursor() as cursor:
            cursor.execute(sql, params)

    def take_session_lock(self, raw: Any, name: str) -> bool:
        with raw.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, lock_key(name)])
            return bool(cursor.fetchone()[0])

    def held_session_locks(self, names: Sequence[str]) -> set[str]:
        if not names:
            return set()
        keys = {lock_key(name): name for name in names}
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' "
                "AND classid = %s::bigint::oid AND objsubid = 2 AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                [LOCK_CLASS],
            )
            held = {row[0] for row in cursor.fetchall()}
        return {name for key, name in keys.items() if key in held}


# Advisory locks of the two-key form: this constant names django-cadence's class of locks, so
# they never meet an application's own; the second key is the worker's name, hashed. Both
# are non-negative int4s, which pg_locks shows unchanged as oids.
LOCK_CLASS = 0x43444E43


def lock_key(name: str) -> int:
    """The advisory-lock key of ``name``: 31 bits of its SHA-256. Two names that share a key
    make a dead worker look alive, which leaves its attempts to their leases: safe."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") & 0x7FFFFFFF


def array_literal(values: Sequence[int | datetime | None]) -> str:
    """A PostgreSQL array of integers or instants, as the text of its literal.

    The driver quotes a list element by element, escaping each, which costs more CPU than
    the database spends on a planned batch. Integers and ISO 8601 instants hold no character
    an array literal must escape (no quote, comma, brace, backslash or space), so their text
    is joined as it is and the driver quotes one string; a cast gives the array its type.
    """
    return "{%s}" % ",".join(  # noqa: UP031 - braces are the literal's own
        "NULL" if v is None else v.isoformat() if isinstance(v, datetime) else str(int(v))
        for v in values
    )


class NotificationListener(threading.Thread):
    """A daemon thread holding its own connection in ``LISTEN``; calls ``wake`` per notice.

    A schedule saved or run now by another process would otherwise wait for the engine's
    next tick (at most ``--max-tick``).
    """

    def __init__(self, wake: Callable[[], None], using: str) -> None:
        super().__init__(name="cadence-listener", daemon=True)
        self.wake = wake
        self.using = using
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        delay = 0.5
        while not self.stopping.is_set():
            try:
                self._listen()
                delay = 0.5
            except Exception as exc:  # noqa: BLE001 - the listener only speeds wake-ups up
                logger.warning("listener reconnecting in %.1f s: %s", delay, log_value(exc))
                self.wake()  # something may have changed while we were away
                self.stopping.wait(delay)
                delay = min(delay * 2, 10.0)

    def _listen(self) -> None:
        import psycopg
        from django.db import connections

        params = connections[self.using].get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        with psycopg.connect(**params, autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            while not self.stopping.is_set():
                for _ in conn.notifies(timeout=1.0, stop_after=1):
                    self.wake()


# --- psycopg's native timestamptz loader on the engine's connection ---------------------------
#
# PostgreSQL: the engine's own connection reads ``timestamptz`` with psycopg's native loader.
#
# Django reads every ``timestamptz`` value through a loader of its own, written in Python, so
# that it can attach the connection's time zone, several times slower than psycopg's own
# loader compiled with ``psycopg[binary]``. The engine reads several per schedule it plans and
# one per try it claims, all on the one thread that plans and claims.
#
# The two loaders return the same value whenever the session's time zone is UTC and Django
# wants aware UTC datetimes (``USE_TZ = True`` and no ``TIME_ZONE`` on the database): Django
# sets the session's time zone to its own, and psycopg then attaches ``datetime.timezone.utc``
# exactly as Django's loader does. Any other setup keeps Django's loader. Only the engine's
# connection is changed, never the connections jobs use.


def use_native_loader(connection: BaseDatabaseWrapper) -> bool:
    """Read ``timestamptz`` on ``connection``'s open session with psycopg's own loader, when
    that gives the values Django's loader would; returns whether it does."""
    raw = connection.connection
    if raw is None or connection.timezone is not UTC:
        return False
    try:
        import psycopg
        from psycopg.pq import Format
    except ImportError:  # psycopg2: Django's loader is not in the way there
        return False
    if not isinstance(raw, psycopg.Connection):
        return False
    if raw.info.parameter_status("TimeZone") != "UTC":
        return False
    oid = psycopg.postgres.types["timestamptz"].oid
    native = psycopg.adapters.get_loader(oid, Format.TEXT)
    if native is None:
        return False
    raw.adapters.register_loader(oid, _utc_loader(psycopg.adapt.Loader, native))
    return True


def _utc_loader(base: Any, native: Any) -> type:
    """A loader that hands each value to ``native``. Django looks for a ``timezone`` on the
    connection's loader before each cursor and installs its own when it differs; the
    compiled loader cannot be subclassed to carry one, so it is wrapped."""

    class NativeUTCLoader(base):  # type: ignore[misc]  # psycopg's Loader, imported late
        timezone = UTC

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._load = native(oid, context).load

        def load(self, data: Any) -> Any:
            return self._load(data)

    return NativeUTCLoader
