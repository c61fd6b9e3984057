"""Bounded waits on every socket of a worker, and no session of it that holds row locks for
ever (docs/design.md, "A worker cut off from its database").

A network that goes silent (a partition, a hung middlebox, a NAT that dropped the flow)
raises nothing: a blocked call waits for as long as the kernel retries, about fifteen
minutes on Linux defaults, and the server keeps a cut session's transaction, and its row
locks, open. ``bound_connections`` is called once by ``run_cadence``, before any connection
of its process opens:

- every connection gets a connect timeout, TCP keepalives tuned to seconds and, where the
  driver takes it, ``TCP_USER_TIMEOUT`` (``Store.socket_options``, added to ``OPTIONS``, or
  set on the socket once it is open);
- every session gets an idle-in-transaction limit of the lease plus the recovery grace, so a
  cut inside a transaction cannot hold a row that a survivor must recover or claim beyond
  the moment it may do so;
- the engine's own session (``Store.set_up_engine_session``) gets a statement and a
  lock-wait limit as well: the engine's statements take milliseconds, and a tick must not
  wait past a lease renewal.

What the project set wins: an ``OPTIONS`` key it gave is kept, and a limit the server,
database, role or ``OPTIONS`` already set on the session is kept (a statement or lock-wait
limit only when it is tighter).
"""

from __future__ import annotations

import contextlib
import math
import socket
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from ..conf import cadence_settings

# A dead peer is noticed within about KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_COUNT
# seconds on an idle connection, and within TCP_USER_TIMEOUT once data waits unacknowledged.
CONNECT_TIMEOUT = 5  # seconds; libpq's minimum is 2
KEEPALIVE_IDLE = 5
KEEPALIVE_INTERVAL = 2
KEEPALIVE_COUNT = 3
TCP_USER_TIMEOUT = 10  # seconds
# The engine's statements take milliseconds; a limit this long only ends a hung one.
ENGINE_STATEMENT_MIN = 5.0
# The engine's own thread closes its socket under a statement this much past the server's
# limit for it: the server has not answered, so it never got the statement, or cannot reply.
CLIENT_SLACK = 1.0


@dataclass(frozen=True)
class SessionLimits:
    """Seconds a session may stay idle inside a transaction, run one statement, and wait for
    a row lock (None: not limited here)."""

    idle_in_transaction: float
    statement: float | None = None
    lock_wait: float | None = None


def worker_limits() -> SessionLimits:
    """Every session of a worker: a transaction idle past the moment its tries may be
    recovered by another worker is ended by the server."""
    recoverable = cadence_settings.LEASE + cadence_settings.RECOVERY_GRACE
    return SessionLimits(idle_in_transaction=recoverable.total_seconds())


def engine_limits() -> SessionLimits:
    """The engine's own session: the worker's limit, and a statement or a lock wait that
    outlasts a third of the lease (the renewal period) is ended too."""
    limit = max(ENGINE_STATEMENT_MIN, cadence_settings.LEASE.total_seconds() / 3)
    return SessionLimits(worker_limits().idle_in_transaction, statement=limit, lock_wait=limit)


def milliseconds(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


def keepalive_socket(fd: int) -> None:
    """TCP keepalives and ``TCP_USER_TIMEOUT`` on an open socket, for a driver that takes
    no such option (mysqlclient)."""
    sock = socket.socket(fileno=fd)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (
            ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
            ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
            ("TCP_KEEPCNT", KEEPALIVE_COUNT),
            ("TCP_USER_TIMEOUT", TCP_USER_TIMEOUT * 1000),
        ):
            option = getattr(socket, name, None)
            if option is not None:  # Linux has them all; other systems some
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, option, value)
    finally:
        sock.detach()  # the driver owns the descriptor


_active = False


def active() -> bool:
    """Whether this process is a worker whose connections are bounded (``run_cadence``);
    engines made in a test's process leave its connections as they are."""
    return _active


def shut_down(fd: int) -> None:
    """Shut an open socket down both ways, from any thread: the call waiting on it returns
    at once. The driver keeps the descriptor (and closes it once it sees the error)."""
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=fd)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.detach()


def bound_connections(using: str) -> None:
    """Bound every connection this process opens to Cadence's database (``run_cadence``
    calls it once, before the engine connects)."""
    from . import of

    global _active
    _active = True
    st = of(using)
    options = connections.settings[using].setdefault("OPTIONS", {})
    for key, value in st.socket_options().items():
        options.setdefault(key, value)
    connection_created.connect(_limit_new_session, dispatch_uid="django_cadence.bounds")


def _limit_new_session(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    from . import alias, of

    if connection.alias != alias():
        return
    of(connection.alias).limit_session(connection, worker_limits())
