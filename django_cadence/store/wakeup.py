"""Wake-ups on PostgreSQL: ``NOTIFY`` when schedules or attempts change, ``LISTEN`` in engines.

A schedule saved or run now by another process would otherwise wait for the engine's next
tick (at most ``--max-tick``). On PostgreSQL the change sends a notification after its
transaction commits, and every engine's listener thread wakes its engine at once. Other
backends rely on the bounded tick.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from django.db import connections, transaction

logger = logging.getLogger("django_cadence.wakeup")

CHANNEL = "django_cadence"


def notify_change(using: str = "default") -> None:
    """After the current transaction commits, tell listening engines to look again."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return

    def send() -> None:
        with contextlib.suppress(Exception), connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, '')", [CHANNEL])

    transaction.on_commit(send, using=using)


class Listener(threading.Thread):
    """A daemon thread holding its own connection in ``LISTEN``; calls ``wake`` per notice."""

    def __init__(self, wake: Callable[[], None], using: str = "default") -> None:
        super().__init__(name="cadence-listener", daemon=True)
        self.wake = wake
        self.using = using
        self.stopping = threading.Event()

    @classmethod
    def start_for(cls, wake: Callable[[], None], using: str = "default") -> Listener | None:
        if connections[using].vendor != "postgresql":
            return None
        listener = cls(wake, using)
        listener.start()
        return listener

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        delay = 0.5
        while not self.stopping.is_set():
            try:
                self._listen()
                delay = 0.5
            except Exception as exc:  # noqa: BLE001 - the listener only speeds wake-ups up
                logger.warning("listener reconnecting in %.1f s: %s", delay, exc)
                self.wake()  # something may have changed while we were away
                self.stopping.wait(delay)
                delay = min(delay * 2, 10.0)

    def _listen(self) -> None:
        import psycopg

        params = connections[self.using].get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        with psycopg.connect(**params, autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            while not self.stopping.is_set():
                for _ in conn.notifies(timeout=1.0, stop_after=1):
                    self.wake()
