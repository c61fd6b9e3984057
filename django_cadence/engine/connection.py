"""The engine's own database connection: kept for its whole life, replaced when it breaks."""

from __future__ import annotations

import contextlib

from django.db import DatabaseError, close_old_connections, connections

from .. import store


class EngineConnection:
    """The connection the engine's thread plans, claims and records on."""

    def __init__(self, using: str) -> None:
        self.using = using
        self._session: object | None = None  # the database session last set up for reads

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

    def close(self) -> None:
        with contextlib.suppress(DatabaseError):
            connections[self.using].close()
