"""A worker's liveness as the database server sees it: a session lock named after it.

Each worker holds, on a connection of its own for its whole life, a session-scoped lock
(``pg_try_advisory_lock`` on PostgreSQL, ``GET_LOCK`` on MariaDB and MySQL). The server frees
it the moment the session ends: the process was killed, its host went away, or the
connection was cut. A worker whose session was cut or whose server restarted lives on,
though: it takes its lock again and re-asserts its tries, and the other workers recover a
worker's running attempts only once its lock has stayed gone for a while they were connected
themselves (:mod:`.lost_workers`), through the same fenced path as an expired lease
(:mod:`.recovery`). Leases stay, for a worker that is alive but stuck and for databases
without session locks.

Behind a transaction-pooling proxy (PgBouncer in transaction mode) a session is not a client:
an engine refuses to start through one unless ``CADENCE_SESSION_LIVENESS = False`` turns
this off, and leases alone decide (``store/pooling``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection
from typing import Any

from .. import store
from ..conf import cadence_settings
from ..executors.log_text import log_value
from ..models import Worker

logger = logging.getLogger("django_cadence.engine")


def enabled(using: str | None = None) -> bool:
    """Whether workers on this database prove their liveness with a session lock."""
    return cadence_settings.SESSION_LIVENESS and store.of(using).has_session_locks


class SessionLock:
    """The session lock of one worker, on a connection that nothing else uses."""

    def __init__(self, worker_id: str, using: str | None = None) -> None:
        self.worker_id = worker_id
        self.using = using
        self._session: Any = None

    @property
    def held(self) -> bool:
        return self._session is not None

    def acquire(self) -> bool:
        """Open the lock's own session and take the lock; False (logged) if that failed."""
        self.release()
        st = store.of(self.using)
        try:
            session = st.open_session()
        except Exception as exc:  # noqa: BLE001 - the driver's own errors too: leases protect
            logger.warning("session lock unavailable worker=%s: %s", self.worker_id, log_value(exc))
            return False
        try:
            taken = st.take_session_lock(session, self.worker_id)
        except Exception as exc:  # noqa: BLE001 - any driver error: leases still protect
            logger.warning("session lock unavailable worker=%s: %s", self.worker_id, log_value(exc))
            taken = False
        if not taken:
            with contextlib.suppress(Exception):
                session.close()
            return False
        self._session = session
        return True

    def release(self) -> None:
        """Close the lock's session: the server frees the lock with it."""
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.close()


def lost_workers(workers: Collection[str], using: str | None = None) -> set[str]:
    """Of ``workers``, those registered with a session lock that the server no longer sees
    held (two statements)."""
    gone, _ = look(workers, None, using)
    return gone


def look(
    others: Collection[str], me: str | None, using: str | None = None
) -> tuple[set[str], bool]:
    """Which of ``others`` (registered with a session lock) the server no longer sees holding
    it, and whether it still sees ``me`` holding mine (True without ``me``): one statement
    asks about all of them, after one read of the registry when there are others."""
    locked: set[str] = set()
    if others:
        locked = set(
            Worker.objects.filter(worker_id__in=list(others), session_lock=True).values_list(
                "worker_id", flat=True
            )
        )
    names = locked | ({me} if me else set())
    if not names:
        return set(), True
    held = store.of(using).held_session_locks(sorted(names))
    return locked - held, me is None or me in held


def still_held(worker_id: str, using: str | None = None) -> bool:
    """Whether the server still sees this worker's own lock (its session may have been cut)."""
    return bool(store.of(using).held_session_locks([worker_id]))
