"""The engine's own database connection: kept for its whole life, replaced when it breaks,
and cut under a statement that waits on a silent network past its limit."""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.db import DatabaseError, close_old_connections, connections

from .. import store
from ..store import bounds

logger = logging.getLogger("django_cadence.engine")

# The methods of Django's connection that wait on the server without a cursor.
TRANSACTION_CALLS = ("_set_autocommit", "_commit", "_rollback")


class EngineConnection:
    """The connection the engine's thread plans, claims and records on."""

    def __init__(self, using: str) -> None:
        self.using = using
        self._session: object | None = None  # the database session last set up for reads
        # The statement in flight on the engine's thread: when it was sent (monotonic) and
        # the socket it waits on (``cut_if_stuck``).
        self.call: tuple[float, int | None] | None = None

    def refresh(self) -> None:
        """Drop a connection that broke or outlived ``CONN_MAX_AGE``; keep a healthy one.

        Django's ``close_old_connections()`` would close the engine's connection on every
        tick under the default ``CONN_MAX_AGE = 0`` (it is meant for requests); a long-lived
        engine keeps its connection unless it errored or a positive max age has passed.
        """
        connection = connections[self.using]
        if connection.connection is None:
            return
        if connection.settings_dict.get("CONN_MAX_AGE"):
            close_old_connections()
        elif connection.errors_occurred and not connection.is_usable():
            connection.close()

    def set_up(self) -> None:
        """Open the connection now, and once per session set up its fast reads."""
        connection = connections[self.using]
        connection.ensure_connection()
        if connection.connection is not self._session:
            self._session = connection.connection
            store.of(self.using).set_up_engine_session()
        if self._track not in connection.execute_wrappers:
            connection.execute_wrappers.append(self._track)
        # A transaction's start, commit and rollback are round trips the driver makes
        # outside any cursor (mysqlclient's ``autocommit()``, psycopg's ``commit()``).
        for name in TRANSACTION_CALLS:
            call = getattr(connection, name)
            if not getattr(call, "_cadence_timed", False):
                setattr(connection, name, self._timed(call))

    def _track(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        with self._in_flight():
            return execute(sql, params, many, context)

    def _timed(self, call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self._in_flight():
                return call(*args, **kwargs)

        timed._cadence_timed = True  # type: ignore[attr-defined]
        return timed

    @contextlib.contextmanager
    def _in_flight(self) -> Iterator[None]:
        """Mark a round trip of the engine's connection as waiting, for ``cut_if_stuck``."""
        raw = connections[self.using].connection
        self.call = (time.monotonic(), store.of(self.using).socket_of(raw) if raw else None)
        try:
            yield
        finally:
            self.call = None

    def cut_if_stuck(self, now: float) -> float | None:
        """From the watchdog's thread: shut the socket under a statement of the engine's that
        has waited longer than its limit (the server's own limit answers first when it got
        the statement; a silent network never answers), so that the engine's thread gets an
        error, reconnects, and goes on. Returns when to look again (None: nothing in flight)."""
        call = self.call
        if call is None:
            return None
        sent, socket = call
        limit = (bounds.engine_limits().statement or 0.0) + bounds.CLIENT_SLACK
        if now - sent < limit:
            return sent + limit
        if socket is not None and self.call is call:
            logger.warning(
                "database silent: a statement of the engine waited %.1f s; closing its "
                "connection to reconnect",
                now - sent,
            )
            bounds.shut_down(socket)
        self.call = None
        return None

    def close(self) -> None:
        with contextlib.suppress(DatabaseError):
            connections[self.using].close()
