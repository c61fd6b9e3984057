"""What the engine asks of a database, and the SQL that differs from one database to another.

In the spirit of Django's ``DatabaseFeatures`` and ``DatabaseOperations``: a store says what
its database can do (the ``has_*`` features) and spells the statements that differ. There is
one subclass per vendor, chosen by :func:`django_cadence.store.of`; code outside this folder
asks the store, never ``connection.vendor``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper


class EngineLock(Protocol):
    """Held by a running engine for its whole life (see ``Store.engine_lock``)."""

    def acquire(self) -> None: ...

    def release(self) -> None: ...


class NoEngineLock:
    """The lock of a database that lets many engines share it: nothing to hold."""

    def acquire(self) -> None:
        return None

    def release(self) -> None:
        return None


class Listener(Protocol):
    """A thread that wakes its engine when another process changes what is due."""

    def stop(self) -> None: ...


class Store:
    """A database as the engine sees it. The defaults are SQL that every backend accepts."""

    vendor: ClassVar[str] = ""
    #: The engine's *now* is the server's, so hosts with skewed clocks agree (invariant 6).
    has_server_clock: ClassVar[bool] = False
    #: A committed change can wake every engine at once instead of at its next tick.
    has_notifications: ClassVar[bool] = False
    #: ``SELECT ... FOR UPDATE SKIP LOCKED`` lets many engines share the database.
    has_row_locks: ClassVar[bool] = False
    #: Without row locks, a second engine on the same database must refuse to start.
    one_engine_per_file: ClassVar[bool] = False
    #: A lock held by a session is freed by the server the moment the session ends.
    has_session_locks: ClassVar[bool] = False
    #: Another connection can commit while one holds an open write transaction.
    has_concurrent_writes: ClassVar[bool] = True
    # Try threads per worker unless CADENCE_CONCURRENCY says otherwise (docs/design.md, "The
    # engine"): enough to keep one interpreter busy with short tries that wait on commits.
    default_concurrency: ClassVar[int] = 8
    #: The migrating user may create a trigger that refuses raw SQL changing an attempt's
    #: identity (invariant 7). Not MariaDB/MySQL: with binary logging on (every managed
    #: service) creating one needs ``SUPER`` or ``log_bin_trust_function_creators``.
    has_identity_trigger: ClassVar[bool] = False

    #: The server's time at the moment of the query, even inside a transaction.
    now_sql: ClassVar[str | None] = None
    #: A statement run at the start of the claim's transaction, before its locking read.
    claim_setup_sql: ClassVar[str] = ""
    #: How a statement inserts rows, leaving out any that break a unique constraint.
    insert_ignore: ClassVar[str] = "INSERT OR IGNORE"

    def __init__(self, using: str) -> None:
        self.using = using

    @property
    def connection(self) -> BaseDatabaseWrapper:
        """This thread's connection (Django keeps one per thread and alias)."""
        return connections[self.using]

    # --- errors ------------------------------------------------------------------------------

    def lost_to_a_deadlock(self, error: DatabaseError) -> bool:
        """Whether the server rolled this transaction back to break a deadlock with another
        (or a serialization conflict): nothing is wrong with the server, and the transaction
        may simply run again. SQLite has one writer at a time, so no deadlock to break."""
        return False

    # --- the clock ---------------------------------------------------------------------------

    def read_now(self) -> datetime:
        """One reading of the server's clock, aware, in UTC; the local clock without one."""
        if self.now_sql is None:
            return datetime.now(UTC)
        with self.connection.cursor() as cursor:
            cursor.execute(self.now_sql)
            (value,) = cursor.fetchone()
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    # --- statements ---------------------------------------------------------------------------

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` (quoted) among ``values``, and its parameters."""
        return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)

    def token_of_id(self, id_column: str) -> str:
        """A claim token: a parameter (the batch's random prefix) joined to the row's id."""
        return f"(%s || {id_column})"

    def json_value(self, sql: str) -> str:
        """``sql``, a JSON text, as the JSON column's type."""
        return sql

    def insert_rows(
        self,
        table: str,
        fields: Sequence[Any],
        columns: Sequence[str],
        values: Sequence[tuple[Any, ...]],
        defaults: Sequence[str],
    ) -> None:
        """Insert ``values`` (one tuple per row, one value per field), then ``defaults`` (SQL
        per remaining column), skipping rows that break a unique constraint."""
        connection = self.connection
        row_sql = "({})".format(
            ", ".join(
                [self.json_value("%s") if f.name == "outcome" else "%s" for f in fields]
                + list(defaults)
            )
        )
        limit = connection.features.max_query_params or 65535
        per_statement = max(1, min(1000, limit // len(fields)))
        with connection.cursor() as cursor:
            for start in range(0, len(values), per_statement):
                chunk = values[start : start + per_statement]
                sql = (
                    f"{self.insert_ignore} INTO {table} ({', '.join(columns)}) "
                    f"VALUES {', '.join([row_sql] * len(chunk))}"
                )
                cursor.execute(sql, [value for row in chunk for value in row])

    def identity_trigger_sql(self, table: str) -> list[str]:
        """The statements creating the identity trigger on ``table`` (see ``identity_guard``)."""
        return []

    def drop_identity_trigger_sql(self, table: str) -> list[str]:
        """The statements dropping the identity trigger from ``table``, if it is there."""
        return []

    # --- wake-ups, the engine's lock, its session ------------------------------------------------

    def notify_change(self) -> None:
        """After the current transaction commits, tell listening engines to look again."""
        return None

    def start_listener(self, wake: Callable[[], None]) -> Listener | None:
        """Start a thread that calls ``wake`` on every change; None without notifications."""
        return None

    def engine_lock(self) -> EngineLock:
        """The lock an engine holds for its life; it refuses to start if another holds it."""
        return NoEngineLock()

    def set_up_engine_session(self) -> None:
        """Tune the engine's own connection, once per session (never the jobs' connections):
        in a worker, its statements and lock waits are bounded (``bounds.engine_limits``)."""
        from . import bounds

        if bounds.active():
            self.limit_session(self.connection, bounds.engine_limits())

    # --- bounded waits (``bounds``) -------------------------------------------------------------

    def socket_options(self) -> dict[str, Any]:
        """Connection options, as the driver takes them in ``OPTIONS``, that bound a wait
        on a silent network: a connect timeout, TCP keepalives, ``TCP_USER_TIMEOUT``."""
        return {}

    def socket_of(self, raw: Any) -> int | None:
        """The socket of the DB-API connection ``raw`` (None: a file, not a socket, or a
        connection already lost), read on the thread that uses it: ``bounds.shut_down`` may
        then end a wait on it from any."""
        driver_error = self.connection.Database.Error  # type: ignore[attr-defined]
        try:
            return self.driver_socket(raw)
        except (driver_error, OSError, ValueError):
            return None  # the driver says the connection is gone: nothing left to cut

    def driver_socket(self, raw: Any) -> int | None:
        """The driver's own way to the socket of ``raw``; may raise the driver's errors."""
        return None

    def limit_session(self, connection: BaseDatabaseWrapper, limits: Any) -> None:
        """Bound ``connection``'s open session by ``limits`` (``bounds.SessionLimits``),
        keeping what the project set; nothing where the session is not the client's own
        (a transaction-pooling proxy hands it to other clients) or the database has no
        server."""
        return None

    # --- how connections reach the server: pooling proxies, Django's pool ---------------------

    def transaction_pooled(self) -> bool:
        """Whether a proxy hands this process's transactions to whichever server session is
        free (PgBouncer in ``transaction`` or ``statement`` mode): a session lock, a
        ``LISTEN`` or a session-level ``SET`` would land on a session that other clients
        share. Found out once per process (:mod:`.pooling`), by connecting."""
        return False

    @property
    def session_state_is_private(self) -> bool:
        """Whether a session-level ``SET`` on a connection the engine opened stays with that
        connection, never reaching another client's statements."""
        return not self.transaction_pooled()

    def check_connections(self, concurrency: int) -> None:
        """Refuse, with ``UnsupportedConnection`` naming the setting to change, the ways of
        reaching the server on which an engine of ``concurrency`` try threads cannot keep its
        guarantees; a ``DatabaseError`` when the server cannot be reached to tell."""
        return None

    def outside_pool(self) -> None:
        """Open this thread's connection directly from now on, never from a connection pool
        of the settings: for the engine's own threads, which hold theirs for the worker's
        life or must not wait for one."""
        return None

    # --- session locks: a worker's liveness, as the server sees it -----------------------------

    def open_session(self) -> Any:
        """A new DB-API connection of its own, in autocommit, outside Django's per-thread ones."""
        raw = self._new_session()
        self._autocommit(raw)
        return raw

    def _new_session(self) -> Any:
        connection = self.connection
        return connection.get_new_connection(connection.get_connection_params())

    def _autocommit(self, raw: Any) -> None:
        raw.autocommit = True

    def take_session_lock(self, raw: Any, name: str) -> bool:
        """Take the lock ``name`` on the session ``raw``, without waiting; False if taken."""
        raise NotImplementedError(f"{self.vendor or 'this database'} has no session locks")

    def held_session_locks(self, names: Sequence[str]) -> set[str]:
        """Which of the locks ``names`` some session holds now (one statement)."""
        raise NotImplementedError(f"{self.vendor or 'this database'} has no session locks")
